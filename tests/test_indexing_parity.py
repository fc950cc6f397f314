"""Indexing, scatter/gather and ordering ops against PyTorch, on every device: the edge cases a
differential sweep found wrong (integers mixed with advanced indices, NaN in median and
searchsorted, the gradients of scatter_reduce and of whole-tensor max/min/median, index_fill's
negative indices and tensor value, take_along_dim's wrapped indices, index_put with CPU indices).
Each case compares values, dtypes, shapes and gradients with torch (skipped without torch)."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg


def _torch() -> Any:
    return pytest.importorskip("torch")


class _On:
    """portagrad with ``tensor``/``zeros``/``ones`` creating on one device, so a case written
    once (``m.tensor(...)``) builds its index tensors where the data lives."""

    def __init__(self, device: str) -> None:
        self._device = device

    def __getattr__(self, name: str) -> Any:
        f = getattr(pg, name)
        if name in ("tensor", "zeros", "ones", "full"):
            return lambda *a, **k: f(*a, **{"device": self._device, **k})
        return f


def _flat(out: Any) -> list:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _same(ours: Any, ref: Any) -> None:
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-6,
                               atol=1e-9)


def _compare(fn: Any, device: str, *arrays: np.ndarray, grad: bool = True) -> None:
    """``fn(module, *tensors)`` on torch and on portagrad: the outputs equal, and the gradients
    of the float inputs for one fixed upstream gradient."""
    torch = _torch()
    rg = [grad and a.dtype.kind == "f" for a in arrays]
    t_in = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, rg)]
    p_in = [pg.tensor(a, device=device, requires_grad=r) for a, r in zip(arrays, rg)]
    t_out, p_out = _flat(fn(torch, *t_in)), _flat(fn(_On(device), *p_in))
    assert len(t_out) == len(p_out)
    for a, b in zip(p_out, t_out):
        _same(a, b)
    pairs = [(p, t) for p, t in zip(p_out, t_out) if t.requires_grad]
    if not pairs:
        return
    rng = np.random.default_rng(0)
    ups = [rng.standard_normal(tuple(t.shape)) for _, t in pairs]
    t_loss = sum((t * torch.tensor(u, dtype=t.dtype)).sum() for (_, t), u in zip(pairs, ups))
    p_loss = sum((p * pg.tensor(u, dtype=p.dtype, device=device)).sum()
                 for (p, _), u in zip(pairs, ups))
    wanted = [i for i, r in enumerate(rg) if r]
    t_g = torch.autograd.grad(t_loss, [t_in[i] for i in wanted], allow_unused=True)
    p_g = pg.autograd.grad(p_loss, [p_in[i] for i in wanted], allow_unused=True)
    for a, b in zip(p_g, t_g):
        if b is None:
            assert a is None or not a.cpu().numpy().any()
        else:
            _same(a, b)


X = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 7


# ------------------------------------------------------------------ integers with advanced indices
@pytest.mark.parametrize("key", [
    lambda m: (1, slice(None), m.tensor([1, 2])),  # torch: (3, 2, 5); numpy's rule: (2, 3, 5)
    lambda m: (slice(None), 1, slice(None), m.tensor([0, 0])),
    lambda m: (m.tensor([1, 0]), 1, slice(None), m.tensor([0, 4])),
    lambda m: (0, m.tensor(1), slice(None), m.tensor([0, 3])),  # a 0-d tensor is an integer
    lambda m: (Ellipsis, 1, m.tensor([[0], [2]])),
    lambda m: (m.tensor([1, 0]), None, 2, m.tensor([0, 0])),
    lambda m: (1, slice(None), m.tensor([True, False, True, True])),
])
def test_integers_select_before_advanced_indexing(key: Any, device: str) -> None:
    _compare(lambda m, x: x[key(m)], device, X)


def test_setitem_with_integers_and_advanced_indices(device: str) -> None:
    def put(m: Any, x: Any, v: Any) -> Any:
        y = x * 1
        y[1, :, m.tensor([0, -1])] = v  # the value is shaped as torch's result: (3, 2, 5)
        return y
    _compare(put, device, X, np.arange(30, dtype=np.float32).reshape(3, 2, 5))


@pytest.mark.parametrize("key, shape", [
    (lambda m: 0, (1, 4, 5)),  # basic: the value has more dimensions than x[0]
    (lambda m: (0, 0, 0), (1, 1)),
    (lambda m: m.tensor([0, 2]), (1, 1, 2, 4, 5)),  # advanced
    (lambda m: (m.tensor([0, 1]), 1), (1, 1, 5)),
])
def test_setitem_drops_leading_ones_of_the_value(key: Any, shape: tuple, device: str) -> None:
    def put(m: Any, x: Any, v: Any) -> Any:
        y = x * 1
        y[key(m)] = v
        return y
    _compare(put, device, X[0], np.arange(math.prod(shape), dtype=np.float32).reshape(shape))


def test_advanced_index_out_of_range_message(device: str) -> None:
    torch = _torch()
    x, tx = pg.zeros(2, 3, 4, 5, device=device), torch.zeros(2, 3, 4, 5)
    for key in [lambda m: (slice(None), slice(None), m.tensor([9])),
                lambda m: (slice(None), m.tensor([0]), slice(None), m.tensor([7])),
                lambda m: (m.tensor([0, 5]), m.tensor([9, 0])),
                lambda m: (1, slice(None), m.tensor([7]))]:
        with pytest.raises(IndexError) as ref:
            tx[key(torch)]
        with pytest.raises(IndexError, match=str(ref.value)):
            x[key(_On(device))]


# ------------------------------------------------------------------------------ NaN and ties
NAN = np.array([[3, np.nan, 2, 1, np.nan, 3, 0, 1], [6, 5, 4, 5, 4, 7, 6, 6],
                [0, 2, 1, 2, 0, 1, 2, np.nan]], dtype=np.float64)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.median(x, 1),  # NaN where the row holds one, indexed at its first NaN
    lambda m, x: m.median(x, 0, keepdim=True),
    lambda m, x: x.median(),
    lambda m, x: x[1].median(),
])
def test_median_propagates_nan(fn: Any, device: str) -> None:
    _compare(fn, device, NAN)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(), lambda m, x: x.min(),  # the gradient shared by the NaN elements
    lambda m, x: x[1].max(), lambda m, x: x[1].min(),  # ... or by the tied ones
    lambda m, x: x[1].median(), lambda m, x: x.nanmedian(), lambda m, x: x[1].nanmedian(),
])
def test_whole_tensor_reductions_split_the_gradient(fn: Any, device: str) -> None:
    _compare(fn, device, NAN)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_nan(right: bool, device: str) -> None:
    values = np.array([np.nan, 2.5, 4, 3, -np.inf], dtype=np.float32)
    for bounds in ([1, 2, 3, 5], [1, 2, 3, np.nan]):
        b = np.array(bounds, dtype=np.float32)
        _compare(lambda m, b, v: m.searchsorted(b, v, right=right), device, b, values)
        _compare(lambda m, b, v: m.bucketize(v, b, right=right), device, b, values)


def test_searchsorted_number_in_the_common_type(device: str) -> None:
    torch = _torch()
    cases = [(lambda m, d: m.searchsorted(m.tensor([1, 2, 3], device=d), 2.5)),
             (lambda m, d: m.bucketize(2.5, m.tensor([1, 2, 3], device=d))),
             (lambda m, d: m.searchsorted(m.tensor([0.1, 0.2, 0.3], dtype=m.float64, device=d),
                                          0.2)),
             (lambda m, d: m.searchsorted(m.tensor([1.0, 2.0], device=d), 2, right=True))]
    for case in cases:
        ref, ours = case(torch, "cpu"), case(pg, device)
        assert ours.dtype == pg.int64 and ours.shape == ()
        assert ours.item() == ref.item()


# ------------------------------------------------------------------------------ scatter_reduce
_SR_SELF = np.array([[1., 2., 0., 3.], [5., 5., 2., np.nan], [0., 4., 4., 1.]])
_SR_SRC = np.array([[2., 2., 0., 1., 3.], [5., 0., 5., 3., 1.], [4., 0., 0., 4., 2.]])
_SR_INDEX = np.array([[0, 0, 2, 2, 3], [1, 1, 0, 2, 2], [1, 2, 2, 1, 1]])


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod", "mean", "sum"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(reduce: str, include_self: bool, device: str) -> None:
    _compare(lambda m, x, i, s: x.scatter_reduce(1, i, s, reduce, include_self=include_self),
             device, _SR_SELF, _SR_INDEX, _SR_SRC)


def test_scatter_reduce_gradcheck(device: str) -> None:
    rng = np.random.default_rng(1)
    x = pg.tensor(rng.standard_normal((3, 5)), device=device, requires_grad=True)
    s = pg.tensor(rng.standard_normal((3, 5)), device=device, requires_grad=True)
    idx = pg.tensor(_SR_INDEX, device=device)
    for reduce in ("amax", "prod"):
        assert pg.autograd.gradcheck(
            lambda x, s, r=reduce: x.scatter_reduce(1, idx, s, r, include_self=False), (x, s))


def test_scatter_multiply(device: str) -> None:
    index = np.array([[0, 0], [2, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of the reduce argument
        _compare(lambda m, x, i, s: x.scatter(1, i, s, reduce="multiply"), device,
                 np.full((2, 3), 2.0), index, np.full((2, 2), 3.0), grad=False)
        _compare(lambda m, x, i: x.scatter(1, i, 2.5, reduce="multiply"), device,
                 np.arange(6).reshape(2, 3), index)


# ------------------------------------------------------------------- index_fill, take_along_dim
def test_index_fill_negative_indices_and_tensor_value(device: str) -> None:
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    _compare(lambda m, x: x.index_fill(1, m.tensor([-1, 0, -5]), -2.0), device, x)
    _compare(lambda m, x, v: x.index_fill(1, m.tensor([4, 0, 0]), v), device, x,
             np.array(3.0, dtype=np.float32))
    _compare(lambda m, x: x.index_fill(1, m.tensor([1]), m.tensor(2.7)), device,
             np.arange(10).reshape(2, 5))
    torch = _torch()
    for m, t in ((torch, torch.zeros(2, 5)), (pg, pg.zeros(2, 5, device=device))):
        with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 5"):
            t.index_fill(1, m.tensor([-6], device=t.device), 1.0)
        with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
            t.index_fill(1, m.tensor([1], device=t.device), m.ones(1, device=t.device))
        with pytest.raises(IndexError, match="Expected dtype int64 for index"):
            t.index_fill(1, m.tensor([1], dtype=m.int32, device=t.device), 1.0)


def test_take_along_dim_wraps_indices(device: str) -> None:
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    _compare(lambda m, x: m.take_along_dim(x, m.tensor([[-1, -5, 4, 7]]), 1), device, x)
    torch = _torch()
    for m, t in ((torch, torch.zeros(2, 5)), (pg, pg.zeros(2, 5, device=device))):
        with pytest.raises(RuntimeError, match="dtype of indices should be Long"):
            m.take_along_dim(t, m.tensor([[1]], dtype=m.int32, device=t.device), 1)


def test_where_uint8_condition(device: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(lambda m, c, a: m.where(c.to(m.uint8), a, 0.0), device,
                 np.array([1, 0, 2]), np.array([1.0, 2.0, 3.0], dtype=np.float32))


# ------------------------------------------------------------- index_put, index_add, unique
def test_index_put_accumulate(device: str) -> None:
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    _compare(lambda m, x, v: x.index_put((m.tensor([0, 0, 2, -1]),), v, accumulate=True),
             device, x, np.ones((4, 2), dtype=np.float32))
    torch = _torch()
    with pytest.raises(IndexError) as ref:
        torch.zeros(3, 2).index_put((torch.tensor([-6]),), torch.ones(2), accumulate=True)
    with pytest.raises(IndexError, match=str(ref.value)):
        pg.zeros(3, 2, device=device).index_put((pg.tensor([-6]),), pg.ones(2, device=device),
                                                accumulate=True)


def test_index_put_accumulate_cpu_indices_and_value(device: str) -> None:
    # CPU indices (and a 0-d CPU value) serve a tensor on any device, as in PyTorch
    x = pg.zeros(3, device=device)
    y = x.index_put((pg.tensor([0, 0, 2]),), pg.tensor(1.5), accumulate=True)
    assert y.device == x.device
    np.testing.assert_array_equal(y.cpu().numpy(), [3.0, 0.0, 1.5])
    z = x.index_put((pg.tensor([True, False, True]),), pg.tensor(2.0), accumulate=True)
    np.testing.assert_array_equal(z.cpu().numpy(), [2.0, 0.0, 2.0])


def test_index_errors_are_torch_types(device: str) -> None:
    torch = _torch()
    for m, x in ((torch, torch.zeros(3, 5)), (pg, pg.zeros(3, 5, device=device))):
        with pytest.raises(RuntimeError, match="index -6 is out of bounds for dimension 1"):
            x.index_add(1, m.tensor([-6], device=x.device), m.ones(3, 1, device=x.device))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: index_reduce is in beta
            with pytest.raises(IndexError, match="index out of range in self"):
                x.index_reduce(1, m.tensor([5], device=x.device), m.ones(3, 1, device=x.device),
                               "amax")


def test_unique_dim_of_empty(device: str) -> None:
    _compare(lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True), device,
             np.zeros((0, 3), dtype=np.float32), grad=False)
    _compare(lambda m, x: m.unique_consecutive(x, dim=0, return_counts=True), device,
             np.zeros((0, 3), dtype=np.float32), grad=False)
    with pytest.raises(RuntimeError, match="There are 0 sized dimensions"):
        pg.unique(pg.zeros(0, 3, device=device), dim=1)


def test_median_nan_is_nan_without_torch(device: str) -> None:
    # (runs without torch too) the median of a slice holding a NaN is NaN
    x = pg.tensor([[1.0, math.nan, 0.0], [3.0, 1.0, 2.0]], device=device)
    v, i = x.median(1)
    assert math.isnan(v[0].item()) and i[0].item() == 1
    assert v[1].item() == 2.0 and i[1].item() == 2
    assert math.isnan(x.median().item())


def test_bool_mask_of_a_tensor_with_an_empty_dimension(device: str) -> None:
    # torch 2.13: x[mask] keeps the zero-size trailing dimension ((0, 0, 2) and (2, 0, 2)); the
    # flattened view was asked for with -1, which a zero-size tensor leaves ambiguous
    x = pg.zeros(1, 2, 0, dtype=pg.int64, device=device).transpose(-1, -2)
    assert tuple(x[pg.tensor([False], device=device)].shape) == (0, 0, 2)
    assert tuple(x[pg.tensor([True], device=device)].shape) == (1, 0, 2)
    y = pg.zeros(3, 0, 2, device=device)
    assert tuple(y[pg.tensor([True, False, True], device=device)].shape) == (2, 0, 2)


def test_integer_index_into_an_empty_first_dimension(device: str) -> None:
    # torch 2.13: IndexError "index is out of bounds for dimension with size 0" (was the
    # RuntimeError of index_select); an empty index still gives an empty result
    for shape, idx in (((0, 0, 1), [[0]]), ((0, 3), [0])):
        with pytest.raises(IndexError, match="^index is out of bounds for dimension with size 0$"):
            pg.zeros(*shape, device=device)[pg.tensor(idx, device=device)]
    empty = pg.zeros(0, 3, device=device)[pg.tensor([], dtype=pg.int64, device=device)]
    assert tuple(empty.shape) == (0, 3)
