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

import itertools
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



def _np_erfc(x: np.ndarray) -> np.ndarray:
    """``erfc`` elementwise through ``math.erfc`` (numpy has none), in float64."""
    return np.vectorize(math.erfc, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


def _np_airy_ai(x: np.ndarray) -> np.ndarray:
    """``Ai`` by its Maclaurin series ``Ai(0) f - |Ai'(0)| g`` (Abramowitz & Stegun 10.4.2) in
    float64, 60 terms: the samples stay within |x| < 6, where the terms (at most ~e^10) leave
    ~1e-12 of rounding, far below the row's tolerance."""
    x = np.asarray(x, dtype=np.float64)
    z = x ** 3
    m, n = np.ones_like(x), x.copy()
    f, g = m.copy(), n.copy()
    for k in range(60):
        m = m * z / ((3 * k + 2) * (3 * k + 3))
        n = n * z / ((3 * k + 3) * (3 * k + 4))
        f, g = f + m, g + n
    return 0.355028053887817239260 * f - 0.258819403792806798405 * g


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
    # whether PyTorch's result shares storage with an input (a view, or the input itself):
    # ``None`` means ``view or inplace``; a callable ``(dtype, sample) -> bool`` decides per call
    # (``x.float()`` is ``x`` itself on a float32 input, a copy otherwise). PyTorch's answers:
    # ``tests/op_table_torch.py`` checks the field against torch where it is installed.
    aliases: bool | Callable[[Any, Sample], bool] | None = None
    errors: list = field(default_factory=list)
    rtol: float = 1e-5
    atol: float = 1e-6
    factory: bool = False  # no tensor inputs: the op takes ``device=``

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"


def expected_alias(row: OpInfo, dtype: Any, sample: Sample) -> bool:
    """Whether PyTorch's result of ``row`` on ``sample`` shares storage with an input."""
    rule = row.aliases
    if rule is None:
        return row.view or row.inplace
    if callable(rule):
        return bool(rule(dtype, sample))
    return rule


def same_dtype_as(target: Any) -> Callable[[Any, Sample], bool]:
    """``aliases`` of a conversion to ``target``: PyTorch returns the input itself when it has
    that dtype already."""
    return lambda dtype, sample: dtype is target


def viewable(dtype: Any, sample: Sample) -> bool:
    """``aliases`` of ``reshape``-like ops: a view when the strides allow one (the contiguous
    samples), a copy of the non-contiguous (``nc``) ones."""
    return sample.nc is None


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
               FLOATS, "same", grad=True, gradgrad=True, rtol=1e-4),
        OpInfo("std_default", pg.std, red(np.std, ddof=1),
               reduction_samples(empty=False, zero_dim=False), FLOATS, "same", method="std",
               grad=True, rtol=1e-4),
        OpInfo("std_mean", lambda x, **k: pg.std_mean(x, **k),
               lambda x, **k: (red(np.std, ddof=1)(x, **k), red(np.mean)(x, **k)),
               reduction_samples(dims=(None, 1, (0, 2)), empty=False, zero_dim=False), FLOATS,
               "same", grad=True, rtol=1e-4),
        OpInfo("var_mean", lambda x, **k: pg.var_mean(x, correction=0, **k),
               lambda x, **k: (red(np.var)(x, **k), red(np.mean)(x, **k)),
               reduction_samples(dims=(None, 1, (0, 2)), empty=False, zero_dim=False), FLOATS,
               "same", grad=True, rtol=1e-4),
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
                     S(X((3, 4), "nonzero"), p=1, dim=1, keepdim=True, nc="T"),
                     S(X((2, 3), "nonzero"), p=1.5), S(X((2, 3), "nonzero"), p=0.5, dim=1),
                     S(X((2, 3), "nonzero"), p=-1, dim=0, keepdim=True)),
               FLOATS, "same", grad=True, gradgrad=True, rtol=1e-4),
        OpInfo("any", pg.any, red(np.any), reduction_samples("small"), ALL, "bool", method="any"),
        OpInfo("all", pg.all, red(np.all), reduction_samples("small"), ALL, "bool", method="all"),
        OpInfo("cumsum", pg.cumsum, np_cumsum,
               fixed(S(X((2, 3, 4)), 1), S(X((2, 3, 4)), -1), S(X((3, 4)), 0, nc="T"),
                     S(X(()), 0), S(X((0, 3)), 0), S(X((1, 3)), 0)), NUMERIC + (B,), "sum",
               method="cumsum",
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
                     r"expected m1 and m2 to have the same dtype, but got: float != double"),
                   E(lambda d: pg.matmul(T((2, 3), d, B), T((3, 2), d, B)), NotImplementedError,
                     r"\"addmm_impl_cpu_\" not implemented for 'Bool'")]),
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
               method=None, grad=True, aliases=viewable,
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
                     S(X((3, 4)), nc="T")), ALL, "same", method="flatten", grad=True,
               aliases=viewable),
        OpInfo("narrow", pg.narrow, lambda x, d, s, n: np.take(x, range(s, s + n), axis=d),
               fixed(S(X((4, 3)), 0, 1, 2), S(X((4, 3)), 1, 0, 3), S(X((4, 3)), -1, 2, 0),
                     S(X((3, 4)), 1, 1, 2, nc="T")), ALL, "same", method="narrow", view=True,
               grad=True, errors=[E(lambda d: T((4, 3), d).narrow(0, 2, 3), RuntimeError,
                                    r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"),
                                  E(lambda d: T((4, 3), d).narrow(0, 5, 0), IndexError,
                                    r"start out of range \(expected to be in range of \[-4, 4\], "
                                    r"but got 5\)"),
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
        OpInfo("contiguous", lambda x: x.contiguous(), lambda x: x, base, ALL, "same", grad=True,
               aliases=viewable),
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
               aliases=lambda dtype, s: s.args[1].ndim == 0,  # a 0-dim index selects (a view)
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
                       # PyTorch's "dimension" counts the key's index tensors, not the dims
                       E(lambda d: T((3, 2), d)[:, [0, 2]], IndexError,
                         r"index 2 is out of bounds for dimension 0 with size 2")]),
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
                         r"upper bound and lower bound inconsistent with step sign")]),
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
               grad=True, aliases=same_dtype_as(F64)),
        OpInfo("to_int", lambda x: x.to(I32), lambda x: x.astype(np.int32), s, ALL, I32,
               aliases=same_dtype_as(I32)),
        OpInfo("type_as", lambda x, y: x.type_as(y), lambda x, y: x.astype(np.int64),
               fixed(S(X((2, 3)), IDX([1])), S(X((3, 4)), IDX([1]), nc="T")), ALL, I64,
               aliases=same_dtype_as(I64)),
        OpInfo("float", lambda x: x.float(), lambda x: x.astype(np.float32), s, ALL, F32,
               aliases=same_dtype_as(F32)),
        OpInfo("long", lambda x: x.long(), lambda x: x.astype(np.int64), s, ALL, I64,
               aliases=same_dtype_as(I64)),
        OpInfo("bool", lambda x: x.bool(), lambda x: x.astype(np.bool_), s, ALL, B,
               aliases=same_dtype_as(B)),
    ]


OP_TABLE: list[OpInfo] = (_creation_rows() + _like_rows() + _view_rows() + _indexing_rows()
                          + _binary_rows() + _unary_rows() + _reduction_rows() + _linalg_rows()
                          + _join_rows() + _inplace_rows())

# ----------------------------------------------------------------------------- nn.functional:
# 3-D layers, the *_with_indices forms, losses and activations completing torch.nn.functional
def np_windows(x: np.ndarray, k: tuple, s: tuple, pad: tuple, d: tuple, fill: float = 0.0
               ) -> np.ndarray:
    """(N, C, *spatial) -> (N, C, *out, *k): every window of a sweep (``fill`` outside)."""
    nd = len(k)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad), constant_values=fill)
    idx = []
    for i in range(nd):
        o = (xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1
        r = (np.arange(o) * s[i])[:, None] + np.arange(k[i])[None, :] * d[i]
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = r.shape
        idx.append(r.reshape(shape))
    return xp[(slice(None), slice(None)) + tuple(idx)]


def _tup(v: Any, nd: int) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd


def _batched(nd: int, fn: Callable) -> Callable:
    """``fn`` of (N, C, *spatial) arrays also on unbatched (C, *spatial) ones."""
    def ref(x: np.ndarray, *args: Any, **kw: Any) -> np.ndarray:
        if x.ndim == nd + 1:
            return fn(x[None], *args, **kw)[0]
        return fn(x, *args, **kw)
    return ref


def np_conv(nd: int) -> Callable:
    def ref(x: np.ndarray, w: np.ndarray, b: Any = None, stride: Any = 1, padding: Any = 0,
            dilation: Any = 1, groups: int = 1) -> np.ndarray:
        win = np_windows(x, w.shape[2:], _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd))
        n, c = x.shape[:2]
        o = w.shape[0]
        out_sp = win.shape[2:2 + nd]
        win = win.reshape((n, groups, c // groups) + out_sp + (-1,))
        wg = w.reshape(groups, o // groups, c // groups, -1)
        out = np.einsum("ngc...k,gock->ngo...", win, wg).reshape((n, o) + out_sp)
        return out if b is None else out + b.reshape((1, -1) + (1,) * nd)
    return _batched(nd, ref)


def np_conv_transpose(nd: int) -> Callable:
    def ref(x: np.ndarray, w: np.ndarray, b: Any = None, stride: Any = 1, padding: Any = 0,
            output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> np.ndarray:
        s, p, op, d = (_tup(v, nd) for v in (stride, padding, output_padding, dilation))
        n, c = x.shape[:2]
        k = w.shape[2:]
        og = w.shape[1]
        full = tuple((x.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nd))
        buf = np.zeros((n, og * groups) + full)
        cg = c // groups
        for tap in np.ndindex(*k):
            sl = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (x.shape[2 + i] - 1) * s[i] + 1, s[i])
                       for i in range(nd))
            for g in range(groups):
                xs = x[:, g * cg:(g + 1) * cg]
                contrib = np.einsum("nc...,co->no...", xs, w[(slice(g * cg, (g + 1) * cg),
                                                               slice(None)) + tap])
                buf[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
        out = buf[(slice(None), slice(None)) + tuple(slice(p[i], full[i] - p[i]) for i in range(nd))]
        return out if b is None else out + b.reshape((1, -1) + (1,) * nd)
    return _batched(nd, ref)


def np_max_pool(nd: int) -> Callable:
    def ref(x: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0,
            dilation: Any = 1) -> np.ndarray:
        k = _tup(kernel_size, nd)
        win = np_windows(x, k, _tup(stride or kernel_size, nd), _tup(padding, nd),
                         _tup(dilation, nd), -np.inf)
        return win.max(axis=tuple(range(2 + nd, 2 + 2 * nd)))
    return _batched(nd, ref)


def np_avg_pool(nd: int) -> Callable:
    def ref(x: np.ndarray, kernel_size: Any, stride: Any = None, padding: Any = 0) -> np.ndarray:
        k = _tup(kernel_size, nd)  # count_include_pad=True: padding counts
        win = np_windows(x, k, _tup(stride or kernel_size, nd), _tup(padding, nd), (1,) * nd)
        return win.mean(axis=tuple(range(2 + nd, 2 + 2 * nd)))
    return _batched(nd, ref)


def np_lp_pool(nd: int) -> Callable:
    def ref(x: np.ndarray, norm_type: float, kernel_size: Any, stride: Any = None) -> np.ndarray:
        k = _tup(kernel_size, nd)
        win = np_windows(x, k, _tup(stride or kernel_size, nd), (0,) * nd, (1,) * nd)
        return (win ** norm_type).sum(axis=tuple(range(2 + nd, 2 + 2 * nd))) ** (1 / norm_type)
    return _batched(nd, ref)


def np_adaptive(nd: int, fn: Callable) -> Callable:
    def ref(x: np.ndarray, output_size: Any) -> np.ndarray:
        sp = x.shape[-nd:]
        o = _tup(output_size, nd)
        out = np.zeros(x.shape[:-nd] + o)
        for pos in np.ndindex(*o):
            sl = tuple(slice(pos[i] * sp[i] // o[i], -(-(pos[i] + 1) * sp[i] // o[i]))
                       for i in range(nd))
            out[(Ellipsis,) + pos] = fn(x[(Ellipsis,) + sl], axis=tuple(range(-nd, 0)))
        return out
    return ref


def np_multi_margin(x: np.ndarray, t: np.ndarray, p: int = 1, margin: float = 1.0,
                    weight: Any = None, reduction: str = "mean") -> np.ndarray:
    x2 = x.reshape(-1, x.shape[-1])
    t1 = t.reshape(-1)
    m = np.maximum(margin - np.take_along_axis(x2, t1[:, None], 1) + x2, 0) ** p
    if weight is not None:
        m = m * weight[t1][:, None]
    m[np.arange(len(t1)), t1] = 0
    loss = m.sum(1) / x2.shape[1]
    loss = loss.reshape(()) if x.ndim == 1 else loss
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def np_multilabel_margin(x: np.ndarray, t: np.ndarray, reduction: str = "mean") -> np.ndarray:
    x2, t2 = x.reshape(-1, x.shape[-1]), t.reshape(-1, x.shape[-1])
    loss = np.zeros(len(x2))
    for n in range(len(x2)):
        tg = list(t2[n][:list(t2[n]).index(-1)] if -1 in t2[n] else t2[n])
        for j in tg:
            loss[n] += sum(max(0.0, 1 - (x2[n, j] - x2[n, i])) for i in range(x2.shape[1])
                           if i not in tg)
    loss = loss / x2.shape[1]
    loss = loss.reshape(()) if x.ndim == 1 else loss
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def np_triplet_distance(a: np.ndarray, p: np.ndarray, n: np.ndarray, margin: float = 1.0,
                        swap: bool = False, reduction: str = "mean") -> np.ndarray:
    def dist(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.linalg.norm(u - v + 1e-6, axis=-1)
    dn = np.minimum(dist(a, n), dist(p, n)) if swap else dist(a, n)
    loss = np.maximum(dist(a, p) - dn + margin, 0)
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def np_leaky(slope: float) -> Callable:
    return lambda x, *a, **k: np.where(x >= 0, x, x * slope)


def np_pdist(x: np.ndarray, p: float = 2) -> np.ndarray:
    i, j = np.triu_indices(len(x), 1)
    return np.linalg.norm(x[i] - x[j], ord=p, axis=1) if len(i) else np.zeros(0)


def np_pixel_shuffle(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    n = len(lead)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def np_pixel_unshuffle(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def np_channel_shuffle(x: np.ndarray, groups: int) -> np.ndarray:
    n, c = x.shape[:2]
    return x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def np_unpool2d(x: np.ndarray, idx: np.ndarray, kernel_size: int, stride: Any = None,
                padding: int = 0, output_size: Any = None) -> np.ndarray:
    s = stride or kernel_size
    h, w = output_size or [(n - 1) * s + kernel_size - 2 * padding for n in x.shape[-2:]]
    out = np.zeros(x.shape[:-2] + (h * w,), x.dtype)
    np.put_along_axis(out, idx.reshape(x.shape[:-2] + (-1,)), x.reshape(x.shape[:-2] + (-1,)), -1)
    return out.reshape(x.shape[:-2] + (h, w))


def np_embedding_bag(idx: np.ndarray, w: np.ndarray, offsets: Any = None, mode: str = "mean",
                     per_sample_weights: Any = None, padding_idx: Any = None) -> np.ndarray:
    if idx.ndim == 2:
        bags = list(idx)
        psw = list(per_sample_weights) if per_sample_weights is not None else None
    else:
        ends = list(offsets[1:]) + [len(idx)]
        bags = [idx[a:b] for a, b in zip(offsets, ends)]
        psw = ([per_sample_weights[a:b] for a, b in zip(offsets, ends)]
               if per_sample_weights is not None else None)
    out = np.zeros((len(bags), w.shape[1]))
    for b, bag in enumerate(bags):
        keep = [k for k, i in enumerate(bag) if i != padding_idx]
        rows = w[bag[keep]] * (psw[b][keep][:, None] if psw is not None else 1)
        if len(keep):
            out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


def np_conv_tbc(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int = 0) -> np.ndarray:
    out = np_conv(1)(x.transpose(1, 2, 0), w.transpose(2, 1, 0), b, padding=pad)
    return out.transpose(2, 0, 1)


def np_ctc(lp: np.ndarray, targets: np.ndarray, il: list, tl: list, blank: int = 0,
           reduction: str = "mean") -> np.ndarray:
    """The CTC forward recursion, one sequence at a time."""
    out = []
    for n in range(lp.shape[1]):
        lab = targets[n, :tl[n]]
        ext = [blank]
        for c in lab:
            ext += [int(c), blank]
        a = np.full(len(ext), -np.inf)
        a[0] = lp[0, n, ext[0]]
        if len(ext) > 1:
            a[1] = lp[0, n, ext[1]]
        for t in range(1, il[n]):
            b = a.copy()
            for k in range(len(ext)):
                v = a[k]
                if k >= 1:
                    v = np.logaddexp(v, a[k - 1])
                if k >= 2 and ext[k] != blank and ext[k] != ext[k - 2]:
                    v = np.logaddexp(v, a[k - 2])
                b[k] = v + lp[t, n, ext[k]]
            a = b
        out.append(-np.logaddexp(a[-1], a[-2] if len(ext) > 1 else -np.inf))
    loss = np.array(out)
    if reduction == "mean":
        return (loss / np.maximum(tl, 1)).mean()
    return loss.sum() if reduction == "sum" else loss


def np_affine_grid(theta: np.ndarray, size: list, align_corners: bool = False) -> np.ndarray:
    sp = size[2:]
    axes = [np.linspace(-1, 1, n) * (1 if align_corners else (n - 1) / n) for n in sp]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack(list(reversed(mesh)) + [np.ones(mesh[0].shape)], -1)  # (*sp, nd + 1)
    return np.einsum("...k,njk->n...j", base, theta)


def np_grouped_mm(a: np.ndarray, b: np.ndarray, offs: np.ndarray | None = None) -> np.ndarray:
    """``F.grouped_mm``: with ``offs`` (cumulative group ends) the rows of a 2-D ``a`` times
    ``b[g]``, the columns of a 2-D ``b`` times ``a[g]``, or (both 2-D) one product per group of
    K; without, the batched product."""
    if offs is None:
        return a @ b
    starts = np.concatenate([[0], offs[:-1]])
    if a.ndim == 2 and b.ndim == 3:
        out = np.zeros((a.shape[0], b.shape[-1]), a.dtype)
        for g, (s, e) in enumerate(zip(starts, offs)):
            out[s:e] = a[s:e] @ b[g]
        return out
    if a.ndim == 3:
        out = np.zeros((a.shape[1], b.shape[-1]), a.dtype)
        for g, (s, e) in enumerate(zip(starts, offs)):
            out[:, s:e] = a[g] @ b[:, s:e]
        return out
    return np.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, offs)])


def np_grid_sample(x: np.ndarray, grid: np.ndarray, mode: str = "bilinear",
                   padding_mode: str = "zeros", align_corners: bool = False) -> np.ndarray:
    """2-D only; ``zeros`` or ``border`` padding."""
    n_, c_, h, w = x.shape
    out = np.zeros((n_, c_) + grid.shape[1:3])

    def unnorm(v: float, size: int) -> float:
        u = (v + 1) * (size - 1) / 2 if align_corners else ((v + 1) * size - 1) / 2
        return min(max(u, 0), size - 1) if padding_mode == "border" else u

    def read(n: int, yy: int, xx: int) -> np.ndarray:
        return x[n, :, yy, xx] if 0 <= yy < h and 0 <= xx < w else np.zeros(c_)

    for n, i, j in np.ndindex(n_, *grid.shape[1:3]):
        fx, fy = unnorm(grid[n, i, j, 0], w), unnorm(grid[n, i, j, 1], h)
        if mode == "nearest":
            out[n, :, i, j] = read(n, int(np.rint(fy)), int(np.rint(fx)))
            continue
        x0, y0 = int(np.floor(fx)), int(np.floor(fy))
        ax, ay = fx - x0, fy - y0
        out[n, :, i, j] = (read(n, y0, x0) * (1 - ax) * (1 - ay) + read(n, y0, x0 + 1) * ax * (1 - ay)
                           + read(n, y0 + 1, x0) * (1 - ax) * ay + read(n, y0 + 1, x0 + 1) * ax * ay)
    return out


def np_linear_cross_entropy(x: np.ndarray, w: np.ndarray, t: np.ndarray,
                            linear_bias: Any = None, reduction: str = "mean") -> np.ndarray:
    logits = np.moveaxis((x @ w.reshape(-1, w.shape[-1]).T).reshape(
        x.shape[:-1] + w.shape[:-1]), 1 if x.ndim == 2 else 0, -1) if w.ndim > 2 else \
        x @ w.T
    if linear_bias is not None:
        logits = logits + (np.moveaxis(linear_bias, 0, -1) if w.ndim > 2 else linear_bias)
    lsm = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    loss = -np.take_along_axis(lsm, t[..., None], -1)[..., 0]
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def np_unpool(nd: int) -> Callable:
    def ref(x: np.ndarray, idx: np.ndarray, kernel_size: int, stride: Any = None,
            padding: int = 0) -> np.ndarray:
        s = stride or kernel_size
        out_sp = tuple((n - 1) * s + kernel_size - 2 * padding for n in x.shape[-nd:])
        lead = x.shape[:-nd]
        out = np.zeros(lead + (math.prod(out_sp),), x.dtype)
        np.put_along_axis(out, idx.reshape(lead + (-1,)), x.reshape(lead + (-1,)), -1)
        return out.reshape(lead + out_sp)
    return ref


def np_fractional_max_pool2d(x: np.ndarray, kernel_size: int, output_size: tuple,
                             _random_samples: np.ndarray) -> np.ndarray:
    """PyTorch's interval rule, one plane at a time (samples: width first, in x's float type)."""
    ft = x.dtype.type
    n_, c_, h, w = x.shape
    oh, ow = output_size
    k = kernel_size

    def starts(u: Any, size: int, o: int) -> list:
        alpha = ft(size - k) / ft(o - 1)
        return [int((ft(i) + u) * alpha) - int(u * alpha) for i in range(o - 1)] + [size - k]

    out = np.zeros((n_, c_, oh, ow), x.dtype)
    for n, c in np.ndindex(n_, c_):
        sw, sh = (ft(v) for v in _random_samples[n, c])
        for i, y0 in enumerate(starts(sh, h, oh)):
            for j, x0 in enumerate(starts(sw, w, ow)):
                out[n, c, i, j] = x[n, c, y0:y0 + k, x0:x0 + k].max()
    return out


def np_bicubic(x: np.ndarray, size: tuple, align_corners: bool = False) -> np.ndarray:
    """Separable cubic convolution (A = -0.75) with clamped taps, PyTorch's source indices."""
    a = -0.75

    def weights(t: float) -> list:
        def near(d: float) -> float:
            return ((a + 2) * d - (a + 3)) * d * d + 1

        def far(d: float) -> float:
            return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def matrix(n: int, o: int) -> np.ndarray:
        m = np.zeros((o, n))
        for i in range(o):
            src = i * (n - 1) / (o - 1) if align_corners and o > 1 else \
                (0.0 if align_corners else (i + 0.5) * n / o - 0.5)
            f = math.floor(src)
            for tap, wt in zip(range(f - 1, f + 3), weights(src - f)):
                m[i, min(max(tap, 0), n - 1)] += wt
        return m

    mh, mw = matrix(x.shape[2], size[0]), matrix(x.shape[3], size[1])
    return np.einsum("ih,nchw,jw->ncij", mh, x, mw)


def np_mha(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int, w: np.ndarray,
           b: np.ndarray, ow: np.ndarray, ob: np.ndarray, mask: Any = None) -> np.ndarray:
    """Sequence-first (L, N, E) multi-head attention with packed projections; bool mask: True =
    not allowed."""
    e = q.shape[-1]
    d = e // heads
    wq, wk, wv = np.split(w, 3)
    bq, bk, bv = np.split(b, 3)

    def split(x: np.ndarray) -> np.ndarray:  # (L, N, E) -> (N, H, L, D)
        return x.reshape(x.shape[0], x.shape[1], heads, d).transpose(1, 2, 0, 3)

    qh, kh, vh = split(q @ wq.T + bq), split(k @ wk.T + bk), split(v @ wv.T + bv)
    sc = qh @ kh.swapaxes(-1, -2) / math.sqrt(d)
    if mask is not None:
        sc = np.where(mask, -np.inf, sc)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = (p @ vh).transpose(2, 0, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return out @ ow.T + ob


def _np_cosine_similarity(a: np.ndarray, b: np.ndarray, dim: int = 1, eps: float = 1e-8
                          ) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim)


def _np_cosine_embedding_loss(a: np.ndarray, b: np.ndarray, t: np.ndarray, margin: float = 0.0,
                              reduction: str = "mean") -> np.ndarray:
    eps = float(np.float32(1e-12))
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + eps) * ((b * b).sum(-1) + eps))
    loss = np.where(t == 1, 1 - cos, 0.0) + np.where(t == -1, np.maximum(cos - margin, 0), 0.0)
    return loss.mean() if reduction == "mean" else loss


def _np_gaussian_nll_loss(x: np.ndarray, t: np.ndarray, var: np.ndarray, full: bool = False,
                          eps: float = 1e-6, reduction: str = "mean") -> np.ndarray:
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var) + (0.5 * math.log(2 * math.pi) if full else 0)
    return loss.mean() if reduction == "mean" else loss


def _nn_functional_rows() -> list[OpInfo]:
    F = pg.nn.functional
    cos_s = fixed(S(X((3, 4)), X((3, 4))), S(X((3, 4)), X((3, 1)), dim=1),
                  S(X((2, 3, 4)), X((4,)), dim=-1), S(X((3, 4)), X((1, 4)), dim=0, nc="T"))
    cos_emb_s = fixed(S(X((3, 4)), X((3, 4)), np.array([1.0, -1.0, 1.0]), margin=0.2),
                      S(X((4,)), X((4,)), np.array(-1.0), reduction="none"))
    gnll_s = fixed(S(X((3, 4)), X((3, 4)), X((3, 4), "positive")),
                   S(X((3, 4)), X((3, 4)), X((3, 1), "positive"), full=True, reduction="none"),
                   S(X((3, 4)), X((3, 4)), X((3,), "positive"), reduction="none"))
    conv3_s = fixed(S(X((2, 4, 3, 4, 5)), X((6, 2, 2, 3, 2)), X((6,)), stride=(1, 2, 1),
                      padding=(1, 0, 2), dilation=(1, 1, 2), groups=2),
                    S(X((2, 3, 4, 3)), X((2, 2, 1, 2, 2)), None, padding=1),
                    S(X((1, 2, 3, 3, 3)), X((3, 2, 3, 3, 3)), nc="T"))
    conv3_g = fixed(S(X((1, 2, 3, 2, 2)), X((2, 1, 2, 1, 2)), X((2,)), padding=(0, 1, 0),
                      groups=2))
    convt3_s = fixed(S(X((2, 4, 2, 3, 2)), X((4, 3, 2, 2, 3)), X((6,)), stride=(2, 1, 2),
                       padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2, dilation=(1, 2, 1)),
                     S(X((2, 2, 3, 2)), X((2, 3, 2, 1, 2)), None, stride=2))
    convt3_g = fixed(S(X((1, 2, 2, 1, 2)), X((2, 1, 2, 2, 1)), X((2,)), stride=(2, 1, 1),
                       groups=2))
    pool3_s = fixed(S(X((2, 3, 4, 5, 6), "distinct"), (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                      dilation=(1, 1, 2)),
                    S(X((2, 4, 4, 4), "distinct"), 2), S(X((1, 2, 3, 4, 4), "distinct"), 2, nc="T"))
    pool3_g = fixed(S(X((1, 1, 3, 3, 2), "distinct"), 2, stride=1, padding=(1, 0, 1)))
    avg3_s = fixed(S(X((2, 3, 4, 5, 6)), (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)),
                   S(X((2, 4, 4, 4)), 2), S(X((1, 2, 3, 4, 4)), 2, nc="T"))
    avg3_g = fixed(S(X((1, 1, 3, 3, 2)), 2, stride=1, padding=(1, 0, 1)))
    ad3_s = fixed(S(X((2, 3, 4, 5, 6), "distinct"), (3, 2, 4)), S(X((2, 5, 4, 3), "distinct"), 2),
                  S(X((1, 2, 3, 4, 4), "distinct"), (2, 4, 3), nc="T"))
    ad3_g = fixed(S(X((1, 1, 3, 2, 3), "distinct"), (2, 2, 2)))
    lp_s = fixed(S(X((2, 3, 7), "positive"), 2.0, 3, 2), S(X((3, 6), "positive"), 1.5, 2))
    lp3_s = fixed(S(X((1, 2, 4, 4, 4), "positive"), 2.0, 2), S(X((2, 3, 4, 2), "positive"), 3.0, 2,
                                                               1))

    def first(fn: Callable) -> Callable:
        return lambda *a, **k: fn(*a, **k)[0]

    return [
        OpInfo("nn.functional.cosine_similarity", F.cosine_similarity, _np_cosine_similarity,
               cos_s, FLOATS, "same", grad=True),
        OpInfo("nn.functional.cosine_embedding_loss", F.cosine_embedding_loss,
               _np_cosine_embedding_loss, cos_emb_s, FLOATS, "same", grad=True),
        OpInfo("nn.functional.gaussian_nll_loss", F.gaussian_nll_loss, _np_gaussian_nll_loss,
               gnll_s, FLOATS, "same", grad=True),
        OpInfo("nn.functional.conv3d", F.conv3d, np_conv(3), conv3_s, FLOATS, "same", grad=True,
               grad_samples=conv3_g, rtol=1e-4, atol=1e-5, errors=[
                   E(lambda d: F.conv3d(T((4, 4), d), T((1, 1, 1, 1, 1), d)), RuntimeError,
                     r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d, but got "
                     r"input of size: \[4, 4\]")]),
        OpInfo("nn.functional.conv_transpose3d", F.conv_transpose3d, np_conv_transpose(3), convt3_s,
               FLOATS, "same", grad=True, grad_samples=convt3_g, rtol=1e-4, atol=1e-5),
        OpInfo("nn.functional.max_pool3d", F.max_pool3d, np_max_pool(3), pool3_s, FLOATS, "same",
               grad=True, grad_samples=pool3_g, errors=[
                   E(lambda d: F.max_pool3d(T((1, 1, 4, 4, 4), d), 2, padding=2), RuntimeError,
                     r"pad should be at most half of effective kernel size, but got pad=2, "
                     r"kernel_size=2 and dilation=1"),
                   E(lambda d: F.max_pool3d(T((1, 1, 4, 4, 4), d), 2, dilation=0), RuntimeError,
                     r"dilation should be greater than zero, but got dilationT: 0 dilationH: 0 "
                     r"dilationW: 0"),
                   E(lambda d: F.max_pool3d(T((4, 4), d), 2), RuntimeError,
                     r"non-empty 4D or 5D \(batch mode\) tensor expected for input"),
                   E(lambda d: F.max_pool3d(T((1, 1, 1, 4, 4), d), 2), RuntimeError,
                     r"Given input size: \(1x1x4x4\). Calculated output size: \(1x0x2x2\). "
                     r"Output size is too small")]),
        OpInfo("nn.functional.max_pool3d_with_indices.values", first(F.max_pool3d_with_indices),
               np_max_pool(3), pool3_s, FLOATS, "same"),
        OpInfo("nn.functional.avg_pool3d", F.avg_pool3d, np_avg_pool(3), avg3_s, FLOATS, "same",
               grad=True, grad_samples=avg3_g, errors=[
                   E(lambda d: F.avg_pool3d(T((1, 1, 1, 4, 4), d), 2), RuntimeError,
                     r"input image \(T: 1 H: 4 W: 4\) smaller than kernel size \(kT: 2 kH: 2 "
                     r"kW: 2\)")]),
        OpInfo("nn.functional.adaptive_avg_pool3d", F.adaptive_avg_pool3d, np_adaptive(3, np.mean),
               ad3_s, FLOATS, "same", grad=True, grad_samples=ad3_g, errors=[
                   E(lambda d: F.adaptive_avg_pool3d(T((4, 4), d), 2), RuntimeError,
                     r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor, but got \[4, 4\]")]),
        OpInfo("nn.functional.adaptive_max_pool3d", F.adaptive_max_pool3d, np_adaptive(3, np.max),
               ad3_s, FLOATS, "same", grad=True, grad_samples=ad3_g, errors=[
                   E(lambda d: F.adaptive_max_pool3d(T((4, 4), d), 2), RuntimeError,
                     r"adaptive_max_pool3d\(\): Expected 4D or 5D tensor, but got: \[4, 4\]")]),
        OpInfo("nn.functional.adaptive_max_pool2d_with_indices.values",
               first(F.adaptive_max_pool2d_with_indices), np_adaptive(2, np.max),
               fixed(S(X((2, 3, 5, 4), "distinct"), (2, 3))), FLOATS, "same"),
        OpInfo("nn.functional.lp_pool1d", F.lp_pool1d, np_lp_pool(1), lp_s, FLOATS, "same",
               grad=True, rtol=1e-4),
        OpInfo("nn.functional.lp_pool3d", F.lp_pool3d, np_lp_pool(3), lp3_s, FLOATS, "same",
               grad=True, grad_samples=fixed(S(X((1, 1, 2, 2, 4), "positive"), 2.0, 2)),
               rtol=1e-4),
        OpInfo("nn.functional.multi_margin_loss", F.multi_margin_loss, np_multi_margin,
               fixed(S(X((4, 5)), IDX([0, 4, 2, 1])),
                     S(X((4, 5)), IDX([3, 3, 0, 1]), 2, 0.7, X((5,), "positive"),
                       reduction="none"),
                     S(X((5,)), IDX(2), reduction="sum"), S(X((3, 4)), IDX([1, 0, 3]), nc="T")),
               FLOATS, "same", grad=True,
               # (PyTorch refuses a weight that requires grad: gradcheck leaves it out)
               grad_samples=fixed(S(X((4, 5)), IDX([3, 3, 0, 1]), 2, 0.7, reduction="none"),
                                  S(X((5,)), IDX(2), reduction="sum")),
               errors=[
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), pg.tensor([0, 5, 1], device=d)),
                     RuntimeError, "target out of range"),
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), pg.tensor([0, 1], device=d)),
                     RuntimeError, r"multi_margin_loss: target tensor should be 1-D with size "
                     r"equal to the number of input samples \(batch size\). Expected target size "
                     r"\[3\], but got \[2\]. Input has shape \[3, 4\]."),
                   E(lambda d: F.multi_margin_loss(T((3, 4, 2), d), pg.tensor([0, 1, 1], device=d)),
                     RuntimeError, r"Expected non-empty vector or matrix with optional 0-dim "
                     r"batch size, but got: \[3, 4, 2\]"),
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), T((3,), d)), RuntimeError,
                     "expected scalar type Long but found Float"),
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), T((3,), d, I64), p=3), ValueError,
                     r"only p == 1 and p == 2 supported"),
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), T((3,), d, I64), weight=T((3,), d)),
                     RuntimeError, r"inconsistent weight size, expected 4 but got \[3\]"),
                   E(lambda d: F.multi_margin_loss(T((3, 4), d), T((3,), d, I64), reduction="x"),
                     ValueError, "x is not a valid value for reduction")]),
        OpInfo("nn.functional.multilabel_margin_loss", F.multilabel_margin_loss,
               np_multilabel_margin,
               fixed(S(X((4, 5)), IDX([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 1, 2, 3],
                                       [2, -1, -1, -1, -1]])),
                     S(X((2, 3)), IDX([[2, -1, 0], [0, 1, -1]]), reduction="none"),
                     S(X((4,)), IDX([3, 1, -1, 1]), reduction="sum")),
               FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.multilabel_margin_loss(T((3, 4), d), T((3, 4), d, I64) + 5),
                     RuntimeError, "argument #2 'target' is out of range"),
                   E(lambda d: F.multilabel_margin_loss(T((3, 4), d), T((3,), d, I64)),
                     RuntimeError, r"inconsistent target size: \[3\] for input of size: "
                     r"\[3, 4\]")]),
        OpInfo("nn.functional.triplet_margin_with_distance_loss",
               lambda a, p, n, **k: F.triplet_margin_with_distance_loss(a, p, n, **k),
               np_triplet_distance,
               fixed(S(X((3, 4)), X((3, 4)), X((3, 4)), margin=2.0),
                     S(X((3, 4)), X((3, 4)), X((3, 4)), swap=True, margin=1.5, reduction="none"),
                     S(X((4,)), X((4,)), X((4,)), margin=3.0, reduction="sum")),
               FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.triplet_margin_with_distance_loss(T((3,), d), T((3,), d),
                                                                   T((3,), d), margin=0),
                     ValueError, "^margin must be greater than 0, got 0$"),
                   E(lambda d: F.triplet_margin_with_distance_loss(T((2, 3), d), T((3,), d),
                                                                   T((3,), d)),
                     RuntimeError, "The anchor, positive, and negative tensors are expected to "
                     "have the same number of dimensions, but got: anchor 2D, positive 1D, and "
                     "negative 1D inputs")]),
        OpInfo("nn.functional.rrelu_eval", F.rrelu, np_leaky((1 / 8 + 1 / 3) / 2),
               unary_samples("nonzero"), FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.rrelu(T((2,), d), 0.5, 0.1, True), RuntimeError,
                     "Lower bound should be less than or equal to the upper bound")]),
        OpInfo("nn.functional.rrelu_", lambda x: F.rrelu_(x, 0.2, 0.4), np_leaky(0.3),
               unary_samples("nonzero"), FLOATS, "same", inplace=True, grad=True),
        OpInfo("nn.functional.threshold_", lambda x: F.threshold_(x, 0.5, -2.0),
               lambda x: np.where(x > 0.5, x, -2.0), unary_samples("nonzero"), FLOATS, "same",
               inplace=True),
        OpInfo("nn.functional.selu_", F.selu_,
               lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(
                   np.minimum(x, 0))), unary_samples(), FLOATS, "same", inplace=True, grad=True),
        OpInfo("nn.functional.celu_", lambda x: F.celu_(x, 2.0),
               lambda x: np.where(x > 0, x, 2.0 * np.expm1(np.minimum(x, 0) / 2.0)),
               unary_samples(), FLOATS, "same", inplace=True, grad=True),
        OpInfo("nn.functional.pixel_shuffle", F.pixel_shuffle, np_pixel_shuffle,
               fixed(S(X((1, 4, 2, 3)), 2), S(X((2, 3, 2, 2)), 1), S(X((1, 4, 1, 1)), 2),
                     S(X((2, 9, 1, 2)), 3, nc="T")), ALL, "same", grad=True),
        OpInfo("nn.functional.pixel_unshuffle", F.pixel_unshuffle, np_pixel_unshuffle,
               fixed(S(X((1, 1, 4, 6)), 2), S(X((2, 3, 2, 2)), 1), S(X((1, 1, 2, 2)), 2),
                     S(X((2, 3, 3, 3)), 3, nc="T")), ALL, "same", grad=True),
        OpInfo("nn.functional.channel_shuffle", F.channel_shuffle, np_channel_shuffle,
               fixed(S(X((2, 6, 2)), 3), S(X((1, 4, 1)), 1), S(X((1, 6, 1)), 6),
                     S(X((2, 4, 3, 2)), 2, nc="T")), ALL, "same", grad=True),
        OpInfo("nn.functional.pdist", F.pdist, np_pdist,
               fixed(S(X((5, 3))), S(X((4, 2)), 1.0), S(X((3, 4)), 3.0, nc="T"), S(X((1, 3))),
                     S(X((4, 3), "distinct"), math.inf)), FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.pdist(T((3,), d)), RuntimeError,
                     "pdist only supports 2D tensors, got: 1D"),
                   E(lambda d: F.pdist(T((3, 2), d), -1), RuntimeError,
                     "pdist only supports non-negative p values")]),
        OpInfo("nn.functional.max_unpool2d", F.max_unpool2d, np_unpool2d,
               fixed(S(X((2, 3, 2, 2)), IDX(np.arange(24).reshape(2, 3, 2, 2) % 4 * 5), 2),
                     S(X((3, 2, 2)), IDX([[[0, 3], [9, 15]]] * 3), 2, output_size=(5, 4))),
               FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.max_unpool2d(T((1, 2, 2, 2), d), T((1, 1, 2, 2), d, I64), 2),
                     RuntimeError, r"Expected shape of indices to be same as that of the input "
                     r"tensor \(\[1, 2, 2, 2\]\) but got indices tensor with shape: "
                     r"\[1, 1, 2, 2\]"),
                   E(lambda d: F.max_unpool2d(T((2, 2), d), T((2, 2), d, I64), 2), RuntimeError,
                     r"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
                     r"with 2 dimensions."),
                   E(lambda d: F.max_unpool2d(T((1, 2, 2, 2), d), T((1, 2, 2, 2), d), 2),
                     RuntimeError, "elements in indices should be type int64 but got: Float"),
                   E(lambda d: F.max_unpool2d(T((1, 2, 2, 2), d), T((1, 2, 2, 2), d, I64) + 150,
                                              2), RuntimeError,
                     r"Found an invalid max index: 150 \(output volumes are of size 4x4\)"),
                   E(lambda d: F.max_unpool2d(T((1, 2, 2, 2), d), T((1, 2, 2, 2), d, I64), 2,
                                              output_size=(9, 9)), ValueError,
                     r'invalid output_size "\(9, 9\)" \(dim 0 must be between 2 and 6\)')]),
        OpInfo("nn.functional.embedding_bag",
               lambda i, w, off=None, mode="mean", psw=None, **k: F.embedding_bag(
                   i, w, off, mode=mode, per_sample_weights=psw, **k), np_embedding_bag,
               fixed(S(IDX([[1, 2], [3, 4], [0, 0]]), X((5, 3))),
                     S(IDX([1, 2, 3, 1, 4]), X((5, 3)), IDX([0, 2, 2]), mode="sum"),
                     S(IDX([1, 2, 3, 1, 4]), X((5, 3), "distinct"), IDX([0, 3]), mode="max"),
                     S(IDX([2, 2, 3, 1]), X((5, 3)), IDX([0, 2]), mode="mean", padding_idx=2),
                     S(IDX([2, 0, 3, 1]), X((5, 3)), IDX([0, 1]), "sum", X((4,)))),
               FLOATS, "promote", grad=True, errors=[
                   E(lambda d: F.embedding_bag(T((3,), d, I64), T((5, 3), d)), ValueError,
                     "offsets has to be a 1D Tensor but got None"),
                   E(lambda d: F.embedding_bag(T((2, 2), d, I64), T((5, 3), d),
                                               T((1,), d, I64)), ValueError,
                     "if input is 2D, then offsets has to be None"),
                   E(lambda d: F.embedding_bag(T((3,), d, I64), T((5, 3), d), T((2,), d, I64),
                                               mode="foo"), ValueError,
                     "mode has to be one of sum, mean or max"),
                   E(lambda d: F.embedding_bag(T((3,), d, I64), T((5, 3), d), T((2,), d, I64),
                                               per_sample_weights=T((3,), d)),
                     NotImplementedError, r"per_sample_weights is only supported for "
                     r"mode='sum' \(got mode='mean'\)"),
                   E(lambda d: F.embedding_bag(T((3,), d, I64) + 13, T((5, 3), d),
                                               T((2,), d, I64)), RuntimeError,
                     r"Index 0 of input takes value 13 which is not in the valid range \[0, 5\)"),
                   E(lambda d: F.embedding_bag(T((3,), d, I64), T((5, 3), d),
                                               T((2,), d, I64) + 1), RuntimeError,
                     r"offsets\[0\] has to be 0, i.e., the first sequence in the mini-batch has "
                     r"to start from position 0. However, got 1")]),
        OpInfo("nn.functional.conv_tbc", F.conv_tbc, np_conv_tbc,
               fixed(S(X((5, 2, 3)), X((3, 3, 4)), X((4,)), 1), S(X((4, 1, 2)), X((2, 2, 3)),
                                                                X((3,)))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("nn.functional.ctc_loss", F.ctc_loss, np_ctc,
               fixed(S(X((6, 2, 4)), IDX([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2]),
                     S(X((5, 3, 3)), IDX([[1, 1], [2, 0], [0, 0]]), [5, 4, 3], [2, 1, 0],
                       reduction="none"),
                     S(X((4, 2, 3)), IDX([[0, 2], [2, 2]]), [4, 4], [2, 2], 1, "sum")),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5,
               grad_samples=fixed(S(X((4, 2, 3)), IDX([[1, 2], [2, 2]]), [4, 3], [2, 1])),
               errors=[
                   E(lambda d: F.ctc_loss(T((6, 2, 4), d), T((2, 3), d, I64), [6, 7], [3, 2]),
                     RuntimeError, "Expected input_lengths to have value at most 6, but got "
                     "value 7"),
                   E(lambda d: F.ctc_loss(T((6, 2, 4), d), T((2, 3), d, I64), [6], [3, 2]),
                     RuntimeError, "input_lengths must be of size batch_size"),
                   E(lambda d: F.ctc_loss(T((6, 2, 4), d), T((2, 3), d, I64), [6, 5], [3, 4]),
                     RuntimeError, "Expected tensor to have size at least 4 at dimension 1, but "
                     "got size 3 for argument #2 'targets'"),
                   E(lambda d: F.ctc_loss(T((6, 2, 4), d), T((2, 3), d, I64), [6, 5], [3, 2],
                                          blank=4), RuntimeError, "blank must be in label range"),
                   E(lambda d: F.ctc_loss(T((6, 2, 4), d), T((2, 3), d, I64), [6, 5], [3, 2],
                                          reduction="avg"), ValueError,
                     "avg is not a valid value for reduction")]),
        OpInfo("nn.functional.affine_grid", F.affine_grid, np_affine_grid,
               fixed(S(X((2, 2, 3)), [2, 3, 4, 5], False), S(X((1, 2, 3)), [1, 1, 3, 2], True),
                     S(X((2, 3, 4)), [2, 1, 2, 3, 4], False)),
               FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.affine_grid(T((1, 2, 2), d), [1, 1, 2, 2], False), ValueError,
                     r"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                     r"\[1, 1, 2, 2\]"),
                   E(lambda d: F.affine_grid(T((1, 2, 3), d), [1, 1, 2, 2, 2], False), ValueError,
                     r"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                     r"\[1, 1, 2, 2, 2\]")]),
        OpInfo("nn.functional.grid_sample", F.grid_sample, np_grid_sample,
               fixed(S(X((2, 3, 4, 5)), X((2, 3, 6, 2), "unit"), "bilinear", "zeros", False),
                     S(X((1, 2, 3, 4)), X((1, 2, 2, 2), "unit"), "bilinear", "border", True),
                     S(X((1, 2, 3, 4)), X((1, 4, 3, 2), "unit"), "nearest", "zeros", False)),
               FLOATS, "same", grad=True,
               grad_samples=fixed(S(X((1, 2, 3, 3)), X((1, 2, 2, 2), "unit"), "bilinear",
                                    "zeros", True)),
               errors=[
                   E(lambda d: F.grid_sample(T((1, 2, 3, 4), d), T((1, 2, 2, 2), d), "foo",
                                             align_corners=False), ValueError,
                     "nn.functional.grid_sample\\(\\): expected mode to be 'bilinear', 'nearest' "
                     "or 'bicubic', but got: 'foo'"),
                   E(lambda d: F.grid_sample(T((1, 2, 3, 4), d), T((1, 2, 2, 3), d),
                                             align_corners=False), RuntimeError,
                     r"grid_sampler\(\): expected grid to have size 2 in last dimension, but got "
                     r"grid with sizes \[1, 2, 2, 3\]"),
                   E(lambda d: F.grid_sample(T((1, 2, 3, 4), d), T((2, 2, 2, 2), d),
                                             align_corners=False), RuntimeError,
                     r"grid_sampler\(\): expected grid and input to have same batch size")]),
        OpInfo("nn.functional.grouped_mm",
               # (offsets are int32 in PyTorch; the table's index arrays are int64). float32
               # only: PyTorch refuses float64, so test_grouped_mm_parity gradchecks the
               # composition itself in float64
               lambda a, b, offs=None: F.grouped_mm(
                   a, b, offs=None if offs is None else offs.to(pg.int32)),
               np_grouped_mm,
               fixed(S(X((6, 8)), X((2, 8, 4)), IDX([2, 6])),  # rows of a grouped
                     S(X((5, 8)), X((3, 8, 4)), IDX([2, 2, 5])),  # an empty group
                     S(X((2, 4, 8)), X((8, 12)), IDX([4, 12])),  # columns of b grouped
                     S(X((4, 8)), X((8, 4)), IDX([4, 8])),  # K grouped
                     S(X((2, 4, 8)), X((2, 8, 4)))),  # batched
               (F32,), "same", errors=[
                   E(lambda d: F.grouped_mm(T((4, 8), d), T((2, 8, 4), d)), RuntimeError,
                     r"Have to provide offsets if there is a 2d matrix"),
                   E(lambda d: F.grouped_mm(T((4, 8), d, F64), T((2, 8, 4), d, F64),
                                            offs=pg.tensor([2, 4], dtype=pg.int32, device=d)),
                     RuntimeError, r"Expected mat_a to be Float32, BFloat16 or Float16 matrix, "
                                   r"got Double")]),
        OpInfo("nn.functional.linear_cross_entropy",
               lambda x, w, t, b=None, **k: F.linear_cross_entropy(x, w, t, linear_bias=b, **k),
               np_linear_cross_entropy,
               fixed(S(X((5, 4)), X((3, 4)), IDX([0, 2, 1, 1, 2])),
                     S(X((5, 4)), X((3, 4)), IDX([0, 2, 1, 1, 2]), X((3,)), reduction="none"),
                     S(X((4,)), X((3, 4)), IDX(2), reduction="sum"),
                     S(X((3, 4)), X((3, 2, 4)), IDX([[0, 1], [2, 2], [1, 0]]), X((3, 2)))),
               FLOATS, "same", grad=True, errors=[
                   E(lambda d: F.linear_cross_entropy(T((2, 4), d), T((3, 5), d),
                                                      T((2,), d, I64)), RuntimeError,
                     r"expected equal input and linear_weight last dimensions \(in_features\), "
                     r"got 4 and 5, respectively"),
                   E(lambda d: F.linear_cross_entropy(T((4,), d), T((3, 2, 4), d),
                                                      T((2,), d, I64)), RuntimeError,
                     r"K-dimensional loss defined by linear_weight shape \(3, 2, 4\) requires "
                     r"batched input")]),
        OpInfo("nn.functional.max_unpool1d", F.max_unpool1d, np_unpool(1),
               fixed(S(X((2, 3, 4)), IDX(np.arange(24).reshape(2, 3, 4) % 4 * 2 + 1), 2),
                     S(X((3, 3)), IDX([[0, 2, 3]] * 3), 2, 2, 1)),
               FLOATS, "same", grad=True),
        OpInfo("nn.functional.max_unpool3d", F.max_unpool3d, np_unpool(3),
               fixed(S(X((1, 2, 2, 1, 2)), IDX(np.array([0, 7, 9, 30, 31, 2, 3, 20])
                                              .reshape(1, 2, 2, 1, 2)), 2)),
               FLOATS, "same", grad=True),
        OpInfo("nn.functional.fractional_max_pool2d",
               lambda x, k, o, r: F.fractional_max_pool2d(x, k, o, _random_samples=r),
               lambda x, k, o, r: np_fractional_max_pool2d(x, k, o, r),
               fixed(S(X((2, 3, 7, 9), "distinct"), 2, (4, 5),
                       np.linspace(0.01, 0.99, 12).reshape(2, 3, 2)),
                     S(X((1, 2, 5, 5), "distinct"), 3, (3, 2), np.array([[[0.9, 0.2], [0.4, 0.7]]]))),
               FLOATS, "same", grad=True,
               grad_samples=fixed(S(X((1, 1, 5, 5), "distinct"), 2, (3, 3),
                                    np.array([[[0.3, 0.6]]])))),
        OpInfo("nn.functional.interpolate_bicubic",
               lambda x, size, ac=False: F.interpolate(x, size, mode="bicubic", align_corners=ac),
               lambda x, size, ac=False: np_bicubic(x, size, ac),
               fixed(S(X((2, 3, 4, 5)), (7, 3)), S(X((1, 2, 3, 3)), (5, 6), True),
                     S(X((1, 1, 2, 4)), (1, 1))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5,
               grad_samples=fixed(S(X((1, 1, 3, 3)), (4, 5)))),
        OpInfo("nn.functional.multi_head_attention_forward",
               lambda q, k, v, h, w, b, ow, ob, mask=None: F.multi_head_attention_forward(
                   q, k, v, q.shape[-1], h, w, b, None, None, False, 0.0, ow, ob, attn_mask=mask,
                   need_weights=False)[0], np_mha,
               fixed(S(X((3, 2, 4)), X((5, 2, 4)), X((5, 2, 4)), 2, X((12, 4)), X((12,)),
                       X((4, 4)), X((4,))),
                     S(X((3, 1, 4)), X((3, 1, 4)), X((3, 1, 4)), 1, X((12, 4)), X((12,)),
                       X((4, 4)), X((4,)), MASK([[False, True, True], [False, False, True],
                                                 [False, False, False]]))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5,
               grad_samples=fixed(S(X((2, 1, 4)), X((2, 1, 4)), X((2, 1, 4)), 2, X((12, 4)),
                                    X((12,)), X((4, 4)), X((4,))))),
    ]


OP_TABLE += _nn_functional_rows()

# ----------------------------------------------------------------------------- more math, diagonals,
# scans, searching, compositions (inverse trig/hyperbolic, erfinv, cumprod, einsum, cdist ...)
def _np_erfinv(y: np.ndarray) -> np.ndarray:
    """erfinv by bisection on math.erf (a slow, plain reference)."""
    def one(v: float) -> float:
        if abs(v) >= 1:
            return math.copysign(math.inf, v) if abs(v) == 1 else math.nan
        lo, hi = -6.0, 6.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
        return (lo + hi) / 2
    return np.vectorize(one, otypes=[np.float64])(np.asarray(y, dtype=np.float64))


def _np_cummax(x: np.ndarray, dim: int, better: Callable) -> tuple:
    x = np.moveaxis(np.asarray(x), dim, -1)
    vals, idx = x.copy(), np.zeros(x.shape, dtype=np.int64)
    for k in range(1, x.shape[-1]):
        take = better(x[..., k], vals[..., k - 1]) | (x[..., k] == vals[..., k - 1])
        vals[..., k] = np.where(take, x[..., k], vals[..., k - 1])
        idx[..., k] = np.where(take, k, idx[..., k - 1])
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


def _np_diag_embed(x: np.ndarray, offset: int = 0) -> np.ndarray:
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    r = np.arange(x.shape[-1]) + max(-offset, 0)
    c = np.arange(x.shape[-1]) + max(offset, 0)
    out[..., r, c] = x
    return out


def _np_logcumsumexp(x: np.ndarray, dim: int) -> np.ndarray:
    return np.logaddexp.accumulate(x.astype(np.float64), axis=dim)


def _np_cdist(a: np.ndarray, b: np.ndarray, p: float = 2.0) -> np.ndarray:
    d = np.abs(a[..., :, None, :].astype(np.float64) - b[..., None, :, :])
    return (d ** p).sum(-1) ** (1 / p)


def _more_math_rows() -> list[OpInfo]:
    rows = []
    for name, fn, ref, dom, dts, grad in (
            ("asin", pg.asin, np.arcsin, "unit", NUMERIC, True),
            ("acos", pg.acos, np.arccos, "unit", NUMERIC, True),
            ("atan", pg.atan, np.arctan, "any", NUMERIC, True),
            ("sinh", pg.sinh, np.sinh, "any", NUMERIC, True),
            ("cosh", pg.cosh, np.cosh, "any", NUMERIC, True),
            ("asinh", pg.asinh, np.arcsinh, "any", NUMERIC, True),
            ("atanh", pg.atanh, np.arctanh, "unit", NUMERIC, True),
            ("arcsin", pg.arcsin, np.arcsin, "unit", FLOATS, False),
            ("arccos", pg.arccos, np.arccos, "unit", FLOATS, False),
            ("arctan", pg.arctan, np.arctan, "any", FLOATS, False),
            ("arcsinh", pg.arcsinh, np.arcsinh, "any", FLOATS, False),
            ("arctanh", pg.arctanh, np.arctanh, "unit", FLOATS, False),
            ("erfinv", pg.erfinv, _np_erfinv, "unit", FLOATS, True),
            ("erfc", pg.erfc, lambda x: 1 - np.vectorize(math.erf, otypes=[float])(x.astype(float)),
             "any", NUMERIC, True),
            ("deg2rad", pg.deg2rad, np.deg2rad, "any", NUMERIC, True),
            ("rad2deg", pg.rad2deg, np.rad2deg, "any", NUMERIC, True),
            ("sinc", pg.sinc, np.sinc, "any", NUMERIC, True),
            ("logit", pg.logit, lambda x: np.log(x / (1 - x)), "unit", FLOATS, False),
    ):
        rows.append(OpInfo(name, fn, ref, unary_samples(dom), dts, "float", method=name,
                           grad=grad, gradgrad=name in ("asin", "sinh", "erfinv"), rtol=1e-4,
                           errors=[E(lambda d, fn=fn: fn([0.5]), TypeError,
                                     rf"{name}\(\): argument 'input' \(position 1\) must be "
                                     rf"Tensor, not list")] if name in ("asin", "sinh") else []))
    rows += [
        OpInfo("acosh", lambda x: pg.acosh(x + 1.0), lambda x: np.arccosh(x + 1.0),
               unary_samples("positive"), FLOATS, "same", grad=True),
        OpInfo("logit_p", lambda x: pg.logit(x.abs() * 0.5, 1e-3),
               lambda x: (lambda p: np.log(p / (1 - p)))(np.clip(np.abs(x) * 0.5, 1e-3,
                                                                 1 - 1e-3)),
               unary_samples("unit"), FLOATS, "same", grad=True),
        OpInfo("arctan2", pg.arctan2, np.arctan2, binary_samples(("any", "nonzero")), FLOATS,
               "float", method="arctan2", grad=True),
        OpInfo("xlogy", pg.xlogy, lambda a, b: np.where(a == 0, 0.0, a * np.log(b)),
               binary_samples(("any", "positive")), NUMERIC, "float", method="xlogy", grad=True),
        OpInfo("copysign", pg.copysign, np.copysign, binary_samples(("nonzero", "nonzero")),
               NUMERIC, "float", method="copysign", grad=True),
        OpInfo("fmax", pg.fmax, np.fmax, binary_samples(scalars=False), NUMERIC, "promote",
               method="fmax", grad=True),
        OpInfo("fmin", pg.fmin, np.fmin, binary_samples(scalars=False), NUMERIC, "promote",
               method="fmin", grad=True),
        OpInfo("hypot", pg.hypot, np.hypot, binary_samples(("nonzero", "nonzero"), scalars=False),
               FLOATS, "promote", method="hypot", grad=True),
        OpInfo("special.xlog1py", pg.special.xlog1py,
               lambda a, b: np.where(a == 0, 0.0, a * np.log1p(b)),
               binary_samples(("any", "positive")), NUMERIC, "float", grad=True),
        OpInfo("logaddexp", pg.logaddexp, np.logaddexp, binary_samples(scalars=False), FLOATS,
               "promote", method="logaddexp", grad=True),
        OpInfo("logaddexp2", pg.logaddexp2, np.logaddexp2, binary_samples(scalars=False), FLOATS,
               "promote", method="logaddexp2", grad=True),
        OpInfo("float_power", pg.float_power,
               lambda a, b: np.power(np.asarray(a, np.float64), np.asarray(b, np.float64)),
               binary_samples(("positive", "any")), NUMERIC, F64, method="float_power",
               grad=True),
        OpInfo("heaviside", pg.heaviside, np.heaviside,
               fixed(S(X((2, 3), "small"), X((2, 3))), S(X((2, 3), "small"), X((3,))),
                     S(X(()), X(()))), NUMERIC, "same", method="heaviside",
               errors=[E(lambda d: pg.heaviside(T((2,), d), T((2,), d, I64)), RuntimeError,
                         r"heaviside is not yet implemented for tensors with different dtypes")]),
        OpInfo("addcmul", lambda x, a, b: pg.addcmul(x, a, b, value=0.5),
               lambda x, a, b: x + 0.5 * a * b,
               fixed(S(X((2, 3)), X((2, 3)), X((3,))), S(X((3, 4)), X((3, 4)), X((3, 4)), nc="T"),
                     S(X(()), X(()), X(()))), FLOATS, "same", grad=True),
        OpInfo("addcdiv", lambda x, a, b: pg.addcdiv(x, a, b, value=2),
               lambda x, a, b: x + 2 * a / b,
               fixed(S(X((2, 3)), X((2, 3)), X((3,), "nonzero")),
                     S(X((3, 4)), X((3, 4)), X((3, 4), "nonzero"), nc="T")), FLOATS, "same",
               grad=True,
               errors=[E(lambda d: pg.addcdiv(T((2,), d), T((2,), d, I64), T((2,), d, I64)),
                         RuntimeError, r"Integer division with addcdiv is no longer supported")]),
        OpInfo("clamp_min_fn", lambda x: pg.clamp_min(x, 0.1), lambda x: np.maximum(x, 0.1),
               unary_samples("nonzero"), FLOATS, "same", grad=True),
        OpInfo("clamp_max_fn", lambda x: pg.clamp_max(x, 0.1), lambda x: np.minimum(x, 0.1),
               unary_samples("nonzero"), FLOATS, "same", grad=True),
        OpInfo("isposinf", pg.isposinf, np.isposinf,
               fixed(lambda dt, rng: Sample((np.array([1.0, np.inf, -np.inf, np.nan],
                                                       dtype=dt.numpy),), {})),
               FLOATS, "bool", method="isposinf"),
        OpInfo("isneginf", pg.isneginf, np.isneginf,
               fixed(lambda dt, rng: Sample((np.array([1.0, np.inf, -np.inf, np.nan],
                                                       dtype=dt.numpy),), {})),
               FLOATS, "bool", method="isneginf"),
        OpInfo("fix", pg.fix, np.trunc, unary_samples(), NUMERIC, "same", method="fix"),
        OpInfo("angle", pg.angle, lambda x: np.angle(x.astype(np.float64)),
               unary_samples("nonzero"), NUMERIC, "float", method="angle"),
        # diagonals
        OpInfo("diagonal", pg.diagonal, lambda x, *a: np.diagonal(x, *a),
               fixed(S(X((3, 4))), S(X((3, 4)), 1), S(X((3, 4)), -2), S(X((2, 3, 4)), 1, 0, 2),
                     S(X((2, 3, 4)), 0, -1, 1), S(X((3, 4)), nc="T"), S(X((2, 3)), 5)),
               ALL, "same", method="diagonal", view=True, grad=True, gradgrad=True,
               errors=[E(lambda d: pg.diagonal(T((3,), d)), RuntimeError,
                         r"diagonal dimensions requires ndim larger than 2, but got ndim=1"),
                       E(lambda d: pg.diagonal(T((3, 3), d), 0, 1, -1), RuntimeError,
                         r"diagonal dimensions cannot be identical 1, -1")]),
        OpInfo("diag", pg.diag, np.diag,
               fixed(S(X((3,))), S(X((3,)), 1), S(X((3,)), -2), S(X((3, 4))), S(X((3, 4)), -1),
                     S(X((3, 4)), nc="T")), ALL, "same", method="diag", grad=True,
               errors=[E(lambda d: pg.diag(T((2, 2, 2), d)), RuntimeError,
                         r"diag\(\): Supports 1D or 2D tensors. Got 3D")]),
        OpInfo("diag_embed", pg.diag_embed, _np_diag_embed,
               fixed(S(X((3,))), S(X((2, 3)), 1), S(X((2, 3)), -1), S(X((2, 3)), nc="T")),
               NUMERIC, "same", method="diag_embed", grad=True),
        OpInfo("diagflat", pg.diagflat, np.diagflat,
               fixed(S(X((2, 2))), S(X((3,)), 1), S(X((3, 2)), nc="T")), NUMERIC, "same",
               method="diagflat", grad=True),
        OpInfo("trace", pg.trace, np.trace, fixed(S(X((3, 4))), S(X((3, 3)), nc="T"),
                                                  S(X((0, 2)))),
               NUMERIC, "sum", method="trace", grad=True,
               errors=[E(lambda d: pg.trace(T((2,), d)), RuntimeError,
                         r"trace: expected a matrix, but got tensor with dim 1")]),
        OpInfo("kron", pg.kron, np.kron,
               fixed(S(X((2, 3)), X((2, 2))), S(X((2,)), X((3, 2))), S(X((2, 2)), X((2, 2)),
                                                                        nc="T")),
               NUMERIC, "promote", method="kron", grad=True),
        OpInfo("block_diag", lambda *ts: pg.block_diag(*ts),
               lambda *ts: _np_block_diag(*ts),
               fixed(S(X((2, 3)), X((1, 2))), S(X((2,)), X(()), X((2, 2)))), NUMERIC, "same",
               grad=True,
               errors=[E(lambda d: pg.block_diag(T((1, 1, 1), d)), RuntimeError,
                         r"Input tensors must have 2 or fewer dimensions. Input 0 has 3 "
                         r"dimensions")]),
        # scans and differences
        OpInfo("cumprod", pg.cumprod, lambda x, dim: np.cumprod(x, dim),
               fixed(S(X((2, 5)), 1), S(X((2, 3, 4)), 0), S(X((3, 4)), -1, nc="T"),
                     S(X((0, 3)), 1), S(X((7,)), 0), S(X((2, 1, 3)), 1), S(X((1,)), 0)),
               FLOATS, "same", method="cumprod", grad=True, gradgrad=True, rtol=1e-4),
        OpInfo("cumprod_int", pg.cumprod, lambda x, dim: np.cumprod(x.astype(np.int64), dim),
               fixed(S(X((2, 5)), 1), S(X((5,), "small"), 0)), INTS + (B,), I64),
        OpInfo("cummax", pg.cummax, lambda x, dim: _np_cummax(x, dim, np.greater),
               fixed(S(X((2, 6)), 1), S(X((2, 3, 4), "small"), 0), S(X((3, 4)), -1, nc="T"),
                     S(X((0, 3)), 1), S(X((3, 1)), 1)),
               NUMERIC, "same", method="cummax", grad=True),
        OpInfo("cummin", pg.cummin, lambda x, dim: _np_cummax(x, dim, np.less),
               fixed(S(X((2, 6)), 1), S(X((2, 3, 4), "small"), 0), S(X((1,)), 0)),
               NUMERIC, "same", method="cummin", grad=True),
        OpInfo("logcumsumexp", pg.logcumsumexp, _np_logcumsumexp,
               fixed(S(X((2, 6)), 1), S(X((2, 3, 4)), 0), S(X((3, 4)), -1, nc="T"),
                     S(X((0, 3)), 1), S(X((3, 1)), 1), S(X((1,)), 0)),
               FLOATS, "same", method="logcumsumexp", grad=True, rtol=1e-4),
        OpInfo("diff", pg.diff, lambda x, n=1, dim=-1: np.diff(x, n, dim),
               fixed(S(X((2, 6))), S(X((2, 6)), 2, 0), S(X((3, 4)), 1, 1, nc="T"),
                     S(X((5,)), 3), S(X((2, 3)), 0)),
               NUMERIC, "same", method="diff", grad=True,
               errors=[E(lambda d: pg.diff(T((), d)), RuntimeError,
                         r"diff expects input to be at least one-dimensional")]),
        # compositions
        OpInfo("einsum_mm", lambda a, b: pg.einsum("ij,jk->ik", a, b),
               lambda a, b: np.einsum("ij,jk->ik", a, b),
               fixed(S(X((2, 3)), X((3, 4))), S(X((3, 3)), X((3, 3)), nc="T")), FLOATS, "same",
               grad=True, rtol=1e-4),
        OpInfo("einsum_batch", lambda a, b: pg.einsum("bij,bjk->bik", a, b),
               lambda a, b: np.einsum("bij,bjk->bik", a, b),
               fixed(S(X((2, 2, 3)), X((2, 3, 2)))), FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("einsum_trace_outer", lambda a, b: pg.einsum("ii,j->j", a, b),
               lambda a, b: np.einsum("ii,j->j", a, b),
               fixed(S(X((3, 3)), X((4,)))), FLOATS, "same", grad=True, rtol=1e-4,
               errors=[E(lambda d: pg.einsum("ij,jk->ik", T((2, 3), d)), RuntimeError,
                         r"einsum\(\): fewer operands were provided than specified in the "
                         r"equation")]),
        OpInfo("einsum_ellipsis", lambda a, b: pg.einsum("...ij,...j->...i", a, b),
               lambda a, b: np.einsum("...ij,...j->...i", a, b),
               fixed(S(X((2, 3, 4)), X((2, 4))), S(X((3, 4)), X((4,)))), FLOATS, "same",
               grad=True, rtol=1e-4),
        OpInfo("tensordot", pg.tensordot, np.tensordot,
               fixed(S(X((2, 3, 4)), X((3, 4, 2)), 2), S(X((2, 3)), X((3, 2)), 1),
                     S(X((2, 3, 4)), X((4, 3)), ([1, 2], [1, 0]))), FLOATS, "same", grad=True,
               rtol=1e-4),
        OpInfo("cdist", pg.cdist, _np_cdist,
               fixed(S(X((4, 3)), X((5, 3))), S(X((2, 3, 2)), X((2, 4, 2))),
                     S(X((4, 3)), X((2, 3)), 1.0)), FLOATS, "same", grad=True, rtol=1e-4,
               errors=[E(lambda d: pg.cdist(T((2, 3), d), T((2, 4), d)), RuntimeError,
                         r"X1 and X2 must have the same number of columns. X1: 3 X2: 4")]),
        OpInfo("cross", lambda a, b: pg.cross(a, b, dim=-1),
               lambda a, b: np.cross(a, b, axis=-1),
               fixed(S(X((4, 3)), X((4, 3))), S(X((2, 1, 3)), X((2, 4, 3)))), NUMERIC, "promote",
               grad=True,
               errors=[E(lambda d: pg.cross(T((2, 4), d), T((2, 4), d), dim=1), RuntimeError,
                         r"linalg.cross: inputs dimension 1 must have length 3. Got 4 and 4")]),
        OpInfo("cov", pg.cov, np.cov, fixed(S(X((3, 5))), S(X((6,))), S(X((3, 4)), nc="T")),
               FLOATS, "same", method="cov", grad=True, rtol=1e-4),
        OpInfo("corrcoef", pg.corrcoef, np.corrcoef, fixed(S(X((3, 5))), S(X((2, 4)), nc="T")),
               FLOATS, "same", method="corrcoef", grad=True, rtol=1e-4),
        OpInfo("nanmean", lambda x, **kw: pg.nanmean(x.masked_fill(x > 1.0, math.nan), **kw),
               lambda x, dim=None, keepdim=False: np.nanmean(
                   np.where(x > 1.0, np.nan, x), axis=dim, keepdims=keepdim),
               fixed(S(X((3, 5))), S(X((3, 5)), dim=1), S(X((2, 3, 4)), dim=(0, 2),
                                                          keepdim=True)),
               FLOATS, "same", grad=True),
        OpInfo("renorm", lambda x: pg.renorm(x, 2, 0, 1.0),
               lambda x: x * np.where((n := np.sqrt((x.astype(np.float64) ** 2).sum(1,
                                      keepdims=True))) > 1.0, 1.0 / (n + 1e-7), 1.0),
               fixed(S(X((4, 3))), S(X((3, 3)), nc="T")), FLOATS, "same", grad=True),
        OpInfo("take", pg.take, lambda x, i: np.take(x, i),
               fixed(S(X((3, 4)), IDX([[0, 5], [11, -1]])), S(X((3, 4)), IDX([2, 3]), nc="T")),
               ALL, "same", method="take", grad=True,
               errors=[E(lambda d: pg.take(T((2, 2), d), pg.tensor([4], device=d)), IndexError,
                         r"out of range: tried to access index 4 on a tensor of 4 elements")]),
        OpInfo("unfold", lambda x, *a: x.unfold(*a),
               lambda x, dim, size, step: np.moveaxis(
                   np.lib.stride_tricks.sliding_window_view(x, size, axis=dim), dim, dim)[
                       (slice(None),) * dim + (slice(None, None, step),)],
               fixed(S(X((2, 7)), 1, 3, 2), S(X((5, 2)), 0, 2, 1), S(X((4, 4)), 1, 4, 1, nc="T")),
               ALL, "same", view=True, grad=True),
        OpInfo("rot90", pg.rot90, lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims),
               fixed(S(X((2, 3))), S(X((2, 3)), 2), S(X((2, 3, 4)), 3, (1, 2)),
                     S(X((3, 4)), -1, nc="T")), ALL, "same", method="rot90", grad=True),
        # copies that are built from views here: the samples include the cases where the view
        # would be the input itself (a size-1 dimension, a zero or full-period shift)
        OpInfo("repeat", lambda x, *r: x.repeat(*r), lambda x, *r: np.tile(x, r),
               fixed(S(X((1,)), 3), S(X((2, 3)), 1, 1), S(X((3,)), 2, 1), S(X((2, 3)), 2, 1, 2),
                     S(X(()), 2), S(X((3, 1)), 1, 4), S(X((3, 4)), 1, 2, nc="T")),
               ALL, "same", grad=True,
               errors=[E(lambda d: T((2, 3), d).repeat(2), RuntimeError,
                         r"Number of dimensions of repeat dims can not be smaller than number of "
                         r"dimensions of tensor")]),
        OpInfo("tile", lambda x, d: x.tile(d), np.tile,
               fixed(S(X((3,)), 3), S(X((2, 3)), (1, 1)), S(X((2, 3)), (2,)), S(X((1,)), (2, 1)),
                     S(X((3, 4)), (1,), nc="T")),
               ALL, "same", grad=True),
        OpInfo("roll", pg.roll, np.roll,
               fixed(S(X((3,)), 0), S(X((3,)), 3), S(X((1,)), 1), S(X((2, 3)), 1, 1),
                     S(X((2, 3)), (0, 3), (0, 1)), S(X((2, 3)), -1), S(X((1, 3)), 1, 0),
                     S(X((3, 4)), 2, 0, nc="T")),
               ALL, "same", method="roll", grad=True),
        OpInfo("fft_fftshift", pg.fft.fftshift, np.fft.fftshift,
               fixed(S(X((5,))), S(X((4, 6))), S(X((3, 4, 5)), (0, 2)), S(X((4, 5)), 1),
                     S(X((3, 4)), -1, nc="T"), S(X((2, 0)))),
               ALL, "same", grad=True),
        OpInfo("fft_ifftshift", pg.fft.ifftshift, np.fft.ifftshift,
               fixed(S(X((5,))), S(X((4, 6))), S(X((3, 4, 5)), (0, 2)), S(X((4, 5)), 1),
                     S(X((3, 4)), -1, nc="T"), S(X((2, 0)))),
               ALL, "same", grad=True),
        OpInfo("ravel", pg.ravel, np.ravel,
               fixed(S(X((2, 3))), S(X(())), S(X((3, 4)), nc="T"), S(X((2, 3)), nc="step"),
                     S(X((4, 1)), nc="step")),
               ALL, "same", method="ravel", grad=True, aliases=viewable),
        OpInfo("masked_scatter", pg.masked_scatter,
               lambda x, m, s: _np_masked_scatter(x, m, s),
               fixed(S(X((2, 3)), MASK([[True, False, True], [False, True, False]]), X((5,))),
                     S(X((2, 3)), MASK([True, False, True]), X((2, 3))),),
               NUMERIC, "same", method="masked_scatter", grad=True),
        OpInfo("matrix_power", lambda x, n: x.matrix_power(n),
               lambda x, n: np.linalg.matrix_power(x, n),
               fixed(S(X((3, 3)), 0), S(X((3, 3)), 1), S(X((2, 3, 3)), 3), S(X((3, 3)), 5),
                     S(X((2, 2, 2)), -1)),
               FLOATS, "same", grad=True, rtol=1e-4,
               errors=[E(lambda d: pg.matrix_power(pg.zeros((2, 2), device=d), -1),
                         pg.linalg.LinAlgError, r"linalg.inv: The diagonal element 1 is zero")]),
        OpInfo("addmv", lambda x, m, v: pg.addmv(x, m, v, beta=0.5, alpha=2),
               lambda x, m, v: 0.5 * x + 2 * (m @ v),
               fixed(S(X((2,)), X((2, 3)), X((3,))), S(X(()), X((3, 3)), X((3,)), nc="T")),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("addr", lambda x, a, b: pg.addr(x, a, b, alpha=2),
               lambda x, a, b: x + 2 * np.outer(a, b),
               fixed(S(X((2, 3)), X((2,)), X((3,)))), FLOATS, "same", grad=True),
        OpInfo("index_put_acc", lambda x, i, v: x.index_put((i,), v, accumulate=True),
               lambda x, i, v: _np_index_add(x, i, v),
               fixed(S(X((4, 2)), IDX([0, 2, 0]), X((3, 2))), S(X((3,)), IDX([1, 1]), X((2,)))),
               NUMERIC, "same", grad=True),
        OpInfo("put", lambda x, i, v: x.put(i, v, accumulate=True),
               lambda x, i, v: _np_index_add(x.reshape(-1), i.reshape(-1),
                                             v.reshape(-1)).reshape(x.shape),
               fixed(S(X((2, 3)), IDX([0, 5, 0]), X((3,)))), NUMERIC, "same", grad=True),
    ]
    return rows


def _np_block_diag(*ts: np.ndarray) -> np.ndarray:
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in ts]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)),
                   dtype=np.result_type(*mats))
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _np_masked_scatter(x: np.ndarray, m: np.ndarray, s: np.ndarray) -> np.ndarray:
    out = x.copy()
    mm = np.broadcast_to(m, x.shape)
    out[mm] = s.reshape(-1)[:mm.sum()]
    return out


def _np_index_add(x: np.ndarray, i: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, i, v)
    return out


OP_TABLE += _more_math_rows()


def _np_digamma(x: np.ndarray, n: int = 0) -> np.ndarray:
    """psi (n = 0) or psi' (n = 1) of positive x: the recurrence up to x + 1000, then the first
    terms of the asymptotic series (a plain reference, independent of the implementation)."""
    x = np.asarray(x, dtype=np.float64)
    acc = sum((x + k) ** -(n + 1.0) for k in range(1000))
    y = x + 1000.0
    if n == 0:
        return np.log(y) - 0.5 / y - 1 / (12 * y ** 2) + 1 / (120 * y ** 4) - acc
    return 1 / y + 1 / (2 * y ** 2) + 1 / (6 * y ** 3) - 1 / (30 * y ** 5) + acc


def _np_scatter_reduce(x: np.ndarray, dim: int, idx: np.ndarray, src: np.ndarray, reduce: str,
                       include_self: bool = True) -> np.ndarray:
    out = x.astype(np.float64).copy()
    acc: dict = {}
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        acc.setdefault(tuple(tgt), []).append(float(src[pos]))
    for tgt, vals in acc.items():
        if include_self:
            vals = vals + [out[tgt]]
        out[tgt] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
                    "amin": np.min}[reduce](vals)
    return out.astype(x.dtype)


def _gamma_rows() -> list[OpInfo]:
    red_s = fixed(S(X((3, 4)), 0, IDX([[0, 2, 0, 1], [2, 2, 0, 0], [1, 0, 0, 2]]), X((3, 4))),
                  S(X((2, 5)), 1, IDX([[0, 4, 4], [1, 1, 3]]), X((2, 3))))
    rows = [
        OpInfo("lgamma", pg.lgamma,
               lambda x: np.vectorize(math.lgamma, otypes=[float])(x.astype(float)),
               unary_samples(), FLOATS, "float", method="lgamma", grad=True, gradgrad=True,
               rtol=1e-5, atol=2e-6),
        OpInfo("lgamma_reflection", lambda x: pg.lgamma(x - 3.0),
               lambda x: np.vectorize(math.lgamma, otypes=[float])(x.astype(float) - 3.0),
               unary_samples("unit"), FLOATS, "same", grad=True, rtol=1e-5, atol=2e-6),
        OpInfo("digamma", pg.digamma, _np_digamma, unary_samples("positive"), NUMERIC, "float",
               method="digamma", grad=True, rtol=1e-5, atol=2e-6),
        OpInfo("digamma_reflection", lambda x: pg.digamma(x - 2.0),
               lambda x: _np_digamma(1.0 - (x - 2.0)) - math.pi / np.tan(math.pi * (x - 2.0)),
               unary_samples("unit"), FLOATS, "same", grad=True, rtol=1e-5, atol=2e-5),
        OpInfo("polygamma1", lambda x: pg.polygamma(1, x), lambda x: _np_digamma(x, 1),
               unary_samples("positive"), FLOATS, "same", grad=True, rtol=1e-5, atol=2e-6,
               errors=[E(lambda d: pg.polygamma(-1, T((2,), d)), RuntimeError,
                         r"polygamma\(n, x\) does not support negative n")]),
        OpInfo("mvlgamma", lambda x: pg.mvlgamma(x + 1.0, 3),
               lambda x: sum(np.vectorize(math.lgamma, otypes=[float])(x + 1.0 - j / 2)
                             for j in range(3)) + 1.5 * math.log(math.pi),
               unary_samples("positive"), FLOATS, "same", grad=True, rtol=1e-5, atol=2e-6,
               errors=[E(lambda d: pg.mvlgamma(T((2,), d), 0), RuntimeError,
                         r"p has to be greater than or equal to 1")]),
    ]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            rows.append(OpInfo(
                f"scatter_reduce_{reduce}{'' if inc else '_noself'}",
                lambda x, d, i, s, r=reduce, inc=inc: x.scatter_reduce(d, i, s, r,
                                                                       include_self=inc),
                lambda x, d, i, s, r=reduce, inc=inc: _np_scatter_reduce(x, d, i, s, r, inc),
                red_s, FLOATS if reduce == "mean" else NUMERIC, "same", grad=True,
                errors=[E(lambda d: pg.scatter_reduce(T((2,), d), 0, pg.tensor([0], device=d),
                                                      T((1,), d), "maximum"), RuntimeError,
                          r"reduce argument must be either sum, prod, mean, amax or amin, got "
                          r"maximum")] if reduce == "sum" and inc else []))
    rows.append(OpInfo(
        "index_reduce", lambda x, i, s: x.index_reduce(0, i, s, "amax", include_self=False),
        lambda x, i, s: _np_scatter_reduce(x, 0, np.broadcast_to(i[:, None], s.shape), s,
                                           "amax", False),
        fixed(S(X((3, 2)), IDX([0, 2, 0, 0]), X((4, 2)))), NUMERIC, "same", grad=True,
        errors=[E(lambda d: T((2, 2), d).index_reduce(0, pg.tensor([0], device=d), T((1, 2), d),
                                                      "sum"), RuntimeError,
                  r"index_reduce\(\): Expected reduce to be one of prod, mean, amax or amin but "
                  r"got sum")]))
    return rows


OP_TABLE += _gamma_rows()


def _spd(x: np.ndarray) -> np.ndarray:
    return x @ np.swapaxes(x, -1, -2) + 3 * np.eye(x.shape[-1], dtype=x.dtype)


def _decomp_rows() -> list[OpInfo]:
    sq = fixed(S(X((3, 3))), S(X((2, 4, 4))), S(X((3, 3)), nc="T"), S(X((1, 1))))
    sq_grad = small(sq, limit=12, count=2)  # gradcheck: elimination costs n steps per call
    not_square = E(lambda d: pg.det(T((2, 3), d)), RuntimeError,
                   r"linalg.det: A must be batches of square matrices, but they are 2 by 3 "
                   r"matrices")
    return [
        OpInfo("det", pg.det, np.linalg.det, sq, FLOATS, "same", method="det", grad=True,
               grad_samples=sq_grad, gradgrad=True, rtol=1e-4, atol=1e-5, errors=[not_square]),
        OpInfo("logdet", lambda x: pg.logdet(_spd_pg(x)), lambda x: np.linalg.slogdet(_spd(x))[1],
               sq, FLOATS, "same", grad=True, grad_samples=sq_grad, rtol=1e-4, atol=1e-5),
        OpInfo("slogdet", pg.slogdet, lambda x: tuple(np.linalg.slogdet(x)), sq, FLOATS, "same",
               method="slogdet", rtol=1e-4, atol=1e-5),
        OpInfo("inverse", pg.inverse, np.linalg.inv, sq, FLOATS, "same", method="inverse",
               grad=True, grad_samples=sq_grad, gradgrad=True, rtol=1e-3, atol=1e-4,
               errors=[E(lambda d: pg.inverse(pg.zeros(2, 2, device=d)), RuntimeError,
                         r"linalg.inv: The diagonal element 1 is zero, the inversion could not "
                         r"be completed because the input matrix is singular.")]),
        OpInfo("linalg_solve", pg.linalg.solve, np.linalg.solve,
               fixed(S(X((3, 3)), X((3, 2))), S(X((2, 3, 3)), X((2, 3, 1))),
                     S(X((3, 3)), X((3, 3)), nc="T")), FLOATS, "same", grad=True, rtol=1e-3,
               atol=1e-4),
        OpInfo("cholesky", lambda x: pg.linalg.cholesky(_spd_pg(x)),
               lambda x: np.linalg.cholesky(_spd(x)), sq, FLOATS, "same", grad=True,
               grad_samples=sq_grad,
               rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.cholesky(-pg.eye(2, device=d)), RuntimeError,
                         r"linalg.cholesky: The factorization could not be completed because the "
                         r"input is not positive-definite \(the leading minor of order 1 is not "
                         r"positive-definite\)")]),
        OpInfo("linalg_qr", lambda x: pg.linalg.qr(x), lambda x: tuple(np.linalg.qr(x)),
               fixed(S(X((4, 3))), S(X((3, 3)), nc="T"), S(X((2, 3, 2)))), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_qr_complete", lambda x: pg.linalg.qr(x, "complete"),
               lambda x: tuple(np.linalg.qr(x, "complete")), fixed(S(X((3, 2))), S(X((2, 3)))),
               FLOATS, "same", rtol=1e-4, atol=1e-5),
        OpInfo("lu_factor", lambda x: pg.linalg.lu_factor(x).LU,
               lambda x: _np_lu_packed(x), fixed(S(X((4, 4))), S(X((3, 3)), nc="T"),
                                                 S(X((4, 2))), S(X((2, 4)))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("lu_solve", lambda a, b: pg.linalg.lu_solve(*pg.linalg.lu_factor(a), b),
               lambda a, b: np.linalg.solve(a, b), fixed(S(X((3, 3)), X((3, 2)))), FLOATS,
               "same", grad=True, rtol=1e-3, atol=1e-4),
        OpInfo("linalg_matrix_norm_1", lambda x: pg.linalg.matrix_norm(x, 1),
               lambda x: np.linalg.norm(x, 1, axis=(-2, -1)), sq, FLOATS, "same", grad=True),
        OpInfo("linalg_norm", lambda x, **kw: pg.linalg.norm(x, **kw),
               lambda x, **kw: np.linalg.norm(x, axis=kw.get("dim")),
               fixed(S(X((3, 4))), S(X((3, 4)), dim=1), S(X((2, 3, 4)), dim=(1, 2))), FLOATS,
               "same", grad=True),
    ]


def _np_lu_packed(a: np.ndarray) -> np.ndarray:
    """LAPACK's getrf by hand: partial pivoting, L's multipliers below U."""
    lu = a.astype(np.float64).copy()
    m, n = lu.shape
    for k in range(min(m, n)):
        p = k + int(np.argmax(np.abs(lu[k:, k])))
        lu[[k, p]] = lu[[p, k]]
        if lu[k, k] != 0:
            lu[k + 1:, k] /= lu[k, k]
            lu[k + 1:, k + 1:] -= np.outer(lu[k + 1:, k], lu[k, k + 1:])
    return lu


def _spd_pg(x: pg.Tensor) -> pg.Tensor:
    return x @ x.transpose(-1, -2) + 3 * pg.eye(x.shape[-1], dtype=x.dtype, device=x.device)


OP_TABLE += _decomp_rows()


# --------------------------------------------------------------- spectral decompositions
# Eigenvectors and singular vectors are unique only up to sign, so the rows compare (and
# gradcheck) gauge-invariant functions of them, as PyTorch's OpInfos do: the values, the vectors'
# absolute values, and products such as V diag(w) V^T. The symmetric routines get x + x^T.
def _eigh_parts(r: Any) -> tuple:
    w, v = r
    return w, v.abs(), v @ pg.diag_embed(w) @ v.mT


def _np_eigh_parts(a: np.ndarray, uplo: str = "L") -> tuple:
    w, v = np.linalg.eigh(a.astype(np.float64), UPLO=uplo)
    return w, np.abs(v), v @ (w[..., :, None] * np.swapaxes(v, -1, -2))


def _svd_parts(r: Any, k: int | None = None) -> tuple:
    u, s, vh = r
    k = s.shape[-1] if k is None else k
    u, vh = u[..., :k], vh[..., :k, :]  # full_matrices: the first k vectors are determined
    return s, u.abs(), vh.abs(), (u * s.unsqueeze(-2)) @ vh


def _np_svd_parts(a: np.ndarray) -> tuple:
    u, s, vh = np.linalg.svd(a.astype(np.float64), full_matrices=False)
    return s, np.abs(u), np.abs(vh), (u * s[..., None, :]) @ vh


def _np_orthonormal(a: np.ndarray, side: int) -> np.ndarray:
    """The identity the full ``U U^T`` (``side=-2``) or ``Vh^T Vh`` (``side=-1``) must be."""
    n = a.shape[side]
    return np.broadcast_to(np.eye(n), a.shape[:-2] + (n, n))


def _np_householder(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """LAPACK's orgqr by definition: the first n columns of H_1 ... H_k."""
    m, n = a.shape[-2:]
    q = np.eye(m)
    for i in range(tau.shape[-1]):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n]


def _np_lstsq(a: np.ndarray, b: np.ndarray, **kw: Any) -> np.ndarray:
    """The least-squares (minimum-norm) solution, ``b`` a matrix or a vector."""
    if b.ndim == a.ndim:
        return np.linalg.pinv(a) @ b
    return (np.linalg.pinv(a) @ b[..., None])[..., 0]


def _tri(a: pg.Tensor) -> pg.Tensor:
    """A well-conditioned matrix for the triangular solves (3 added to the diagonal)."""
    return a + 3 * pg.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _np_tri(a: np.ndarray, upper: bool = True, unit: bool = False) -> np.ndarray:
    t = a + 3 * np.eye(a.shape[-1])
    t = np.triu(t) if upper else np.tril(t)
    if unit:
        eye = np.eye(a.shape[-1])
        t = t * (1 - eye) + eye
    return t


def _spectral_rows() -> list[OpInfo]:
    inf = math.inf
    sq = fixed(S(X((3, 3))), S(X((2, 4, 4))), S(X((3, 3)), nc="T"), S(X((1, 1))),
               S(X((0, 0))), S(X((2, 0, 0))))
    rect = fixed(S(X((4, 3))), S(X((3, 5))), S(X((2, 3, 2))), S(X((3, 3)), nc="T"),
                 S(X((1, 1))), S(X((0, 3))), S(X((3, 0))))
    rect_grad = small(rect, limit=15, count=4)
    sq_grad = small(sq, limit=16, count=3)
    return [
        OpInfo("linalg_eigh", lambda x: _eigh_parts(pg.linalg.eigh(x + x.mT)),
               lambda x: _np_eigh_parts(x + np.swapaxes(x, -1, -2)), sq, FLOATS, "same",
               grad=True, grad_samples=sq_grad, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.eigh(T((2, 3), d)), RuntimeError,
                         r"linalg.eigh: A must be batches of square matrices, but they are 2 "
                         r"by 3 matrices"),
                       E(lambda d: pg.linalg.eigh(T((3,), d)), RuntimeError,
                         r"linalg.eigh: The input tensor A must have at least 2 dimensions."),
                       E(lambda d: pg.linalg.eigh(T((2, 2), d, I64)), NotImplementedError,
                         r"\"linalg_eigh_\w+\" not implemented for 'Long'"),
                       E(lambda d: pg.linalg.eigh(T((2, 2), d), UPLO="X"), RuntimeError,
                         r"Expected UPLO argument to be 'L' or 'U', but got X"),
                       E(lambda d: pg.linalg.eig(T((2, 3), d)), RuntimeError,
                         r"linalg.eig: A must be batches of square matrices"),
                       E(lambda d: pg.linalg.eigvals(T((2, 2), d, I64)), RuntimeError,
                         r"Unknown Complex ScalarType for Long"),
                       E(lambda d: pg.linalg.ldl_factor(T((2, 2), d)), NotImplementedError,
                         r"linalg.ldl_factor is not implemented")]),
        # only the upper triangle is read: x itself, not symmetrised (forward only, as the
        # gradient stands for a symmetric input, PyTorch's)
        OpInfo("linalg_eigh_upper", lambda x: _eigh_parts(pg.linalg.eigh(x, UPLO="U"))[:2],
               lambda x: _np_eigh_parts(x, "U")[:2], sq, FLOATS, "same", rtol=1e-4, atol=1e-5),
        # the two largest eigenvalues by LOBPCG (its random start block: the converged values
        # are the same each run); float64 iterates to a tight tolerance for gradcheck
        OpInfo("lobpcg", lambda x: pg.lobpcg(_spd_pg(x), k=2, tol=1e-12 if x.dtype is F64
                                             else None, niter=500)[0],
               lambda x: np.linalg.eigvalsh(x @ np.swapaxes(x, -1, -2) + 3 * np.eye(
                   x.shape[-1]))[..., ::-1][..., :2],
               fixed(S(X((6, 6))), S(X((2, 7, 7)))), FLOATS, "same", grad=True, rtol=1e-3,
               atol=1e-4),
        OpInfo("linalg_eigvalsh", lambda x: pg.linalg.eigvalsh(x + x.mT),
               lambda x: np.linalg.eigvalsh(x + np.swapaxes(x, -1, -2)), sq, FLOATS, "same",
               grad=True, grad_samples=sq_grad, gradgrad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.eigvalsh(T((2, 3), d)), RuntimeError,
                         r"linalg.eigh: A must be batches of square matrices")]),  # (torch: eigh)
        OpInfo("linalg_svd", lambda x: _svd_parts(pg.linalg.svd(x, full_matrices=False)),
               _np_svd_parts, rect, FLOATS, "same", grad=True, grad_samples=rect_grad,
               rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.svd(T((2, 2), d, I64)), RuntimeError,
                         r"linalg.svd: Expected a floating point or complex tensor as input. "
                         r"Got Long"),
                       E(lambda d: pg.linalg.svd(T((3,), d)), RuntimeError,
                         r"linalg.svd: The input tensor A must have at least 2 dimensions."),
                       E(lambda d: pg.linalg.svd(T((2, 2), d), driver="gesvd"), RuntimeError,
                         r"keyword argument `driver=` is only supported on CUDA")]),
        # full_matrices: the first k vectors are determined (and differentiated, as PyTorch);
        # the rest complete orthonormal bases
        OpInfo("linalg_svd_full", lambda x: _svd_parts(pg.linalg.svd(x), min(x.shape[-2:])),
               _np_svd_parts, rect, FLOATS, "same", grad=True, grad_samples=rect_grad,
               rtol=1e-4, atol=1e-5),
        OpInfo("linalg_svd_full_bases", lambda x: (lambda r: (r.U @ r.U.mT, r.Vh.mT @ r.Vh))(
                   pg.linalg.svd(x)),
               lambda x: (_np_orthonormal(x, -2), _np_orthonormal(x, -1)), rect, FLOATS, "same",
               rtol=1e-4, atol=1e-5),
        OpInfo("linalg_svdvals", pg.linalg.svdvals,
               lambda x: np.linalg.svd(x, compute_uv=False), rect, FLOATS, "same", grad=True,
               grad_samples=rect_grad, gradgrad=True, rtol=1e-4, atol=1e-5),
        OpInfo("svd", lambda x, **kw: (lambda r: (r.S, r.U.abs(), r.V.abs()))(pg.svd(x, **kw)),
               lambda x, **kw: (lambda p: (p[0], p[1], np.swapaxes(p[2], -1, -2)))(
                   _np_svd_parts(x)),
               fixed(S(X((4, 3))), S(X((2, 3, 5))), S(X((3, 3)), nc="T")), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_pinv", pg.linalg.pinv, np.linalg.pinv, rect, FLOATS, "same", grad=True,
               grad_samples=rect_grad, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.pinv(T((2, 3), d, I64)), RuntimeError,
                         r"linalg.pinv\(Long\{\[2, 3\]\}\): expected a tensor with 2 or more "
                         r"dimensions of float, double, cfloat or cdouble types")]),
        OpInfo("linalg_pinv_hermitian", lambda x: pg.linalg.pinv(x + x.mT, hermitian=True),
               lambda x: np.linalg.pinv(x + np.swapaxes(x, -1, -2), hermitian=True), sq, FLOATS,
               "same", grad=True, grad_samples=sq_grad, rtol=1e-3, atol=1e-4),
        OpInfo("pinverse", pg.pinverse, np.linalg.pinv, rect, FLOATS, "same",
               method="pinverse", grad=True, grad_samples=rect_grad, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_matrix_rank", lambda a, b, **kw: pg.linalg.matrix_rank(a @ b, **kw),
               lambda a, b, **kw: np.linalg.matrix_rank(a @ b, hermitian=kw.get("hermitian",
                                                                               False)),
               fixed(S(X((4, 2)), X((2, 4))), S(X((2, 3, 1)), X((2, 1, 5))),
                     S(X((3, 3)), X((3, 3))), S(X((0, 2)), X((2, 3))),
                     S(X((3, 2)), X((2, 3)), hermitian=False)), FLOATS, "int64"),
        OpInfo("linalg_lstsq", lambda a, b, **kw: pg.linalg.lstsq(a, b, **kw).solution,
               _np_lstsq,
               fixed(S(X((4, 3)), X((4, 2))), S(X((3, 5)), X((3, 2))),
                     S(X((2, 4, 3)), X((2, 4, 1)), driver="gelsd"), S(X((4, 3)), X((4,))),
                     S(X((4, 3)), X((4, 2)), driver="gels")), FLOATS, "same", grad=True,
               rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.lstsq(T((3, 2), d), T((3, 1), d), driver="x"),
                         RuntimeError, r"parameter `driver` should be one of \(gels, gelsy, "
                         r"gelsd, gelss\)"),
                       E(lambda d: pg.linalg.lstsq(T((3, 2), d), T((4, 1), d)), RuntimeError,
                         r"torch.linalg.lstsq: input.size\(-2\) should match other.size\(-2\)"),
                       E(lambda d: pg.linalg.lstsq(T((3, 2), d), T((3, 1), d, F64)), RuntimeError,
                         r"Expected input and other to have the same dtype, but got input's "
                         r"dtype Float and other's dtype Double")]),
        OpInfo("linalg_cond", lambda x, **kw: pg.linalg.cond(_tri(x), **kw),
               lambda x, **kw: np.linalg.cond(x + 3 * np.eye(x.shape[-1]), kw.get("p")),
               fixed(S(X((3, 3))), S(X((2, 3, 3)), p=-2), S(X((3, 3)), p="fro"),
                     S(X((3, 3)), p="nuc"), S(X((3, 3)), p=1), S(X((3, 3)), p=-1),
                     S(X((3, 3)), p=inf), S(X((3, 3)), p=-inf), S(X((3, 3)), p=2)),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.cond(T((2, 2), d), 3), RuntimeError,
                         r"linalg.cond got an invalid norm type: 3"),
                       E(lambda d: pg.linalg.cond(T((2, 3), d), "fro"), RuntimeError,
                         r"linalg.cond\(ord=fro\): A must be batches of square matrices, but "
                         r"they are 2 by 3 matrices")]),
        OpInfo("linalg_matrix_norm_spectral",
               lambda x, **kw: pg.linalg.matrix_norm(x, **kw),
               lambda x, ord, dim=(-2, -1), keepdim=False: np.linalg.norm(
                   x, ord, axis=dim, keepdims=keepdim),
               fixed(S(X((3, 4)), ord="nuc"), S(X((2, 3, 4)), ord=2),
                     S(X((2, 3, 4)), ord=-2, dim=(0, 2)), S(X((3, 4)), ord="nuc", keepdim=True),
                     S(X((3, 3)), ord=2, nc="T")), FLOATS, "same", grad=True, rtol=1e-4,
               atol=1e-5,
               errors=[E(lambda d: pg.linalg.matrix_norm(T((3, 3), d), 3), RuntimeError,
                         r"linalg.matrix_norm: Order 3 not supported.")]),
        OpInfo("linalg_norm_nuc", lambda x: pg.linalg.norm(x, "nuc"),
               lambda x: np.linalg.norm(x, "nuc"), fixed(S(X((3, 4)))), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("norm_nuc", lambda x, **kw: pg.norm(x, "nuc", **kw),
               lambda x, dim=(-2, -1), keepdim=False: np.linalg.norm(x, "nuc", axis=dim,
                                                                      keepdims=keepdim),
               fixed(S(X((3, 4))), S(X((2, 3, 4)), dim=(0, 2), keepdim=True)), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.norm(T((2, 3, 4), d), "nuc"), RuntimeError,
                         r"linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2")]),
        OpInfo("linalg_solve_triangular",
               lambda a, b, **kw: pg.linalg.solve_triangular(_tri(a), b, **kw),
               lambda a, b, upper, left=True, unitriangular=False:
                   np.linalg.solve(_np_tri(a, upper, unitriangular), b) if left else
                   np.swapaxes(np.linalg.solve(np.swapaxes(_np_tri(a, upper, unitriangular),
                                                           -1, -2), np.swapaxes(b, -1, -2)),
                               -1, -2),
               fixed(S(X((3, 3)), X((3, 2)), upper=True), S(X((3, 3)), X((3, 2)), upper=False),
                     S(X((3, 3)), X((2, 3)), upper=True, left=False),
                     S(X((2, 3, 3)), X((3, 1)), upper=False, unitriangular=True)), FLOATS,
               "same", grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.solve_triangular(T((3, 3), d), T((3,), d),
                                                              upper=True), RuntimeError,
                         r"linalg.solve_triangular: The input tensor B must have at least 2 "
                         r"dimensions."),
                       E(lambda d: pg.linalg.solve_triangular(T((3, 3), d), T((3, 2), d),
                                                              upper=True, left=False),
                         RuntimeError, r"Incompatible shapes of A and B for the equation XA = B "
                         r"\(3x3 and 3x2\)")]),
        OpInfo("linalg_inv_ex", lambda x: pg.linalg.inv_ex(_tri(x)).inverse,
               lambda x: np.linalg.inv(x + 3 * np.eye(x.shape[-1])), sq, FLOATS, "same",
               grad=True, grad_samples=sq_grad, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_solve_ex", lambda a, b: pg.linalg.solve_ex(_tri(a), b).result,
               lambda a, b: np.linalg.solve(a + 3 * np.eye(a.shape[-1]), b),
               fixed(S(X((3, 3)), X((3, 2))), S(X((2, 3, 3)), X((2, 3, 1)))), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_cholesky_ex", lambda x: pg.linalg.cholesky_ex(_spd_pg(x)).L,
               lambda x: np.linalg.cholesky(_spd(x)), sq, FLOATS, "same", grad=True,
               grad_samples=sq_grad, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_lu_factor_ex", lambda x: pg.linalg.lu_factor_ex(x).LU,
               lambda x: _np_lu_packed(x), fixed(S(X((4, 4))), S(X((4, 2))), S(X((2, 4)))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        # randomized, but exact for q >= the rank: the values and U diag(S) V^T do not depend on
        # the random basis (the vectors' signs do)
        OpInfo("svd_lowrank", lambda x, **kw: (lambda r: (r[1], (r[0] * r[1].unsqueeze(-2))
                                                          @ r[2].mT))(pg.svd_lowrank(x, **kw)),
               lambda x, **kw: (np.linalg.svd(x, compute_uv=False), x),
               fixed(S(X((5, 3)), q=3), S(X((3, 6)), q=3), S(X((2, 4, 3)), q=3, niter=0),
                     S(X((4, 3)), q=5)), FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("pca_lowrank", lambda x, **kw: (lambda r: (r[1], (r[0] * r[1].unsqueeze(-2))
                                                          @ r[2].mT))(pg.pca_lowrank(x, **kw)),
               lambda x, center=True, **kw: (lambda c: (np.linalg.svd(c, compute_uv=False), c))(
                   x - x.mean(-2, keepdims=True) if center else x),
               fixed(S(X((6, 3))), S(X((3, 4)), center=False)), FLOATS, "same", grad=True,
               rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.pca_lowrank(T((5, 4), d), q=9), ValueError,
                         r"q\(=9\) must be non-negative integer and not greater than "
                         r"min\(m, n\)=4")]),
        OpInfo("linalg_householder_product", pg.linalg.householder_product, _np_householder,
               fixed(S(X((4, 3)), X((2,))), S(X((3, 3)), X((3,))), S(X((4, 2)), X((0,)))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.householder_product(T((3, 4), d), T((2,), d)),
                         RuntimeError, r"torch.linalg.householder_product: input.shape\[-2\] "
                         r"must be greater than or equal to input.shape\[-1\]"),
                       E(lambda d: pg.linalg.householder_product(T((4, 3), d), T((4,), d)),
                         RuntimeError, r"torch.linalg.householder_product: input.shape\[-1\] "
                         r"must be greater than or equal to tau.shape\[-1\]")]),
        OpInfo("orgqr", pg.orgqr, _np_householder, fixed(S(X((4, 3)), X((2,)))), FLOATS,
               "same", method="orgqr", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("linalg_vander", lambda x, **kw: pg.linalg.vander(x, **kw),
               lambda x, N=None: x[..., None] ** np.arange(x.shape[-1] if N is None else N),
               fixed(S(X((4,))), S(X((2, 3)), N=5), S(X((0,)), N=3),
                     S(np.array([0.0, 2.0, -1.5]))), FLOATS + INTS, "sum", grad=True,
               errors=[E(lambda d: pg.linalg.vander(T((3,), d), N=1), RuntimeError,
                         r"N must be greater than 1."),
                       E(lambda d: pg.linalg.vander(T((3,), d, B)), RuntimeError,
                         r"linalg.vander supports floating point, complex, and integer tensors, "
                         r"but got Bool")]),
        OpInfo("linalg_tensorinv", lambda x, **kw: pg.linalg.tensorinv(_tri(x.reshape(4, 4))
                                                                        .reshape(x.shape), **kw),
               lambda x, ind: np.linalg.tensorinv((x.reshape(4, 4) + 3 * np.eye(4))
                                                  .reshape(x.shape), ind),
               fixed(S(X((4, 2, 2)), ind=1), S(X((2, 2, 4)), ind=2)), FLOATS, "same",
               grad=True, rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.linalg.tensorinv(T((4, 4), d), ind=0), RuntimeError,
                         r"Expected a strictly positive integer for 'ind', but got 0"),
                       E(lambda d: pg.linalg.tensorinv(T((4, 6, 8, 2), d), ind=2),
                         RuntimeError, r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), "
                         r"but got 16 != 24")]),
        OpInfo("linalg_tensorsolve",
               lambda a, b, **kw: pg.linalg.tensorsolve(_tri(a.reshape(6, 6)).reshape(a.shape),
                                                        b, **kw),
               lambda a, b, dims=None: np.linalg.tensorsolve(
                   (a.reshape(6, 6) + 3 * np.eye(6)).reshape(a.shape), b, dims),
               fixed(S(X((2, 3, 6)), X((2, 3))), S(X((6, 2, 3)), X((2, 3)), dims=(0,))), FLOATS,
               "same", grad=True, rtol=1e-4, atol=1e-5,
               grad_samples=small(fixed(S(X((2, 3, 6)), X((2, 3))),
                                        S(X((6, 2, 3)), X((2, 3)), dims=(0,))), limit=42)),
    ]


OP_TABLE += _spectral_rows()


def _np_quantile(x: np.ndarray, q: float, dim: Any = None, keepdim: bool = False,
                 interpolation: str = "linear") -> np.ndarray:
    return np.quantile(x, q, axis=dim, keepdims=keepdim, method=interpolation)


def _np_mode(x: np.ndarray, dim: int = -1) -> tuple:
    x = np.moveaxis(x, dim, -1)
    vals = np.empty(x.shape[:-1], dtype=x.dtype)
    idx = np.empty(x.shape[:-1], dtype=np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        row = x[pos]
        u, c = np.unique(row, return_counts=True)
        v = u[np.argmax(c)]
        vals[pos], idx[pos] = v, np.nonzero(row == v)[0][-1]
    return vals, idx


def _more_methods_rows() -> list[OpInfo]:
    ints2 = fixed(S(X((2, 3)), X((2, 3), "small")), S(X((2, 3)), X((3,), "small")))
    return [
        OpInfo("bitwise_left_shift", pg.bitwise_left_shift, np.left_shift, ints2, INTS, "promote",
               method="bitwise_left_shift"),
        OpInfo("bitwise_right_shift", pg.bitwise_right_shift, np.right_shift, ints2, INTS,
               "promote", method="bitwise_right_shift"),
        OpInfo("gcd", pg.gcd, np.gcd, binary_samples(scalars=False), INTS, "promote",
               method="gcd"),
        OpInfo("lcm", pg.lcm, np.lcm, binary_samples(scalars=False), INTS, "promote",
               method="lcm"),
        OpInfo("ldexp", pg.ldexp, lambda a, b: a * 2.0 ** b,
               fixed(S(X((2, 3)), IDX([[1, -2, 0], [3, 0, 1]]))), FLOATS, "same", method="ldexp",
               grad=True),
        OpInfo("frexp_mantissa", lambda x: pg.frexp(x).mantissa, lambda x: np.frexp(x)[0],
               unary_samples(), FLOATS, "same", grad=True),
        OpInfo("frexp_exponent", lambda x: pg.frexp(x).exponent, lambda x: np.frexp(x)[1],
               unary_samples(), FLOATS, I32),
        OpInfo("nextafter", pg.nextafter, np.nextafter, binary_samples(scalars=False), FLOATS,
               "promote", method="nextafter", rtol=0, atol=0),
        OpInfo("i0", pg.i0, np.i0, unary_samples(), NUMERIC, "float", method="i0", grad=True,
               gradgrad=True),
        # references from math.erfc (no scipy): the samples are small, exp(x^2) stays finite
        OpInfo("special.erfcx", pg.special.erfcx,
               lambda x: np.exp(x.astype(np.float64) ** 2) * _np_erfc(x), unary_samples(),
               NUMERIC, "float", grad=True),
        OpInfo("special.log_ndtr", pg.special.log_ndtr,
               lambda x: np.log(0.5 * _np_erfc(-x / math.sqrt(2.0))), unary_samples(), NUMERIC,
               "float", grad=True),
        OpInfo("special.i0e", pg.special.i0e, lambda x: np.i0(x) * np.exp(-np.abs(x)),
               unary_samples(), NUMERIC, "float", grad=True, gradgrad=True),
        OpInfo("special.spherical_bessel_j0", pg.special.spherical_bessel_j0,
               lambda x: np.sinc(x / np.pi), unary_samples(), NUMERIC, "float"),
        OpInfo("special.airy_ai", pg.special.airy_ai, _np_airy_ai, unary_samples(), NUMERIC,
               "float"),
        OpInfo("quantile", pg.quantile, _np_quantile,
               fixed(S(X((3, 5)), 0.3), S(X((3, 5)), 0.5, 1), S(X((2, 3, 4)), 0.9, 0, True),
                     S(X((3, 4)), 0.25, -1, interpolation="nearest"),
                     S(X((3, 4)), 0.25, 1, interpolation="midpoint", nc="T")),
               FLOATS, "same", method="quantile", grad=True,
               errors=[E(lambda d: pg.quantile(T((3,), d), 1.5), RuntimeError,
                         r"quantile\(\) q must be in the range \[0, 1\] but got 1.5")]),
        OpInfo("nanquantile", lambda x, *a: pg.nanquantile(x.masked_fill(x > 1.0, math.nan), *a),
               lambda x, *a: np.nanquantile(np.where(x > 1.0, np.nan, x), a[0],
                                            axis=a[1] if len(a) > 1 else None),
               fixed(S(X((3, 5)), 0.3), S(X((4, 5)), 0.5, 1)), FLOATS, "same", grad=True),
        OpInfo("nanmedian_dim", lambda x: pg.nanmedian(x.masked_fill(x > 1.0, math.nan), 1)[0],
               lambda x: _np_lower_nanmedian(np.where(x > 1.0, np.nan, x)),
               fixed(S(X((4, 5))), S(X((3, 6)))), FLOATS, "same", grad=True),
        OpInfo("mode", pg.mode, _np_mode,
               fixed(S(X((3, 7), "small")), S(X((4, 5), "small"), 0), S(X((3, 4), "small"),
                                                                       nc="T")),
               NUMERIC, "same", method="mode"),
        OpInfo("diagonal_scatter", pg.diagonal_scatter,
               lambda x, s, o=0: _np_diag_set(x, s, o),
               fixed(S(X((3, 4)), X((3,))), S(X((3, 4)), X((3,)), 1)), NUMERIC, "same",
               method="diagonal_scatter", grad=True),
        OpInfo("select_scatter", pg.select_scatter,
               lambda x, s, d, i: _np_set(x, (slice(None),) * d + (i,), s),
               fixed(S(X((3, 4)), X((4,)), 0, 1), S(X((3, 4)), X((3,)), 1, -1)), NUMERIC, "same",
               method="select_scatter", grad=True),
        # the slice of a fresh tensor turned back into that tensor: x itself, with the gradient
        # split between the slice and the rest
        OpInfo("slice_inverse", _slice_inverse_of_a_fresh_tensor, lambda x: x,
               fixed(S(X((3, 4))), S(X((2, 5)))), NUMERIC, "same", grad=True),
        OpInfo("slice_scatter", pg.slice_scatter,
               lambda x, s, d=0, a=None, b=None, st=1: _np_set(
                   x, (slice(None),) * d + (slice(a, b, st),), s),
               fixed(S(X((4, 3)), X((2, 3)), 0, 0, 4, 2), S(X((3, 4)), X((3, 2)), 1, 2)),
               NUMERIC, "same", method="slice_scatter", grad=True),
        OpInfo("addbmm", lambda x, a, b: pg.addbmm(x, a, b, beta=0.5, alpha=2),
               lambda x, a, b: 0.5 * x + 2 * (a @ b).sum(0),
               fixed(S(X((2, 2)), X((2, 2, 3)), X((2, 3, 2)))), FLOATS, "same", grad=True,
               rtol=1e-4),
        OpInfo("matrix_exp", pg.matrix_exp, _np_expm,
               fixed(S(X((3, 3))), S(X((2, 2, 2)))), FLOATS, "same", method="matrix_exp",
               grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("cholesky_solve", lambda b, x: pg.cholesky_solve(b, pg.linalg.cholesky(_spd_pg(x))),
               lambda b, x: np.linalg.solve(_spd(x), b),
               fixed(S(X((3, 2)), X((3, 3)))), FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("triangular_solve", lambda b, a: pg.triangular_solve(b, a + 3 * pg.eye(
                   3, dtype=a.dtype, device=a.device))[0],
               lambda b, a: np.linalg.solve(np.triu(a + 3 * np.eye(3)), b),
               fixed(S(X((3, 2)), X((3, 3)))), FLOATS, "same", grad=True, rtol=1e-4),
    ]


def _np_lower_nanmedian(x: np.ndarray) -> np.ndarray:
    out = []
    for row in x:
        v = np.sort(row[~np.isnan(row)])
        out.append(v[(len(v) - 1) // 2] if len(v) else np.nan)
    return np.array(out, dtype=x.dtype)


def _slice_inverse_of_a_fresh_tensor(x: Any) -> Any:
    """``slice_inverse`` of a slice of a fresh tensor ``y``: ``y`` itself (a module-level
    function, not a nested lambda, so that the torch comparison can translate it)."""
    y = x * 1
    return pg.slice_inverse(y[:, 1:3], y, 1, 1, 3)


def _np_set(x: np.ndarray, key: Any, s: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[key] = s
    return out


def _np_diag_set(x: np.ndarray, s: np.ndarray, offset: int = 0) -> np.ndarray:
    out = x.copy()
    r = np.arange(len(s)) + max(-offset, 0)
    out[r, r + offset] = s
    return out


def _np_expm(a: np.ndarray) -> np.ndarray:
    """exp(A) by eigen-decomposition (the samples are random, hence diagonalizable)."""
    w, v = np.linalg.eig(a.astype(np.float64))
    return np.real(v @ (np.exp(w)[..., None] * np.linalg.inv(v)))


OP_TABLE += _more_methods_rows()


def _np_window(name: str, n: int, periodic: bool = True) -> np.ndarray:
    m = n + 1 if periodic else n
    if n <= 1:
        return np.ones(n)
    w = {"hann": np.hanning, "hamming": np.hamming, "blackman": np.blackman,
         "bartlett": np.bartlett}[name](m)
    return w[:n]


def _sequence_rows() -> list[OpInfo]:
    rows = [
        OpInfo("isin", pg.isin, np.isin,
               fixed(S(X((2, 3), "small"), X((2,), "small")), S(X((4,), "small"), X((0,))),
                     S(X((3, 4), "small"), X((5,), "small"), nc="T")), NUMERIC, "bool"),
        OpInfo("combinations", pg.combinations,
               lambda x, r=2, with_replacement=False: np.array(list(
                   (itertools.combinations_with_replacement if with_replacement else
                    itertools.combinations)(x, r)), dtype=x.dtype).reshape(-1, r),
               fixed(S(X((4,))), S(X((3,)), 3), S(X((3,)), 2, True), S(X((2,)), 3)), NUMERIC,
               "same", grad=True),
        OpInfo("trapezoid", pg.trapezoid, lambda y, x=None, **kw: np.trapezoid(
                   y, x, axis=kw.get("dim", -1), dx=kw.get("dx", 1.0)),
               fixed(S(X((3, 5))), S(X((3, 5)), dx=0.5, dim=0), S(X((2, 4)), X((4,), "positive"))),
               FLOATS, "same", grad=True),
        OpInfo("cumulative_trapezoid", pg.cumulative_trapezoid,
               lambda y, **kw: np.cumsum((y[..., 1:] + y[..., :-1]) / 2, -1),
               fixed(S(X((3, 5))), S(X((4,)))), FLOATS, "same", grad=True),
        OpInfo("vander", pg.vander, lambda x, N=None, increasing=False: np.vander(x, N, increasing),
               fixed(S(X((3,))), S(X((4,)), 2, True)), FLOATS, "same", grad=True),
        OpInfo("pdist", pg.pdist, lambda x, p=2: np.array(
                   [np.linalg.norm(x[i] - x[j], p) for i in range(len(x))
                    for j in range(i + 1, len(x))], dtype=x.dtype),
               fixed(S(X((4, 3))), S(X((3, 2)), 1.0)), FLOATS, "same", grad=True),
        OpInfo("chain_matmul", pg.chain_matmul, lambda *ms: np.linalg.multi_dot(ms),
               fixed(S(X((2, 3)), X((3, 4)), X((4, 2)))), FLOATS, "same", grad=True, rtol=1e-4),
    ]
    def window_samples(dtype: Any, rng: np.random.Generator) -> list[Sample]:
        return [Sample((n, p), {"dtype": dtype}) for n in (0, 1, 5, 8) for p in (True, False)]

    for name in ("hann", "hamming", "blackman", "bartlett"):
        rows.append(OpInfo(f"{name}_window", getattr(pg, f"{name}_window"),
                           lambda n, periodic=True, name=name, **kw: _np_window(name, n, periodic),
                           window_samples, FLOATS, "same_kw", factory=True))
    rows.append(OpInfo("kaiser_window", pg.kaiser_window,
                       lambda n, periodic=True, beta=12.0, **kw: np.kaiser(n + periodic, beta)[:n],
                       fixed(lambda dt, rng: Sample((6,), {"dtype": dt}),
                             lambda dt, rng: Sample((5, False, 5.0), {"dtype": dt})),
                       FLOATS, "same_kw", factory=True))
    return rows


OP_TABLE += _sequence_rows()


# ----------------------------------------------------------------------------- top-level torch names
# the recurrent cells (ATen's one-step functions) and the view-copy functions
def _np_sig(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def _np_lstm_cell(x: np.ndarray, hx: Any, w_ih: np.ndarray, w_hh: np.ndarray,
                  b_ih: np.ndarray, b_hh: np.ndarray) -> tuple:
    h, c = hx
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=-1)
    c1 = _np_sig(f) * c + _np_sig(i) * np.tanh(g)
    return _np_sig(o) * np.tanh(c1), c1


def _np_gru_cell(x: np.ndarray, h: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                 b_ih: np.ndarray, b_hh: np.ndarray) -> np.ndarray:
    i_r, i_z, i_n = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
    h_r, h_z, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=-1)
    r, z = _np_sig(i_r + h_r), _np_sig(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def _toplevel_rows() -> list[OpInfo]:
    def cell(gates: int) -> Callable:
        return fixed(S(X((2, 3)), X((2, 2)), X((gates * 2, 3)), X((gates * 2, 2)),
                       X((gates * 2,)), X((gates * 2,))))

    rnn_pre = lambda x, h, wi, wh, bi, bh: x @ wi.T + bi + h @ wh.T + bh  # noqa: E731
    return [
        OpInfo("lstm_cell", lambda x, h, c, *w: pg.lstm_cell(x, (h, c), *w),
               lambda x, h, c, *w: _np_lstm_cell(x, (h, c), *w),
               fixed(S(X((2, 3)), X((2, 2)), X((2, 2)), X((8, 3)), X((8, 2)), X((8,)),
                       X((8,)))), FLOATS, "same", grad=True, rtol=1e-4,
               grad_samples=fixed(S(X((1, 2)), X((1, 1)), X((1, 1)), X((4, 2)), X((4, 1)),
                                    X((4,)), X((4,))))),
        OpInfo("gru_cell", pg.gru_cell, _np_gru_cell, cell(3), FLOATS, "same", grad=True,
               rtol=1e-4, grad_samples=fixed(S(X((1, 2)), X((1, 1)), X((3, 2)), X((3, 1)),
                                               X((3,)), X((3,))))),
        OpInfo("rnn_tanh_cell", pg.rnn_tanh_cell, lambda *a: np.tanh(rnn_pre(*a)), cell(1),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("rnn_relu_cell", pg.rnn_relu_cell, lambda *a: np.maximum(rnn_pre(*a), 0),
               cell(1), FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("permute_copy", pg.permute_copy, lambda x, dims: x.transpose(dims),
               fixed(S(X((2, 3, 4)), [2, 0, 1]), S(X((3, 2)), [1, 0], nc="T")), ALL, "same",
               grad=True),
        OpInfo("transpose_copy", pg.transpose_copy, lambda x, a, b: np.swapaxes(x, a, b),
               fixed(S(X((2, 3, 4)), 0, 2), S(X((3,)), 0, 0)), ALL, "same", grad=True),
        OpInfo("view_copy", pg.view_copy, lambda x, size: x.reshape(size),
               fixed(S(X((2, 3, 4)), [6, 4]), S(X((2, 3)), [-1])), ALL, "same", grad=True),
        OpInfo("diagonal_copy", pg.diagonal_copy, lambda x, *a: np.diagonal(x, *a).copy(),
               fixed(S(X((3, 4)), 1), S(X((2, 3, 3)), 0, 1, 2)), ALL, "same", grad=True),
        OpInfo("expand_copy", pg.expand_copy, lambda x, size: np.broadcast_to(x, size).copy(),
               fixed(S(X((1, 3)), [4, 3]), S(X((3, 1)), [2, 3, 5])), ALL, "same", grad=True),
        OpInfo("unsqueeze_copy", pg.unsqueeze_copy, np.expand_dims,
               fixed(S(X((2, 3)), 1), S(X(()), 0)), ALL, "same", grad=True),
    ]


OP_TABLE += _toplevel_rows()


# whole recurrent stacks (torch.lstm / gru / rnn_tanh / rnn_relu): the cells above, looped
def _np_rnn_stack(mode: str, x: np.ndarray, h0: np.ndarray, c0: Any, params: list,
                  has_biases: bool, layers: int, bidirectional: bool, batch_first: bool) -> tuple:
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    D, per = (2 if bidirectional else 1), (4 if has_biases else 2)
    hn, cn, inp = [], [], x
    for layer in range(layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            w = list(params[k * per:(k + 1) * per])
            if not has_biases:
                w += [np.zeros(w[0].shape[0], x.dtype)] * 2
            h, c = h0[k], (c0[k] if c0 is not None else None)
            seq = [None] * len(inp)
            for t in (range(len(inp) - 1, -1, -1) if d else range(len(inp))):
                if mode == "lstm":
                    h, c = _np_lstm_cell(inp[t], (h, c), *w)
                elif mode == "gru":
                    h = _np_gru_cell(inp[t], h, *w)
                else:
                    pre = inp[t] @ w[0].T + w[2] + h @ w[1].T + w[3]
                    h = np.tanh(pre) if mode == "rnn_tanh" else np.maximum(pre, 0)
                seq[t] = h
            outs.append(np.stack(seq))
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, -1)
    out = np.swapaxes(inp, 0, 1) if batch_first else inp
    return (out, np.stack(hn)) + ((np.stack(cn),) if mode == "lstm" else ())


def _rnn_stack_rows() -> list[OpInfo]:
    def params(gates: int, feat: int, hid: int, layers: int, D: int, bias: bool) -> list:
        out = []
        for layer in range(layers):
            for _ in range(D):
                fin = feat if layer == 0 else hid * D
                out += [X((gates * hid, fin)), X((gates * hid, hid))]
                out += [X((gates * hid,)), X((gates * hid,))] if bias else []
        return out

    rows = []
    for name, gates in (("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)):
        fn = getattr(pg, name)
        lstm = name == "lstm"

        def op(x: Any, h: Any, *rest: Any, fn: Any = fn, lstm: bool = lstm, **kw: Any) -> Any:
            hx, ps = ((h, rest[0]), rest[1:]) if lstm else (h, rest)
            return fn(x, hx, list(ps), kw["bias"], kw["layers"], 0.0, False, kw["bidir"],
                      kw["batch_first"])

        def ref(x: Any, h: Any, *rest: Any, name: str = name, lstm: bool = lstm,
                **kw: Any) -> Any:
            c, ps = (rest[0], rest[1:]) if lstm else (None, rest)
            return _np_rnn_stack(name, x, h, c, list(ps), kw["bias"], kw["layers"], kw["bidir"],
                                 kw["batch_first"])

        def sample(T: int, N: int, F_: int, H: int, layers: int, bidir: bool, bias: bool,
                   batch_first: bool, gates: int = gates, lstm: bool = lstm) -> Callable:
            D = 2 if bidir else 1
            states = [X((layers * D, N, H))] * (2 if lstm else 1)
            x = X((N, T, F_) if batch_first else (T, N, F_))
            return S(x, *states, *params(gates, F_, H, layers, D, bias), bias=bias, layers=layers,
                     bidir=bidir, batch_first=batch_first)

        rows.append(OpInfo(
            name, op, ref,
            fixed(sample(4, 2, 3, 2, 1, False, True, False), sample(3, 2, 2, 2, 2, True, True, True),
                  sample(3, 1, 2, 3, 1, True, False, False)),
            FLOATS, "same", grad=True, rtol=1e-4,
            grad_samples=fixed(sample(2, 1, 2, 1, 1, False, True, False),
                               sample(2, 1, 1, 1, 2, True, False, True)),
            errors=[E(lambda d, fn=fn, lstm=lstm: fn(
                T((3, 1, 2), d), [T((1, 1, 2), d)] * (2 if lstm else 1) if lstm else
                T((1, 1, 2), d), [T((2, 2), d)], True, 1, 0.0, False, False, False),
                RuntimeError, "incorrect number of RNN parameters")]))
    return rows


OP_TABLE += _rnn_stack_rows()


# ----------------------------------------------------------------------------- normalisation
# softmax, layer/batch norm and cross-entropy: backend primitives where a backend has them
# (forward and backward), composed from the required primitives where not
def _np_log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    z = x - x.max(dim, keepdims=True)
    return z - np.log(np.exp(z).sum(dim, keepdims=True))


def _np_layer_norm(x: np.ndarray, ns: tuple, w: Any = None, b: Any = None) -> np.ndarray:
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _np_batch_norm_train(x: np.ndarray, w: Any = None, b: Any = None) -> np.ndarray:
    axes = (0,) + tuple(range(2, x.ndim))
    bs = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    return y * (1 if w is None else w.reshape(bs)) + (0 if b is None else b.reshape(bs))


def _np_cross_entropy(x: np.ndarray, t: np.ndarray, reduction: str = "mean",
                      weighted: bool = False) -> np.ndarray:
    w = np.linspace(0.5, 2.0, x.shape[1]) if weighted else np.ones(x.shape[1])
    valid = t != -100
    ti = np.where(valid, t, 0)
    rw = np.where(valid, w[ti], 0.0)
    rows = -rw * _np_log_softmax(x, 1)[np.arange(len(t)), ti]
    out = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / rw.sum()}[reduction]
    return np.asarray(out, x.dtype)


def _weighted_ce(x: pg.Tensor, t: pg.Tensor, **k: Any) -> pg.Tensor:
    w = pg.tensor(np.linspace(0.5, 2.0, x.shape[1]), dtype=x.dtype, device=x.device)
    return pg.nn.functional.cross_entropy(x, t, weight=w, **k)


def _norm_rows() -> list[OpInfo]:
    F = pg.nn.functional
    sm = fixed(S(X((3, 5)), 1), S(X((2, 3, 4)), 0), S(X((4, 3)), -1, nc="T"), S(X((2, 9)), 1))
    ce = fixed(S(X((5, 4)), IDX([0, 3, 1, 2, 1])),
               S(X((4, 4)), IDX([0, -100, 3, 3]), reduction="sum"),
               S(X((3, 6)), IDX([5, 0, 2]), reduction="none"))
    return [
        OpInfo("nn.functional.softmax", F.softmax, lambda x, d: np.exp(_np_log_softmax(x, d)), sm,
               FLOATS, "same", grad=True),
        OpInfo("nn.functional.log_softmax", F.log_softmax, _np_log_softmax, sm, FLOATS, "same",
               grad=True),
        OpInfo("nn.functional.layer_norm", lambda x, ns, w=None, b=None: F.layer_norm(x, ns, w, b),
               _np_layer_norm,
               fixed(S(X((3, 5)), (5,), X((5,)), X((5,))), S(X((2, 3, 4)), (3, 4)),
                     S(X((4, 3)), (3,), X((3,)), nc="T")),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("nn.functional.batch_norm_train",
               lambda x, w=None, b=None: F.batch_norm(x, None, None, w, b, training=True),
               _np_batch_norm_train,
               fixed(S(X((4, 3, 2)), X((3,)), X((3,))), S(X((5, 3))),
                     S(X((2, 2, 2, 2)), X((2,)), X((2,)))),
               FLOATS, "same", grad=True, rtol=1e-4, atol=1e-5),
        OpInfo("nn.functional.cross_entropy", F.cross_entropy, _np_cross_entropy, ce, FLOATS,
               "same", grad=True),
        OpInfo("nn.functional.cross_entropy_weighted", _weighted_ce,
               lambda x, t, **k: _np_cross_entropy(x, t, weighted=True, **k), ce, FLOATS, "same",
               grad=True),
    ]


OP_TABLE += _norm_rows()


# ----------------------------------------------------------------------------- smaller torch names
# numerical gradient, adjoint, ATen's native_* norms and its grid/convolution aliases
def _np_gradient(x: np.ndarray, spacing: Any = 1, dim: Any = None,
                 edge_order: int = 1) -> tuple:
    dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    steps = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    out = np.gradient(x.astype(np.float64), *steps, axis=tuple(dims), edge_order=edge_order)
    return tuple(out) if isinstance(out, (list, tuple)) else (out,)


def _np_conv_tbc(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int = 0) -> np.ndarray:
    xp = np.pad(x, ((pad, pad), (0, 0), (0, 0)))
    k = w.shape[0]
    steps = xp.shape[0] - k + 1
    return np.stack([sum(xp[t + j] @ w[j] for j in range(k)) + b for t in range(steps)])


def _np_base(n: int, align_corners: bool) -> np.ndarray:
    """The normalised pixel-centre coordinates of ``affine_grid`` along one axis."""
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (2.0 * np.arange(n) + 1.0) / n - 1.0


def _np_affine_grid(theta: np.ndarray, size: list, align_corners: bool) -> np.ndarray:
    n, _, h, w = size
    ys, xs = np.meshgrid(_np_base(h, align_corners), _np_base(w, align_corners), indexing="ij")
    base = np.stack([xs, ys, np.ones_like(xs)], -1)  # (h, w, 3)
    return np.einsum("hwk,njk->nhwj", base, theta).astype(theta.dtype)


def _np_grid_sample(x: np.ndarray, grid: np.ndarray, mode: int, padding: int,
                    align_corners: bool) -> np.ndarray:
    """Bilinear (0) or nearest (1) sampling of (N, C, H, W) with zero padding (0)."""
    assert padding == 0
    n, c, h, w = x.shape
    def unnorm(g: np.ndarray, size: int) -> np.ndarray:
        return (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
    ix, iy = unnorm(grid[..., 0], w), unnorm(grid[..., 1], h)
    out = np.zeros((n, c) + grid.shape[1:3])

    def tap(b: int, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        v = x[b][:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
        return np.where(ok, v, 0.0)

    for b in range(n):
        if mode == 1:
            out[b] = tap(b, np.rint(iy[b]).astype(int), np.rint(ix[b]).astype(int))
            continue
        x0, y0 = np.floor(ix[b]).astype(int), np.floor(iy[b]).astype(int)
        fx, fy = ix[b] - x0, iy[b] - y0
        out[b] = (tap(b, y0, x0) * (1 - fx) * (1 - fy) + tap(b, y0, x0 + 1) * fx * (1 - fy)
                  + tap(b, y0 + 1, x0) * (1 - fx) * fy + tap(b, y0 + 1, x0 + 1) * fx * fy)
    return out.astype(x.dtype)


def _np_mean_rstd(x: np.ndarray, axes: tuple) -> tuple:
    return x.mean(axes, keepdims=True), 1 / np.sqrt(x.var(axes, keepdims=True) + 1e-5)


def _np_native_layer_norm(x: np.ndarray, ns: list, w: Any = None, b: Any = None) -> tuple:
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    return (_np_layer_norm(x, tuple(ns), w, b),) + _np_mean_rstd(x, axes)


def _np_native_group_norm(x: np.ndarray, w: Any, b: Any, n: int, c: int, hw: int,
                          g: int) -> tuple:
    mean, rstd = _np_mean_rstd(x.reshape(n, g, -1), (2,))
    y = ((x.reshape(n, g, -1) - mean) * rstd).reshape(x.shape)
    bs = (1, c) + (1,) * (x.ndim - 2)
    y = y * (1 if w is None else w.reshape(bs)) + (0 if b is None else b.reshape(bs))
    return y, mean.reshape(n, g), rstd.reshape(n, g)


def _np_native_batch_norm(x: np.ndarray, w: Any = None, b: Any = None) -> tuple:
    mean, rstd = _np_mean_rstd(x, (0,) + tuple(range(2, x.ndim)))
    return _np_batch_norm_train(x, w, b), mean.reshape(-1), rstd.reshape(-1)


def _np_norm_except_dim(v: np.ndarray, p: float = 2, dim: int = 0) -> np.ndarray:
    if dim == -1:
        return np.asarray((np.abs(v) ** p).sum() ** (1 / p))
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return (np.abs(v) ** p).sum(axes, keepdims=True) ** (1 / p)


def _coverage_rows() -> list[OpInfo]:
    theta = lambda n: np.array([[[0.8, -0.3, 0.1], [0.2, 1.1, -0.2]]] * n)  # noqa: E731
    return [
        OpInfo("gradient", lambda x, **kw: pg.gradient(x, **kw), _np_gradient,
               fixed(S(X((4, 5))), S(X((4, 5)), spacing=0.5, dim=1),
                     S(X((3, 6)), spacing=[2.0, 0.25], edge_order=2),
                     S(X((2, 3, 4)), spacing=[1.5], dim=[-1], edge_order=2),
                     S(X((5,))), S(X((4, 3)), dim=[1, 0]), S(X((3, 4)), nc="T")),
               NUMERIC, "float", grad=True,
               errors=[E(lambda d: pg.gradient(T((3,), d), edge_order=3), RuntimeError,
                         r"only supports edge_order=1 and edge_order=2"),
                       E(lambda d: pg.gradient(T((2, 4), d), edge_order=2), RuntimeError,
                         r"each dimension size to be at least edge_order\+1"),
                       E(lambda d: pg.gradient(T((2, 4), d), spacing=[1.0]), RuntimeError,
                         r"list of length equal to 'self.dim\(\) = 2'"),
                       E(lambda d: pg.gradient(T((2, 4), d), dim=[0, 0]), RuntimeError,
                         r"dim 0 appears multiple times"),
                       E(lambda d: pg.gradient(T((2, 4), d), spacing=(T((), d),), dim=0),
                         RuntimeError, r"one dimension, but got an element with 0 dimensions")]),
        # sample coordinates: cumulative sums of positive steps, so strictly increasing
        OpInfo("gradient_coordinates",
               lambda x, *steps, **kw: pg.gradient(x, spacing=[s.cumsum(0) for s in steps],
                                                   **kw),
               lambda x, *steps, **kw: _np_gradient(x, [np.cumsum(s) for s in steps], **kw),
               fixed(S(X((4, 5)), X((4,), "positive"), X((5,), "positive")),
                     S(X((3, 6)), X((6,), "positive"), dim=1, edge_order=2),
                     S(X((2, 5)), X((5,), "positive"), dim=-1),
                     S(X((4, 3)), X((4,), "positive"), X((3,), "positive"), edge_order=2)),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("adjoint", pg.adjoint, lambda x: np.swapaxes(x, -1, -2),
               fixed(S(X((2, 3))), S(X((2, 3, 4))), S(X((3, 4)), nc="T"), S(X((0, 2)))),
               ALL, "same", method="adjoint", view=True, grad=True,
               errors=[E(lambda d: pg.adjoint(T((3,), d)), RuntimeError,
                         r"only supported on matrices or batches of matrices. Got 1-D tensor")]),
        OpInfo("native_layer_norm",
               lambda x, ns, w=None, b=None: pg.native_layer_norm(x, ns, w, b, 1e-5),
               _np_native_layer_norm,
               fixed(S(X((3, 5)), [5], X((5,)), X((5,))), S(X((2, 3, 4)), [3, 4]),
                     S(X((4, 3)), [3], X((3,)), nc="T")),
               FLOATS, "same", rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.native_layer_norm(T((2, 3), d), [4], None, None, 1e-5),
                         RuntimeError, r"Given normalized_shape=\[4\], expected input with "
                         r"shape \[\*, 4\], but got input of size\[2, 3\]")]),
        OpInfo("native_layer_norm_output",
               lambda x, w, b: pg.native_layer_norm(x, [4], w, b, 1e-5)[0],
               lambda x, w, b: _np_layer_norm(x, (4,), w, b),
               fixed(S(X((2, 4)), X((4,)), X((4,)))), FLOATS, "same", grad=True, rtol=1e-4,
               atol=1e-5),
        OpInfo("native_group_norm",
               lambda x, w, b, *dims: pg.native_group_norm(x, w, b, *dims, 1e-5),
               _np_native_group_norm,
               fixed(S(X((2, 4, 3)), X((4,)), X((4,)), 2, 4, 3, 2),
                     S(X((2, 6, 2, 2)), None, None, 2, 6, 4, 3)),
               FLOATS, "same", rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.native_group_norm(T((2, 4, 3), d), None, None, 2, 4, 3, 3,
                                                        1e-5), RuntimeError,
                         r"channels in input to be divisible by num_groups")]),
        OpInfo("native_group_norm_output",
               lambda x, w, b: pg.native_group_norm(x, w, b, 1, 4, 2, 2, 1e-5)[0],
               lambda x, w, b: _np_native_group_norm(x, w, b, 1, 4, 2, 2)[0],
               fixed(S(X((1, 4, 2)), X((4,)), X((4,)))), FLOATS, "same", grad=True, rtol=1e-4,
               atol=1e-5),
        OpInfo("native_batch_norm",
               lambda x, w=None, b=None: pg.native_batch_norm(x, w, b, None, None, True, 0.1,
                                                              1e-5),
               _np_native_batch_norm,
               fixed(S(X((4, 3, 2)), X((3,)), X((3,))), S(X((5, 3)))),
               FLOATS, "same", rtol=1e-4, atol=1e-5),
        OpInfo("native_batch_norm_output",
               lambda x, w, b: pg.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0],
               lambda x, w, b: _np_batch_norm_train(x, w, b),
               fixed(S(X((3, 2, 2)), X((2,)), X((2,)))), FLOATS, "same", grad=True, rtol=1e-4,
               atol=1e-5),
        OpInfo("norm_except_dim", pg.norm_except_dim, _np_norm_except_dim,
               fixed(S(X((3, 4, 2))), S(X((3, 4, 2)), 2, 1), S(X((3, 4)), 3, -1),
                     S(X((2, 3, 4)), 2, -2), S(X((4,)), 2, 0)),
               FLOATS, "same", grad=True, rtol=1e-4),
        OpInfo("conv_tbc", pg.conv_tbc, _np_conv_tbc,
               fixed(S(X((6, 2, 3)), X((3, 3, 4)), X((4,)), 1), S(X((5, 1, 2)), X((2, 2, 3)),
                                                                  X((3,)))),
               FLOATS, "same", grad=True, rtol=1e-4,
               errors=[E(lambda d: pg.conv_tbc(T((5, 2, 3), d), T((3, 4, 4), d), T((4,), d)),
                         RuntimeError, r"Input dim 2 \(input channels\) is not == dim 1"),
                       E(lambda d: pg.conv_tbc(T((5, 2, 3), d), T((3, 3, 4), d), T((5,), d)),
                         RuntimeError, r"Bias size must equal dim 2 in the weight tensor")]),
        OpInfo("affine_grid_generator", pg.affine_grid_generator, _np_affine_grid,
               fixed(S(theta(2), [2, 3, 4, 5], False), S(theta(1), [1, 1, 3, 3], True)),
               FLOATS, "same", grad=True),
        OpInfo("grid_sampler", pg.grid_sampler, _np_grid_sample,
               fixed(S(X((2, 3, 4, 5)), X((2, 3, 2, 2), "unit"), 0, 0, False),
                     S(X((1, 2, 3, 4)), X((1, 2, 3, 2), "unit"), 0, 0, True),
                     S(X((1, 2, 3, 4)), X((1, 2, 3, 2), "unit"), 1, 0, False)),
               FLOATS, "same", rtol=1e-4, atol=1e-5,
               grad_samples=fixed(S(X((1, 1, 3, 3)), X((1, 2, 2, 2), "unit"), 0, 0, False)),
               grad=True,
               errors=[E(lambda d: pg.grid_sampler(T((1, 1, 3, 3), d), T((1, 2, 2, 2), d), 3, 0,
                                                   False), RuntimeError,
                         r"invalid interpolation_mode 3"),
                       E(lambda d: pg.grid_sampler_3d(T((1, 1, 3, 3), d), T((1, 2, 2, 2), d), 0,
                                                      0, False), RuntimeError,
                         r"expected 5D input and grid with same number of dimensions")]),
    ]


OP_TABLE += _coverage_rows()


# LAPACK's compact QR: numpy's qr(mode="raw") is geqrf itself (its h is a transposed)
def _np_geqrf(a: np.ndarray) -> tuple:
    h, tau = np.linalg.qr(a.astype(np.float64), mode="raw")
    return np.swapaxes(h, -1, -2), tau


def _np_ormqr(a: np.ndarray, tau: np.ndarray, other: np.ndarray, left: bool = True,
              transpose: bool = False) -> np.ndarray:
    """``Q`` as the product of the reflectors written out one by one, then applied."""
    mn = a.shape[-2]
    q = np.eye(mn)
    for i in range(tau.shape[-1]):
        v = np.where(np.arange(mn) > i, a[:, i], 0.0)
        v[i] = 1.0
        q = q @ (np.eye(mn) - tau[i] * np.outer(v, v))
    q = q.T if transpose else q
    return q @ other if left else other @ q


def _qr_rows() -> list[OpInfo]:
    return [
        OpInfo("geqrf", pg.geqrf, lambda a: tuple(x.astype(a.dtype) for x in _np_geqrf(a)),
               fixed(S(X((5, 3))), S(X((3, 5))), S(X((2, 4, 4))), S(X((4, 3)), nc="T"),
                     S(X((1, 1)))),
               FLOATS, "same", method="geqrf", rtol=1e-4, atol=1e-5,
               errors=[E(lambda d: pg.geqrf(T((3,), d)), RuntimeError,
                         r"input must have at least 2 dimensions"),
                       E(lambda d: pg.geqrf(T((3, 3), d, I64)), RuntimeError,
                         r"Expected a floating point or complex tensor as input. Got Long")]),
        # ormqr as a function of all three: any matrix holds reflectors, any tau scales them
        OpInfo("ormqr", pg.ormqr, _np_ormqr,
               fixed(S(X((5, 3)), X((3,), "unit"), X((5, 2))),
                     S(X((5, 3)), X((3,), "unit"), X((2, 5)), False),
                     S(X((4, 4)), X((4,), "unit"), X((4, 3)), True, True),
                     S(X((3, 5)), X((3,), "unit"), X((2, 3)), False, True)),
               FLOATS, "same", method="ormqr", grad=True, rtol=1e-4, atol=1e-5,
               grad_samples=fixed(S(X((3, 2)), X((2,), "unit"), X((3, 2))),
                                  S(X((3, 3)), X((3,), "unit"), X((2, 3)), False, True)),
               errors=[E(lambda d: pg.ormqr(T((5, 3), d, F64), T((3,), d, F64), T((4, 4), d, F64)),
                         RuntimeError, r"other.shape\[-2\] must be equal to input.shape\[-2\]"),
                       E(lambda d: pg.ormqr(T((5, 3), d, F64), T((2,), d, F64), T((5, 4), d, F64)),
                         RuntimeError, r"tau.shape\[-1\] must be equal to min"),
                       E(lambda d: pg.ormqr(T((5, 3), d), T((3,), d, F64), T((5, 4), d, F64)),
                         RuntimeError, r"Expected input and tau to have the same dtype")]),
    ]


OP_TABLE += _qr_rows()

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
