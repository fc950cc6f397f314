"""Fused scaled dot-product attention (the optional ``attention``/``attention_backward`` backend
primitives behind ``F.scaled_dot_product_attention``): forward and gradients against a float64
numpy reference and against the composed path, masks (none, bool, additive, causal, rows with
nothing to attend to), shapes, 16-bit inputs, gradcheck, that the fused path is the one taken and
that the L x S weights are not kept for backward."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad import _raw
from portagrad._ops import nn as nodes
from portagrad.autograd import gradcheck, gradgradcheck


def _ref(q, k, v, mask=None, causal=False, scale=None):
    """Float64 numpy attention and its (dq, dk, dv) for the incoming gradient of ones-like
    ``g`` given later: returns a function of g."""
    sc = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * sc
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    m = s.max(-1, keepdims=True)
    none = m == -np.inf
    e = np.exp(s - np.where(none, 0, m))
    den = e.sum(-1, keepdims=True)
    p = np.where(none, 0, e / np.where(den == 0, 1, den))
    out = p @ v

    def grads(g):
        dv = np.swapaxes(p, -1, -2) @ g
        dp = g @ np.swapaxes(v, -1, -2)
        ds = p * (dp - (dp * p).sum(-1, keepdims=True))
        return ds @ k * sc, np.swapaxes(ds, -1, -2) @ q * sc, dv
    return out, grads


@pytest.fixture(autouse=True)
def _fused_everywhere(monkeypatch):
    """The OpenCL backend runs its fused kernels on GPUs only (the composition is faster on CPU
    devices); these tests check the kernels on whatever OpenCL device there is."""
    from portagrad.plugins.manager import get_backend

    try:
        be = get_backend("opencl")
    except Exception:  # no OpenCL backend in this run
        return
    monkeypatch.setattr(be, "_force_fused_attention", True, raising=False)


def test_opencl_fuses_only_large_attention(monkeypatch):
    """Without forcing, the OpenCL backend composes attention (faster where measured) and runs
    its fused kernels where the scores would take FUSED_MIN_BYTES in float32."""
    from portagrad.backends.opencl.attention import FUSED_MIN_BYTES
    from portagrad.plugins.manager import get_backend

    try:
        be = get_backend("opencl")
    except Exception as exc:
        pytest.skip(f"no OpenCL backend: {exc}")
    if be.device_count() == 0:
        pytest.skip("no OpenCL device")
    monkeypatch.setattr(be, "_force_fused_attention", None, raising=False)
    big = FUSED_MIN_BYTES // 4
    assert be.fused_attention(0, big) and not be.fused_attention(0, big - 1)
    q = pg.ones(1, 4, 8, device="opencl:0")
    assert not nodes.attention.fused_ok(q, q, q, None, 0.0)
    seen = []
    monkeypatch.setattr(be, "fused_attention", lambda i, n: seen.append(n) or True)
    assert nodes.attention.fused_ok(q, pg.ones(1, 6, 8, device="opencl:0"),
                                    pg.ones(1, 6, 8, device="opencl:0"), None, 0.0)
    assert seen == [1 * 4 * 6]


def _fused(device):
    return _raw.has_prims(pg.zeros(1, device=device), "attention", "attention_backward")


def _data(seed, lead, L, S, D, Dv=None):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(lead + (L, D)), rng.standard_normal(lead + (S, D)),
            rng.standard_normal(lead + (S, Dv or D)), rng)


def _check(device, q, k, v, mask=None, causal=False, scale=None, dtype=pg.float64, tol=1e-10):
    ts = [pg.tensor(a, device=device).to(dtype).requires_grad_() for a in (q, k, v)]
    pm = None if mask is None else pg.tensor(mask, device=device)
    if pm is not None and pm.dtype is not pg.bool:
        pm = pm.to(dtype)
    out = F.scaled_dot_product_attention(*ts, attn_mask=pm, is_causal=causal, scale=scale)
    ref, grads = _ref(q, k, v, mask, causal, scale)
    np.testing.assert_allclose(out.detach().to(pg.float64).cpu().numpy(), ref, rtol=tol, atol=tol)
    g = np.random.default_rng(1).standard_normal(ref.shape)
    out.backward(pg.tensor(g, device=device).to(dtype))
    for t, r in zip(ts, grads(g)):
        np.testing.assert_allclose(t.grad.to(pg.float64).cpu().numpy(), r, rtol=tol, atol=tol)
    return out


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)])
@pytest.mark.parametrize("L,S,D", [(5, 7, 8), (130, 20, 16), (33, 300, 64), (4, 4, 128)])
def test_shapes_against_reference(device, lead, L, S, D):
    q, k, v, _ = _data(0, lead, L, S, D, Dv=max(1, D // 2))
    _check(device, q, k, v)
    _check(device, q, k, v, causal=True, scale=0.3)


@pytest.mark.parametrize("kind", ["bool", "float", "bool_heads", "key_padding"])
def test_masks(device, kind):
    q, k, v, rng = _data(2, (2, 3), 150, 40, 8)
    if kind == "bool":
        mask = rng.random((150, 40)) > 0.4
    elif kind == "float":
        mask = rng.standard_normal((3, 150, 40))
        mask[:, 3, 5:] = -np.inf  # a partly -inf additive row
    elif kind == "bool_heads":
        mask = rng.random((2, 1, 150, 40)) > 0.7
    else:
        mask = np.ones((2, 1, 1, 40), bool)
        mask[0, ..., 30:] = False
    _check(device, q, k, v, mask=mask)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_rows_with_nothing_to_attend_are_zero(device, kind):
    q, k, v, rng = _data(3, (2,), 140, 9, 8)
    mask = rng.random((140, 9)) > 0.3
    mask[[0, 7, 139]] = False
    if kind == "float":
        mask = np.where(mask, 0.0, -np.inf)
    out = _check(device, q, k, v, mask=mask)
    assert not np.isnan(out.detach().cpu().numpy()).any()
    assert (out.detach().cpu().numpy()[:, [0, 7, 139]] == 0).all()


def test_causal_rectangular(device):
    # top-left alignment (tril of the (L, S) matrix) with L > S and L < S
    for L, S in ((9, 4), (4, 9)):
        q, k, v, _ = _data(4, (2,), L, S, 8)
        _check(device, q, k, v, causal=True)


def test_against_composition(device, monkeypatch):
    q, k, v, rng = _data(5, (2, 2), 70, 50, 16)
    mask = rng.random((70, 50)) > 0.5
    args = [pg.tensor(a, device=device, dtype=pg.float32) for a in (q, k, v)]
    pm = pg.tensor(mask, device=device)
    fused = F.scaled_dot_product_attention(*args, attn_mask=pm)
    monkeypatch.setattr(nodes.attention, "fused_ok", lambda *a: False)
    composed = F.scaled_dot_product_attention(*args, attn_mask=pm)
    np.testing.assert_allclose(fused.cpu().numpy(), composed.cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_against_torch(device):
    torch = pytest.importorskip("torch")
    q, k, v, rng = _data(6, (2, 3), 40, 30, 16)
    mask = rng.random((40, 30)) > 0.5
    for m, causal in ((None, False), (None, True), (mask, False)):
        tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
        to = torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, None if m is None else torch.tensor(m), is_causal=causal)
        to.sum().backward()
        ts = [pg.tensor(a, device=device).requires_grad_() for a in (q, k, v)]
        po = F.scaled_dot_product_attention(*ts, attn_mask=None if m is None else pg.tensor(
            m, device=device), is_causal=causal)
        po.sum().backward()
        np.testing.assert_allclose(po.detach().cpu().numpy(), to.detach().numpy(), atol=1e-12)
        for a, b in zip(ts, (tq, tk, tv)):
            np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), atol=1e-12)


def _declines(device, dt):
    try:
        pg.zeros(1, dtype=dt, device=device) + 1
    except pg.errors.DTypeError:
        return True
    return False


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_half(device, dt):
    dtype = getattr(pg, dt)
    if _declines(device, dtype):
        pytest.skip(f"{device} declines {dt} (DTypeError)")
    q, k, v, _ = _data(7, (2,), 50, 40, 16)
    # round the inputs first so the float64 reference sees what the kernel sees
    q, k, v = (pg.tensor(a).to(dtype).to(pg.float64).numpy() for a in (q, k, v))
    out = _check(device, q, k, v, causal=True, dtype=dtype, tol=3e-2 if dt == "bfloat16" else 4e-3)
    assert out.dtype is dtype


@pytest.mark.parametrize("causal,mask", [(False, None), (True, None), (False, "bool"),
                                         (False, "float")])
def test_gradcheck(device, causal, mask):
    q, k, v, rng = _data(8, (2,), 5, 4, 3)
    m = None
    if mask == "bool":
        mm = rng.random((5, 4)) > 0.4
        mm[2] = False
        m = pg.tensor(mm, device=device)
    elif mask == "float":
        m = pg.tensor(rng.standard_normal((5, 4)), device=device)
    ts = [pg.tensor(a, device=device, dtype=pg.float64, requires_grad=True) for a in (q, k, v)]

    def fn(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, attn_mask=m, is_causal=causal)
    assert gradcheck(fn, ts)
    assert gradgradcheck(fn, ts)


def test_fused_path_taken_and_weights_not_saved(device, monkeypatch):
    if not _fused(device):
        pytest.skip(f"{device}'s backend has no fused attention primitives")
    be = pg.zeros(1, device=device)._storage.backend
    calls = []
    for name in ("attention", "attention_backward"):
        orig = getattr(be, name)
        monkeypatch.setattr(be, name, lambda *a, _o=orig, _n=name: (calls.append(_n), _o(*a))[1])
    L = S = 256
    q, k, v, _ = _data(9, (2, 2), L, S, 8)
    ts = [pg.tensor(a, device=device, dtype=pg.float32, requires_grad=True) for a in (q, k, v)]
    saved = []

    def pack(t):
        saved.append(tuple(t.shape))
        return t
    with pg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = F.scaled_dot_product_attention(*ts, is_causal=True)
    out.sum().backward()
    assert calls == ["attention", "attention_backward"]
    # q, k, v, out (*, L, D) and the (*, L) log-sum-exps: nothing of L x S elements
    assert saved and all(math.prod(s) < L * S for s in saved), saved


def test_errors_unchanged(device):
    q = pg.zeros(2, 4, 8, device=device)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pg.ones(4, 4, dtype=pg.bool,
                                                                    device=device),
                                       is_causal=True)


@pytest.mark.parametrize("kind", ["none", "causal", "bool", "float"])
def test_small_cases(device, kind):
    # small enough for the Oclgrind simulator (tox -e oclgrind): ragged blocks, every mask kind,
    # a row with nothing to attend to
    q, k, v, rng = _data(10, (2,), 5, 7, 4, Dv=3)
    mask = None
    if kind in ("bool", "float"):
        mask = rng.random((2, 5, 7)) > 0.4
        mask[1, 2] = False
        if kind == "float":
            mask = np.where(mask, rng.standard_normal(mask.shape), -np.inf)
    _check(device, q, k, v, mask=mask, causal=kind == "causal", dtype=pg.float32, tol=1e-5)


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("kind", ["none", "causal", "bool", "float"])
def test_decode_rows(device, dt, kind):
    # a few query rows against a longer cache (a decode step): the numpy backend's row kernel
    # (no L x S matrix; bfloat16 keys and values read in place), with a broadcast mask, rows
    # with nothing to attend to and causal rows past the keys (L > S at S = 2)
    dtype = getattr(pg, dt)
    if _declines(device, dtype):
        pytest.skip(f"{device} declines {dt} (DTypeError)")
    tol = {"float32": 2e-5, "float64": 1e-10, "bfloat16": 3e-2}[dt]
    # (head size 8 throughout, as most tests here: each new size is a kernel build on OpenCL;
    # the other devices, whose kernels do not depend on these shapes, take the first case only)
    cases = (((2, 3), 1, 40, 8), ((3,), 4, 2, 8), ((2,), 8, 33, 8))
    for lead, L, S, D in cases if device == "cpu" else cases[:1]:
        q, k, v, rng = _data(11, lead, L, S, D)
        if dt == "bfloat16":  # the reference sees the rounded inputs
            q, k, v = (pg.tensor(a).to(dtype).to(pg.float64).numpy() for a in (q, k, v))
        mask = None
        if kind in ("bool", "float"):
            mask = rng.random((L, S)) > 0.4
            mask[0] = False
            if kind == "float":
                mask = np.where(mask, rng.standard_normal((L, S)), -np.inf)
                if dt == "bfloat16":
                    mask = pg.tensor(mask).to(dtype).to(pg.float64).numpy()
        out = _check(device, q, k, v, mask=mask, causal=kind == "causal", dtype=dtype, tol=tol)
        assert out.dtype is dtype
        if mask is not None:
            assert (out.detach().to(pg.float32).cpu().numpy()[..., 0, :] == 0).all()


def test_decode_rows_kernel_against_blocked_path(monkeypatch):
    # the numpy backend's two forward paths (numba's row kernel, the blocked BLAS one) agree,
    # NaN included: a NaN query row gives NaN outputs and log-sum-exps on both
    from portagrad.backends.numpy import attention as na
    from portagrad.backends.numpy import jit

    if not jit.available():
        pytest.skip("numba is not installed (or PORTAGRAD_NUMBA=0): no row kernel")
    q, k, v, rng = _data(12, (2, 3), 3, 20, 16)
    q[1, 2, 0, 0] = np.nan
    mask = pg.tensor(rng.random((3, 20)) > 0.3)
    outs = []
    for few in (na._FEW_ROWS, 0):
        monkeypatch.setattr(na, "_FEW_ROWS", few)
        ts = [pg.tensor(a, dtype=pg.float32) for a in (q, k, v)]
        lse = pg.empty((2, 3, 3))
        out = pg.empty((2, 3, 3, 16))
        _raw.attention(*ts, _raw.expand_view(mask, (2, 3, 3, 20)), False, 0.25, out, lse)
        outs.append((out.numpy(), lse.numpy()))
    (o1, l1), (o0, l0) = outs
    np.testing.assert_allclose(o1, o0, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(l1, l0, rtol=1e-6, atol=1e-6)
    assert np.isnan(l1[1, 2, 0]) and np.isnan(o1[1, 2, 0]).all()


@pytest.mark.parametrize("L", [1, 3, 40])
def test_nan_scores_reach_the_output(device, L):
    # a NaN score makes its row NaN, as the composition and PyTorch's math path (the fused
    # kernels gave 0, as for a row with nothing to attend to); a masked-out NaN key takes no part
    q, k, v, _ = _data(13, (1, 2), L, 5, 4)
    qn, kn = q.copy(), k.copy()
    qn[0, 1, 0, 0] = np.nan
    kn[0, 0, 2, 1] = np.nan
    mask = np.ones((L, 5), bool)
    mask[:, 2] = False
    for dt in (pg.float32, pg.float64):
        def run(a, b, m=None, dt=dt):
            ts = [pg.tensor(x, device=device, dtype=dt) for x in (a, b, v)]
            pm = None if m is None else pg.tensor(m, device=device)
            return F.scaled_dot_product_attention(*ts, attn_mask=pm).cpu().numpy()
        o = run(qn, k)
        assert np.isnan(o[0, 1, 0]).all()
        assert np.isfinite(o[0, 0]).all() and np.isfinite(o[0, 1, 1:]).all()
        o = run(q, kn)
        assert np.isnan(o[0, 0]).all() and np.isfinite(o[0, 1]).all()
        assert np.isfinite(run(q, kn, mask)).all()
