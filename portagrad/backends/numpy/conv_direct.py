"""Direct float32 convolution for small planes: an LLVM IR kernel, no im2col (optional).

A convolution whose output planes are small (a digits CNN's 8x8 and 4x4) is a GEMM of
``(N*OH*OW, C*kh*kw) x (C*kh*kw, O)`` that OpenBLAS runs at its peak, but the copies around it
(the zero-bordered channels-last input, the im2col matrix, the transposed output) cost half as
much again. This kernel reads the zero-padded input in place instead: for a tile of 8 output
positions by 32 output channels it keeps 16 accumulators of 16 floats in registers and, for
each of the ``K = C*kh*kw`` taps, multiplies the two vectors of the tap's packed weights by the
8 positions' input values, each broadcast from its offset (``koff[k]`` of the tap plus
``poff[p]`` of the position, both tables built once per geometry). Each output is one fused
multiply-add chain over the taps in order; results are stored straight into the (N, O, OH, OW)
output. The weight gradient is the same kernel with the roles turned
(:func:`conv2d_grad_weight`): its tiles are 8 taps by 32 channels, its sum runs over every
image's positions, the output gradient in positions-major rows taking the weights' place.

Written in LLVM IR (:mod:`.llvm_jit`) so the accumulators stay in registers (numba keeps them in
memory); compiled for the host CPU where it has AVX-512 (32 vector registers for the tile) and
llvmlite is installed (the ``fast`` extra), else :func:`available` is False and convolutions keep
im2col. ``PORTAGRAD_CONV_DIRECT=0`` (or ``PORTAGRAD_NUMBA=0``) turns it off.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .jit import build_once
from .layout import padded_extent
from .llvm_jit import Emitter, cache_key, compile_ir, host_target

__all__ = ["available", "conv2d", "conv2d_grad_weight", "fits"]

_STATE: list[Any] = []
_MB, _NB = 8, 2  # output positions, vectors of 16 output channels per register tile
#: packed weights of at most this many bytes (K x O rounded up to 16): they stay in the L2
#: cache while every image's positions stream past; larger layers keep im2col's GEMM
_MAX_WEIGHT_BYTES = 1 << 18
#: output positions per image up to which the kernel is used (measured faster than im2col +
#: GEMM at 16 and 64; larger planes amortise im2col's copies over wider GEMMs)
_MAX_POSITIONS = 64


def _tile(e: Emitter, mb: int, nb: int, o0: str, p0: str, xn: str, on: str) -> None:
    """``out[n, o0:o0+16*nb, p0:p0+mb]`` over all K taps (``xn``, ``on``: image n's input and
    output)."""
    acc = e.accumulators(mb, nb)
    rows = []  # each position's offset into the image
    for i in range(mb):
        q, ptr, off = e.value(), e.value(), e.value()
        e(f"{q} = add i64 {p0}, {i}")
        e(f"{ptr} = getelementptr i64, ptr %poff, i64 {q}")
        e(f"{off} = load i64, ptr {ptr}")
        rows.append(off)
    k_slot = e.slot("i64", "k")
    done = e.label("kdone")

    def tap(k: str) -> None:
        kp, ko, wrow, wstart = e.value(), e.value(), e.value(), e.value()
        e(f"{kp} = getelementptr i64, ptr %koff, i64 {k}")
        e(f"{ko} = load i64, ptr {kp}")
        e(f"{wrow} = mul i64 {k}, %ldw")
        e(f"{wstart} = add i64 {wrow}, {o0}")
        ws = []
        for j in range(nb):
            o, ptr, v = e.value(), e.value(), e.value()
            e(f"{o} = add i64 {wstart}, {16 * j}")
            e(f"{ptr} = getelementptr float, ptr %w, i64 {o}")
            e(f"{v} = load <16 x float>, ptr {ptr}, align 4")
            ws.append(v)
        for i in range(mb):
            o, ptr, x = e.value(), e.value(), e.value()
            e(f"{o} = add i64 {rows[i]}, {ko}")
            e(f"{ptr} = getelementptr float, ptr {xn}, i64 {o}")
            e(f"{x} = load float, ptr {ptr}, align 4")
            splat = e.splat("float", x)
            for j in range(nb):
                e.accumulate(acc[(i, j)], f"call <16 x float> @llvm.fma.v16f32(<16 x float> "
                                          f"{splat}, <16 x float> {ws[j]}, <16 x float> {{acc}})")

    e.loop(k_slot, 0, "%K", 1, tap, done)
    e.start(done)
    for (i, j), p in acc.items():
        v = e.value()
        e(f"{v} = load <16 x float>, ptr {p}")
        q = e.value()
        e(f"{q} = add i64 {p0}, {i}")
        for lane in range(16):
            ch, start, o, ptr, x = (e.value() for _ in range(5))
            e(f"{ch} = add i64 {o0}, {16 * j + lane}")
            e(f"{start} = mul i64 {ch}, %P")
            e(f"{o} = add i64 {start}, {q}")
            e(f"{ptr} = getelementptr float, ptr {on}, i64 {o}")
            e(f"{x} = extractelement <16 x float> {v}, i32 {lane}")
            e(f"store float {x}, ptr {ptr}, align 4")


def _source() -> str:
    """The IR of ``conv_direct(x, sx, w, ldw, out, so, koff, poff, N, P, K, O)``: for each image
    n, ``out + n*so`` (O, P) = the taps ``k`` of ``x + n*sx`` at ``poff[p] + koff[k]`` times the
    packed weights ``w[k*ldw + o]`` (O a multiple of 16; every offset in floats)."""
    e = Emitter()

    def images(o0: str, width: int) -> None:  # a block of output channels, image by image
        n_slot = e.slot("i64", "img")
        images_done = e.label("imgdone")

        def image(n: str) -> None:
            xo, xn, oo, on = e.value(), e.value(), e.value(), e.value()
            e(f"{xo} = mul i64 {n}, %sx")
            e(f"{xn} = getelementptr float, ptr %x, i64 {xo}")
            e(f"{oo} = mul i64 {n}, %so")
            e(f"{on} = getelementptr float, ptr %out, i64 {oo}")
            e.tiled("pos", "%P", _MB, 1,
                    lambda p0, mb: _tile(e, mb, width // 16, o0, p0, xn, on))

        e.loop(n_slot, 0, "%N", 1, image, images_done)
        e.start(images_done)

    e.tiled("och", "%O", 16 * _NB, 16, images)
    e("ret void")
    return "\n".join([
        "declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)",
        e.function("@conv_direct(ptr noalias %x, i64 %sx, ptr noalias %w, i64 %ldw, "
                   "ptr noalias %out, i64 %so, ptr noalias %koff, ptr noalias %poff, i64 %N, "
                   "i64 %P, i64 %K, i64 %O)"),
    ])


_I64, _PTR = ctypes.c_int64, ctypes.c_void_p
_SIGNATURE = ctypes.CFUNCTYPE(None, _PTR, _I64, _PTR, _I64, _PTR, _I64, _PTR, _PTR, _I64, _I64,
                              _I64, _I64)


class _Kernel(NamedTuple):
    fn: Callable[..., None]
    engine: Any  # the compiled code lives as long as the engine


def _cache_path(key: str) -> str:
    return os.path.join(os.path.dirname(__file__), "__pycache__", f"conv_direct-{key}.o")


def _compile() -> _Kernel | None:
    """The kernel for this CPU, or None (no llvmlite, no AVX-512, or a wrong answer on the
    check)."""
    llvm, tm, cpu, flat, features = host_target()  # ImportError: build_once says unavailable
    if not features.get("avx512f", False):
        return None
    src = _source()
    engine = compile_ir(llvm, tm, src, _cache_path(cache_key(src, cpu, flat)))
    k = _Kernel(_SIGNATURE(engine.get_function_address("conv_direct")), engine)
    return k if _check(k) else None


def _check(k: _Kernel) -> bool:
    """Whether the kernel's convolution equals a float64 one (tiles with positions and channels
    left over, padding and a stride)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((20, 3, 3, 2)).astype(np.float32)
    out = np.empty((2, 20, 4, 5), np.float32)
    _run(k, x, w, out, (2, 1), (1, 0), (1, 2))
    want = _reference(x.astype(np.float64), w.astype(np.float64), (2, 1), (1, 0), (1, 2),
                      out.shape[2:])
    return bool(np.allclose(out, want, rtol=1e-5, atol=1e-5))


def _reference(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int],
               dilation: tuple[int, int], osz: tuple[int, ...]) -> np.ndarray:
    """A plain loop over the taps (the check's reference)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    OH, OW = osz
    xp = np.zeros((N, C, H + 2 * ph + sh * OH + dh * kh, W + 2 * pw + sw * OW + dw * kw))
    xp[:, :, ph:ph + H, pw:pw + W] = x
    out = np.zeros((N, O, OH, OW))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh:i * dh + sh * OH:sh, j * dw:j * dw + sw * OW:sw]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, i, j])
    return out


def _kernel() -> _Kernel | None:
    return build_once(_STATE, _compile, "PORTAGRAD_CONV_DIRECT")


def available() -> bool:
    """Whether :func:`conv2d` runs here (compiled on the first call, then cached)."""
    return _kernel() is not None


def _required_kernel() -> _Kernel:
    k = _kernel()
    if k is None:
        raise RuntimeError("the direct convolution kernel is not available here")
    return k


def _padded_channels(O: int) -> int:
    """``O`` output channels rounded up to the kernel's vectors of 16."""
    return (O + 15) // 16 * 16


def fits(C: int, kh: int, kw: int, O: int, positions: int) -> bool:
    """Whether a float32 convolution of these sizes takes this kernel: small output planes and
    packed weights that stay in the cache (and the kernel available)."""
    return (0 < positions <= _MAX_POSITIONS
            and C * kh * kw * _padded_channels(O) * 4 <= _MAX_WEIGHT_BYTES and available())


_OFFSETS: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}


def _offsets(C: int, kh: int, kw: int, Hq: int, Wq: int, OH: int, OW: int,
             stride: tuple[int, int], dilation: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(koff, poff): each tap's offset into a padded (C, Hq, Wq) image, in (c, i, j) order, and
    each output position's, in (y, x) order; kept per geometry (a model has a few)."""
    key = (C, kh, kw, Hq, Wq, OH, OW, *stride, *dilation)
    got = _OFFSETS.get(key)
    if got is None:
        (sh, sw), (dh, dw) = stride, dilation
        c, i, j = np.meshgrid(np.arange(C), np.arange(kh), np.arange(kw), indexing="ij")
        koff = (c * Hq * Wq + i * dh * Wq + j * dw).reshape(-1).astype(np.int64)
        y, x = np.meshgrid(np.arange(OH), np.arange(OW), indexing="ij")
        poff = (y * sh * Wq + x * sw).reshape(-1).astype(np.int64)
        if len(_OFFSETS) > 64:
            _OFFSETS.clear()
        got = _OFFSETS[key] = (koff, poff)
    return got


def _padded(x: np.ndarray, kh: int, kw: int, osz: tuple[int, int], stride: tuple[int, int],
            padding: tuple[int, int], dilation: tuple[int, int]) -> np.ndarray:
    """``x`` (N, C, H, W) as a C-contiguous float32 (N, C, Hq, Wq) zero-padded to hold every
    window of the output ``osz`` (and the input at its offset): ``x`` itself where it is so."""
    N, C, H, W = x.shape
    ph, pw = padding
    Hq, Wq = padded_extent((H, W), (kh, kw), osz, stride, padding, dilation)
    if (Hq, Wq) == (H, W) and x.flags.c_contiguous:
        return x
    # (zeros and one copy: faster than zeroing the border of a pooled buffer by slices)
    xp = np.zeros((N, C, Hq, Wq), np.float32)
    xp[:, :, ph:ph + H, pw:pw + W] = x
    return xp


def _run(k: _Kernel, x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: tuple[int, int],
         padding: tuple[int, int], dilation: tuple[int, int]) -> None:
    N, C = x.shape[:2]
    O, _, kh, kw = w.shape
    OH, OW = out.shape[2:]
    xp = _padded(x, kh, kw, (OH, OW), stride, padding, dilation)
    Hq, Wq = xp.shape[2:]
    K, opad = C * kh * kw, _padded_channels(O)
    wt = np.zeros((K, opad), np.float32)
    wt[:, :O] = w.reshape(O, K).T
    koff, poff = _offsets(C, kh, kw, Hq, Wq, OH, OW, stride, dilation)
    direct = opad == O and out.flags.c_contiguous
    o = out if direct else np.empty((N, opad, OH, OW), np.float32)
    P = OH * OW
    k.fn(xp.ctypes.data, C * Hq * Wq, wt.ctypes.data, opad, o.ctypes.data, opad * P,
         koff.ctypes.data, poff.ctypes.data, N, P, K, opad)
    if not direct:
        out[...] = o[:, :O]


def conv2d(x: np.ndarray, w: np.ndarray, out: np.ndarray, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int]) -> None:
    """``out`` (N, O, OH, OW) = the float32 convolution (groups 1) of ``x`` (N, C, H, W) with
    ``w`` (O, C, kh, kw), any strides of ``x`` and ``w``. Only where :func:`available`."""
    k = _required_kernel()
    if out.size == 0:
        return
    if w.shape[1] * w.shape[2] * w.shape[3] == 0:
        out[...] = 0
        return
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    _run(k, x, w, out, (sh, sw), (ph, pw), (dh, dw))


def _run_grad_weight(k: _Kernel, x: np.ndarray, g: np.ndarray, out: np.ndarray,
                     stride: tuple[int, int], padding: tuple[int, int],
                     dilation: tuple[int, int]) -> None:
    # the same kernel with the roles turned: its "positions" are the taps k (the output
    # dW[o, k] at o*K + k), its sum runs over every (image, position) row r, the input at
    # rowoff[r] + koff[k], the "weights" the gradient g in positions-major (N*P, O) rows
    N, C = x.shape[:2]
    O, _, kh, kw = out.shape
    OH, OW = g.shape[2:]
    xp = _padded(x, kh, kw, (OH, OW), stride, padding, dilation)
    Hq, Wq = xp.shape[2:]
    K, P, opad = C * kh * kw, OH * OW, _padded_channels(O)
    gt = np.zeros((N, P, opad), np.float32)
    gt[:, :, :O] = g.reshape(N, O, P).transpose(0, 2, 1)
    koff, poff = _offsets(C, kh, kw, Hq, Wq, OH, OW, stride, dilation)
    rows = (np.arange(N, dtype=np.int64)[:, None] * (C * Hq * Wq) + poff).reshape(-1)
    direct = opad == O and out.flags.c_contiguous
    o = out if direct else np.empty((opad, C, kh, kw), np.float32)
    k.fn(xp.ctypes.data, 0, gt.ctypes.data, opad, o.ctypes.data, 0, rows.ctypes.data,
         koff.ctypes.data, 1, K, N * P, opad)
    if not direct:
        out[...] = o[:O]


def conv2d_grad_weight(x: np.ndarray, g: np.ndarray, out: np.ndarray, stride: Sequence[int],
                       padding: Sequence[int], dilation: Sequence[int]) -> None:
    """``out`` (O, C, kh, kw) = the weight gradient of the float32 convolution (groups 1) of
    ``x`` (N, C, H, W) whose output gradient is ``g`` (N, O, OH, OW): each element one fused
    multiply-add chain over the images' positions in order. Only where :func:`available`."""
    k = _required_kernel()
    if out.size == 0:
        return
    if g.size == 0:
        out[...] = 0
        return
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    _run_grad_weight(k, x, g, out, (sh, sw), (ph, pw), (dh, dw))
