"""The optional normalisation primitives (softmax, layer/batch norm, cross-entropy and their
backward passes) against the composed path the core takes without them, on every backend.

The composed path is forced by hiding the primitives from the backend class (``has_prims`` then
answers False); the fast path is checked to be taken by counting the backend's calls.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.nn import functional as F

NORM_PRIMS = ("softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "batch_norm",
              "batch_norm_backward", "cross_entropy", "cross_entropy_backward")
DTYPES = [pg.float32, pg.float64]



_PRIMS = ("softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "batch_norm",
          "batch_norm_backward", "cross_entropy", "cross_entropy_backward")


def _need_prims(device: str) -> None:
    """Skip (saying which) when the device's backend lacks the optional primitives."""
    be = pg.empty(1, device=device)._storage.backend
    missing = [n for n in _PRIMS if getattr(be, n, None) is None]
    if missing:
        pytest.skip(f"the {pg.device(device).type} backend has no {', '.join(missing)} "
                    f"(optional primitives)")

def _backend_cls(device: str) -> type:
    return type(pg.zeros(1, device=device)._storage.backend)


@contextlib.contextmanager
def composed(device: str) -> Iterator[None]:
    """Hide the normalisation primitives of ``device``'s backend: the core composes."""
    with pytest.MonkeyPatch.context() as mp:
        for name in NORM_PRIMS:
            mp.setattr(_backend_cls(device), name, None, raising=False)
        yield


@contextlib.contextmanager
def counting(device: str) -> Iterator[dict[str, int]]:
    """Count the calls of each normalisation primitive of ``device``'s backend."""
    calls = dict.fromkeys(NORM_PRIMS, 0)
    cls = _backend_cls(device)
    with pytest.MonkeyPatch.context() as mp:
        for name in NORM_PRIMS:
            orig = getattr(cls, name)

            def wrapped(self: Any, *a: Any, _o: Any = orig, _n: str = name) -> Any:
                calls[_n] += 1
                return _o(self, *a)

            mp.setattr(cls, name, wrapped)
        yield calls


def _tol(dtype: Any) -> dict[str, float]:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype is pg.float32 else {"rtol": 1e-10, "atol": 1e-12}


def _run(fn: Callable[..., Any], arrays: list[np.ndarray | None], device: str, dtype: Any,
         grad: np.ndarray | None = None) -> list[np.ndarray | None]:
    """``fn`` of tensors made from ``arrays`` (None stays None): the output and the gradients
    of ``sum(out * grad)`` (``grad`` random if not given) w.r.t. every input, as numpy."""
    ts = [None if a is None else pg.tensor(a, dtype=dtype, device=device, requires_grad=True)
          for a in arrays]
    out = fn(*ts)
    g = np.random.default_rng(1).normal(size=tuple(out.shape)) if grad is None else grad
    (out * pg.tensor(g, dtype=dtype, device=device)).sum().backward()
    return [out.detach().cpu().numpy()] + [None if t is None or t.grad is None
                                           else t.grad.cpu().numpy() for t in ts]


def _compare(fn: Callable[..., Any], arrays: list[np.ndarray | None], device: str,
             dtype: Any) -> list[np.ndarray | None]:
    fast = _run(fn, arrays, device, dtype)
    with composed(device):
        slow = _run(fn, arrays, device, dtype)
    for i, (a, b) in enumerate(zip(fast, slow)):
        assert (a is None) == (b is None), i
        if a is not None:
            assert a.shape == b.shape, i
            np.testing.assert_allclose(a, b, equal_nan=True, err_msg=f"result {i}", **_tol(dtype))
    return fast


RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [((3, 257), 1), ((4, 5, 3), 1), ((7, 3), 0), ((2, 3, 5), 0),
                                       ((1, 1), 1), ((5,), 0)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_composed(device: str, dtype: Any, shape: tuple, dim: int,
                                  log: bool) -> None:
    fn = (lambda x: F.log_softmax(x, dim)) if log else (lambda x: F.softmax(x, dim))
    x = RNG.normal(size=shape) * 3
    out = _compare(fn, [x], device, dtype)[0]
    assert out is not None
    z = x - x.max(dim, keepdims=True)
    want = z - np.log(np.exp(z).sum(dim, keepdims=True))
    np.testing.assert_allclose(out, want if log else np.exp(want), **_tol(dtype))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_nonfinite_rows(device: str, log: bool) -> None:
    """A row with NaN or +inf gives NaN, one with only -inf too; large finite values stay finite."""
    inf, nan = float("inf"), float("nan")
    x = np.array([[1.0, nan, 2.0], [inf, 0.0, 1.0], [-inf, -inf, -inf], [1e30, -1e30, 0.0],
                  [-inf, 0.0, 1.0]])
    fn = (lambda t: F.log_softmax(t, 1)) if log else (lambda t: F.softmax(t, 1))
    out = _compare(fn, [x], device, pg.float32)[0]
    assert out is not None
    assert np.isnan(out[:3]).all()
    assert np.isfinite(out[3]).all()
    want = np.array([-np.inf, np.log(1 / (1 + np.e)), np.log(np.e / (1 + np.e))])
    np.testing.assert_allclose(out[4], want if log else np.exp(want), rtol=1e-6)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_nonfinite_long_rows(device: str, log: bool) -> None:
    """Rows long enough for vectorised kernels: non-finite values inside and in the tail."""
    x = RNG.normal(size=(5, 19))
    x[0, 9], x[1, 17], x[2] = np.nan, np.inf, -np.inf
    x[3, 18] = -np.inf
    fn = (lambda t: F.log_softmax(t, 1)) if log else (lambda t: F.softmax(t, 1))
    out = _compare(fn, [x], device, pg.float32)[0]
    assert out is not None and np.isnan(out[:3]).all() and not np.isnan(out[3:]).any()
    t = pg.tensor([1, 2, 3, 4, 0], device=device)
    loss = F.cross_entropy(pg.tensor(x, dtype=pg.float32, device=device), t, reduction="none")
    assert np.isnan(loss.cpu().numpy()[:3]).all() and np.isfinite(loss.cpu().numpy()[3:]).all()


def test_softmax_empty(device: str) -> None:
    for shape, dim in (((0, 3), 1), ((3, 0), 1), ((2, 0, 4), 2)):
        x = pg.zeros(shape, device=device, requires_grad=True)
        y = F.softmax(x, dim)
        assert tuple(y.shape) == shape
        y.sum().backward()
        assert x.grad is not None and tuple(x.grad.shape) == shape


# ---------------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,ns,affine,eps", [
    ((5, 33), (33,), "wb", 1e-5), ((2, 3, 7), (3, 7), "wb", 1e-1), ((4, 9), (9,), "", 1e-5),
    ((3, 6), (6,), "w", 1e-3), ((3, 6), (6,), "b", 1e-5), ((6,), (6,), "wb", 1e-5),
    ((2, 1), (1,), "wb", 1e-5)])
def test_layer_norm_matches_composed(device: str, dtype: Any, shape: tuple, ns: tuple,
                                     affine: str, eps: float) -> None:
    x = RNG.normal(size=shape) * 2 + 1
    w = RNG.normal(size=ns) if "w" in affine else None
    b = RNG.normal(size=ns) if "b" in affine else None
    out = _compare(lambda x, w, b: F.layer_norm(x, ns, w, b, eps), [x, w, b], device, dtype)[0]
    axes = tuple(range(len(shape) - len(ns), len(shape)))
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    want = want * (1 if w is None else w) + (0 if b is None else b)
    np.testing.assert_allclose(out, want, **_tol(dtype))


def test_layer_norm_nonfinite_and_empty(device: str) -> None:
    x = np.array([[1.0, float("nan"), 2.0], [float("inf"), 0.0, 1.0], [1.0, 2.0, 4.0]])
    out = _compare(lambda t: F.layer_norm(t, (3,)), [x], device, pg.float32)[0]
    assert out is not None and np.isnan(out[:2]).all() and np.isfinite(out[2]).all()
    e = pg.zeros((0, 4), device=device, requires_grad=True)
    w = pg.ones(4, device=device, requires_grad=True)
    y = F.layer_norm(e, (4,), w, None)
    assert tuple(y.shape) == (0, 4)
    y.sum().backward()
    assert w.grad is not None and w.grad.tolist() == [0.0] * 4


# ---------------------------------------------------------------------------- batch norm
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,affine,running", [
    ((4, 3, 5), True, True), ((8, 6), True, True), ((2, 3, 4, 5), False, True),
    ((3, 5, 2, 3), True, False), ((2, 1, 1), True, True)])
def test_batch_norm_matches_composed(device: str, dtype: Any, shape: tuple, affine: bool,
                                     running: bool) -> None:
    c = shape[1]
    x = RNG.normal(size=shape) * 2 + 1
    w, b = (RNG.normal(size=c), RNG.normal(size=c)) if affine else (None, None)
    stats = []

    def fn(x: pg.Tensor, w: pg.Tensor | None, b: pg.Tensor | None) -> pg.Tensor:
        rm = rv = None
        if running:
            rm = pg.tensor(np.linspace(-1, 1, c), dtype=dtype, device=device)
            rv = pg.tensor(np.linspace(0.5, 2, c), dtype=dtype, device=device)
        y = F.batch_norm(x, rm, rv, w, b, True, 0.3, 1e-3)
        stats.append(None if rm is None else (rm.cpu().numpy(), rv.cpu().numpy()))
        return y

    out = _compare(fn, [x, w, b], device, dtype)[0]
    axes = (0,) + tuple(range(2, len(shape)))
    bs = (1, c) + (1,) * (len(shape) - 2)
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-3)
    if affine:
        want = want * w.reshape(bs) + b.reshape(bs)
    np.testing.assert_allclose(out, want, **_tol(dtype))
    if running:
        n = x.size // c
        (fm, fv), (sm, sv) = stats
        np.testing.assert_allclose(fm, 0.7 * np.linspace(-1, 1, c) + 0.3 * x.mean(axes), **_tol(dtype))
        np.testing.assert_allclose(fv, 0.7 * np.linspace(0.5, 2, c) + 0.3 * x.var(axes) * n / (n - 1),
                                   **_tol(dtype))
        np.testing.assert_allclose(fm, sm, **_tol(dtype))
        np.testing.assert_allclose(fv, sv, **_tol(dtype))


def test_batch_norm_module_momentum_none(device: str) -> None:
    """Cumulative running statistics (momentum=None) over two steps, fast and composed alike."""
    xs = [RNG.normal(size=(4, 3, 2, 2)) for _ in range(2)]

    def run() -> tuple[np.ndarray, np.ndarray, int]:
        m = pg.nn.BatchNorm2d(3, momentum=None).to(device)
        for a in xs:
            m(pg.tensor(a, dtype=pg.float32, device=device)).sum().backward()
        return m.running_mean.cpu().numpy(), m.running_var.cpu().numpy(), int(m.num_batches_tracked)

    fm, fv, nb = run()
    with composed(device):
        sm, sv, _ = run()
    assert nb == 2
    np.testing.assert_allclose(fm, np.mean([a.mean((0, 2, 3)) for a in xs], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fv, np.mean([a.var((0, 2, 3), ddof=1) for a in xs], 0), rtol=1e-5)
    np.testing.assert_allclose(fm, sm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fv, sv, rtol=1e-5)


def test_batch_norm_running_stats_version_bump(device: str) -> None:
    rm, rv = pg.zeros(2, device=device), pg.ones(2, device=device)
    v0 = (rm._version, rv._version)
    F.batch_norm(pg.randn(3, 2, device=device), rm, rv, training=True)
    assert rm._version > v0[0] and rv._version > v0[1]


# ------------------------------------------------------------------------- cross entropy
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_matches_composed(device: str, dtype: Any, reduction: str,
                                        weighted: bool) -> None:
    n, c = 7, 33
    x = RNG.normal(size=(n, c)) * 3
    t = np.array([0, 32, 5, -100, 7, 7, 1])
    wt = RNG.random(c) + 0.5 if weighted else None

    def fn(x: pg.Tensor) -> pg.Tensor:
        w = None if wt is None else pg.tensor(wt, dtype=dtype, device=device)
        return F.cross_entropy(x, pg.tensor(t, device=device), weight=w, reduction=reduction)

    out = _compare(fn, [x], device, dtype)[0]
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    valid = t != -100
    tw = np.where(valid, 1.0 if wt is None else wt[np.where(valid, t, 0)], 0.0)
    rows = tw * (lse - x[np.arange(n), np.where(valid, t, 0)])
    want = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / tw.sum()}[reduction]
    np.testing.assert_allclose(out, want, **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(64, 10), (5, 1), (1, 300)])
def test_cross_entropy_plain_rows_as_weighted_ones(device: str, dtype: Any, shape: tuple) -> None:
    """No class weights and no ignored row (a backend may skip its selects then) give the bits
    of the general path: class weights of one, and an ignored row elsewhere in the batch."""
    n, c = shape
    x = RNG.normal(size=(n + 1, c)) * 4
    t = RNG.integers(0, c, n + 1)
    t[-1] = -100

    def run(rows: slice, weight: bool) -> tuple[np.ndarray, ...]:
        xt = pg.tensor(x[rows], dtype=dtype, device=device, requires_grad=True)
        w = pg.ones(c, dtype=dtype, device=device) if weight else None
        loss = F.cross_entropy(xt, pg.tensor(t[rows], device=device), weight=w, reduction="none")
        loss.backward(pg.ones_like(loss))
        assert xt.grad is not None
        return loss.detach().cpu().numpy(), xt.grad.cpu().numpy()

    plain = run(slice(0, n), False)
    for got in (run(slice(0, n), True), run(slice(0, n + 1), False)):
        got = (got[0][:n], got[1][:n])
        for a, b in zip(plain, got):
            assert a.tobytes() == b.tobytes()


def test_cross_entropy_all_ignored_is_nan(device: str) -> None:
    x = pg.randn(3, 4, device=device, requires_grad=True)
    t = pg.tensor([-100, -100, -100], device=device)
    loss = F.cross_entropy(x, t)
    assert np.isnan(loss.item())
    s = F.cross_entropy(x, t, reduction="sum")
    s.backward()
    assert s.item() == 0.0 and x.grad is not None and x.grad.abs().sum().item() == 0.0


# --------------------------------------------------------------------- the fast path is taken
def test_fast_paths_are_taken(device: str) -> None:
    _need_prims(device)
    x = pg.randn(4, 3, 5, device=device, requires_grad=True)
    w = pg.randn(5, device=device, requires_grad=True)
    bw = pg.randn(3, device=device, requires_grad=True)
    logits = pg.randn(4, 6, device=device, requires_grad=True)
    t = pg.tensor([0, 5, 2, 1], device=device)
    with counting(device) as calls:
        F.softmax(x, 1).sum().backward()
        F.log_softmax(x, 2).sum().backward()
        F.layer_norm(x, (5,), w, w).sum().backward()
        F.batch_norm(x, None, None, bw, bw, True).sum().backward()
        F.cross_entropy(logits, t).backward()
        F.cross_entropy(logits, t, weight=pg.ones(6, device=device)).backward()
    assert calls == {"softmax": 2, "softmax_backward": 2, "layer_norm": 1,
                     "layer_norm_backward": 1, "batch_norm": 1, "batch_norm_backward": 1,
                     "cross_entropy": 2, "cross_entropy_backward": 2}


def test_composed_without_primitives_and_for_other_dtypes(device: str) -> None:
    """A backend without the primitives, or operands they do not take (mixed dtypes), compose: no
    primitive call, the same results. (A 16-bit batch norm runs in float32 and rounds once, as
    PyTorch's kernel, so it does use the float32 primitive.)"""
    _need_prims(device)
    x = pg.randn(4, 3, device=device, requires_grad=True)
    with counting(device) as calls:
        F.layer_norm(x, (3,), pg.ones(3, dtype=pg.float64, device=device)).sum().backward()
        F.batch_norm(x, None, None, pg.ones(3, dtype=pg.float64, device=device),
                     training=True).sum().backward()
    assert sum(calls.values()) == 0
    with composed(device):
        y = F.layer_norm(x, (3,))
    np.testing.assert_allclose(y.detach().cpu().numpy(),
                               F.layer_norm(x, (3,)).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- gradcheck, create_graph
def test_gradcheck_fast_paths(device: str) -> None:
    def d(*shape: int) -> pg.Tensor:
        return pg.randn(*shape, dtype=pg.float64, device=device, requires_grad=True)

    x, w, b = d(3, 4), d(4), d(4)
    assert pg.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (x, w, b))
    xb, wb = d(4, 3, 2), d(3)
    assert pg.autograd.gradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, True), (xb, wb))
    assert pg.autograd.gradcheck(lambda x: F.log_softmax(x, 0), (d(3, 4),))
    t = pg.tensor([1, 0, -100], device=device)
    wc = pg.rand(4, dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda x: F.cross_entropy(x, t, weight=wc), (d(3, 4),))


def test_create_graph_composes(device: str) -> None:
    """Under create_graph the backward is built from public ops (twice differentiable) and
    agrees with the composed path; no backward primitive is called for that first gradient."""
    _need_prims(device)
    def second(fn: Callable[[pg.Tensor], pg.Tensor]) -> tuple[np.ndarray, dict[str, int]]:
        x = pg.tensor(np.linspace(-1, 2, 12).reshape(3, 4), dtype=pg.float64, device=device,
                      requires_grad=True)
        y = (fn(x) * pg.arange(12, device=device).reshape(3, 4)).sum()
        with counting(device) as calls:
            (g,) = pg.autograd.grad(y, x, create_graph=True)
        (gg,) = pg.autograd.grad((g * g).sum(), x)
        return gg.cpu().numpy(), calls

    t = pg.tensor([3, 0, 1], device=device)
    fns = [lambda x: F.layer_norm(x, (4,)), lambda x: F.batch_norm(x, None, None, training=True),
           lambda x: F.softmax(x, 1), lambda x: F.cross_entropy(x, t, reduction="none")[:, None] * x]
    for fn in fns:
        fast, calls = second(fn)
        assert sum(calls.values()) == 0, calls
        with composed(device):
            slow, _ = second(fn)
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-10)


# ------------------------------------------------------------------- the primitives directly
def test_primitives_with_absent_outputs(device: str) -> None:
    """Outputs given as None are skipped; the others are written (layer norm without statistics,
    backward with only some gradients)."""
    _need_prims(device)
    from portagrad import _raw

    x = pg.tensor(RNG.normal(size=(5, 3)), dtype=pg.float32, device=device)
    g = pg.tensor(RNG.normal(size=(5, 3)), dtype=pg.float32, device=device)
    out = pg.empty(5, 3, device=device)
    _raw.layer_norm(x, None, None, 1e-5, out, None, None)
    xn = x.numpy() if device == "cpu" else x.cpu().numpy()
    xhat = (xn - xn.mean(1, keepdims=True)) / np.sqrt(xn.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.cpu().numpy(), xhat, rtol=1e-5, atol=1e-6)
    mean, rstd = pg.empty(5, device=device), pg.empty(5, device=device)
    _raw.layer_norm(x, None, None, 1e-5, out, mean, rstd)
    gb = pg.full((3,), 7.0, device=device)
    _raw.layer_norm_backward(g, x, None, mean, rstd, None, None, gb)
    np.testing.assert_allclose(gb.cpu().numpy(), g.cpu().numpy().sum(0), rtol=1e-5)
    gw = pg.empty(3, device=device)
    _raw.layer_norm_backward(g, x, None, mean, rstd, None, gw, None)
    np.testing.assert_allclose(gw.cpu().numpy(), (g.cpu().numpy() * xhat).sum(0), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("dtype", [pg.float16, pg.bfloat16], ids=str)
def test_softmax_low_precision(device: str, dtype: Any) -> None:
    x = RNG.normal(size=(3, 50)).astype(np.float32)
    try:
        xt = pg.tensor(x, dtype=dtype, device=device)
    except pg.errors.DTypeError as exc:  # a device without cl_khr_fp16
        pytest.skip(str(exc))
    y = F.softmax(xt, 1)
    xr = pg.tensor(x, dtype=dtype).float().numpy()
    want = np.exp(xr - xr.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    assert y.dtype is dtype
    np.testing.assert_allclose(y.float().cpu().numpy(), want, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("params", ["same", "float32", "none", "strided"])
@pytest.mark.parametrize("dtype", [pg.float16, pg.bfloat16], ids=str)
def test_layer_norm_16bit_inference_equals_recorded(device: str, dtype: Any, params: str) -> None:
    """16-bit layer norm when nothing records (the backend's 16-bit rows where it takes them,
    else raw float32 copies around the float32 node) gives the bits of the recorded path
    (public float32 conversions), with 16-bit, float32 or no parameters and a strided input,
    and keeps PyTorch's errors."""
    x = RNG.normal(size=(3, 5, 40)).astype(np.float32)
    try:
        xt = pg.tensor(x, dtype=dtype, device=device)
    except pg.errors.DTypeError as exc:  # a device without cl_khr_fp16
        pytest.skip(str(exc))
    if params == "strided":
        xt = pg.tensor(x.transpose(1, 0, 2), dtype=dtype, device=device).transpose(0, 1)
    pdt = pg.float32 if params == "float32" else dtype
    w = pg.tensor(RNG.normal(size=40), dtype=pdt, device=device)
    b = pg.tensor(RNG.normal(size=40), dtype=pdt, device=device)
    if params == "none":
        w = b = None
    with pg.no_grad():
        fast = F.layer_norm(xt, (40,), w, b)
    recorded = F.layer_norm(xt.clone().requires_grad_(), (40,), w, b)
    assert fast.dtype is dtype and recorded.grad_fn is not None
    np.testing.assert_array_equal(fast.float().cpu().numpy(),
                                  recorded.detach().float().cpu().numpy())
    with pg.no_grad(), pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(xt, (41,), None, None)
