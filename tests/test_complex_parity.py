"""Complex tensors as PyTorch 2.13 computes them: ``Tensor.H``, ``nan_to_num``,
complex ``linspace``/``logspace``, the complex inverse trigonometric and hyperbolic functions at
their branch cuts, infinities and NaNs (and ``log2``/``log10``/``log1p``/``sinh``/``cosh``),
``sinc``'s and ``lerp``'s complex gradients, complex ``normal_``/``uniform_``, complex values
written into real tensors, and ``addmm``'s complex scalars.

Expected values are PyTorch 2.13's (CPU), written out: the tests run without PyTorch.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from complex_support import need_complex

inf, nan = math.inf, math.nan


def _parts_match(got: complex, want: complex, tol: float) -> bool:
    """Each part: NaN for NaN, the same infinity, the same signed zero, else within ``tol`` of
    the result's magnitude (a part far smaller than the other is judged at the result's scale)."""
    scale = abs(want) if math.isfinite(abs(want)) else 0.0
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(w) or math.isinf(w):
            if not (math.isnan(g) if math.isnan(w) else g == w):
                return False
        elif w == 0 and g == 0:
            if math.copysign(1, g) != math.copysign(1, w):
                return False
        elif not abs(g - w) <= tol * max(scale, abs(w)):
            return False
    return True


# ----------------------------------------------------------------------------------------- H
def test_H_conjugate_transpose(device: str) -> None:
    need_complex(device)
    x = pg.tensor([[1 + 2j, 3j], [4.0, 5.0]], device=device)
    assert x.H.tolist() == [[1 - 2j, 4 + 0j], [-3j, 5 + 0j]]
    assert pg.tensor([[1.0, 2.0]], device=device).H.tolist() == [[1.0], [2.0]]
    h = pg.tensor([[1 + 2j, 3j]], device=device, requires_grad=True)
    (h.H * pg.tensor([[2j], [1.0]], device=device)).real.sum().backward()
    assert h.grad.tolist() == [[2j, 1 + 0j]]  # PyTorch's (conjugated through H)
    with pytest.raises(RuntimeError, match=r"^tensor.H is only supported on matrices \(2-D "
                       r"tensors\). Got 3-D tensor. For batches of matrices, consider using "
                       r"tensor.mH$"):
        _ = pg.zeros(2, 2, 2, device=device).H
    with pytest.raises(RuntimeError, match=r"Got 1-D tensor.$"):
        _ = pg.zeros(3, device=device).H
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert pg.tensor(1 + 2j, device=device).H.item() == 1 - 2j


# -------------------------------------------------------------------------------- nan_to_num
def test_nan_to_num_complex(device: str) -> None:
    need_complex(device)
    z = pg.tensor([complex(inf, 1), complex(1, nan), complex(-inf, nan)], device=device)
    f32 = 3.4028234663852886e38
    assert pg.nan_to_num(z).tolist() == [complex(f32, 1), 1 + 0j, complex(-f32, 0)]
    assert pg.nan_to_num(z, nan=2.0, posinf=5.0, neginf=-7.0).tolist() == [5 + 1j, 1 + 2j, -7 + 2j]
    z128 = z.to(pg.complex128)
    big = 1.7976931348623157e308
    assert pg.nan_to_num(z128).tolist() == [complex(big, 1), 1 + 0j, complex(-big, 0)]
    out = pg.empty(3, dtype=pg.complex64, device=device)
    assert pg.nan_to_num(z, out=out) is out and out.tolist() == pg.nan_to_num(z).tolist()
    with pytest.raises(RuntimeError, match="nan_to_num: dtype of out: Float should be same as "
                       "input: ComplexFloat"):
        pg.nan_to_num(z, out=pg.empty(3, device=device))
    w = z.clone()
    assert w.nan_to_num_() is w and w.tolist() == pg.nan_to_num(z).tolist()
    with pytest.raises(RuntimeError, match="nan_to_num does not support automatic "
                       "differentiation for outputs with complex dtype."):
        pg.nan_to_num(z.clone().requires_grad_())
    with pg.no_grad():
        pg.nan_to_num(z.clone().requires_grad_())
    with pytest.raises(TypeError, match="argument 'nan' must be float, not complex"):
        pg.nan_to_num(z, nan=1j)
    # real tensors: out= too
    x = pg.tensor([1.0, nan, inf], device=device)
    r = pg.empty(3, device=device)
    assert pg.nan_to_num(x, posinf=9.0, out=r) is r and r.tolist() == [1.0, 0.0, 9.0]


# ---------------------------------------------------------------------- linspace / logspace
def test_linspace_logspace_complex(device: str) -> None:
    need_complex(device)
    a = pg.linspace(0, 1 + 1j, 3, device=device)
    assert a.dtype is pg.complex64 and a.tolist() == [0j, 0.5 + 0.5j, 1 + 1j]
    b = pg.linspace(0j, 1, 3, device=device)
    assert b.dtype is pg.complex64 and b.tolist() == [0j, 0.5 + 0j, 1 + 0j]
    # complex64 arithmetic, each half from its endpoint (PyTorch's values, bit for bit)
    assert pg.linspace(0.1 + 0.7j, 3.3 - 1.9j, 7, device=device).tolist() == [
        (0.10000000149011612 + 0.699999988079071j), (0.6333333849906921 + 0.2666666805744171j),
        (1.1666667461395264 - 0.16666662693023682j), (1.6999998092651367 - 0.6000000238418579j),
        (2.233333110809326 - 1.0333333015441895j), (2.7666666507720947 - 1.4666666984558105j),
        (3.299999952316284 - 1.899999976158142j)]
    assert pg.linspace(1 + 2j, 3j, 1, device=device).tolist() == [1 + 2j]
    assert pg.linspace(1 + 2j, 3j, 0, device=device).shape == (0,)
    assert pg.linspace(0, 1 + 1j, 3, dtype=pg.complex128, device=device).dtype is pg.complex128
    with pytest.raises(RuntimeError, match=r"torch.linspace\(\): inferred dtype "
                       r"c10::complex<float> can't be safely cast to passed dtype Float"):
        pg.linspace(0, 1 + 1j, 3, dtype=pg.float32)
    prev = pg.get_default_dtype()
    pg.set_default_dtype(pg.float64)
    try:
        assert pg.linspace(0, 1 + 1j, 3).dtype is pg.complex128
        with pytest.raises(RuntimeError, match="c10::complex<double> can't be safely cast to "
                           "passed dtype Long"):
            pg.logspace(0, 1 + 1j, 3, dtype=pg.int64)
    finally:
        pg.set_default_dtype(prev)
    got = pg.logspace(0, 1 + 1j, 3, device=device)
    assert got.dtype is pg.complex64
    np.testing.assert_allclose(got.cpu().numpy(), [1, 1.288018822669983 + 2.888080358505249j,
                                                   -6.682015419006348 + 7.439803123474121j],
                               rtol=1e-6)
    np.testing.assert_allclose(
        pg.logspace(0, 1 + 1j, 3, base=2, dtype=pg.complex128, device=device).cpu().numpy(),
        [1, 1.3301274004259787 + 0.48037599714809626j, 1.5384778027279442 + 1.2779225526272695j],
        rtol=1e-14)


# --------------------------------------------------- complex elementary functions (PyTorch's)
# (function, z, PyTorch 2.13's f(z)): branch cuts with both signed zeros, the branch points,
# tiny and huge |z| (accuracy), infinities and NaNs
C64 = [
    ("asin", (2.0, 0.0), (1.5707963705062866, 1.316957950592041)),
    ("asin", (2.0, -0.0), (1.5707963705062866, -1.316957950592041)),
    ("asin", (-2.0, 0.0), (-1.5707963705062866, 1.316957950592041)),
    ("asin", (1e-08, 1e-08), (9.99999993922529e-09, 9.99999993922529e-09)),
    ("asin", (0.5, 0.5), (0.4522784352302551, 0.5306375622749329)),
    ("asin", (inf, 1.0), (1.5707963705062866, inf)),
    ("asin", (1.0, inf), (0.0, inf)),
    ("asin", (nan, 0.0), (nan, nan)),
    ("asin", (inf, nan), (nan, inf)),
    ("asin", (1e+30, 1e+30), (0.7853981852531433, 70.11727142333984)),
    ("acos", (2.0, 0.0), (0.0, -1.316957950592041)),
    ("acos", (2.0, -0.0), (0.0, 1.316957950592041)),
    ("acos", (-2.0, 0.0), (3.1415927410125732, -1.316957950592041)),
    ("acos", (-2.0, -0.0), (3.1415927410125732, 1.316957950592041)),
    ("acos", (1e-08, 1e-08), (1.5707963705062866, -9.99999993922529e-09)),
    ("acos", (0.5, -0.5), (1.1185178756713867, 0.5306375622749329)),
    ("acos", (-inf, 1.0), (3.1415927410125732, -inf)),
    ("acos", (inf, inf), (0.7853981852531433, -inf)),
    ("acos", (0.0, nan), (1.5707963705062866, nan)),
    ("atan", (0.0, 1.0), (0.0, inf)),
    ("atan", (-0.0, -1.0), (-0.0, -inf)),
    ("atan", (0.0, 2.0), (1.5707963705062866, 0.5493061542510986)),
    ("atan", (-0.0, 2.0), (-1.5707963705062866, 0.5493061542510986)),
    ("atan", (0.0, -2.0), (1.5707963705062866, -0.5493061542510986)),
    ("atan", (1e-08, 1e-08), (9.99999993922529e-09, 9.99999993922529e-09)),
    ("atan", (1e-20, 1e-20), (9.999999682655225e-21, 9.999999682655225e-21)),
    ("atan", (1.0, 1e-10), (0.7853981852531433, 5.00000006675716e-11)),
    ("atan", (inf, nan), (1.5707963705062866, 0.0)),
    ("atan", (nan, inf), (nan, 0.0)),
    ("atan", (1e+20, 1e+20), (1.5707963705062866, 4.999999841327613e-21)),
    ("asinh", (0.0, 2.0), (1.316957950592041, 1.5707963705062866)),
    ("asinh", (-0.0, 2.0), (-1.316957950592041, 1.5707963705062866)),
    ("asinh", (0.0, -2.0), (1.316957950592041, -1.5707963705062866)),
    ("asinh", (1e-08, 1e-08), (9.99999993922529e-09, 9.99999993922529e-09)),
    ("asinh", (0.5, 0.5), (0.5306375622749329, 0.4522784352302551)),
    ("asinh", (1e+20, 1e+20), (47.09142303466797, 0.7853981852531433)),
    ("asinh", (inf, inf), (inf, 0.7853981852531433)),
    ("asinh", (nan, 0.0), (nan, 0.0)),
    ("asinh", (-inf, 1.0), (-inf, 0.0)),
    ("acosh", (-1.0, -0.0), (0.0, -3.1415927410125732)),
    ("acosh", (-1.0, 0.0), (0.0, 3.1415927410125732)),
    ("acosh", (0.5, 0.0), (0.0, 1.0471975803375244)),
    ("acosh", (0.5, -0.0), (0.0, -1.0471975803375244)),
    ("acosh", (-2.0, 0.0), (1.316957950592041, 3.1415927410125732)),
    ("acosh", (1e-08, 1e-08), (9.99999993922529e-09, 1.5707963705062866)),
    ("acosh", (0.0, nan), (nan, 1.5707963705062866)),
    ("acosh", (-inf, inf), (inf, 2.356194496154785)),
    ("acosh", (1e+20, -1e+20), (47.09142303466797, -0.7853981852531433)),
    ("atanh", (2.0, 0.0), (0.5493061542510986, 1.5707963705062866)),
    ("atanh", (2.0, -0.0), (0.5493061542510986, -1.5707963705062866)),
    ("atanh", (-2.0, 0.0), (-0.5493061542510986, 1.5707963705062866)),
    ("atanh", (1.0, 0.0), (inf, 0.0)),
    ("atanh", (-1.0, 0.0), (-inf, 0.0)),
    ("atanh", (1e+20, 1e+20), (4.999999841327613e-21, 1.5707963705062866)),
    ("atanh", (1e-08, 1e-08), (9.99999993922529e-09, 9.99999993922529e-09)),
    ("atanh", (1.0, 1e-10), (11.859498977661133, 0.7853981852531433)),
    ("atanh", (-1.0, -1e-10), (-11.859498977661133, -0.7853981852531433)),
    ("atanh", (0.0, nan), (0.0, nan)),
    ("atanh", (inf, nan), (0.0, nan)),
    ("atanh", (nan, inf), (0.0, 1.5707963705062866)),
    ("log2", (0.0, 0.0), (-inf, 0.0)),
    ("log2", (-0.0, -0.0), (-inf, -4.532360076904297)),
    ("log2", (-1.0, 0.0), (0.0, 4.532360076904297)),
    ("log2", (-1.0, -0.0), (0.0, -4.532360076904297)),
    ("log2", (0.0, 8.0), (3.0, 2.2661800384521484)),
    ("log2", (inf, 0.0), (inf, 0.0)),
    ("log10", (0.0, 0.0), (-inf, 0.0)),
    ("log10", (-0.0, 0.0), (-inf, 1.364376425743103)),
    ("log10", (-1.0, 0.0), (0.0, 1.364376425743103)),
    ("log10", (0.0, 100.0), (2.0, 0.6821882128715515)),
    ("log1p", (1e-07, 1e-07), (9.999998695775503e-08, 9.999998695775503e-08)),
    ("log1p", (1e-20, 1e-20), (9.999999682655225e-21, 9.999999682655225e-21)),
    ("log1p", (-1.0, 0.0), (-inf, 0.0)),
    ("log1p", (-2.0, 0.0), (0.0, 3.1415927410125732)),
    ("log1p", (-2.0, -0.0), (0.0, -3.1415927410125732)),
    ("log1p", (-0.5, 0.5), (-0.3465735912322998, 0.7853981852531433)),
    ("log1p", (-1.0, 1e-08), (-18.42068099975586, 1.5707963705062866)),
    ("log1p", (3.0, 4.0), (1.732867956161499, 0.7853981852531433)),
    ("log1p", (inf, nan), (nan, nan)),
    ("log1p", (-inf, 1.0), (inf, 3.1415927410125732)),
    ("sinh", (1000.0, 0.0), (inf, 0.0)),
    ("sinh", (-1000.0, 0.0), (-inf, 0.0)),
    ("sinh", (-100.0, 1e-14), (-inf, 1.3440586032578558e+29)),
    ("sinh", (2.0, 3.0), (-3.590564489364624, 0.5309211015701294)),
    ("sinh", (0.0, inf), (0.0, nan)),
    ("sinh", (-inf, inf), (inf, nan)),
    ("sinh", (inf, 0.0), (inf, 0.0)),
    ("cosh", (1000.0, 0.0), (inf, 0.0)),
    ("cosh", (-1000.0, 0.0), (inf, -0.0)),
    ("cosh", (-100.0, 1e-14), (inf, -1.3440586032578558e+29)),
    ("cosh", (2.0, 3.0), (-3.72454571723938, 0.511822521686554)),
    ("cosh", (0.0, inf), (nan, 0.0)),
    ("cosh", (inf, nan), (inf, nan)),
    ("cosh", (-0.0, 0.0), (1.0, -0.0)),
]
C128 = [
    ("asin", (2.0, 0.0), (1.5707963267948966, 1.3169578969248166)),
    ("asin", (2.0, -0.0), (1.5707963267948966, -1.3169578969248166)),
    ("asin", (-2.0, 0.0), (-1.5707963267948966, 1.3169578969248166)),
    ("asin", (1e-08, 1e-08), (1e-08, 1e-08)),
    ("asin", (0.5, 0.5), (0.45227844715119064, 0.5306375309525179)),
    ("asin", (inf, 1.0), (1.5707963267948966, inf)),
    ("asin", (1.0, inf), (0.0, inf)),
    ("asin", (nan, 0.0), (nan, nan)),
    ("asin", (inf, nan), (nan, inf)),
    ("asin", (1e+30, 1e+30), (0.7853981633974483, 70.11727356066129)),
    ("acos", (2.0, 0.0), (0.0, -1.3169578969248166)),
    ("acos", (2.0, -0.0), (0.0, 1.3169578969248166)),
    ("acos", (-2.0, 0.0), (3.141592653589793, -1.3169578969248166)),
    ("acos", (-2.0, -0.0), (3.141592653589793, 1.3169578969248166)),
    ("acos", (1e-08, 1e-08), (1.5707963167948966, -1e-08)),
    ("acos", (0.5, -0.5), (1.1185178796437059, 0.5306375309525179)),
    ("acos", (-inf, 1.0), (3.141592653589793, -inf)),
    ("acos", (inf, inf), (0.7853981633974483, -inf)),
    ("acos", (0.0, nan), (1.5707963267948966, nan)),
    ("atan", (0.0, 1.0), (0.0, inf)),
    ("atan", (-0.0, -1.0), (-0.0, -inf)),
    ("atan", (0.0, 2.0), (1.5707963267948966, 0.5493061443340549)),
    ("atan", (-0.0, 2.0), (-1.5707963267948966, 0.5493061443340549)),
    ("atan", (0.0, -2.0), (1.5707963267948966, -0.5493061443340549)),
    ("atan", (1e-08, 1e-08), (1.0000000000000002e-08, 1e-08)),
    ("atan", (1e-20, 1e-20), (1e-20, 1e-20)),
    ("atan", (1.0, 1e-10), (0.7853981633974483, 5e-11)),
    ("atan", (inf, nan), (1.5707963267948966, 0.0)),
    ("atan", (nan, inf), (nan, 0.0)),
    ("atan", (1e+20, 1e+20), (1.5707963267948966, 5e-21)),
    ("asinh", (0.0, 2.0), (1.3169578969248166, 1.5707963267948966)),
    ("asinh", (-0.0, 2.0), (-1.3169578969248166, 1.5707963267948966)),
    ("asinh", (0.0, -2.0), (1.3169578969248166, -1.5707963267948966)),
    ("asinh", (1e-08, 1e-08), (1e-08, 1e-08)),
    ("asinh", (0.5, 0.5), (0.5306375309525179, 0.45227844715119064)),
    ("asinh", (1e+20, 1e+20), (47.091422630720835, 0.7853981633974483)),
    ("asinh", (inf, inf), (inf, 0.7853981633974483)),
    ("asinh", (nan, 0.0), (nan, 0.0)),
    ("asinh", (-inf, 1.0), (-inf, 0.0)),
    ("acosh", (-1.0, -0.0), (0.0, -3.141592653589793)),
    ("acosh", (-1.0, 0.0), (0.0, 3.141592653589793)),
    ("acosh", (0.5, 0.0), (0.0, 1.0471975511965976)),
    ("acosh", (0.5, -0.0), (0.0, -1.0471975511965976)),
    ("acosh", (-2.0, 0.0), (1.3169578969248166, 3.141592653589793)),
    ("acosh", (1e-08, 1e-08), (1e-08, 1.5707963167948966)),
    ("acosh", (0.0, nan), (nan, 1.5707963267948966)),
    ("acosh", (-inf, inf), (inf, 2.356194490192345)),
    ("acosh", (1e+20, -1e+20), (47.091422630720835, -0.7853981633974483)),
    ("atanh", (2.0, 0.0), (0.5493061443340549, 1.5707963267948966)),
    ("atanh", (2.0, -0.0), (0.5493061443340549, -1.5707963267948966)),
    ("atanh", (-2.0, 0.0), (-0.5493061443340549, 1.5707963267948966)),
    ("atanh", (1.0, 0.0), (inf, 0.0)),
    ("atanh", (-1.0, 0.0), (-inf, 0.0)),
    ("atanh", (1e+20, 1e+20), (5e-21, 1.5707963267948966)),
    ("atanh", (1e-08, 1e-08), (1e-08, 1.0000000000000002e-08)),
    ("atanh", (1.0, 1e-10), (11.8594990552502, 0.7853981634224483)),
    ("atanh", (-1.0, -1e-10), (-11.8594990552502, -0.7853981634224483)),
    ("atanh", (0.0, nan), (0.0, nan)),
    ("atanh", (inf, nan), (0.0, nan)),
    ("atanh", (nan, inf), (0.0, 1.5707963267948966)),
    ("log2", (0.0, 0.0), (-inf, 0.0)),
    ("log2", (-0.0, -0.0), (-inf, -4.532360141827194)),
    ("log2", (-1.0, 0.0), (0.0, 4.532360141827194)),
    ("log2", (-1.0, -0.0), (0.0, -4.532360141827194)),
    ("log2", (0.0, 8.0), (3.0, 2.266180070913597)),
    ("log2", (inf, 0.0), (inf, 0.0)),
    ("log10", (0.0, 0.0), (-inf, 0.0)),
    ("log10", (-0.0, 0.0), (-inf, 1.3643763538418412)),
    ("log10", (-1.0, 0.0), (0.0, 1.3643763538418412)),
    ("log10", (0.0, 100.0), (2.0, 0.6821881769209206)),
    ("log1p", (1e-07, 1e-07), (9.999999999999933e-08, 9.999999000000066e-08)),
    ("log1p", (1e-20, 1e-20), (1e-20, 1e-20)),
    ("log1p", (-1.0, 0.0), (-inf, 0.0)),
    ("log1p", (-2.0, 0.0), (0.0, 3.141592653589793)),
    ("log1p", (-2.0, -0.0), (0.0, -3.141592653589793)),
    ("log1p", (-0.5, 0.5), (-0.34657359027997264, 0.7853981633974483)),
    ("log1p", (-1.0, 1e-08), (-18.420680743952367, 1.5707963267948966)),
    ("log1p", (3.0, 4.0), (1.7328679513998633, 0.7853981633974483)),
    ("log1p", (inf, nan), (nan, nan)),
    ("log1p", (-inf, 1.0), (inf, 3.141592653589793)),
    ("sinh", (1000.0, 0.0), (inf, 0.0)),
    ("sinh", (-1000.0, 0.0), (-inf, 0.0)),
    ("sinh", (-100.0, 1e-14), (-1.3440585709080678e+43, 1.3440585709080678e+29)),
    ("sinh", (2.0, 3.0), (-3.59056458998578, 0.5309210862485197)),
    ("sinh", (0.0, inf), (0.0, nan)),
    ("sinh", (-inf, inf), (inf, nan)),
    ("sinh", (inf, 0.0), (inf, 0.0)),
    ("cosh", (1000.0, 0.0), (inf, 0.0)),
    ("cosh", (-1000.0, 0.0), (inf, -0.0)),
    ("cosh", (-100.0, 1e-14), (1.3440585709080678e+43, -1.3440585709080678e+29)),
    ("cosh", (2.0, 3.0), (-3.7245455049153224, 0.5118225699873846)),
    ("cosh", (0.0, inf), (nan, 0.0)),
    ("cosh", (inf, nan), (inf, nan)),
    ("cosh", (-0.0, 0.0), (1.0, -0.0)),
]


@pytest.mark.parametrize("dtype_name", ["complex64", "complex128"])
def test_complex_elementary_functions_match_pytorch(device: str, dtype_name: str) -> None:
    need_complex(device)
    dtype = getattr(pg, dtype_name)
    table = C64 if dtype is pg.complex64 else C128
    tol = 8 * (np.finfo(np.float32).eps if dtype is pg.complex64 else np.finfo(np.float64).eps)
    bad = []
    for fn in dict.fromkeys(name for name, _, _ in table):
        rows = [(complex(*z), complex(*w)) for name, z, w in table if name == fn]
        got = getattr(pg, fn)(pg.tensor([z for z, _ in rows], dtype=dtype, device=device))
        for (z, want), g in zip(rows, got.tolist()):
            if not _parts_match(complex(g), want, tol):
                bad.append((fn, z, want, g))
    assert not bad, bad


def test_complex_log1p_accurate_near_zero(device: str) -> None:
    need_complex(device)
    # numpy's complex log1p is log(1 + z): 1e-7 + 1e-7j lost half its digits there
    z = pg.tensor([1e-7 + 1e-7j], dtype=pg.complex128, device=device)
    got = pg.log1p(z).item()
    assert abs(got.real - 9.99999999999993e-08) <= 1e-21
    assert abs(got.imag - 9.999999000000066e-08) <= 1e-21
    # its gradient is still 1 / (1 + z), conjugated
    g = pg.tensor([0.5 + 0.3j], dtype=pg.complex128, device=device, requires_grad=True)
    pg.log1p(g).real.sum().backward()
    np.testing.assert_allclose(g.grad.cpu().numpy(), [np.conj(1 / (1.5 + 0.3j))], rtol=1e-14)


def test_log2_log10_divide_parts_by_a_real(device: str) -> None:
    need_complex(device)
    z = pg.tensor([0j, 8j], device=device)
    assert pg.log2(z).tolist()[0] == complex(-inf, 0)  # not -inf + nanj
    assert pg.log10(z).tolist()[0] == complex(-inf, 0)
    g = pg.tensor([1 + 1j], device=device, requires_grad=True)
    pg.log2(g).abs().sum().backward()
    np.testing.assert_allclose(g.grad.cpu().numpy(), [-0.36873337626457214 + 0.9511678218841553j],
                               rtol=1e-6)


# ------------------------------------------------------------------------- complex gradients
def test_sinc_complex_gradient_is_conjugated(device: str) -> None:
    need_complex(device)
    x = pg.tensor([0.3 + 0.4j, -1.2 + 0.5j], dtype=pg.complex128, device=device,
                  requires_grad=True)
    pg.sinc(x).real.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [-1.3625233469972444 + 1.13712133612933j,
                                                      0.5966031817689105 - 1.6107305945392445j],
                               rtol=1e-12)
    y = pg.tensor([0.3 + 0.4j], dtype=pg.complex128, device=device, requires_grad=True)
    pg.sinc(y).imag.sum().backward()
    np.testing.assert_allclose(y.grad.cpu().numpy(), [-1.13712133612933 - 1.3625233469972444j],
                               rtol=1e-12)


def test_lerp_complex_weights(device: str) -> None:
    need_complex(device)

    def t(v: Any) -> pg.Tensor:
        return pg.tensor(v, dtype=pg.complex128, device=device, requires_grad=True)

    x, e, w = t([1 + 1j]), t([2 + 3j]), t([0.2 + 0.1j])
    pg.lerp(x, e, w).real.sum().backward()
    assert x.grad.tolist() == [0.8 + 0.1j] and w.grad.tolist() == [1 - 2j]
    np.testing.assert_allclose(e.grad.cpu().numpy(), [0.2 - 0.1j], rtol=1e-15)
    x, e, w = t([1 + 1j]), t([2 + 3j]), t([0.2 + 0.1j])
    pg.lerp(x, e, w).abs().sum().backward()
    for got, want in ((x, 0.36055512754639896 + 0.721110255092798j),
                      (e, 0.19414506867883022 + 0.11094003924504585j),
                      (w, 2.2188007849009166 - 0.2773500981126146j)):
        np.testing.assert_allclose(got.grad.cpu().numpy(), [want], rtol=1e-14)
    # a complex Python weight (|w| < 0.5 and >= 0.5 take PyTorch's two forms)
    a, b = pg.tensor([1 + 1j], device=device), pg.tensor([2 + 3j], device=device)
    np.testing.assert_allclose(pg.lerp(a, b, 0.3 + 0.2j).cpu().numpy(), [0.9 + 1.8j], rtol=1e-6)
    np.testing.assert_allclose(pg.lerp(a, b, 0.7 + 0.2j).cpu().numpy(), [1.3 + 2.6j], rtol=1e-6)
    x, e = t([1 + 1j]), t([2 + 3j])
    pg.lerp(x, e, 0.7 + 0.2j).abs().sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [-0.04472135954999582 + 0.3577708763999664j],
                               rtol=1e-14)
    np.testing.assert_allclose(e.grad.cpu().numpy(), [0.4919349550499537 + 0.5366563145999496j],
                               rtol=1e-14)
    r, s = pg.tensor([1.0], device=device), pg.tensor([2.0], device=device)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                       "overflow"):
        pg.lerp(r, s, 0.3 + 0.2j)
    got = pg.lerp(r, s, 0.3 + 0j)  # a zero imaginary part: converted, the result stays real
    assert got.dtype is pg.float32 and got.tolist() == pytest.approx([1.3])


# ------------------------------------------------------------------------------ random fills
def test_complex_normal_and_uniform_fill_both_parts(device: str) -> None:
    need_complex(device)
    pg.manual_seed(0)
    z = pg.empty(100000, dtype=pg.complex64, device=device).normal_()
    # PyTorch: each part std 1/sqrt(2), so that E|z|^2 = 1 (as randn)
    for part in (z.real, z.imag):
        assert abs(part.std().item() - math.sqrt(0.5)) < 0.01 and abs(part.mean().item()) < 0.01
    z = pg.empty(100000, dtype=pg.complex128, device=device).normal_(2.0, 3.0)
    for part in (z.real, z.imag):
        assert abs(part.std().item() - 3 / math.sqrt(2)) < 0.03
        assert abs(part.mean().item() - 2.0) < 0.03
    pg.manual_seed(1)
    a = pg.randn(6, dtype=pg.complex64, device=device)
    pg.manual_seed(1)
    assert pg.equal(pg.empty(6, dtype=pg.complex64, device=device).normal_(), a)
    strided = pg.zeros(4, 6, dtype=pg.complex64, device=device)[:, ::2].normal_()
    assert bool((strided.imag != 0).all())
    with pytest.raises(TypeError, match="argument 'mean' \\(position 1\\) must be float, not "
                       "complex"):
        pg.empty(3, dtype=pg.complex64, device=device).normal_(1 + 1j)
    u = pg.empty(10000, dtype=pg.complex64, device=device).uniform_(2.0, 3.0)
    for part in (u.real, u.imag):
        assert part.min().item() >= 2.0 and part.max().item() < 3.0
        assert abs(part.mean().item() - 2.5) < 0.02


# ---------------------------------------------------------------- complex into real tensors
def test_complex_values_into_real_tensors_raise(device: str) -> None:
    need_complex(device)

    def put(key: Any, value: Any, dtype: Any = pg.float32) -> pg.Tensor:
        t = pg.zeros(3, dtype=dtype, device=device)
        t[key] = value
        return t

    idx = pg.tensor([0, 1], device=device)
    mask = pg.tensor([True, False, True], device=device)
    for key in (0, slice(0, 2), ..., None, idx, mask):
        with pytest.raises(RuntimeError, match="^value cannot be converted to type float "
                           "without overflow$"):
            put(key, 1 + 2j)
    with pytest.raises(RuntimeError, match="type double without overflow"):
        put(0, np.complex128(1 + 2j), pg.float64)
    with pytest.raises(RuntimeError, match="type int64_t without overflow"):
        put(0, 1 + 2j, pg.int64)
    assert put(0, 1 + 0j).tolist() == [1.0, 0.0, 0.0]  # a zero imaginary part converts
    assert put(0, 1 + 2j, pg.bool).tolist() == [True, False, False]
    assert put(0, 1 + 2j, pg.complex64).tolist()[0] == 1 + 2j
    src = pg.tensor([1 + 2j, 3j], device=device)
    msg = ("^Index put requires the source and destination dtypes match, got Float for the "
           "destination and ComplexFloat for the source.$")
    with pytest.raises(RuntimeError, match=msg):
        put(idx, src)
    with pytest.raises(RuntimeError, match=msg):
        put(idx, pg.tensor(1 + 2j, device=device))
    with pytest.raises(RuntimeError, match=msg):
        put(mask, src)
    # a one-element value under a lone mask is written as a number (PyTorch's masked_fill_)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
        put(mask, pg.tensor(1 + 2j, device=device))
    with warnings.catch_warnings():  # (portagrad warns for the cast of these; PyTorch too for
        warnings.simplefilter("ignore")  # the copy under a basic key, which drops the imag part)
        assert put(mask, pg.tensor(1 + 0j, device=device)).tolist() == [1.0, 0.0, 1.0]
        assert put(0, pg.tensor(1 + 2j, device=device)).tolist() == [1.0, 0.0, 0.0]
    one = (pg.tensor([0], device=device),)
    for accumulate in (False, True):
        with pytest.raises(RuntimeError, match=msg[:-1]):
            pg.zeros(2, device=device).index_put_(one, pg.tensor([1 + 2j], device=device),
                                                  accumulate=accumulate)
        with pytest.raises(RuntimeError, match=msg[:-1]):
            pg.zeros(2, device=device).index_put(one, pg.tensor([1 + 2j], device=device),
                                                 accumulate=accumulate)
    with pytest.raises(RuntimeError, match="^index_fill_\\(\\): Converting complex Scalar to "
                       "non-complex type is not supported$"):
        pg.zeros(2, device=device).index_fill(0, pg.tensor([0], device=device), 1 + 0j)


def test_addmm_complex_scalars(device: str) -> None:
    a = pg.ones(1, 1, device=device)
    for kw in ({"alpha": 2j}, {"beta": 2j}):
        with pytest.raises(RuntimeError, match="^value cannot be converted to type float "
                           "without overflow$"):
            pg.addmm(a, a, a, **kw)
    got = pg.addmm(a, a, a, alpha=2 + 0j)  # a zero imaginary part: converted, stays real
    assert got.dtype is pg.float32 and got.tolist() == [[3.0]]
    need_complex(device)
    c = pg.ones(1, 1, dtype=pg.complex64, device=device)
    assert pg.addmm(c, c, c, alpha=2j).tolist() == [[1 + 2j]]
