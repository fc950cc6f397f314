"""Run under ``mpiexec -n N``: collectives and point-to-point calls on 16-bit floats (bfloat16,
float16). Copies (broadcast, all_gather, gather, scatter, send/recv) must be bit-exact;
reductions follow the documented rule -- each rank's values widened to float32, reduced in
float32 (AVG divided there), rounded to the dtype once -- checked against that float32 reference,
with values whose float32 sums are exact (so the order MPI adds in does not matter) but whose
rounding to 16 bits is not. Argument: the device (``opencl``: ``opencl:{rank % count}``)."""
from __future__ import annotations

import sys
from typing import Any

import ml_dtypes
import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad.errors import DTypeError

ReduceOp = dist.ReduceOp


def value(rank: int, n: int, np_dtype: Any) -> np.ndarray:
    """Per-rank values exact in both 16-bit formats, with sums that need rounding: 256-ish
    integers plus small odd ones (bfloat16 keeps 8 significant bits, float16 11)."""
    i = np.arange(n)
    bf16 = np.dtype(np_dtype) == np.dtype(ml_dtypes.bfloat16)
    big = 256.0 * (1 + (i + rank) % 3) if bf16 else 2048.0 * (1 + i % 2)
    small = (1 + 2 * ((i * (rank + 1)) % 3)) * 0.5 ** (rank % 2)  # 1, 3, 5 or halves of them
    out = np.where(i % 2 == 0, big, small) if rank == 0 else small
    # element 0: 256 + 1 + 1 (2048 + 1 + 1 in float16) is 258 once rounded, but 256 when each
    # addition rounds (257 is a tie, to even 256): three ranks or more tell the rules apart
    out[0] = (256.0 if bf16 else 2048.0) if rank == 0 else 1.0
    return np.asarray(out, np.float32).astype(np_dtype)


def reference(op: ReduceOp, arrays: list[np.ndarray]) -> np.ndarray:
    wide = [a.astype(np.float32) for a in arrays]
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        r = sum(wide[1:], wide[0])
        if op is ReduceOp.AVG:
            r = r / np.float32(len(arrays))
    elif op is ReduceOp.PRODUCT:
        r = wide[0]
        for w in wide[1:]:
            r = r * w
    elif op is ReduceOp.MIN:
        r = np.minimum.reduce(wide)
    else:
        r = np.maximum.reduce(wide)
    return r.astype(arrays[0].dtype)


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done: list[str] = []

    def check(name: str, got: pg.Tensor, want: np.ndarray) -> None:
        g = got.cpu().numpy()
        if g.dtype != want.dtype or g.shape != want.shape or \
                not np.array_equal(g.view(np.uint16), want.view(np.uint16)):
            raise AssertionError(f"[rank {rank}] {name} on {dev}: got {g!r}, want {want!r}")
        done.append(name)

    n = 12
    rounded_somewhere = False
    dtypes = [pg.bfloat16]
    try:
        pg.zeros(1, dtype=pg.float16, device=dev)
        dtypes.append(pg.float16)
    except DTypeError:  # a backend that declines float16 (array-api-strict)
        pass
    for dtype in dtypes:
        npd = dtype.numpy
        everyone = [value(r, n, npd) for r in range(world)]

        def t_of(a: np.ndarray) -> pg.Tensor:
            return pg.tensor(a, device=dev)

        for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX):
            want = reference(op, everyone)
            if op is ReduceOp.SUM:
                # the rule is visible: rounding after each addition would differ somewhere
                stepwise = everyone[0]
                for a in everyone[1:]:
                    stepwise = (stepwise.astype(np.float32) + a.astype(np.float32)).astype(npd)
                rounded_somewhere |= not np.array_equal(stepwise, want)
            for async_op in (False, True):
                t = t_of(everyone[rank])
                w = dist.all_reduce(t, op, async_op=async_op)
                if w is not None:
                    w.wait()
                check(f"all_reduce {op.name} {dtype}{' async' if async_op else ''}", t, want)
            t = t_of(everyone[rank])
            dist.reduce(t, dst=world - 1, op=op)
            check(f"reduce {op.name} {dtype}", t, want if rank == world - 1 else everyone[rank])
            out = t_of(np.zeros(n // 2 if world == 2 else 4, npd))
            chunk = out.numel()
            inp = [np.concatenate([value(r, chunk, npd)] * world) for r in range(world)]
            full = reference(op, inp)
            dist.reduce_scatter_tensor(out, t_of(inp[rank]), op)
            check(f"reduce_scatter_tensor {op.name} {dtype}", out, full[rank * chunk:
                                                                          (rank + 1) * chunk])
        for root in range(world):
            t = t_of(everyone[rank])
            dist.broadcast(t, src=root)
            check(f"broadcast {dtype} src={root}", t, everyone[root])
        outs = [t_of(np.zeros(n, npd)) for _ in range(world)]
        dist.all_gather(outs, t_of(everyone[rank]))
        for r in range(world):
            check(f"all_gather {dtype} [{r}]", outs[r], everyone[r])
        big = t_of(np.zeros(world * n, npd))
        dist.all_gather_into_tensor(big, t_of(everyone[rank]))
        check(f"all_gather_into_tensor {dtype}", big, np.concatenate(everyone))
        glist = [t_of(np.zeros(n, npd)) for _ in range(world)] if rank == 0 else None
        dist.gather(t_of(everyone[rank]), glist, dst=0)
        if glist is not None:
            for r in range(world):
                check(f"gather {dtype} [{r}]", glist[r], everyone[r])
        slist = [t_of(everyone[r]) for r in range(world)] if rank == 0 else None
        t = t_of(np.zeros(n, npd))
        dist.scatter(t, slist, src=0)
        check(f"scatter {dtype}", t, everyone[rank])
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        t = t_of(np.zeros(n, npd))
        sw = dist.isend(t_of(everyone[rank]), nxt)
        dist.recv(t, prv)
        sw.wait()
        check(f"send/recv {dtype}", t, everyone[prv])
    assert rounded_somewhere or world == 2, "the values never exercise the rounding rule"
    done.append("the values tell rounding once from rounding each step")
    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
