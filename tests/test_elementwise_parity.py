"""PyTorch's results at the edges of the real elementwise ops: ``isclose`` with infinities and
integers, ``isin`` with NaN, ``frexp`` at the extreme exponents, ``round(decimals=)`` in 16-bit
floats, ``logit(eps=)`` past one half, the sign bit of NaN, ``pow`` with +-0.5 exponents,
``exp2`` at integers, ``lerp`` with a 0-dim weight, the derivatives of ``atan2``, ``pow`` and
``nextafter`` at their edge points, and the argument checks (exception types and messages).
Expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

NAN, INF = math.nan, math.inf


def t(device: str, data, dtype=None, requires_grad: bool = False):
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def same(got: list, want: list) -> bool:
    """Equal lists of floats, NaN equal to NaN and the sign of zero compared."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if math.isnan(w):
            if not math.isnan(g):
                return False
        elif g != w or math.copysign(1.0, g) != math.copysign(1.0, w):
            return False
    return True


# ------------------------------------------------------------------------------- isclose
def test_isclose_infinities(device: str) -> None:
    a, b = t(device, [INF, INF, -INF, 1.0, INF, 1.0]), t(device, [5.0, INF, -INF, INF, NAN, 3.0])
    assert pg.isclose(a, b, atol=INF).tolist() == [False, True, True, False, False, True]
    assert pg.isclose(a, b, rtol=INF).tolist() == [False, True, True, False, False, True]
    assert pg.isclose(t(device, [INF]), t(device, [-INF])).tolist() == [False]
    assert pg.isclose(t(device, [INF, NAN]), t(device, [-INF, NAN]),
                      equal_nan=True).tolist() == [False, True]
    # a difference that overflows is close to nothing
    assert pg.isclose(t(device, [3e38]), t(device, [-3e38]), rtol=10.0).tolist() == [False]
    assert not pg.allclose(t(device, [1.0, INF]), t(device, [1.0, -INF]), atol=INF)


def test_isclose_integers(device: str) -> None:
    # no wrapped difference: uint8 1 - 2 is -1, int8 100 - -100 is 200
    assert pg.isclose(t(device, [1, 200], pg.uint8), t(device, [2, 100], pg.uint8),
                      rtol=0, atol=1).tolist() == [True, False]
    assert pg.isclose(t(device, [100], pg.int8), t(device, [-100], pg.int8),
                      rtol=0, atol=199).tolist() == [False]
    assert pg.isclose(t(device, [100], pg.int8), t(device, [-100], pg.int8),
                      rtol=1, atol=100).tolist() == [True]
    # no tolerance: exact equality, even beyond float64's integers
    assert pg.isclose(t(device, [2**62]), t(device, [2**62 + 1]), rtol=0, atol=0).tolist() == [False]
    assert pg.allclose(t(device, [100], pg.uint8), t(device, [101], pg.uint8), atol=1)


@pytest.mark.parametrize("rtol, atol, msg", [
    (-1, 1e-8, "rtol must be greater than or equal to zero, but got -1"),
    (-1.5, 0.0, "rtol must be greater than or equal to zero, but got -1.5"),
    (0.0, -0.5, "atol must be greater than or equal to zero, but got -0.5"),
    (-1e10, 0.0, r"rtol must be greater than or equal to zero, but got -1e\+10"),
    (NAN, 0.0, "rtol must be greater than or equal to zero, but got nan"),
])
def test_isclose_negative_tolerance(device: str, rtol, atol, msg: str) -> None:
    x = t(device, [1.0])
    with pytest.raises(RuntimeError, match=f"^{msg}$"):
        pg.isclose(x, x, rtol=rtol, atol=atol)
    with pytest.raises(RuntimeError, match=f"^{msg}$"):
        pg.allclose(x, x, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------- isin
def test_isin_nan_in_test_elements(device: str) -> None:
    # a NaN among the test elements used to hide the values sorted before it
    got = pg.isin(t(device, [NAN, 1.0, INF, -INF, 2.0]), t(device, [NAN, 1.0, NAN, INF]))
    assert got.tolist() == [False, True, True, False, False]
    got = pg.isin(t(device, [NAN, 1.0, INF]), t(device, [NAN, 1.0]))
    assert got.tolist() == [False, True, False]
    got = pg.isin(t(device, [NAN, 1.0, INF]), t(device, [NAN, 1.0]), invert=True)
    assert got.tolist() == [True, False, True]


# --------------------------------------------------------------------------------- frexp
def test_frexp_extreme_exponents(device: str) -> None:
    m, e = pg.frexp(t(device, [1e-45, 3.4e38, 1e-40, -3e38, 0.75, -0.0]))
    assert e.dtype is pg.int32
    assert e.tolist() == [-148, 128, -132, 128, 0, 0]
    assert m.tolist() == pytest.approx([0.5, 0.999170, 0.544449, -0.881621, 0.75, 0.0], abs=1e-6)
    m, e = pg.frexp(t(device, [5e-324, 1.7e308, -1e-310], pg.float64))
    assert e.tolist() == [-1073, 1024, -1029]
    assert m.tolist() == pytest.approx([0.5, 0.945656, -0.575262], abs=1e-6)


# --------------------------------------------------------------------------------- round
def test_round_decimals_half(device: str) -> None:
    try:
        x = t(device, [1234.5678, 250.0, 0.125, -0.375], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    # scaled in float32: 1234.5678 * 100 does not overflow float16
    assert pg.round(x, decimals=2).tolist() == [1235.0, 250.0, 0.1199951171875, -0.3798828125]
    assert pg.round(x, decimals=3).tolist() == [1235.0, 250.0, 0.125, -0.375]
    y = t(device, [15.0, 2.5], pg.bfloat16)
    assert pg.round(y, decimals=2).tolist() == [15.0, 2.5]


# --------------------------------------------------------------------------------- logit
def test_logit_eps_above_half(device: str) -> None:
    x = t(device, [0.0, 0.05, 0.5, 0.95, 1.0, -0.5, 1.5, NAN])
    got = pg.logit(x, eps=0.6).tolist()
    v = 0.40546518564224243
    assert math.isnan(got[-1])
    assert got[:-1] == pytest.approx([v, v, v, -v, -v, v, -v])
    assert pg.logit(t(device, [0.0, 0.5, 1.0]), eps=1.0).tolist() == [INF, INF, -INF]
    assert pg.special.logit(t(device, [0.0, 1.0]), eps=0.6).tolist() == pytest.approx([v, -v])


# ---------------------------------------------------------------------- signbit, copysign
def test_signbit_of_nan(device: str) -> None:
    x = -t(device, [NAN, -NAN, 0.0, -0.0, 1.0])
    assert pg.signbit(x).tolist() == [True, False, True, False, True]
    assert pg.copysign(t(device, [1.0, 2.0]), -t(device, [NAN, NAN])).tolist() == [-1.0, -2.0]
    assert pg.signbit(t(device, [[-0.0, 1.0], [2.0, -3.0]]).t()).tolist() == [[True, False],
                                                                              [False, True]]
    assert pg.signbit(t(device, -0.0)).tolist() is True


def test_signbit_half(device: str) -> None:
    try:
        x = t(device, [-0.0, 0.0, -2.0], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    assert pg.signbit(x).tolist() == [True, False, True]


# ----------------------------------------------------------------------------- pow, exp2
def test_pow_half_exponents(device: str) -> None:
    # a number exponent of +-0.5 is a square root (PyTorch's kernel): -0.0 ** -0.5 is -inf,
    # -inf ** 0.5 is NaN
    x = t(device, [-0.0, 0.0, -INF, INF, 4.0])
    assert same(pg.pow(x, -0.5).tolist(), [-INF, INF, NAN, 0.0, 0.5])
    assert same(pg.pow(t(device, [-INF, INF, -0.0]), 0.5).tolist(), [NAN, INF, -0.0])
    assert same((x.double() ** -0.5).tolist(), [-INF, INF, NAN, 0.0, 0.5])
    assert pg.pow(t(device, [4, 9]), -0.5).tolist() == pytest.approx([0.5, 1 / 3])


def test_pow_half_exponent_float16(device: str) -> None:
    try:
        x = t(device, [-0.0, -INF], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    assert pg.pow(x, -0.5).tolist() == [INF, 0.0]  # float16 keeps pow's values


def test_exp2_exact(device: str) -> None:
    x = t(device, [10.0, 100.0, -100.0, 127.0, -149.0])
    want = [1024.0, 1.2676506002282294e+30, 7.888609052210118e-31, 1.7014118346046923e+38,
            1.401298464324817e-45]
    assert pg.exp2(x).tolist() == want
    assert pg.exp2(x.double()).tolist() == [1024.0, 2.0**100, 2.0**-100, 2.0**127, 2.0**-149]
    assert pg.exp2(t(device, [1, 2, 3])).tolist() == [2.0, 4.0, 8.0]


# ---------------------------------------------------------------------------- gradients
def test_atan2_grad_at_origin(device: str) -> None:
    a = t(device, [0.0, -0.0, 0.0, 1.0], requires_grad=True)
    b = t(device, [0.0, 0.0, -0.0, 0.0], requires_grad=True)
    pg.atan2(a, b).sum().backward()
    assert same(a.grad.tolist(), [0.0, 0.0, -0.0, 0.0])
    assert same(b.grad.tolist(), [-0.0, 0.0, -0.0, -1.0])


def test_pow_grads_at_zero(device: str) -> None:
    b = t(device, [-2.0, -1.0, 0.0, 0.5, 2.0], pg.float64, requires_grad=True)
    pg.pow(0.0, b).sum().backward()
    assert same(b.grad.tolist(), [-INF, -INF, 0.0, 0.0, 0.0])
    x = t(device, [-0.0, 0.0, 4.0], requires_grad=True)
    y = pg.pow(x, 0.5)
    y.sum().backward()
    assert same(y.tolist(), [-0.0, 0.0, 2.0])
    assert same(x.grad.tolist(), [-INF, INF, 0.25])


def test_nextafter_grad(device: str) -> None:
    a = t(device, [1.0, 2.0], requires_grad=True)
    b = t(device, [3.0, 0.0], requires_grad=True)
    y = pg.nextafter(a, b)
    assert type(y.grad_fn).__name__ == "NextafterBackward0"
    y.backward(t(device, [2.0, 3.0]))
    assert y.tolist() == [1.0000001192092896, 1.9999998807907104]
    assert a.grad.tolist() == [2.0, 3.0]
    assert b.grad.tolist() == [0.0, 0.0]
    a = t(device, [[1.0], [2.0]], requires_grad=True)  # broadcast: summed back
    y = pg.nextafter(a, t(device, [3.0, 0.0, 5.0]))
    y.sum().backward()
    assert a.grad.tolist() == [[3.0], [3.0]]


# --------------------------------------------------------------------------------- lerp
def test_lerp_zero_dim_weight(device: str) -> None:
    # a 0-dim weight of another dtype takes part in the promotion (no dtype error)
    got = pg.lerp(t(device, [1.0, 2.0]), t(device, [3.0, 4.0]), t(device, 0.25, pg.float64))
    assert got.dtype is pg.float32
    assert got.tolist() == [1.5, 2.5]
    got = pg.lerp(t(device, [True, False]), t(device, [True, True]), t(device, 0.5))
    assert got.dtype is pg.float32
    assert got.tolist() == [1.0, 0.5]
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype "
                                           "double"):
        pg.lerp(t(device, [1.0]), t(device, [3.0]), t(device, [0.5], pg.float64))
    with pytest.raises(NotImplementedError,
                       match="\"lerp_kernel_tensor\" not implemented for 'Long'"):
        pg.lerp(t(device, [True]), t(device, [True]), t(device, 1))


def test_lerp_integer_refused(device: str) -> None:
    with pytest.raises(NotImplementedError,
                       match="^\"lerp_kernel_scalar\" not implemented for 'Long'$"):
        pg.lerp(t(device, [1, 2]), t(device, [3, 4]), 0.5)
    with pytest.raises(NotImplementedError,
                       match="^\"lerp_kernel_scalar\" not implemented for 'Bool'$"):
        pg.lerp(t(device, [True]), t(device, [False]), 0.5)
    with pytest.raises(NotImplementedError,
                       match="^\"lerp_kernel_tensor\" not implemented for 'Long'$"):
        pg.lerp(t(device, [1, 2]), t(device, [3, 4]), t(device, [1, 2]))


# ------------------------------------------------------------------ argument checks
def test_integer_division_by_zero_message(device: str) -> None:
    x = t(device, [1, 2])
    for fn in (lambda: pg.div(x, t(device, [0, 1]), rounding_mode="floor"),
               lambda: pg.div(x, 0, rounding_mode="trunc"), lambda: pg.floor_divide(x, 0),
               lambda: pg.remainder(x, t(device, [1, 0])), lambda: pg.fmod(x, 0)):
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            fn()


def test_tensor_only_binary_ops(device: str) -> None:
    x = t(device, [1.0])
    for name in ("hypot", "logaddexp", "logaddexp2", "nextafter", "ldexp"):
        fn = getattr(pg, name)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other' \(position 2\) "
                                            r"must be Tensor, not int$"):
            fn(x, 2)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other' \(position 2\) "
                                            r"must be Tensor, not float$"):
            fn(x, 2.5)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) "
                                            r"must be Tensor, not int$"):
            fn(2, x)


def test_bitwise_not_float(device: str) -> None:
    with pytest.raises(NotImplementedError,
                       match="^\"bitwise_not_cpu\" not implemented for 'Float'$"):
        pg.bitwise_not(t(device, [1.0]))
    with pytest.raises(NotImplementedError,
                       match="^\"bitwise_not_cpu\" not implemented for 'Double'$"):
        pg.bitwise_not(t(device, [1.0], pg.float64))
    assert pg.bitwise_not(t(device, [1, -1])).tolist() == [-2, 0]


def test_heaviside_and_addcdiv_messages(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^heaviside is not yet implemented for tensors with "
                                           r"different dtypes\.$"):
        pg.heaviside(t(device, [1]), t(device, [1.0]))
    with pytest.raises(RuntimeError, match="and in a future  release addcdiv will perform"):
        pg.addcdiv(t(device, [1]), t(device, [3]), t(device, [2]))


def test_alpha_and_value_conversions(device: str) -> None:
    x = t(device, [1.0])
    with pytest.raises(RuntimeError, match=r"^For non-complex input tensors, argument alpha must "
                                           r"not be a complex number\.$"):
        pg.add(x, x, alpha=1j)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without "
                                           "overflow$"):
        pg.add(x, x, alpha=1e300)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without "
                                           "overflow$"):
        pg.sub(x, 1.0, alpha=-1e39)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without "
                                           "overflow$"):
        pg.addcmul(x, x, x, value=1e300)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without "
                                           "overflow$"):
        pg.addcdiv(x, x, x, value=1j)
    # infinite and NaN numbers convert; float64 takes 1e39
    assert pg.add(x, x, alpha=INF).tolist() == [INF]
    with pytest.raises(NotImplementedError, match="\"addcmul_cpu_out\" not implemented for 'Bool'"):
        pg.addcmul(t(device, [True]), t(device, [True]), t(device, [True]))
    try:
        assert pg.add(x.double(), x.double(), alpha=1e39).tolist() == [1e39]
        assert pg.addcmul(x, x, x, value=2.0 + 0j).tolist() == [3.0]
    except pg.errors.DTypeError:
        pytest.skip("this backend has no float64 or complex")


def test_alpha_half_overflow(device: str) -> None:
    try:
        x = t(device, [1.0], pg.float16)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    with pytest.raises(RuntimeError, match="^value cannot be converted to type c10::Half without "
                                           "overflow$"):
        pg.add(x, x, alpha=1e5)
    assert pg.add(x, x, alpha=2.0).tolist() == [3.0]


# ---------------------------------------------------------------------------------- out=
def test_out_binary_math(device: str) -> None:
    o = pg.empty(3, device=device)
    r = pg.atan2(t(device, [1.0, 2.0, 3.0]), t(device, [2.0, 1.0, 1.0]), out=o)
    assert r is o
    assert o.tolist() == pytest.approx([0.4636476, 1.1071488, 1.2490457])
    o = pg.empty(3, dtype=pg.float64, device=device)
    pg.hypot(t(device, [3.0, 2.0, 3.0]), t(device, [4.0, 1.0, 1.0]), out=o)
    assert o.tolist() == pytest.approx([5.0, 2.2360680103302, 3.1622776985168457], abs=1e-7)
    cases = [
        (pg.xlogy, [0.0, 2.0], [0.0, 1.0], [0.0, 0.0]),
        (pg.copysign, [1.0, 2.0], [-1.0, 0.0], [-1.0, 2.0]),
        (pg.logaddexp, [0.0, 0.0], [0.0, -INF], [0.6931471824645996, 0.0]),
        (pg.ldexp, [1.0, 1.0], [3, -1], [8.0, 0.5]),
        (pg.nextafter, [0.0, 1.0], [1.0, 0.0], [1.401298464324817e-45, 0.9999999403953552]),
        (pg.heaviside, [0.0, -1.0], [0.5], [0.5, 0.0]),
    ]
    for fn, a, b, want in cases:
        o = pg.empty(2, device=device)
        assert fn(t(device, a), t(device, b), out=o) is o
        assert o.tolist() == want, fn
    o = pg.empty(0, device=device)  # an empty out is resized
    pg.logaddexp2(t(device, [1.0, 1.0]), t(device, [1.0, 1.0]), out=o)
    assert o.tolist() == [2.0, 2.0]
    o = pg.empty(2, dtype=pg.float64, device=device)
    pg.float_power(t(device, [2, 3]), 2, out=o)
    assert o.tolist() == [4.0, 9.0]


def test_out_dtype_checks(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^the output given to float_power has dtype Float but "
                                           r"the operation's result requires dtype Double$"):
        pg.float_power(t(device, [2.0]), 2, out=pg.empty(1, device=device))
    with pytest.raises(RuntimeError, match=r"^the output given to float_power has dtype Long but "
                                           r"the operation's result requires dtype Double$"):
        pg.float_power(t(device, [2.0]), 2, out=pg.empty(1, dtype=pg.int64, device=device))
    with pytest.raises(RuntimeError, match=r"^heaviside is not yet implemented for tensors with "
                                           r"different dtypes\.$"):
        pg.heaviside(t(device, [1.0]), t(device, [0.5]),
                     out=pg.empty(1, dtype=pg.float64, device=device))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output "
                                           "type Long"):
        pg.atan2(t(device, [1.0]), t(device, [1.0]), out=pg.empty(1, dtype=pg.int64, device=device))


def test_float_power_complex(device: str) -> None:
    try:
        got = pg.float_power(t(device, [2.0, 3.0]), 1j)
        z = pg.float_power(t(device, [1j, 2.0]), 2)
    except pg.errors.DTypeError:
        pytest.skip("no complex on this backend")
    assert got.dtype is pg.complex128
    assert got.tolist() == pytest.approx([0.7692389 + 0.6389613j, 0.4548324 + 0.8905770j],
                                         abs=1e-6)
    assert z.dtype is pg.complex128
    assert z.tolist() == pytest.approx([-1.0 + 0j, 4.0 + 0j], abs=1e-12)
    assert pg.float_power(t(device, [2, 3]), 2).dtype is pg.float64
