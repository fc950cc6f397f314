"""Tensors across processes: shared memory for Hogwild, values otherwise."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import portagrad as pg
import portagrad.multiprocessing as mp


def _hogwild_worker(w: pg.Tensor, rank: int) -> None:
    # each worker adds into the shared tensor in place: the parent sees it
    with pg.no_grad():
        w[rank].add_(rank + 1)


def _echo_worker(q_in: mp.Queue, q_out: mp.Queue) -> None:
    t = q_in.get()
    q_out.put((t * 2).detach())


def test_share_memory_hogwild() -> None:
    w = pg.zeros(4, 3).share_memory_()
    assert w.is_shared()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_hogwild_worker, args=(w, r)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    np.testing.assert_array_equal(w.numpy()[:, 0], [1, 2, 0, 0])


def test_queue_by_value_roundtrip() -> None:
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo_worker, args=(q_in, q_out))
    p.start()
    x = pg.arange(6, dtype=pg.float32).reshape(2, 3)
    q_in.put(x)
    y = q_out.get(timeout=60)
    p.join(60)
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)


def test_pickle_by_value_keeps_metadata(device: str) -> None:
    x = pg.randn(3, device=device, requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.requires_grad and y.device == x.device and y.dtype is x.dtype
    np.testing.assert_array_equal(y.detach().cpu().numpy(), x.detach().cpu().numpy())


def test_non_leaf_refused() -> None:
    x = pg.randn(3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        pickle.dumps(x)
