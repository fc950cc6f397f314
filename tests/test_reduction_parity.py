"""PyTorch's results, dtypes and argument checks (exception types and messages) for reductions,
order statistics, quantiles, scans and ``unique``; expected values are PyTorch 2.13's, written
out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

NAN, INF = math.nan, math.inf


def t(device: str, data, dtype=None):
    return pg.tensor(data, dtype=dtype, device=device)


def _same(got: list, want: list) -> bool:
    return len(got) == len(want) and all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


# ------------------------------------------------------------------------------- dims of a 0-d
@pytest.mark.parametrize("call", [
    lambda x: pg.sum(x, 1), lambda x: pg.mean(x, 1), lambda x: pg.prod(x, 1),
    lambda x: pg.amax(x, 1), lambda x: pg.amin(x, -2), lambda x: pg.logsumexp(x, 1),
    lambda x: pg.std(x, 1), lambda x: pg.var(x, 1), lambda x: pg.all(x, 1),
    lambda x: pg.any(x, 1), lambda x: pg.count_nonzero(x, 1), lambda x: pg.nansum(x, 1),
    lambda x: pg.aminmax(x, dim=1), lambda x: pg.sort(x, 1), lambda x: pg.argsort(x, 1),
    lambda x: pg.topk(x, 1, 1)])
def test_zero_dim_tensor_dim_out_of_range(device: str, call) -> None:
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-1, 0\], but got (1|-2)\)"):
        call(t(device, 3.5))


def test_zero_dim_tensor_dims_in_range(device: str) -> None:
    x = t(device, 3.5)
    assert pg.sum(x, 0).item() == 3.5 and pg.amax(x, -1).item() == 3.5
    assert pg.sort(x, -1).indices.item() == 0 and pg.argsort(x, 0).shape == ()
    assert pg.topk(x, 1, 0).values.item() == 3.5


# ------------------------------------------------------------------------------- var and std
def test_var_std_unbiased_positional(device: str) -> None:
    x = t(device, [[1., 2., 4.], [3., 5., 9.]])
    assert pg.var(x, True).item() == pytest.approx(8.0)
    assert pg.var(x, False).item() == pytest.approx(6.666666507720947)
    assert pg.std(x, True).item() == pytest.approx(2.8284270763397217)
    assert x.std(False).item() == pytest.approx(2.58198881149292)
    v, m = pg.var_mean(x, False)
    assert v.item() == pytest.approx(6.666666507720947) and m.item() == 4.0
    s, m = pg.std_mean(x, True)
    assert s.item() == pytest.approx(2.8284270763397217) and m.item() == 4.0 and s.shape == ()


def test_var_mean_std_mean_integer_messages(device: str) -> None:
    x = t(device, [1, 2])
    with pytest.raises(RuntimeError, match="^std_mean only support floating point and complex "
                       "dtypes$"):
        pg.std_mean(x)
    with pytest.raises(RuntimeError, match="^var_mean only support floating point and complex "
                       "dtypes$"):
        pg.var_mean(x, 0)
    with pytest.raises(RuntimeError, match="^std and var only support floating point"):
        pg.var(x)


# ------------------------------------------------------------------------------- mean, nanmean
def test_mean_dtype_messages(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Optional "
                       r"dtype must be either a floating point or complex dtype. Got: Long"):
        pg.mean(t(device, [1., 2.]), dtype=pg.int64)
    with pytest.raises(RuntimeError, match=r"Input dtype must be either a floating point or "
                       r"complex dtype. Got: Int"):
        pg.mean(t(device, [1, 2], pg.int32))
    assert pg.mean(t(device, [1, 2]), dtype=pg.float64).dtype is pg.float64


def test_nanmean_dtypes(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^nanmean\(\): expected input to have floating point "
                       r"or complex dtype but got Long$"):
        pg.nanmean(t(device, [1, 2]))
    with pytest.raises(RuntimeError, match=r"expected input to have floating point or complex "
                       r"dtype but got Int"):  # a float dtype= does not make it valid
        pg.nanmean(t(device, [1, 2], pg.int32), dtype=pg.float32)
    with pytest.raises(RuntimeError, match=r"^nanmean\(\): could not infer output dtype. Optional "
                       r"dtype must be either a floating point or complex dtype. Got: Long$"):
        pg.nanmean(t(device, [1., NAN]), dtype=pg.int64)
    out = pg.nanmean(t(device, [[1., NAN, 3.], [NAN, NAN, 2.]]), 1)
    assert out.dtype is pg.float32 and out.tolist() == [2.0, 2.0]


def test_nansum_complex_dtype(device: str) -> None:
    with pytest.raises(NotImplementedError, match="\"nansum_cpu\" not implemented for "
                       "'ComplexFloat'"):
        pg.nansum(t(device, [1., NAN]), dtype=pg.complex64)
    assert pg.nansum(t(device, [1, 2]), dtype=pg.float64).item() == 3.0


# ------------------------------------------------------------------------------- aminmax
def test_aminmax_checks(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^aminmax\(\): cannot compute aminmax over an empty "
                       r"dimension as the operation has no identity.$"):
        pg.aminmax(pg.zeros(2, 0, device=device))
    with pytest.raises(IndexError, match=r"^aminmax: Expected reduction dim 1 to have non-zero "
                       r"size.$"):
        pg.aminmax(pg.zeros(2, 0, device=device), dim=-1)
    with pytest.raises(TypeError, match=r"aminmax\(\): argument 'dim' must be int, not tuple"):
        pg.aminmax(pg.ones(2, 3, device=device), dim=(0, 1))
    r = pg.aminmax(pg.zeros(0, 3, device=device), dim=1)
    assert r.min.shape == (0,) and r.max.shape == (0,)
    r = pg.aminmax(t(device, [[1., 5.], [-2., 3.]]), dim=0, keepdim=True)
    assert r.min.tolist() == [[-2., 3.]] and r.max.tolist() == [[1., 5.]]


def test_complex_refused_by_ordering_ops(device: str) -> None:
    try:
        z = t(device, [1j, 2], pg.complex64)
    except pg.errors.DTypeError:
        pytest.skip("no complex dtypes on this backend")
    for fn, kernel in ((lambda: pg.amax(z), "max_values_cpu"),
                       (lambda: pg.amin(z, 0), "min_values_cpu"),
                       (lambda: pg.aminmax(z), "aminmax_cpu"),
                       (lambda: pg.median(z), "median_cpu"),
                       (lambda: pg.median(z, 0), "median_out"),
                       (lambda: pg.nanmedian(z), "median_cpu"),
                       (lambda: pg.kthvalue(z, 1), "kthvalue_cpu"),
                       (lambda: pg.mode(z), "mode_cpu"),
                       (lambda: pg.cummax(z, 0), "cummax_cpu"),
                       (lambda: pg.cummin(z, 0), "cummin_cpu"),
                       (lambda: pg.unique(z), "unique"),
                       (lambda: pg.unique_consecutive(z), "unique"),
                       (lambda: pg.unique(z, dim=0), "unique_dim")):
        with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for "
                           f"'ComplexFloat'$"):
            fn()
    with pytest.raises(RuntimeError, match="^ Sort does not support complex dtypes on CPU$"):
        pg.argsort(z)
    with pytest.raises(RuntimeError, match="^ topk does not support complex dtypes on CPU$"):
        pg.topk(z, 1)


# ------------------------------------------------------------------------------- quantile
def test_quantile_infinities_follow_lerp(device: str) -> None:
    q = t(device, [0., 0.25, 0.5, 0.75, 1.])
    x = t(device, [-INF, 1., INF])
    want = {"linear": [NAN, -INF, 1., NAN, NAN], "midpoint": [NAN, -INF, 1., NAN, NAN],
            "lower": [-INF, -INF, 1., 1., INF], "higher": [-INF, 1., 1., INF, INF],
            "nearest": [-INF, -INF, 1., INF, INF]}
    for interp, w in want.items():
        assert _same(pg.quantile(x, q, interpolation=interp).tolist(), w), interp
        assert _same(pg.nanquantile(x, q, interpolation=interp).tolist(), w), interp
    y = t(device, [-INF, -INF, INF, INF])
    assert _same(pg.quantile(y, q).tolist(), [NAN] * 5)
    assert _same(pg.quantile(y, q, interpolation="lower").tolist(), [-INF, -INF, -INF, INF, INF])


def test_quantile_values_and_grad(device: str) -> None:
    x = t(device, [[1., 7., 3., 2.], [NAN, 1., 4., 0.]])
    assert _same(pg.quantile(x, 0.4, 1).tolist(), [2.200000047683716, NAN])
    assert pg.nanquantile(x, 0.4, 1).tolist() == pytest.approx([2.200000047683716,
                                                              0.800000011920929])
    w = t(device, [[1., 5.], [3., 4.]]).requires_grad_()
    pg.quantile(w, 0.5, 1, interpolation="midpoint").sum().backward()
    assert w.grad.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_quantile_shapes(device: str) -> None:
    s = t(device, 3.)
    assert pg.quantile(s, 0.5, 0, True).shape == ()  # a 0-d input stays 0-d
    assert pg.quantile(s, 0.5, None, True).shape == ()
    assert pg.quantile(s, t(device, [0.5, 0.2]), 0, True).shape == (2,)
    x = t(device, [1., 2.])
    e = pg.quantile(x, t(device, []), keepdim=True)
    assert e.shape == (0, 1) and e.dtype is pg.float32
    assert pg.nanquantile(pg.ones(2, 3, device=device), t(device, []), 1, keepdim=True).shape \
        == (0, 2, 1)


def test_quantile_messages(device: str) -> None:
    x = t(device, [1., 2.])
    for fn in (pg.quantile, pg.nanquantile):  # (PyTorch says quantile() for both)
        with pytest.raises(RuntimeError, match=r"^quantile\(\) interpolation must be one of linear,"
                           r" lower, higher, midpoint or nearest, but got foo$"):
            fn(x, 0.5, interpolation="foo")
        with pytest.raises(RuntimeError, match=r"^quantile\(\) q must be in the range \[0, 1\] but "
                           r"got 1.5$"):
            fn(x, 1.5)
        with pytest.raises(RuntimeError, match=r"^quantile\(\) q must be a scalar or 1D tensor$"):
            fn(x, t(device, [[0.5]]))
        with pytest.raises(RuntimeError, match=r"^quantile\(\) input tensor must be non-empty$"):
            fn(pg.zeros(0, device=device), 0.5)
        with pytest.raises(RuntimeError, match=r"^quantile\(\) input tensor must be either float "
                           r"or double dtype$"):
            fn(t(device, [1, 2]), 0.5)


# ------------------------------------------------------------------------------- sorting family
def test_topk_and_kthvalue_checks(device: str) -> None:
    x = t(device, [3., 1., 2.])
    for k in (4, -1):
        with pytest.raises(RuntimeError, match=r"^selected index k out of range$"):
            pg.topk(x, k)
    with pytest.raises(RuntimeError, match=r"^selected index k out of range$"):
        pg.topk(t(device, 3.), 2)
    with pytest.raises(IndexError, match=r"^kthvalue\(\): Expected reduction dim 0 to have "
                       r"non-zero size.$"):
        pg.kthvalue(pg.zeros(0, device=device), 1)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 1 to have "
                       r"non-zero size."):
        pg.kthvalue(pg.zeros(2, 0, device=device), 1, 1)
    r = pg.kthvalue(pg.zeros(2, 0, device=device), 1, 0)
    assert r.values.shape == (0,) and r.indices.dtype is pg.int64
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for "
                       r"dimension 1"):
        pg.kthvalue(pg.zeros(2, 3, device=device), 4, 1)


def test_nanmedian_empty_dim_message(device: str) -> None:
    with pytest.raises(IndexError, match=r"^median\(\): Expected reduction dim 1 to have non-zero "
                       r"size.$"):
        pg.nanmedian(pg.zeros(2, 0, device=device), 1)
    with pytest.raises(IndexError, match=r"^median\(\): Expected reduction dim 0 to have non-zero "
                       r"size.$"):
        pg.median(pg.zeros(0, 2, device=device), 0)


def test_scans_of_zero_dim_tensor(device: str) -> None:
    x = t(device, 2.)
    for name in ("cummax", "cummin"):
        with pytest.raises(IndexError, match=f"^{name}\\(\\): Expected reduction dim -1 or 0 for "
                           f"scalar but got 1$"):
            getattr(pg, name)(x, 1)
        r = getattr(pg, name)(x, -1)
        assert r.values.item() == 2. and r.indices.item() == 0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-1, 0\], but got 1\)"):
        pg.cumsum(x, 1)


def test_unique_dim_of_zero_dim_tensor(device: str) -> None:
    for fn in (pg.unique, pg.unique_consecutive):
        for d in (0, -1, 1):
            with pytest.raises(IndexError, match=f"^Dimension specified as {d} but tensor has no "
                               f"dimensions$"):
                fn(t(device, 1), dim=d)
    v, inv, cnt = pg.unique(t(device, [[3, 1], [1, 2], [3, 1]]), dim=0, return_inverse=True,
                            return_counts=True)
    assert v.tolist() == [[1, 2], [3, 1]] and inv.tolist() == [1, 0, 1] and cnt.tolist() == [1, 2]
