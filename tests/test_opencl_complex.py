"""complex64/complex128 on the OpenCL backend, primitive by primitive, against the numpy backend.

The conformance kit (``portagrad/testing/conformance/test_complex.py``) checks the contract on
ordinary values; here the OpenCL specifics: special values (zeros of either sign, negative reals
on the branch cuts, huge and tiny magnitudes, infinities, NaN), the operations that are exact in
numpy (products, Smith's division, reciprocals, small integer powers: bit-identical here), each
reduction path (one work-item per output, a work-group per output, split partials), complex GEMM
through the real one (transposed, strided, broadcast operands), the fuser leaving complex alone,
and complex128 declined like float64 on a device without fp64. Runs on PoCL's CPU devices.
"""
from __future__ import annotations

import itertools
from typing import Any
import os
import warnings

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl", reason="pyopencl is not installed")
try:
    _PLATFORMS = cl.get_platforms()
except cl.Error:  # pragma: no cover - depends on the machine
    _PLATFORMS = []
if not any(p.get_devices() for p in _PLATFORMS):  # pragma: no cover
    pytest.skip("no OpenCL platform/device available (install pocl-binary-distribution)",
                allow_module_level=True)

import portagrad as pg  # noqa: E402
from portagrad.backends.interface import View  # noqa: E402
from portagrad.backends.opencl.backend import OpenCLBackend  # noqa: E402
from portagrad.errors import DTypeError  # noqa: E402
from portagrad.testing.conformance._util import (REF, Pair, check, contiguous, empty,  # noqa: E402
                                                 gapped, reversed_axes, run_both, strided_out)

COMPLEX = [pg.complex64, pg.complex128]
IDS = [d.name for d in COMPLEX]
#: relative tolerance of the functions (glibc and these kernels agree to a few ulps)
RTOL = {"complex64": 4e-6, "complex128": 1e-14}
#: the largest magnitude tried: near the top of the real dtype's range
BIG = {"complex64": 1e30, "complex128": 1e300}


@pytest.fixture(scope="module")
def be() -> OpenCLBackend:
    b = OpenCLBackend()
    if not b.get_device_properties(0).fp64:  # pragma: no cover - PoCL's CPU device has fp64
        pytest.skip("complex128 needs fp64")
    return b


def _z(shape: tuple[int, ...], seed: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dtype.numpy)


def _specials(dtype) -> np.ndarray:
    """Every pair of real and imaginary parts from a list of special values."""
    big = BIG[dtype.name]
    parts = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, big, -big, 1e-30, np.inf, -np.inf, np.nan]
    return np.array([complex(a, b) for a, b in itertools.product(parts, parts)], dtype.numpy)


def _same_parts(got: np.ndarray, want: np.ndarray, rtol: float, what: str) -> None:
    """Each real part of ``got`` matches ``want``'s: NaN where NaN, the same infinity, finite values
    within ``rtol`` (and a tiny absolute slack for results that are rounding noise around 0)."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        g, w = g.astype(np.float64), w.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaN positions")
        inf = np.isinf(w) | np.isinf(g)
        np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
        fin = ~(np.isnan(w) | inf)
        np.testing.assert_allclose(g[fin], w[fin], rtol=rtol, atol=1e-300, err_msg=what)


def _unary(be, op: str, x: Pair, odt) -> tuple[np.ndarray, np.ndarray]:
    out = empty(be, x.shape, odt)
    run_both(be, "unary", op, x, out)
    return be.to_host(out.dev), REF.to_host(out.ref)


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid",
                                "reciprocal", "rsqrt", "expm1", "log1p"])
@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_functions_on_special_values(be, dtype, op: str) -> None:
    x = contiguous(be, _specials(dtype), dtype, offset=1)
    got, want = _unary(be, op, x, dtype)
    _same_parts(got, want, RTOL[dtype.name], f"{op} {dtype.name}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_abs_and_predicates_on_special_values(be, dtype) -> None:
    x = contiguous(be, _specials(dtype), dtype)
    got, want = _unary(be, "abs", x, dtype.to_real())
    assert got.dtype == dtype.to_real().numpy
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype.name], equal_nan=True)
    for op in ("isnan", "isinf", "logical_not"):
        got, want = _unary(be, op, x, pg.bool)
        np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_branch_cuts_follow_the_sign_of_zero(be, dtype) -> None:
    """log and sqrt of negative reals: the side of the cut is the sign of the zero imaginary part
    (C99 and numpy), and the principal values are exact here."""
    z = np.array([complex(-4, 0.0), complex(-4, -0.0), complex(-1, 0.0), complex(-1, -0.0),
                  complex(0.0, 0.0), complex(-0.0, -0.0)], dtype.numpy)
    x = contiguous(be, z, dtype)
    root, _ = _unary(be, "sqrt", x, dtype)
    np.testing.assert_array_equal(root, np.array([2j, -2j, 1j, -1j, 0, -0j], dtype.numpy))
    assert np.signbit(root.imag).tolist() == [False, True, False, True, False, True]
    lg, want = _unary(be, "log", x, dtype)
    np.testing.assert_allclose(lg[:4].imag, [np.pi, -np.pi, np.pi, -np.pi], rtol=RTOL[dtype.name])
    np.testing.assert_allclose(lg[:2].real, np.log(4), rtol=RTOL[dtype.name])
    assert lg[4] == complex(-np.inf, 0) and np.signbit(lg[5].imag) == np.signbit(want[5].imag)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_exact_operations_are_bit_identical(be, dtype) -> None:
    """Smith's division, reciprocals and small integer powers: numpy's own scalar loops, so the
    same bits. (numpy's vectorised product loop may fuse a multiply-add: products agree to an
    ulp of the operands' scale, not bit for bit.)"""
    z = _z((6, 9), 11, dtype)
    z[0, :4] = [0, 1e-30, -3, 2j]
    a, b = contiguous(be, z, dtype, 2), reversed_axes(be, _z((6, 9), 12, dtype), dtype)
    for op, lhs, rhs in (("div", a, b), ("div", b, a), ("div", 3 + 1j, a), ("div", a, 0.25 - 4j),
                         ("pow", a, 2), ("pow", a, 3), ("pow", a, 7), ("pow", a, -2),
                         ("pow", a, 0), ("add", a, 1.5), ("sub", 1j, a)):
        out = empty(be, z.shape, dtype)
        run_both(be, "binary", op, lhs, rhs, out)
        got, want = be.to_host(out.dev), REF.to_host(out.ref)
        what = f"{op} {'' if isinstance(rhs, Pair) else rhs}"
        np.testing.assert_array_equal(got, want, err_msg=what)
    got, want = _unary(be, "reciprocal", a, dtype)
    np.testing.assert_array_equal(got, want)
    eps = float(np.finfo(dtype.to_real().numpy).eps)
    for lhs, rhs in ((a, b), (a, 0.5 - 2j), (-1j, b)):
        out = empty(be, z.shape, dtype)
        run_both(be, "binary", "mul", lhs, rhs, out)
        np.testing.assert_allclose(be.to_host(out.dev), REF.to_host(out.ref), rtol=0,
                                   atol=16 * eps, err_msg="mul")


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_division_and_power_special_cases(be, dtype) -> None:
    """x / 0 and 0 ** w as numpy: infinities or NaN, never a trap; complex exponents through
    exp(w log z)."""
    z = np.array([1 + 1j, 0, 0, 2 - 1j, 1e-3 + 0j, -8 + 0j], dtype.numpy)
    w = np.array([0, 0, -1 + 0j, 0.5 + 0.25j, 2.5, 1 / 3 + 0j], dtype.numpy)
    a, b = contiguous(be, z, dtype), contiguous(be, w, dtype)
    for op in ("div", "pow"):
        out = empty(be, z.shape, dtype)
        run_both(be, "binary", op, a, b, out)
        _same_parts(be.to_host(out.dev), REF.to_host(out.ref), RTOL[dtype.name] * 10, op)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_strided_and_in_place(be, dtype) -> None:
    """A strided output's gaps stay untouched; in-place arithmetic on a column view."""
    z = _z((5, 6), 13, dtype)
    for op in ("div", "eq"):  # exact ops: the whole buffer the same bits
        odt = pg.bool if op == "eq" else dtype
        out = strided_out(be, (5, 6), odt)
        run_both(be, "binary", op, gapped(be, z, dtype), reversed_axes(be, z, dtype), out)
        check(be, out, exact=True, what=op)
    base = contiguous(be, z, dtype)
    col = base.twin.view(1, (5,), (6,))
    outs = [("in-place mul of a column", col, lambda: run_both(be, "binary", "mul", col, 2 - 1j, col))]
    out = strided_out(be, (5, 6), dtype)
    outs.append(("exp into a strided output", out,
                 lambda: run_both(be, "unary", "exp", reversed_axes(be, z, dtype), out)))
    for what, o, fn in outs:
        fn()
        whole = o.twin.whole()
        np.testing.assert_allclose(be.to_host(whole.dev), REF.to_host(whole.ref),
                                   rtol=RTOL[dtype.name], err_msg=what)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_casts_to_and_from_every_dtype(be, dtype) -> None:
    """real/int/bool -> complex: imaginary 0; complex -> real: the real part (16-bit floats rounded
    once from it); complex -> int: the real part truncated; complex -> bool: either part nonzero."""
    z = _z((4, 5), 14, dtype) * 50
    z[0, :3] = [0, 1j, -0.0]
    src = gapped(be, z, dtype)
    others = [pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
              pg.float32, pg.float64, pg.complex64, pg.complex128]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's ComplexWarning, where a version warns
        for odt in others:
            out = strided_out(be, z.shape, odt)
            run_both(be, "copy", src, out)
            tol = (1e-7, 0.0) if dtype is pg.complex128 and odt is pg.complex64 else None
            check(be, out, exact=tol is None, tol=tol, what=f"{dtype.name} -> {odt.name}")
    for idt in others:
        vals = (np.arange(20).reshape(4, 5) % 7 - 3).astype(idt.numpy) if idt is not pg.bool \
            else np.arange(20).reshape(4, 5) % 3 == 0
        if idt.is_complex:
            vals = z.astype(idt.numpy)
        out = strided_out(be, z.shape, dtype)
        run_both(be, "copy", contiguous(be, vals, idt, 1), out)
        check(be, out, exact=True, what=f"{idt.name} -> {dtype.name}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_where_fill_gather_scatter(be, dtype) -> None:
    z = _z((4, 6), 15, dtype)
    cond = contiguous(be, np.arange(24).reshape(4, 6) % 3 == 0, pg.bool)
    for a, b in ((gapped(be, z, dtype), 2 - 5j), (-1j, reversed_axes(be, z, dtype))):
        out = strided_out(be, (4, 6), dtype)
        run_both(be, "where", cond, a, b, out)
        check(be, out, what="where")
    out = strided_out(be, (4, 6), dtype)
    run_both(be, "fill", out, complex(np.inf, -0.5))
    check(be, out, what="strided fill")
    idx = np.random.default_rng(1).integers(0, 4, (3, 6))
    g = empty(be, (3, 6), dtype)
    run_both(be, "gather", reversed_axes(be, z, dtype), 0, contiguous(be, idx, pg.int64), g)
    check(be, g, what="gather")
    for reduce in (None, "add"):
        tgt = contiguous(be, z, dtype)
        run_both(be, "scatter", tgt, 0, contiguous(be, idx, pg.int64),
                 contiguous(be, _z((3, 6), 16, dtype), dtype), reduce)
        check(be, tgt, exact=reduce is None, tol=(RTOL[dtype.name], 1e-12) if reduce else None,
              what=f"scatter {reduce}")


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("shape,axes", [((5, 7), (1,)), ((3, 5000), (1,)), ((1, 200000), (1,)),
                                        ((6, 300), (0,)), ((40, 30, 20), (0, 2))],
                         ids=["per-item", "work-group", "split", "strided", "two-axes"])
@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_sum_and_prod_paths(be, dtype, shape, axes) -> None:
    """Each launch shape of the reduction kernels (one work-item per output, a work-group per
    output, partials reduced again) in complex arithmetic, prod on values of modulus 1: as close
    to the exact result (in long double) as numpy's own pairwise sums and products are, within a
    factor of 4, or a few ulps of the result."""
    rng = np.random.default_rng(2)
    z = _z(shape, 17, dtype)
    unit = np.exp(1j * rng.uniform(-np.pi, np.pi, shape)).astype(dtype.numpy)
    oshape = tuple(1 if i in axes else n for i, n in enumerate(shape))
    eps = float(np.finfo(dtype.to_real().numpy).eps)
    for op, vals in (("sum", z), ("prod", unit)):
        r = empty(be, oshape, dtype)
        run_both(be, "reduce", op, contiguous(be, vals, dtype, 3), axes, r)
        exact = getattr(np, op)(vals.astype(np.clongdouble), axis=axes, keepdims=True)
        err = np.abs(be.to_host(r.dev) - exact).max()
        ref_err = np.abs(REF.to_host(r.ref) - exact).max()
        assert err <= max(4 * ref_err, 4 * eps * np.abs(exact).max()), (op, err, ref_err)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_ordering_ops_refuse_complex(be, dtype) -> None:
    """The core raises before these; a complex view reaching them raises, never compares bytes."""
    x = contiguous(be, _z((3, 4), 18, dtype), dtype).dev
    with pytest.raises(DTypeError, match=dtype.name):
        be.reduce("max", x, (1,), empty(be, (3, 1), dtype).dev)
    with pytest.raises(DTypeError, match=dtype.name):
        be.arg_reduce("argmax", x, 1, empty(be, (3,), pg.int64).dev)
    with pytest.raises(DTypeError, match=dtype.name):
        be.sort(x, 1, False, empty(be, (3, 4), dtype).dev, empty(be, (3, 4), pg.int64).dev)
    with pytest.raises(DTypeError, match=dtype.name):
        be.binary("maximum", x, x, empty(be, (3, 4), dtype).dev)
    with pytest.raises(DTypeError, match=dtype.name):
        be.unary("floor", x, empty(be, (3, 4), dtype).dev)


@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
def test_cumsum(be, dtype) -> None:
    z = _z((4, 9, 3), 19, dtype)
    for axis in (0, 1, 2):
        out = empty(be, z.shape, dtype)
        run_both(be, "cumsum", reversed_axes(be, z, dtype), axis, out)
        check(be, out, exact=True, what=f"cumsum axis {axis}")  # sequential: numpy's order


# ------------------------------------------------------------------ matmul
@pytest.mark.parametrize("dtype", COMPLEX, ids=IDS)
@pytest.mark.parametrize("case", ["contiguous", "a-transposed", "b-broadcast", "out-strided",
                                  "gemv", "k1", "k0"])
def test_matmul(be, dtype, case: str) -> None:
    bsz, m, k, n = {"gemv": (1, 2, 40, 30), "k1": (2, 5, 1, 6), "k0": (1, 3, 0, 4)}.get(
        case, (3, 17, 33, 19))
    za, zb = _z((bsz, m, k), 20, dtype), _z((bsz, k, n), 21, dtype)
    a = contiguous(be, za, dtype, 1)
    b = contiguous(be, zb, dtype, 2)
    if case == "a-transposed":  # not unit stride along k: copied to interleaved rows first
        a = reversed_axes(be, za, dtype)
    if case == "b-broadcast":
        b2 = reversed_axes(be, zb[0], dtype)
        b = b2.twin.view(b2.dev.offset, (bsz, k, n), (0, *b2.dev.strides))
    out = empty(be, (bsz, m, n), dtype)
    if case == "out-strided":
        out = strided_out(be, (bsz, m, n), dtype)
    run_both(be, "matmul", a, b, out)
    tol = RTOL[dtype.name] * 10 * np.sqrt(max(k, 1))
    np.testing.assert_allclose(be.to_host(out.twin.whole().dev), REF.to_host(out.twin.whole().ref),
                               rtol=tol, atol=tol)


def test_matmul_through_the_public_api(be) -> None:
    """``@`` on the device, with a conjugated (lazily materialised) operand, against numpy."""
    za, zb = _z((2, 8, 5), 22, pg.complex128), _z((5, 3), 23, pg.complex128)
    ta = pg.tensor(za, device="opencl:0")
    tb = pg.tensor(zb, device="opencl:0")
    np.testing.assert_allclose((ta @ tb.conj()).cpu().numpy(), za @ zb.conj(), rtol=1e-13)
    np.testing.assert_allclose((ta.mT.conj() @ ta).cpu().numpy(),
                               np.swapaxes(za, -1, -2).conj() @ za, rtol=1e-13)


# ------------------------------------------------------------------ fusion, devices
def test_complex_is_not_fused(be) -> None:
    """The fuser records real floating ops only: complex chains run op by op (same values as
    numpy), and a real op consuming ``abs`` of a complex is not inlined across dtypes."""
    if be._fz is None:
        pytest.skip("fusion is off (PORTAGRAD_OPENCL_FUSION=0)")
    z = _z((64,), 24, pg.complex64)
    x = contiguous(be, z, pg.complex64).dev
    launches = be._fz.launches
    t1 = empty(be, (64,), pg.complex64).dev
    t2 = empty(be, (64,), pg.complex64).dev
    r = empty(be, (64,), pg.float32).dev
    r2 = empty(be, (64,), pg.float32).dev
    be.binary("mul", x, x, t1)
    be.binary("add", t1, 1j, t2)
    be.unary("abs", t2, r)
    be.binary("mul", r, 2.0, r2)
    assert not be._fz.nodes or all(nd.op == "mul" for nd in be._fz.nodes)
    got = be.to_host(r2)
    assert be._fz.launches == launches  # nothing fused: one node groups replay the plain kernels
    np.testing.assert_allclose(got, np.abs(z * z + 1j) * 2, rtol=1e-6)


def test_complex128_declined_without_fp64(be) -> None:
    """complex128 is pairs of float64: a device without cl_khr_fp64 declines it as float64, with
    complex64 still working."""
    dev = be.device(0)
    saved = dev.fp64, dict(dev._programs), dict(dev._kernels)
    try:
        dev.fp64 = False
        dev._programs.clear()
        dev._kernels.clear()
        with pytest.raises(DTypeError, match="opencl:0.*complex128.*complex64"):
            be.from_host(View(be.allocate(0, 32), 0, (2,), (1,), pg.complex128),
                         np.ones(2, np.complex128))
        x = View(be.allocate(0, 32), 0, (2,), (1,), pg.complex128)
        with pytest.raises(DTypeError, match="opencl:0.*complex128"):
            be.unary("exp", x, x)
        y = contiguous(be, np.array([1j, 2]), pg.complex64)
        out = empty(be, (2,), pg.complex64)
        run_both(be, "unary", "exp", y, out)
        np.testing.assert_allclose(be.to_host(out.dev), np.exp([1j, 2]), rtol=1e-6)
    finally:
        dev.fp64 = saved[0]
        dev._programs.clear()
        dev._kernels.clear()
        dev._programs.update(saved[1])
        dev._kernels.update(saved[2])


def test_complex128_declined_through_the_public_api() -> None:
    """Without fp64 the factories, casts and uploads of complex128 raise DTypeError naming the
    device and dtype, as float64's do; complex64 tensors keep working."""
    backend = pg.empty(1, device="opencl:0")._storage.backend
    dev = backend.device(0)
    saved = dev.fp64, dict(dev._programs), dict(dev._kernels)
    # the launch plans other tests built while the device had fp64 (a device without it never
    # has complex128 plans): set aside for the test, put back after
    plans = {name: dict(getattr(backend, name)) for name in vars(backend)
             if name.endswith("plans") and isinstance(getattr(backend, name), dict)}
    try:
        dev.fp64 = False
        dev._programs.clear()
        dev._kernels.clear()
        for name in plans:
            getattr(backend, name).clear()
        for make in (lambda: pg.zeros(2, dtype=pg.complex128, device="opencl:0"),
                     lambda: pg.tensor(np.array([1j, 2])).to("opencl:0"),
                     lambda: pg.ones(2, dtype=pg.complex64, device="opencl:0").to(pg.complex128)):
            with pytest.raises(DTypeError, match="opencl:0.*complex128"):
                make()
                backend.synchronize(0)
        z = pg.tensor([1 + 2j, -3j], device="opencl:0")
        assert z.dtype is pg.complex64
        np.testing.assert_allclose((z * z.conj()).cpu().numpy(), [5, 9], rtol=1e-6)
    finally:
        dev.fp64 = saved[0]
        dev._programs.clear()
        dev._kernels.clear()
        dev._programs.update(saved[1])
        dev._kernels.update(saved[2])
        for name, plan in plans.items():
            getattr(backend, name).clear()
            getattr(backend, name).update(plan)


def test_captured_complex_step_is_bit_identical() -> None:
    """A captured step of complex ops (GEMM with its expanded B, casts, functions, a reduction)
    replays the traced enqueues with eager's bits."""
    from portagrad.capture import capture

    d = "opencl:0"
    b = pg.tensor(_z((5, 6), 25, pg.complex64), device=d)

    def step(x: Any) -> Any:
        y = (x @ b) * (1 - 2j) / (x[:, :1] + 3)
        return (y.exp() + y.real.to(pg.complex64)).sum(0)

    data = [pg.tensor(_z((8, 5), 26 + i, pg.complex64), device=d) for i in range(5)]
    eager = [step(x).cpu().numpy().tobytes() for x in data]
    cstep = capture(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        captured = [cstep(x).cpu().numpy().tobytes() for x in data]
    assert captured == eager
    runs = cstep._rec.runs
    assert runs and any(r.trace is not None for r in runs)
