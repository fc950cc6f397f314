"""float32 products of a few rows against a weight read once (optional, AVX-512 hosts).

``out = a @ w.T`` for float32 ``a`` (M, K) of a few rows and a weight ``w`` (N, K) with
contiguous rows: a decoder's linear layers at a small batch. OpenBLAS packs each block of the
weight before multiplying it, so a weight streamed from memory (hundreds of MiB per generated
token) crosses the memory bus more than once; here each 4-row block of ``w`` is loaded once and
multiplied by every row of ``a`` (which stays in the L1 cache) in registers: 4 x 4 tiles of
float32 FMAs, 16 lanes of K per instruction, the last ``K % 16`` by masked loads, each tile's
sixteen accumulators summed together by a transposing reduction (as ``bf16_dot``'s kernel).
The sums are reassociated (lanes of K), so the last bits may differ from BLAS's.

Written in LLVM IR (llvmlite, installed with numba: the ``fast`` extra) for the host CPU and
cached in ``__pycache__`` (:mod:`.llvm_jit`). :func:`available` is False without llvmlite, on a
CPU without AVX-512F, with ``PORTAGRAD_F32_DOT=0`` or ``PORTAGRAD_NUMBA=0``, or when the compiled
kernel fails its check against a float64 product; callers then keep BLAS.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .jit import build_once
from .llvm_jit import Emitter, cache_key, compile_ir, host_target

__all__ = ["available", "matmul_nt"]

_STATE: list[Any] = []
_MB, _NB = 4, 4  # rows of a, rows of w per register tile


def _fma(a: str, b: str) -> str:
    return (f"call <16 x float> @llvm.fma.v16f32(<16 x float> {a}, <16 x float> {b}, "
            f"<16 x float> {{acc}})")


def _tile(e: Emitter, mb: int, nb: int, m0: str, n0: str) -> None:
    """``out[m0:m0+mb, n0:n0+nb]``: the dot products over K, 16 floats at a time."""
    acc = e.accumulators(mb, nb)

    def step(k: str, masked: bool) -> None:
        a, w = e.tile_loads(mb, nb, m0, n0, k, 16, "float", masked)
        for (i, j), p in acc.items():
            e.accumulate(p, _fma(a[i], w[j]))

    e.over_k(16, step)
    _reduce_and_store(e, acc, m0, n0)


def _reduce_and_store(e: Emitter, acc: dict[tuple[int, int], str], m0: str, n0: str) -> None:
    """Each accumulator's 16 lanes summed (:meth:`Emitter.sum_lanes`) and stored at its
    ``(i, j)`` of the tile."""
    v, groups = e.sum_lanes(acc)
    n = len(groups)
    for lane, (i, j) in enumerate(groups):
        x, col = e.value(), e.value()
        e(f"{x} = extractelement <{n} x float> {v}, i32 {lane}")
        e(f"{col} = add i64 {n0}, {j}")
        e(f"store float {x}, ptr {e.row_ptr('%out', 'float', m0, i, '%ldo', col)}")


def _source() -> str:
    """The IR of ``f32_nt(a, lda, w, ldw, out, ldo, M, N, K)`` (leading dimensions in
    elements): blocks of 4 rows of ``w`` outside, every block of ``a``'s rows inside."""
    e = Emitter()
    e.tiled("n", "%N", _NB, 1, lambda n0, nb: e.tiled(
        "m", "%M", _MB, 1, lambda m0, mb: _tile(e, mb, nb, m0, n0)))
    e("ret void")
    iota = ", ".join(f"i32 {i}" for i in range(16))
    fn = e.function(
        "@f32_nt(ptr noalias %a, i64 %lda, ptr noalias %w, i64 %ldw, ptr noalias %out, "
        "i64 %ldo, i64 %M, i64 %N, i64 %K)",
        ["%Kv = and i64 %K, -16",  # the whole steps of 16 along K, and the mask of the rest
         "%rem = sub i64 %K, %Kv",
         "%hasrem = icmp ne i64 %rem, 0",
         "%rem32 = trunc i64 %rem to i32",
         "%remv = insertelement <16 x i32> poison, i32 %rem32, i32 0",
         "%rems = shufflevector <16 x i32> %remv, <16 x i32> poison, <16 x i32> zeroinitializer",
         f"%mask = icmp ult <16 x i32> <{iota}>, %rems"])
    return "\n".join([
        "declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)",
        "declare <16 x float> @llvm.masked.load.v16f32.p0(ptr, i32, <16 x i1>, <16 x float>)",
        fn])


_I64 = ctypes.c_int64
_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _I64, ctypes.c_void_p, _I64,
                              ctypes.c_void_p, _I64, _I64, _I64, _I64)


class _Kernel(NamedTuple):
    nt: Callable[..., None]
    engine: Any  # (the code lives as long as it)


def _compile() -> _Kernel | None:
    """The kernel for this CPU, or None (no llvmlite, no AVX-512F, a wrong answer on the check)."""
    llvm, tm, cpu, flat, features = host_target()  # ImportError: build_once says unavailable
    if not features.get("avx512f", False):
        return None
    src = _source()
    path = os.path.join(os.path.dirname(__file__), "__pycache__",
                        f"f32_dot-{cache_key(src, cpu, flat)}.o")
    engine = compile_ir(llvm, tm, src, path)
    kernel = _Kernel(_SIGNATURE(engine.get_function_address("f32_nt")), engine)
    return kernel if _check(kernel) else None


def _check(kernel: _Kernel) -> bool:
    """Whether the kernel's products equal a float64 product's to float32 rounding (every tile
    shape, K past a multiple of 16, a row stride that is not K)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((11, 40)).astype(np.float32)[:, :37]
    w = rng.standard_normal((7, 37)).astype(np.float32)
    out = np.empty((11, 7), np.float32)
    _call(kernel, a, w, out)
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    return bool(np.allclose(out, ref, rtol=1e-5, atol=1e-5))


def _call(kernel: _Kernel, a: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    M, K = a.shape
    kernel.nt(a.ctypes.data, a.strides[0] // 4, w.ctypes.data, w.strides[0] // 4,
              out.ctypes.data, out.strides[0] // 4, M, w.shape[0], K)


def _kernel() -> _Kernel | None:
    return build_once(_STATE, _compile, "PORTAGRAD_F32_DOT")


def available() -> bool:
    """Whether :func:`matmul_nt` runs here (compiled on the first call, then cached)."""
    return _kernel() is not None


def matmul_nt(a: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ w.T`` for float32 ``a`` (M, K), ``w`` (N, K) and ``out`` (M, N), each with
    contiguous rows (any row stride), K >= 1. Only where :func:`available`."""
    kernel = _kernel()
    if kernel is None:
        raise RuntimeError("the float32 few-row kernel is not available here")
    M, K = a.shape
    N = w.shape[0]
    if a.dtype != np.float32 or w.dtype != np.float32 or out.dtype != np.float32:
        raise TypeError("matmul_nt takes float32 operands and output")
    if w.shape[1] != K or out.shape != (M, N) or K < 1:
        raise ValueError(f"matmul_nt: shapes {a.shape} @ {w.shape}.T -> {out.shape} do not match")
    for x in (a, w, out):
        if x.strides[1] != 4 and x.shape[1] > 1 or x.strides[0] % 4:
            raise ValueError("matmul_nt needs rows that are contiguous")
    _call(kernel, a, w, out)
