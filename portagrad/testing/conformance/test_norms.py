"""The optional normalisation primitives: ``softmax_backward``, ``layer_norm``,
``layer_norm_backward``, ``batch_norm``, ``batch_norm_backward``, ``cross_entropy`` and
``cross_entropy_backward``, each called directly on twin views against the numpy backend.

The core uses them for float32/float64 operands of one dtype (``softmax_backward`` also for the
half dtypes ``softmax`` sees), with contiguous views; the inputs here sit at an offset in their
buffers and the outputs are filled with a sentinel first, so a primitive must read from the
view's offset and overwrite every element of an output, and nothing around it. Cases: odd row
lengths (longer and shorter than a work-group), every axis for ``softmax_backward``, affine and
not, outputs not wanted (``None``), ``eps``, running statistics updated in place with a fixed and
a cumulative momentum, NaN and infinite rows, zero-size shapes the contract allows, ignored rows
(an ``ignore_index`` outside and inside ``[0, C)``) and class weights.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg

from ._util import REF, SENTINEL, Pair, check, contiguous, run_both, sample, supported_dtypes

_FLOAT_DTYPES = [pg.float32, pg.float64]
_HALF_DTYPES = [pg.float16, pg.bfloat16]

# (rtol, atol) per dtype; the absolute part is scaled by the largest finite magnitude of the
# reference result (column sums grow with the number of rows). Sums run in a different order on
# a device (tree reductions), so float32 needs a few units in the last place more than exact ops.
_TOL = {"float64": (1e-10, 1e-11), "float32": (3e-5, 3e-6), "float16": (1e-2, 4e-3),
        "bfloat16": (5e-2, 3e-2)}


def _has(be: Any, *names: str) -> None:
    missing = [n for n in names if getattr(be, n, None) is None]
    if missing:
        pytest.skip(f"the backend has no {', '.join(missing)} (optional; the core composes it)")


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _in(be: Any, arr: Any, dtype: Any) -> Pair:
    """An input at an offset into its buffer (the sentinel before it must not be read)."""
    return contiguous(be, np.asarray(arr), dtype, offset=3)


def _out(be: Any, shape: tuple[int, ...], dtype: Any) -> Pair:
    """An output at an offset, the whole buffer holding a sentinel (every element of the view
    must be overwritten, none around it)."""
    return contiguous(be, np.full(shape, SENTINEL[dtype.name], dtype.numpy), dtype, offset=2)


def _close(be: Any, p: Pair | None, what: str, terms: float = 0.0) -> None:
    """``p`` (unless ``None``) holds the reference's values within the dtype's tolerance, the
    absolute part scaled by the largest of 1, the results and ``terms``: the size of the terms a
    result is the difference of (a normalisation's input gradient subtracts row or channel
    means of ``rstd * g * w`` from each other, so its rounding error follows their size, not the
    result's, which may be near zero)."""
    if p is None:
        return
    rtol, atol = _TOL[p.dtype.name]
    ref = np.asarray(REF.to_host(p.ref), np.float64)
    finite = np.abs(ref[np.isfinite(ref)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0, terms)
    check(be, p, exact=False, tol=(rtol, atol * scale), what=what)


def _grad_x_terms(g: np.ndarray, r: np.ndarray, w: Any) -> float:
    """The size of the terms of a normalisation's input gradient: ``max|rstd| * max|g * w|``."""
    if not g.size:
        return 0.0
    big = float(np.abs(np.asarray(g, np.float64)).max()) * float(np.abs(r).max())
    if w is not None:
        big *= float(np.abs(np.asarray(REF.to_host(w.ref), np.float64)).max())
    return big


def _opt(flag: bool, make: Any) -> Any:
    return make() if flag else None


# ----------------------------------------------------------------------- softmax_backward
def _softmax64(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        z = x - x.max(axis, keepdims=True)
        s = np.log(np.exp(z).sum(axis, keepdims=True))
        return z - s if log else np.exp(z - s)


_SOFTMAX_SHAPES = [((4, 6, 5), 0), ((4, 6, 5), 1), ((4, 6, 5), 2), ((3, 37), 1), ((37, 3), 0),
                   ((2, 300), 1), ((5, 1), 1), ((1, 7), 0)]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", _SOFTMAX_SHAPES,
                         ids=[f"{s}-axis{a}" for s, a in _SOFTMAX_SHAPES])
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES + _HALF_DTYPES, ids=str)
def test_softmax_backward(conformance_backend: Any, dtype: Any, shape: tuple, axis: int,
                          log: bool) -> None:
    """``out = y * (g - sum(g * y))`` (or ``g - exp(y) * sum(g)``) along any axis, with ``y`` a
    real (log-)softmax output."""
    be = conformance_backend
    _has(be, "softmax_backward")
    _need(be, dtype)
    x = sample(pg.float64, shape, "finite")
    y = _softmax64(x, axis, log).astype(dtype.numpy)
    g = sample(dtype, shape, "finite")
    gv, yv, out = _in(be, g, dtype), _in(be, y, dtype), _out(be, shape, dtype)
    run_both(be, "softmax_backward", gv, yv, axis, out, log)
    _close(be, out, f"softmax_backward {shape} axis {axis} log={log}")


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_softmax_backward_nonfinite(conformance_backend: Any, dtype: Any, log: bool) -> None:
    """A NaN or infinite gradient, or a NaN row of ``y`` (softmax of a row holding NaN), gives
    NaN in that row only."""
    be = conformance_backend
    _has(be, "softmax_backward")
    _need(be, dtype)
    shape = (5, 9)
    x = sample(pg.float64, shape, "finite")
    y = _softmax64(x, 1, log)
    y[1] = np.nan
    g = sample(pg.float64, shape, "finite")
    g[2, 4] = np.nan
    g[3, 0] = np.inf
    g[4, 8] = -np.inf
    gv, yv = _in(be, g, dtype), _in(be, y, dtype)
    out = _out(be, shape, dtype)
    run_both(be, "softmax_backward", gv, yv, 1, out, log)
    _close(be, out, f"softmax_backward with NaN/inf rows log={log}")
    got = be.to_host(out.dev)
    assert np.isnan(got[1]).all() and np.isfinite(got[0]).all(), got


@pytest.mark.parametrize("shape,axis", [((3, 0), 1), ((0, 5), 1), ((0, 5), 0), ((2, 0, 4), 2)])
def test_softmax_backward_empty(conformance_backend: Any, shape: tuple, axis: int) -> None:
    be = conformance_backend
    _has(be, "softmax_backward")
    z = np.zeros(shape)
    out = _out(be, shape, pg.float32)
    run_both(be, "softmax_backward", _in(be, z, pg.float32), _in(be, z, pg.float32), axis, out,
             False)
    _close(be, out, f"softmax_backward of {shape}")


# ----------------------------------------------------------------------------- layer_norm
_LN_SHAPES = [(5, 7), (3, 33), (2, 257), (1, 1), (6, 2)]


def _ln_stats(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Row mean and ``1 / sqrt(biased var + eps)`` in float64."""
    m = x.mean(1) if x.shape[1] else np.zeros(x.shape[0])
    v = ((x - m[:, None]) ** 2).mean(1) if x.shape[1] else np.zeros(x.shape[0])
    return m, 1 / np.sqrt(v + eps)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("shape", _LN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_layer_norm(conformance_backend: Any, dtype: Any, shape: tuple, affine: str) -> None:
    """``out = (x - mean) * rstd * weight + bias`` per row, with the row statistics; the rows
    are shifted far from zero (a one-pass variance loses them)."""
    be = conformance_backend
    _has(be, "layer_norm", "layer_norm_backward")
    _need(be, dtype)
    M, N = shape
    x = sample(dtype, shape, "finite") + np.arange(M)[:, None].astype(dtype.numpy) * 50
    w = _opt(affine != "none", lambda: _in(be, sample(dtype, (N,), "finite"), dtype))
    b = _opt(affine == "both", lambda: _in(be, sample(dtype, (N,), "finite"), dtype))
    for eps in (1e-5, 0.5):
        out, mean, rstd = _out(be, shape, dtype), _out(be, (M,), dtype), _out(be, (M,), dtype)
        run_both(be, "layer_norm", _in(be, x, dtype), w, b, eps, out, mean, rstd)
        for p, what in ((out, "out"), (mean, "mean"), (rstd, "rstd")):
            _close(be, p, f"layer_norm {what} {shape} eps={eps} {affine}")


@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_layer_norm_without_stats_and_nonfinite(conformance_backend: Any, dtype: Any) -> None:
    """``mean``/``rstd`` may be ``None`` (no gradient wanted); a row holding NaN or inf gives NaN
    in that row and no other."""
    be = conformance_backend
    _has(be, "layer_norm", "layer_norm_backward")
    _need(be, dtype)
    shape = (4, 11)
    x = sample(dtype, shape, "finite")
    x[1, 3] = np.nan
    x[2, 5] = np.inf
    w, b = _in(be, sample(dtype, (11,), "finite"), dtype), _in(be, sample(dtype, (11,)), dtype)
    out = _out(be, shape, dtype)
    run_both(be, "layer_norm", _in(be, x, dtype), w, b, 1e-5, out, None, None)
    _close(be, out, "layer_norm with NaN/inf rows, no statistics")
    got = be.to_host(out.dev)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all() and np.isfinite(got[0]).any()


@pytest.mark.parametrize("shape", [(3, 0), (0, 6), (0, 0)], ids=str)
def test_layer_norm_empty(conformance_backend: Any, shape: tuple) -> None:
    """N = 0: ``mean`` 0 and ``rstd`` ``1 / sqrt(eps)``; M = 0: nothing to do."""
    be = conformance_backend
    _has(be, "layer_norm", "layer_norm_backward")
    dt = pg.float32
    M, N = shape
    out, mean, rstd = _out(be, shape, dt), _out(be, (M,), dt), _out(be, (M,), dt)
    w, b = _in(be, np.ones(N), dt), _in(be, np.zeros(N), dt)
    run_both(be, "layer_norm", _in(be, np.zeros(shape), dt), w, b, 0.25, out, mean, rstd)
    for p, what in ((out, "out"), (mean, "mean"), (rstd, "rstd")):
        _close(be, p, f"layer_norm {what} of {shape}")
    if M:
        np.testing.assert_allclose(be.to_host(rstd.dev), np.full(M, 2.0, np.float32))


_WANT = ["all", "grad_x", "weight_bias"]


@pytest.mark.parametrize("want", _WANT)
@pytest.mark.parametrize("affine", [False, True], ids=["no_weight", "weight"])
@pytest.mark.parametrize("shape", _LN_SHAPES + [(0, 5), (4, 0)], ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_layer_norm_backward(conformance_backend: Any, dtype: Any, shape: tuple, affine: bool,
                             want: str) -> None:
    """``grad_x``, ``grad_weight`` (column sums of ``g * xhat``), ``grad_bias`` (column sums of
    ``g``, zeros when M = 0); any may be ``None``."""
    be = conformance_backend
    _has(be, "layer_norm", "layer_norm_backward")
    _need(be, dtype)
    M, N = shape
    x = sample(dtype, shape, "finite").astype(np.float64)
    mu, r = _ln_stats(x, 1e-5)
    g = sample(dtype, shape, "finite")
    w = _opt(affine, lambda: _in(be, sample(dtype, (N,), "finite"), dtype))
    gx = _opt(want != "weight_bias", lambda: _out(be, shape, dtype))
    gw = _opt(want != "grad_x", lambda: _out(be, (N,), dtype))
    gb = _opt(want != "grad_x", lambda: _out(be, (N,), dtype))
    run_both(be, "layer_norm_backward", _in(be, g, dtype), _in(be, x, dtype), w,
             _in(be, mu, dtype), _in(be, r, dtype), gx, gw, gb)
    terms = _grad_x_terms(g, r, w) if r.size else 0.0
    for p, what in ((gx, "grad_x"), (gw, "grad_weight"), (gb, "grad_bias")):
        _close(be, p, f"layer_norm_backward {what} {shape} weight={affine}",
               terms if p is gx else 0.0)


# ----------------------------------------------------------------------------- batch_norm
_BN_SHAPES = [(4, 3, 5), (2, 5, 1), (3, 2, 17), (1, 3, 2), (16, 2, 9), (2, 0, 3)]


def _bn_inputs(be: Any, dtype: Any, shape: tuple, affine: bool) -> tuple[Any, Any, np.ndarray]:
    C = shape[1]
    w = _opt(affine, lambda: _in(be, sample(dtype, (C,), "finite"), dtype))
    b = _opt(affine, lambda: _in(be, sample(dtype, (C,), "finite"), dtype))
    # channels far from zero and apart: the per-channel mean matters
    x = sample(dtype, shape, "finite") + (np.arange(C) * 20.0 - 10).reshape(1, C, 1)
    return w, b, x.astype(dtype.numpy)


@pytest.mark.parametrize("affine", [False, True], ids=["no_affine", "affine"])
@pytest.mark.parametrize("shape", _BN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_batch_norm(conformance_backend: Any, dtype: Any, shape: tuple, affine: bool) -> None:
    """Batch statistics per channel over (N, L), and the running statistics updated in place
    over three steps: a fixed momentum, then the cumulative factors 1, 1/2, 1/3 (what the core
    passes for ``momentum=None``)."""
    be = conformance_backend
    _has(be, "batch_norm", "batch_norm_backward")
    _need(be, dtype)
    C = shape[1]
    w, b, _ = _bn_inputs(be, dtype, shape, affine)
    for schedule in ((0.1, 0.1, 0.1), (1.0, 1 / 2, 1 / 3)):
        rm = _in(be, sample(dtype, (C,), "finite"), dtype)
        rv = _in(be, sample(dtype, (C,), "positive"), dtype)
        for step, momentum in enumerate(schedule):
            _, _, x = _bn_inputs(be, dtype, shape, False)
            eps = 1e-5 if step != 1 else 0.5
            out, mean, rstd = _out(be, shape, dtype), _out(be, (C,), dtype), _out(be, (C,), dtype)
            run_both(be, "batch_norm", _in(be, x, dtype), w, b, rm, rv, momentum, eps, out,
                     mean, rstd)
            for p, what in ((out, "out"), (mean, "mean"), (rstd, "rstd"),
                            (rm, "running_mean"), (rv, "running_var")):
                _close(be, p, f"batch_norm {what} {shape} step {step} momentum {momentum:.3g} "
                              f"eps {eps} affine={affine}")


@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_batch_norm_without_running_stats_and_nonfinite(conformance_backend: Any,
                                                        dtype: Any) -> None:
    """No running statistics (``None``; as with ``track_running_stats=False``); a channel
    holding NaN or inf is NaN, the others are not touched by it."""
    be = conformance_backend
    _has(be, "batch_norm", "batch_norm_backward")
    _need(be, dtype)
    shape = (3, 4, 6)
    w, b, x = _bn_inputs(be, dtype, shape, True)
    x[1, 1, 2] = np.nan
    x[2, 2, 0] = -np.inf
    out, mean, rstd = _out(be, shape, dtype), _out(be, (4,), dtype), _out(be, (4,), dtype)
    run_both(be, "batch_norm", _in(be, x, dtype), w, b, None, None, 0.1, 1e-5, out, mean, rstd)
    for p, what in ((out, "out"), (mean, "mean"), (rstd, "rstd")):
        _close(be, p, f"batch_norm {what} with NaN/inf channels")
    got = be.to_host(out.dev)
    assert np.isnan(got[:, 1]).all() and np.isfinite(got[:, 0]).all() and np.isfinite(
        got[:, 3]).all()


@pytest.mark.parametrize("want", _WANT)
@pytest.mark.parametrize("affine", [False, True], ids=["no_weight", "weight"])
@pytest.mark.parametrize("shape", _BN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_batch_norm_backward(conformance_backend: Any, dtype: Any, shape: tuple, affine: bool,
                             want: str) -> None:
    be = conformance_backend
    _has(be, "batch_norm", "batch_norm_backward")
    _need(be, dtype)
    C = shape[1]
    w, _, x = _bn_inputs(be, dtype, shape, affine)
    xd = x.astype(np.float64)
    mu = xd.mean((0, 2)) if xd.size else np.zeros(C)
    var = ((xd - mu[None, :, None]) ** 2).mean((0, 2)) if xd.size else np.zeros(C)
    r = 1 / np.sqrt(var + 1e-5)
    g = sample(dtype, shape, "finite")
    gx = _opt(want != "weight_bias", lambda: _out(be, shape, dtype))
    gw = _opt(want != "grad_x", lambda: _out(be, (C,), dtype))
    gb = _opt(want != "grad_x", lambda: _out(be, (C,), dtype))
    run_both(be, "batch_norm_backward", _in(be, g, dtype), _in(be, x, dtype), w,
             _in(be, mu, dtype), _in(be, r, dtype), gx, gw, gb)
    terms = _grad_x_terms(g, r, w) if r.size else 0.0
    for p, what in ((gx, "grad_x"), (gw, "grad_weight"), (gb, "grad_bias")):
        _close(be, p, f"batch_norm_backward {what} {shape} weight={affine}",
               terms if p is gx else 0.0)


# -------------------------------------------------------------------------- cross_entropy
_CE_SHAPES = [(6, 5), (3, 1), (4, 37), (2, 300), (9, 2)]


def _targets(n: int, c: int, ignore_index: int) -> np.ndarray:
    """Class indices in ``[0, c)`` with every third row ``ignore_index``."""
    t = (np.arange(n) * 7 + 3) % c
    t[::3] = ignore_index
    return t.astype(np.int64)


@pytest.mark.parametrize("ignore_index", [-100, 0], ids=["ignore-100", "ignore_class0"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", _CE_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_cross_entropy(conformance_backend: Any, dtype: Any, shape: tuple, weighted: bool,
                       ignore_index: int) -> None:
    """``lse``, ``row_weight`` (``weight[target]``, 0 when ignored) and ``loss`` per row; an
    ``ignore_index`` inside ``[0, C)`` ignores the rows of that class."""
    be = conformance_backend
    _has(be, "cross_entropy", "cross_entropy_backward")
    _need(be, dtype)
    N, C = shape
    x = sample(dtype, shape, "finite")
    x[0] *= 200  # large logits: finite only with the maximum subtracted
    t = _targets(N, C, ignore_index)
    w = _opt(weighted, lambda: _in(be, sample(dtype, (C,), "positive"), dtype))
    loss, lse, rw = _out(be, (N,), dtype), _out(be, (N,), dtype), _out(be, (N,), dtype)
    run_both(be, "cross_entropy", _in(be, x, dtype), _in(be, t, pg.int64), w, ignore_index,
             loss, lse, rw)
    for p, what in ((loss, "loss"), (lse, "lse"), (rw, "row_weight")):
        _close(be, p, f"cross_entropy {what} {shape} weighted={weighted} ignore={ignore_index}")
    ignored = t == ignore_index
    if ignored.any():
        assert (be.to_host(rw.dev)[ignored] == 0).all() and (
            be.to_host(loss.dev)[ignored] == 0).all(), "an ignored row has a weight or a loss"


@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_cross_entropy_nonfinite_and_empty(conformance_backend: Any, dtype: Any) -> None:
    """A NaN logit makes its row's loss NaN; a ``+inf`` logit makes ``lse`` NaN (inf - inf) as
    in PyTorch; N = 0 writes nothing."""
    be = conformance_backend
    _has(be, "cross_entropy", "cross_entropy_backward")
    _need(be, dtype)
    x = sample(dtype, (4, 6), "finite")
    x[1, 2] = np.nan
    x[2, 0] = np.inf
    x[3, 5] = -np.inf
    t = np.array([1, 3, 4, 2], np.int64)
    loss, lse, rw = _out(be, (4,), dtype), _out(be, (4,), dtype), _out(be, (4,), dtype)
    run_both(be, "cross_entropy", _in(be, x, dtype), _in(be, t, pg.int64), None, -100, loss,
             lse, rw)
    for p, what in ((loss, "loss"), (lse, "lse"), (rw, "row_weight")):
        _close(be, p, f"cross_entropy {what} with NaN/inf logits")
    assert np.isnan(be.to_host(loss.dev)[1]) and np.isfinite(be.to_host(loss.dev)[3])
    e = [_out(be, (0,), dtype) for _ in range(3)]
    run_both(be, "cross_entropy", _in(be, np.zeros((0, 6)), dtype),
             _in(be, np.zeros(0), pg.int64), None, -100, *e)
    for p in e:
        _close(be, p, "cross_entropy of 0 rows")


@pytest.mark.parametrize("ignore_index", [-100, 0], ids=["ignore-100", "ignore_class0"])
@pytest.mark.parametrize("shape", _CE_SHAPES + [(0, 4)], ids=str)
@pytest.mark.parametrize("dtype", _FLOAT_DTYPES, ids=str)
def test_cross_entropy_backward(conformance_backend: Any, dtype: Any, shape: tuple,
                                ignore_index: int) -> None:
    """``grad_x = coef * (exp(x - lse) - onehot(target))`` from the saved ``lse``; the core
    gives ignored rows ``coef`` 0, and a target outside ``[0, C)`` has no one-hot term."""
    be = conformance_backend
    _has(be, "cross_entropy", "cross_entropy_backward")
    _need(be, dtype)
    N, C = shape
    x = sample(dtype, shape, "finite").astype(np.float64)
    x[:1] *= 100
    lse = (np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)) if N else np.zeros(0)
    t = _targets(N, C, ignore_index)
    coef = sample(dtype, (N,), "nonzero").astype(np.float64)
    if ignore_index >= 0:
        coef[t == ignore_index] = 0
    gx = _out(be, shape, dtype)
    run_both(be, "cross_entropy_backward", _in(be, x, dtype), _in(be, t, pg.int64),
             _in(be, lse, dtype), _in(be, coef, dtype), gx)
    _close(be, gx, f"cross_entropy_backward {shape} ignore={ignore_index}")
