"""Batched discrete Fourier transforms on OpenCL buffers (the kernels of :mod:`.fft_kernels`).

The functions here take a :class:`~.devices.Device` and *contiguous* interleaved complex buffers
(numpy's complex64/complex128 layout) given as ``(pyopencl.Buffer, offset)`` pairs, the offset
in elements, and enqueue without waiting. A transform over several axes is one axis at a time.

Per axis of size ``n``:

* ``n`` whose prime factors are all in 2, 3, 5, 7: Stockham autosort passes of radix 8, 4 and 2
  for the powers of two, then 3, 5, 7. Up to :func:`local_shape`'s longest line (4096 on CPU
  devices) every pass of a line runs in local memory in ONE launch (``fft_local``, a work-group
  per line); longer lines take one launch per pass, reading and writing the whole array (out
  of place, ping-ponging between the output and one scratch buffer, arranged so the last pass
  lands in the output);
* any other ``n``: Bluestein's chirp-z algorithm, a circular convolution of length
  ``M = 2^ceil(log2(2n - 1))`` done with two power-of-two transforms and a pointwise product.

Twiddles and chirps are tabled on the host in float64 (``w^t`` for ``t < n``; the chirp with
``j^2`` reduced mod ``2n`` before the multiplication by ``pi / n`` so large ``j`` keep their
precision), then stored in the transform's precision and cached per device, so the kernels
evaluate no trigonometric function. Real transforms complexify their input (``r2c``) or
rebuild the Hermitian spectrum (``c2r``) and use the complex passes, or, along an even last
dimension, pack the ``n`` reals into ``n / 2`` complex values and transform those (half the
work).
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .fft_kernels import fft_source

if TYPE_CHECKING:
    from .devices import Device, Kernel

__all__ = ["c2c", "r2c", "c2r", "factor", "bluestein_size", "local_shape"]

Ref = tuple[Any, int]
"""A ``(pyopencl.Buffer, offset in elements)`` pair."""

_I64, _I32 = np.int64, np.int32
_B = [None, _I64]
_TYPES: dict[str, list[Any]] = {
    "pass": _B * 2 + [None, _I64, _I64, _I64, _I64, _I32, _I64],
    "local": _B * 2 + [None, _I64, _I64, _I32, _I64, _I32],
    "blue_pre": _B + [None, None, _I64, _I64, _I64, _I64],
    "cmul_rows": [None, None, _I64, _I64],
    "blue_post": [None] + _B + [None, _I64, _I64, _I64, _I64],
    "complexify": _B * 2 + [_I64],
    "real_part": _B * 2 + [_I64],
    "crop": _B * 2 + [_I64, _I64, _I64, _I64],
    "hermitian": _B * 2 + [_I64, _I64, _I64, _I64],
    "pack_real": _B + [None, _I64],
    "unpack_real": [None] + _B + [_I64],
    "r2c_post": [None] + _B + [None, _I64, _I64],
    "c2r_pre": _B + [None, None, _I64, _I64],
}
_COMPLEX = {"float32": np.complex64, "float64": np.complex128}
#: tables kept per device before the cache is emptied (each is at most a few MiB; the cache
#: also holds fft_local's work-group size per dtype)
_TABLE_LIMIT = 64
_tables: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
_tables_lock = threading.Lock()


def factor(n: int) -> list[int] | None:
    """The radices of the Stockham passes for size ``n`` (their product is ``n``; ``[]`` for 1),
    or ``None`` when ``n`` has a prime factor above 7 (Bluestein's algorithm then)."""
    out: list[int] = []
    while n % 8 == 0:
        out.append(8)
        n //= 8
    for r in (4, 2, 3, 5, 7):
        while n % r == 0:
            out.append(r)
            n //= r
    return out if n == 1 else None


def bluestein_size(n: int) -> int:
    """Length of Bluestein's convolution for size ``n``: the power of two ``>= 2n - 1``."""
    return 1 << max(0, (2 * n - 2).bit_length())


def local_shape(dev: Device, dt: str) -> tuple[int, int]:
    """``(work-group size, longest line)`` of the one-launch kernel ``fft_local``: its two
    line buffers take at most half the device's local memory, and at most 4096 entries (a
    line then stays in a CPU core's cache). CPU devices run a work-group as a loop over its
    items, so a few items suffice there."""
    wg = min(256 if dev.is_gpu else 16, 1 << (dev.max_wg.bit_length() - 1))
    item = np.dtype(_COMPLEX[dt]).itemsize
    room = int(dev.properties.extra.get("local_mem_size", 0)) // (4 * item)
    return wg, min(4096, 1 << max(0, room.bit_length() - 1))


def _kernel(dev: Device, dt: str, name: str, types: str) -> Kernel:
    nmax = local_shape(dev, dt)[1]
    return dev.kernel(("fft", dt, nmax), name, lambda: fft_source(dt, nmax), [dt],
                      _TYPES[types])


def _group_size(dev: Device, kern: Kernel, want: int) -> int:
    """``want``, or the largest power of two below it the compiled kernel allows (a kernel
    using many registers may allow fewer work-items per group than the device)."""
    import pyopencl as cl

    most = int(kern.cl.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                           dev.cl_device))
    while want > max(1, most):
        want //= 2
    return want


def _launch(dev: Device, kern: Kernel, total: int, args: list[Any]) -> None:
    """``kern`` on ``total`` work-items (rounded up to whole work-groups; kernels check)."""
    if total <= 0:
        return
    ls = dev.local_size
    kern(dev.queue, ((total + ls - 1) // ls * ls,), (ls,), *args, total)


def _table(dev: Device, key: tuple[Any, ...], make: Callable[[], np.ndarray]) -> Any:
    """A read-only device buffer holding ``make()``, cached per device under ``key``."""
    import pyopencl as cl

    with _tables_lock:
        cache = _tables.setdefault(dev, {})
        buf = cache.get(key)
        if buf is None:
            if len(cache) >= _TABLE_LIMIT:
                cache.clear()
            host = np.ascontiguousarray(make())
            buf = cache[key] = cl.Buffer(dev.context, cl.mem_flags.READ_ONLY
                                         | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    return buf


def _twiddles(dev: Device, dt: str, n: int) -> Any:
    """``exp(-2 pi i t / n)`` for ``t < n``."""
    return _table(dev, ("w", dt, n), lambda: np.exp(-2j * np.pi * (np.arange(n) / n))
                  .astype(_COMPLEX[dt]))


def _chirp(n: int, inv: bool) -> np.ndarray:
    """``exp(s pi i j^2 / n)`` (``s = +1`` backward, ``-1`` forward) in float64."""
    j = np.arange(n, dtype=np.int64)
    sq = (j * j) % (2 * n)  # exact: j^2 < 2^63 for every n a buffer can hold
    return np.exp((1j if inv else -1j) * np.pi * (sq / n))


def _bluestein_tables(dev: Device, dt: str, n: int, inv: bool) -> tuple[Any, Any]:
    """The chirp ``c`` (``n`` entries) and ``FFT_M(conj c, wrapped) / M`` (``M`` entries)."""
    M = bluestein_size(n)

    def filt() -> np.ndarray:
        c = np.conj(_chirp(n, inv))
        b = np.zeros(M, np.complex128)
        b[:n] = c
        b[M - n + 1:] = c[1:][::-1]
        return (np.fft.fft(b) / M).astype(_COMPLEX[dt])

    return (_table(dev, ("c", dt, n, inv), lambda: _chirp(n, inv).astype(_COMPLEX[dt])),
            _table(dev, ("b", dt, n, inv), filt))


def _scratch(dev: Device, nbytes: int) -> Any:
    """A scratch device buffer (a :class:`~.allocator.DeviceBuffer`: keep it alive until every
    command using it is enqueued; the in-order queue makes its reuse safe after that)."""
    return dev.allocator.allocate(max(1, nbytes))


def _stockham(dev: Device, dt: str, src: Ref, dst: Ref, lines: int, n: int, inner: int,
              p: int, r: int, inv: bool) -> None:
    """One radix-``r`` pass (``p``: product of the earlier radices) on ``(lines, n, inner)``."""
    kern = _kernel(dev, dt, f"fft_r{r}", "pass")
    w = _twiddles(dev, dt, n)
    _launch(dev, kern, lines * inner * (n // r),
            [src[0], src[1], dst[0], dst[1], w, n, p, inner, n // (p * r), int(inv)])


def _local_fft(dev: Device, dt: str, src: Ref, dst: Ref, lines: int, n: int, inner: int,
               radices: Sequence[int], inv: bool) -> None:
    """Every pass of size ``n`` (at most :func:`local_shape`'s line) in one launch, one
    work-group per line of ``(lines, n, inner)``."""
    kern = _kernel(dev, dt, "fft_local", "local")
    key = ("wg", dt)
    cache = _tables.get(dev)
    wg = cache.get(key) if cache is not None else None
    if wg is None:
        wg = _group_size(dev, kern, local_shape(dev, dt)[0])
        with _tables_lock:
            _tables.setdefault(dev, {})[key] = wg
    rad = 0
    for i, r in enumerate(radices):  # 4 bits each: at most 12 passes fit 4096 entries
        rad |= r << (4 * i)
    groups = lines * inner
    kern(dev.queue, (groups * wg,), (wg,), src[0], src[1], dst[0], dst[1],
         _twiddles(dev, dt, n), n, inner, len(radices), rad, int(inv))


def _pow2_fft(dev: Device, dt: str, a: Ref, b: Ref, lines: int, n: int, inv: bool) -> Ref:
    """Transform the ``(lines, n)`` array in ``a`` (``n`` a power of two), ping-ponging with
    ``b``; returns the one holding the result."""
    radices = factor(n)
    assert radices is not None
    if n <= local_shape(dev, dt)[1]:
        _local_fft(dev, dt, a, b, lines, n, 1, radices, inv)
        return b
    p = 1
    for r in radices:
        _stockham(dev, dt, a, b, lines, n, 1, p, r, inv)
        a, b = b, a
        p *= r
    return a


def _bluestein(dev: Device, dt: str, src: Ref, dst: Ref, lines: int, n: int, inner: int,
               inv: bool) -> None:
    """Transform along the axis of size ``n`` of ``(lines, n, inner)`` by Bluestein."""
    M = bluestein_size(n)
    c, bf = _bluestein_tables(dev, dt, n, inv)
    rows = lines * inner
    item = np.dtype(_COMPLEX[dt]).itemsize
    s1, s2 = _scratch(dev, rows * M * item), _scratch(dev, rows * M * item)
    a: Ref = (s1.mem, 0)
    b: Ref = (s2.mem, 0)
    _launch(dev, _kernel(dev, dt, "blue_pre", "blue_pre"), rows * M,
            [src[0], src[1], a[0], c, n, inner, M])
    res = _pow2_fft(dev, dt, a, b, rows, M, False)
    _launch(dev, _kernel(dev, dt, "cmul_rows", "cmul_rows"), rows * M, [res[0], bf, M])
    other = b if res is a else a
    res = _pow2_fft(dev, dt, res, other, rows, M, True)
    _launch(dev, _kernel(dev, dt, "blue_post", "blue_post"), lines * n * inner,
            [res[0], dst[0], dst[1], c, n, inner, M])
    del s1, s2  # returned to the allocator after their last use was enqueued


def _copy(dev: Device, src: Ref, dst: Ref, count: int, item: int) -> None:
    import pyopencl as cl

    if count:
        cl.enqueue_copy(dev.queue, dst[0], src[0], byte_count=count * item,
                        src_offset=src[1] * item, dst_offset=dst[1] * item)


def c2c(dev: Device, dt: str, x: Ref, out: Ref, shape: Sequence[int], axes: Sequence[int],
        forward: bool) -> None:
    """Unnormalised transform of the contiguous complex array ``x`` of ``shape`` over ``axes``
    into the contiguous ``out`` (distinct from ``x``; ``x`` is not written). ``dt`` is the real
    dtype (``"float32"`` for complex64, ``"float64"`` for complex128). ``forward``: the sign of
    the exponent is ``-``, as ``numpy.fft.fft``; else ``+`` without the ``1 / n``."""
    shape = [int(s) for s in shape]
    total = 1
    for s in shape:
        total *= s
    item = np.dtype(_COMPLEX[dt]).itemsize
    inv = not forward
    nmax = local_shape(dev, dt)[1]
    # (lines, n, inner, p, r) per Stockham pass; r = 0 for a Bluestein step (p = 1) or for all
    # the passes in local memory (p = -1)
    steps: list[tuple[int, int, int, int, int]] = []
    for ax in axes:
        n = shape[ax]
        if n <= 1 or total == 0:
            continue
        inner = _prod(shape[ax + 1:])
        lines = total // (n * inner)
        radices = factor(n)
        if radices is None:
            steps.append((lines, n, inner, 1, 0))
            continue
        if n <= nmax:
            steps.append((lines, n, inner, -1, 0))
            continue
        p = 1
        for r in radices:
            steps.append((lines, n, inner, p, r))
            p *= r
    if not steps:
        _copy(dev, x, out, total, item)
        return
    tmp = _scratch(dev, total * item) if len(steps) > 1 else None
    cur = x
    for i, (lines, n, inner, p, r) in enumerate(steps):
        # the step with an odd number of steps left (itself included) writes ``out``, so the
        # last one does, and no step reads the buffer it writes
        dst = out if tmp is None or (len(steps) - i) % 2 == 1 else (tmp.mem, 0)
        if r:
            _stockham(dev, dt, cur, dst, lines, n, inner, p, r, inv)
        elif p < 0:
            radices = factor(n)
            assert radices is not None
            _local_fft(dev, dt, cur, dst, lines, n, inner, radices, inv)
        else:
            _bluestein(dev, dt, cur, dst, lines, n, inner, inv)
        cur = dst
    del tmp


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for s in xs:
        p *= s
    return p


def r2c(dev: Device, dt: str, x: Ref, out: Ref, shape: Sequence[int], axes: Sequence[int],
        onesided: bool) -> None:
    """Forward transform of the contiguous real array ``x`` (dtype ``dt``) of ``shape`` over
    ``axes`` (non-empty) into the contiguous complex ``out``: ``shape``, or with ``onesided``
    the last of ``axes`` cut to ``n // 2 + 1``. The last axis is transformed first, then cut,
    so the other axes transform only the kept half; an even ``n`` along the array's last
    dimension takes the half-length transform (:func:`_r2c_even`), other cases transform the
    complexified input."""
    shape = [int(s) for s in shape]
    total = _prod(shape)
    if total == 0:
        return
    citem = np.dtype(_COMPLEX[dt]).itemsize
    last = axes[-1]
    if not onesided:
        cx = _scratch(dev, total * citem)
        _launch(dev, _kernel(dev, dt, "complexify", "complexify"), total,
                [x[0], x[1], cx.mem, 0])
        c2c(dev, dt, (cx.mem, 0), out, shape, axes, True)
        return
    n = shape[last]
    h = n // 2 + 1
    inner = _prod(shape[last + 1:])
    half = list(shape)
    half[last] = h
    rest = list(axes[:-1])
    cut = _scratch(dev, _prod(half) * citem) if rest else None
    cut_ref: Ref = (cut.mem, 0) if cut is not None else out
    if inner == 1 and n % 2 == 0:
        _r2c_even(dev, dt, x, cut_ref, total // n, n)
    else:
        cx = _scratch(dev, total * citem)
        _launch(dev, _kernel(dev, dt, "complexify", "complexify"), total,
                [x[0], x[1], cx.mem, 0])
        full = _scratch(dev, total * citem)
        c2c(dev, dt, (cx.mem, 0), (full.mem, 0), shape, [last], True)
        _launch(dev, _kernel(dev, dt, "crop", "crop"), _prod(half),
                [full.mem, 0, cut_ref[0], cut_ref[1], n, h, inner])
        del cx, full
    if rest:
        c2c(dev, dt, cut_ref, out, half, rest, True)
    del cut


def _r2c_even(dev: Device, dt: str, x: Ref, out: Ref, lines: int, n: int) -> None:
    """One-sided forward transform of the ``(lines, n)`` real ``x`` (``n`` even) into the
    ``(lines, n / 2 + 1)`` complex ``out`` by one complex transform of length ``n / 2``."""
    h = n // 2
    citem = np.dtype(_COMPLEX[dt]).itemsize
    z, zf = _scratch(dev, lines * h * citem), _scratch(dev, lines * h * citem)
    _launch(dev, _kernel(dev, dt, "pack_real", "pack_real"), lines * h, [x[0], x[1], z.mem])
    c2c(dev, dt, (z.mem, 0), (zf.mem, 0), [lines, h], [1], True)
    _launch(dev, _kernel(dev, dt, "r2c_post", "r2c_post"), lines * (h + 1),
            [zf.mem, out[0], out[1], _twiddles(dev, dt, n), h])
    del z, zf


def _c2r_even(dev: Device, dt: str, x: Ref, out: Ref, lines: int, L: int) -> None:
    """Backward transform of the ``(lines, L / 2 + 1)`` one-sided ``x`` (``L`` even) into the
    ``(lines, L)`` real ``out`` by one complex transform of length ``L / 2``."""
    h = L // 2
    citem = np.dtype(_COMPLEX[dt]).itemsize
    z, zb = _scratch(dev, lines * h * citem), _scratch(dev, lines * h * citem)
    _launch(dev, _kernel(dev, dt, "c2r_pre", "c2r_pre"), lines * h,
            [x[0], x[1], z.mem, _twiddles(dev, dt, L), h])
    c2c(dev, dt, (z.mem, 0), (zb.mem, 0), [lines, h], [1], False)
    _launch(dev, _kernel(dev, dt, "unpack_real", "unpack_real"), lines * h,
            [zb.mem, out[0], out[1]])
    del z, zb


def c2r(dev: Device, dt: str, x: Ref, out: Ref, shape: Sequence[int], axes: Sequence[int],
        last_dim_size: int) -> None:
    """Backward transform (no ``1 / n``) of the contiguous one-sided Hermitian complex ``x`` of
    ``shape`` (``last_dim_size // 2 + 1`` entries along the last of ``axes``) over ``axes`` into
    the contiguous real ``out`` (dtype ``dt``), ``last_dim_size`` entries along that axis. The
    other axes go first, on the half spectrum. An even ``last_dim_size`` along the array's last
    dimension then takes the half-length transform (:func:`_c2r_even`); otherwise the full
    spectrum is rebuilt by symmetry and transformed, and its real part kept. Both ignore the
    imaginary parts of the zero and Nyquist frequencies, as pocketfft does."""
    shape = [int(s) for s in shape]
    last = axes[-1]
    L = int(last_dim_size)
    full_shape = list(shape)
    full_shape[last] = L
    ftotal = _prod(full_shape)
    if ftotal == 0:
        return
    citem = np.dtype(_COMPLEX[dt]).itemsize
    rest = list(axes[:-1])
    half: Ref = x
    hbuf = None
    if rest and _prod(shape):
        hbuf = _scratch(dev, _prod(shape) * citem)
        half = (hbuf.mem, 0)
        c2c(dev, dt, x, half, shape, rest, False)
    h = shape[last]
    inner = _prod(shape[last + 1:])
    if inner == 1 and L % 2 == 0:
        _c2r_even(dev, dt, half, out, ftotal // L, L)
        del hbuf
        return
    ext = _scratch(dev, ftotal * citem)
    _launch(dev, _kernel(dev, dt, "hermitian", "hermitian"), ftotal,
            [half[0], half[1], ext.mem, 0, h, L, inner])
    res = _scratch(dev, ftotal * citem)
    c2c(dev, dt, (ext.mem, 0), (res.mem, 0), full_shape, [last], False)
    _launch(dev, _kernel(dev, dt, "real_part", "real_part"), ftotal,
            [res.mem, 0, out[0], out[1]])
    del hbuf, ext, res
