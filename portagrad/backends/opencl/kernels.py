"""OpenCL C source generation for the backend's primitives.

Kernels are generated from small templates and *bundled*: one program holds every op of a family
for one signature (operand dtypes, which operands are scalars, and the layout), so a cold build
(a compiler run) is paid once per signature rather than once per op. Sizes, shapes, strides and
offsets are kernel arguments, never baked into the source, so a program is reused for every size.

Layouts
-------
``"c"``: every view operand is contiguous; work-item ``i`` handles element ``i`` and there is **no
bounds check** (the launcher uses an exact global size and a second launch for the tail): PoCL
vectorises such kernels across work-items, an ``if (i < n)`` guard stops it.
``"g"``: contiguous with a bounds check, for small sizes: one launch instead of a main launch plus
a tail (vectorisation does not matter there; the launch count does).
``"cl"``: contiguous, *loop* style (CPU devices): work-item ``i`` loops over elements
``[i*ch, min(n, (i+1)*ch))``. One launch for any size, and the compiler vectorises the loop, so on
PoCL this beats the exact-size kernel too (one launch for small sizes, more bandwidth for large).
``("nd", R)``: strided, rank ``R`` after dimension coalescing, on an N-D range (GPUs; see
:func:`_decompose_nd`).
``("loop", R)``: strided, loop style (CPU devices): one work-item per (row, chunk of the last
dimension), see :func:`_decompose_rows`: no 64-bit ``%``/``/`` per element (the former
linear-index kernel's cost), and the innermost loop runs along a row, which the compiler
vectorises; an N-D range lies in between.
For strided layouts each operand passes its offset, then the ``R`` strides of every view and the
``R`` sizes follow as the last arguments (plus ``nrows, ch`` for loops).

16-bit floats (bfloat16, float16)
---------------------------------
Both are stored as their 16 bits (``ushort``) and computed in float32, as PyTorch and numpy do,
on every device: float16 needs no ``cl_khr_fp16`` (that extension is about ``half`` arithmetic;
this backend never computes in ``half``). Elementwise kernels (unary, binary, ``where``, casts)
convert on load and store (:data:`HALF16`: ``pg_bf2f``/``pg_f2bf`` and ``pg_h2f``/``pg_f2h``,
software conversions rounding to nearest even, bit-exact with ml_dtypes' and numpy's casts) and
compute the float32 expression; a scalar argument is a float (for float16 already rounded to
float16, as numpy treats a Python scalar). A float64 source converts to float16 directly
(``pg_d2h``: one rounding, as numpy) and to bfloat16 through float32 (as PyTorch). Copies, fill,
gather and scatter move the bits; ``scatter_add`` rounds after each addition, as PyTorch's CPU
kernel does; reductions, ``cumsum`` and sort work in float, rounding each output once. Random
numbers are drawn straight into the 16-bit buffer, rounded as the numpy backend rounds them.

Complex (complex64, complex128)
-------------------------------
Stored as ``float2``/``double2`` (numpy's layout), so loads, stores, ``where``, gather, scatter,
sums and negation are the generic code on vectors; products, quotients and the functions are
the helpers of :mod:`.complex_kernels` (``KIND`` ``"c"``). ``abs`` writes the real dtype; casts
take the real part (bool: either part nonzero). Ordering ops have no complex kernels: the
primitives raise :class:`~portagrad.errors.DTypeError` before one could compare a pair.

Integer division by zero
------------------------
The numpy backend raises :class:`ZeroDivisionError` for integer ``floordiv``/``remainder`` by zero.
This backend checks scalar divisors on the host; for tensor divisors the device result is
unspecified (0 here), as on CUDA: a host check would need a device reduction and a synchronisation
per op. The kernels never trap (``INT_MIN // -1`` wraps like numpy).
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import erf32
from .complex_kernels import COMPLEX_REAL, complex_helpers

__all__ = [
    "HALF16",
    "BINARY_VALID",
    "CTYPE",
    "KIND",
    "UNARY_VALID",
    "UTYPE",
    "argreduce_source",
    "binary_expr",
    "cast_expr",
    "cast_targets",
    "cumsum_source",
    "unary_out",
    "elementwise_source",
    "half16_helpers",
    "fill_source",
    "gather_source",
    "prelude",
    "random_source",
    "reduce_source",
    "scatter_source",
    "sort_source",
    "unary_expr",
]

#: portagrad dtype name -> OpenCL C type (bool is stored as one byte holding 0 or 1)
CTYPE = {"bool": "uchar", "int32": "int", "int64": "long", "float32": "float", "float64": "double",
         "float16": "ushort", "uint8": "uchar", "int8": "char", "int16": "short",
         "bfloat16": "ushort", "complex64": "float2", "complex128": "double2"}
#: unsigned twin, used for wrapping integer arithmetic (signed overflow is undefined in C). The
#: 8- and 16-bit types take ``uint``: C promotes them to (signed) int before arithmetic, where
#: 0xFFFF * 0xFFFF would overflow; the cast back to the narrow type keeps the low bits
UTYPE = {"bool": "uchar", "int32": "uint", "int64": "ulong", "uint8": "uint", "int8": "uint",
         "int16": "uint"}
#: 'b' bool, 'i' integer, 'f' floating, 'c' complex (stored as float2/double2, see .complex_kernels)
KIND = {"bool": "b", "int32": "i", "int64": "i", "float32": "f", "float64": "f", "float16": "s",
        "uint8": "i", "int8": "i", "int16": "i", "bfloat16": "s",  # 's': 16-bit storage only
        "complex64": "c", "complex128": "c"}

#: identities of max and min reductions over integers
_INT_MIN = {"int32": "INT_MIN", "int64": "LONG_MIN", "uint8": "0", "int8": "CHAR_MIN",
            "int16": "SHRT_MIN"}
_INT_MAX = {"int32": "INT_MAX", "int64": "LONG_MAX", "uint8": "UCHAR_MAX", "int8": "CHAR_MAX",
            "int16": "SHRT_MAX"}


# bfloat16 <-> float32 as PyTorch's c10::BFloat16: the upper 16 bits of the float, rounded to
# nearest even; NaN becomes the quiet NaN 0x7FC0
_BF16_HELPERS = """
inline float pg_bf2f(ushort h) { return as_float(((uint)h) << 16); }
inline ushort pg_f2bf(float f) {
    if (isnan(f)) return (ushort)0x7FC0;
    uint u = as_uint(f);
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}"""

# float16 <-> float32 in integer arithmetic, so that no device needs cl_khr_fp16 and every device
# rounds alike (to nearest even, as numpy's npy_floatbits_to_halfbits and F16C hardware): NaN
# keeps its sign and the top of its payload, made quiet; magnitudes from 65520 on overflow to inf
# (through the carry of the rounding); below 2^-14 the subnormal is rint(|f| * 2^24), exact
# since scaling by a power of two is. The load of a subnormal half multiplies an integer by 2^-24
# (exact), so no denormal float is involved either way; it selects rather than branches, so loops
# that load (GEMM, elementwise) stay vectorised.
_F16_HELPERS = """
inline float pg_h2f(ushort h) {
    uint s = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1Fu, m = (uint)h & 0x3FFu;
    uint r = e == 31u ? (s | 0x7F800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));
    return as_float(e == 0u ? (s | as_uint((float)m * 0x1p-24f)) : r);
}
inline ushort pg_f2h(float f) {
    uint x = as_uint(f);
    uint s = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (ushort)(s | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x47800000u) return (ushort)(s | 0x7C00u);
    if (a >= 0x38800000u) {
        uint r = a - 0x38000000u;
        return (ushort)(s | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
    }
    return (ushort)(s | (uint)rint(as_float(a) * 0x1p24f));
}"""

# float64 -> float16 in one rounding (numpy's npy_doublebits_to_halfbits), the same scheme
_D2H_HELPER = """
inline ushort pg_d2h(double d) {
    ulong x = as_ulong(d);
    uint s = (uint)(x >> 48) & 0x8000u;
    ulong a = x & 0x7FFFFFFFFFFFFFFFul;
    if (a > 0x7FF0000000000000ul) return (ushort)(s | 0x7E00u | (uint)((a >> 42) & 0x3FFul));
    if (a >= 0x40F0000000000000ul) return (ushort)(s | 0x7C00u);
    if (a >= 0x3F10000000000000ul) {
        ulong r = a - 0x3F00000000000000ul;
        return (ushort)(s | (uint)((r + 0x1FFFFFFFFFFul + ((r >> 42) & 1ul)) >> 42));
    }
    return (ushort)(s | (uint)rint(as_double(a) * 0x1p24));
}"""

#: the 16-bit floats stored as bits: dtype -> (load to float, store from float) C functions
HALF16 = {"bfloat16": ("pg_bf2f", "pg_f2bf"), "float16": ("pg_h2f", "pg_f2h")}
_HALF16_SRC = {"bfloat16": _BF16_HELPERS, "float16": _F16_HELPERS}


def half16_helpers(dtype: str, widths: Sequence[int] = ()) -> str:
    """The conversion functions of 16-bit float ``dtype`` (see :data:`HALF16`), plus a vector load
    conversion ``<load>_<w>(ushort<w>) -> float<w>`` per width in ``widths`` (4, 8 or 16), for
    kernels (GEMM) that read 16-bit operands in vectors. A 16-wide conversion runs as two 8-wide
    halves: no builtin sees a 64-byte vector (see :mod:`.vectors`)."""
    ld = HALF16[dtype][0]
    parts = [_HALF16_SRC[dtype]]
    for w in (4, 8):
        if w in widths or (w == 8 and 16 in widths):
            parts.append(_vector_load16(dtype, ld, w))
    if 16 in widths:
        # a macro: a function returning a 64-byte vector draws clang's ABI warning without AVX-512
        parts.append(f"#define {ld}_16(h) ((float16)({ld}_8((h).lo), {ld}_8((h).hi)))")
    return "\n".join(parts) + "\n"


def _vector_load16(dtype: str, ld: str, w: int) -> str:
    """``<ld>_<w>(ushort<w>) -> float<w>``: ``w`` 16-bit values of ``dtype`` widened at once."""
    if dtype == "bfloat16":
        body = f"return as_float{w}(convert_uint{w}(h) << 16);"
    else:  # pg_h2f's three cases as selects, so the loop stays vectorised
        body = (f"uint{w} u = convert_uint{w}(h);\n"
                f"    uint{w} s = (u & 0x8000u) << 16, e = (u >> 10) & 0x1Fu, m = u & 0x3FFu;\n"
                f"    uint{w} r = s | ((e + 112u) << 23) | (m << 13);\n"
                f"    r = select(r, s | 0x7F800000u | (m << 13), e == (uint{w})31u);\n"
                f"    r = select(r, s | as_uint{w}(convert_float{w}(m) * 0x1p-24f), e == (uint{w})0u);\n"
                f"    return as_float{w}(r);")
    return f"inline float{w} {ld}_{w}(ushort{w} h) {{\n    {body}\n}}"


def _load(dtype: str, ref: str) -> str:
    """The value of element ``ref`` of ``dtype`` as computed with (16-bit floats: as a float)."""
    h = HALF16.get(dtype)
    return f"{h[0]}({ref})" if h else ref


def _vtype(dtype: str) -> str:
    """The C type a ``dtype`` value is computed in (16-bit floats: float)."""
    return "float" if dtype in HALF16 else CTYPE[dtype]


def _store(dtype: str, expr: str) -> str:
    """``expr`` (of :func:`_vtype`) as stored in a ``dtype`` buffer."""
    h = HALF16.get(dtype)
    return f"{h[1]}({expr})" if h else expr


def prelude(dtypes: Sequence[str]) -> str:
    """Pragmas and per-dtype helper functions needed by kernels using ``dtypes``."""
    parts = ["#pragma OPENCL FP_CONTRACT OFF"]
    if "float64" in dtypes or "complex128" in dtypes:
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    names = set(dtypes)
    for h in sorted(names & HALF16.keys()):
        parts.append(_HALF16_SRC[h])
        names.discard(h)
        names.add("float32")  # 16-bit floats compute with float's helpers
    if "float16" in dtypes and ("float64" in dtypes or "complex128" in dtypes):
        parts.append(_D2H_HELPER)
    for name in sorted(names):
        t = CTYPE[name]
        k = KIND[name]
        if k == "c":
            parts.append(complex_helpers(name))
        elif k == "f":
            # numpy's npy_divmod: fmod, then adjust toward Python's floor semantics
            parts.append(f"""
inline {t} pg_floordiv_{t}({t} a, {t} b) {{
    if (b == ({t})0) return a / b;
    {t} mod = fmod(a, b);
    {t} div = (a - mod) / b;
    if (mod != ({t})0) {{ if (isless(b, ({t})0) != isless(mod, ({t})0)) div -= ({t})1; }}
    {t} fd;
    if (div != ({t})0) {{ fd = floor(div); if (isgreater(div - fd, ({t})0.5)) fd += ({t})1; }}
    else fd = copysign(({t})0, a / b);
    return fd;
}}
inline {t} pg_remainder_{t}({t} a, {t} b) {{
    {t} mod = fmod(a, b);
    if (b == ({t})0) return mod;
    if (mod != ({t})0) {{ if (isless(b, ({t})0) != isless(mod, ({t})0)) mod += b; }}
    else mod = copysign(({t})0, b);
    return mod;
}}
inline {t} pg_sigmoid_{t}({t} a) {{
    return ({t})1 / (({t})1 + exp(-a));  /* PyTorch's formula (0 where exp(-a) overflows) */
}}
inline {t} pg_tanh_{t}({t} a) {{
    /* +-1 from where the exact value rounds to it (a builtin may stay an ulp short: PoCL's
       float tanh(inf) is 0.99999994); NaN fails the test and goes to tanh */
    return fabs(a) >= ({t}){"19.1" if t == "double" else "9.02f"} ? copysign(({t})1, a) : tanh(a);
}}""")
            if t == "float":
                parts.append(erf32.opencl_source())
        elif k == "i":
            u = UTYPE[name]
            parts.append(_unsigned_fix(name, f"""
inline {t} pg_floordiv_{t}({t} a, {t} b) {{
    if (b == 0) return 0;                       /* unspecified on the device (see module doc) */
    if (b == -1) return ({t})(({u})0 - ({u})a);  /* avoids the INT_MIN / -1 trap; wraps */
    {t} q = a / b;
    if (((a < 0) != (b < 0)) && q * b != a) q -= 1;
    return q;
}}
inline {t} pg_remainder_{t}({t} a, {t} b) {{
    if (b == 0 || b == -1) return 0;
    {t} r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}}
inline {t} pg_pow_{t}({t} a, {t} b) {{
    {u} base = ({u})a, acc = 1;
    {t} e = b;
    while (e > 0) {{ if (e & 1) acc *= base; base *= base; e >>= 1; }}
    return ({t})acc;
}}"""))
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------ op expressions
_F_UNARY = {
    "neg": "-a", "abs": "fabs(a)", "sign": "(a > (T)0 ? (T)1 : (a < (T)0 ? (T)-1 : (T)0))",  # nan: 0
    "exp": "exp(a)", "expm1": "expm1(a)", "log": "log(a)", "log1p": "log1p(a)", "sqrt": "sqrt(a)",
    "rsqrt": "(T)1 / sqrt(a)", "sin": "sin(a)", "cos": "cos(a)", "tan": "tan(a)", "tanh": "pg_tanh_T(a)",
    "sigmoid": "pg_sigmoid_T(a)", "relu": "((isnan(a) || a > (T)0) ? a : (T)0)", "erf": "pg_erf_T(a)",
    "floor": "floor(a)", "ceil": "ceil(a)", "round": "rint(a)", "trunc": "trunc(a)",
    "reciprocal": "(T)1 / a", "logical_not": "(uchar)(a == (T)0)", "isnan": "(uchar)(isnan(a) != 0)",
    "isinf": "(uchar)(isinf(a) != 0)",
}
_I_UNARY = {
    "neg": "(T)((U)0 - (U)a)", "abs": "(a < 0 ? (T)((U)0 - (U)a) : a)",
    "sign": "(T)((a > 0) - (a < 0))", "relu": "(a > 0 ? a : (T)0)",
    "floor": "a", "ceil": "a", "round": "a", "trunc": "a",
    "logical_not": "(uchar)(a == 0)", "isnan": "(uchar)0", "isinf": "(uchar)0",
}
_B_UNARY = {
    "abs": "a", "sign": "a", "relu": "a", "floor": "a", "ceil": "a", "round": "a", "trunc": "a",
    "logical_not": "(uchar)(a == 0)", "isnan": "(uchar)0", "isinf": "(uchar)0",
}
# complex (_T: the helpers of the real C type R, V: float2/double2); abs writes the real dtype,
# isnan/isinf/logical_not bool
_C_UNARY = {
    "neg": "-a", "abs": "pg_cabs_T(a)", "exp": "pg_cexp_T(a)", "log": "pg_clog_T(a)",
    "sqrt": "pg_csqrt_T(a)", "sin": "pg_csin_T(a)", "cos": "pg_ccos_T(a)", "tan": "pg_ctan_T(a)",
    "tanh": "pg_ctanh_T(a)", "sigmoid": "pg_csigmoid_T(a)", "reciprocal": "pg_crecip_T(a)",
    # beyond the contract's list, what the core also sends for complex (sinh, atanh and
    # rsqrt's own entry point), as the numpy backend computes them
    "rsqrt": "pg_cdiv_T((V)((R)1, (R)0), pg_csqrt_T(a))", "expm1": "pg_cexpm1_T(a)",
    "log1p": "pg_clog1p_T(a)", "logical_not": "(uchar)(a.x == (R)0 && a.y == (R)0)",
    "isnan": "(uchar)(isnan(a.x) || isnan(a.y))", "isinf": "(uchar)(isinf(a.x) || isinf(a.y))",
}
_UNARY_BY_KIND = {"f": _F_UNARY, "i": _I_UNARY, "b": _B_UNARY, "c": _C_UNARY}
_BOOL_OUT = {"logical_not", "isnan", "isinf", "logical_and", "logical_or", "logical_xor",
             "eq", "ne", "lt", "le", "gt", "ge"}

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_COMMON_BINARY = {
    "logical_and": "(uchar)((a != (T)0) && (b != (T)0))",
    "logical_or": "(uchar)((a != (T)0) || (b != (T)0))",
    "logical_xor": "(uchar)((a != (T)0) != (b != (T)0))",
    **{op: f"(uchar)(a {sym} b)" for op, sym in _CMP.items()},
}
_F_BINARY = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b",
    "floordiv": "pg_floordiv_T(a, b)", "remainder": "pg_remainder_T(a, b)", "fmod": "fmod(a, b)",
    "pow": "pow(a, b)",
    "maximum": "((isnan(a) || a > b) ? a : b)", "minimum": "((isnan(a) || a < b) ? a : b)",
    "atan2": "atan2(a, b)", **_COMMON_BINARY,
}
_I_BINARY = {
    "add": "(T)((U)a + (U)b)", "sub": "(T)((U)a - (U)b)", "mul": "(T)((U)a * (U)b)",
    "floordiv": "pg_floordiv_T(a, b)", "remainder": "pg_remainder_T(a, b)", "pow": "pg_pow_T(a, b)",
    "fmod": "((b == 0 || b == -1) ? (T)0 : a % b)",  # C's %: the sign of the dividend
    "maximum": "max(a, b)", "minimum": "min(a, b)",
    "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b", **_COMMON_BINARY,
}
_B_BINARY = {
    "add": "(a | b)", "mul": "(a & b)", "maximum": "max(a, b)", "minimum": "min(a, b)",
    "bitwise_and": "(a & b)", "bitwise_or": "(a | b)", "bitwise_xor": "(a ^ b)", **_COMMON_BINARY,
}
_C_BINARY = {
    "add": "a + b", "sub": "a - b", "mul": "pg_cmul_T(a, b)", "div": "pg_cdiv_T(a, b)",
    "pow": "pg_cpow_T(a, b)",
    "eq": "(uchar)(a.x == b.x && a.y == b.y)", "ne": "(uchar)(a.x != b.x || a.y != b.y)",
}
_BINARY_BY_KIND = {"f": _F_BINARY, "i": _I_BINARY, "b": _B_BINARY, "c": _C_BINARY}

#: which ops each dtype kind supports (others raise DTypeError, as numpy refuses them too)
UNARY_VALID = {k: frozenset(v) for k, v in _UNARY_BY_KIND.items()}
BINARY_VALID = {k: frozenset(v) for k, v in _BINARY_BY_KIND.items()}


def _unsigned_fix(dtype: str, code: str) -> str:
    """``code`` without its tests for a -1 divisor when ``dtype`` is unsigned (always false there,
    and compilers warn about them)."""
    if dtype != "uint8":
        return code
    return code.replace(" || b == -1", "").replace("(b == -1)", "(0)")


def out_is_bool(op: str) -> bool:
    """Whether ``op`` writes ``bool`` regardless of its input dtype."""
    return op in _BOOL_OUT


def unary_out(op: str, dtype: str) -> str:
    """The dtype ``op`` writes for an input of ``dtype``: bool for tests, the real dtype for
    ``abs`` of a complex, else ``dtype``."""
    if op in _BOOL_OUT:
        return "bool"
    if op == "abs" and dtype in COMPLEX_REAL:
        return COMPLEX_REAL[dtype]
    return dtype


def _subst(expr: str, dtype: str) -> str:
    if dtype in COMPLEX_REAL:
        rt = CTYPE[COMPLEX_REAL[dtype]]
        return expr.replace("_T(", f"_{rt}(").replace("(V)", f"({CTYPE[dtype]})") \
            .replace("(R)", f"({rt})")
    t = CTYPE[dtype]
    return expr.replace("pg_sigmoid_T", f"pg_sigmoid_{t}").replace("pg_erf_T", f"pg_erf_{t}") \
        .replace("pg_tanh_T", f"pg_tanh_{t}") \
        .replace("pg_floordiv_T", f"pg_floordiv_{t}") \
        .replace("pg_remainder_T", f"pg_remainder_{t}").replace("pg_pow_T", f"pg_pow_{t}") \
        .replace("(T)", f"({t})").replace("(U)", f"({UTYPE.get(dtype, t)})")


def unary_expr(op: str, dtype: str) -> str:
    """C expression of ``op`` on variable ``a`` of ``dtype``."""
    if op == "erf" and dtype == "float64":
        return "erf(a)"  # float (and 16-bit floats): the shared polynomials (backends/erf32.py)
    return _subst(_UNARY_BY_KIND[KIND[dtype]][op], dtype)


def binary_expr(op: str, dtype: str) -> str:
    """C expression of ``op`` on variables ``a`` and ``b`` of ``dtype``."""
    return _unsigned_fix(dtype, _subst(_BINARY_BY_KIND[KIND[dtype]][op], dtype))


def cast_targets(fp64: bool) -> list[str]:
    """The dtypes one cast program converts to (those the device supports): a program per source
    dtype rather than per pair, so the first casts among ten dtypes cost ten builds, not 90."""
    return [d for d in CTYPE if fp64 or d not in ("float64", "complex128")]


def cast_expr(src: str, dst: str, a: str = "a") -> str:
    """C expression converting ``a`` of dtype ``src`` to ``dst`` (float->int truncates; ->bool is
    != 0). Complex: a real becomes ``(a, 0)``; a complex keeps its real part, or for bool "either
    part nonzero" (numpy)."""
    if src == dst:
        return a
    if dst in HALF16:  # elementwise kernels store 16-bit floats rounded from float
        return f"({a}).x" if src in COMPLEX_REAL else a  # (float64 -> bfloat16 through float32)
    if src in HALF16:  # loaded as float
        src = "float32"
    if dst in COMPLEX_REAL:
        if src in COMPLEX_REAL:
            return f"convert_{CTYPE[dst]}({a})"
        rt = CTYPE[COMPLEX_REAL[dst]]
        return f"({CTYPE[dst]})(({rt})({a}), ({rt})0)"
    if src in COMPLEX_REAL:
        rt = CTYPE[COMPLEX_REAL[src]]
        if dst == "bool":
            return f"(uchar)(({a}).x != ({rt})0 || ({a}).y != ({rt})0)"
        a, src = f"({a}).x", COMPLEX_REAL[src]
    if dst == "bool":
        return f"(uchar)({a} != ({CTYPE[src]})0)"
    if KIND[src] == "f" and dst in ("uint8", "int8", "int16"):
        return f"({CTYPE[dst]})(int){a}"  # truncate, then keep the low bits (numpy, PyTorch on CPU)
    return f"({CTYPE[dst]}){a}"


# ------------------------------------------------------------------ index helpers
def _params(name: str, rank: int) -> str:
    return "".join(f", long {name}{d}" for d in range(rank))


def _decompose(rank: int, ops: Sequence[str], gid: str = "gi", shape: str = "n") -> str:
    """Code turning linear index ``gid`` into per-operand element indices ``<op>i``.

    Dimensions are peeled from the last one; ``<op>o`` is the operand's offset, ``<op>s<d>`` its
    strides and ``<shape><d>`` the sizes."""
    lines = [f"long _r = {gid}; long _c;"]
    for op in ops:
        lines.append(f"long {op}i = {op}o;")
    for d in range(rank - 1, -1, -1):
        if d == 0:
            lines.append("_c = _r;")
        else:
            lines.append(f"_c = _r % {shape}{d}; _r /= {shape}{d};")
        for op in ops:
            lines.append(f"{op}i += _c * {op}s{d};")
    return "\n    ".join(lines)


def _decompose_nd(rank: int, ops: Sequence[str]) -> str:
    """Element indices ``<op>i`` on an N-D range: global id 0 walks the last dimension, id 1 the one
    before, id 2 all the others (decomposed with ``%`` and ``/``, only for rank > 3). Work-items
    outside ``n<rank-1>`` x ``n<rank-2>`` return, so local sizes need not divide the sizes.

    No 64-bit division for rank <= 3: on PoCL a 1-D kernel that decomposes a linear index with
    ``%``/``/`` per dimension spends most of its time in those divisions."""
    last = rank - 1
    lines = ["long _c = get_global_id(0);"]
    cond = [f"_c >= n{last}"]
    if rank >= 2:
        lines.append("long _c1 = get_global_id(1);")
        cond.append(f"_c1 >= n{last - 1}")
    lines.append(f"if ({' || '.join(cond)}) return;")
    for op in ops:
        lines.append(f"long {op}i = {op}o + _c * {op}s{last}" +
                     (f" + _c1 * {op}s{last - 1};" if rank >= 2 else ";"))
    if rank >= 3:
        lines.append("long _r = get_global_id(2);")
        for d in range(rank - 3, -1, -1):
            lines.append("_c = _r;" if d == 0 else f"_c = _r % n{d}; _r /= n{d};")
            for op in ops:
                lines.append(f"{op}i += _c * {op}s{d};")
    return "\n    ".join(lines)


def elementwise_source(kernels: dict[str, str], in_types: Sequence[tuple[str, bool]],
                       out_type: str | dict[str, str], layout: str | tuple) -> str:
    """Kernels ``name -> C expression`` over inputs ``a, b, c`` writing ``o``.

    ``in_types`` lists ``(dtype, is_scalar)`` per input; scalars are passed by value. Every kernel
    of one call shares the signature, so the launcher builds one argument list for all of them.
    ``out_type`` is one dtype for all, or a dtype per kernel name (a bundle of casts).

    Argument order: ``O, oo``, then per input either ``X, xo`` (a view) or its value (a scalar),
    then the *layout constants* (see the module doc): nothing for ``"c"``; ``n`` for ``"g"``;
    ``n, ch`` for ``"cl"``; for ``("nd", R)`` the ``R`` strides of the output and of each view
    input, then the ``R`` sizes; for ``("loop", R)`` the same plus ``nrows, ch``. Per-call
    arguments (buffers, offsets, scalars) come first and the constants of a (shape, strides)
    signature last, so the launcher appends one cached tuple."""
    names = "abc"
    out_types = out_type if isinstance(out_type, dict) else dict.fromkeys(kernels, out_type)
    dts = [d for d, _ in in_types] + sorted(set(out_types.values()))
    src = [prelude(dts)]
    view_ops = ["o"] + [names[i] for i, (_, s) in enumerate(in_types) if not s]
    loop = isinstance(layout, tuple) and layout[0] == "loop"
    rank = layout[1] if isinstance(layout, tuple) else 0
    for kname, expr in kernels.items():
        ot = out_types[kname]
        # a 16-bit float is loaded into a float and stored rounded from one, except by a plain
        # copy; float64 -> float16 rounds once, from the double
        raw = expr == "a" and ot in HALF16 and all(d == ot for d, _ in in_types)
        if ot in HALF16 and not raw:
            if ot == "float16" and any(d in ("float64", "complex128") for d, _ in in_types):
                expr = f"pg_d2h((double)({expr}))"
            else:
                expr = f"{HALF16[ot][1]}((float)({expr}))"
        args = [f"__global {CTYPE[ot]}* O, long oo"]
        loads = []
        for i, (dt, scalar) in enumerate(in_types):
            nm = names[i]
            t = CTYPE[dt]
            conv = dt in HALF16 and not raw
            vt = "float" if conv else t
            if scalar:
                args.append(f"{vt} {nm}")
            else:
                args.append(f"__global const {t}* {nm.upper()}, long {nm}o")
                if layout in ("c", "g"):
                    ref = f"{nm.upper()}[{nm}o + gi]"
                elif layout == "cl":
                    ref = f"{nm.upper()}[{nm}o + j]"
                elif loop:
                    ref = f"{nm.upper()}[{nm}i + j * {nm}s{rank - 1}]"
                else:
                    ref = f"{nm.upper()}[{nm}i]"
                loads.append(f"{vt} {nm} = {_load(dt, ref) if conv else ref};")
        ld = "\n        ".join(loads)
        if layout == "c":
            body = f"long gi = get_global_id(0);\n    {ld}\n    O[oo + gi] = {expr};"
        elif layout == "g":
            args.append("long n")
            body = (f"long gi = get_global_id(0);\n    if (gi >= n) return;\n"
                    f"    {ld}\n    O[oo + gi] = {expr};")
        elif layout == "cl":
            args.append("long n, long ch")
            body = (f"long j0 = get_global_id(0) * ch, j1 = min(n, j0 + ch);\n"
                    f"    for (long j = j0; j < j1; ++j) {{\n"
                    f"        {ld}\n        O[oo + j] = {expr};\n    }}")
        elif loop:
            for op in view_ops:
                args.append(_params(f"{op}s", rank)[2:])
            args.append(_params("n", rank)[2:])
            args.append("long nrows, long ch")
            body = (_decompose_rows(rank, view_ops) +
                    f"\n    long j0 = get_global_id(1) * ch, j1 = min(n{rank - 1}, j0 + ch);\n"
                    f"    for (long j = j0; j < j1; ++j) {{\n        {ld}\n"
                    f"        O[oi + j * os{rank - 1}] = {expr};\n    }}")
        else:
            for op in view_ops:
                args.append(_params(f"{op}s", rank)[2:])
            args.append(_params("n", rank)[2:])
            body = _decompose_nd(rank, view_ops) + "\n    " + ld.replace("\n        ", "\n    ") + \
                f"\n    O[oi] = {expr};"
        src.append(f"__kernel void {kname}({', '.join(args)})\n{{\n    {body}\n}}\n")
    return "\n".join(src)


def _decompose_rows(rank: int, ops: Sequence[str]) -> str:
    """Base indices ``<op>i`` of row ``get_global_id(0)`` (all dimensions but the last, merged;
    rows past ``nrows`` return) for the loop kernels: the division happens once per row chunk, and
    the inner loop over the last dimension is what the compiler vectorises."""
    lines = ["long _r = get_global_id(0);", "if (_r >= nrows) return;", "long _c;"]
    for op in ops:
        lines.append(f"long {op}i = {op}o;")
    for d in range(rank - 2, -1, -1):
        lines.append("_c = _r;" if d == 0 else f"_c = _r % n{d}; _r /= n{d};")
        for op in ops:
            lines.append(f"{op}i += _c * {op}s{d};")
    return "\n    ".join(lines)


def fill_source(dtype: str, rank: int) -> str:
    """A strided fill kernel ``fill`` (contiguous fills use ``clEnqueueFillBuffer``)."""
    t = CTYPE[dtype]
    return prelude([dtype]) + f"""
__kernel void fill(__global {t}* O, long oo{_params("os", rank)}, {t} v{_params("n", rank)})
{{
    long gi = get_global_id(0);
    {_decompose(rank, ["o"])}
    O[oi] = v;
}}
"""


# ------------------------------------------------------------------ reductions
_RED_IDENT = {
    ("sum", "f"): "0", ("sum", "i"): "0", ("sum", "b"): "0",
    ("prod", "f"): "1", ("prod", "i"): "1", ("prod", "b"): "1",
    ("max", "f"): "-INFINITY", ("min", "f"): "INFINITY",
    ("max", "b"): "0", ("min", "b"): "1",
    ("sum", "c"): "0", ("prod", "c"): "(T2)(1, 0)",  # complex: sum and prod only
}


def _acc_load(in_dtype: str, acc_dtype: str, ref: str) -> str:
    """Element ``ref`` of ``in_dtype`` as a value of the accumulator's dtype (no cast where they
    agree: OpenCL C has no casts between vector types, ``convert_*`` converts complex pairs)."""
    if KIND[acc_dtype] == "c" or KIND[in_dtype] == "c":
        src = "float32" if in_dtype in HALF16 else in_dtype
        return cast_expr(src, acc_dtype, _load(in_dtype, ref))
    return f"({CTYPE[acc_dtype]}){_load(in_dtype, ref)}"


def _red_combine(op: str, kind: str, acc_t: str, acc_dtype: str) -> str:
    """C expression combining accumulator ``x`` with value ``y`` (NaN propagates for max/min)."""
    if op == "sum":
        return f"({acc_t})((({UTYPE[acc_dtype]})x) + (({UTYPE[acc_dtype]})y))" if kind not in "fc" \
            else "x + y"
    if op == "prod" and kind == "c":
        return f"pg_cmul_{CTYPE[COMPLEX_REAL[acc_dtype]]}(x, y)"
    if op == "prod":
        return f"({acc_t})((({UTYPE[acc_dtype]})x) * (({UTYPE[acc_dtype]})y))" if kind != "f" else "x * y"
    if kind == "f":
        cmp = ">" if op == "max" else "<"
        return f"((isnan(y) || y {cmp} x) ? y : x)"
    return f"{op}(x, y)"


def reduce_source(in_dtype: str, out_dtype: str, kr: int, rr: int, wg: int) -> str:
    """Kernels ``sum/prod/max/min`` (one work-group of ``wg`` items per output) and ``*_1``
    variants (one work-item per output). Accumulation happens in ``out_dtype``.

    Arguments: output (offset, ``kr`` strides, chunk stride), input (offset, ``kr`` kept strides,
    ``rr`` reduced strides), kept sizes, reduced sizes, reduced count, chunk length, chunk count.
    A launch may split the reduced range in chunks (partials written ``chunk stride`` apart) and
    reduce the partials in a second launch."""
    it, ot = CTYPE[in_dtype], CTYPE[out_dtype]
    # the accumulator: 16-bit floats sum in float (also in local memory), rounded once when stored
    acc = "float32" if out_dtype in HALF16 else out_dtype
    at = CTYPE[acc]
    kind = KIND[acc]
    src = [prelude([in_dtype, out_dtype])]
    okr = max(kr, 1)
    for op in ("sum", "prod") if kind == "c" else ("sum", "prod", "max", "min"):
        if (op, kind) in _RED_IDENT:
            ident = _RED_IDENT[(op, kind)].replace("T2", at)
        elif op == "max":
            ident = _INT_MIN[acc]
        else:
            ident = _INT_MAX[acc]
        comb = _red_combine(op, kind, at, acc)
        for suffix, lsz in (("", wg), ("_1", 1)):
            kept_params = _params("os", okr) + ", long ocs, __global const " + it + "* X, long xo" + \
                _params("xs", okr) + _params("xr", rr) + _params("n", okr) + _params("m", rr)
            # two reduced dimensions (a bias gradient of a convolution: batch and positions):
            # counters stepped along the loop instead of a 64-bit division per element
            pair = rr == 2
            if pair:
                red_dec_s = "long xi = xb + c0 * xr0 + c1 * xr1;"
            else:
                red_dec = ["long r = j; long c; long xi = xb;"]
                for d in range(rr - 1, -1, -1):
                    red_dec.append("c = r;" if d == 0 else f"c = r % m{d}; r /= m{d};")
                    red_dec.append(f"xi += c * xr{d};")
                red_dec_s = "\n        ".join(red_dec)
            # kept-index decomposition for the output and the input base
            kd = ["long r = g / nchunk; long c; long oi = oo + (g % nchunk) * ocs; long xb = xo;"]
            for d in range(okr - 1, -1, -1):
                kd.append("c = r;" if d == 0 else f"c = r % n{d}; r /= n{d};")
                kd.append(f"oi += c * os{d}; xb += c * xs{d};")
            kd_s = "\n    ".join(kd)
            if lsz == 1:
                body = f"""
    long g = get_global_id(0);
    {kd_s}
    long j0 = (g % nchunk) * chunk, j1 = min(total, j0 + chunk);
    {at} x = {ident};
    {"long c1 = j0 % m1, c0 = j0 / m1;" if pair else ""}
    for (long j = j0; j < j1; ++j) {{
        {red_dec_s}
        {at} y = {_acc_load(in_dtype, acc, "X[xi]")};
        x = {comb};
        {"if (++c1 == m1) { c1 = 0; ++c0; }" if pair else ""}
    }}
    O[oi] = {_store(out_dtype, "x")};"""
            else:
                body = f"""
    long g = get_group_id(0);
    int l = get_local_id(0);
    __local {at} s[{lsz}];
    {kd_s}
    long j0 = (g % nchunk) * chunk, j1 = min(total, j0 + chunk);
    {at} x = {ident};
    {"long c1 = (j0 + l) % m1, c0 = (j0 + l) / m1;" if pair else ""}
    for (long j = j0 + l; j < j1; j += {lsz}) {{
        {red_dec_s}
        {at} y = {_acc_load(in_dtype, acc, "X[xi]")};
        x = {comb};
        {f"c1 += {lsz}; if (c1 >= m1) {{ long q = c1 / m1; c0 += q; c1 -= q * m1; }}" if pair else ""}
    }}
    s[l] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = {lsz} / 2; h > 0; h >>= 1) {{
        if (l < h) {{ {at} y = s[l + h]; x = s[l]; s[l] = {comb}; }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (l == 0) O[oi] = {_store(out_dtype, "s[0]")};"""
            src.append(f"__kernel void pg_{op}{suffix}(__global {ot}* O, long oo{kept_params}, "
                       f"long total, long chunk, long nchunk)\n{{{body}\n}}\n")
    return "\n".join(src)


def _line_kernel_head(kr: int, views: Sequence[str]) -> str:
    """Decompose ``get_global_id(0)`` over the kept sizes ``n*`` into base indices ``<v>i``."""
    okr = max(kr, 1)
    return "long gi = get_global_id(0);\n    " + _decompose(okr, views)


def _line_params(kr: int, views: Sequence[tuple[str, str, bool]]) -> str:
    """Arguments for ``views`` of ``(name, ctype, const)``: pointer, offset, kept strides, axis stride."""
    okr = max(kr, 1)
    out = []
    for nm, t, const in views:
        out.append(f"__global {'const ' if const else ''}{t}* {nm.upper()}, long {nm}o"
                   f"{_params(nm + 's', okr)}, long {nm}a")
    return ", ".join(out) + _params("n", okr) + ", long L"


def argreduce_source(dtype: str, kr: int) -> str:
    """Kernels ``argmax``/``argmin``: one work-item per output, first extreme (first NaN wins)."""
    t, vt = CTYPE[dtype], _vtype(dtype)
    src = [prelude([dtype])]
    params = _line_params(kr, [("o", "long", False), ("x", t, True)])
    for op, cmp in (("argmax", ">"), ("argmin", "<")):
        nan_v = "isnan(v)" if KIND[dtype] in "fs" else "0"
        src.append(f"""__kernel void pg_{op}({params})
{{
    {_line_kernel_head(kr, ["o", "x"])}
    long best = 0;
    {vt} bv = {_load(dtype, "X[xi]")};
    if (!({nan_v.replace('v', 'bv')})) {{
        for (long j = 1; j < L; ++j) {{
            {vt} v = {_load(dtype, "X[xi + j * xa]")};
            if ({nan_v}) {{ best = j; break; }}
            if (v {cmp} bv) {{ bv = v; best = j; }}
        }}
    }}
    O[oi] = best;
}}
""")
    return "\n".join(src)


def cumsum_source(in_dtype: str, out_dtype: str, kr: int) -> str:
    """Kernel ``cumsum``: one work-item per line, sequential (bit-identical to numpy's loop)."""
    it, ot, at = CTYPE[in_dtype], CTYPE[out_dtype], _vtype(out_dtype)
    u = UTYPE.get(out_dtype)
    x = _load(in_dtype, "X[xi + j * xa]")  # 16-bit floats accumulate in float, each sum rounded
    if u:
        add = f"({ot})(({u})acc + ({u})({ot}){x})"
    else:
        acc_dt = "float32" if out_dtype in HALF16 else out_dtype
        add = f"acc + {_acc_load(in_dtype, acc_dt, 'X[xi + j * xa]')}"
    params = _line_params(kr, [("o", ot, False), ("x", it, True)])
    return prelude([in_dtype, out_dtype]) + f"""
__kernel void cumsum({params})
{{
    {_line_kernel_head(kr, ["o", "x"])}
    {at} acc = 0;
    for (long j = 0; j < L; ++j) {{
        acc = {add};
        O[oi + j * oa] = {_store(out_dtype, "acc")};
    }}
}}
"""


def gather_source(dtype: str, rank: int) -> str:
    """Kernel ``gather``: per output element, ``x``'s index along the axis comes from ``index``.

    ``x``'s strides are passed with the axis stride zeroed, plus ``xa`` the real axis stride and
    ``xl`` the axis length. An index outside ``[0, xl)`` reads nothing and gives 0: the core may
    check the indices after the kernel is queued (``defer_check``), so it must stay in bounds."""
    t = CTYPE[dtype]
    return prelude([dtype]) + f"""
__kernel void gather(__global {t}* O, long oo{_params("os", rank)},
                     __global const {t}* X, long xo{_params("xs", rank)}, long xa, long xl,
                     __global const long* I, long io{_params("is", rank)}{_params("n", rank)})
{{
    long gi = get_global_id(0);
    {_decompose(rank, ["o", "x", "i"])}
    long k = I[ii];
    O[oi] = (k >= 0 && k < xl) ? X[xi + k * xa] : ({t})0;
}}
"""


def scatter_source(dtype: str, rank: int) -> str:
    """Kernels ``scatter``/``scatter_add``: one work-item per position off the axis, looping along
    the axis in order, so duplicates accumulate without atomics and in numpy's order.

    Sizes ``n*`` have the axis set to 1; ``L`` is the index's axis length and ``ol`` the output's;
    ``*a`` are the axis strides and ``os*`` has the axis stride zeroed. An index outside ``[0, ol)``
    writes nothing (its check may come after the kernel is queued, as in ``gather``)."""
    t = CTYPE[dtype]
    u = UTYPE.get(dtype)
    add = f"({t})(({u})O[p] + ({u})S[si + j * sa])" if u else "O[p] + S[si + j * sa]"
    if dtype == "bool":
        add = "(uchar)(O[p] | S[si + j * sa])"
    elif dtype in HALF16:  # each sum rounded, in order
        add = _store(dtype, f"{_load(dtype, 'O[p]')} + {_load(dtype, 'S[si + j * sa]')}")
    src = [prelude([dtype])]
    params = (f"__global {t}* O, long oo{_params('os', rank)}, long oa, long ol, "
              f"__global const long* I, long io{_params('is', rank)}, long ia, "
              f"__global const {t}* S, long so{_params('ss', rank)}, long sa{_params('n', rank)}, long L")
    for name, stmt in (("scatter", "O[p] = S[si + j * sa];"), ("scatter_add", f"O[p] = {add};")):
        src.append(f"""__kernel void {name}({params})
{{
    long gi = get_global_id(0);
    {_decompose(rank, ["o", "i", "s"])}
    for (long j = 0; j < L; ++j) {{
        long k = I[ii + j * ia];
        if (k < 0 || k >= ol) continue;
        long p = oi + k * oa;
        {stmt}
    }}
}}
""")
    return "\n".join(src)


def sort_source(dtype: str, kr: int) -> str:
    """Kernels ``sort_asc``/``sort_desc``: one work-item per line, bottom-up stable merge sort in a
    global scratch area (``2 * L`` keys and indices per line). NaN is larger than every number."""
    t, kt = CTYPE[dtype], _vtype(dtype)  # keys: 16-bit floats sort as float (the scratch too)
    f = KIND[dtype] in "fs"
    src = [prelude([dtype])]
    # before(p, q): p must come strictly before q
    lt = "(isnan(q) ? !isnan(p) : (p < q))" if f else "(p < q)"
    gt = "(isnan(p) ? !isnan(q) : (p > q))" if f else "(p > q)"
    params = _line_params(kr, [("v", t, False), ("o", "long", False), ("x", t, True)]) + \
        f", __global {kt}* K, __global long* P"
    for name, before in (("sort_asc", lt), ("sort_desc", gt)):
        src.append(f"""inline int before_{name}({kt} p, {kt} q) {{ return {before}; }}
__kernel void {name}({params})
{{
    {_line_kernel_head(kr, ["v", "o", "x"])}
    __global {kt}* k0 = K + gi * 2 * L;
    __global {kt}* k1 = k0 + L;
    __global long* p0 = P + gi * 2 * L;
    __global long* p1 = p0 + L;
    for (long j = 0; j < L; ++j) {{ k0[j] = {_load(dtype, "X[xi + j * xa]")}; p0[j] = j; }}
    for (long w = 1; w < L; w *= 2) {{
        for (long s = 0; s < L; s += 2 * w) {{
            long m = min(s + w, L), e = min(s + 2 * w, L);
            long i = s, j = m, d = s;
            while (i < m && j < e) {{
                if (before_{name}(k0[j], k0[i])) {{ k1[d] = k0[j]; p1[d++] = p0[j++]; }}
                else {{ k1[d] = k0[i]; p1[d++] = p0[i++]; }}
            }}
            while (i < m) {{ k1[d] = k0[i]; p1[d++] = p0[i++]; }}
            while (j < e) {{ k1[d] = k0[j]; p1[d++] = p0[j++]; }}
        }}
        __global {kt}* tk = k0; k0 = k1; k1 = tk;
        __global long* tp = p0; p0 = p1; p1 = tp;
    }}
    for (long j = 0; j < L; ++j) {{
        V[vi + j * va] = {_store(dtype, "k0[j]")}; O[oi + j * oa] = p0[j];
    }}
}}
""")
    return "\n".join(src)


# ------------------------------------------------------------------ random
_PHILOX = """
#define PG_M0 0xD2511F53u
#define PG_M1 0xCD9E8D57u
#define PG_W0 0x9E3779B9u
#define PG_W1 0xBB67AE85u
inline uint4 pg_philox(ulong ctr, ulong seed) {
    uint c0 = (uint)ctr, c1 = (uint)(ctr >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int r = 0; r < 10; ++r) {
        /* the 64-bit products, not mul_hi: PoCL calls that builtin out of line, which made
           every round a pair of calls */
        ulong p0 = (ulong)PG_M0 * c0, p1 = (ulong)PG_M1 * c2;
        uint hi0 = (uint)(p0 >> 32), lo0 = (uint)p0;
        uint hi1 = (uint)(p1 >> 32), lo1 = (uint)p1;
        uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
        k0 += PG_W0; k1 += PG_W1;
    }
    return (uint4)(c0, c1, c2, c3);
}
"""


def random_source(dtype: str, fp64: bool) -> str:
    """Kernels ``uniform`` and ``normal`` writing contiguous ``dtype`` (Philox4x32-10, see the
    interface doc: slot ``g`` of the stream is word ``g & 3`` of block ``g >> 2``). ``uniform`` is
    bit-identical to :mod:`portagrad.backends.philox`; ``normal`` computes in double when the
    device has fp64 (else in float: close, not identical).

    A 32- or 16-bit ``uniform`` takes one slot an element, so a work-item computes one block and
    writes the (up to) four elements it serves; float64 ``uniform`` (two slots) and ``normal``
    (four) compute per element, from the one or two blocks that hold its slots."""
    t = CTYPE[dtype]
    w = "double" if fp64 else "float"
    sfx = "" if fp64 else "f"
    dts = [dtype] + (["float64"] if fp64 else [])
    head = prelude(dts) + _PHILOX + """
#define PG_C62 0x3FFFFFFFFFFFFFFFul
/* the W slots from slot g: v[s .. s+W-1] with s = g & 3 (two blocks when they straddle one) */
#define PG_SLOTS(W) \
    uint s = (uint)(g & 3ul); ulong b = g >> 2; \
    uint4 r = pg_philox(b, seed); \
    uint4 q = s + W > 4 ? pg_philox((b + 1ul) & PG_C62, seed) : r; \
    uint v[8] = {r.x, r.y, r.z, r.w, q.x, q.y, q.z, q.w};
"""
    if dtype == "float64":
        uni = """
__kernel void uniform(__global double* O, long oo, ulong seed, ulong off, long n, double lo,
                      double span)
{
    long gi = get_global_id(0);
    ulong g = off + 2ul * (ulong)gi;
    PG_SLOTS(2)
    double u = ((double)(v[s] >> 5) * 67108864.0 + (double)(v[s + 1] >> 6)) * 0x1p-53;
    O[oo + gi] = lo + span * u;
}
"""
    else:
        vt = _vtype(dtype)
        if dtype == "float16":
            # numpy's float16 arithmetic: u, span * u and lo + span * u each rounded to float16
            # (lo and span arrive rounded)
            u = "pg_h2f(pg_f2h((float)(v[k] >> 8) * 0x1p-24f))"
            put = "pg_f2h(lo + pg_h2f(pg_f2h(span * u)))"
        else:  # float32 (bfloat16: its float32 stream, rounded once), float64 handled above
            u = f"({vt})((float)(v[k] >> 8) * 0x1p-24f)"
            put = _store(dtype, "lo + span * u")
        uni = f"""
__kernel void uniform(__global {t}* O, long oo, ulong seed, ulong off, long n, {vt} lo, {vt} span)
{{
    long j = get_global_id(0);
    long skip = (long)(off & 3ul);
    uint4 r = pg_philox(((off >> 2) + (ulong)j) & PG_C62, seed);
    uint v[4] = {{r.x, r.y, r.z, r.w}};
    for (int k = 0; k < 4; ++k) {{
        long e = 4 * j + k - skip;
        if (e >= 0 && e < n) {{
            {vt} u = {u};
            O[oo + e] = {put};
        }}
    }}
}}
"""
    if dtype == "float16":  # from the double (numpy: one rounding); without fp64 from a float
        put = "pg_d2h(mean_ + std_ * z)" if fp64 else "pg_f2h(mean_ + std_ * z)"
    else:  # bfloat16: its float32 stream rounded
        put = _store(dtype, f"({'float' if dtype in HALF16 else t})(mean_ + std_ * z)")
    return head + uni + f"""
__kernel void normal(__global {t}* O, long oo, ulong seed, ulong off, long n, {w} mean_, {w} std_)
{{
    long gi = get_global_id(0);
    ulong g = off + 4ul * (ulong)gi;
    PG_SLOTS(4)
    {w} u1 = (({w})(v[s] >> 5) * ({w})67108864.0 + ({w})(v[s + 1] >> 6) + ({w})1.0) * 0x1p-53{sfx};
    {w} u2 = (({w})(v[s + 2] >> 5) * ({w})67108864.0 + ({w})(v[s + 3] >> 6)) * 0x1p-53{sfx};
    /* numpy evaluates (2.0 * pi) * u2 */
    {w} z = sqrt(({w})-2.0 * log(u1)) * cos(6.283185307179586{sfx} * u2);
    O[oo + gi] = {put};
}}
"""
