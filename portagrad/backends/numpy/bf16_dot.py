"""bfloat16 products on the CPU's own bfloat16 dot-product instruction (optional).

CPUs with AVX-512 BF16 (AMD Zen 4 and later, Intel Cooper Lake and Sapphire Rapids and later)
have ``vdpbf16ps``: 32 bfloat16 pairs multiplied and summed into 16 float32 lanes in one
instruction, twice the products per instruction of float32 FMAs on widened copies. PyTorch's
bfloat16 GEMMs use it on such CPUs; numba cannot emit it, so this module writes the kernel in
LLVM IR and compiles it with llvmlite (installed with numba, the ``fast`` extra) for the host CPU.

:func:`matmul_nt` computes ``out = a @ w.T`` for bfloat16 ``a`` (M, K) and ``w`` (N, K) with
contiguous rows (a linear layer's ``x @ W.T``) into bfloat16: every output one float32 dot
product over ``K`` (products exact, sums reassociated) rounded once to the nearest even, the
rule of the other paths. As in PyTorch on the same instruction, bfloat16 subnormal operands
(``|x| < 1.2e-38``) count as zero and a subnormal float32 sum is flushed to zero.

Tiles of 4 rows of ``a`` times 4 rows of ``w`` keep sixteen accumulators in registers (eight
loads of 32 bfloat16 per sixteen instructions; 4 x 3 and 6 x 3 measured slower); the loop
runs over ``w``'s rows outside and ``a``'s inside, so each block of ``w`` is read from memory
once while ``a`` stays in the cache. The last ``K % 32`` columns are read by masked loads.

:func:`matmul_nn` computes ``out = a @ b`` for operands of any layout (a layer's gradients
``g @ W`` and ``g.T @ x``, whose columns are not runs of K): ``b`` is packed so that each
column's pair of consecutive K values is one 32-bit word (rows 2p and 2p+1 interleaved, a
streaming copy), and each instruction multiplies 16 columns' pairs by one pair of a row of
``a`` broadcast (read in place from rows of even length, else packed the same way). Tiles of
8 rows times 32 columns accumulate along the columns, so no horizontal sums are needed; short
dot products of many rows run faster this way than on the tiles above.

The compiled object is kept in ``__pycache__`` beside this file (keyed by the IR, the CPU and
llvmlite's version, and checked against its SHA-256 before use), so later processes skip the
compilation (0.16 s). :func:`available` is False (callers keep their float32 paths) without
llvmlite, on a CPU without ``avx512bf16``, with ``PORTAGRAD_BF16_DOT=0`` or
``PORTAGRAD_NUMBA=0``, or when the compiled kernel fails its check against a float64 product.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .jit import build_once
from .llvm_jit import Emitter, cache_key, compile_ir, const, host_target, read_object

_read_object = read_object  # (the name the cache's tests use)

__all__ = ["available", "matmul_nn", "matmul_nt"]

_STATE: list[Any] = []
_MB, _NB = 4, 4  # rows of a, rows of w per register tile
# matmul_nn's register tile: rows of a, vectors of 16 columns of b (8 x 2 measured faster than
# 4 x 4, 6 x 4, 12 x 2 and 14 x 2 on weight and input gradients)
_NN_MB, _NN_NB = 8, 2
_A_BLOCK_BYTES = 1 << 18  # rows of a per call: a block of a stays in the L2 cache


def _dpbf16ps(op: str, a: str, b: str) -> str:
    """The instruction ``{acc} + a . b`` over pairs (``op`` the operand type), for
    :meth:`Emitter.accumulate`."""
    return (f"call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float> {{acc}}, "
            f"{op} {a}, {op} {b})")


def _tile(e: Emitter, mb: int, nb: int, m0: str, n0: str, op: str) -> None:
    """``out[m0:m0+mb, n0:n0+nb]``: the dot products over K, 32 bfloat16 at a time."""
    acc = e.accumulators(mb, nb)

    def as_op(v: str) -> str:  # the loaded bits as the instruction's operand type
        b = e.value()
        e(f"{b} = bitcast <32 x i16> {v} to {op}")
        return b

    def step(k: str, masked: bool) -> None:
        a, w = e.tile_loads(mb, nb, m0, n0, k, 32, "i16", masked, as_op)
        for (i, j), p in acc.items():
            e.accumulate(p, _dpbf16ps(op, a[i], w[j]))

    e.over_k(32, step)
    _reduce_and_store(e, acc, m0, n0)


def _round_to_bf16(e: Emitter, v: str, n: int) -> str:
    """``<n x float>`` ``v`` rounded to the nearest even bfloat16, as ``<n x i16>`` bit patterns:
    add 0x7FFF plus the kept part's lowest bit (a carry into the exponent is the right rounding,
    up to infinity); a NaN stays quiet."""
    vi = f"<{n} x i32>"

    def splat(c: int) -> str:
        return const("i32", [c] * n)
    u, hi, lsb, t, t2, r, mag, nan, q, sel, h = (e.value() for _ in range(11))
    e(f"{u} = bitcast <{n} x float> {v} to {vi}")
    e(f"{hi} = lshr {vi} {u}, {splat(16)}")
    e(f"{lsb} = and {vi} {hi}, {splat(1)}")
    e(f"{t} = add {vi} {u}, {splat(32767)}")
    e(f"{t2} = add {vi} {t}, {lsb}")
    e(f"{r} = lshr {vi} {t2}, {splat(16)}")
    e(f"{mag} = and {vi} {u}, {splat(2147483647)}")
    e(f"{nan} = icmp ugt {vi} {mag}, {splat(2139095040)}")
    e(f"{q} = or {vi} {hi}, {splat(64)}")
    e(f"{sel} = select <{n} x i1> {nan}, {vi} {q}, {vi} {r}")
    e(f"{h} = trunc {vi} {sel} to <{n} x i16>")
    return h


def _reduce_and_store(e: Emitter, acc: dict[tuple[int, int], str], m0: str, n0: str) -> None:
    """Each accumulator's 16 lanes summed (:meth:`Emitter.sum_lanes`) and stored as a bfloat16
    at its ``(i, j)`` of the tile, the sums rounded to the nearest even bfloat16 as one
    vector."""
    v, groups = e.sum_lanes(acc)
    n = len(groups)
    h = _round_to_bf16(e, v, n)
    for lane, (i, j) in enumerate(groups):
        x, col = e.value(), e.value()
        e(f"{x} = extractelement <{n} x i16> {h}, i32 {lane}")
        e(f"{col} = add i64 {n0}, {j}")
        e(f"store i16 {x}, ptr {e.row_ptr('%out', 'i16', m0, i, '%ldo', col)}")


def _over_batch(e: Emitter, operands: list[tuple[str, str, str]], body: Callable[[], None]
                ) -> None:
    """``for i in range(%batch): body()`` with each ``(name, element type, stride)`` of
    ``operands`` the pointer ``%name`` = ``%name0 + i * stride`` inside; then ``ret void``."""
    slot = e.slot("i64", "batch")
    end = e.label("batchdone")

    def one(i: str) -> None:
        for name, ty, stride in operands:
            off = e.value()
            e(f"{off} = mul i64 {i}, {stride}")
            e(f"%{name} = getelementptr {ty}, ptr %{name}0, i64 {off}")
        body()

    e.loop(slot, 0, "%batch", 1, one, end)
    e.start(end)
    e("ret void")


def _nt_source(op: str) -> str:
    """The IR of ``bf16_nt(a, lda, w, ldw, out, ldo, M, N, K, batch, sa, sw, so)`` (every
    pointer to 16-bit elements, every leading dimension and batch stride in elements): ``batch``
    products, the i-th of ``a + i * sa``, ``w + i * sw`` into ``out + i * so``."""
    e = Emitter()

    def matrix() -> None:  # blocks of _NB rows of w, each over blocks of _MB rows of a
        e.tiled("n", "%N", _NB, 1, lambda n0, nb: e.tiled(
            "m", "%M", _MB, 1, lambda m0, mb: _tile(e, mb, nb, m0, n0, op)))

    _over_batch(e, [("a", "i16", "%sa"), ("w", "i16", "%sw"), ("out", "i16", "%so")], matrix)
    iota = ", ".join(f"i32 {i}" for i in range(32))
    return e.function(
        "@bf16_nt(ptr noalias %a0, i64 %lda, ptr noalias %w0, i64 %ldw, ptr noalias %out0, "
        "i64 %ldo, i64 %M, i64 %N, i64 %K, i64 %batch, i64 %sa, i64 %sw, i64 %so)",
        ["%Kv = and i64 %K, -32",  # the whole steps of 32 along K, and the mask of the rest
         "%rem = sub i64 %K, %Kv",
         "%hasrem = icmp ne i64 %rem, 0",
         "%rem32 = trunc i64 %rem to i32",
         "%remv = insertelement <32 x i32> poison, i32 %rem32, i32 0",
         "%rems = shufflevector <32 x i32> %remv, <32 x i32> poison, <32 x i32> zeroinitializer",
         f"%mask = icmp ult <32 x i32> <{iota}>, %rems"])


def _tile_nn(e: Emitter, mb: int, nb: int, m0: str, n0: str, op: str) -> None:
    """``out[m0:m0+mb, n0:n0+16*nb]`` of :func:`_nn_source`: per pair of K, ``nb`` vectors of
    16 packed column pairs of ``b`` and one broadcast pair of ``a`` per row."""
    acc = e.accumulators(mb, nb)
    p_slot = e.slot("i64", "p")
    done = e.label("pdone")

    def pair(p: str) -> None:
        row, start = e.value(), e.value()
        e(f"{row} = mul i64 {p}, %ldb")
        e(f"{start} = add i64 {row}, {n0}")
        cols = []
        for j in range(nb):
            o, ptr, v, b = e.value(), e.value(), e.value(), e.value()
            e(f"{o} = add i64 {start}, {16 * j}")
            e(f"{ptr} = getelementptr i32, ptr %b, i64 {o}")
            e(f"{v} = load <16 x i32>, ptr {ptr}, align 4")
            e(f"{b} = bitcast <16 x i32> {v} to {op}")
            cols.append(b)
        along = e.value()
        e(f"{along} = mul i64 {p}, %sap")
        for i in range(mb):
            r, across, o, ptr, x, a = (e.value() for _ in range(6))
            e(f"{r} = add i64 {m0}, {i}")
            e(f"{across} = mul i64 {r}, %sam")
            e(f"{o} = add i64 {across}, {along}")
            e(f"{ptr} = getelementptr i32, ptr %a, i64 {o}")
            e(f"{x} = load i32, ptr {ptr}, align 4")
            e(f"{a} = bitcast <16 x i32> {e.splat('i32', x)} to {op}")
            for j in range(nb):
                e.accumulate(acc[(i, j)], _dpbf16ps(op, a, cols[j]))

    e.loop(p_slot, 0, "%P", 1, pair, done)
    e.start(done)
    for (i, j), p in acc.items():
        v = e.value()
        e(f"{v} = load <16 x float>, ptr {p}")
        h = _round_to_bf16(e, v, 16)
        r, start, col, o, ptr = (e.value() for _ in range(5))
        e(f"{r} = add i64 {m0}, {i}")
        e(f"{start} = mul i64 {r}, %ldo")
        e(f"{col} = add i64 {n0}, {16 * j}")
        e(f"{o} = add i64 {start}, {col}")
        e(f"{ptr} = getelementptr i16, ptr %out, i64 {o}")
        e(f"store <16 x i16> {h}, ptr {ptr}, align 2")


def _nn_source(op: str) -> str:
    """The IR of ``bf16_nn(a, sam, sap, b, ldb, out, ldo, M, N, P, batch, sa, sb, so)``: ``out``
    (M, N) bfloat16 (``ldo`` in elements, N a multiple of 16) = the product over ``P`` pairs of
    K of ``a``'s pair ``(m, p)``, the 32-bit word ``a[m * sam + p * sap]``, with ``b``'s packed
    pairs, the words ``b[p * ldb + n]``; ``batch`` such products, the i-th of ``a + i * sa``,
    ``b + i * sb`` (32-bit words) into ``out + i * so`` (elements)."""
    e = Emitter()

    def matrix() -> None:  # blocks of 16 * _NN_NB columns, each over blocks of _NN_MB rows
        e.tiled("n", "%N", 16 * _NN_NB, 16, lambda n0, width: e.tiled(
            "m", "%M", _NN_MB, 1, lambda m0, mb: _tile_nn(e, mb, width // 16, m0, n0, op)))

    _over_batch(e, [("a", "i32", "%sa"), ("b", "i32", "%sb"), ("out", "i16", "%so")], matrix)
    return e.function(
        "@bf16_nn(ptr noalias %a0, i64 %sam, i64 %sap, ptr noalias %b0, i64 %ldb, "
        "ptr noalias %out0, i64 %ldo, i64 %M, i64 %N, i64 %P, i64 %batch, i64 %sa, i64 %sb, "
        "i64 %so)")


def _source(op: str) -> str:
    """The module of both kernels; ``op`` is the instruction's operand type (``<32 x bfloat>``
    since LLVM 17ish, ``<16 x i32>`` before)."""
    return "\n".join([
        f"declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, {op}, {op})",
        "declare <32 x i16> @llvm.masked.load.v32i16.p0(ptr, i32, <32 x i1>, <32 x i16>)",
        _nt_source(op),
        _nn_source(op),
    ])


_I64 = ctypes.c_int64
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _I64, ctypes.c_void_p, _I64,
                              ctypes.c_void_p, _I64, _I64, _I64, _I64, _I64, _I64, _I64, _I64)
_NN_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _I64, _I64, ctypes.c_void_p, _I64,
                                 ctypes.c_void_p, _I64, _I64, _I64, _I64, _I64, _I64, _I64,
                                 _I64)


class _Kernels(NamedTuple):
    """The compiled functions (their code lives as long as ``engine``)."""

    nt: Callable[..., None]
    nn: Callable[..., None]
    engine: Any


def _cache_path(key: str) -> str:
    return os.path.join(os.path.dirname(__file__), "__pycache__", f"bf16_dot-{key}.o")


def _compile() -> _Kernels | None:
    """The kernels for this CPU, or None where it cannot run (no llvmlite, no avx512bf16, an LLVM
    that takes neither operand type, or a wrong answer on the check)."""
    llvm, tm, cpu, flat, features = host_target()  # ImportError: build_once says unavailable
    if not features.get("avx512bf16", False):
        return None
    for op in ("<32 x bfloat>", "<16 x i32>"):
        src = _source(op)
        try:
            engine = compile_ir(llvm, tm, src, _cache_path(cache_key(src, cpu, flat)))
        except RuntimeError:  # this LLVM wants the instruction's other operand type
            continue
        kernels = _Kernels(_SIGNATURE(engine.get_function_address("bf16_nt")),
                           _NN_SIGNATURE(engine.get_function_address("bf16_nn")), engine)
        return kernels if _check(kernels) else None
    return None


def _check(kernels: _Kernels) -> bool:
    """Whether the kernels' products equal a float64 product's to bfloat16 rounding (every tile
    shape, a K that is not a multiple of 32, an odd K, columns past a multiple of 16)."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    a = rng.standard_normal((11, 75)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((37, 75)).astype(ml_dtypes.bfloat16)
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    ok = True
    # (K = 74: a read in place by the second kernel; 75: a packed)
    for call, k, b in ((_call, 75, w), (_call_nn, 75, w.T), (_call_nn, 74, w.T)):
        out = np.empty(ref.shape, np.uint16)
        call(kernels, a[None, :, :k].view(np.uint16),
             (b[:k] if b is not w else b)[None].view(np.uint16), out[None])
        want = ref if k == 75 else a[:, :k].astype(np.float64) @ w[:, :k].astype(np.float64).T
        got = out.view(ml_dtypes.bfloat16).astype(np.float64)
        ok = ok and bool(np.allclose(got, want, rtol=2.0 ** -8, atol=1e-5))
    return ok


def _batch_stride(x: np.ndarray, unit: int) -> int:
    """The batch stride of 3-D ``x`` in units of ``unit`` bytes (0: one matrix for every
    product)."""
    return x.strides[0] // unit if x.shape[0] > 1 else 0


def _call(kernels: _Kernels, a: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = a[i] @ w[i].T`` by ``bf16_nt`` for 3-D operands (a batch of 1 broadcast)."""
    fn = kernels.nt
    batch, M, N = out.shape
    K = a.shape[2]
    lda, ldw, ldo = a.strides[1] // 2, w.strides[1] // 2, out.strides[1] // 2
    if batch > 1:  # (small matrices, as attention's: one call for all)
        fn(a.ctypes.data, lda, w.ctypes.data, ldw, out.ctypes.data, ldo, M, N, K, batch,
           _batch_stride(a, 2), _batch_stride(w, 2), _batch_stride(out, 2))
        return
    rows = max(_MB, _A_BLOCK_BYTES // max(1, 2 * K) // _MB * _MB)
    for m0 in range(0, M, rows):
        m = min(rows, M - m0)
        fn(a.ctypes.data + m0 * a.strides[1], lda, w.ctypes.data, ldw,
           out.ctypes.data + m0 * out.strides[1], ldo, m, N, K, 1, 0, 0, 0)


def _pairs(x: np.ndarray, width: int) -> np.ndarray:
    """(B, K, C) 16-bit ``x`` (any strides) as (B, ceil(K/2), width, 2): rows 2p and 2p+1
    interleaved into row p, so that each column's pair of K is one 32-bit word; zeros past K
    and C."""
    n, K, C = x.shape
    out = np.empty((n, (K + 1) // 2, width, 2), np.uint16)
    if K % 2:
        out[:, -1, :, 1] = 0
    if C < width:
        out[:, :, C:] = 0
    out[:, :, :C, 0] = x[:, 0::2]
    out[:, :K // 2, :C, 1] = x[:, 1::2]
    return out


def _call_nn(kernels: _Kernels, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = a[i] @ b[i]`` by ``bf16_nn`` for 3-D operands (a batch of 1 broadcast):
    ``b`` packed by pairs of K, ``a`` read in place when its rows are contiguous pairs of 32-bit
    words (K even, 4-byte aligned), else packed too; the columns padded to a multiple of 16
    (written to a scratch output when ``out``'s are not)."""
    batch, M, N = out.shape
    K = a.shape[2]
    width = (N + 15) // 16 * 16
    bp = _pairs(b, width)
    P = bp.shape[1]
    if K % 2 == 0 and a.strides[2] == 2 and (a.strides[1] % 4 == 0 or M == 1) \
            and (a.strides[0] % 4 == 0 or a.shape[0] == 1) and a.ctypes.data % 4 == 0:
        ap, sam, sap, sa = a, a.strides[1] // 4, 1, _batch_stride(a, 4)
    else:
        ap = _pairs(a.transpose(0, 2, 1), M)
        sam, sap, sa = 1, M, _batch_stride(ap, 4)
    direct = width == N and out.strides[2] == 2
    o = out if direct else np.empty((batch, M, width), np.uint16)
    kernels.nn(ap.ctypes.data, sam, sap, bp.ctypes.data, width, o.ctypes.data,
               o.strides[1] // 2, M, width, P, batch, sa, _batch_stride(bp, 4),
               _batch_stride(o, 2))
    if not direct:
        out[...] = o[:, :, :N]


def _kernel() -> _Kernels | None:
    return build_once(_STATE, _compile, "PORTAGRAD_BF16_DOT")


def available() -> bool:
    """Whether :func:`matmul_nt` and :func:`matmul_nn` run here (compiled on the first call,
    then cached)."""
    return _kernel() is not None


def _as_batches(name: str, a: np.ndarray, b: np.ndarray, out: np.ndarray, b_is_w: bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked 3-D views of 2-D or 3-D operands: ``out`` (batch, M, N); ``a`` and ``b`` of
    ``batch`` matrices or of one (used for every product); ``b`` (K, N), or (N, K) when
    ``b_is_w``."""
    if a.dtype != np.uint16 or b.dtype != np.uint16 or out.dtype != np.uint16:
        raise TypeError(f"{name} takes the uint16 bit patterns of bfloat16 operands and output")
    nd = out.ndim
    if nd not in (2, 3) or a.ndim != nd or b.ndim != nd:
        raise ValueError(f"{name}: operands and output must all be 2-D or all 3-D, got "
                         f"{a.shape}, {b.shape} -> {out.shape}")
    a3, b3, o3 = (a, b, out) if nd == 3 else (a[None], b[None], out[None])
    batch = o3.shape[0]
    K, N = (b3.shape[2], b3.shape[1]) if b_is_w else b3.shape[1:]
    if o3.shape[1:] != (a3.shape[1], N) or a3.shape[2] != K \
            or a3.shape[0] not in (1, batch) or b3.shape[0] not in (1, batch):
        op = ".T" if b_is_w else ""
        raise ValueError(f"{name}: shapes {a.shape} @ {b.shape}{op} -> {out.shape} do not match")
    return a3, b3, o3


def _operands(name: str, a: np.ndarray, b: np.ndarray, out: np.ndarray, b_is_w: bool
              ) -> tuple[_Kernels, np.ndarray, np.ndarray, np.ndarray] | None:
    """(the kernels, ``a``, ``b``, ``out`` as checked 3-D views) for a product to compute, or
    None when there is none (an empty ``out``; zeros written for an empty K)."""
    kernels = _kernel()
    if kernels is None:
        raise RuntimeError("the bfloat16 dot-product kernel is not available here")
    a3, b3, o3 = _as_batches(name, a, b, out, b_is_w)
    if o3.size == 0:
        return None
    if a3.shape[2] == 0:
        o3[...] = 0
        return None
    return kernels, a3, b3, o3


def matmul_nt(a: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ w.T`` rounded to bfloat16: ``a`` (M, K), ``w`` (N, K) and ``out`` (M, N) the
    uint16 bit patterns of bfloat16 arrays whose rows are contiguous (any row stride, a multiple
    of 2 bytes); or 3-D, a batch of such products in one call (``a`` or ``w`` of one matrix
    used for all). Only where :func:`available`."""
    ready = _operands("matmul_nt", a, w, out, True)
    if ready is None:
        return
    kernels, a3, w3, o3 = ready
    # (a column stride is never used along a dimension of size 1: numpy calls such an array
    # contiguous whatever stride it reports there)
    if (a3.strides[2] != 2 and a3.shape[2] > 1) or (w3.strides[2] != 2 and w3.shape[2] > 1) \
            or (o3.strides[2] != 2 and o3.shape[2] > 1):
        raise ValueError("matmul_nt needs rows that are contiguous")
    _call(kernels, a3, w3, o3)


def matmul_nn(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` rounded to bfloat16, as :func:`matmul_nt`'s, for ``a`` (M, K) and ``b``
    (K, N) of any strides (a weight gradient ``g.T @ x``, an input gradient ``g @ W``), or 3-D
    batches of them: ``b`` is packed by pairs of K (a streaming copy, where a transposed one
    runs at a fraction of memory speed), ``a`` read in place or packed alike. ``out`` (M, N)
    needs contiguous rows. Only where :func:`available`."""
    ready = _operands("matmul_nn", a, b, out, False)
    if ready is None:
        return
    kernels, a3, b3, o3 = ready
    if o3.strides[2] != 2 and o3.shape[2] > 1:
        raise ValueError("matmul_nn needs an output whose rows are contiguous")
    _call_nn(kernels, a3, b3, o3)
