"""Run under ``mpiexec -n N``: what torchrun-style PyTorch scripts call beyond the core
collectives -- backend names and init methods mapped to MPI, all_to_all(_single) with split
sizes, reduce_scatter (list form), batch_isend_irecv, the object collectives (through the
restricted unpickler), coalesced collectives, PREMUL_SUM, Work.get_future, non-contiguous
tensors, new_subgroups/split_group and DeviceMesh -- each against values computed locally. The
first argument names the device (``opencl`` means ``opencl:{rank % count}``). Prints one
``ok <name>`` line per check on rank 0 and ``checks: N``; exits non-zero on the first failure."""
from __future__ import annotations

import logging
import sys
import warnings

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad.serialization import WeightsOnlyError


class Unsafe:
    """A class the receivers' restricted unpickler must refuse."""

    def __reduce__(self):  # what a hostile peer would send: a call, run by plain pickle.loads
        return (print, ("code from a peer's bytes ran",))


def device_for(kind: str, rank: int) -> str:
    if kind.startswith("opencl"):
        return f"opencl:{rank % pg.opencl.device_count()}"
    return kind


def main() -> int:
    kind = sys.argv[1]
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logging.getLogger("portagrad.distributed").addHandler(Keep())
    dist.init_process_group(backend="cpu:gloo,cuda:nccl", init_method="tcp://127.0.0.1:1")
    rank, n = dist.get_rank(), dist.get_world_size()
    dev = device_for(kind, rank)
    done: list[str] = []

    def check(name: str, got: object, want: object) -> None:
        if isinstance(got, pg.Tensor):
            g = got.cpu().numpy()
            w = np.asarray(want, dtype=g.dtype)
            ok = g.shape == w.shape and np.array_equal(g, w)
        else:
            ok = got == want
        if not ok:
            raise AssertionError(f"[rank {rank}] {name} on {dev}: got {got!r}, want {want!r}")
        done.append(name)

    def T(a: object, dtype: pg.dtype = pg.float32) -> pg.Tensor:
        return pg.tensor(np.asarray(a), dtype=dtype, device=dev)

    msgs = [r.getMessage() for r in records]
    check("backend and init_method logged once each",
          (sum("runs on the MPI engine" in m for m in msgs),
           sum("is not used" in m for m in msgs)), (1, 1))
    check("get_backend", dist.get_backend(), "mpi")
    check("default backend for a device", dist.get_default_backend_for_device("cpu"), "mpi")

    # ---- all_to_all_single: equal split; rank r sends [r*10 + j]*... to rank j
    inp = T([[rank * 10 + j, rank * 10 + j] for j in range(n)])
    out = T(np.zeros((n, 2)))
    dist.all_to_all_single(out, inp)
    check("all_to_all_single equal", out, [[j * 10 + rank] * 2 for j in range(n)])
    # split sizes: rank r sends (j + 1) rows to rank j, each row [r, j]
    in_splits = [j + 1 for j in range(n)]
    rows = [[rank, j] for j in range(n) for _ in range(j + 1)]
    out_splits = [rank + 1] * n
    out = T(np.zeros((sum(out_splits), 2)), pg.int64)
    work = dist.all_to_all_single(out, T(rows, pg.int64), out_splits, in_splits, async_op=True)
    fut_value = work.get_future().wait()
    want = [[j, rank] for j in range(n) for _ in range(rank + 1)]
    check("all_to_all_single split sizes (async)", out, want)
    check("get_future value is [output]", fut_value[0] is out and len(fut_value) == 1, True)
    # a non-contiguous output, as gloo accepts
    base = T(np.zeros((2, n)))
    dist.all_to_all_single(base.t(), T([[rank, -rank]] * n))
    check("all_to_all_single non-contiguous output", base.t(), [[j, -j] for j in range(n)])
    try:
        dist.all_to_all_single(T(np.zeros((n, 2))), T(np.zeros((2, n))).t())
    except ValueError:
        done.append("all_to_all_single non-contiguous input refused")
    # ---- all_to_all (list form), sizes differing per peer
    ins = [T([rank * 100 + j] * (j + 1), pg.int32) for j in range(n)]
    outs = [T(np.zeros(rank + 1), pg.int32) for _ in range(n)]
    dist.all_to_all(outs, ins)
    for j in range(n):
        check(f"all_to_all from rank {j}", outs[j], [j * 100 + rank] * (rank + 1))
    # ---- reduce_scatter (list form), sum and max
    il = [T([rank + i, rank * i]) for i in range(n)]
    o = T([0.0, 0.0])
    dist.reduce_scatter(o, il)
    check("reduce_scatter sum", o, [sum(r + rank for r in range(n)), sum(r * rank for r in range(n))])
    dist.reduce_scatter(o, il, op=dist.ReduceOp.MAX)
    check("reduce_scatter max", o, [n - 1 + rank, (n - 1) * rank])
    # ---- PREMUL_SUM: every rank's input times the factor, then summed
    x = T([rank + 1.0, 2.0])
    dist.all_reduce(x, op=dist._make_nccl_premul_sum(0.5))
    check("all_reduce PREMUL_SUM", x, [0.5 * sum(r + 1 for r in range(n)), 0.5 * 2 * n])
    y = T([rank + 1.0])
    dist.reduce(y, dst=0, op=dist._make_nccl_premul_sum(T([2.0])))
    check("reduce PREMUL_SUM (others unchanged)", y,
          [2.0 * sum(r + 1 for r in range(n))] if rank == 0 else [rank + 1.0])
    z = T(np.zeros(1))
    dist.reduce_scatter_tensor(z, T(np.arange(n) + rank), op=dist._make_nccl_premul_sum(3.0))
    check("reduce_scatter_tensor PREMUL_SUM", z, [3.0 * sum(rank + r for r in range(n))])
    # ---- non-contiguous tensors, as gloo takes them
    m = T(np.arange(6.0).reshape(2, 3) + rank)
    dist.all_reduce(m.t())
    check("all_reduce non-contiguous", m, np.arange(6.0).reshape(2, 3) * n + sum(range(n)))
    b = T(np.full((3, 2), float(rank)))
    dist.broadcast(b.t(), src=n - 1)
    check("broadcast non-contiguous", b, np.full((3, 2), float(n - 1)))
    g = [T(np.zeros((2, 2))).t() for _ in range(n)]
    dist.all_gather(g, T(np.eye(2) * rank).t())
    for j in range(n):
        check(f"all_gather non-contiguous [{j}]", g[j], np.eye(2) * j)
    big = T(np.zeros((3, 2 * n)))
    dist.all_gather_into_tensor(big.t(), T([[rank] * 3, [-rank] * 3]).t().t())
    check("all_gather_into_tensor non-contiguous output", big.t(),
          [[j] * 3 if k == 0 else [-j] * 3 for j in range(n) for k in range(2)])
    small = T(np.zeros((3, 1)))
    dist.reduce_scatter_tensor(small.t(), T(np.ones((3, n)) * (rank + 1)).t())
    check("reduce_scatter_tensor non-contiguous", small, np.full((3, 1), sum(range(1, n + 1))))
    errs = 0
    for bad in (lambda: dist.all_to_all_single(T(np.zeros(n)), T(np.zeros(n)), None, [n + 1] * n),
                lambda: dist.all_to_all_single(T(np.zeros(n)), T(np.zeros(n + 1)))):
        try:
            bad()
        except RuntimeError:
            errs += 1
    check("all_to_all_single bad split sizes (RuntimeError, as PyTorch)", errs, 2)
    # ---- futures: then() chains, errors are kept
    w = dist.all_reduce(T([1.0, 2.0]), async_op=True)
    chained = w.get_future().then(lambda f: f.value()[0] * 2)
    check("Future.then", chained.wait(), [2.0 * n, 4.0 * n])
    check("barrier future value", dist.barrier(async_op=True).get_future().wait(), [])
    # ---- coalesced (deprecated in PyTorch, which warns)
    ts = [T([rank, 1.0]), T([[rank * 2.0]])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.all_reduce_coalesced(ts)
    check("all_reduce_coalesced", (ts[0].tolist(), ts[1].tolist(), caught[0].category),
          ([float(sum(range(n))), float(n)], [[2.0 * sum(range(n))]], FutureWarning))
    gl = [[T([0.0]), T(np.zeros(2))] for _ in range(n)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist.all_gather_coalesced(gl, [T([rank]), T([rank, -rank])])
    check("all_gather_coalesced", [[a.tolist() for a in row] for row in gl],
          [[[float(j)], [float(j), float(-j)]] for j in range(n)])
    # ---- batch_isend_irecv: a ring
    send_t, recv_t = T([rank] * 3, pg.int64), T(np.zeros(3), pg.int64)
    ops = [dist.P2POp(dist.isend, send_t, (rank + 1) % n),
           dist.P2POp(dist.irecv, recv_t, (rank - 1) % n)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check("batch_isend_irecv ring", recv_t, [(rank - 1) % n] * 3)
    # ---- object collectives
    objs = [{"rank": rank, "t": pg.tensor([1, 2])}, [rank, "x", None, 2.5]]
    dist.broadcast_object_list(objs, src=n - 1)
    check("broadcast_object_list", (objs[0]["rank"], objs[0]["t"].tolist(), objs[1]),
          (n - 1, [1, 2], [n - 1, "x", None, 2.5]))
    gathered: list = [None] * n
    dist.all_gather_object(gathered, {"r": rank, "s": "y" * rank})
    check("all_gather_object", gathered, [{"r": j, "s": "y" * j} for j in range(n)])
    gl2: list | None = [None] * n if rank == 0 else None
    dist.gather_object((rank, b"ab" * rank), gl2, dst=0)
    check("gather_object", gl2, [(j, b"ab" * j) for j in range(n)] if rank == 0 else None)
    sl: list = [None]
    dist.scatter_object_list(sl, [{"to": j} for j in range(n)] if rank == 1 else None, src=1)
    check("scatter_object_list", sl, [{"to": rank}])
    if rank == 0:
        dist.send_object_list([{"a": 1}, (2, 3)], dst=1)
    elif rank == 1:
        got: list = [None, None]
        sender = dist.recv_object_list(got, src=0)
        check("send/recv_object_list", (got, sender), ([{"a": 1}, (2, 3)], 0))
    # a peer's bytes naming a callable are refused, not run
    box: list = [Unsafe()] if rank == 0 else [None]
    try:
        dist.broadcast_object_list(box, src=0)
        refused = rank == 0  # the sender keeps its own object
    except WeightsOnlyError:
        refused = rank != 0
    check("object collectives refuse code", refused, True)
    # ---- subgroups
    cur, subs = dist.new_subgroups(group_size=1)
    check("new_subgroups", (len(subs), dist.get_world_size(cur), dist.get_process_group_ranks(cur)),
          (n, 1, [rank]))
    split = dist.split_group(split_ranks=[[0, 1]])
    if rank < 2:
        s = T([1.0])
        dist.all_reduce(s, group=split)
        check("split_group member", (s.tolist(), dist.get_world_size(split)), ([2.0], 2))
    else:
        check("split_group non-member", split, None)
    # ---- DeviceMesh: 1-D over all ranks, and 2-D when the world has 2 * k ranks
    from portagrad.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
    v = T([1.0])
    dist.all_reduce(v, group=mesh.get_group())
    check("DeviceMesh 1-D", (v.tolist(), mesh.size(), mesh.get_local_rank(), mesh.ndim),
          ([float(n)], n, rank, 1))
    if n % 2 == 0:
        m2 = init_device_mesh("cpu", (2, n // 2), mesh_dim_names=("dp", "tp"))
        dp, tp = m2["dp"], m2["tp"]
        check("DeviceMesh 2-D coordinates",
              (m2.get_coordinate(), dp.get_local_rank(), tp.get_local_rank(), m2.shape),
              ([rank // (n // 2), rank % (n // 2)], rank // (n // 2), rank % (n // 2),
               (2, n // 2)))
        v = T([float(rank)])
        dist.all_reduce(v, group=m2.get_group("tp"))
        row = rank // (n // 2)
        check("DeviceMesh 2-D tp group",
              v, [float(sum(range(row * (n // 2), (row + 1) * (n // 2))))])
        v = T([float(rank)])
        dist.all_reduce(v, group=dp.get_group())
        check("DeviceMesh 2-D dp submesh", v, [float(rank % (n // 2) * 2 + n // 2)])
    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {name}" for name in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
