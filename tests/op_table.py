"""The op table: one :class:`OpInfo` row per op (like PyTorch's OpInfo).

A row says how to call the op, which sample inputs to feed it (several shapes: 0-dim, empty,
broadcasting pairs, non-contiguous views), which dtypes it accepts, the numpy reference, the dtype
PyTorch gives the result, whether it is differentiable (and on which input domain a finite-difference
check is meaningful) and the errors it must raise (exception type + regex of the message).

``tests/test_ops_forward.py`` drives every row on every device against the numpy reference;
``tests/test_ops_grad.py`` runs ``gradcheck`` (float64) for every differentiable row. Adding an op =
adding a row here. Nothing in this module needs torch: references are numpy or hand-written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import portagrad as pg

# ----------------------------------------------------------------------------- dtypes & promotion
F32, F64, I32, I64, B = pg.float32, pg.float64, pg.int32, pg.int64, pg.bool
FLOATS = (F32, F64)
INTS = (I32, I64)
NUMERIC = (F32, F64, I32, I64)
ALL = (F32, F64, I32, I64, B)

# PyTorch's promotion of two tensor dtypes of the same priority, written out by hand
# (bool < int32 < int64 < float32 < float64; a float always wins over an int, an int over bool).
PROMOTE = {
    (B, B): B, (B, I32): I32, (B, I64): I64, (B, F32): F32, (B, F64): F64,
    (I32, I32): I32, (I32, I64): I64, (I32, F32): F32, (I32, F64): F64,
    (I64, I64): I64, (I64, F32): F32, (I64, F64): F64,
    (F32, F32): F32, (F32, F64): F64,
    (F64, F64): F64,
}


# the dtypes of image data and checkpoints: torch.promote_types with uint8, int8, int16, bfloat16
# (torch 2.13; uint8 with int8 is int16, bfloat16 with float16 is float32)
U8, I8, I16, BF16, F16 = pg.uint8, pg.int8, pg.int16, pg.bfloat16, pg.float16
PROMOTE.update({
    (B, U8): U8, (B, I8): I8, (B, I16): I16, (B, BF16): BF16,
    (U8, U8): U8, (U8, I8): I16, (U8, I16): I16, (U8, I32): I32, (U8, I64): I64,
    (U8, F16): F16, (U8, BF16): BF16, (U8, F32): F32, (U8, F64): F64,
    (I8, I8): I8, (I8, I16): I16, (I8, I32): I32, (I8, I64): I64,
    (I8, F16): F16, (I8, BF16): BF16, (I8, F32): F32, (I8, F64): F64,
    (I16, I16): I16, (I16, I32): I32, (I16, I64): I64,
    (I16, F16): F16, (I16, BF16): BF16, (I16, F32): F32, (I16, F64): F64,
    (I32, BF16): BF16, (I64, BF16): BF16, (F16, BF16): F32,
    (BF16, BF16): BF16, (BF16, F32): F32, (BF16, F64): F64,
})


def promote(a: Any, b: Any) -> Any:
    return PROMOTE.get((a, b)) or PROMOTE[(b, a)]


def category(d: Any) -> int:
    """0 bool, 1 integer, 2 floating."""
    return 0 if d is B else 1 if d in INTS else 2


def expected_result_type(*operands: Any) -> Any:
    """PyTorch's ``result_type`` by its documented rule: dimensioned tensors take priority over
    zero-dim tensors, which take priority over Python scalars; a lower-priority operand only
    matters if its *category* (bool < integer < floating) is higher, and then contributes its own
    dtype (tensors) or the default dtype of its category (scalars: int64, float32)."""
    dims = [o.dtype for o in operands if isinstance(o, pg.Tensor) and o.dim() > 0]
    zeros = [o.dtype for o in operands if isinstance(o, pg.Tensor) and o.dim() == 0]
    scalars = [o for o in operands if not isinstance(o, pg.Tensor)]
    res = None
    for group in (dims, zeros):
        if not group:
            continue
        g = group[0]
        for d in group[1:]:
            g = promote(g, d)
        if res is None or category(g) > category(res):
            res = g
    if scalars:
        cat = max(0 if isinstance(s, bool) else 1 if isinstance(s, int) else 2 for s in scalars)
        if res is None or cat > category(res):
            res = (B, I64, pg.get_default_dtype())[cat]
    return res


# ----------------------------------------------------------------------------- samples
@dataclass
class Sample:
    """Arguments of one call: ``np.ndarray`` entries (also inside lists/tuples) become tensors on
    the device under test; everything else is passed as is. ``nc`` makes the arrays
    non-contiguous views: ``"T"`` (a transposed copy, transposed back) or ``"step"`` (every other
    element of a buffer twice as wide)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    nc: str | None = None

    def __repr__(self) -> str:
        def d(a: Any) -> str:
            if isinstance(a, np.ndarray):
                return f"{a.dtype}{list(a.shape)}"
            if isinstance(a, (list, tuple)):
                return "[" + ",".join(d(x) for x in a) + "]"
            return repr(a)
        return f"Sample({', '.join(d(a) for a in self.args)}, {self.kwargs}, nc={self.nc})"


def make_tensor(arr: np.ndarray, device: str, nc: str | None = None) -> pg.Tensor:
    if nc and arr.ndim >= 1 and arr.size:
        if nc == "T" and arr.ndim >= 2:
            t = pg.tensor(np.ascontiguousarray(np.swapaxes(arr, -1, -2)), device=device)
            t = t.transpose(-1, -2)
        else:
            big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
            big[..., ::2] = arr
            t = pg.tensor(big, device=device)[..., ::2]
        return t
    return pg.tensor(arr, device=device)


def to_device(obj: Any, device: str, nc: str | None = None) -> Any:
    if isinstance(obj, np.ndarray):
        return make_tensor(obj, device, nc)
    if isinstance(obj, list):
        return [to_device(o, device, nc) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_device(o, device, nc) for o in obj)
    return obj


def values(shape: tuple, dtype: Any, rng: np.random.Generator, domain: str = "any") -> np.ndarray:
    """Random values of ``dtype`` in a domain: ``any``, ``positive`` (>= 0.5 / >= 1), ``nonzero``
    (|x| >= 0.5, away from kinks at 0), ``unit`` ((-0.9, 0.9)), ``distinct`` (no ties; sort, max)."""
    n = math.prod(shape)
    if dtype is B:
        return np.asarray(rng.random(shape) > 0.5)
    if domain == "distinct":
        v = rng.permutation(n).astype(np.float64) - n // 2
        if dtype.is_floating_point:
            v = v * 0.37 + rng.uniform(0, 0.1, n)
        return v.reshape(shape).astype(dtype.numpy)
    if dtype.is_floating_point:
        if domain == "positive":
            v = rng.uniform(0.5, 2.0, shape)
        elif domain == "nonzero":
            v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        elif domain == "unit":
            v = rng.uniform(-0.9, 0.9, shape)
        else:
            v = rng.normal(0.0, 1.0, shape)
        return np.asarray(v, dtype=dtype.numpy)
    if domain == "positive":
        v = rng.integers(1, 6, shape)
    elif domain == "nonzero":
        v = rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)
    elif domain == "small":
        v = rng.integers(0, 4, shape)
    else:
        v = rng.integers(-5, 6, shape)
    return np.asarray(v, dtype=dtype.numpy)


def scalar_for(dtype: Any, domain: str = "any") -> Any:
    if dtype is B:
        return True
    if dtype.is_floating_point:
        return 1.5 if domain != "unit" else 0.5
    return 2 if domain != "nonzero" else -2


UNARY_SHAPES = [((2, 3), None), ((), None), ((0,), None), ((4,), None), ((2, 3, 2), None),
                ((3, 4), "T"), ((2, 3), "step")]
BINARY_SHAPES = [((2, 3), (2, 3), None), ((2, 3), (3,), None), ((3, 1), (1, 4), None),
                 ((), (2, 3), None), ((2, 3), (), None), ((0, 3), (1, 3), None),
                 ((2, 1, 3), (4, 3), None), ((), (), None), ((3, 4), (3, 4), "T"),
                 ((2, 3), (1, 3), "step")]


def unary_samples(domain: str = "any", **kw: Any) -> Callable:
    def gen(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        return [Sample((values(s, dtype, rng, domain),), dict(kw), nc) for s, nc in UNARY_SHAPES]
    return gen


def binary_samples(domains: tuple = ("any", "any"), scalars: bool = True, **kw: Any) -> Callable:
    def gen(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        out = [Sample((values(a, dtype, rng, domains[0]), values(b, dtype, rng, domains[1])),
                      dict(kw), nc) for a, b, nc in BINARY_SHAPES]
        if scalars:
            out.append(Sample((values((2, 3), dtype, rng, domains[0]),
                               scalar_for(dtype, domains[1])), dict(kw)))
        return out
    return gen


def reduction_samples(domain: str = "any", dims: Sequence = (None, 1, -1, (0, 2)), keepdim: bool = True,
                      empty: bool = True, zero_dim: bool = True, dim_kw: str = "dim",
                      **kw: Any) -> Callable:
    def gen(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        out = []
        for i, d in enumerate(dims):
            k = dict(kw)
            if d is not None:
                k[dim_kw] = d
            if keepdim and i % 2 == 1:
                k["keepdim"] = True
            out.append(Sample((values((2, 3, 4), dtype, rng, domain),), k))
        out.append(Sample((values((3, 4), dtype, rng, domain),), dict(kw, **{dim_kw: 0}), "T"))
        if zero_dim:
            out.append(Sample((values((), dtype, rng, domain),), dict(kw)))
            out.append(Sample((values((), dtype, rng, domain),), dict(kw, **{dim_kw: 0})))
        if empty:
            out.append(Sample((values((0, 3), dtype, rng, domain),), dict(kw, **{dim_kw: 0})))
        return out
    return gen


def fixed(*samples: Callable[[Any, np.random.Generator], Sample]) -> Callable:
    """Samples built by hand: each entry is ``(dtype, rng) -> Sample``."""
    def gen(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        return [s(dtype, rng) for s in samples]
    return gen


# ----------------------------------------------------------------------------- the row
@dataclass
class ErrorCase:
    """``fn(device)`` must raise ``exc`` with a message matching ``match``."""

    fn: Callable[[str], Any]
    exc: type
    match: str
    name: str = ""


@dataclass
class OpInfo:
    name: str
    op: Callable  # called with the sample's tensors and kwargs
    ref: Callable | None  # numpy reference on the sample's arrays (None: forward not compared)
    samples: Callable[[Any, np.random.Generator], list[Sample]]
    dtypes: tuple = FLOATS
    out_dtype: Any = "promote"  # "promote", "float", "same", "bool", "int64", "sum", or a dtype
    method: str | None = None  # Tensor method with the same signature (checked to agree)
    grad: bool = False  # differentiable: gradcheck on float64 samples
    gradgrad: bool = False  # also gradgradcheck (a representative subset)
    grad_samples: Callable | None = None  # samples for gradcheck (default: ``samples``, small ones)
    view: bool = False  # the result shares storage with the first input
    inplace: bool = False  # the op returns its (mutated) first input
    errors: list = field(default_factory=list)
    rtol: float = 1e-5
    atol: float = 1e-6
    factory: bool = False  # no tensor inputs: the op takes ``device=``

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"


# ----------------------------------------------------------------------------- numpy references
def _np_axis(dim: Any, ndim: int) -> Any:
    if dim is None or dim == ():  # PyTorch: an empty dim list reduces everything
        return None
    if isinstance(dim, (list, tuple)):
        return tuple(dim)
    return dim if ndim else None


def red(fn: Callable, **extra: Any) -> Callable:
    """numpy reduction with PyTorch's ``dim``/``keepdim``."""
    def ref(x: np.ndarray, dim: Any = None, keepdim: bool = False, **kw: Any) -> np.ndarray:
        return fn(x, axis=_np_axis(dim, x.ndim), keepdims=keepdim, **extra, **kw)
    return ref


def np_logsumexp(x: np.ndarray, dim: Any, keepdim: bool = False) -> np.ndarray:
    x = x.astype(np.float64)
    ax = _np_axis(dim, x.ndim)
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=ax, keepdims=keepdim))
    m = np.max(x, axis=ax, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return out if keepdim or ax is None and x.ndim == 0 else np.squeeze(out, axis=ax)


def np_max_dim(x: np.ndarray, dim: int, keepdim: bool = False) -> tuple:
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    i = np.argmax(x, axis=dim, keepdims=True)
    v = np.take_along_axis(x, i, dim)
    if not keepdim:
        v, i = np.squeeze(v, dim), np.squeeze(i, dim)
    return v, i


def np_min_dim(x: np.ndarray, dim: int, keepdim: bool = False) -> tuple:
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    i = np.argmin(x, axis=dim, keepdims=True)
    v = np.take_along_axis(x, i, dim)
    if not keepdim:
        v, i = np.squeeze(v, dim), np.squeeze(i, dim)
    return v, i


def np_arg(fn: Callable) -> Callable:
    def ref(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        if dim is None:
            r = fn(x.reshape(-1))
            return np.reshape(r, (1,) * x.ndim) if keepdim else np.asarray(r)
        if x.ndim == 0:
            return np.array(0, np.int64)
        return fn(x, axis=dim, keepdims=keepdim)
    return ref


def np_norm(x: np.ndarray, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> np.ndarray:
    ax = _np_axis(dim, x.ndim)
    a = np.abs(x.astype(np.float64))
    if p in ("fro", 2):
        return np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    if p == 1:
        return np.sum(a, axis=ax, keepdims=keepdim)
    if p == math.inf:
        return np.max(a, axis=ax, keepdims=keepdim)
    return np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1 / p)


def np_cumsum(x: np.ndarray, dim: int) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    return np.cumsum(x, axis=dim)


def np_trunc_div(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.trunc(a / b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def np_sort(x: np.ndarray, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple:
    if x.ndim == 0:
        return x.copy(), np.array(0, np.int64)
    i = np.argsort(-x.astype(np.float64) if descending else x, axis=dim, kind="stable")
    return np.take_along_axis(x, i, dim), i


def np_topk(x: np.ndarray, k: int, dim: int = -1, largest: bool = True) -> tuple:
    v, i = np_sort(x, dim, descending=largest)
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def np_split(x: np.ndarray, size: Any, dim: int = 0) -> tuple:
    n = x.shape[dim]
    if isinstance(size, int):
        bounds = list(range(size, n, size))
    else:
        bounds = list(np.cumsum(size)[:-1])
    return tuple(np.split(x, bounds, axis=dim))


def np_chunk(x: np.ndarray, chunks: int, dim: int = 0) -> tuple:
    n = x.shape[dim]
    size = -(-n // chunks)
    return np_split(x, size, dim)


def np_gather(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    return np.take_along_axis(x, index, dim)


def np_scatter(x: np.ndarray, dim: int, index: np.ndarray, src: Any, add: bool = False
               ) -> np.ndarray:
    out = x.copy()
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        if add:
            out[tuple(tgt)] += src[pos]
        else:
            out[tuple(tgt)] = src[pos]
    return out


def np_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def np_setitem(x: np.ndarray, key: Any, value: Any) -> np.ndarray:
    out = x.copy()
    out[key] = value
    return out


def np_masked_fill(x: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    return np.where(mask, np.asarray(value, dtype=x.dtype), x)


def setitem_op(x: pg.Tensor, key: Any, value: Any) -> pg.Tensor:
    y = x.clone()
    y[key] = value
    return y


# ----------------------------------------------------------------------------- sample helpers
def S(*args: Any, nc: str | None = None, **kwargs: Any) -> Callable:
    """A hand-written sample: ``args`` entries that are shapes ``("x", shape, domain)`` become
    random arrays of the row's dtype; ``("i", array)`` an int64 index array; anything else as is."""
    def build(dtype: Any, rng: np.random.Generator) -> Sample:
        def conv(a: Any) -> Any:
            if isinstance(a, tuple) and a and a[0] == "x":
                return values(a[1], dtype, rng, a[2] if len(a) > 2 else "any")
            if isinstance(a, tuple) and a and a[0] == "i":
                return np.asarray(a[1], dtype=np.int64)
            if isinstance(a, tuple) and a and a[0] == "m":
                return np.asarray(a[1], dtype=np.bool_)
            if isinstance(a, list):
                return [conv(v) for v in a]
            return a
        return Sample(tuple(conv(a) for a in args), dict(kwargs), nc)
    return build


def X(shape: tuple, domain: str = "any") -> tuple:
    return ("x", shape, domain)


def IDX(arr: Any) -> tuple:
    return ("i", arr)


def MASK(arr: Any) -> tuple:
    return ("m", arr)


def small(samples: Callable, limit: int = 30, count: int = 4) -> Callable:
    """The first ``count`` non-empty samples with at most ``limit`` input elements (gradcheck)."""
    def gen(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        out = []
        for s in samples(dtype, rng):
            arrays = [a for a in _flat(s.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
            n = sum(a.size for a in arrays)
            if arrays and all(a.size for a in arrays) and n <= limit:
                out.append(s)
            if len(out) == count:
                break
        return out
    return gen


def _flat(obj: Any) -> list:
    if isinstance(obj, (list, tuple)):
        return [y for x in obj for y in _flat(x)]
    return [obj]


# ----------------------------------------------------------------------------- error helpers
def T(shape: tuple, device: str, dtype: Any = F32) -> pg.Tensor:
    return pg.zeros(shape, dtype=dtype, device=device)


def E(fn: Callable[[str], Any], exc: type, match: str, name: str = "") -> ErrorCase:
    return ErrorCase(fn, exc, match, name)


def shape_mismatch(op: Callable) -> ErrorCase:
    return E(lambda d: op(T((2, 3), d), T((4,), d)), RuntimeError,
             r"size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
             r"dimension 1", "broadcast")


def dim_range(op: Callable, ndim: int = 2, dim: int = 5, span: int | None = None) -> ErrorCase:
    n = ndim if span is None else span
    return E(lambda d: op(T((2, 3, 4)[:ndim], d), dim), IndexError,
             rf"Dimension out of range \(expected to be in range of \[-{n}, {n - 1}\], "
             rf"but got {dim}\)", "dim")


# ----------------------------------------------------------------------------- the rows
def _binary_rows() -> list[OpInfo]:
    rows = [
        OpInfo("add", pg.add, np.add, binary_samples(), ALL, method="add", grad=True,
               gradgrad=True, errors=[shape_mismatch(pg.add)]),
        OpInfo("add_alpha", lambda a, b: pg.add(a, b, alpha=2), lambda a, b: a + 2 * b,
               binary_samples(), NUMERIC, grad=True),
        OpInfo("sub", pg.sub, np.subtract, binary_samples(), NUMERIC, method="sub", grad=True,
               errors=[shape_mismatch(pg.sub),
                       E(lambda d: T((2,), d, B) - T((2,), d, B), RuntimeError,
                         r"Subtraction, the `-` operator, with two bool tensors is not supported")]),
        OpInfo("mul", pg.mul, np.multiply, binary_samples(), ALL, method="mul", grad=True,
               gradgrad=True, errors=[shape_mismatch(pg.mul)]),
        OpInfo("div", pg.div, lambda a, b: np.true_divide(a, b),
               binary_samples(("any", "nonzero")), NUMERIC, "float", method="div", grad=True,
               gradgrad=True, errors=[
                   shape_mismatch(pg.div),
                   E(lambda d: pg.div(T((2,), d), T((2,), d), rounding_mode="bad"), ValueError,
                     r"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     r"found 'bad'")]),
        OpInfo("div_trunc", lambda a, b: pg.div(a, b, rounding_mode="trunc"), np_trunc_div,
               binary_samples(("any", "nonzero")), NUMERIC, "promote"),
        OpInfo("div_floor", lambda a, b: pg.div(a, b, rounding_mode="floor"),
               lambda a, b: np.floor_divide(a, b), binary_samples(("any", "nonzero")), NUMERIC),
        OpInfo("floor_divide", pg.floor_divide, np.floor_divide,
               binary_samples(("any", "nonzero")), NUMERIC, method="floor_divide"),
        OpInfo("remainder", pg.remainder, np.mod, binary_samples(("any", "nonzero")), NUMERIC,
               method="remainder", rtol=1e-4, atol=1e-5),
        OpInfo("fmod", pg.fmod, np.fmod, binary_samples(("any", "nonzero")), NUMERIC,
               method="fmod", rtol=1e-4, atol=1e-5),
        OpInfo("pow", pg.pow, np.power, binary_samples(("positive", "unit")), FLOATS,
               method="pow", grad=True, gradgrad=True, rtol=1e-4),
        OpInfo("pow_int", pg.pow, np.power, binary_samples(("any", "small")), INTS,
               errors=[E(lambda d: pg.pow(pg.tensor([2, 3], device=d), -1), RuntimeError,
                         r"Integers to negative integer powers are not allowed")]),
        OpInfo("maximum", pg.maximum, np.maximum, binary_samples(("distinct", "distinct")), ALL,
               method="maximum", grad=True, errors=[shape_mismatch(pg.maximum)]),
        OpInfo("minimum", pg.minimum, np.minimum, binary_samples(("distinct", "distinct")), ALL,
               method="minimum", grad=True),
        OpInfo("lerp", lambda a, b: pg.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a),
               binary_samples(scalars=False), FLOATS, method=None, grad=True, rtol=1e-4),
        OpInfo("lerp_tensor_weight", lambda a, b, w: pg.lerp(a, b, w),
               lambda a, b, w: a + w * (b - a),
               fixed(S(X((2, 3)), X((2, 3)), X((2, 3), "unit")), S(X((2, 3)), X((3,)), X(())),
                     S(X((3, 4)), X((3, 4)), X((3, 4), "unit"), nc="T")), FLOATS, grad=True,
               rtol=1e-4),
        OpInfo("where", lambda c, a, b: pg.where(c, a, b), np.where,
               fixed(S(MASK([[True, False, True], [False, False, True]]), X((2, 3)), X((2, 3))),
                     S(MASK([True, False, True]), X((2, 1)), X(())),
                     S(MASK([[True], [False]]), X((2, 3)), 0.0),
                     S(MASK([[True, False], [False, True]]), X((2, 2)), X((2, 2)), nc="T"),
                     S(MASK(np.zeros((0, 3), bool)), X((0, 3)), X((3,)))),
               NUMERIC, grad=True, gradgrad=True,
               errors=[E(lambda d: pg.where(T((2,), d, B), T((3,), d), T((3,), d)), RuntimeError,
                         r"size of tensor a \(2\) must match the size of tensor b \(3\)")]),
        OpInfo("atan2", pg.atan2, np.arctan2, binary_samples(("nonzero", "nonzero"), scalars=False),
               FLOATS, "float", method="atan2", grad=True, rtol=1e-4),
    ]
    # comparisons: always bool results, both operand orders with scalars
    for name, fn, ref in (("eq", pg.eq, np.equal), ("ne", pg.ne, np.not_equal),
                          ("lt", pg.lt, np.less), ("le", pg.le, np.less_equal),
                          ("gt", pg.gt, np.greater), ("ge", pg.ge, np.greater_equal)):
        rows.append(OpInfo(name, fn, ref, binary_samples(("small", "small")), ALL, "bool",
                           method=name, errors=[shape_mismatch(fn)]))
    for name, fn, ref in (("logical_and", pg.logical_and, np.logical_and),
                          ("logical_or", pg.logical_or, np.logical_or),
                          ("logical_xor", pg.logical_xor, np.logical_xor)):
        rows.append(OpInfo(name, fn, ref, binary_samples(("small", "small")), ALL, "bool",
                           method=name))
    for name, fn, ref in (("bitwise_and", pg.bitwise_and, np.bitwise_and),
                          ("bitwise_or", pg.bitwise_or, np.bitwise_or),
                          ("bitwise_xor", pg.bitwise_xor, np.bitwise_xor)):
        rows.append(OpInfo(name, fn, ref, binary_samples(), (I32, I64, B), method=name,
                           errors=[E(lambda d, fn=fn: fn(T((2,), d), T((2,), d)), RuntimeError,
                                     rf'"{name}_cpu" not implemented for \'Float\'')]))
    # Python operators, including the reflected forms (scalar on the left)
    import operator as o

    for name, fn, dts, samp, grad in (
            ("__add__", o.add, ALL, binary_samples(), True),
            ("__sub__", o.sub, NUMERIC, binary_samples(), True),
            ("__mul__", o.mul, ALL, binary_samples(), True),
            ("__truediv__", o.truediv, NUMERIC, binary_samples(("any", "nonzero")), True),
            ("__floordiv__", o.floordiv, NUMERIC, binary_samples(("any", "nonzero")), False),
            ("__mod__", o.mod, NUMERIC, binary_samples(("any", "nonzero")), False),
            ("__pow__", o.pow, FLOATS, binary_samples(("positive", "unit")), True),
            ("__eq__", o.eq, ALL, binary_samples(("small", "small")), False),
            ("__ne__", o.ne, ALL, binary_samples(("small", "small")), False),
            ("__lt__", o.lt, ALL, binary_samples(("small", "small")), False),
            ("__le__", o.le, ALL, binary_samples(("small", "small")), False),
            ("__gt__", o.gt, ALL, binary_samples(("small", "small")), False),
            ("__ge__", o.ge, ALL, binary_samples(("small", "small")), False),
            ("__and__", o.and_, (I32, I64, B), binary_samples(), False),
            ("__or__", o.or_, (I32, I64, B), binary_samples(), False),
            ("__xor__", o.xor, (I32, I64, B), binary_samples(), False)):
        od = "bool" if name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__") else \
            "float" if name == "__truediv__" else "promote"
        rows.append(OpInfo(name, fn, fn, samp, dts, od, grad=grad, rtol=1e-4, atol=1e-5))
        # reflected: python scalar on the left
        rname = "__r" + name[2:]
        if name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
            continue

        def rsamples(dtype: Any, rng: np.random.Generator, name: str = name) -> list[Sample]:
            dom = "positive" if name == "__pow__" else "nonzero" if name in (
                "__truediv__", "__floordiv__", "__mod__") else "any"
            return [Sample((scalar_for(dtype, "unit" if name == "__pow__" else "any"),
                            values(s, dtype, rng, dom)), {}, nc)
                    for s, nc in (((2, 3), None), ((), None), ((3, 4), "T"), ((0,), None))]

        rows.append(OpInfo(rname, fn, fn, rsamples, dts, od, grad=grad, rtol=1e-4, atol=1e-5))
    return rows


def _unary_rows() -> list[OpInfo]:
    rows = []
    for name, fn, ref, dom, dts, od, grad in (
            ("neg", pg.neg, np.negative, "any", NUMERIC, "same", True),
            ("exp", pg.exp, lambda x: np.exp(x.astype(np.float64)), "any", ALL, "float", True),
            ("log", pg.log, np.log, "positive", ALL[:4], "float", True),
            ("log1p", pg.log1p, np.log1p, "positive", NUMERIC, "float", True),
            ("sqrt", pg.sqrt, np.sqrt, "positive", NUMERIC, "float", True),
            ("rsqrt", pg.rsqrt, lambda x: 1 / np.sqrt(x), "positive", NUMERIC, "float", True),
            ("abs", pg.abs, np.abs, "nonzero", NUMERIC, "same", True),
            ("sign", pg.sign, np.sign, "any", NUMERIC, "same", True),
            ("sin", pg.sin, np.sin, "any", NUMERIC, "float", True),
            ("cos", pg.cos, np.cos, "any", NUMERIC, "float", True),
            ("tanh", pg.tanh, np.tanh, "any", NUMERIC, "float", True),
            ("sigmoid", pg.sigmoid, lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), "any",
             NUMERIC, "float", True),
            ("relu", pg.relu, lambda x: np.maximum(x, 0).astype(x.dtype), "nonzero", NUMERIC,
             "same", True),
            ("square", pg.square, np.square, "any", NUMERIC, "same", True),
            ("reciprocal", pg.reciprocal, lambda x: 1 / x, "nonzero", FLOATS, "float", True),
            ("floor", pg.floor, np.floor, "any", NUMERIC, "same", False),
            ("ceil", pg.ceil, np.ceil, "any", NUMERIC, "same", False),
            ("trunc", pg.trunc, np.trunc, "any", NUMERIC, "same", False),
            ("round", pg.round, np.round, "any", NUMERIC, "same", False),
            ("logical_not", pg.logical_not, np.logical_not, "small", ALL, "bool", False),
            ("isnan", pg.isnan, np.isnan, "any", ALL[:4], "bool", False),
            ("bitwise_not", pg.bitwise_not, np.invert, "any", (I32, I64, B), "same", False),
    ):
        errs = {"neg": [E(lambda d: -T((2,), d, B), RuntimeError,
                          r"Negation, the `-` operator, on a bool tensor is not supported")],
                "relu": [E(lambda d: pg.relu(T((2,), d, B)), RuntimeError,
                           r"Boolean inputs not supported for relu")]}.get(name, [])
        rows.append(OpInfo(name, fn, ref, unary_samples(dom), dts, od, method=name, grad=grad,
                           gradgrad=name in ("exp", "log", "sigmoid", "tanh", "abs"),
                           rtol=1e-4 if name in ("rsqrt", "sigmoid") else 1e-5,
                           errors=[E(lambda d, fn=fn: fn([1.0, 2.0]), TypeError,
                                     rf"{name}\(\): argument 'input' must be Tensor, not list")]
                           if name in ("exp", "log", "sqrt", "sin") else errs))
    rows.append(OpInfo("__neg__", lambda x: -x, np.negative, unary_samples(), NUMERIC, "same",
                       grad=True))
    rows.append(OpInfo("__abs__", lambda x: abs(x), np.abs, unary_samples("nonzero"), NUMERIC,
                       "same", grad=True))
    rows.append(OpInfo("__invert__", lambda x: ~x, np.invert, unary_samples(), (I32, I64, B),
                       "same"))
    rows += [
        OpInfo("clamp", lambda x: pg.clamp(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5),
               unary_samples(), FLOATS, "same", method=None, grad=True, gradgrad=True,
               errors=[E(lambda d: pg.clamp(T((2,), d)), RuntimeError,
                         r"At least one of 'min' or 'max' must not be None")]),
        OpInfo("clamp_int", lambda x: pg.clamp(x, min=-1, max=2), lambda x: np.clip(x, -1, 2),
               unary_samples(), INTS, "same"),
        OpInfo("clamp_min", lambda x: x.clamp(min=0.2), lambda x: np.maximum(x, 0.2),
               unary_samples(), FLOATS, "same", grad=True),
        OpInfo("clamp_max_int_tensor_float_bound", lambda x: pg.clamp(x, max=1.5),
               lambda x: np.minimum(x.astype(np.float32), 1.5), unary_samples(), INTS, F32),
        OpInfo("clamp_tensor", lambda x, lo, hi: pg.clamp(x, lo, hi),
               lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
               fixed(S(X((2, 3)), X((2, 3)) , X((3,))), S(X((3, 4)), X(()), X((3, 4)), nc="T")),
               FLOATS, "same", grad=True),
    ]
    return rows


def _reduction_rows() -> list[OpInfo]:
    return [
        OpInfo("sum", pg.sum, red(np.sum), reduction_samples(), ALL, "sum", method="sum",
               grad=True, gradgrad=True, errors=[dim_range(pg.sum, 3, 3),
                                                 E(lambda d: pg.sum(T((2, 3), d), (0, 0)),
                                                   RuntimeError, r"appears multiple times")]),
        OpInfo("mean", pg.mean, red(np.mean), reduction_samples(), FLOATS, "same", method="mean",
               grad=True, gradgrad=True,
               errors=[E(lambda d: pg.mean(T((2,), d, I64)), RuntimeError,
                         r"mean\(\): could not infer output dtype. Input dtype must be either a "
                         r"floating point or complex dtype. Got: Long")]),
        OpInfo("prod", pg.prod, red(np.prod), reduction_samples(dims=(None, 1, -1)), NUMERIC,
               "sum", method="prod", grad=True, rtol=1e-4),
        OpInfo("max", lambda x: pg.max(x), lambda x: np.max(x),
               fixed(S(X((2, 3), "distinct")), S(X((), "distinct")),
                     S(X((3, 4), "distinct"), nc="T")), ALL, "same", grad=True,
               errors=[E(lambda d: pg.max(T((0, 3), d)), RuntimeError,
                         r"Expected reduction dim to be specified for input.numel\(\) == 0")]),
        OpInfo("max_dim", lambda x, **k: pg.max(x, **k), np_max_dim,
               reduction_samples("distinct", dims=(1, -1), empty=False, zero_dim=True)
               if False else fixed(S(X((2, 3, 4), "distinct"), dim=1),
                                   S(X((2, 3, 4), "distinct"), dim=-1, keepdim=True),
                                   S(X((3, 4), "distinct"), dim=0, nc="T"),
                                   S(X((), "distinct"), dim=0)),
               NUMERIC, "same", grad=True,
               errors=[E(lambda d: pg.max(T((0, 3), d), 0), IndexError,
                         r"Expected reduction dim 0 to have non-zero size"),
                       dim_range(lambda x, dd: pg.max(x, dd), 2, 2)]),
        OpInfo("min_dim", lambda x, **k: pg.min(x, **k), np_min_dim,
               fixed(S(X((2, 3, 4), "distinct"), dim=1),
                     S(X((2, 3, 4), "distinct"), dim=-1, keepdim=True),
                     S(X((3, 4), "distinct"), dim=0, nc="T")), NUMERIC, "same", grad=True),
        OpInfo("amax", pg.amax, red(np.max),
               reduction_samples("distinct", dims=((), 1, -1, (0, 2)), empty=False), NUMERIC,
               "same", method="amax", grad=True),
        OpInfo("amin", pg.amin, red(np.min),
               reduction_samples("distinct", dims=((), 1, -1, (0, 2)), empty=False), NUMERIC,
               "same", method="amin", grad=True),
        OpInfo("argmax", pg.argmax, np_arg(np.argmax),
               reduction_samples("distinct", dims=(None, 1, -1, 0), empty=False), NUMERIC,
               I64, method="argmax",
               errors=[E(lambda d: pg.argmax(T((0,), d)), IndexError,
                         r"Expected reduction dim to be specified")]),
        OpInfo("argmin", pg.argmin, np_arg(np.argmin),
               reduction_samples("distinct", dims=(None, 1, -1, 0), empty=False), NUMERIC,
               I64, method="argmin"),
        OpInfo("var", pg.var, red(np.var, ddof=1), reduction_samples(empty=False, zero_dim=False),
               FLOATS, "same", method="var", grad=True, gradgrad=True, rtol=1e-4,
               errors=[E(lambda d: pg.var(T((2,), d, I64)), RuntimeError,
                         r"std and var only support floating point")]),
        OpInfo("var_correction0", lambda x, **k: pg.var(x, correction=0, **k), red(np.var),
               reduction_samples(empty=False), FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("std", lambda x, **k: pg.std(x, correction=2, **k), red(np.std, ddof=2),
               reduction_samples(dims=(None, 2, -1, (1, 2)), empty=False, zero_dim=False),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("logsumexp", pg.logsumexp, np_logsumexp,
               reduction_samples(dims=(0, 1, -1, (0, 2)), zero_dim=False), NUMERIC, "float",
               method="logsumexp", grad=True, gradgrad=True, rtol=1e-4),
        OpInfo("norm", pg.norm, np_norm, reduction_samples(empty=False), FLOATS, "same",
               method="norm", grad=True, rtol=1e-4,
               errors=[E(lambda d: pg.norm(T((2,), d, I64)), RuntimeError,
                         r"Expected a floating point or complex tensor as input. Got Long")]),
        OpInfo("norm_p", lambda x, **k: pg.norm(x, **k), np_norm,
               fixed(S(X((2, 3), "nonzero"), p=1), S(X((2, 3), "nonzero"), p=1, dim=1),
                     S(X((2, 3), "distinct"), p=math.inf), S(X((2, 3), "nonzero"), p=3, dim=0),
                     S(X((3, 4), "nonzero"), p=1, dim=1, keepdim=True, nc="T")),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("any", pg.any, red(np.any), reduction_samples("small"), ALL, "bool", method="any"),
        OpInfo("all", pg.all, red(np.all), reduction_samples("small"), ALL, "bool", method="all"),
        OpInfo("cumsum", pg.cumsum, np_cumsum,
               fixed(S(X((2, 3, 4)), 1), S(X((2, 3, 4)), -1), S(X((3, 4)), 0, nc="T"),
                     S(X(()), 0), S(X((0, 3)), 0)), NUMERIC + (B,), "sum", method="cumsum",
               grad=True, gradgrad=True, rtol=1e-4, errors=[dim_range(pg.cumsum)]),
    ]


def _linalg_rows() -> list[OpInfo]:
    mm_samples = fixed(
        S(X((2, 3)), X((3, 4))), S(X((3,)), X((3,))), S(X((3,)), X((3, 2))),
        S(X((2, 3)), X((3,))), S(X((2, 2, 3)), X((3, 2))), S(X((2, 3)), X((4, 3, 2))),
        S(X((2, 1, 2, 3)), X((3, 3, 2))), S(X((3,)), X((2, 3, 4))), S(X((2, 3, 4)), X((4,))),
        S(X((3, 4)), X((4, 3)), nc="T"), S(X((0, 3)), X((3, 2))), S(X((2, 0)), X((0, 3))))
    mismatch = E(lambda d: pg.matmul(T((2, 3), d), T((4, 5), d)), RuntimeError,
                 r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")
    return [
        OpInfo("matmul", pg.matmul, np_matmul, mm_samples, FLOATS + INTS, "same", method="matmul",
               grad=True, gradgrad=True, rtol=1e-4, atol=1e-5, errors=[
                   mismatch,
                   E(lambda d: pg.matmul(T((), d), T((3,), d)), RuntimeError,
                     r"both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
                   E(lambda d: pg.matmul(T((2, 2, 3), d), T((3, 3, 2), d)), RuntimeError,
                     r"size of tensor a \(2\) must match the size of tensor b \(3\)"),
                   E(lambda d: pg.matmul(T((2, 3), d), T((3, 2), d, F64)), RuntimeError,
                     r"expected m1 and m2 to have the same dtype, but got: portagrad.float32 != "
                     r"portagrad.float64"),
                   E(lambda d: pg.matmul(T((2, 3), d, B), T((3, 2), d, B)), RuntimeError,
                     r"matmul: bool tensors are not supported")]),
        OpInfo("__matmul__", lambda a, b: a @ b, np_matmul, mm_samples, FLOATS + INTS, "same",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("mm", pg.mm, np_matmul,
               fixed(S(X((2, 3)), X((3, 4))), S(X((3, 4)), X((4, 2)), nc="T"),
                     S(X((0, 3)), X((3, 2)))), FLOATS + INTS, "same", method="mm", grad=True,
               rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.mm(T((2, 3), d), T((3,), d)), RuntimeError,
                         r"mat2 must be a matrix")]),
        OpInfo("bmm", pg.bmm, np_matmul,
               fixed(S(X((2, 2, 3)), X((2, 3, 4))), S(X((2, 3, 3)), X((2, 3, 3)), nc="T"),
                     S(X((0, 2, 3)), X((0, 3, 1)))), FLOATS + INTS, "same",
               method="bmm", grad=True,
               gradgrad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.bmm(T((2, 2, 3), d), T((3, 3, 2), d)), RuntimeError,
                         r"Expected size for first two dimensions of batch2 tensor to be: "
                         r"\[2, 3\] but got: \[3, 3\]")]),
        OpInfo("dot", pg.dot, lambda a, b: np.dot(a.astype(np.float64), b),
               fixed(S(X((3,)), X((3,))), S(X((0,)), X((0,))), S(X((4,)), X((4,)), nc="step")),
               FLOATS + INTS, "same", method="dot", grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.dot(T((3,), d), T((4,), d)), RuntimeError,
                         r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
                       E(lambda d: pg.dot(T((3,), d), T((3,), d, F64)), RuntimeError,
                         r"dot : expected both vectors to have same dtype, but found Float and "
                         r"Double"),
                       E(lambda d: pg.dot(T((3,), d), T((3, 1), d)), RuntimeError,
                         r"1D tensors expected, but got 1D and 2D tensors")]),
        OpInfo("outer", pg.outer, np.outer,
               fixed(S(X((3,)), X((2,))), S(X((0,)), X((2,))), S(X((4,)), X((3,)), nc="step")),
               NUMERIC, "promote", method="outer", grad=True,
               errors=[E(lambda d: pg.outer(T((2, 2), d), T((2,), d)), RuntimeError,
                         r"outer: Expected 1-D argument self, but got 2-D")]),
    ]


def _view_rows() -> list[OpInfo]:
    base = fixed(S(X((2, 3, 4))), S(X((3, 4)), nc="T"), S(X(())), S(X((0, 3))))
    return [
        OpInfo("view", lambda x: x.view(-1), lambda x: x.reshape(-1),
               fixed(S(X((2, 3, 4))), S(X(())), S(X((0, 3)))), ALL, "same", view=True, grad=True,
               errors=[E(lambda d: T((3, 4), d).t().view(-1), RuntimeError,
                         r"view size is not compatible with input tensor's size and stride"),
                       E(lambda d: T((3, 4), d).view(5, -1), RuntimeError,
                         r"shape '\[5, -1\]' is invalid for input of size 12")]),
        OpInfo("view_shape", lambda x: x.view(3, 2, 4), lambda x: x.reshape(3, 2, 4),
               fixed(S(X((2, 3, 4))), S(X((6, 4)))), ALL, "same", view=True, grad=True),
        OpInfo("reshape", lambda x: pg.reshape(x, (4, -1)), lambda x: x.reshape(4, -1),
               fixed(S(X((2, 3, 4))), S(X((3, 4)), nc="T"), S(X((0, 4)))), ALL, "same",
               method=None, grad=True,
               errors=[E(lambda d: T((3, 4), d).reshape(-1, -1), RuntimeError,
                         r"only one dimension can be inferred")]),
        OpInfo("transpose", lambda x: pg.transpose(x, 0, -1), lambda x: np.swapaxes(x, 0, -1),
               fixed(S(X((2, 3, 4))), S(X((3, 4)), nc="T"), S(X((0, 3)))), ALL, "same",
               view=True, grad=True, errors=[dim_range(lambda x, d: x.transpose(0, d), 2, 2)]),
        OpInfo("t", pg.t, lambda x: x.T, fixed(S(X((2, 3))), S(X((3,))), S(X(())),
                                            S(X((3, 4)), nc="T")), ALL, "same", method="t",
               view=True, grad=True,
               errors=[E(lambda d: T((2, 3, 4), d).t(), RuntimeError,
                         r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D")]),
        OpInfo("permute", lambda x: pg.permute(x, (2, 0, 1)), lambda x: np.transpose(x, (2, 0, 1)),
               fixed(S(X((2, 3, 4))), S(X((2, 0, 3)))), ALL, "same", view=True, grad=True,
               errors=[E(lambda d: T((2, 3), d).permute(0, 0), RuntimeError,
                         r"duplicate dims are not allowed"),
                       E(lambda d: T((2, 3), d).permute(0), RuntimeError,
                         r"number of dimensions in the tensor input does not match")]),
        OpInfo("expand", lambda x: x.expand(2, -1, 3), lambda x: np.broadcast_to(x, (2, 4, 3)),
               fixed(S(X((4, 1))), S(X((1, 4, 3))), S(X((4, 3)), nc="T")), ALL, "same",
               view=True, grad=True, gradgrad=True,
               errors=[E(lambda d: T((), d).expand(2, -1, 3), RuntimeError, r"invalid size|-1"),
                       E(lambda d: T((3,), d).expand(2, 4), RuntimeError,
                         r"The expanded size of the tensor \(4\) must match the existing size "
                         r"\(3\) at non-singleton dimension 1")]),
        OpInfo("squeeze", pg.squeeze,
               lambda x, d=None: np.squeeze(x, d) if d is None or x.shape[d] == 1 else x,
               fixed(S(X((2, 1, 3, 1))), S(X((1,))), S(X(())), S(X((1, 0))),
                     S(X((2, 1, 3)), 1), S(X((2, 1, 3)), 0)), ALL, "same",
               method="squeeze", view=True, grad=True,
               errors=[dim_range(lambda x, d: x.squeeze(d), 2, 3),
                       E(lambda d: T((), d).squeeze(1), IndexError,
                         r"expected to be in range of \[-1, 0\], but got 1")]),
        OpInfo("unsqueeze", pg.unsqueeze, np.expand_dims,
               fixed(S(X((2, 3)), 0), S(X((2, 3)), -1), S(X(()), 0), S(X((3, 4)), 1, nc="T")),
               ALL, "same", method="unsqueeze", view=True, grad=True,
               errors=[dim_range(lambda x, d: x.unsqueeze(d), 3, 5, 4)]),
        OpInfo("flatten", pg.flatten, lambda x, s=0, e=-1: x.reshape(
            x.shape[:s] + (-1,) + x.shape[(e % max(x.ndim, 1)) + 1:]) if x.ndim else x.reshape(1),
               fixed(S(X((2, 3, 4))), S(X((2, 3, 4)), 1), S(X((2, 3, 4)), 0, 1), S(X(())),
                     S(X((3, 4)), nc="T")), ALL, "same", method="flatten", grad=True),
        OpInfo("narrow", pg.narrow, lambda x, d, s, n: np.take(x, range(s, s + n), axis=d),
               fixed(S(X((4, 3)), 0, 1, 2), S(X((4, 3)), 1, 0, 3), S(X((4, 3)), -1, 2, 0),
                     S(X((3, 4)), 1, 1, 2, nc="T")), ALL, "same", method="narrow", view=True,
               grad=True, errors=[E(lambda d: T((4, 3), d).narrow(0, 2, 3), IndexError,
                                    r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"),
                                  E(lambda d: T((4, 3), d).narrow(0, 0, -1), RuntimeError,
                                    r"narrow\(\): length must be non-negative")]),
        OpInfo("unbind", lambda x, d=0: pg.unbind(x, d),
               lambda x, d=0: tuple(np.moveaxis(x, d, 0)),
               fixed(S(X((3, 2))), S(X((3, 2)), 1), S(X((3, 4)), 1, nc="T"), S(X((0, 2)))),
               ALL, "same", method=None, view=True, grad=True,
               errors=[E(lambda d: T((), d).unbind(0), IndexError,
                         r"Dimension specified as 0 but tensor has no dimensions")]),
        OpInfo("getitem_basic", lambda x, k: x[k], lambda x, k: x[k],
               fixed(S(X((4, 5)), (1,)), S(X((4, 5)), (slice(1, None, 2),)),
                     S(X((4, 5)), (slice(None), slice(None, None, 3))),
                     S(X((4, 5)), (Ellipsis, 2)), S(X((4, 5)), (None, 1, Ellipsis, None)),
                     S(X((2, 3, 4)), (-1, slice(None, 2), slice(1, -1))),
                     S(X((4, 5)), (slice(10, 20),)), S(X(()), (Ellipsis,)), S(X(()), (None,)),
                     S(X((4, 6)), (slice(None, None, 2), 1), nc="T")),
               ALL, "same", view=True, grad=True, gradgrad=True,
               errors=[E(lambda d: T((4, 5), d)[4], IndexError,
                         r"index 4 is out of bounds for dimension 0 with size 4"),
                       E(lambda d: T((4, 5), d)[0, 0, 0], IndexError,
                         r"too many indices for tensor of dimension 2"),
                       E(lambda d: T((4, 5), d)[..., ...], IndexError,
                         r"an index can only have a single ellipsis"),
                       E(lambda d: T((4, 5), d)[::-1], ValueError,
                         r"step must be greater than zero")]),
        OpInfo("T", lambda x: x.T, lambda x: x.T, base, ALL, "same", view=True, grad=True),
        OpInfo("contiguous", lambda x: x.contiguous(), lambda x: x, base, ALL, "same", grad=True),
        OpInfo("clone", pg.clone, np.copy, base, ALL, "same", method="clone", grad=True),
    ]


def _indexing_rows() -> list[OpInfo]:
    float_idx = E(lambda d: T((3, 2), d)[pg.tensor([0.0, 1.0], device=d)], IndexError,
                  r"tensors used as indices must be long, int, byte or bool tensors "
                  r"\(got portagrad.float32\)")
    return [
        OpInfo("getitem_int_tensor", lambda x, i: x[i], lambda x, i: x[i],
               fixed(S(X((4, 3)), IDX([0, 2, 2, -1])), S(X((4, 3)), IDX([[1, 0], [3, 3]])),
                     S(X((4, 3)), IDX(np.zeros(0, np.int64))), S(X((4, 3)), IDX(2)),
                     S(X((4, 3)), IDX([3, 0]), nc="T")),
               ALL, "same", grad=True, gradgrad=True,
               errors=[float_idx,
                       E(lambda d: T((3, 2), d)[pg.tensor([0, 3], device=d)], IndexError,
                         r"index 3 is out of bounds for dimension 0 with size 3"),
                       E(lambda d: T((3, 2), d)[pg.tensor([0, -4], device=d)], IndexError,
                         r"index -4 is out of bounds for dimension 0 with size 3"),
                       E(lambda d: T((3, 2), d)[1.0], IndexError,
                         r"only integers, slices .* are valid indices \(got float\)")]),
        OpInfo("getitem_list", lambda x, k: x[k], lambda x, k: x[k],
               fixed(S(X((4, 3)), [0, 3, 1]), S(X((4, 3)), (slice(None), [2, 0])),
                     S(X((4, 3)), ([0, 1], [2, 2])), S(X((2, 3, 4)), (1, [0, 2], slice(1, 3))),
                     S(X((2, 3, 4)), ([0, 1], slice(None), [1, 3]))),
               ALL, "same", grad=True,
               errors=[E(lambda d: T((3, 2), d)[[0.5, 1.0]], IndexError,
                         r"tensors used as indices must be long, int, byte or bool tensors"),
                       E(lambda d: T((3, 2), d)[:, [0, 2]], IndexError,
                         r"index 2 is out of bounds for dimension 1 with size 2")]),
        OpInfo("getitem_mask", lambda x, m: x[m], lambda x, m: x[m],
               fixed(S(X((2, 3)), MASK([[True, False, True], [False, False, True]])),
                     S(X((2, 3)), MASK([False, True])),
                     S(X((2, 3)), MASK(np.zeros((2, 3), bool))),
                     S(X((3, 4)), MASK([True, False, True]), nc="T")),
               ALL, "same", grad=True,
               errors=[E(lambda d: T((3, 2), d)[pg.tensor([True, False], device=d)], IndexError,
                         r"The shape of the mask \[2\] at index 0 does not match the shape of "
                         r"the indexed tensor \[3, 2\] at index 0")]),
        OpInfo("setitem_basic", setitem_op, np_setitem,
               fixed(S(X((4, 3)), (1,), X((3,))), S(X((4, 3)), (slice(None), 0), 1.0),
                     S(X((4, 3)), (slice(None, None, 2),), X((1, 3))),
                     S(X((3, 4)), (Ellipsis, slice(1, 3)), X((3, 2)), nc="T")),
               NUMERIC, "same", grad=True,
               errors=[E(lambda d: setitem_op(T((4, 3), d), 0, T((2,), d)), RuntimeError,
                         r"The expanded size of the tensor \(3\) must match the existing size "
                         r"\(2\)")]),
        OpInfo("setitem_advanced", setitem_op, np_setitem,
               fixed(S(X((4, 3)), IDX([0, 2]), X((2, 3))),
                     S(X((4, 3)), MASK([[True, False, True]] * 4), 7.0),
                     S(X((4, 3)), (slice(None), [1]), X((4, 1))),
                     S(X((4, 3)), MASK([True, False, False, True]), X((3,)))),
               NUMERIC, "same", grad=True,
               errors=[E(lambda d: setitem_op(T((4, 3), d), [0, 1], T((3, 3), d)), RuntimeError,
                         r"shape mismatch: value tensor of shape \[3, 3\] cannot be broadcast to "
                         r"indexing result of shape \[2, 3\]")]),
        OpInfo("index_select", pg.index_select, lambda x, d, i: np.take(x, i, axis=d),
               fixed(S(X((4, 3)), 0, IDX([3, 0, 0])), S(X((4, 3)), 1, IDX([2])),
                     S(X((4, 3)), -1, IDX(np.zeros(0, np.int64))),
                     S(X((3, 4)), 1, IDX([1, 3]), nc="T")),
               ALL, "same", method="index_select", grad=True, gradgrad=True,
               errors=[E(lambda d: pg.index_select(T((4, 3), d), 0, pg.tensor([4], device=d)),
                         IndexError, r"index 4 is out of bounds for dimension 0 with size 4"),
                       E(lambda d: pg.index_select(T((4, 3), d), 0,
                                                   pg.tensor([1.0], device=d)), RuntimeError,
                         r"index_select\(\): Expected dtype int32 or int64 for index"),
                       dim_range(lambda x, d: pg.index_select(x, d, pg.tensor([0], device=x.device)),
                                 2, 2)]),
        OpInfo("gather", pg.gather, np_gather,
               fixed(S(X((3, 4)), 1, IDX([[0, 1], [3, 3], [2, 0]])),
                     S(X((3, 4)), 0, IDX([[0, 1, 2, 0], [2, 2, 1, 0]])),
                     S(X((2, 3, 2)), -1, IDX(np.zeros((2, 3, 0), np.int64))),
                     S(X((3, 4)), 1, IDX([[3], [0], [1]]), nc="T")),
               ALL, "same", method="gather", grad=True, gradgrad=True,
               errors=[E(lambda d: pg.gather(T((3, 4), d), 1, pg.tensor([[4]], device=d)),
                         RuntimeError, r"index 4 is out of bounds for dimension 1 with size 4"),
                       E(lambda d: pg.gather(T((3, 4), d), 1, pg.tensor([[-1]], device=d)),
                         RuntimeError, r"index -1 is out of bounds for dimension 1 with size 4"),
                       E(lambda d: pg.gather(T((3, 4), d), 1, pg.tensor([1], device=d)),
                         RuntimeError, r"Index tensor must have the same number of dimensions as "
                                       r"input tensor")]),
        OpInfo("scatter", pg.scatter, np_scatter,
               fixed(S(X((3, 4)), 1, IDX([[0, 1], [3, 2], [2, 0]]), X((3, 2))),
                     S(X((3, 4)), 0, IDX([[0, 1, 2, 0]]), X((2, 4))),
                     S(X((3, 4)), 1, IDX([[1], [0], [3]]), 2.0)),
               NUMERIC, "same", method="scatter", grad=True,
               errors=[E(lambda d: pg.scatter(T((3, 4), d), 1, pg.tensor([[5]], device=d),
                                              T((1, 1), d)), RuntimeError,
                         r"index 5 is out of bounds for dimension 1 with size 4"),
                       E(lambda d: pg.scatter(T((3, 4), d), 1, pg.tensor([[1]], device=d),
                                              T((1, 1), d, F64)), RuntimeError,
                         r"Expected self.dtype to be equal to src.dtype")]),
        OpInfo("scatter_add", pg.scatter_add, lambda x, d, i, s: np_scatter(x, d, i, s, True),
               fixed(S(X((3, 4)), 1, IDX([[0, 0], [3, 3], [2, 0]]), X((3, 2))),
                     S(X((3, 4)), 0, IDX([[0, 0, 2, 0], [2, 0, 1, 0]]), X((2, 4))),
                     S(X((3, 4)), 1, IDX([[1, 1], [0, 0], [3, 3]]), X((3, 2)), nc="T")),
               NUMERIC, "same", method="scatter_add", grad=True, gradgrad=True,
               errors=[E(lambda d: pg.scatter_add(T((3, 4), d), 1, pg.tensor([1], device=d),
                                                  T((1,), d)), RuntimeError,
                         r"Index tensor must have the same number of dimensions as self tensor")]),
        OpInfo("masked_fill", pg.masked_fill, np_masked_fill,
               fixed(S(X((2, 3)), MASK([[True, False, True], [False, False, True]]), -1.0),
                     S(X((2, 3)), MASK([True, False, False]), 2),
                     S(X((3, 4)), MASK([[True], [False], [True]]), 0.5, nc="T"),
                     S(X((0, 3)), MASK([True, False, True]), 1.0)),
               NUMERIC, "same", method="masked_fill", grad=True,
               errors=[E(lambda d: pg.masked_fill(T((2, 3), d), T((2, 3), d), 1.0), RuntimeError,
                         r"masked_fill_ only supports boolean masks, but got mask with dtype "
                         r"portagrad.float32"),
                       E(lambda d: pg.masked_fill(T((2, 3), d), T((2, 4), d, B), 1.0),
                         RuntimeError, r"must match the size of tensor b")]),
    ]


def _join_rows() -> list[OpInfo]:
    return [
        OpInfo("cat", lambda ts, d=0: pg.cat(ts, d), lambda ts, d=0: np.concatenate(ts, d),
               fixed(S([X((2, 3)), X((1, 3))]), S([X((2, 3)), X((2, 1)), X((2, 2))], 1),
                     S([X((2, 3)), X((0, 3))]), S([X((3, 4)), X((3, 4))], -1, nc="T"),
                     S([X((2,))])), ALL, "same", grad=True, gradgrad=True,
               errors=[E(lambda d: pg.cat([T((2, 3), d), T((2, 4), d)]), RuntimeError,
                         r"Sizes of tensors must match except in dimension 0. Expected size 3 but "
                         r"got size 4 for tensor number 1 in the list"),
                       E(lambda d: pg.cat([]), RuntimeError, r"expected a non-empty list"),
                       E(lambda d: pg.cat([T((2,), d), T((2,), d)], 1), IndexError,
                         r"Dimension out of range")]),
        OpInfo("concat", lambda ts, d=0: pg.concat(ts, dim=d),
               lambda ts, d=0: np.concatenate(ts, d), fixed(S([X((2, 3)), X((1, 3))])), ALL,
               "same"),
        OpInfo("stack", lambda ts, d=0: pg.stack(ts, d), lambda ts, d=0: np.stack(ts, d),
               fixed(S([X((2, 3)), X((2, 3))]), S([X((2, 3)), X((2, 3))], -1), S([X(()), X(())]),
                     S([X((3, 4)), X((3, 4))], 1, nc="T")), ALL, "same", grad=True,
               errors=[E(lambda d: pg.stack([T((2, 3), d), T((3, 2), d)]), RuntimeError,
                         r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                         r"and \[3, 2\] at entry 1")]),
        OpInfo("vstack", pg.vstack, np.vstack,
               fixed(S([X((3,)), X((3,))]), S([X((2, 3)), X((3,))]), S([X((3, 4)), X((1, 4))], nc="T")),
               ALL, "same", grad=True),
        OpInfo("split", lambda x, s, d=0: pg.split(x, s, d), np_split,
               fixed(S(X((5, 2)), 2), S(X((5, 2)), [1, 4]), S(X((2, 6)), 3, 1),
                     S(X((4, 5)), 2, 1, nc="T")), ALL, "same", method=None, view=True, grad=True,
               errors=[E(lambda d: pg.split(T((5,), d), [2, 2]), RuntimeError,
                         r"split_with_sizes expects split_sizes to sum exactly to 5")]),
        OpInfo("chunk", lambda x, c, d=0: pg.chunk(x, c, d), np_chunk,
               fixed(S(X((5, 2)), 2), S(X((6, 2)), 3), S(X((2, 5)), 2, 1),
                     S(X((4, 5)), 2, 1, nc="T")), ALL, "same", view=True, grad=True,
               errors=[E(lambda d: pg.chunk(T((5,), d), 0), RuntimeError,
                         r"chunk expects `chunks` to be greater than 0, got: 0")]),
        OpInfo("sort", lambda x, **k: pg.sort(x, **k), np_sort,
               fixed(S(X((3, 4), "distinct")), S(X((3, 4), "distinct"), dim=0),
                     S(X((3, 4), "distinct"), descending=True),
                     S(X(()), ), S(X((0, 3))), S(X((3, 4), "distinct"), dim=1, nc="T")),
               NUMERIC, "same", grad=True),
        OpInfo("sort_stable_ties", lambda x, **k: pg.sort(x, stable=True, **k), np_sort,
               fixed(S(X((2, 6), "small")), S(X((2, 6), "small"), descending=True),
                     S(X((6, 2), "small"), dim=0)), NUMERIC + (B,), "same"),
        OpInfo("argsort", lambda x, **k: pg.argsort(x, **k), lambda x, **k: np_sort(x, **k)[1],
               fixed(S(X((3, 4), "distinct")), S(X((3, 4), "distinct"), dim=0, descending=True),
                     S(X((3, 4), "distinct"), nc="T")), NUMERIC, I64),
        OpInfo("topk", lambda x, k, **kw: pg.topk(x, k, **kw), np_topk,
               fixed(S(X((3, 5), "distinct"), 2), S(X((3, 5), "distinct"), 3, dim=0),
                     S(X((3, 5), "distinct"), 2, largest=False),
                     S(X((4, 3), "distinct"), 0), S(X((4, 5), "distinct"), 1, nc="T")),
               NUMERIC, "same", grad=True,
               errors=[E(lambda d: pg.topk(T((3,), d), 4), RuntimeError,
                         r"selected index k out of range")]),
    ]


def _inplace(name: str, fn: Callable) -> Callable:
    def op(x: pg.Tensor, *args: Any, **kw: Any) -> pg.Tensor:
        before = x._version
        out = fn(x, *args, **kw)
        assert out is x, f"{name} must return self"
        assert x._version > before, f"{name} must bump the version counter"
        return out
    return op


def _inplace_rows() -> list[OpInfo]:
    bin_s = fixed(S(X((2, 3)), X((2, 3))), S(X((2, 3)), X((3,))), S(X((2, 3)), 2),
                  S(X((3, 4)), X((3, 4)), nc="T"), S(X((2, 3)), X(())), S(X(()), X(())))
    un_s = fixed(S(X((2, 3))), S(X(())), S(X((3, 4)), nc="T"), S(X((0, 2))))
    rows = [
        OpInfo("add_", _inplace("add_", lambda x, y: x.add_(y)), np.add, bin_s, NUMERIC, "same",
               inplace=True, grad=True,
               errors=[E(lambda d: T((3,), d).add_(T((2, 3), d)), RuntimeError,
                         r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
                       E(lambda d: T((3,), d, I64).add_(T((3,), d)), RuntimeError,
                         r"result type Float can't be cast to the desired output type Long")]),
        OpInfo("__iadd__", _inplace("__iadd__", lambda x, y: x.__iadd__(y)), np.add, bin_s,
               NUMERIC, "same", inplace=True),
        OpInfo("sub_", _inplace("sub_", lambda x, y: x.sub_(y)), np.subtract, bin_s, NUMERIC,
               "same", inplace=True, grad=True),
        OpInfo("mul_", _inplace("mul_", lambda x, y: x.mul_(y)), np.multiply, bin_s, NUMERIC,
               "same", inplace=True, grad=True),
        OpInfo("div_", _inplace("div_", lambda x, y: x.div_(y)), np.true_divide,
               fixed(S(X((2, 3)), X((2, 3), "nonzero")), S(X((2, 3)), X((3,), "nonzero")),
                     S(X((3, 4)), 2.0, nc="T")), FLOATS, "same", inplace=True, grad=True,
               errors=[E(lambda d: T((3,), d, I64).div_(2), RuntimeError,
                         r"result type Float can't be cast to the desired output type Long")]),
        OpInfo("pow_", _inplace("pow_", lambda x, y: x.pow_(y)), np.power,
               fixed(S(X((2, 3), "positive"), 2.0), S(X((2, 3), "positive"), X((3,), "unit"))),
               FLOATS, "same", inplace=True, grad=True),
        OpInfo("zero_", _inplace("zero_", lambda x: x.zero_()), np.zeros_like, un_s, ALL, "same",
               inplace=True),
        OpInfo("fill_", _inplace("fill_", lambda x, v: x.fill_(v)),
               lambda x, v: np.full_like(x, v),
               fixed(S(X((2, 3)), 3), S(X(()), 1), S(X((3, 4)), 0, nc="T"), S(X((0, 2)), 1)),
               ALL, "same", inplace=True,
               errors=[E(lambda d: T((2,), d).fill_(T((2,), d)), RuntimeError,
                         r"fill_ only supports 0-dimension value tensor but got tensor with 1 "
                         r"dimensions")]),
        OpInfo("copy_", _inplace("copy_", lambda x, y: x.copy_(y)),
               lambda x, y: np.broadcast_to(y, x.shape).astype(x.dtype),
               fixed(S(X((2, 3)), X((2, 3))), S(X((2, 3)), X((3,))), S(X((3, 4)), X((3, 4)), nc="T"),
                     S(X(()), X(()))), ALL, "same", inplace=True, grad=True,
               errors=[E(lambda d: T((2, 3), d).copy_(T((4,), d)), RuntimeError,
                         r"The expanded size of the tensor \(3\) must match the existing size "
                         r"\(4\)")]),
        OpInfo("clamp_", _inplace("clamp_", lambda x: x.clamp_(-0.5, 0.5)),
               lambda x: np.clip(x, -0.5, 0.5), un_s, FLOATS, "same", inplace=True, grad=True),
        OpInfo("masked_fill_", _inplace("masked_fill_", lambda x, m, v: x.masked_fill_(m, v)),
               np_masked_fill,
               fixed(S(X((2, 3)), MASK([[True, False, True], [False, False, True]]), -1.0),
                     S(X((3, 4)), MASK([True, False, True, True]), 2, nc="T")),
               NUMERIC, "same", inplace=True, grad=True),
        OpInfo("exp_", _inplace("exp_", lambda x: x.exp_()), np.exp, un_s, FLOATS, "same",
               inplace=True, grad=True),
        OpInfo("relu_", _inplace("relu_", lambda x: x.relu_()), lambda x: np.maximum(x, 0),
               fixed(S(X((2, 3), "nonzero")), S(X((3, 4), "nonzero"), nc="T")), FLOATS, "same",
               inplace=True, grad=True),
        OpInfo("neg_", _inplace("neg_", lambda x: x.neg_()), np.negative, un_s, NUMERIC, "same",
               inplace=True, grad=True),
        OpInfo("scatter_", _inplace("scatter_", lambda x, d, i, s: x.scatter_(d, i, s)),
               np_scatter, fixed(S(X((3, 4)), 1, IDX([[0, 1], [3, 2], [2, 0]]), X((3, 2)))),
               NUMERIC, "same", inplace=True, grad=True),
        OpInfo("scatter_add_", _inplace("scatter_add_",
                                        lambda x, d, i, s: x.scatter_add_(d, i, s)),
               lambda x, d, i, s: np_scatter(x, d, i, s, True),
               fixed(S(X((3, 4)), 1, IDX([[0, 0], [3, 3], [2, 0]]), X((3, 2)))),
               NUMERIC, "same", inplace=True, grad=True),
    ]
    return rows


def _creation_rows() -> list[OpInfo]:
    def fac(fn: Callable) -> Callable:
        return fn

    return [
        OpInfo("tensor", lambda data, device, dtype=None: pg.tensor(data, dtype=dtype,
                                                                    device=device),
               lambda data, dtype=None: np.asarray(data),
               lambda dtype, rng: [Sample(([[1.0, 2.0], [3.0, 4.0]],), {"dtype": dtype}),
                                   Sample((3.5,), {"dtype": dtype}), Sample(([],), {"dtype": dtype}),
                                   Sample((np.arange(6).reshape(2, 3),), {"dtype": dtype})],
               ALL, "same_kw", factory=True,
               errors=[E(lambda d: pg.tensor([[1, 2], [3]], device=d), ValueError,
                         r"expected sequence of length 2 at dim 1 \(got 1\)"),
                       E(lambda d: pg.tensor(["a"], device=d), TypeError, r"invalid data type"),
                       E(lambda d: pg.tensor([1, 2], dtype="complex", device=d), TypeError,
                         r"'complex' is not a portagrad dtype")]),
        OpInfo("zeros", lambda *s, device, dtype=None: pg.zeros(*s, dtype=dtype, device=device),
               lambda *s, dtype=None: np.zeros(s[0] if len(s) == 1 and isinstance(s[0], tuple)
                                               else s),
               lambda dtype, rng: [Sample((2, 3), {"dtype": dtype}), Sample(((0, 4),), {"dtype": dtype}),
                                   Sample(((),), {"dtype": dtype})], ALL, "same_kw", factory=True,
               errors=[E(lambda d: pg.zeros(2, -1, device=d), RuntimeError,
                         r"Trying to create tensor with negative dimension -1: \[2, -1\]"),
                       E(lambda d: pg.zeros(2.5, device=d), TypeError,
                         r"argument 'size' must be a sequence of ints, but found element of type "
                         r"float")]),
        OpInfo("ones", lambda *s, device, dtype=None: pg.ones(*s, dtype=dtype, device=device),
               lambda *s, dtype=None: np.ones(s),
               lambda dtype, rng: [Sample((2, 3), {"dtype": dtype}), Sample((0,), {"dtype": dtype})],
               ALL, "same_kw", factory=True),
        OpInfo("full", lambda s, v, device, dtype=None: pg.full(s, v, dtype=dtype, device=device),
               lambda s, v, dtype=None: np.full(s, v),
               lambda dtype, rng: [Sample(((2, 3), 1), {"dtype": dtype}),
                                   Sample(((), 0), {"dtype": dtype})], ALL, "same_kw",
               factory=True),
        OpInfo("full_infer", lambda s, v, device: pg.full(s, v, device=device),
               lambda s, v: np.full(s, v),
               lambda dtype, rng: [Sample(((2, 3), {F32: 1.5, F64: 1.5, I32: 2, I64: 2, B: True}[
                   dtype]))], (F32, I64, B), "scalar_kind", factory=True),
        OpInfo("empty", lambda *s, device, dtype=None: pg.empty(*s, dtype=dtype, device=device)
               .zero_(), lambda *s, dtype=None: np.zeros(s),
               lambda dtype, rng: [Sample((2, 3), {"dtype": dtype}), Sample((0,), {"dtype": dtype})],
               ALL, "same_kw", factory=True),
        OpInfo("arange", lambda *a, device, **k: pg.arange(*a, device=device, **k),
               lambda *a, **k: np.arange(*(int(v) for v in a)) if k.get("dtype") is I64 else np.arange(*a),
               lambda dtype, rng: [Sample((5,)), Sample((1, 7, 2)), Sample((5, 1, -2)),
                                   Sample((0.0, 1.0, 0.25)), Sample((3,), {"dtype": F64}),
                                   Sample((-1.5, 3, 2), {"dtype": I64}),
                                   Sample((0,))],
               (I64,), "arange", factory=True,
               errors=[E(lambda d: pg.arange(0, 5, 0, device=d), RuntimeError,
                         r"step must be nonzero"),
                       E(lambda d: pg.arange(0, 2.5, 0.5, dtype=I64, device=d), RuntimeError,
                         r"step must be nonzero"),
                       E(lambda d: pg.arange(5, 0, 1, device=d), RuntimeError,
                         r"upper bound and larger bound inconsistent with step sign")]),
        OpInfo("linspace", lambda *a, device, **k: pg.linspace(*a, device=device, **k),
               lambda *a, **k: np.linspace(*a),
               lambda dtype, rng: [Sample((0.0, 1.0, 5), {"dtype": dtype}),
                                   Sample((-2, 2, 1), {"dtype": dtype}),
                                   Sample((0, 1, 0), {"dtype": dtype})],
               FLOATS, "same_kw", factory=True,
               errors=[E(lambda d: pg.linspace(0, 1, -1, device=d), RuntimeError,
                         r"number of steps must be non-negative")]),
        OpInfo("eye", lambda *a, device, **k: pg.eye(*a, device=device, **k),
               lambda *a, **k: np.eye(*a),
               lambda dtype, rng: [Sample((3,), {"dtype": dtype}), Sample((2, 4), {"dtype": dtype}),
                                   Sample((0,), {"dtype": dtype})], ALL, "same_kw", factory=True,
               errors=[E(lambda d: pg.eye(-1, device=d), RuntimeError,
                         r"n must be greater or equal to 0, got -1")]),
    ]


def _like_rows() -> list[OpInfo]:
    s = fixed(S(X((2, 3))), S(X(())), S(X((3, 4)), nc="T"), S(X((0, 2))))
    return [
        OpInfo("zeros_like", pg.zeros_like, np.zeros_like, s, ALL, "same"),
        OpInfo("ones_like", pg.ones_like, np.ones_like, s, ALL, "same"),
        OpInfo("full_like", lambda x: pg.full_like(x, 1), lambda x: np.full_like(x, 1), s, ALL,
               "same"),
        OpInfo("empty_like", lambda x: pg.empty_like(x).zero_(), np.zeros_like, s, ALL, "same"),
        OpInfo("zeros_like_dtype", lambda x: pg.zeros_like(x, dtype=F64),
               lambda x: np.zeros(x.shape), s, ALL, F64),
        OpInfo("to_dtype", lambda x: x.to(F64), lambda x: x.astype(np.float64), s, ALL, F64,
               grad=True),
        OpInfo("to_int", lambda x: x.to(I32), lambda x: x.astype(np.int32), s, ALL, I32),
        OpInfo("type_as", lambda x, y: x.type_as(y), lambda x, y: x.astype(np.int64),
               fixed(S(X((2, 3)), IDX([1])), S(X((3, 4)), IDX([1]), nc="T")), ALL, I64),
        OpInfo("float", lambda x: x.float(), lambda x: x.astype(np.float32), s, ALL, F32),
        OpInfo("long", lambda x: x.long(), lambda x: x.astype(np.int64), s, ALL, I64),
        OpInfo("bool", lambda x: x.bool(), lambda x: x.astype(np.bool_), s, ALL, B),
    ]


OP_TABLE: list[OpInfo] = (_creation_rows() + _like_rows() + _view_rows() + _indexing_rows()
                          + _binary_rows() + _unary_rows() + _reduction_rows() + _linalg_rows()
                          + _join_rows() + _inplace_rows())

_names = [r.name for r in OP_TABLE]
assert len(set(_names)) == len(_names), [n for n in _names if _names.count(n) > 1]

# ----------------------------------------------------------------------------- expected dtypes


def expected_dtype(row: OpInfo, sample: Sample, tensors: tuple, dtype: Any) -> Any:
    """The dtype PyTorch gives ``row`` on ``sample`` (inputs already converted to ``tensors``)."""
    rule = row.out_dtype
    if isinstance(rule, pg.dtype):
        return rule
    if rule == "same_kw":
        return sample.kwargs.get("dtype") or dtype
    if rule == "scalar_kind":
        return expected_result_type(sample.args[1])
    if rule == "arange":
        if "dtype" in sample.kwargs:
            return sample.kwargs["dtype"]
        return F32 if any(isinstance(a, float) for a in sample.args) else I64
    first = next(t for t in _flat(tensors) if isinstance(t, pg.Tensor))
    if rule == "same":
        return first.dtype
    if rule == "bool":
        return B
    if rule == "int64":
        return I64
    if rule == "sum":
        return first.dtype if first.dtype.is_floating_point else I64
    # element operands only (not dims, indices)
    elems = [t for t in (tensors[:2] if row.name not in ("where",) else tensors[1:3])
             if isinstance(t, pg.Tensor) or isinstance(t, (bool, int, float))]
    res = expected_result_type(*elems)
    if rule == "float" and not res.is_floating_point:
        return pg.get_default_dtype()
    return res


# ----------------------------------------------------------------------------- cross-device
def cross_device_cases(dev_a: str, dev_b: str) -> list[tuple[str, Callable[[], Any]]]:
    """Ops on operands from two devices; each must raise a ``DeviceMismatchError`` naming both."""
    a = pg.ones(2, 3, device=dev_a)
    b = pg.ones(2, 3, device=dev_b)
    v_a, v_b = pg.ones(3, device=dev_a), pg.ones(3, device=dev_b)
    idx_b = pg.tensor([[0, 1, 2]], device=dev_b)
    m_b = pg.ones(2, 3, dtype=B, device=dev_b)
    return [
        ("add", lambda: a + b), ("sub", lambda: a - b), ("mul", lambda: pg.mul(a, b)),
        ("div", lambda: a / b), ("pow", lambda: a ** b), ("eq", lambda: a == b),
        ("maximum", lambda: pg.maximum(a, b)), ("where", lambda: pg.where(m_b, a, a)),
        ("matmul", lambda: a @ b.t()), ("mm", lambda: pg.mm(a, b.t())),
        ("dot", lambda: pg.dot(v_a, v_b)), ("cat", lambda: pg.cat([a, b])),
        ("stack", lambda: pg.stack([a, b])), ("gather", lambda: pg.gather(a, 1, idx_b)),
        ("index_select", lambda: pg.index_select(a, 0, pg.tensor([0], device=dev_b))),
        ("scatter_add", lambda: pg.scatter_add(a, 1, idx_b.to(dev_a), b[:1])),
        ("masked_fill", lambda: pg.masked_fill(a, m_b, 0.0)),
        ("add_", lambda: a.clone().add_(b)), ("lerp", lambda: pg.lerp(a, b, 0.5)),
        ("clamp", lambda: pg.clamp(a, b, None)),
    ] + ([("getitem", lambda: a[pg.tensor([0], device=dev_b)])] if dev_b != "cpu" else [])
