"""The short-time Fourier transform and its inverse: ``stft`` and ``istft`` (PyTorch 2.13's).

Both are compositions, so they run wherever complex tensors and the Fourier transforms do and are
differentiable through them: ``stft`` pads the signal (``center``), cuts it into frames with
:func:`~portagrad._ops.rearrange.unfold` (overlapping views), multiplies each by the window and
transforms the frames along their last axis; ``istft`` transforms back, multiplies by the window
again, overlap-adds the frames (``index_add``) and divides by the overlap-added squared window,
refusing (as PyTorch: the "NOLA" condition) when that envelope has a zero in the kept part.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import _creation, _dtype
from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .._tensor import Tensor
from ..backends.interface import decline_complex
from . import complexnum, elementwise, reduction, shape
from .fft import c2c, c2r, r2c
from .indexing import index_add, index_select
from .joining import cat
from .rearrange import unfold

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
# PyTorch warns once per process when no window is given (a rectangular one is used)
_WARNED = {"stft": False, "istft": False}
_NO_WINDOW = {
    "stft": "A window was not provided. A rectangular window will be applied,which is known to "
            "cause spectral leakage. Other windows such as torch.hann_window or "
            "torch.hamming_window are recommended to reduce spectral leakage.To suppress this "
            "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
            "device=<device>)`.",
    "istft": "A window was not provided. A rectangular window will be applied.Please provide the "
             "same window used by stft to make the inversion lossless.To suppress this warning "
             "and use a rectangular window, explicitly set `window=torch.ones(n_fft, "
             "device=<device>)`."}


def _warn_no_window(name: str) -> None:
    if not _WARNED[name]:
        _WARNED[name] = True
        warnings.warn(_NO_WINDOW[name], UserWarning, stacklevel=3)


def _real_dtype(x: Tensor, window: Tensor | None) -> Any:
    """The real dtype the transform computes in: the input's and the window's promoted (a
    float64 window makes a float32 signal's result complex128, as PyTorch's)."""
    dt = x.dtype if window is None else _dtype.promote_types(x.dtype, window.dtype)
    return dt.to_real()


def _tname(t: Tensor) -> str:
    """PyTorch's legacy type name in its error messages (``torch.DoubleTensor``)."""
    return f"torch.{_dtype.SCALAR_TYPE_NAMES.get(t.dtype.name, t.dtype.name.capitalize())}Tensor"


def _opt(v: Any) -> str:
    return "None" if v is None else str(int(v)) if isinstance(v, bool) else str(v)


def _window_repr(window: Tensor | None) -> str:
    return "None" if window is None else f"{_tname(window)}{{{list(window.shape)}}}"


def _pad_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source positions of a length-``n`` axis padded by ``lo``/``hi`` (reflect: the edge not
    repeated; replicate: the edge repeated; circular: wrapped)."""
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        return np.where(pos >= n, period - pos, pos)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    return pos % n  # circular


def _pad_signal(x: Tensor, pad: int, mode: str) -> Tensor:
    """``x`` padded by ``pad`` on both ends of its last axis, as ``F.pad`` on the 3-D view
    ``stft`` gives it (the errors name that view's shape, as PyTorch's)."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n = x.shape[-1]
    view = [1] * (3 - x.dim()) + list(x.shape)
    if mode == "reflect" and pad >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                           f"input dimension, but got: padding ({pad}, {pad}) at dimension 2 of "
                           f"input {view}")
    if mode == "circular" and pad > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "constant":
        zeros = _creation.zeros(tuple(x.shape[:-1]) + (pad,), dtype=x.dtype, device=x.device)
        return cat([zeros, x, zeros], -1)
    idx = _creation.tensor(_pad_index(n, pad, pad, mode), dtype=_dtype.int64, device=x.device)
    return index_select(x, -1, idx)


def _padded_window(window: Tensor | None, win_length: int, n_fft: int, dtype: Any,
                   device: Any) -> Tensor:
    """The window (ones when ``None``) in ``dtype``, zero-padded on both sides to ``n_fft``
    (PyTorch centres a shorter window in the frame)."""
    w = _creation.ones((win_length,), dtype=dtype, device=device) if window is None else \
        (window if window.dtype is dtype else window.to(dtype))
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        w = cat([_creation.zeros((left,), dtype=dtype, device=device), w,
                 _creation.zeros((n_fft - win_length - left,), dtype=dtype, device=device)], 0)
    return w


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of the 1-D signal (or batch of signals, 2-D) ``input``:
    ``(..., n_freq, n_frames)`` complex, frame ``t`` the DFT of ``input[t * hop : t * hop +
    n_fft] * window`` (the window, ``win_length`` long, centred in the frame). ``center`` pads
    ``n_fft // 2`` on both sides first (``pad_mode``); ``normalized`` scales by ``n_fft^-1/2``;
    ``onesided`` (the default for real input and window) keeps ``n_fft // 2 + 1`` frequencies;
    ``align_to_window`` (``center=False`` only) starts frame ``t`` so that the window, not the
    frame, begins at ``t * hop``. A real input needs ``return_complex`` (``False``, deprecated,
    gives ``view_as_real`` of the result), as PyTorch 2.13."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "stft", stft, input, n_fft, hop_length=hop_length, win_length=win_length,
            window=window, center=center, pad_mode=pad_mode, normalized=normalized,
            onesided=onesided, return_complex=return_complex,
            align_to_window=align_to_window)) is not _SKIP:
        return _ac_out
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    x = input
    if center and x.dim() in (1, 2, 3):  # (PyTorch pads a 3-D input too, then refuses it)
        x = _pad_signal(x, n_fft // 2, pad_mode)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    head = (f"stft({_tname(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, normalized={_opt(normalized)}, "
            f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
            f"align_to_window={_opt(align_to_window)}) : ")
    complex_in = x.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not complex_in:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, "
                           "and will further require that return_complex=True in a future "
                           "PyTorch release.")
    if x.dim() not in (1, 2):
        raise RuntimeError(head + "expected a 1D or 2D tensor")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(head + "expected a tensor of floating point or complex values")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(head + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(head + f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(head + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(head + f"expected a 1D window tensor of size equal to win_length={win}, "
                                  f"but got window with size {list(window.shape)}")
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if x.dtype in (_dtype.float16, _dtype.bfloat16):
        raise RuntimeError(f"Unsupported dtype {elementwise._type_name(x.dtype)}")
    real = _real_dtype(x, window)
    if window is None:
        _warn_no_window("stft")
    # the result is complex: a device that declines complex refuses before computing anything
    decline_complex(x._storage.backend, real.to_complex(), x._storage.device)
    if window is not None and window.dtype.is_complex:
        x = x.to(real.to_complex())
    elif x.dtype is not (real.to_complex() if x.dtype.is_complex else real):
        x = x.to(real.to_complex() if x.dtype.is_complex else real)
    batched = x.dim() == 2
    xb = x if batched else shape.unsqueeze(x, 0)
    wdt = real.to_complex() if window is not None and window.dtype.is_complex else real
    if align_to_window:
        # frames of the window's length from t * hop, the window applied, then centred in n_fft
        frames = unfold(xb, -1, win, hop)
        w = _creation.ones((win,), dtype=wdt, device=x.device) if window is None else \
            (window if window.dtype is wdt else window.to(wdt))
        frames = frames * w
        if win < n_fft:
            left = (n_fft - win) // 2
            lead = tuple(frames.shape[:-1])
            frames = cat([_creation.zeros(lead + (left,), dtype=frames.dtype, device=x.device),
                          frames,
                          _creation.zeros(lead + (n_fft - win - left,), dtype=frames.dtype,
                                          device=x.device)], -1)
    else:
        frames = unfold(xb, -1, n_fft, hop) * _padded_window(window, win, n_fft, wdt, x.device)
    if frames.dtype.is_complex:  # (then onesided is False: refused above)
        spec = c2c(frames, (frames.dim() - 1,), True)
    else:
        spec = r2c(frames, (frames.dim() - 1,), bool(onesided))
    if normalized:
        spec = elementwise.mul(spec, 1.0 / math.sqrt(n_fft))
    out = shape.transpose(spec, -1, -2)  # (B, n_freq, n_frames)
    if not batched:
        out = shape.squeeze(out, 0)
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, "
                      "stft will return complex tensors for all inputs, and return_complex=False "
                      "will raise an error.\nNote: you can still call torch.view_as_real on the "
                      "complex output to recover the old return format.", UserWarning,
                      stacklevel=2)
        return complexnum.view_as_real(out)
    return out


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`: the complex ``(..., n_freq, n_frames)`` spectrogram back to
    signals by inverse transforms of the frames, windowed and overlap-added, divided by the
    overlap-added squared window. ``onesided`` defaults to ``n_freq != n_fft``; ``center``
    drops the ``n_fft // 2`` padded samples at both ends; ``length`` trims the result or pads it
    with zeros; ``return_complex`` keeps complex frames (two-sided input only). A window whose
    overlap-added square is (near) zero somewhere in the result cannot be inverted and raises
    ``RuntimeError`` (PyTorch's NOLA check)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    ctype = "ComplexFloat" if input.dtype is _dtype.complex64 else "ComplexDouble"
    head = (f"istft(CPU{ctype}Type{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, center={_opt(bool(center))}, "
            f"normalized={_opt(bool(normalized))}, onesided={_opt(onesided)}, "
            f"length={_opt(length)}, return_complex={_opt(bool(return_complex))}) ")
    if input.dim() not in (2, 3):
        raise RuntimeError(head + f": expected a tensor with 3 or 4 dimensions, but got "
                                  f"{input.dim() + 1}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(head + f": expected 0 < win_length <= n_fft, but got "
                                  f"win_length={win}")
    if hop <= 0 or hop > win:
        raise RuntimeError(head + ": expected 0 < hop_length <= win_length")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(head + f": expected a 1D window tensor of size equal to "
                                  f"win_length={win}, but got window with size "
                                  f"{list(window.shape)}")
    fft_size = input.shape[-2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and fft_size != n_fft // 2 + 1:
        raise RuntimeError(head + f": expected the frequency dimension (3rd to the last) of the "
                                  f"input tensor to match n_fft / 2 + 1 when onesided=True, but "
                                  f"got {fft_size}")
    if not onesided and fft_size != n_fft:
        raise RuntimeError(head + f": expected the frequency dimension (3rd to the last) of the "
                                  f"input tensor to match n_fft when onesided=False, but got "
                                  f"{fft_size}")
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if not return_complex and window is not None and window.dtype.is_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    real = _real_dtype(input, window)
    if window is None:
        _warn_no_window("istft")
    if input.dtype is not real.to_complex():
        input = input.to(real.to_complex())
    batched = input.dim() == 3
    spec = input if batched else shape.unsqueeze(input, 0)
    spec = shape.transpose(spec, -1, -2)  # (B, n_frames, fft_size)
    n_frames = spec.shape[-2]
    last = spec.dim() - 1
    if return_complex:
        frames = c2c(spec, (last,), False)
    else:
        if not onesided:
            spec = shape.narrow(spec, -1, 0, n_fft // 2 + 1)
        frames = c2r(spec, (last,), n_fft)
    # the inverse transform's 1/n (normalized: 1/sqrt(n), the forward having divided the other)
    frames = elementwise.mul(frames, 1.0 / (math.sqrt(n_fft) if normalized else n_fft))
    wdt = window.dtype if window is not None and window.dtype.is_complex else real
    w = _padded_window(window, win, n_fft, wdt, input.device)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    pos = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    idx = _creation.tensor(pos, dtype=_dtype.int64, device=input.device)
    B = frames.shape[0]
    y = index_add(_creation.zeros((B, total), dtype=frames.dtype, device=input.device), -1, idx,
                  shape.reshape(frames, (B, n_frames * n_fft)))
    w2 = complexnum.real(w * complexnum.conj(w)) if w.dtype.is_complex else w * w
    env = index_add(_creation.zeros((total,), dtype=real, device=input.device), 0, idx,
                    shape.reshape(w2.expand((n_frames, n_fft)), (n_frames * n_fft,)))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    stop = max(min(end, total), start)
    y = shape.narrow(y, -1, start, stop - start)
    env = shape.narrow(env, 0, start, stop - start)
    if env.numel() == 0 or float(reduction.amin(elementwise.abs(env)).item()) < 1e-11:
        raise RuntimeError(head + "window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / env
    if not batched:
        y = shape.squeeze(y, 0)
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        tail = _creation.zeros(tuple(y.shape[:-1]) + (end - total,), dtype=y.dtype,
                               device=input.device)
        y = cat([y, tail], -1)
    return y
