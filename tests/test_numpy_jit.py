"""The numpy backend's numba kernels (``backends/numpy/jit.py``) and the paths that use them:
float32 ``erf``, exact GELU forward and backward, and the row scatter-add of embedding gradients.

Each path is run both ways, with the numba kernel and with its numpy fallback (the kernels turned
off in the process, as without numba): float32 erf against ``math.erf`` and the fallback's bits
(within an ulp: the kernel has its own exponential), GELU's backend methods against the core's
composition (the fallback bit for bit) and PyTorch's formulas in float64, the scatter-add bit for
bit against the element-wise ``np.add.at`` it replaces; plus float64 gradchecks of the ops
whose backward now runs there, and ``PORTAGRAD_NUMBA=0`` / numba missing in a subprocess.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.numpy import bf16_dot, jit
from portagrad.backends.numpy.backend import _add_rows
from portagrad.backends.numpy.special import erf

_NUMBA = jit.available()


@pytest.fixture(params=["numba", "numpy"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test twice: with the numba kernels, and with them off (the numpy fallbacks)."""
    if request.param == "numba":
        if not _NUMBA:
            pytest.skip("numba not installed (or PORTAGRAD_NUMBA=0)")
    else:
        monkeypatch.setattr(jit, "_STATE", [None])
        assert not jit.available()
    yield request.param


def _erf_grid() -> np.ndarray:
    rng = np.random.default_rng(0)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    x = np.concatenate([np.linspace(-7, 7, 40001), rng.standard_normal(20000) * 2,
                        np.geomspace(tiny, 1.0, 4000), np.geomspace(1.0, 1e30, 200)])
    return np.concatenate([x, -x, [0.0, -0.0, tiny, -tiny, 1.0, -1.0, 4.0, -4.0]]).astype(
        np.float32)


def test_erf32_accuracy_and_specials(mode: str) -> None:
    x = _erf_grid()
    out = np.empty_like(x)
    erf(x, out)
    ref = np.array([math.erf(v) for v in x.astype(np.float64).tolist()])
    ulp = np.abs(out.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32))
    assert ulp.max() <= 2.0
    s = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 6.5, -40.0, 1e-40], np.float32)
    o = np.empty_like(s)
    erf(s, o)
    np.testing.assert_array_equal(o[[0, 1, 3, 4, 5, 6]], np.array([1, -1, 0, 0, 1, -1], np.float32))
    assert np.isnan(o[2]) and np.signbit(o[4]) and not np.signbit(o[3])
    assert o[7] == np.float32(float(s[7]) * (2 / math.sqrt(math.pi)))  # not flushed


@pytest.mark.skipif(not _NUMBA, reason="numba not installed (or PORTAGRAD_NUMBA=0)")
def test_erf32_kernel_within_an_ulp_of_the_numpy_evaluation(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    x = _erf_grid()
    fast, slow = np.empty_like(x), np.empty_like(x)
    erf(x, fast)
    monkeypatch.setattr(jit, "_STATE", [None])
    erf(x, slow)
    d = np.abs(fast.view(np.int32).astype(np.int64) - slow.view(np.int32))
    assert d.max() <= 1


def _gelu_ref64(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact GELU and ``g * gelu'`` in float64 (PyTorch's formulas)."""
    xd = x.astype(np.float64)
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in xd.tolist()])
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    return xd * cdf, g.astype(np.float64) * (cdf + xd * pdf)


def _tensors(*arrays: np.ndarray) -> list[pg.Tensor]:
    """Tensors over copies of ``arrays`` (kept alive by the caller while their views are used:
    a dropped tensor's memory may be handed out again)."""
    return [pg.tensor(a) for a in arrays]


def test_gelu_backend_methods(mode: str) -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(70001) * 3,
                        [0.0, -0.0, 1e-40, -1e-40, 5.0, -5.0, 13.3, -13.3, 14.0, -14.0, 40.0,
                         -40.0, 1e30, -1e30]]).astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    xt, gt, ot, bt = _tensors(x, g, np.empty_like(x), np.empty_like(x))
    be = xt._storage.backend
    be.gelu(xt._v, ot._v)
    be.gelu_backward(gt._v, xt._v, bt._v)
    y, gx = ot.numpy(), bt.numpy()
    y64, gx64 = _gelu_ref64(x, g)
    np.testing.assert_allclose(y, y64, rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(gx, gx64, rtol=2e-6, atol=2e-7 * float(np.abs(g).max()))
    # infinities and NaN as the composition gives them
    s = np.array([np.inf, -np.inf, np.nan], np.float32)
    st, so, sb, ones = _tensors(s, np.empty_like(s), np.empty_like(s), np.ones(3, np.float32))
    be.gelu(st._v, so._v)
    be.gelu_backward(ones._v, st._v, sb._v)
    assert so.numpy()[0] == np.inf and np.isnan(so.numpy()[1:]).all()  # -inf * 0 is NaN
    assert np.isnan(sb.numpy()).all()  # inf * 0 in the slope, as the composition


def test_gelu_fallback_is_the_core_composition(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without numba the backend's chunked GELU makes the composition's operations in its order:
    the same bits as the composed node (routed there by hiding the primitives)."""
    monkeypatch.setattr(jit, "_STATE", [None])
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 50000)) * 2).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)

    def run() -> tuple[np.ndarray, np.ndarray]:
        t = pg.tensor(x, requires_grad=True)
        pg.nn.functional.gelu(t).backward(pg.tensor(g))
        return pg.nn.functional.gelu(pg.tensor(x)).numpy(), t.grad.numpy()

    y_fast, g_fast = run()
    from portagrad._ops.nn import activation
    monkeypatch.setattr(activation, "_gelu_prims", lambda x, a: False)
    y_comp, g_comp = run()
    assert y_fast.tobytes() == y_comp.tobytes()
    assert g_fast.tobytes() == g_comp.tobytes()


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_gelu_16bit_through_the_primitives(monkeypatch: pytest.MonkeyPatch, dt: str) -> None:
    """16-bit exact GELU runs the float32 primitives on a float32 copy and rounds once, forward
    and backward: the bits of the composed node's float32 route (numpy path, where the two are
    the same float32 operations), and the primitives do run."""
    monkeypatch.setattr(jit, "_STATE", [None])
    from portagrad._ops.nn import activation
    from portagrad.backends.numpy.backend import NumpyBackend

    calls: list[str] = []
    real_fwd, real_bwd = NumpyBackend.gelu, NumpyBackend.gelu_backward
    monkeypatch.setattr(NumpyBackend, "gelu", lambda self, *a: (calls.append("f"),
                                                                real_fwd(self, *a))[1])
    monkeypatch.setattr(NumpyBackend, "gelu_backward", lambda self, *a: (calls.append("b"),
                                                                         real_bwd(self, *a))[1])
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((7, 300)) * 3).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    dtype = getattr(pg, dt)

    def run() -> tuple[bytes, bytes]:
        t = pg.tensor(x).to(dtype).requires_grad_()
        y = pg.nn.functional.gelu(t)
        y.backward(pg.tensor(g).to(dtype))
        return y.detach().float().numpy().tobytes(), t.grad.float().numpy().tobytes()

    fast = run()
    assert calls == ["f", "b"]
    monkeypatch.setattr(activation, "_gelu_prims", lambda x, a: False)
    assert run() == fast and calls == ["f", "b"]


def test_gelu_node_float32_routes_and_grads(mode: str) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 33, 17)) * 2).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    t = pg.tensor(x, requires_grad=True)
    y = pg.nn.functional.gelu(t)
    y.backward(pg.tensor(g))
    y64, gx64 = _gelu_ref64(x.reshape(-1), g.reshape(-1))
    np.testing.assert_allclose(y.detach().numpy().reshape(-1), y64, rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(t.grad.numpy().reshape(-1), gx64, rtol=2e-6, atol=1e-6)
    # a non-contiguous incoming gradient, and a non-contiguous input (composed)
    t.grad = None
    y = pg.nn.functional.gelu(t)
    gt = pg.tensor(np.ascontiguousarray(g.transpose(2, 1, 0))).permute(2, 1, 0)
    y.backward(gt)
    np.testing.assert_allclose(t.grad.numpy().reshape(-1), gx64, rtol=2e-6, atol=1e-6)
    tt = pg.tensor(np.ascontiguousarray(x.transpose(0, 2, 1)), requires_grad=True)
    yt = pg.nn.functional.gelu(tt.transpose(1, 2))
    np.testing.assert_allclose(yt.detach().numpy().reshape(-1), y64, rtol=2e-6, atol=2e-7)


def test_gelu_create_graph_and_float64_gradcheck(mode: str) -> None:
    """Under ``create_graph`` the float32 node composes its backward (second derivatives
    exist); float64 (composed) passes gradcheck and gradgradcheck."""
    x = pg.tensor(np.linspace(-4, 4, 41, dtype=np.float32), requires_grad=True)
    (gx,) = pg.autograd.grad(pg.nn.functional.gelu(x).sum(), x, create_graph=True)
    (ggx,) = pg.autograd.grad(gx.sum(), x)
    xd = np.linspace(-4, 4, 41)
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(ggx.numpy(), pdf * (2 - xd * xd), rtol=1e-5, atol=1e-6)
    x64 = pg.tensor(np.random.default_rng(4).standard_normal((3, 5)), requires_grad=True)
    assert pg.autograd.gradcheck(pg.nn.functional.gelu, (x64,))
    assert pg.autograd.gradgradcheck(pg.nn.functional.gelu, (x64,))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_add_rows_matches_elementwise_add_at(mode: str, dt: type) -> None:
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 7, 300)
    idx[:20] = 3  # many duplicates
    src = rng.standard_normal((300, 9)).astype(dt)
    want = np.zeros((7, 9), dt)
    ix = np.broadcast_to(idx[:, None], src.shape)
    grids = list(np.indices(ix.shape, sparse=True))
    grids[0] = ix
    np.add.at(want, tuple(grids), src)
    for index in (ix, np.broadcast_to(idx.astype(np.int32)[:, None], src.shape)):
        got = np.zeros((7, 9), dt)
        assert _add_rows(got, 0, index, src)
        assert got.tobytes() == want.tobytes()
    # forms it leaves to the general scatter
    assert not _add_rows(np.zeros((7, 9), dt), 1, ix, src)
    assert not _add_rows(np.zeros((7, 9), dt), 0, np.ascontiguousarray(ix), src)
    assert not _add_rows(np.zeros((7, 9), np.int64), 0, ix, src.astype(np.int64))


def test_embedding_gradient_and_gradcheck(mode: str) -> None:
    rng = np.random.default_rng(6)
    idx = rng.integers(0, 11, (4, 13))
    w = rng.standard_normal((11, 5)).astype(np.float32)
    g = rng.standard_normal((4, 13, 5)).astype(np.float32)
    t = pg.tensor(w, requires_grad=True)
    pg.nn.functional.embedding(pg.tensor(idx), t).backward(pg.tensor(g))
    want = np.zeros_like(w)
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 5))
    assert t.grad.numpy().tobytes() == want.tobytes()
    w64 = pg.tensor(rng.standard_normal((11, 3)), requires_grad=True)
    it = pg.tensor(idx)
    assert pg.autograd.gradcheck(lambda w: pg.nn.functional.embedding(it, w), (w64,))
    assert pg.autograd.gradcheck(lambda w: w.index_select(0, it.reshape(-1)), (w64,))


def test_kernels_off_by_variable_or_without_numba() -> None:
    """``PORTAGRAD_NUMBA=0``, or numba failing to import, leaves the numpy paths: the results
    are still GELU and the embedding gradient."""
    code = (
        "import sys, math, numpy as np\n"
        "if sys.argv[1] == 'hide': sys.modules['numba'] = None  # import numba fails\n"
        "import portagrad as pg\n"
        "from portagrad.backends.numpy import jit\n"
        "x = pg.tensor([-1.0, 0.5, 2.0], requires_grad=True)\n"
        "pg.nn.functional.gelu(x).sum().backward()\n"
        "w = pg.ones(3, 2, requires_grad=True)\n"
        "pg.nn.functional.embedding(pg.tensor([0, 2, 0]), w).sum().backward()\n"
        "assert not jit.available()\n"
        "v = [0.5 * (1 + math.erf(a / math.sqrt(2))) for a in (-1.0, 0.5, 2.0)]\n"
        "assert abs(float(x.grad[2]) - (v[2] + 2 * math.exp(-2) / math.sqrt(2 * math.pi))) < 1e-6\n"
        "assert w.grad.tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]\n"
    )
    for mode, extra in (("hide", {}), ("variable", {"PORTAGRAD_NUMBA": "0"})):
        env = dict(os.environ, **extra)
        subprocess.run([sys.executable, "-c", code, mode], check=True, env=env, timeout=120)


@pytest.mark.skipif(not _NUMBA, reason="numba not installed (or PORTAGRAD_NUMBA=0)")
@pytest.mark.parametrize(("n", "seed", "offset"), [
    (0, 0, 0), (1, 0, 0), (7, 5, 3), (70001, 2**40 + 17, 2**64 - 5),
    (5000, 9, (2**62 - 3) * 4 + 1)])  # counters and slots wrapping
def test_philox_uniform32_is_the_reference(n: int, seed: int, offset: int) -> None:
    from portagrad.backends import philox
    ref = philox.uniform(n, seed, offset, -1.5, 2.5, np.float32)
    out = np.empty(n, np.float32)
    jit.philox_uniform32(out, seed, offset, -1.5, 2.5)
    assert out.tobytes() == ref.tobytes()


def test_rand_and_dropout_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """float32 and bfloat16 ``rand`` and dropout's masks draw the same numbers with and without
    numba (bfloat16: the float32 stream rounded)."""
    def draw() -> tuple[bytes, ...]:
        pg.manual_seed(11)
        r = pg.rand(3, 1001)
        d = pg.nn.functional.dropout(pg.ones(5, 77), 0.3, True)
        rb = pg.rand(7, 301, dtype=pg.bfloat16)
        db = pg.nn.functional.dropout(pg.ones(5, 77, dtype=pg.bfloat16), 0.3, True)
        return tuple(t.view(pg.int16 if t.dtype is pg.bfloat16 else pg.int32).numpy().tobytes()
                     for t in (r, d, rb, db))

    first = draw()
    monkeypatch.setattr(jit, "_STATE", [None])
    assert draw() == first


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_rows_against_float64(mode: str, dt: type, affine: bool) -> None:
    """Layer norm forward and backward (the backend's rows path) against a float64 reference,
    with and without weight and bias, rows of odd length, a row of one constant value."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((5, 9, 37)) * 3 + 1).astype(dt)
    x[1, 2] = 4.0  # a constant row: variance 0, rstd = 1/sqrt(eps)
    w, b = rng.standard_normal(37).astype(dt), rng.standard_normal(37).astype(dt)
    g = rng.standard_normal(x.shape).astype(dt)
    xt, wt, bt = (pg.tensor(a, requires_grad=True) for a in (x, w, b))
    y = pg.nn.functional.layer_norm(xt, (37,), wt if affine else None, bt if affine else None,
                                    eps=1e-5)
    y.backward(pg.tensor(g))
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    xhat = (xd - mu) * r
    wd = w.astype(np.float64) if affine else np.ones(37)
    want = xhat * wd + (b.astype(np.float64) if affine else 0)
    gw = gd * wd
    gx = r * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y.detach().numpy(), want, **tol)
    np.testing.assert_allclose(xt.grad.numpy(), gx, **tol)
    if affine:
        np.testing.assert_allclose(wt.grad.numpy(), (gd * xhat).sum((0, 1)), **tol)
        np.testing.assert_allclose(bt.grad.numpy(), gd.sum((0, 1)), **tol)
    else:
        assert wt.grad is None and bt.grad is None


def test_layer_norm_float64_gradcheck(mode: str) -> None:
    rng = np.random.default_rng(8)
    x, w, b = (pg.tensor(a, requires_grad=True) for a in (
        rng.standard_normal((3, 4, 6)), rng.standard_normal(6), rng.standard_normal(6)))
    assert pg.autograd.gradcheck(lambda x, w, b: pg.nn.functional.layer_norm(x, (6,), w, b),
                                 (x, w, b))
    assert pg.autograd.gradcheck(lambda x: pg.nn.functional.layer_norm(x, (4, 6)), (x,))


@pytest.mark.skipif(not _NUMBA, reason="numba not installed (or PORTAGRAD_NUMBA=0)")
def test_layer_norm_rows_close_to_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((64, 256)) * 2).astype(np.float32)
    w, b = rng.standard_normal(256).astype(np.float32), rng.standard_normal(256).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)

    def run() -> list[np.ndarray]:
        xt, wt, bt = (pg.tensor(a, requires_grad=True) for a in (x, w, b))
        y = pg.nn.functional.layer_norm(xt, (256,), wt, bt)
        y.backward(pg.tensor(g))
        return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]

    fast = run()
    monkeypatch.setattr(jit, "_STATE", [None])
    for a, c in zip(fast, run()):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_rows_specials_and_gradient(mode: str, dt: type) -> None:
    """Softmax over the last axis (the rows path) against float64, with rows holding NaN, +inf,
    only -inf and some -inf (masked attention), and its gradient."""
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((6, 5, 33)) * 4).astype(dt)
    x[0, 0, 3], x[0, 1, 5] = np.nan, np.inf
    x[0, 2, :] = -np.inf
    x[0, 3, 4:] = -np.inf
    g = rng.standard_normal(x.shape).astype(dt)
    xt = pg.tensor(x, requires_grad=True)
    y = pg.nn.functional.softmax(xt, dim=-1)
    y.backward(pg.tensor(g))
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(xd - xd.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    gd = g.astype(np.float64)
    gwant = want * (gd - (gd * want).sum(-1, keepdims=True))
    got, ggot = y.detach().numpy(), xt.grad.numpy()
    assert np.isnan(got[0, :3]).all() and np.isnan(ggot[0, :3]).all()
    np.testing.assert_array_equal(got[0, 3, 4:], 0.0)
    tol = dict(rtol=1e-5, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[1:], want[1:], **tol)
    np.testing.assert_allclose(ggot[1:], gwant[1:], **tol)
    np.testing.assert_allclose(got[0, 3:], want[0, 3:], **tol)
    if dt == np.float64:
        x64 = pg.tensor(rng.standard_normal((3, 7)), requires_grad=True)
        assert pg.autograd.gradcheck(lambda t: pg.nn.functional.softmax(t, dim=-1), (x64,))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_rows_against_float64(mode: str, dt: type, ignore_index: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Cross entropy of class scores through the backend's ``cross_entropy`` and
    ``cross_entropy_backward`` (the numba row kernels, or numpy): losses and gradients against
    float64 for every reduction, ignored rows, rows holding NaN, +inf and -inf, and the kernels
    taken where numba is there."""
    calls = []
    for name in ("cross_entropy_rows", "cross_entropy_backward_rows"):
        kernel = getattr(jit, name)
        monkeypatch.setattr(jit, name, lambda *a, _k=kernel: calls.append(1) or _k(*a))
    rng = np.random.default_rng(12)
    n, c = 9, 7
    x = (rng.standard_normal((n, c)) * 3).astype(dt)
    x[5, 1] = -np.inf
    t = rng.integers(0, c, n)
    t[[1, 4]] = ignore_index
    t[5] = 1  # the target's score is -inf: an infinite loss
    xd = x.astype(np.float64)
    m = xd.max(1, keepdims=True)
    lse = np.log(np.exp(xd - m).sum(1)) + m[:, 0]
    valid = t != ignore_index
    rows = np.where(valid, lse - xd[np.arange(n), np.where(valid, t, 0)], 0.0)
    p = np.exp(xd - lse[:, None])
    onehot = np.zeros((n, c))
    onehot[np.arange(n)[valid], t[valid]] = 1
    tol = dict(rtol=2e-6, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-13)
    for reduction in ("none", "sum", "mean"):
        xt = pg.tensor(x, requires_grad=True)
        loss = pg.nn.functional.cross_entropy(xt, pg.tensor(t), ignore_index=ignore_index,
                                              reduction=reduction)
        g = rng.standard_normal(n) if reduction == "none" else np.float64(1.7)
        loss.backward(pg.tensor(np.asarray(g, dt)))
        k = valid * (g if reduction == "none" else g / (valid.sum() if reduction == "mean"
                                                         else 1))
        want = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / valid.sum()}[reduction]
        got = loss.detach().numpy().astype(np.float64)
        if reduction == "none":
            assert got[5] == np.inf and np.isfinite(np.delete(got, 5)).all()
            np.testing.assert_allclose(np.delete(got, 5), np.delete(want, 5), **tol)
        else:
            assert got == np.inf
        gwant = (p - onehot) * np.asarray(k)[..., None] * np.ones((n, 1))
        np.testing.assert_allclose(xt.grad.numpy(), gwant, **tol)
    # a row holding NaN or +inf gives NaN (its loss and its gradient)
    x2 = x.copy()
    x2[0, 3], x2[2, 0] = np.nan, np.inf
    xt = pg.tensor(x2, requires_grad=True)
    loss = pg.nn.functional.cross_entropy(xt, pg.tensor(t), ignore_index=ignore_index,
                                          reduction="none")
    loss.backward(pg.ones(n, dtype=xt.dtype))
    got = loss.detach().numpy()
    assert np.isnan(got[[0, 2]]).all() and np.isnan(xt.grad.numpy()[[0, 2]]).all()
    assert len(calls) == (0 if mode == "numpy" else 8)  # the path under test was taken


def test_cross_entropy_kernel_gives_nan_for_a_target_out_of_range() -> None:
    """The row kernel never reads outside a row: a target that is not a class (the core raises
    for it before any loss is read) gives NaN and row weight 0."""
    if not _NUMBA:
        pytest.skip("numba not installed (or PORTAGRAD_NUMBA=0)")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    loss, lse, rw = (np.full(3, 7.0, np.float32) for _ in range(3))
    jit.cross_entropy_rows(x, np.array([1, 4, -3]), None, -100, loss, lse, rw)
    assert loss[0] == pytest.approx(lse[0] - 1) and np.isnan(loss[1:]).all()
    np.testing.assert_array_equal(rw, [1, 0, 0])
    g = np.full((3, 4), 9.0, np.float32)
    jit.cross_entropy_backward_rows(x, np.array([1, 4, -3]), lse, np.ones(3, np.float32), g)
    np.testing.assert_allclose(g[1:], np.exp(x[1:] - lse[1:, None]), rtol=1e-6)  # no -1


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_where_keep_or_zero(mode: str, dt: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """``where(cond, x, 0)`` (a ReLU's gradient): numba's one pass, or the bitwise and of
    ``x``'s bits without numba; either keeps NaN, infinities and -0.0 where ``cond`` holds and
    gives +0.0 elsewhere, as ``np.where``."""
    from portagrad.backends import _host_ops

    taken = []
    bitwise = _host_ops._keeps_or_zeros

    def counted(*a: object) -> bool:  # (counts the calls that took the bitwise path)
        done = bitwise(*a)
        taken.extend([1] if done else [])
        return done

    monkeypatch.setattr(_host_ops, "_keeps_or_zeros", counted)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((7, 9, 5)).astype(dt)
    x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, np.nan, -np.inf]
    cond = rng.random(x.shape) < 0.5
    cond.reshape(-1)[:6] = [True, True, True, True, False, False]
    got = pg.where(pg.tensor(cond), pg.tensor(x), 0.0).numpy()
    want = np.where(cond, x, dt(0.0))
    assert got.tobytes() == want.tobytes()
    # a -0.0 in place of 0 is no zero select: it lands as -0.0
    got = pg.where(pg.tensor(cond), pg.tensor(x), -0.0).numpy()
    assert got.tobytes() == np.where(cond, x, dt(-0.0)).tobytes()
    # a ReLU's gradient goes through it: 0 where the output is 0, whatever g is there
    y = pg.tensor(np.array([0.0, 1.5, 0.0, 2.0], dt), requires_grad=True)
    z = pg.relu(y * 1 - 0.5)
    z.backward(pg.tensor(np.array([np.inf, np.nan, -np.inf, -0.0], dt)))
    assert y.grad.numpy().tobytes() == np.array([0.0, np.nan, 0.0, -0.0], dt).tobytes()
    assert len(taken) == (0 if mode == "numba" else 2)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_both_ways(mode: str, dt: type, affine: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Training-mode batch norm's input, weight and bias gradients (the numba two-pass kernel,
    or numpy's seven passes) against the float64 formula, and the kernel taken with numba."""
    calls = []
    kernel = jit.batch_norm_backward_planes
    monkeypatch.setattr(jit, "batch_norm_backward_planes",
                        lambda *a: calls.append(1) or kernel(*a))
    rng = np.random.default_rng(15)
    x = (rng.standard_normal((4, 5, 6, 7)) * 3 + 1).astype(dt)
    g = rng.standard_normal(x.shape).astype(dt)
    w = rng.standard_normal(5).astype(dt)
    xt = pg.tensor(x, requires_grad=True)
    wt = pg.tensor(w, requires_grad=True) if affine else None
    bt = pg.tensor(np.zeros(5, dt), requires_grad=True) if affine else None
    pg.nn.functional.batch_norm(xt, None, None, wt, bt, training=True).backward(pg.tensor(g))
    xd, gd = x.astype(np.float64), g.astype(np.float64)
    mu = xd.mean((0, 2, 3), keepdims=True)
    r = 1 / np.sqrt(((xd - mu) ** 2).mean((0, 2, 3), keepdims=True) + 1e-5)
    xhat = (xd - mu) * r
    k = r * (w.astype(np.float64)[None, :, None, None] if affine else 1.0)
    gx = k * (gd - gd.mean((0, 2, 3), keepdims=True)
              - xhat * (gd * xhat).mean((0, 2, 3), keepdims=True))
    tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), gx, **tol)
    if affine:
        np.testing.assert_allclose(wt.grad.numpy(), (gd * xhat).sum((0, 2, 3)), **tol)
        np.testing.assert_allclose(bt.grad.numpy(), gd.sum((0, 2, 3)), **tol)
    assert len(calls) == (mode == "numba")


@pytest.mark.parametrize(("k", "s"), [(2, 2), (3, 2), (3, 1)])
def test_max_pool_gradient_both_ways(mode: str, k: int, s: int) -> None:
    """A max pooling's input gradient (the numba zero-and-scatter-add pass, or numpy's scatter
    / bincount) against the float64 sum of the output gradients at each recorded position;
    overlapping windows add up, and a -0.0 gradient lands as +0.0 (added into zeros, as
    PyTorch's kernel)."""
    rng = np.random.default_rng(14)
    x = pg.tensor(rng.standard_normal((2, 3, 7, 8)).astype(np.float32), requires_grad=True)
    y, idx = pg.nn.functional.max_pool2d(x, k, s, return_indices=True)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    g.reshape(-1)[0] = -0.0
    y.backward(pg.tensor(g))
    want = np.zeros((2 * 3, 7 * 8))
    for r, (ir, gr) in enumerate(zip(idx.numpy().reshape(6, -1), g.reshape(6, -1))):
        np.add.at(want[r], ir, gr.astype(np.float64))
    got = x.grad.numpy().reshape(6, -1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not (np.signbit(got) & (got == 0)).any()  # no -0.0


@pytest.mark.parametrize("rows", [1, 3, 8])
@pytest.mark.parametrize("layout", ["w_t", "row_major"])
def test_bfloat16_few_rows_product(mode: str, rows: int, layout: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A bfloat16 product with few rows and large weights (a decoder step): the numba loop over
    the weights' bit patterns (both layouts of ``b``: ``W.T`` and row-major) and the blockwise
    widening give every output as one float32 dot product rounded once to bfloat16: within a
    bfloat16 rounding of the float64 product of the same bfloat16 values."""
    monkeypatch.setattr(bf16_dot, "_STATE", [None])  # the bfloat16 instruction: test_bf16_dot
    calls = []
    kernel = jit.bf16_matmul_rows
    monkeypatch.setattr(jit, "bf16_matmul_rows", lambda *a: calls.append(1) or kernel(*a))
    rng = np.random.default_rng(rows)
    K, N = 384, 2880  # K * N >= the blockwise path's threshold; N not a multiple of the blocks
    x = pg.tensor(rng.standard_normal((rows, K)).astype(np.float32)).to(pg.bfloat16)
    if layout == "w_t":
        w = pg.tensor((rng.standard_normal((N, K)) * 0.05).astype(np.float32)).to(pg.bfloat16)
        y, wb = x @ w.T, w.float().numpy().astype(np.float64).T
    else:
        w = pg.tensor((rng.standard_normal((K, N)) * 0.05).astype(np.float32)).to(pg.bfloat16)
        y, wb = x @ w, w.float().numpy().astype(np.float64)
    assert y.dtype is pg.bfloat16 and tuple(y.shape) == (rows, N)
    ref = x.float().numpy().astype(np.float64) @ wb
    got = y.float().numpy().astype(np.float64)
    # float32 sums of K terms (reordered) then one bfloat16 rounding: half a bfloat16 ulp of the
    # result plus the float32 error, which is far below it
    tol = np.abs(ref) * 2.0 ** -8 + 1e-6 * np.abs(x.float().numpy()).max() * K
    assert (np.abs(got - ref) <= tol).all()
    assert len(calls) == (mode == "numba")  # the path under test was the one taken


def test_bfloat16_casts_both_ways(mode: str) -> None:
    """float32 -> bfloat16 copies round to the nearest even bit for bit as ml_dtypes' cast (a
    NaN stays a NaN), bfloat16 -> float32 copies are exact, with numba's loops (from 4096
    elements) or numpy's, through ``.to`` on the cpu device."""
    bf16 = pg.bfloat16.numpy
    rng = np.random.default_rng(11)
    # every 4099th float32 bit pattern (all exponents, subnormals, infinities, NaNs) and ties
    pats = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 1 << 16, 5000, dtype=np.uint32) << 16) | np.uint32(0x8000)
    x = np.concatenate([pats, ties]).view(np.float32)
    got = pg.tensor(x).to(pg.bfloat16)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(bf16).view(np.uint16)
    g = got.view(pg.int16).numpy().view(np.uint16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(g[~nan], want[~nan])
    assert ((g[nan] & 0x7FFF) > 0x7F80).all()
    back = got.to(pg.float32).numpy()
    np.testing.assert_array_equal(back.view(np.uint32), (g.astype(np.uint32) << 16))


@pytest.mark.skipif(not _NUMBA, reason="numba not installed (or PORTAGRAD_NUMBA=0)")
def test_bfloat16_casts_take_numba_from_4096_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = jit._kernel
    monkeypatch.setattr(jit, "_kernel", lambda name: calls.append(name) or real(name))
    x = pg.ones(64, 64)
    y = x.to(pg.bfloat16)
    x2 = y.to(pg.float32)
    assert calls.count("bf16_round") == 1 and calls.count("bf16_widen") == 1
    assert x2.tolist() == x.tolist()
    pg.ones(4095).to(pg.bfloat16)
    assert calls.count("bf16_round") == 1
