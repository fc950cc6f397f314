"""The ``torch.special`` functions beyond the gamma family: the orthogonal polynomials,
``erfcx``, ``log_ndtr``, ``i0e``, ``i1e``, ``zeta``, the Bessel functions and ``airy_ai``.

Each is checked on every device against values written out from PyTorch 2.13 (so the check holds
without torch), for its dtype rules and errors, and, where torch is installed, against torch on a
dense grid. PyTorch's CPU kernels are compiled with fused multiply-adds and portagrad's ops are
not, so values agree to a small multiple of the rounding error, not bit for bit: the tolerances
are measured, relative to ``max(|value|, 1)`` (the polynomials cancel to 0 near their zeros).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck

POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]

POLY_X = [-1.5, -1.0, -0.7, 0.0, 0.3, 0.5, 1.0, 2.5]
POLY_N = [-1, 0, 1, 3, 7, 9, 12]
# PyTorch 2.13's values (float64), a row per degree in POLY_N, a column per point in POLY_X
POLY_EXPECTED = {
    "chebyshev_polynomial_t": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-1.5, -1.0, -0.7, 0.0, 0.3, 0.5, 1.0, 2.5],
        [-9.0, -1.0, 0.7280000000000001, -0.0, -0.792, -1.0, 1.0, 55.0],
        [-421.5, -1.0, -0.7548352000000009, -4.286263797015736e-16, -0.8461632000000004,
         0.4999999999999997, 1.0, 28982.5],
        [-2889.0, -1.0, -0.6406865919999978, 5.51091059616309e-16, 0.3888276480000005, -1.0, 1.0,
         665335.0],
        [51841.0, 1.0, -0.9928076779519999, 1.0, -0.870430994432001, 1.0, 1.0, 73180801.0],
    ],
    "chebyshev_polynomial_u": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-3.0, -2.0, -1.4, 0.0, 0.6, 1.0, 2.0, 5.0],
        [-21.0, -4.0, 0.056000000000000355, -0.0, -0.984, -1.0, 4.0, 115.0],
        [-987.0, -8.0, -0.11191040000000067, -0.0, -0.6785664, 1.0, 8.0, 60605.0],
        [-6765.0, -10.0, -1.393283583999999, 6.123233995736766e-16, 0.09908889600000047,
         -1.000000000000001, 10.0, 1391275.0],
        [121393.0, 13.0, -1.1101568983040015, 1.0, -0.7156128112640001, 1.000000000000001, 13.0,
         153027601.0],
    ],
    "chebyshev_polynomial_v": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-4.0, -3.0, -2.4, -1.0, -0.4, 0.0, 1.0, 4.0],
        [-29.0, -7.0, -0.9039999999999997, 1.0, -0.344, -1.0, 1.0, 91.0],
        [-1364.0, -15.0, 0.8065535999999992, 1.0, -1.2372224, 0.0, 1.0, 47956.0],
        [-9349.0, -19.0, -2.4684221440000016, -0.9999999999999984, 1.064884736000001,
         -0.9999999999999997, 1.0, 1100899.0],
        [167761.0, 25.0, -1.2777986416640035, 0.9999999999999999, -1.231673421824,
         0.9999999999999997, 1.0, 121088881.0],
    ],
    "chebyshev_polynomial_w": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-2.0, -1.0, -0.3999999999999999, 1.0, 1.6, 2.0, 3.0, 6.0],
        [-13.0, -1.0, 1.016, -1.0, -1.624, -1.0, 7.0, 139.0],
        [-610.0, -1.0, -1.0303744000000001, -1.0, -0.1199104000000001, 2.0, 15.0, 73254.0],
        [-4181.0, -1.0, -0.31814502399999667, 1.0000000000000016, -0.866706943999998,
         -1.0000000000000013, 19.0, 1681651.0],
        [75025.0, 1.0, -0.9425151549439991, 1.0000000000000002, -0.1995522007040017,
         1.000000000000001, 25.0, 184966321.0],
    ],
    "shifted_chebyshev_polynomial_t": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-4.0, -3.0, -2.4, -1.0, -0.4, 0.0, 1.0, 4.0],
        [-244.0, -99.0, -48.096, -1.0, 0.944, -0.0, 1.0, 244.0],
        [-937444.0, -114243.0, -21192.622233599992, -1.0, 0.25802240000000076,
         -4.286263797015736e-16, 1.0, 937444.0],
        [-58106404.0, -3880899.0, -444883.23195494374, -1.0, 0.5329295360000004,
         5.51091059616309e-16, 1.0, 58106404.0],
        [28355806081.0, 768398401.0, 42789582.397777945, 1.0, 0.22389896396800066, 1.0, 1.0,
         28355806081.0],
    ],
    "shifted_chebyshev_polynomial_u": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-8.0, -6.0, -4.8, -2.0, -0.8, 0.0, 2.0, 8.0],
        [-496.0, -204.0, -100.99199999999999, -4.0, 1.088, -0.0, 4.0, 496.0],
        [-1905632.0, -235416.0, -44505.31614719999, -8.0, -0.16363519999999984,
         -4.898587196589413e-16, 8.0, 1905632.0],
        [-118118440.0, -7997214.0, -934271.7800570878, -10.0, 0.9022238719999996,
         6.123233995736766e-16, 10.0, 118118440.0],
        [57641556673.0, 1583407981.0, 89859757.44478737, 13.0, 0.6492546703359996, 1.0, 13.0,
         57641556673.0],
    ],
    "shifted_chebyshev_polynomial_v": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-9.0, -7.0, -5.8, -3.0, -1.8, -1.0, 1.0, 7.0],
        [-559.0, -239.0, -123.032, -7.0, 1.448, 1.0, 1.0, 433.0],
        [-2147679.0, -275807.0, -54218.938611199985, -15.0, -1.2177792000000005, 0.9999999999999986,
         1.0, 1663585.0],
        [-133121449.0, -9369319.0, -1138183.6750996476, -19.0, 1.825459712, -0.9999999999999984,
         1.0, 103115431.0],
        [64962994321.0, 1855077841.0, 109472330.38104129, 25.0, 1.7126439362560002,
         0.9999999999999999, 1.0, 50320119025.0],
    ],
    "shifted_chebyshev_polynomial_w": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-7.0, -5.0, -3.8, -1.0, 0.19999999999999996, 1.0, 3.0, 9.0],
        [-433.0, -169.0, -78.95199999999998, -1.0, 0.728, -1.0, 7.0, 559.0],
        [-1663585.0, -195025.0, -34791.693683199985, -1.0, 0.8905087999999997, -1.0000000000000013,
         15.0, 2147679.0],
        [-103115431.0, -6625109.0, -730359.8850145276, -1.0, -0.021011968000000072,
         1.0000000000000016, 19.0, 133121449.0],
        [50320119025.0, 1311738121.0, 70247184.50853343, 1.0, -0.41413459558399984,
         1.0000000000000002, 25.0, 64962994321.0],
    ],
    "hermite_polynomial_h": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-3.0, -2.0, -1.4, 0.0, 0.6, 1.0, 2.0, 5.0],
        [-9.0, 4.0, 5.656, -0.0, -3.384, -5.0, -4.0, 95.0],
        [-801.0, -464.0, 238.86472960000006, -0.0, -416.5179264, -461.0, 464.0, -4825.0],
        [-2835.0, 10720.0, -902.0626979840017, 0.0, 7010.287658496, 6481.0, -10720.0, -131275.0],
        [940113.0, 280768.0, -802866.3892869079, 665280.0, 49478.71593365919, -604031.0, 280768.0,
         13409905.0],
    ],
    "hermite_polynomial_he": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-1.5, -1.0, -0.7, 0.0, 0.3, 0.5, 1.0, 2.5],
        [1.125, 2.0, 1.757, -0.0, -0.873, -1.375, -2.0, 8.125],
        [-54.4921875, 20.0, 40.9321157, -0.0, -28.7158113, -40.0234375, -20.0, -62.3046875],
        [541.212890625, -28.0, -289.926058807, 0.0, 250.390686483, 326.533203125, 28.0,
         1431.103515625],
        [9694.654541015625, -12440.0, -9233.960840506197, 10395.0, 5192.690601658041,
         -2159.888427734375, -12440.0, -36823.353271484375],
    ],
    "laguerre_polynomial_l": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [2.5, 2.0, 1.7, 1.0, 0.7, 0.5, 0.0, -1.5],
        [9.4375, 5.666666666666667, 3.8921666666666668, 1.0, 0.23050000000000007,
         -0.14583333333333334, -0.6666666666666666, 0.2708333333333333],
        [63.63835100446429, 25.9765873015873, 13.426551566527776, 1.0, -0.3011057058928569,
         -0.5183392237103176, -0.040476190476190554, 0.10795665922619072],
        [138.25833783830916, 48.424035493827155, 22.373325440729754, 1.0, -0.41794299755200853,
         -0.4529195203562474, 0.3097442680776013, -0.7574329140745564],
        [389.1747366624065, 111.34504439442371, 44.372648156819075, 1.0, -0.4680735234891154,
         -0.23164963886551904, 0.4962122235082303, -0.5458447451798173],
    ],
    "legendre_polynomial_p": [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        [-1.5, -1.0, -0.7, 0.0, 0.3, 0.5, 1.0, 2.5],
        [-6.1875, -1.0, 0.1925000000000002, -0.0, -0.3825, -0.4375, 1.0, 35.3125],
        [-192.37646484375, -1.0, -0.1501552937500002, -0.0, -0.22407298125, 0.22314453125, 1.0,
         12437.46337890625],
        [-1165.556167602539, -1.0, -0.2720599303515624, 0.0, 0.0637003817578125,
         -0.2678985595703125, 1.0, 252698.1746673584],
        [18151.005744695663, 1.0, -0.25664009407164173, 0.2255859375, -0.18100217969140728,
         0.23375296592712402, 1.0, 24145833.920181036],
    ],
}


def _close(got: np.ndarray, want: np.ndarray, ulps: float, eps: float) -> None:
    """Within ``ulps`` rounding units of ``max(|want|, 1)``; infinities and NaN where they are."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    fin = np.isfinite(want)
    assert np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    err = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1.0)
    assert err.max(initial=0.0) <= ulps * eps, (err.max(), got, want)


@pytest.mark.parametrize("name", POLYS)
def test_polynomials_match_torch_values(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    want = np.array(POLY_EXPECTED[name])
    for dt, ulps, eps in ((pg.float64, 64, 2.0 ** -52), (pg.float32, 64, 2.0 ** -23)):
        x = pg.tensor(POLY_X, dtype=dt, device=device)
        got = np.stack([fn(x, n).cpu().numpy() for n in POLY_N])  # n as a Python number
        _close(got, want.astype(np.float32) if dt is pg.float32 else want, ulps, eps)
        # n as a tensor broadcast against x: one recurrence for every degree at once
        nt = pg.tensor(POLY_N, dtype=dt, device=device)[:, None]
        _close(fn(x, nt).cpu().numpy(), got, 0, eps)


@pytest.mark.parametrize("name", POLYS)
def test_polynomials_dtypes_and_degree_rules(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    xi = pg.tensor([0, 1, 2], device=device)
    # integer and bool inputs compute in the default dtype; the degree's dtype does not widen x
    assert fn(xi, 3).dtype is pg.float32
    assert fn(pg.tensor([True], device=device), 2).dtype is pg.float32
    assert fn(pg.tensor([0.5], device=device), pg.tensor(3.0, dtype=pg.float64)).dtype is pg.float32
    assert fn(pg.tensor([0.5], dtype=pg.float64, device=device), 3).dtype is pg.float64
    assert fn(0.25, pg.tensor([1.0, 2.0], device=device)).shape == (2,)
    x = pg.tensor([0.3, 2.0, -0.6], dtype=pg.float64, device=device)
    # the degree is truncated toward 0; negative, NaN and infinite degrees give 0
    assert np.array_equal(fn(x, 3.7).cpu().numpy(), fn(x, 3).cpu().numpy())
    assert np.array_equal(fn(x, -0.5).cpu().numpy(), fn(x, 0).cpu().numpy())
    for n in (-1, -7.5, math.nan, math.inf, -math.inf):
        assert np.array_equal(fn(x, n).cpu().numpy(), np.zeros(3))
    nan = fn(pg.tensor([math.nan], dtype=pg.float64, device=device), 4).cpu().numpy()
    assert np.isnan(nan).all()
    assert fn(pg.tensor([], device=device), 5).shape == (0,)
    # PyTorch defines no derivative: the result does not require grad
    assert not fn(x.requires_grad_(), 3).requires_grad


def test_chebyshev_high_degree_uses_closed_forms(device: str) -> None:
    # degree 10^6 inside (-1, 1) and at +-1: the trigonometric and edge forms answer, and the
    # recurrence only runs to the degrees that need it (here none), not to 10^6
    x = pg.tensor([0.3, -0.9, 1.0, -1.0], dtype=pg.float64, device=device)
    n = 10 ** 6
    t = pg.special.chebyshev_polynomial_t(x, n).cpu().numpy()
    u = pg.special.chebyshev_polynomial_u(x, n).cpu().numpy()
    theta = np.arccos([0.3, -0.9])
    # the phase n * acos(x) carries n units of rounding of acos(x)
    np.testing.assert_allclose(t[:2], np.cos(n * theta), atol=1e-8)
    np.testing.assert_allclose(u[:2], np.sin((n + 1) * theta) / np.sin(theta), atol=1e-8)
    assert t[2:].tolist() == [1.0, 1.0] and u[2:].tolist() == [n + 1.0, n + 1.0]


@pytest.mark.parametrize("name", POLYS)
def test_polynomials_errors(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    with pytest.raises(TypeError, match="at least one of 'x' and 'n'"):
        fn(0.5, 3)
    for dt in (pg.float16, pg.bfloat16):
        try:
            x = pg.tensor([0.5], dtype=dt, device=device)
        except pg.errors.DTypeError:  # a device without the dtype (PoCL has no cl_khr_fp16)
            continue
        with pytest.raises(NotImplementedError, match=f'"{name}" not implemented for'):
            fn(x, 3)


def _close_rows(got: np.ndarray, want: np.ndarray, ulps: float, eps: float) -> None:
    """Within ``ulps`` rounding units of each row's largest finite ``|want|``: near its zeros a
    polynomial of high degree cancels, and the error of any evaluation is a fraction of the size
    of its terms, not of the (small) value."""
    want = np.asarray(want, dtype=np.float64)
    fin = np.where(np.isfinite(want), np.abs(want), 0.0)
    scale = np.maximum(fin.max(axis=-1, keepdims=True), 1.0)
    _close(np.asarray(got, dtype=np.float64) / scale, want / scale, ulps, eps)


@pytest.mark.parametrize("name", POLYS)
def test_polynomials_match_torch_densely(device: str, name: str) -> None:
    torch = pytest.importorskip("torch")
    inside = np.concatenate([np.linspace(-1.3, 1.3, 521), [0.999999, -0.999999]])
    n = np.arange(0, 21, dtype=np.float64)[:, None]
    for x, per_row in ((inside, True), (np.array([-30.0, -4.0, 4.0, 30.0, math.inf, -math.inf]),
                                        False)):
        for dt, ulps, eps in ((np.float64, 16, 2.0 ** -52), (np.float32, 16, 2.0 ** -23)):
            want = getattr(torch.special, name)(torch.tensor(x.astype(dt)),
                                                torch.tensor(n.astype(dt))).numpy()
            got = getattr(pg.special, name)(pg.tensor(x.astype(dt), device=device),
                                            pg.tensor(n.astype(dt), device=device)).cpu().numpy()
            if per_row:
                _close_rows(got, want, ulps, eps)
            else:  # outside the zeros' interval nothing cancels: relative to each value
                _close(got, want, 64, eps)


UNARY_X = [-30.0, -26.5, -10.0, -5.0, -1.5, -1.0, -0.5, -0.125, 0.0, 0.25, 1.0, 2.5, 6.0, 9.0, 15.0,
           16.0, 40.0, 100.0, 100000.0, math.inf, -math.inf, math.nan]
# PyTorch 2.13's values (float64) at UNARY_X
UNARY_EXPECTED = {
    "erfcx": [
        math.inf, 1.924553162418569e+305, 5.376234283632271e+43, 144009798674.66104,
        18.653886256262734, 5.008980080762283, 1.952360489182557, 1.1582735720912207, 1.0,
        0.770346547730997, 0.427583576155807, 0.2108063640611436, 0.09277656780053836,
        0.06230772403777468, 0.03752960638850577, 0.03519337782493084, 0.014100335983377815,
        0.005641613782989433, 5.6418958351954685e-06, 0.0, math.inf, math.nan],
    "log_ndtr": [
        -454.32124395634327, -355.32250222635605, -53.23128515051248, -15.064998393988727,
        -2.7059444008238898, -1.841021645009264, -1.1759117615936185, -0.7979261427530242,
        -0.6931471805599453, -0.5129840754094305, -0.17275377902344985, -0.006229025485860001,
        -9.865876455243713e-10, -1.1285884059538295e-19, -3.6709661993127206e-51,
        -6.388754400537975e-58, -0.0, -0.0, -0.0, -0.0, -math.inf, math.nan],
    "i0e": [
        0.0731459464822373, 0.07787103666050893, 0.1278333371634286, 0.18354081260932834,
        0.36743360905415834, 0.46575960759364043, 0.6450352704491501, 0.885947524030331, 1.0,
        0.7910171621397194, 0.46575960759364043, 0.27004644161220276, 0.16665743263981656,
        0.134959524581723, 0.1038995314488227, 0.10054412736125203, 0.06327827987523532,
        0.03994437929909668, 0.0012615678379767766, 0.0, 0.0, math.nan],
    "i1e": [
        -0.07191633059864755, -0.0763873542440351, -0.1212626813844555, -0.16397226694454234,
        -0.21903938742092566, -0.2079104153497085, -0.15642080318487173, -0.05526385324160323, 0.0,
        0.09811262869736825, 0.2079104153497085, 0.20658464953126654, 0.1520514593085058,
        0.1272249839358912, 0.10037417504516664, 0.09734961475646808, 0.06248222907444206,
        0.03974415302513025, 0.001261561530121817, 0.0, -0.0, math.nan],
    "spherical_bessel_j0": [
        -0.03293438746976206, 0.03695689219260064, -0.05440211108893698, -0.1917848549326277,
        0.6649966577360363, 0.8414709848078965, 0.958851077208406, 0.9973978670818215, 1.0,
        0.9896158370180917, 0.8414709848078965, 0.23938885764158263, -0.04656924969982098,
        0.04579094280463962, 0.04335252267714112, -0.01799395729156658, 0.01862782901198372,
        -0.005063656411097588, 3.574879797201651e-07, 0.0, 0.0, math.nan],
    "modified_bessel_i0": [
        781672297823.9775, 25129261558.849323, 2815.716628466254, 27.239871823604442,
        1.6467231897728907, 1.2660658777520082, 1.0634833707413236, 1.0039100663533544, 1.0,
        1.015686141223608, 1.2660658777520082, 3.289839144050123, 67.23440697647797,
        1093.5883545113745, 339649.3732979138, 893446.227920105, 1.48947747934199e+16,
        1.0737517071310738e+42, math.inf, math.nan, math.nan, math.nan],
    "modified_bessel_i1": [
        -768532038938.9569, -24650471945.756317, -2670.988303701255, -24.335642142450524,
        -0.9816664285779074, -0.5651591039924851, -0.25789430539089636, -0.06262214981123482, 0.0,
        0.12597910894546793, 0.5651591039924851, 2.5167162452886984, 61.34193677764021,
        1030.9147225169565, 328124.92197020643, 865059.4358548394, 1.4707396163259354e+16,
        1.0683693903381625e+42, math.inf, math.nan, math.nan, math.nan],
    "modified_bessel_k0": [
        math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.inf,
        1.5415067512483027, 0.4210244382407082, 0.062347553200366196, 0.0012439943280131234,
        5.0881312956459246e-05, 9.819536482396433e-08, 3.4994116639364986e-08,
        8.392861100099567e-19, 4.6566282291759025e-45, 0.0, 0.0, math.nan, math.nan],
    "modified_bessel_k1": [
        math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.inf,
        3.747025974440712, 0.6019072301972346, 0.07389081634774705, 0.001343919717735509,
        5.363701637945195e-05, 1.014172936976209e-07, 3.6071571175287797e-08, 8.497131954861038e-19,
        4.67985373563691e-45, 0.0, 0.0, math.nan, math.nan],
    "scaled_modified_bessel_k0": [
        math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.inf,
        1.9793338485985683, 1.1444630798068944, 0.7595486903280996, 0.5018631308621401,
        0.41229554923141803, 0.3210023535057762, 0.3109615880249408, 0.19755558495729816,
        0.1251756216591266, 0.003963322343474756, 0.0, math.nan, math.nan],
    "scaled_modified_bessel_k1": [
        math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.inf,
        4.811276588171025, 1.636153486263258, 0.9001744239078779, 0.5421759102771336,
        0.43462524534743463, 0.3315348949666291, 0.32053596811197343, 0.20000996725443346,
        0.12579995047957854, 0.003963342160036932, 0.0, math.nan, math.nan],
}

UNARY = list(UNARY_EXPECTED)
# PyTorch defines no derivative for these: their results never require grad
NO_DERIVATIVE = {"spherical_bessel_j0", "modified_bessel_i0", "modified_bessel_i1",
                 "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                 "scaled_modified_bessel_k1"}


def _rel_close(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    """Relative agreement, with infinities, zeros and NaN exactly where they are (subnormal
    values: relative to the smallest normal number, as a device may flush them)."""
    tiny = float(np.finfo(np.asarray(want).dtype).tiny)
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    exact = ~np.isfinite(want) | (want == 0)
    assert np.array_equal(got[exact & ~np.isnan(want)], want[exact & ~np.isnan(want)]), (got, want)
    err = np.abs(got[~exact] - want[~exact]) / np.maximum(np.abs(want[~exact]), tiny)
    assert err.max(initial=0.0) <= rtol, (err.max(), got, want)


@pytest.mark.parametrize("name", UNARY)
def test_unary_match_torch_values(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    want = np.array(UNARY_EXPECTED[name])
    # float64 within 1e-12 (PyTorch's own erfcx and log_ndtr are off by up to ~700 units of
    # rounding in the far tails, where portagrad's are within a few); float32 within a few
    # units of the float64 value rounded to float32 (the grid is exact in float32)
    got = fn(pg.tensor(UNARY_X, dtype=pg.float64, device=device)).cpu().numpy()
    _rel_close(got, want, 1e-12)
    got32 = fn(pg.tensor(UNARY_X, dtype=pg.float32, device=device))
    assert got32.dtype is pg.float32
    with np.errstate(over="ignore"):
        _rel_close(got32.cpu().numpy(), want.astype(np.float32), 8 * 2.0 ** -23)


@pytest.mark.parametrize("name", UNARY)
def test_unary_dtypes_errors_and_grad(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    assert fn(pg.tensor([1, 2], device=device)).dtype is pg.float32
    assert fn(pg.tensor([True], device=device)).dtype is pg.float32
    assert fn(pg.tensor([], device=device)).shape == (0,)
    with pytest.raises(TypeError, match="must be Tensor"):
        fn(0.5)
    for dt in (pg.float16, pg.bfloat16):
        try:
            x = pg.tensor([0.5, 2.0], dtype=dt, device=device)
        except pg.errors.DTypeError:  # a device without the dtype (PoCL has no cl_khr_fp16)
            continue
        if name in ("i0e", "i1e"):  # computed in float32 and rounded once, as PyTorch's kernel
            want = fn(x.float()).to(dt).float().cpu().numpy()
            assert np.array_equal(fn(x).float().cpu().numpy(), want)
        else:
            with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for'):
                fn(x)
    x = pg.tensor([-3.0, -0.5, 0.0, 0.7, 4.0, 20.0], dtype=pg.float64, device=device,
                  requires_grad=True)
    if name in NO_DERIVATIVE:  # nothing is recorded
        assert not fn(x).requires_grad
        return
    node = {"erfcx": "SpecialErfcxBackward0", "log_ndtr": "SpecialLogNdtrBackward0",
            "i0e": "SpecialI0EBackward0", "i1e": "SpecialI1EBackward0"}[name]
    assert type(fn(x).grad_fn).__name__ == node
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("name", UNARY)
def test_unary_match_torch_densely(device: str, name: str) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([-np.logspace(-8, np.log10(40.0), 400), [0.0, -0.0],
                        np.logspace(-8, 6, 500), [math.inf, -math.inf, math.nan]])
    x32 = x.astype(np.float32)
    for xs, dt, rtol in ((x, pg.float64, 1e-12), (x32, pg.float32, 8 * 2.0 ** -23)):
        # float32 against PyTorch's float64 value at the same points: PyTorch's float32 kernels
        # are themselves off by tens of units in the tails
        want = getattr(torch.special, name)(torch.tensor(xs.astype(np.float64))).numpy()
        if dt is pg.float32:
            with np.errstate(over="ignore"):
                want = want.astype(np.float32)
            # just below float32's overflow exp(x) overflows first in PyTorch's kernels as here
            own = getattr(torch.special, name)(torch.tensor(xs)).numpy()
            want = np.where(np.isinf(own), own, want)
        got = getattr(pg.special, name)(pg.tensor(xs, dtype=dt, device=device)).cpu().numpy()
        _rel_close(got, want, rtol)
        if name not in NO_DERIVATIVE and dt is pg.float64:
            fin = xs[np.isfinite(xs)]
            tx = torch.tensor(fin, requires_grad=True)
            ty = getattr(torch.special, name)(tx)
            ty.sum().backward()
            px = pg.tensor(fin, device=device, requires_grad=True)
            getattr(pg.special, name)(px).sum().backward()
            # the derivatives are differences of terms of size |y| (2|x| + 1) (erfcx's
            # 2 x y - 2/sqrt(pi), i0e's i1e - i0e ...), which cancel in the tails: the error is
            # measured against that size, for PyTorch's evaluation as for portagrad's
            want_g, got_g = tx.grad.numpy(), px.grad.cpu().numpy()
            big = ~np.isfinite(want_g)  # erfcx overflows below -26.6, and its derivative
            np.testing.assert_array_equal(got_g[big], want_g[big])
            want_g, got_g, y, fin = want_g[~big], got_g[~big], ty.detach().numpy()[~big], fin[~big]
            size = np.abs(want_g) + np.abs(y) * (2 * np.abs(fin) + 1)
            err = np.abs(got_g - want_g) / np.maximum(size, 1e-300)  # both 0 in log_ndtr's tail
            assert err.max() <= 1e-12, err.max()


ZETA_X = [1.0, 1.5, 2.0, 3.0, 7.0, 30.0, math.inf, math.nan, 0.5, -2.0]
ZETA_Q = [1.0, 0.25, 2.0, 10.5, 1000000.0, math.inf, 0.0, -1.0, -1.5, math.nan]
# PyTorch 2.13's zeta(x, q) (float64), a row per q in ZETA_Q, a column per x in ZETA_X
ZETA_EXPECTED = [
    [math.inf, 2.612375348685488, 1.6449340668482266, 1.202056903159594, 1.008349277381923,
     1.0000000009313275, 1.0, math.nan, math.nan, math.nan],
    [math.inf, 10.213055360466601, 17.197329154507113, 64.66386996876844, 16384.21345519957,
     1.152921504606847e+18, math.inf, math.nan, math.nan, math.nan],
    [math.inf, 1.6123753486854886, 0.6449340668482266, 0.2020569031595943, 0.008349277381922829,
     9.313274324196682e-10, math.nan, math.nan, math.nan, math.nan],
    [math.inf, 0.6322583908291095, 0.09991695605912673, 0.004987572123857584,
     1.6380954135592508e-07, 2.4785819851266222e-31, math.nan, math.nan, math.nan, math.nan],
    [math.inf, 0.002000000500000125, 1.0000005000001667e-06, 5.000005000002501e-13,
     1.6666716666725e-37, 3.4483258623189654e-176, math.nan, math.nan, math.nan, math.nan],
    [math.inf, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan,
     math.nan],
    [math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.nan,
     math.nan],
    [math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.nan,
     math.nan],
    [math.inf, math.nan, 9.379246644989124, 0.11810202582086413, 0.001830564038275255,
     2147483648.0000105, math.inf, math.nan, math.nan, math.nan],
    [math.inf, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan,
     math.nan],
]


def test_zeta_matches_torch_values(device: str) -> None:
    want = np.array(ZETA_EXPECTED)
    x = pg.tensor(ZETA_X, dtype=pg.float64, device=device)
    q = pg.tensor(ZETA_Q, dtype=pg.float64, device=device)[:, None]
    _rel_close(pg.special.zeta(x, q).cpu().numpy(), want, 1e-13)
    # one q at a time (a Python number): the host-read shift depends on the smallest q
    rows = [pg.special.zeta(x, qv).cpu().numpy() for qv in ZETA_Q]
    _rel_close(np.stack(rows), want, 1e-13)
    got32 = pg.special.zeta(x.float(), q.float())
    assert got32.dtype is pg.float32
    with np.errstate(over="ignore"):
        want32 = want.astype(np.float32)
    want32[4, 5] = 0.0  # 3.4e-176 is 0 in float32 (the grid's one underflow)
    # q = -1.5 (row 8): the terms +-(1/2)^-x cancel exactly in the sum but leave float32's
    # rounding of the partial sums, far above the small result (PyTorch's kernel sums in double)
    keep = np.arange(len(ZETA_Q)) != ZETA_Q.index(-1.5)
    _rel_close(got32.cpu().numpy()[keep], want32[keep], 8 * 2.0 ** -23)


def test_zeta_dtypes_errors_and_grad(device: str) -> None:
    zeta = pg.special.zeta
    assert zeta(pg.tensor([2, 3], device=device), 1).dtype is pg.float32
    assert zeta(2.0, pg.tensor([1, 2], device=device)).dtype is pg.float32
    assert zeta(pg.tensor([2.0], dtype=pg.float64, device=device), 1.0).dtype is pg.float64
    assert zeta(pg.tensor([], device=device), 1.0).shape == (0,)
    with pytest.raises(TypeError, match="at least one of 'input' and 'other'"):
        zeta(2.0, 1.0)
    try:
        half = pg.tensor([2.0], dtype=pg.float16, device=device)
    except pg.errors.DTypeError:  # PoCL has no cl_khr_fp16
        half = None
    if half is not None:
        with pytest.raises(NotImplementedError, match='"zeta" not implemented for'):
            zeta(half, 1.0)
    # PyTorch differentiates in q only: -x zeta(x + 1, q)
    x = pg.tensor([2.0, 3.5, 1.5], dtype=pg.float64, device=device)
    q = pg.tensor([0.5, 2.0, 10.0], dtype=pg.float64, device=device, requires_grad=True)
    y = zeta(x, q)
    assert type(y.grad_fn).__name__ == "SpecialZetaBackward0"
    y.sum().backward()
    np.testing.assert_allclose(q.grad.cpu().numpy(),
                               [-16.828796644234316, -0.1914762876650899, -0.03409304879180181],
                               rtol=1e-10)
    assert gradcheck(lambda t: zeta(x, t), (q.detach().requires_grad_(),))
    xg = x.detach().requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        zeta(xg, 1.5).sum().backward()


def test_zeta_matches_torch_densely(device: str) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([[1.0000001, 1.001, 1.01], np.linspace(1.05, 60.0, 120)])
    q = np.concatenate([np.logspace(-6, 8, 80), [-0.5, -2.5, -7.25]])[:, None]
    for dt, rtol in ((np.float64, 8 * 2.0 ** -52), (np.float32, 8 * 2.0 ** -23)):
        want = torch.special.zeta(torch.tensor(x.astype(dt)), torch.tensor(q.astype(dt))).numpy()
        got = pg.special.zeta(pg.tensor(x.astype(dt), device=device),
                              pg.tensor(q.astype(dt), device=device)).cpu().numpy()
        ok = np.abs(want) > (1e-30 if dt is np.float32 else 1e-300)  # subnormal sums aside
        if dt is np.float32:
            # at negative q the terms alternate in sign for odd x and cancel to far below
            # float32's rounding of the largest term (PyTorch's CPU kernel sums in double)
            ok &= (q >= 0) | (np.round(x) == x)
        _rel_close(got[ok], want[ok], rtol)


# J_0, J_1 at UNARY_X[:-3] (its finite points), Y_0, Y_1 at its positive points, from mpmath
# at 40 digits: PyTorch 2.13's own kernels are off by up to ~1e-6 near x = 5 in float64
BESSEL_EXPECTED = {
    "bessel_j0": [
        -0.08636798358104021, 0.1298776261133854, -0.24593576445134835, -0.1775967713143383,
        0.5118276717359181, 0.7651976865579666, 0.9384698072408129, 0.9960975630419852, 1.0,
        0.9844359292958527, 0.7651976865579666, -0.048383776468198, 0.15064525725099692,
        -0.09033361118287614, -0.014224472826780772, -0.1748990739836292, 0.00736689058423729,
        0.019985850304223122, -0.0017192011162359723],
    "bessel_j1": [
        0.11875106261662294, -0.08702780753733148, -0.04347274616886144, 0.32757913759146523,
        -0.5579365079100996, -0.4400505857449335, -0.2422684576748739, -0.062378009134494684, 0.0,
        0.12402597732272692, 0.4400505857449335, 0.49709410246427405, -0.27668385812756563,
        0.24531178657332528, 0.20510403861352275, 0.09039717566130419, 0.126038318037585,
        -0.07714535201411216, 0.0018467575628825677],
    "bessel_y0": [
        -0.9315730249300587, 0.08825696421567696, 0.4980703596152319, -0.28819468398157916,
        0.24993669828502468, 0.20546429603891828, 0.0958109970807124, 0.12593641705826092,
        -0.07724431336508315, 0.001846766158865064],
    "bessel_y1": [
        -2.7041052293152825, -0.7812128213002887, 0.1459181379667858, -0.17501034430039825,
        0.10431457519671589, 0.02107362803687351, 0.17797516893941687, -0.005793505821549633,
        -0.020372312002759792, 0.0017192103500882562],
}


def _envelope(x: np.ndarray) -> np.ndarray:
    """The size of J and Y around x: their values cancel to 0 at their zeros, so errors are
    measured against ``min(1, sqrt(2 / (pi |x|)))``."""
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, np.sqrt(2.0 / np.pi / np.abs(x)))


BESSEL_JY = list(BESSEL_EXPECTED)


@pytest.mark.parametrize("name", BESSEL_JY)
def test_bessel_jy_values(device: str, name: str) -> None:
    fn = getattr(pg.special, name)
    x = np.array([v for v in UNARY_X[:-3] if "_j" in name or v > 0])
    want = np.array(BESSEL_EXPECTED[name])
    for dt, ulps, eps in ((pg.float64, 16, 2.0 ** -52), (pg.float32, 16, 2.0 ** -23)):
        got = fn(pg.tensor(x, dtype=dt, device=device)).cpu().numpy().astype(np.float64)
        # Y is unbounded near 0: there relative to its value
        scale = np.maximum(_envelope(x), np.abs(want))
        assert (np.abs(got - want) / scale).max() <= ulps * eps
        assert fn(pg.tensor(x, dtype=dt, device=device)).dtype is dt
    special = fn(pg.tensor([math.inf, -math.inf, math.nan], dtype=pg.float64, device=device))
    assert np.isnan(special.cpu().numpy()).all()  # PyTorch's NaN at +-inf (the limit is 0)
    if "_y" in name:  # the pole at 0 (either sign of zero), NaN below
        edge = fn(pg.tensor([0.0, -0.0, -1.0], dtype=pg.float64, device=device)).cpu().numpy()
        assert edge[0] == edge[1] == -math.inf and math.isnan(edge[2])
    assert fn(pg.tensor([1, 2], device=device)).dtype is pg.float32
    x = pg.tensor([0.5, 30.0], dtype=pg.float64, device=device, requires_grad=True)
    assert not fn(x).requires_grad  # PyTorch defines no derivative
    for dt in (pg.float16, pg.bfloat16):
        try:
            h = pg.tensor([0.5], dtype=dt, device=device)
        except pg.errors.DTypeError:  # PoCL has no cl_khr_fp16
            continue
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for'):
            fn(h)


@pytest.mark.parametrize("name", BESSEL_JY)
def test_bessel_jy_matches_torch_densely(device: str, name: str) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-40.0, 40.0, 1601), np.logspace(-8, 5, 200)])
    if "_y" in name:
        x = x[x > 0]
    for dt in (np.float64, np.float32):
        xs = x.astype(dt)
        # PyTorch's kernels are accurate to ~1e-6 of the envelope only (measured against mpmath:
        # up to 5e9 units of float64 rounding near x = 5), portagrad's to ~10 units
        want = getattr(torch.special, name)(torch.tensor(xs.astype(np.float64))).numpy()
        got = getattr(pg.special, name)(pg.tensor(xs, device=device)).cpu().numpy()
        scale = np.maximum(_envelope(x), np.abs(want))
        assert (np.abs(got.astype(np.float64) - want) / scale).max() <= 4e-6


# Ai at these points (float64), from mpmath at 40 digits: the branch limits +-2.09 with their
# float64 neighbours, the first zero -2.338..., and both tails. PyTorch 2.13's kernel agrees to a
# few units of rounding above -2.09 only: below, it drops the leading 1 of Cephes' monic
# denominators AFD and AGD and is off by up to ~6e-6 (of |x|^-1/4) just below -2.09
AIRY_X = [-30.0, -10.0, -5.0, -2.5, -2.338107410459767, -2.0900000000000003, -2.09,
          -2.0899999999999994, -1.0, -0.125, 0.0, 0.25, 1.0, 2.0899999999999994, 2.09,
          2.0900000000000003, 2.5, 5.0, 8.5, 25.0, 100.0]
AIRY_EXPECTED = [
    -0.08796818845684216, 0.04024123848644319, 0.35076100902411433, -0.11232506769296609,
    2.743319340666283e-17, 0.17005055173202974, 0.17005055173203004, 0.17005055173203032,
    0.5355608832923521, 0.38725965240839577, 0.3550280538878172, 0.2911639543485452,
    0.13529241631288141, 0.0304203183631984, 0.03042031836319838, 0.03042031836319836,
    0.01572592338047049, 0.00010834442813607442, 1.0997009755195506e-08, 8.116026824691387e-38,
    2.6344821520881846e-291]
# PyTorch 2.13's values where the result is set by rounding rather than by the function: the
# phase 2/3 |x|^3/2 rounded to the working precision (so sin and cos of that number; in float32
# at -1e10 it is off by ~1e8), underflow, NaN at +-inf and where |x|^3/2 overflows
AIRY_EDGE_X = [-1e12, -1e10, -1e3, 25.77, 103.89, 103.9, 1e3, -1e300, math.inf, -math.inf,
               math.nan]
AIRY_EDGE_EXPECTED = [-0.0005554674547258886, 3.640010458529e-05, 0.05597189577328696,
                      1.6642658723814637e-39, 2.2869371930472944e-308, 0.0, 0.0, math.nan,
                      math.nan, math.nan, math.nan]
AIRY_EDGE32_X = [-1e10, -1e3, -3e25, -5e25, 25.77, 25.78]
AIRY_EDGE32_EXPECTED = [0.0014745231019333005, 0.05611339583992958, 2.4081901983663556e-07,
                        math.nan, 1.6642633315430836e-39, 0.0]


def _airy_err(x: np.ndarray, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The error relative to Ai's size: ``|x|^-1/4 / sqrt(pi)`` (at most 1/sqrt(pi)) where it
    oscillates (x < 0; its values cancel to 0 at its zeros), its value where it decays; and
    relative to ``zeta = 2/3 |x|^3/2`` beyond 1, since the asymptotic forms take the sine or the
    exponential of ``zeta`` rounded, which moves them by up to ``zeta`` units of rounding."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        size = np.where(x < 0, np.minimum(1.0, np.abs(x) ** -0.25) / math.sqrt(math.pi),
                        np.abs(want))
    zeta = np.maximum(1.0, np.abs(x) ** 1.5 * (2.0 / 3.0))
    return np.abs(np.asarray(got, dtype=np.float64) - want) / (size * zeta)


def test_airy_ai_values(device: str) -> None:
    x = np.array(AIRY_X)
    want = np.array(AIRY_EXPECTED)
    for dt, eps in ((pg.float64, 2.0 ** -52), (pg.float32, 2.0 ** -23)):
        got = pg.special.airy_ai(pg.tensor(x, dtype=dt, device=device))
        assert got.dtype is dt
        got = got.cpu().numpy()
        if dt is pg.float32:  # Ai(100) = 2.6e-291 is 0 in float32
            assert got[-1] == 0.0
            got, x, want = got[:-1], x[:-1], want[:-1]
        assert _airy_err(x, got, want).max() <= 8 * eps
    # -0.0 is 0; a 0-d tensor and an empty one keep their shapes
    zero = pg.special.airy_ai(pg.tensor(-0.0, dtype=pg.float64, device=device))
    assert zero.shape == () and zero.item() == 0.3550280538878172
    assert pg.special.airy_ai(pg.tensor([], device=device)).shape == (0,)
    assert pg.special.airy_ai(pg.zeros(2, 0, 3, device=device)).shape == (2, 0, 3)


def test_airy_ai_edges_match_torch_values(device: str) -> None:
    for xs, ws, dt, eps in ((AIRY_EDGE_X, AIRY_EDGE_EXPECTED, pg.float64, 2.0 ** -52),
                            (AIRY_EDGE32_X, AIRY_EDGE32_EXPECTED, pg.float32, 2.0 ** -23)):
        x, want = np.array(xs), np.array(ws)
        got = pg.special.airy_ai(pg.tensor(x, dtype=dt, device=device)).cpu().numpy()
        if dt is pg.float32:
            want = want.astype(np.float32)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        # 0 exactly where it underflows; subnormal results against the smallest normal number
        assert np.array_equal(got == 0, want == 0), (got, want)
        ok = ~np.isnan(want) & (want != 0)
        tiny = float(np.finfo(got.dtype).tiny)
        err = _airy_err(x[ok], got[ok], want[ok].astype(np.float64))
        err = np.minimum(err, np.abs(got[ok] - want[ok]) / tiny)
        assert err.max() <= 16 * eps, (err, got, want)


def test_airy_ai_dtypes_errors_and_no_grad(device: str) -> None:
    airy_ai = pg.special.airy_ai
    # integer and bool inputs compute in the default dtype, as PyTorch's
    ints = airy_ai(pg.tensor([-3, 0, 2], device=device))
    assert ints.dtype is pg.float32
    np.testing.assert_allclose(ints.cpu().numpy(),
                               airy_ai(pg.tensor([-3.0, 0.0, 2.0], device=device)).cpu().numpy())
    assert airy_ai(pg.tensor([True], device=device)).dtype is pg.float32
    with pytest.raises(TypeError, match=r"special_airy_ai\(\): argument 'x' \(position 1\) must "
                                        r"be Tensor, not float"):
        airy_ai(0.5)
    for dt in (pg.float16, pg.bfloat16):
        try:
            h = pg.tensor([0.5], dtype=dt, device=device)
        except pg.errors.DTypeError:  # PoCL has no cl_khr_fp16
            continue
        with pytest.raises(NotImplementedError, match='"airy_ai_cpu" not implemented for'):
            airy_ai(h)
    # PyTorch defines no derivative: nothing is recorded, and backward finds nothing to follow
    x = pg.tensor([-3.0, 0.5, 4.0], dtype=pg.float64, device=device, requires_grad=True)
    y = airy_ai(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_airy_ai_matches_torch_densely(device: str) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-40.0, 40.0, 4001), -np.logspace(-8, 8, 300),
                        np.logspace(-8, 3, 300), [0.0, -0.0, 2.09, -2.09, 103.892, 103.9]])
    for dt, eps in ((np.float64, 2.0 ** -52), (np.float32, 2.0 ** -23)):
        xs = x.astype(dt)
        want = torch.special.airy_ai(torch.tensor(xs)).numpy()
        got = pg.special.airy_ai(pg.tensor(xs, device=device)).cpu().numpy()
        assert got.dtype == dt
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.array_equal(got == 0, want == 0)
        ok = ~np.isnan(want) & (want != 0)
        xo = xs[ok].astype(np.float64)
        err = _airy_err(xo, got[ok], want[ok].astype(np.float64))
        tiny = float(np.finfo(dt).tiny)  # float32's subnormal tail near x = 25.8
        err = np.minimum(err, np.abs(got[ok] - want[ok]).astype(np.float64) / tiny)
        # the same algorithm in the same order of operations: a few units of rounding apart
        # (PyTorch's kernel is compiled with fused multiply-adds), except below -2.09, where
        # PyTorch's rational functions lack their leading term (see AIRY_EXPECTED)
        assert err[xo >= -2.09].max() <= 16 * eps, err[xo >= -2.09].max()
        assert err[xo < -2.09].max() <= 1e-5, err[xo < -2.09].max()


def test_airy_ai_matches_mpmath_densely(device: str) -> None:
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.linspace(-12.0, 12.0, 481), [-2.09, 2.09]])
    with mpmath.workdps(40):
        want = np.array([float(mpmath.airyai(mpmath.mpf(float(v)))) for v in x])
    got = pg.special.airy_ai(pg.tensor(x, dtype=pg.float64, device=device)).cpu().numpy()
    # Cephes' accuracy: the rounding of the series' two sums, which cancel as x nears 2.09
    assert _airy_err(x, got, want).max() <= 64 * 2.0 ** -52


def test_ndtri_keeps_its_tails(device: str) -> None:
    """ndtri was sqrt(2) erfinv(2p - 1): 2p - 1 rounds to -1 for tiny p (ndtri(1e-300) was
    -inf); PyTorch 2.13's values and gradients, written out."""
    try:
        p = pg.tensor([0.0, 1e-300, 1e-20, 1e-8, 1e-4, 0.1, 0.5, 1 - 1e-8, 1.0, 1.5],
                      dtype=pg.float64, device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no float64")
    want = [-math.inf, -37.0470963, -9.26234009, -5.612001244, -3.719016485, -1.281551566, 0.0,
            5.612001243, math.inf]
    got = pg.special.ndtri(p).tolist()
    for g, w in zip(got[:9], want, strict=True):
        assert (g == w) if math.isinf(w) or w == 0 else abs(g - w) < 1e-8 * abs(w), (got, want)
    assert math.isnan(got[9])
    x = pg.tensor([1e-10, 1e-4, 0.3, 1 - 1e-6], dtype=pg.float64, device=device,
                  requires_grad=True)
    pg.special.ndtri(x).sum().backward()
    for g, w in zip(x.grad.tolist(), [1535723698.19638, 2526.22239842514, 2.876103659264292,
                                      202088.270383555], strict=True):
        assert abs(g - w) < 1e-8 * w
