"""``portagrad.special`` against PyTorch 2.13: lgamma's accuracy near its zeros at 1 and 2, the
incomplete gamma functions (large ``a``, the upper tail, infinite/NaN arguments, 16-bit inputs),
polygamma at the infinities, ndtri's domain, entr's derivative and ``out=``. Expected values
are PyTorch 2.13's (or, where PyTorch is a few ulps off, the exact values), written out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

NAN, INF = math.nan, math.inf


def t(device: str, data, dtype=None, **kw):
    return pg.tensor(data, dtype=dtype, device=device, **kw)


def close(got, want, rtol: float) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if math.isnan(w):
            assert math.isnan(g), (got, want)
        elif math.isinf(w) or w == 0:
            assert g == w, (got, want)
        else:
            assert abs(g - w) <= rtol * abs(w), (got, want)


# ------------------------------------------------------------------------------------ lgamma
_LG_X = [0.999999, 1.000001, 1.999999, 2.000001, 0.9999, 2.53, 3.7]


def test_lgamma_near_one_and_two(device: str) -> None:
    want = [5.772164873855652e-07, -5.772148423874147e-07, -4.2278401259658534e-07,
            4.2278465762452923e-07, 5.7729791561193866e-05, 0.305997175258156, 1.428072326665388]
    close(pg.special.gammaln(t(device, _LG_X, pg.float64)).tolist(), want, 1e-14)
    close(pg.lgamma(t(device, _LG_X, pg.float64)).tolist(), want, 1e-14)


def test_lgamma_near_one_float32(device: str) -> None:
    # (Lanczos' sum gave 4.77e-07 for the first: 18% off)
    want = [5.848813202646852e-07, -5.504750220097776e-07, -4.031982712149329e-07,
            4.031988396491215e-07, 5.773937300546095e-05, 0.30599716305732727, 1.4280723333358765]
    close(pg.special.gammaln(t(device, _LG_X)).tolist(), want, 5e-7)


# -------------------------------------------------------------------------- gammainc/gammaincc
def test_gammainc_large_a_next_to_infinite_a(device: str) -> None:
    # an infinite a once set the number of series terms for every element (0.155, not 0.501)
    a = t(device, [1e4, 1e4, 10.0, INF], pg.float64)
    x = t(device, [1e4, 9900.0, 11.0, 5.0], pg.float64)
    close(pg.special.gammainc(a, x).tolist(),
          [0.5013298083399552, 0.15865119219356466, 0.6594893575343392, 0.0], 1e-10)


def test_gammaincc_upper_tail(device: str) -> None:
    a = t(device, [0.5, 1.0, 10.0], pg.float64)
    x = t(device, [50.0, 50.0, 50.0], pg.float64)
    close(pg.special.gammaincc(a, x).tolist(),
          [1.5239706048320995e-23, 1.9287498479639183e-22, 1.2596084591660892e-12], 1e-12)
    close(pg.igammac(a, x).tolist(),
          [1.5239706048320995e-23, 1.9287498479639183e-22, 1.2596084591660892e-12], 1e-12)


def test_gammainc_float32_accuracy(device: str) -> None:
    out = pg.special.gammainc(t(device, [1e4, 1.0, 2.0]), t(device, [1e4, 3.0, 3.0]))
    assert out.dtype is pg.float32
    close(out.tolist(), [0.501329779624939, 0.9502129554748535, 0.8008517026901245], 3e-7)
    out = pg.special.gammaincc(t(device, [1.0, 2.0]), t(device, [3.0, 3.0]))
    close(out.tolist(), [0.049787070602178574, 0.1991482824087143], 3e-7)


def test_gammainc_float16(device: str) -> None:
    try:
        a = t(device, [1.0, 2.0], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    out = pg.special.gammainc(a, t(device, [3.0, 3.0], pg.float16))
    assert out.dtype is pg.float16
    assert out.tolist() == [0.9501953125, 0.80078125]


def test_gammainc_infinite_and_nan_arguments(device: str) -> None:
    a = t(device, [INF, INF, INF, NAN, NAN, 1.0])
    x = t(device, [1.0, INF, NAN, 0.0, INF, NAN])
    close(pg.special.gammainc(a, x).tolist(), [0.0, NAN, 0.0, 0.0, 1.0, NAN], 0)
    close(pg.special.gammaincc(a, x).tolist(), [1.0, NAN, 1.0, 1.0, 0.0, NAN], 0)


# --------------------------------------------------------------------------------- polygamma
def test_polygamma_at_infinities(device: str) -> None:
    x = t(device, [-INF, INF])
    close(pg.special.polygamma(1, x).tolist(), [NAN, 0.0], 0)
    close(pg.special.polygamma(2, x).tolist(), [-INF, NAN], 0)
    close(pg.polygamma(3, x).tolist(), [INF, NAN], 0)


# ------------------------------------------------------------------------------------- ndtri
def test_ndtri_domain(device: str) -> None:
    # below 0 the tail's Newton steps gave -inf
    out = pg.special.ndtri(t(device, [-0.1, -1e-30, 1.5, 0.0, 1.0, 0.5]))
    close(out.tolist(), [NAN, NAN, NAN, -INF, INF, 0.0], 0)


def test_ndtri_input_dtypes(device: str) -> None:
    out = pg.special.ndtri(t(device, [True, False]))
    assert out.dtype is pg.float32 and out.tolist() == [INF, -INF]
    assert pg.special.ndtri(t(device, [0, 1])).dtype is pg.float32
    try:
        h = t(device, [0.5], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    with pytest.raises(NotImplementedError, match="\"ndtri_cpu\" not implemented for 'Half'"):
        pg.special.ndtri(h)


# -------------------------------------------------------------------------------------- entr
def test_entr_gradient(device: str) -> None:
    x = t(device, [0.3, -0.4, 0.0, 2.0], pg.float64, requires_grad=True)
    y = pg.special.entr(x)
    assert y.grad_fn.name() == "SpecialEntrBackward0"
    y.sum().backward()
    close(x.grad.tolist(), [0.20397280432593612, NAN, INF, -1.6931471805599454], 1e-14)
    close(y.tolist(), [0.36119184129778081, -INF, 0.0, -1.3862943611198906], 1e-14)


# -------------------------------------------------------------------------------------- out=
@pytest.mark.parametrize("name", ["erfc", "gammaln", "digamma", "i0", "i1e", "entr", "ndtr",
                                  "bessel_j0", "airy_ai", "log_ndtr", "sinc"])
def test_unary_out(device: str, name: str) -> None:
    x = t(device, [0.3, 0.7])
    o = pg.empty(2, device=device)
    r = getattr(pg.special, name)(x, out=o)
    assert r is o
    close(o.tolist(), getattr(pg.special, name)(x).tolist(), 0)


def test_out_forms_with_more_arguments(device: str) -> None:
    o = pg.empty(2, device=device)
    assert pg.special.polygamma(1, t(device, [1.0, 2.0]), out=o) is o
    close(o.tolist(), [1.6449340668482264, 0.6449340668482264], 1e-6)
    assert pg.special.gammainc(t(device, [1.0, 2.0]), t(device, [3.0, 4.0]), out=o) is o
    close(o.tolist(), [0.9502129554748535, 0.9084218144416809], 1e-6)
    assert pg.special.chebyshev_polynomial_t(t(device, [0.5, 0.2]), 3, out=o) is o
    close(o.tolist(), [-1.0, -0.568], 1e-6)
    assert pg.special.logit(t(device, [0.0, 0.5]), eps=0.1, out=o) is o
    close(o.tolist(), [-2.1972246170043945, 0.0], 1e-6)
    o1 = pg.empty(2, device=device)
    assert pg.special.logsumexp(t(device, [[1.0, 2.0], [3.0, 5.0]]), 1, out=o1) is o1
    close(o1.tolist(), [2.3132617473602295, 5.126927852630615], 1e-6)
    assert pg.special.xlog1py(t(device, [1.0, 2.0]), t(device, [3.0, 4.0]), out=o) is o
    close(o.tolist(), [1.3862943649291992, 3.2188758850097656], 1e-6)


def test_out_refused_with_grad(device: str) -> None:
    x = t(device, [0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"special_entr\(\): functions with out=\.\.\. "
                       r"arguments don't support automatic differentiation"):
        pg.special.entr(x, out=pg.empty(1, device=device))
