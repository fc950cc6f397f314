"""PyTorch's call forms of the factories (``size=``, ``randint(high, size)``, ``*_like`` with
``memory_format``), Python ``range``/tuple indices, and host-side draws that must not follow the
default device."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg


@pytest.fixture
def default_device(device: str):  # the default device set to the tested one, then restored
    pg.set_default_device(device)
    try:
        yield device
    finally:
        pg.set_default_device(None)


def test_size_keyword(device: str) -> None:
    for f in (pg.zeros, pg.ones, pg.empty, pg.rand, pg.randn):
        for t in (f(size=(2, 3), device=device), f(size=[2, 3], device=device),
                  f(2, 3, device=device), f((2, 3), device=device)):
            assert t.shape == (2, 3) and t.device == pg.device(device)
        with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
            f(2, size=(2,))
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'size'"):
            f()
    assert pg.ones(size=(2,), dtype=pg.int64, device=device).tolist() == [1, 1]
    assert pg.zeros(size=(), device=device).shape == ()
    full = pg.full(size=(2,), fill_value=3, device=device)
    assert full.tolist() == [3, 3] and full.dtype is pg.int64
    assert pg.full((2,), fill_value=1.5, device=device).tolist() == [1.5, 1.5]


def test_randint_call_forms(device: str) -> None:
    pg.manual_seed(0)
    for t, lo, hi in ((pg.randint(5, (300,), device=device), 0, 5),
                      (pg.randint(2, 5, (300,), device=device), 2, 5),
                      (pg.randint(5, size=(300,), device=device), 0, 5),
                      (pg.randint(2, 5, size=(300,), device=device), 2, 5),
                      (pg.randint(high=5, size=(300,), device=device), 0, 5),
                      (pg.randint(low=2, high=5, size=(300,), device=device), 2, 5),
                      (pg.randint(-3, 0, pg.Size([300]), device=device), -3, 0)):
        vals = t.tolist()
        assert t.dtype is pg.int64 and t.shape == (300,) and t.device == pg.device(device)
        assert set(vals) == set(range(lo, hi))  # 300 draws cover every value
    assert pg.randint(3, 10, (2, 2), dtype=pg.int32, device=device).dtype is pg.int32
    with pytest.raises(TypeError, match="missing required argument.*size"):
        pg.randint(5)
    with pytest.raises(TypeError, match="missing required argument.*high"):
        pg.randint(size=(3,))
    with pytest.raises(TypeError, match="argument 'high' must be int, not float"):
        pg.randint(5.5, (2,))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        pg.randint(0, 5, 3)
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        pg.randint(5, 5, (2,))


def test_like_functions_take_memory_format(device: str) -> None:
    x = pg.ones(2, 3, device=device)
    for fmt in (pg.preserve_format, pg.contiguous_format):
        for y in (pg.zeros_like(x, memory_format=fmt), pg.ones_like(x, memory_format=fmt),
                  pg.empty_like(x, memory_format=fmt), pg.full_like(x, 2, memory_format=fmt),
                  pg.rand_like(x, memory_format=fmt), pg.randn_like(x, memory_format=fmt),
                  pg.randint_like(x, 5, memory_format=fmt)):
            assert y.shape == (2, 3) and y.device == x.device and y.is_contiguous()
    r = pg.randint_like(x, 1, 3)
    assert r.dtype is pg.float32 and set(r.tolist()[0]) <= {1.0, 2.0}
    assert set(pg.randint_like(x, high=2).flatten().tolist()) <= {0.0, 1.0}
    with pytest.raises(NotImplementedError, match="channels_last is not implemented"):
        pg.zeros_like(x, memory_format=pg.channels_last)
    with pytest.raises(TypeError, match="must be a memory_format"):
        pg.ones_like(x, memory_format="contiguous")
    assert repr(pg.preserve_format) == "portagrad.preserve_format"


def test_range_indices(device: str) -> None:
    ref = np.arange(10.0).reshape(5, 2)
    x = pg.tensor(ref, device=device)
    for key in (range(3), range(0, 5, 2), range(-1, -3, -1), range(0), (1, range(2)),
                (slice(None), range(1, -1, -1)), (range(1, 3), range(2))):
        parts = key if isinstance(key, tuple) else (key,)
        expect = ref[tuple(np.array(k, dtype=np.int64) if isinstance(k, range) else k
                           for k in parts)]
        got = x[key]
        assert got.shape == expect.shape and np.array_equal(got.numpy(force=True), expect), key
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        x[range(5, 0, -2)].tolist()  # (raised at the read on a device that checks late)
    x[range(0, 4, 2)] = 7
    x[range(0)] = 8  # an empty range writes nothing
    x[1, range(2)] = pg.tensor([-1.0, -2.0], dtype=pg.float64, device=device)  # (index_put_)
    assert x.tolist() == [[7, 7], [-1, -2], [7, 7], [6, 7], [8, 9]]
    g = pg.zeros(4, device=device, requires_grad=True)
    (g[range(1, 4, 2)] * 3).sum().backward()
    assert g.grad.tolist() == [0, 3, 0, 3]


def test_sequences_inside_keys_as_pytorch(device: str) -> None:
    x = pg.tensor(np.arange(10.0).reshape(5, 2), device=device)
    assert x[(0, 1), ].tolist() == [[0, 1], [2, 3]]  # a tuple inside the key is an index list
    assert x[((0, 1), (1, 0))].tolist() == [1, 2]
    assert x[[0, 1]].tolist() == [[0, 1], [2, 3]]  # a flat list stays one index tensor
    assert x[[]].shape == (0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # a list holding sequences, slices or None is a tuple of indices (PyTorch warns)
        assert x[[(0, 1), (1, 0)]].tolist() == [1, 2]
        assert x[[[0, 1], [1, 0]]].tolist() == [1, 2]
        assert x[[0, [1]]].tolist() == [1]
        assert x[[slice(0, 2)]].tolist() == [[0, 1], [2, 3]]
        assert x[[0, None]].shape == (1, 2)
    with pytest.warns(UserWarning, match="non-tuple sequence for multidimensional indexing"):
        x[[[0, 1], [1, 0]]] = 0
    assert x[0, 1].item() == 0 and x[1, 0].item() == 0


def test_host_draws_ignore_the_default_device(default_device: str) -> None:
    p = pg.tensor([0.1, 0.0, 0.9], device="cpu")
    for s in (pg.multinomial(p, 4, True), pg.multinomial(p, 2)):
        assert s.device == pg.device("cpu") and set(s.tolist()) <= {0, 2}
    assert pg.multinomial(p.to(default_device), 2).device == pg.device(default_device)
    assert pg.get_rng_state().device == pg.device("cpu")
    assert pg.randperm(5, device="cpu").device == pg.device("cpu")
    if pg.accelerator.is_available():  # pinned memory comes from an accelerator's backend
        assert pg.ones(3, device="cpu").pin_memory().device == pg.device("cpu")
    else:  # as PyTorch without an accelerator
        with pytest.raises(RuntimeError, match="Cannot pin memory"):
            pg.ones(3, device="cpu").pin_memory()
    w = pg.empty(3, 4, device="cpu")
    pg.nn.init.trunc_normal_(w, a=-1.0, b=1.0)
    assert w.abs().max().item() <= 1.0
    pg.nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy() @ w.numpy().T, np.eye(3), atol=1e-5)
    from portagrad.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

    assert set(WeightedRandomSampler([0.0, 1.0], 5)) == {1}
    ds = TensorDataset(pg.arange(6.0, device="cpu"))
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=4)] == [[0, 1, 2, 3], [4, 5]]
