"""fully sharded data parallelism's pieces in one process: the ``unshard`` node (gradcheck in
float64, with the collectives played by concatenation and slicing), the row split (as
``torch.chunk`` splits dim 0), and argument errors. The multi-process behaviour is checked under
mpiexec by tests/distributed/check_fsdp.py."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad._ops.nn.unshard import unshard
from portagrad.autograd import gradcheck
from portagrad.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy, fully_shard
from portagrad.distributed.fsdp._param import shard_rows


def test_unshard_gradcheck(device):
    """Two "ranks'" rows of a (3, 2) weight and a (2,) bias, gathered whole: the backward gives
    each shard its rows of the whole gradient (here, one process plays every rank)."""
    gen = np.random.default_rng(0)
    shards = [pg.tensor(gen.standard_normal(s), dtype=pg.float64, device=device,
                        requires_grad=True) for s in ((2, 2), (1, 2), (1,), (1,))]

    def gatherer(s):
        return lambda: [pg.cat([s[0].detach(), s[1].detach()]),
                        pg.cat([s[2].detach(), s[3].detach()])]

    def reduce(grads):
        w, b = grads
        return [w[:2], w[2:], b[:1], b[1:]]

    x = pg.tensor(gen.standard_normal((4, 2)), dtype=pg.float64, device=device)

    def fn(*s):
        w, b = unshard(s, gatherer(s), reduce)
        return pg.tanh(x @ w.t() + b.sum())

    assert gradcheck(fn, tuple(shards), eps=1e-6, atol=1e-5, rtol=1e-3)
    w, b = unshard(shards, gatherer(shards), reduce)
    np.testing.assert_array_equal(w.detach().cpu().numpy(), np.concatenate(
        [shards[0].detach().cpu().numpy(), shards[1].detach().cpu().numpy()]))


@pytest.mark.parametrize("rows", [0, 1, 5, 7, 12])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_rows_split_as_chunk(rows, world):
    """ceil(rows / world) rows per rank, the last ranks holding fewer (or none); the pieces tile
    the rows in rank order."""
    chunk = max(1, -(-rows // world))
    got = [shard_rows(rows, world, r) for r in range(world)]
    assert all(c == chunk for c, _, _ in got)
    assert [lo for _, lo, _ in got] == [min(r * chunk, rows) for r in range(world)]
    assert sum(hi - lo for _, lo, hi in got) == rows and got[-1][2] == rows
    torch = pytest.importorskip("torch")
    sizes = [len(c) for c in torch.arange(rows).chunk(world)] if rows else []
    assert [hi - lo for _, lo, hi in got if hi > lo] == sizes


def test_argument_errors():
    with pytest.raises(TypeError, match="nn.Module"):
        fully_shard(pg.zeros(3))
    with pytest.raises(NotImplementedError, match="shard_placement_fn"):
        fully_shard(nn.Linear(2, 2), shard_placement_fn=lambda p: None)
    with pytest.raises(NotImplementedError, match="sharding_strategy"):
        FullyShardedDataParallel(nn.Linear(2, 2), sharding_strategy=ShardingStrategy.NO_SHARD)


def test_checkpoint_in_one_process_and_bad_folders(tmp_path):
    """save/load without a process group (a plain model: rank 0's whole tensors); a folder that
    is not a checkpoint, an index naming a file outside its folder, and a shape that differs are
    refused with typed errors."""
    import json

    import portagrad.distributed.checkpoint as dcp

    pg.manual_seed(0)
    a = nn.Linear(4, 3)
    folder = tmp_path / "c"
    dcp.save({"m": a.state_dict(), "epoch": 2}, checkpoint_id=folder, no_dist=True)
    pg.manual_seed(1)
    b = nn.Linear(4, 3)
    sd = {"m": b.state_dict(), "epoch": 0}
    dcp.load(sd, storage_reader=dcp.FileSystemReader(folder), no_dist=True)
    assert sd["epoch"] == 2
    np.testing.assert_array_equal(b.weight.detach().numpy(), a.weight.detach().numpy())
    with pytest.raises(ValueError, match="shape|float32"):
        dcp.load({"m": nn.Linear(5, 3).state_dict()}, checkpoint_id=folder, no_dist=True)
    with pytest.raises(KeyError, match="other"):
        dcp.load({"other": pg.zeros(2)}, checkpoint_id=folder, no_dist=True)
    index = json.loads((folder / "index.json").read_text())
    index["tensors"]["m.weight"]["pieces"][0]["file"] = "../evil.safetensors"
    (folder / "index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="outside the checkpoint"):
        dcp.load({"m": b.state_dict()}, checkpoint_id=folder, no_dist=True)
    (folder / "index.json").write_text("{}")
    with pytest.raises(ValueError, match="not a portagrad distributed checkpoint"):
        dcp.load({"m": b.state_dict()}, checkpoint_id=folder, no_dist=True)


def test_per_process_memory_fraction(device):
    """The cap the memory test uses: past it an allocation raises OutOfMemoryError, and lifting
    it allows the allocation again; bad fractions are refused as torch.cuda refuses them."""
    kind = device.split(":")[0]
    mod = getattr(pg, kind, None)
    if mod is None or not hasattr(mod, "set_per_process_memory_fraction"):
        pytest.skip(f"no device module for {kind}")
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        mod.set_per_process_memory_fraction(1.5, device)
    with pytest.raises(TypeError, match="fraction"):
        mod.set_per_process_memory_fraction("half", device)
    if kind != "opencl":
        with pytest.raises(NotImplementedError, match="no memory cap"):
            mod.set_per_process_memory_fraction(0.5, device)
        return
    total = mod.get_device_properties(device).total_memory
    # the cap bounds what is reserved: a cached free block left by earlier tests would serve the
    # request below without reserving more, so the cache is emptied first
    mod.empty_cache()
    now = mod.memory_reserved(device)
    mod.set_per_process_memory_fraction((now + (1 << 20)) / total, device)
    try:
        with pytest.raises(pg.OutOfMemoryError, match="out of memory"):
            pg.empty(4 << 20, dtype=pg.uint8, device=device)
    finally:
        mod.set_per_process_memory_fraction(1.0, device)
    assert pg.empty(4 << 20, dtype=pg.uint8, device=device).numel() == 4 << 20
