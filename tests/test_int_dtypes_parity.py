"""Small integer dtypes (int8, int16, int32, uint8), in-place ops and numbers out of a dtype's range
against PyTorch: values, dtype and shape, on every device, contiguous and non-contiguous inputs.

Each case is written once against a library ``m`` (``portagrad`` or ``torch``) and run unchanged
on both; the inputs are numpy arrays made into tensors by each library (``"T"``: a transposed view,
``"step"``: every other element of a wider tensor).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from complex_support import complex_ok

torch = pytest.importorskip("torch")

I8 = np.array([[-128, 127, -7, 5], [100, -3, 2, -100], [64, -65, 1, 0]], np.int8)
I16 = np.array([[-32768, 32767, 300, -7], [1000, -3, 2, 9], [64, -65, 1, 0]], np.int16)
U8 = np.array([[0, 255, 7, 200], [100, 3, 2, 1], [64, 65, 128, 9]], np.uint8)
I32 = np.array([[-2**31, 2**31 - 1, -7, 5], [100, -3, 2, -100], [64, -65, 1, 0]], np.int32)
I64 = I32.astype(np.int64)
SHIFTS = np.array([[0, 1, 3, 7], [8, 9, 64, -1], [-2, -9, 2, 6]], np.int64)


def _make(m: Any, arr: np.ndarray, layout: str, device: str) -> Any:
    def base(x: np.ndarray) -> Any:
        x = np.ascontiguousarray(x)
        return torch.tensor(x) if m is torch else pg.tensor(x, device=device)

    if layout == "T":
        return base(arr.T).t()
    if layout == "step":
        big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
        big[..., ::2] = arr
        return base(big)[..., ::2]
    return base(arr)


def _flat(r: Any) -> list:
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _same(fn: Any, device: str, *inputs: Any, layouts: str = "c", inplace: bool = False) -> None:
    """``fn(m, *tensors)`` gives the same values, dtype and shape with both libraries (for an
    in-place ``fn`` also the written first input); layouts: one letter per array input
    (``c``ontiguous, ``T``ransposed, ``s``tepped), numbers passed as they are."""
    def build(m: Any) -> list:
        out, k = [], 0
        for x in inputs:
            if isinstance(x, np.ndarray):
                lay = {"c": "c", "T": "T", "s": "step"}[layouts[min(k, len(layouts) - 1)]]
                out.append(_make(m, x, lay, device))
                k += 1
            else:
                out.append(x)
        return out

    targs, pargs = build(torch), build(pg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, got = fn(torch, *targs), fn(pg, *pargs)
    want, got = _flat(want), _flat(got)
    if inplace:
        want, got = want + [targs[0]], got + [pargs[0]]
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        assert tuple(g.shape) == tuple(w.shape)
        if w.dtype.is_floating_point:  # (float results: summation orders may differ)
            np.testing.assert_allclose(g.detach().cpu().numpy(), w.numpy(), rtol=1e-6)
        else:
            np.testing.assert_array_equal(g.detach().cpu().numpy(), w.numpy())


# ------------------------------------------------------------------------------- shifts
@pytest.mark.parametrize("arr", [I8, I16, I32, I64, U8], ids=["int8", "int16", "int32", "int64",
                                                              "uint8"])
@pytest.mark.parametrize("layouts", ["c", "T", "s"])
def test_shift_operators_and_counts_out_of_range(device: str, arr: np.ndarray, layouts: str) -> None:
    # counts past the width and negative ones: left gives 0, right fills with the sign bit
    counts = np.clip(SHIFTS, np.iinfo(arr.dtype).min, np.iinfo(arr.dtype).max).astype(arr.dtype)
    _same(lambda m, a, b: (a << b, a >> b, m.bitwise_right_shift(a, b)), device, arr, counts,
          layouts=layouts)
    # numbers on either side, wrapped into the dtype as PyTorch converts them (300: 44 for int8)
    for n in (3, 9, -1, 300, -300):
        _same(lambda m, a, n=n: (a << n, a >> n, n >> a.clamp(0, 5), 5 << a.clamp(0, 5)), device,
              arr, layouts=layouts)
    _same(lambda m, a: (a.clone().__ilshift__(2), a.clone().__irshift__(300)), device, arr)


def test_shift_operators_refuse_floats(device: str) -> None:
    for m, dev in ((torch, None), (pg, device)):
        x = m.ones(3, device=dev) if m is pg else m.ones(3)
        with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
            x << 1


# ------------------------------------------------------------------------------- division
@pytest.mark.parametrize("arr", [I8, U8, I16], ids=["int8", "uint8", "int16"])
@pytest.mark.parametrize("n", [200, 1000, -3, -200])
def test_division_by_numbers_outside_the_dtype(device: str, arr: np.ndarray, n: int) -> None:
    # the number is wrapped into the dtype first (int8: 200 is -56), signs judged on that
    _same(lambda m, a: (m.div(a, n, rounding_mode="trunc"), m.div(a, n, rounding_mode="floor"),
                        m.remainder(a, n), m.fmod(a, n)), device, arr, layouts="s")


@pytest.mark.parametrize("op", [lambda a: a // 256, lambda a: a % 256, lambda a: pg.fmod(a, 256),
                                lambda a: pg.div(a, -256, rounding_mode="trunc")])
def test_division_by_a_number_wrapping_to_zero(device: str, op: Any) -> None:
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(pg.tensor([5, -7], dtype=pg.int8, device=device))


# ------------------------------------------------------------------------------- pow
@pytest.mark.parametrize("arr", [I8, U8, I32], ids=["int8", "uint8", "int32"])
def test_integer_pow_with_negative_tensor_exponents(device: str, arr: np.ndarray) -> None:
    base = np.array([[0, 1, -1, 2], [-2, 3, 1, -1], [5, 0, 1, -1]]).astype(arr.dtype)
    exps = np.array([[-1, -2, -3, -1], [2, -4, 7, 2], [0, 3, -5, -6]]).astype(np.int64)
    if arr.dtype == np.uint8:
        exps = np.abs(exps)
    _same(lambda m, a, b: (a ** b.to(a.dtype), m.pow(a, b), m.pow(2, b.to(a.dtype)),
                           a ** m.tensor(-1)), device, base, exps, layouts="T")
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        pg.tensor(arr, device=device) ** -1


# ------------------------------------------------------------------------------- alpha, addcmul
@pytest.mark.parametrize("dtypes", [("int16", "int8"), ("int32", "uint8"), ("int64", "int8"),
                                    ("float32", "int8")])
def test_alpha_and_addcmul_scale_in_the_result_dtype(device: str, dtypes: tuple) -> None:
    a, b = I16.astype(dtypes[0]), I8.astype(dtypes[1])
    _same(lambda m, x, y: (m.add(x, y, alpha=3), m.sub(x, y, alpha=-2), m.addcmul(x, y, y)),
          device, a, b, layouts="Ts")
    _same(lambda m, x, y: x.add_(y, alpha=2), device, a, b, inplace=True)
    _same(lambda m, x, y: x.addcmul_(y, y, value=2), device, a, b, layouts="sc", inplace=True)


def test_alpha_on_bool_and_complex_results(device: str) -> None:
    b = np.array([[True, False], [False, True]])
    _same(lambda m, x: (m.add(x, x, alpha=2), m.add(x, x, alpha=0), m.add(x, True, alpha=3),
                        x.clone().add_(x, alpha=5)), device, b, layouts="T")
    if complex_ok(device):  # (a backend may decline complex tensors)
        c = np.array([1 + 2j, -3j], np.complex64)
        _same(lambda m, x: m.add(x, x, alpha=0.5), device, c)
    x = pg.tensor(I8, device=device)
    for call in (lambda: pg.add(x, x, alpha=True), lambda: x.clone().sub_(x, alpha=False),
                 lambda: pg.add(x.float(), x, alpha=True)):
        with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
            call()


def test_bool_in_place_subtraction_raises_pytorchs_error(device: str) -> None:
    x = pg.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        x -= x


# ------------------------------------------------------------------------------- clamp, einsum
@pytest.mark.parametrize("arr", [I8, U8, I16], ids=["int8", "uint8", "int16"])
def test_clamp_with_zero_dim_bounds_keeps_the_dtype(device: str, arr: np.ndarray) -> None:
    def bound(m: Any, a: Any, v: Any) -> Any:  # (clamp refuses a CPU bound for another device)
        return m.tensor(v, device=a.device)

    _same(lambda m, a: (m.clamp(a, bound(m, a, 0), bound(m, a, 4)),
                        m.clamp(a, min=bound(m, a, 1)),
                        m.clamp(a, bound(m, a, -3), bound(m, a, 4.5)),
                        m.clamp(a, m.zeros_like(a), bound(m, a, 50))), device, arr, layouts="T")


@pytest.mark.parametrize("arr", [I8, U8], ids=["int8", "uint8"])
def test_einsum_integer_result_dtypes(device: str, arr: np.ndarray) -> None:
    sq = np.ascontiguousarray(arr[:, :3])
    _same(lambda m, a: (m.einsum("ij,jk->ik", a, a), m.einsum("ij,ij->", a, a),
                        m.einsum("ij,jk->", a, a), m.einsum("ij,jk->j", a, a),
                        m.einsum("ij,jk,kl->il", a, a, a), m.einsum("ij->i", a),
                        m.einsum("ii->i", a)), device, sq, layouts="T")


# ------------------------------------------------------------------------------- matrix products
@pytest.mark.parametrize("arr", [I8, I16, I32, I64, U8], ids=["int8", "int16", "int32", "int64",
                                                              "uint8"])
@pytest.mark.parametrize("layouts", ["ccc", "TTT", "sTs"])
def test_integer_linear_wraps_as_pytorch(device: str, arr: np.ndarray, layouts: str) -> None:
    # PyTorch's CPU addmm multiplies integers in their own dtype, wrapping
    _same(lambda m, x, w, b: (m.nn.functional.linear(x, w), m.nn.functional.linear(x, w, b),
                              m.nn.functional.linear(x[0], w, b), m.nn.functional.linear(x, w[0]),
                              x @ w.t(), m.addmm(b, x, w.t())),
          device, arr, np.ascontiguousarray(arr[:2, ::-1]), np.ascontiguousarray(arr[2, :2]),
          layouts=layouts)


def _both_raise(fn: Any, device: str, *inputs: np.ndarray) -> None:
    for m in (torch, pg):
        ts = [_make(m, x, "c", device) for x in inputs]
        with pytest.raises(RuntimeError):
            fn(m, *ts)


def test_bool_products_with_nothing_to_multiply(device: str) -> None:
    """PyTorch refuses bool matrix products, but returns an empty or all-False result without
    looking at the dtype when the result is empty or the inner size is 0 (dot excepted)."""
    def b(*shape: int) -> np.ndarray:
        return np.ones(shape, bool)

    _same(lambda m, x, y: (m.mm(x, y), x @ y, m.nn.functional.linear(x, y.t())), device, b(2, 0),
          b(0, 3))
    _same(lambda m, x, y: (m.mm(x, y), x @ y, m.nn.functional.linear(x, y.t())), device, b(0, 2),
          b(2, 3))
    _same(lambda m, x, y: (m.bmm(x, y), x @ y), device, b(2, 3, 0), b(2, 0, 1))
    _same(lambda m, x, y: (m.mv(x, y), x @ y), device, b(2, 0), b(0))
    _same(lambda m, x, y: (m.einsum("ij,jk->ik", x, y), m.einsum("ij,jk->ik", y.t(), x.t()),
                           m.einsum("ij,ij->ij", x, x), m.einsum("ij->", x)), device, b(2, 0),
          b(0, 3))
    _both_raise(lambda m, x, y: m.mm(x, y), device, b(2, 3), b(3, 2))
    _both_raise(lambda m, x, y: m.bmm(x, y), device, b(1, 2, 3), b(1, 3, 2))
    _both_raise(lambda m, x, y: m.nn.functional.linear(x, y), device, b(2, 3), b(2, 3))
    _both_raise(lambda m, x, y: m.einsum("ij,jk->ik", x, y), device, b(2, 3), b(3, 2))
    _both_raise(lambda m, x, y: m.dot(x, y), device, b(0), b(0))


def test_linear_refuses_a_weight_of_more_than_two_dimensions(device: str) -> None:
    # (x @ w would broadcast: PyTorch transposes the weight first, which refuses 3-D)
    _both_raise(lambda m, x, w: m.nn.functional.linear(x, w), device, np.ones(1), np.ones((1, 1, 3)))


# ------------------------------------------------------------------------------- gcd, lcm
@pytest.mark.parametrize("arr", [I8, I16, I32, U8], ids=["int8", "int16", "int32", "uint8"])
def test_gcd_lcm_at_the_dtype_limits(device: str, arr: np.ndarray) -> None:
    other = np.array([[6, -128, 3, 10], [4, 6, -6, 7], [-128, 9, 0, 0]])
    other = np.clip(other, np.iinfo(arr.dtype).min, np.iinfo(arr.dtype).max).astype(arr.dtype)
    _same(lambda m, a, b: (m.gcd(a, b), m.lcm(a, b)), device, arr, other, layouts="sT")


# ------------------------------------------------------------------------------- empty dim lists
@pytest.mark.parametrize("arr", [I8, U8, I16.astype(np.float32)], ids=["int8", "uint8", "float32"])
def test_an_empty_dim_list_reduces_every_dimension(device: str, arr: np.ndarray) -> None:
    # PyTorch: x.sum([]) is x.sum() (any/all, whose empty dims reduce nothing, are not of this kind)
    _same(lambda m, a: (a.sum([]), a.sum((), keepdim=True), m.count_nonzero(a, []), a.amax([]),
                        a.amin(()), a.any(()), a.sum([], dtype=m.int16)), device, arr, layouts="T")
    f = arr.astype(np.float64)
    _same(lambda m, a: (a.mean([]), a.var(()), a.std([], keepdim=True), m.nansum(a, []),
                        m.nanmean(a, ()), a.norm(dim=[]), m.linalg.vector_norm(a, 1, dim=())),
          device, f, layouts="s")


# ------------------------------------------------------------------------------- scatter_reduce
@pytest.mark.parametrize("arr", [I8, U8, I64, np.array(I8 > 0)], ids=["int8", "uint8", "int64",
                                                                    "bool"])
@pytest.mark.parametrize("reduce", ["amin", "amax", "mean"])
def test_scatter_reduce_integer_dtypes(device: str, arr: np.ndarray, reduce: str) -> None:
    # amin at the dtype's minimum and on uint8 (not the amax of -x, which wraps); mean stays int8
    if reduce == "mean" and arr.dtype == bool:
        return  # (PyTorch refuses a bool mean)
    index = np.array([[0, 1, 2, 0], [2, 2, 1, 0], [1, 0, 0, 2]])
    for include_self in (True, False):
        _same(lambda m, a, i, inc=include_self: a.scatter_reduce(0, i, a.flip(0), reduce,
                                                                 include_self=inc),
              device, arr, index, layouts="Tc")


# ------------------------------------------------------------------------------- 0-d uint8 keys
def test_zero_dim_uint8_index_is_a_mask(device: str) -> None:
    # PyTorch reads a uint8 index as a (deprecated) mask, a 0-d one too: a new dimension of size
    # 1 or 0, never the element at that position; int8/int16/int32 0-d keys are integers
    x = np.array([[0, 1, 2], [3, 4, 5]], np.int64)

    def write(m: Any, a: Any, k: Any) -> Any:
        a[k] = 7
        return a

    _same(lambda m, a: (a[m.tensor(1, dtype=m.uint8)], a[m.tensor(0, dtype=m.uint8)],
                        a[1, m.tensor(1, dtype=m.uint8)], a[m.tensor(1, dtype=m.int8)],
                        write(m, a.clone(), m.tensor(1, dtype=m.uint8)),
                        write(m, a.clone(), m.tensor(0, dtype=m.uint8)),
                        write(m, a.clone(), m.tensor(1, dtype=m.int16))), device, x, layouts="T")


def test_setitem_of_a_number_outside_the_dtype_raises(device: str) -> None:
    # PyTorch's checked conversion for a stored number (x[0] = 300 on int8), every key kind
    x = pg.tensor([1, 2, 3], dtype=pg.int8, device=device)
    for key in (0, slice(None), pg.tensor([0, 1], device=device), x > 1):
        with pytest.raises(RuntimeError, match="value cannot be converted to type int8"):
            x[key] = 300
