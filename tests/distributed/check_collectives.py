"""Run under ``mpiexec -n N``: every collective against a numpy reference, for every ReduceOp and
the dtypes float32/float64/int64 (and bool/int32 for the ops that apply), on the device named by
the first argument (``opencl`` means ``opencl:{rank % count}``: one device per rank). Prints one
``ok <name>`` line per check on rank 0 and exits non-zero on the first failure."""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist

ReduceOp = dist.ReduceOp
DTYPES = [pg.float32, pg.float64, pg.int64]


def device_for(kind: str, rank: int) -> str:
    if kind.startswith("opencl"):
        return f"opencl:{rank % pg.opencl.device_count()}"
    return kind


def value(rank: int, shape: tuple, dtype: pg.dtype, salt: int = 0) -> np.ndarray:
    """A per-rank array, small integers so sums and products are exact in every dtype."""
    n = int(np.prod(shape))
    base = (np.arange(n) * (rank + 2) + salt + rank) % 5 + 1
    if dtype is pg.bool:
        return (base % 2 == 0).reshape(shape)
    return base.astype(dtype.numpy).reshape(shape)


NP_OPS = {ReduceOp.SUM: np.add, ReduceOp.PRODUCT: np.multiply, ReduceOp.MIN: np.minimum,
          ReduceOp.MAX: np.maximum, ReduceOp.BAND: np.bitwise_and, ReduceOp.BOR: np.bitwise_or,
          ReduceOp.BXOR: np.bitwise_xor}


def reference(op: ReduceOp, arrays: list[np.ndarray]) -> np.ndarray:
    if op is ReduceOp.AVG:
        s = sum(a.astype(np.float64) for a in arrays)
        out = s / len(arrays)
        return out.astype(arrays[0].dtype) if arrays[0].dtype.kind == "f" else np.trunc(out).astype(
            arrays[0].dtype)
    if arrays[0].dtype == np.bool_:
        f = {ReduceOp.SUM: np.logical_or, ReduceOp.MAX: np.logical_or,
             ReduceOp.PRODUCT: np.logical_and, ReduceOp.MIN: np.logical_and}[op]
    else:
        f = NP_OPS[op]
    out = arrays[0]
    for a in arrays[1:]:
        out = f(out, a)
    return out


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = device_for(kind, rank)
    shape = (3, 5)
    done = []

    def check(name: str, got: pg.Tensor, want: np.ndarray) -> None:
        g = got.cpu().numpy()
        if g.dtype != want.dtype or g.shape != want.shape or not np.array_equal(g, want):
            raise AssertionError(f"[rank {rank}] {name} on {dev}: got {g!r}, want {want!r}")
        done.append(name)

    def t_of(a: np.ndarray) -> pg.Tensor:
        return pg.tensor(a, device=dev)

    ops_for = {pg.float32: [ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN,
                            ReduceOp.MAX]}
    ops_for[pg.float64] = ops_for[pg.float32]
    ops_for[pg.int64] = ops_for[pg.float32] + [ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR]
    ops_for[pg.int32] = [ReduceOp.SUM, ReduceOp.MAX]
    ops_for[pg.bool] = [ReduceOp.SUM, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
    for dtype, ops in ops_for.items():
        everyone = [value(r, shape, dtype) for r in range(world)]
        for op in ops:
            want = reference(op, everyone)
            t = t_of(everyone[rank])
            v0 = t._version
            dist.all_reduce(t, op)
            assert t._version > v0, "all_reduce must bump the version counter"
            check(f"all_reduce {op.name} {dtype}", t, want)
            t = t_of(everyone[rank])
            work = dist.all_reduce(t, op, async_op=True)
            assert work.wait() is True and work.is_completed()
            check(f"all_reduce async {op.name} {dtype}", t, want)
            for root in range(world):
                t = t_of(everyone[rank])
                dist.reduce(t, dst=root, op=op)
                check(f"reduce {op.name} {dtype} dst={root}", t, want if rank == root
                      else everyone[rank])
            out = t_of(np.zeros((2,) + shape[1:], dtype.numpy))
            inp = t_of(np.concatenate([value(r, (2 * world,) + shape[1:], dtype, 7)
                                       for r in range(world)][rank:rank + 1]))
            dist.reduce_scatter_tensor(out, inp, op)
            full = reference(op, [value(r, (2 * world,) + shape[1:], dtype, 7) for r in range(world)])
            check(f"reduce_scatter_tensor {op.name} {dtype}", out, full[2 * rank:2 * rank + 2])
    extra = [pg.float16] if dev == "cpu" else []  # PoCL has no cl_khr_fp16
    for dtype in DTYPES + [pg.bool] + extra:
        everyone = [value(r, shape, dtype) for r in range(world)]
        for root in range(world):
            t = t_of(everyone[rank])
            work = dist.broadcast(t, src=root, async_op=True)
            work.wait()
            check(f"broadcast {dtype} src={root}", t, everyone[root])
        outs = [t_of(np.zeros(shape, dtype.numpy)) for _ in range(world)]
        dist.all_gather(outs, t_of(everyone[rank]))
        for r in range(world):
            check(f"all_gather {dtype} [{r}]", outs[r], everyone[r])
        big = t_of(np.zeros((world * 3, 5), dtype.numpy))
        dist.all_gather_into_tensor(big, t_of(everyone[rank]))
        check(f"all_gather_into_tensor {dtype}", big, np.concatenate(everyone))
        stacked = t_of(np.zeros((world, 3, 5), dtype.numpy))
        dist.all_gather_into_tensor(stacked, t_of(everyone[rank]))
        check(f"all_gather_into_tensor stacked {dtype}", stacked, np.stack(everyone))
        root = world - 1
        glist = [t_of(np.zeros(shape, dtype.numpy)) for _ in range(world)] if rank == root else None
        dist.gather(t_of(everyone[rank]), glist, dst=root)
        if glist is not None:
            for r in range(world):
                check(f"gather {dtype} [{r}]", glist[r], everyone[r])
        slist = [t_of(value(r, shape, dtype, 3)) for r in range(world)] if rank == 0 else None
        t = t_of(np.zeros(shape, dtype.numpy))
        dist.scatter(t, slist, src=0)
        check(f"scatter {dtype}", t, value(rank, shape, dtype, 3))
        # point to point: a ring, blocking and non-blocking
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        t = t_of(np.zeros(shape, dtype.numpy))
        sw = dist.isend(t_of(everyone[rank]), nxt, tag=3)
        rw = dist.irecv(t, prv, tag=3)
        rw.wait()
        sw.wait()
        check(f"isend/irecv {dtype}", t, everyone[prv])
        t = t_of(np.zeros(shape, dtype.numpy))
        if rank == 0:
            dist.send(t_of(everyone[0]), 1)
        elif rank == 1:
            assert dist.recv(t) == 0
            check(f"send/recv any source {dtype}", t, everyone[0])
    # a sub-group: ranks 0 and the last one
    sub = dist.new_group([0, world - 1])
    t = t_of(np.full(2, float(rank + 1), np.float32))
    res = dist.all_reduce(t, group=sub)
    if rank in (0, world - 1):
        check("new_group all_reduce", t, np.full(2, 1.0 + world, np.float32))
        assert dist.get_rank(sub) == (0 if rank == 0 else 1)
    else:
        assert res is None and dist.get_rank(sub) == -1
        check("new_group non-member untouched", t, np.full(2, float(rank + 1), np.float32))
    dist.barrier()
    dist.barrier(async_op=True).wait()
    # argument errors, raised before any communication (so every rank raises the same)
    errs = 0
    for call, exc in [
            (lambda: dist.all_reduce(t_of(np.zeros(3, np.float32)), ReduceOp.PREMUL_SUM),
             ValueError),
            (lambda: dist.all_gather_into_tensor(t_of(np.zeros(3, np.float32)),
                                                 t_of(np.zeros(3, np.float32))), ValueError),
            (lambda: dist.all_reduce(t_of(np.zeros(3, np.float32)), ReduceOp.BAND), ValueError),
            (lambda: dist.broadcast(t_of(np.zeros(3, np.float32)), src=world), ValueError),
            (lambda: dist.send(t_of(np.zeros(3, np.float32)), rank), ValueError)]:
        try:
            call()
        except exc:
            errs += 1
    assert errs == 5, errs
    done.append("argument errors")
    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
