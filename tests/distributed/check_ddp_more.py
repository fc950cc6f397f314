"""Run under ``mpiexec -n N``: DDP communication hooks (the default hooks against the values they
define, computed locally from every rank's batch; a custom hook), ``static_graph`` and
``gradient_as_bucket_view`` (gradients unchanged; ``.grad`` a view of the bucket), ``join()`` for
uneven inputs (rank r has 3 + 2r batches: parameters as the locally simulated run, with either
divisor; ``throw_on_early_termination``), and ``ZeroRedundancyOptimizer`` (Adam's parameters equal
the unsharded Adam's in float64; each rank holds its shard's state only; state_dict round trip).
Argument: the device (``opencl``: ``opencl:{rank % count}``)."""
from __future__ import annotations

import sys

import numpy as np

import portagrad as pg
import portagrad.distributed as dist
from portagrad import nn, optim
from portagrad.distributed._future import Future
from portagrad.distributed.algorithms import Join
from portagrad.distributed.algorithms.ddp_comm_hooks import (DDPCommHookType, default_hooks,
                                                             register_ddp_comm_hook)
from portagrad.distributed.optim import ZeroRedundancyOptimizer
from portagrad.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.b = nn.Linear(16, 8)
        self.c = nn.Linear(8, 3)

    def forward(self, x: pg.Tensor) -> pg.Tensor:
        return self.c(pg.tanh(self.b(pg.relu(self.a(x)))))


def np_grads(model: nn.Module) -> list[np.ndarray]:
    return [p.grad.detach().cpu().numpy().copy() for p in model.parameters()]


def params_np(model: nn.Module) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def main() -> int:
    kind = sys.argv[1]
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = f"opencl:{rank % pg.opencl.device_count()}" if kind.startswith("opencl") else kind
    done: list[str] = []
    try:
        pg.zeros(1, dtype=pg.float64, device=dev)
        f64 = pg.float64
    except Exception:  # a device without doubles
        f64 = pg.float32
    try:
        (pg.zeros(2, dtype=pg.float16, device=dev) + 1).cpu()
        has_fp16 = True
    except Exception:  # PoCL has no cl_khr_fp16
        has_fp16 = False

    pg.manual_seed(7)
    xs = [pg.randn(5, 6) for _ in range(world)]  # every rank's batch, known to all
    ys = [pg.randn(5, 3) for _ in range(world)]

    def local_grads(state: dict) -> list[np.ndarray]:
        """Each rank's gradient (as the list of every rank's) from the plain model."""
        out = []
        for r in range(world):
            m = Net().to(dev)
            m.load_state_dict(state)
            ((m(xs[r].to(dev)) - ys[r].to(dev)) ** 2).sum().backward()
            out.append(np_grads(m))
        return out

    def fresh(**kw: object) -> DDP:
        pg.manual_seed(100 + rank)
        return DDP(Net().to(dev), bucket_cap_mb=0.0001, **kw)  # several buckets

    def backward(ddp: DDP) -> None:
        ddp.zero_grad(set_to_none=True)
        ((ddp(xs[rank].to(dev)) - ys[rank].to(dev)) ** 2).sum().backward()

    # ---------------------------------------------------------------- comm hooks
    ddp = fresh()
    assert len(ddp._buckets) >= 3
    per_rank = local_grads(ddp.module.state_dict())
    mean = [sum(g[k] for g in per_rank) / world for k in range(len(per_rank[0]))]
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    backward(ddp)
    for got, want in zip(np_grads(ddp.module), mean):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    done.append("allreduce_hook: the average")
    try:
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        raise AssertionError("a second hook was accepted")
    except RuntimeError as e:
        assert "can only be called once" in str(e), e
    done.append("a second register_comm_hook raises")

    def rounded(dtype: object) -> list[np.ndarray]:
        """The value the compress hook defines: each rank's gradient rounded to 16 bits, divided
        there, summed in float32, rounded once, back to float32."""
        out = []
        for k in range(len(per_rank[0])):
            parts = [pg.tensor(g[k]).to(dtype).div_(world).float().numpy() for g in per_rank]
            total = np.sum(np.stack(parts).astype(np.float32), axis=0, dtype=np.float32)
            out.append(pg.tensor(total).to(dtype).float().numpy())
        return out

    try:  # (a backend that stores no bfloat16, e.g. over array-api-strict, has no bf16 hook)
        (pg.zeros(2, dtype=pg.bfloat16, device=dev) + 1).cpu()
        hooks = [("bf16", pg.bfloat16, default_hooks.bf16_compress_hook)]
    except Exception:
        hooks = []
    if has_fp16:
        hooks.append(("fp16", pg.float16, default_hooks.fp16_compress_hook))
    for name, dtype, hook in hooks:
        ddp = fresh()
        ddp.register_comm_hook(None, hook)
        backward(ddp)
        for got, want, exact in zip(np_grads(ddp.module), rounded(dtype), mean):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)
            assert not np.array_equal(got, exact) or name == "", "no rounding happened"
        done.append(f"{name}_compress_hook: the average of the rounded gradients")

    ddp = fresh()
    register_ddp_comm_hook(DDPCommHookType.ALLREDUCE, ddp)
    backward(ddp)
    for got, want in zip(np_grads(ddp.module), mean):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    done.append("DDPCommHookType.ALLREDUCE registers allreduce_hook")

    seen: list[tuple[int, bool, list[tuple[int, ...]]]] = []

    def double_local(state: object, bucket: dist.GradBucket) -> Future:
        """No communication: twice this rank's own gradient."""
        assert state == "mine"
        for g, p in zip(bucket.gradients(), bucket.parameters()):
            assert tuple(g.shape) == tuple(p.shape)
        seen.append((bucket.index(), bucket.is_last(),
                     [tuple(p.shape) for p in bucket.parameters()]))
        fut = Future()
        fut.set_result(bucket.buffer() * 2)
        return fut

    ddp = fresh()
    ddp.register_comm_hook("mine", double_local)
    backward(ddp)
    for got, want in zip(np_grads(ddp.module), per_rank[rank]):
        np.testing.assert_allclose(got, 2 * want, rtol=1e-6, atol=1e-7)
    assert [s[0] for s in seen] == list(range(len(ddp._buckets))), seen
    assert [s[1] for s in seen] == [False] * (len(seen) - 1) + [True]
    assert sorted(sh for s in seen for sh in s[2]) == sorted(
        tuple(p.shape) for p in ddp.module.parameters())
    done.append("a custom hook's result is written into the gradients; buckets in order")
    for bad, exc in ((42, TypeError), ):
        try:
            fresh().register_comm_hook(None, bad)
            raise AssertionError("a non-callable hook was accepted")
        except exc:
            pass
    ddp = fresh()
    ddp.register_comm_hook(None, lambda s, b: b.buffer())
    try:
        backward(ddp)
        raise AssertionError("a hook returning a tensor was accepted")
    except TypeError as e:
        assert "must return a Future" in str(e), e
    done.append("bad hooks raise TypeError")

    # ----------------------------------------- static_graph, gradient_as_bucket_view
    ref = fresh()
    backward(ref)
    want = np_grads(ref.module)
    for kw in ({"static_graph": True}, {"gradient_as_bucket_view": True}):
        ddp, ref = fresh(**kw), fresh()
        sgd = optim.SGD(ddp.parameters(), lr=0.1)
        sgd_ref = optim.SGD(ref.parameters(), lr=0.1)
        for it in range(3):
            backward(ddp)
            backward(ref)
            for got, w in zip(np_grads(ddp.module), np_grads(ref.module)):
                np.testing.assert_array_equal(got, w)
            if it == 0:
                for got, w in zip(np_grads(ddp.module), want):
                    np.testing.assert_array_equal(got, w)
            sgd.step()
            sgd_ref.step()
        if kw.get("gradient_as_bucket_view"):
            for b in ddp._buckets:
                assert b.views is not None
                for j, i in enumerate(b.params):
                    assert ddp._params[i].grad is b.views[j]
            # the gradient is the bucket: writing one is seen in the other
            b = ddp._buckets[0]
            ddp._params[b.params[0]].grad.fill_(3.0)
            assert float(b.tensor()[0].item()) == 3.0
        for got, w in zip(params_np(ddp.module), params_np(ref.module)):
            np.testing.assert_array_equal(got, w)
        done.append(f"{next(iter(kw))}=True: gradients and parameters unchanged")

    # ---------------------------------------------------------------------- join
    lr = 0.05
    n_batches = [3 + 2 * r for r in range(world)]
    pg.manual_seed(11)
    jx = [[pg.randn(4, 6) for _ in range(n_batches[r])] for r in range(world)]
    jy = [[pg.randn(4, 3) for _ in range(n_batches[r])] for r in range(world)]
    combined = {"find_unused_parameters": True, "gradient_as_bucket_view": True}
    for divide, kw in ((True, {}), (False, {}), (True, combined)):
        ddp = fresh(**kw)
        if kw:  # joined ranks shadow through the hook, then the unused-parameter mask
            ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        start = ddp.module.state_dict()
        sim = Net().to(dev)
        sim.load_state_dict(start)
        sim_sgd = optim.SGD(sim.parameters(), lr=lr)
        for it in range(max(n_batches)):  # the expected run, every rank's batches locally
            active = [r for r in range(world) if it < n_batches[r]]
            total = None
            for r in active:
                sim.zero_grad()
                ((sim(jx[r][it].to(dev)) - jy[r][it].to(dev)) ** 2).sum().backward()
                g = np_grads(sim)
                total = g if total is None else [a + b for a, b in zip(total, g)]
            assert total is not None
            div = world if divide else len(active)
            with pg.no_grad():
                for p, g in zip(sim.parameters(), total):
                    p.grad = pg.tensor(g / div).to(dev)
            sim_sgd.step()
        sgd = optim.SGD(ddp.parameters(), lr=lr)
        with ddp.join(divide_by_initial_world_size=divide):
            for it in range(n_batches[rank]):
                sgd.zero_grad()
                ((ddp(jx[rank][it].to(dev)) - jy[rank][it].to(dev)) ** 2).sum().backward()
                sgd.step()
        for got, w in zip(params_np(ddp.module), params_np(sim)):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6,
                                       err_msg=f"[rank {rank}] join divide={divide}")
        done.append(f"join(divide_by_initial_world_size={divide}){' with a hook' if kw else ''}: "
                    f"parameters of the uneven run")

    # buffers (BatchNorm statistics) and an evaluation forward inside the context: every rank
    # ends with the last joiner's parameters and buffers
    pg.manual_seed(100 + rank)
    bnet = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Linear(8, 3)).to(dev)
    ddp = DDP(bnet)
    sgd = optim.SGD(ddp.parameters(), lr=lr)
    with ddp.join():
        for it in range(n_batches[rank]):
            sgd.zero_grad()
            ((ddp(jx[rank][it].to(dev)) - jy[rank][it].to(dev)) ** 2).sum().backward()
            sgd.step()
            with pg.no_grad():
                ddp(jx[rank][it].to(dev))
    for t in [*bnet.parameters(), *bnet.buffers()]:
        every = [pg.zeros_like(t) for _ in range(world)]
        dist.all_gather(every, t.detach())
        for e in every:
            np.testing.assert_array_equal(e.cpu().numpy(), every[-1].cpu().numpy())
    done.append("join with buffers and a no-grad forward: every rank ends equal")

    ddp = fresh()
    try:
        with Join([ddp], throw_on_early_termination=True):
            for it in range(n_batches[rank]):
                ((ddp(jx[rank][it].to(dev)) - jy[rank][it].to(dev)) ** 2).sum().backward()
        raise AssertionError("no rank raised")
    except RuntimeError as e:
        msg = "exhausted all inputs" if rank == 0 else "Detected at least one rank"
        assert msg in str(e), e
    probe = pg.ones(1, device=dev)
    dist.all_reduce(probe)
    assert float(probe.item()) == world
    done.append("throw_on_early_termination raises on every rank; the group stays usable")
    try:
        Join([])
        raise AssertionError("an empty Join was accepted")
    except ValueError:
        pass

    # ------------------------------------------------------------------- ZeRO
    def make(seed_model: nn.Module) -> DDP:
        m = Net().to(dev, dtype=f64)
        m.load_state_dict(seed_model.state_dict())
        return DDP(m)

    pg.manual_seed(3)
    base = Net().to(dev, dtype=f64)
    zddp, pddp = make(base), make(base)
    zero = ZeroRedundancyOptimizer(zddp.parameters(), optim.Adam, lr=0.01, betas=(0.8, 0.9))
    plain = optim.Adam(pddp.parameters(), lr=0.01, betas=(0.8, 0.9))
    names = [n for n, _ in zddp.module.named_parameters()]
    owner = zero._owner()
    assign = {n: owner[id(p)] for n, p in zip(names, zddp.module.parameters())}
    expect = ({"b.weight": 0, "a.weight": 1, "c.weight": 1, "a.bias": 1, "b.bias": 0,
               "c.bias": 0} if world == 2 else
              {"b.weight": 0, "a.weight": 1, "c.weight": 2, "a.bias": 2, "b.bias": 2,
               "c.bias": 2} if world == 3 else None)
    if expect is not None:
        assert assign == expect, assign
    done.append("ZeRO partition: by parameter, largest first to the least loaded rank")
    for it in range(4):
        for model, opt in ((zddp, zero), (pddp, plain)):
            opt.zero_grad()
            x = xs[(rank + it) % world].to(dev, dtype=f64)
            ((model(x) - ys[rank].to(dev, dtype=f64)) ** 2).sum().backward()
            opt.step()
    for got, w in zip(params_np(zddp.module), params_np(pddp.module)):
        np.testing.assert_allclose(got, w, rtol=1e-12 if f64 is pg.float64 else 1e-5, atol=0)
    done.append("ZeRO Adam: parameters equal the unsharded Adam's after 4 steps")
    mine = [p for p in zddp.module.parameters() if owner[id(p)] == rank]
    assert set(map(id, zero.optim.state)) == set(map(id, mine))
    nbytes = sum(v.numel() * v.element_size() for s in zero.optim.state.values()
                 for v in s.values() if isinstance(v, pg.Tensor) and v.dim() > 0)
    assert nbytes == 2 * sum(p.numel() for p in mine) * (8 if f64 is pg.float64 else 4), nbytes
    counts = pg.tensor([len(zero.optim.state)])
    dist.all_reduce(counts)
    assert int(counts.item()) == 6
    done.append("ZeRO: each rank holds the Adam state of its shard only")

    zero.consolidate_state_dict(to=0)
    if rank == 0:
        full, ref_sd = zero.state_dict(), plain.state_dict()
        assert sorted(full["state"]) == sorted(ref_sd["state"]) == list(range(6))
        for k, st in ref_sd["state"].items():
            for key in ("exp_avg", "exp_avg_sq", "step"):
                np.testing.assert_allclose(full["state"][k][key].cpu().numpy(),
                                           st[key].cpu().numpy(), rtol=1e-12, atol=0)
        assert [g["params"] for g in full["param_groups"]] == [list(range(6))]
        assert full["param_groups"][0]["betas"] == (0.8, 0.9)
    else:
        try:
            zero.state_dict()
            raise AssertionError("state_dict on a rank that did not consolidate")
        except RuntimeError as e:
            assert "consolidate_state_dict" in str(e)
    box = [zero.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    # a fresh ZeRO loads the consolidated state: its next step equals the plain Adam's
    lddp = make(zddp.module)
    loaded = ZeroRedundancyOptimizer(lddp.parameters(), optim.Adam, lr=0.5)
    loaded.load_state_dict(box[0])
    assert loaded.param_groups[0]["lr"] == 0.01
    for model, opt in ((lddp, loaded), (pddp, plain)):
        opt.zero_grad()
        ((model(xs[rank].to(dev, dtype=f64)) - ys[rank].to(dev, dtype=f64)) ** 2).sum().backward()
        opt.step()
    for got, w in zip(params_np(lddp.module), params_np(pddp.module)):
        np.testing.assert_allclose(got, w, rtol=1e-12 if f64 is pg.float64 else 1e-5, atol=0)
    done.append("ZeRO consolidate_state_dict/state_dict/load_state_dict round trip")
    try:
        ZeroRedundancyOptimizer(zddp.parameters(), optim.Adam, overlap_with_ddp=True, lr=0.1)
        raise AssertionError("overlap_with_ddp accepted")
    except NotImplementedError:
        pass

    dist.destroy_process_group()
    if rank == 0:
        print("\n".join(f"ok {n}" for n in done))
        print(f"checks: {len(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
