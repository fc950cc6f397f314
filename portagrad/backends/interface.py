"""The backend contract: what a portagrad array backend implements.

This module is what a third-party backend author reads. A backend is a Python object (usually a
subclass of :class:`Backend`) that owns one *device type* (``"cpu"``, ``"opencl"``, ``"mydev"``) and
all devices of that type. The core (tensors, autograd, ``nn``) never computes anything itself: it
allocates buffers and calls the primitives below. Derivatives live in the core; a backend never
implements backward.

Views
-----
Every primitive receives :class:`View` objects: ``(buffer, offset, shape, strides, dtype)`` where
``buffer`` is an object the backend returned from :meth:`Backend.allocate`, and ``offset`` and
``strides`` count *elements* of ``dtype`` (not bytes). Strides may be 0 (broadcast) and views may
overlap only where documented (never between an output and an input, except in-place elementwise ops
where the output is exactly the same view as an input). Shapes may contain 0. ``View.cache`` is a
slot the backend may use to memoise a native handle for the view (the numpy backend keeps the
``ndarray`` there); the core never reads it.

Strides are never negative: the core has no negative-stride views (``flip`` copies, and
``from_numpy`` refuses a negatively strided array, as PyTorch does), so a backend may assume
``stride >= 0`` everywhere; 0 means a broadcast dimension.

Outputs are always written into a view the core allocated (``out``). Where a non-contiguous
``out`` really occurs today: :meth:`Backend.copy` (``dst`` of ``copy_``, ``x[1:3] = y``,
``contiguous`` into a slice), :meth:`Backend.fill` (``x[::2].fill_(v)``, ``zero_`` of a view) and
:meth:`Backend.binary` (in-place arithmetic on a view, ``x[:, 0].add_(y)``, and the optimizers'
``axpy``-style updates). Every other primitive receives an ``out`` the core has just allocated,
contiguous from offset 0 (``where``, ``unary``, ``reduce``, ``gather``, ``matmul``...; in-place
unary ops on a view compute into a new buffer and ``copy`` back today). A backend must honour
``out``'s strides in ``copy``, ``fill``, ``binary`` and ``unary`` (the conformance kit checks
all four: an in-place unary op may come to write its view directly); honouring them everywhere
is the safe choice. Offsets count in every view, 0-d ones included (``x[3]`` of a 1-D tensor is
a 0-d view at offset 3), and in every method that takes views: ``from_host``, ``to_host`` and
``copy_between`` as much as the arithmetic.

Dtypes
------
``View.dtype`` is a :class:`portagrad.dtype` (``float32``, ``float64``, ``int32``, ``int64``,
``bool``, optionally ``float16``, ``uint8``, ``int8``, ``int16`` and ``bfloat16``, whose numpy type
is ml_dtypes'; PyTorch computes bfloat16 in float32 and rounds once per op, accumulating
reductions and products in float32, and so do the built-in backends; integer arithmetic wraps).
Elementwise primitives receive inputs already converted to the
computation dtype by the core (it calls :meth:`Backend.copy` to cast), except where noted
(comparisons write ``bool``; ``where``'s condition is ``bool``; index tensors are ``int64``).
A backend that cannot store a dtype declines it: its :meth:`Backend.from_host` (and
:meth:`Backend.to_host`) raise :class:`portagrad.errors.DTypeError` for views of that dtype (the
Array API example over array-api-strict does for the 16-bit floats); the conformance kit then skips the
dtype and lists it in its summary. :meth:`Backend.to_host` of a dtype it stores returns that
dtype's numpy type with the stored bits, never a wider type (bfloat16 comes back as
``ml_dtypes.bfloat16``, not float32).

Complex
-------
``complex64`` and ``complex128`` are stored as pairs ``(real, imag)`` of ``float32``/``float64``
(numpy's and PyTorch's layout): the core views a complex buffer as its real dtype with a last
dimension of 2 (``view_as_real``, ``.real``, ``.imag``, ``conj``, ``angle`` and ``complex`` are
built that way, from real primitives only). A backend opts in by setting
:attr:`Backend.supports_complex` to ``True``; it then accepts complex views in:

* the storage methods: ``from_host``, ``to_host``, ``host_array``, ``copy_between``, ``fill``
  (a Python ``complex``) and ``copy`` (complex to complex; real or integer or bool to complex;
  complex to real keeps the real part, complex to ``bool`` is "either part nonzero");
* ``unary`` for ``neg``, ``exp``, ``log``, ``sqrt``, ``sin``, ``cos``, ``tan``, ``tanh``,
  ``sigmoid``, ``reciprocal`` (complex in, complex out), ``abs`` (complex in, the *real* dtype
  out: ``|z|``), ``isnan``/``isinf`` (``bool`` out: either part);
* ``binary`` for ``add``, ``sub``, ``mul``, ``div``, ``pow`` (operands may be Python
  ``complex`` scalars) and ``eq``/``ne`` (``bool`` out);
* ``where``, ``reduce`` for ``sum`` and ``prod``, ``cumsum``, ``matmul``, ``gather`` and
  ``scatter`` (they move or add elements; numpy's complex semantics are the reference).

The core never sends a complex view to an ordering op (``lt``, ``maximum``, ``reduce`` ``max``,
``arg_reduce``, ``sort``): it raises PyTorch's ``NotImplementedError`` first. Gradients are the
core's (PyTorch's Wirtinger convention); a backend computes forward values only.

Both built-in backends store complex: numpy's own, and OpenCL's ``float2``/``double2`` pairs
(``complex128`` only where the device has ``cl_khr_fp64``: without it the OpenCL backend raises
:class:`portagrad.errors.DTypeError` as it does for ``float64``). A backend that leaves
``supports_complex`` false (the default; the Array API example backend) *declines*: the core
raises :class:`portagrad.errors.DTypeError` naming the dtype and the backend when a complex
tensor would be made on its device (factories, ``to``/casts, ``from_numpy``-style uploads,
``view_as_complex``, promotion with a Python ``complex``), so no complex view ever reaches its
kernels. :func:`decline_complex` is that check. The conformance kit checks either path.

Asynchrony
----------
Primitives may return before the work is done (enqueue). Work on one device is ordered: a
primitive sees the effects of every call made before it on that device, non-blocking uploads
from pinned memory (:meth:`Backend.from_host`) included. Only
:meth:`Backend.to_host` (which returns data the caller reads) and :meth:`Backend.synchronize` must
wait. A backend raises :class:`portagrad.OutOfMemoryError` from :meth:`allocate` when a request
cannot be met even after releasing its cache.

Random numbers
--------------
:meth:`Backend.random` must produce *bit-identical* streams on every backend (the property that makes
runs reproducible across devices). The algorithm is fixed here: Philox4x32-10 (Salmon et al. 2011,
the Random123 constants ``M0=0xD2511F53, M1=0xCD9E8D57, W0=0x9E3779B9, W1=0xBB67AE85``). The
stream is a sequence of 32-bit words, its *slots*: slot ``g`` (taken modulo ``2**64``) is word
``g & 3`` of the four words ``r0..r3`` that Philox gives for the counter block ``(c0, c1, c2, c3) =
(lo32(g >> 2), hi32(g >> 2), 0, 0)`` and key ``(lo32(seed), hi32(seed))``, so every block serves
four slots. An element takes ``w`` consecutive slots: ``w = 1`` for ``uniform`` in float32,
float16 and bfloat16, ``w = 2`` for ``uniform`` in float64, ``w = 4`` for ``normal``
(:func:`portagrad.backends.helpers.philox_slots`). Element ``i`` of the *contiguous* output (in C
order) takes the slots ``offset + w*i .. offset + w*i + w-1``, read below as ``r0..r{w-1}`` (they
may lie in two blocks when ``offset`` is not a multiple of four); the core advances its generator
by ``w`` slots an element, so draws never share a slot:

* ``uniform`` float32: ``(r0 >> 8) * 2**-24``; float64: ``((r0 >> 5) * 2**26 + (r1 >> 6)) * 2**-53``
  (in float64). The result is ``low + (high - low) * u`` computed in the output dtype.
* ``normal``: Box-Muller on ``u1 = ((r0 >> 5) * 2**26 + (r1 >> 6) + 1) * 2**-53`` (never 0) and
  ``u2 = ((r2 >> 5) * 2**26 + (r3 >> 6)) * 2**-53``, computed in float64:
  ``z = sqrt(-2 log u1) * cos(2 pi u2)``; result ``mean + std * z`` rounded to the output dtype.
* float16: ``uniform`` uses the float32 ``u`` above rounded to float16, then ``low + (high -
  low) * u`` in float16; ``normal`` is the float64 result rounded to float16. bfloat16: the
  float32 result (``uniform`` and ``normal``) rounded to bfloat16 (nearest even).

``uniform`` must be bit-identical. ``normal`` involves ``log``, ``sqrt`` and ``cos``, whose last
bit differs between math libraries (and a device without float64 must compute in float32), so it
cannot always be: the stated tolerance, which the conformance kit checks, is ``|got - want| <=
1e-5 + 1e-5 * |want|`` for float32 output with ``mean=0, std=1`` (bit-identical where the device
computes in float64 with a correctly rounded ``log``/``cos``, as the numpy reference does);
``1e-10 + 1e-10 * |want|`` for float64 output (a device with fp64 computes in float64: only the
last bits of ``log``/``cos`` may differ); float16/bfloat16 within one rounding of that float64
result.

``portagrad.backends.philox`` holds the reference implementation in numpy; the numpy backend uses it.
It is public as :func:`portagrad.backends.helpers.philox_uniform` /
:func:`~portagrad.backends.helpers.philox_normal` (and the raw words as
:func:`~portagrad.backends.helpers.philox_words`), with the other helpers every backend needs
(visible devices, dtype tables): see :mod:`portagrad.backends.helpers`.

The small core and the defaults
-------------------------------
A backend implements the eleven methods of :data:`REQUIRED_METHODS` (devices, memory, host
transfers, ``copy``, ``fill``, ``unary``, ``binary``, ``reduce``, ``matmul``) and the whole
library runs: every method of :data:`DEFAULTED_METHODS` has a default on :class:`Backend`. The
defaults in :data:`HOST_DEFAULTS` compute on the host (``to_host`` -> numpy -> ``from_host``) and
are the ones to replace with device code first; the conformance kit and the test suite check a
replacement against the same numpy rules.

Per-op overhead
---------------
Every op costs the core one :meth:`Backend.allocate` for its output plus one primitive call on
fresh :class:`View` objects, so a backend that wraps a native array library pays, per op, a
native buffer, a native array over it for each view it touches, and the call. On a one-element
add the example plugin (numpy arrays as buffers, memory counted with
:class:`~portagrad.backends.helpers.MemoryCounter`) spends a few microseconds more than the numpy
backend, most of it in the memory accounting (a weak reference per buffer) rather than in the
protocol itself (an output buffer and a native array over it cost about what the numpy backend
pays). What keeps it small: build the native handle of a view once and keep it in
``View.cache`` (the core passes the same View objects again for a tensor); keep ``allocate`` to one
native allocation plus ``memory_counter.track``; no context manager per call (``np.errstate``
costs microseconds: filter the warnings once per module instead); look ops up in a dict. Measure
with a ``timeit`` loop over ``a + b`` on one-element tensors of your device against ``cpu`` (see
``docs/backends.md``).

Registering
-----------
A backend is shipped as a pluggy plugin: a module with a ``portagrad_backends`` hook implementation
(see :mod:`portagrad.plugins.hookspecs`) named by an entry point of group ``portagrad.backends``.
:func:`portagrad.plugins.manager.validate_backend` checks when the backend is first loaded that
every method of the small core is implemented (and, for an object that does not subclass
:class:`Backend`, that the defaulted ones exist), and reports what is missing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DTypeError, UnsupportedOpError
from . import _host_fft, _host_ops
from ._memory_counter import MemoryCounter

if TYPE_CHECKING:
    from .._dtype import dtype

__all__ = [
    "View", "DeviceProperties", "Backend", "REQUIRED_METHODS", "DEFAULTED_METHODS",
    "HOST_DEFAULTS", "OPTIONAL_METHODS",
    "UNARY_OPS", "BINARY_OPS", "COMPARISON_OPS", "REDUCE_OPS", "ARG_REDUCE_OPS", "RANDOM_KINDS",
    "EVENT_METHODS", "LINALG_METHODS", "FFT_METHODS", "unknown_op", "decline_complex",
]

UNARY_OPS = (
    "neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "reciprocal",
    "logical_not", "isnan", "isinf",
)
"""Unary elementwise ops. Output dtype equals input dtype, except ``logical_not``, ``isnan`` and
``isinf`` which write ``bool``. ``round`` rounds half to even; ``sign(0) == 0`` and
``sign(nan) == 0`` (PyTorch); ``relu`` is ``max(x, 0)`` with ``relu(nan) == nan``;
``abs``/``neg``/``sign`` also apply to integers; ``logical_not`` accepts any dtype (nonzero is true)."""

BINARY_OPS = (
    "add", "sub", "mul", "div", "floordiv", "remainder", "fmod", "pow", "maximum", "minimum",
    "atan2", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
)
"""Binary elementwise ops on equal dtypes. ``div`` is true division (floating inputs only; the core
casts integers first); ``floordiv`` rounds toward minus infinity (Python semantics, for integers and
floats); ``remainder`` has the sign of the divisor (Python's ``%``), ``fmod`` that of the
dividend (C's ``fmod``/``%``: ``fmod(x, inf) == x``); ``maximum``/``minimum``
propagate NaN; integer ``pow`` with a negative exponent is never requested. Logical ops write
``bool``; bitwise ops take integer or bool inputs."""

COMPARISON_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
"""Comparisons, passed to :meth:`Backend.binary` like other binary ops; they write ``bool``."""

REDUCE_OPS = ("sum", "prod", "max", "min")
"""Reductions for :meth:`Backend.reduce`. ``max``/``min`` propagate NaN."""

ARG_REDUCE_OPS = ("argmax", "argmin")
"""Index reductions for :meth:`Backend.arg_reduce`: the index of the first extreme value (NaN
counts as the extreme)."""

RANDOM_KINDS = ("uniform", "normal")
"""Distributions of :meth:`Backend.random`."""


class View:
    """A strided view of a backend buffer, as primitives receive it.

    ``offset`` and ``strides`` are in elements. ``cache`` is reserved for the backend.
    """

    __slots__ = ("buffer", "offset", "shape", "strides", "dtype", "cache")

    def __init__(self, buffer: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 dtype: dtype) -> None:
        self.buffer = buffer
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.cache: Any = None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __repr__(self) -> str:
        return (f"View(offset={self.offset}, shape={self.shape}, strides={self.strides}, "
                f"dtype={self.dtype})")


@dataclass
class DeviceProperties:
    """What :meth:`Backend.get_device_properties` returns for one device."""

    name: str
    type: str  # "cpu", "gpu", "accelerator", ...
    total_memory: int  # bytes
    fp64: bool = True
    fp16: bool = False
    compute_units: int = 1
    max_alloc: int = 0  # largest single allocation in bytes (0: no limit known)
    extra: dict[str, Any] = field(default_factory=dict)  # platform, vendor, driver, ...


class Backend:
    """Base class and documentation of the backend contract.

    Subclasses set :attr:`device_type` and implement the small core listed in
    :data:`REQUIRED_METHODS` (eleven methods). Every method in :data:`DEFAULTED_METHODS` has a
    working default here, so the whole library runs on the core alone; a backend replaces the
    defaults with fast versions one by one (those in :data:`HOST_DEFAULTS` go through the host
    and are the ones worth replacing first). Methods in :data:`OPTIONAL_METHODS` may be left out;
    the core then composes the operation or goes without.

    Why the defaults go through the host: a primitive receives views, not device indices, so a
    default cannot allocate scratch buffers on the right device to compose an operation there.
    It reads its operands with :meth:`to_host`, computes with numpy (the reference semantics,
    shared with the numpy backend's rules), and writes the result with :meth:`from_host`. An
    ``out`` that is not contiguous is honoured: the default reads the span of the buffer that
    ``out`` covers, writes the strided elements into it on the host and uploads the span back, so
    the elements between them keep their values.
    """

    #: the device-type string users write: ``pg.device("<device_type>:<index>")``
    device_type: str = ""

    #: whether the backend stores and computes complex64/complex128 (see "Complex" above);
    #: false: the core declines complex tensors on its devices with a ``DTypeError``
    supports_complex: bool = False

    @property
    def gelu_half_dtypes(self) -> tuple[str, ...]:
        """Names of the 16-bit float dtypes (``"bfloat16"``, ``"float16"``) whose views the
        optional ``gelu``/``gelu_backward`` take as they are (computed in float32, rounded
        once); for the others the core passes float32 copies and rounds the result. None here."""
        return ()

    @property
    def layer_norm_half_dtypes(self) -> tuple[str, ...]:
        """Names of the 16-bit float dtypes whose views the optional ``layer_norm`` takes as they
        are when no statistics are asked for (inference: computed in float32, rounded once);
        for the others the core passes float32 copies and rounds the result. None here."""
        return ()

    @property
    def memory_counter(self) -> MemoryCounter:
        """The per-device byte counts the default :meth:`memory_stats` reports (created on first
        use, one per backend object). A backend gets real statistics by calling
        ``self.memory_counter.track(index, buffer, nbytes)`` in :meth:`allocate`; it then never
        needs to write ``memory_stats`` or ``reset_peak_memory_stats`` itself."""
        counter = self.__dict__.get("_memory_counter")
        if counter is None:  # dict.setdefault is atomic: two threads get the same counter
            counter = self.__dict__.setdefault("_memory_counter", MemoryCounter())
        return counter

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        """Number of visible devices of this type (after ``PORTAGRAD_VISIBLE_DEVICES``).

        The backend applies the variable itself (the core does not): with ``n`` physical devices
        it exposes ``len(helpers.visible_indices(device_type, n))`` of them, logical index ``i``
        being physical device ``visible_indices(device_type, n)[i]`` in every method. The kit
        checks it in a fresh process (``<type>:1000`` alone hides every device; ``1,0``
        reorders)."""
        raise NotImplementedError

    def get_device_properties(self, index: int) -> DeviceProperties:
        """Name, memory and capabilities of device ``index``."""
        raise NotImplementedError

    def synchronize(self, index: int) -> None:
        """Wait until all work enqueued on device ``index`` has finished.

        Default: nothing, which is right for a backend whose primitives finish before they
        return. An asynchronous backend (one that enqueues) must override it with its queue's
        ``finish``: the default cannot wait for work it does not know about. (Reading a probe
        back through ``to_host`` would wait, but would allocate on every call and show in the
        peak memory statistics.)"""
        return None

    # ----------------------------------------------------------------- memory
    def allocate(self, index: int, nbytes: int) -> Any:
        """Return a new buffer of at least ``nbytes`` bytes on device ``index``.

        ``nbytes`` may be 0 (every empty tensor allocates): return a valid buffer all the same
        (views of it have a 0 in their shape, so no element is ever read or written; the numpy
        backend returns an empty array, the OpenCL one a minimal device buffer). The buffer must
        be aligned for every dtype (8 bytes at least): offsets count elements of the view's
        dtype, and ``Tensor.view(dtype)`` reinterprets one buffer with another dtype.

        The buffer is released when the last reference to it is dropped (a caching allocator
        keeps it for reuse). Raises :class:`portagrad.OutOfMemoryError` naming the device and the
        sizes when the device cannot satisfy the request even after emptying the cache.
        """
        raise NotImplementedError

    # Optional: typed allocation (the core allocates every result of an op with it when the
    # backend has it, and with ``allocate`` otherwise):
    #
    # def allocate_array(self, index: int, nbytes: int, shape: tuple[int, ...], dtype: dtype
    #                    ) -> Any:
    #     """A new buffer of ``nbytes`` bytes on device ``index`` (``dtype.itemsize`` times the
    #     product of ``shape``) for a new contiguous tensor, that is at once the native handle
    #     of that tensor's View."""
    #
    # The core keeps the one object both as the buffer (``View.buffer`` of every View over this
    # memory, of any offset, strides and dtype, as for ``allocate``'s buffers) and as
    # ``View.cache`` of the View ``(buffer, 0, shape, C-contiguous strides, dtype)`` it makes
    # with it: the backend finds that View's handle made already. Everything ``allocate``
    # promises holds for the buffer (``nbytes`` may be 0, alignment, release on the last
    # reference, ``OutOfMemoryError``). Why: the numpy backend returns ``np.empty(shape,
    # dtype)``, one array per result instead of a byte buffer and its typed view, which on a
    # one-element op cost as much as numpy's arithmetic. A backend whose native handle is the
    # buffer itself (the OpenCL one) has nothing to gain and leaves it out. The core asks once
    # per backend object whether it has the method (``getattr``); the conformance kit checks it.
    #
    # Optional: an operator's result in one call (the core calls it on the operators' fast path,
    # ``a + b``, ``x * 2.0`` and the like, when the backend has it):
    #
    # def binary_array(self, index: int, nbytes: int, shape: tuple[int, ...], dtype: dtype,
    #                  op: str, a: View | float, b: View | float) -> Any:
    #     """``op(a, b)`` as a new buffer: what ``allocate_array(index, nbytes, shape, dtype)``
    #     and then ``binary(op, a, b, View(buffer, 0, shape, C-contiguous strides, dtype))``
    #     would give, or None to decline (the core then makes those two calls)."""
    #
    # The core keeps the object as ``allocate_array``'s (the buffer, and the ``cache`` of the
    # result's View). ``a`` and ``b`` are Views of ``shape`` and ``dtype`` (stride 0 along
    # broadcast dimensions) or Python scalars. Why: on a one-element op a Python call costs
    # about as much as numpy's arithmetic, and numpy computes into an array of its own faster
    # than into one it is given (the numpy backend takes float32/float64 ``add``, ``sub``,
    # ``mul`` and ``div`` under 1 MiB this way and declines the rest). The core uses the two
    # calls instead where ``allocate``, ``allocate_array`` or ``binary`` is redefined below
    # ``binary_array`` or shadowed on the object; the conformance kit checks it against them.

    def memory_stats(self, index: int) -> dict[str, int]:
        """``{"allocated": bytes in live buffers, "reserved": bytes held incl. cache,
        "peak_allocated": max of allocated since the last reset}``.

        Default: what :attr:`memory_counter` counted: the buffers the backend passed to
        ``memory_counter.track`` in :meth:`allocate` and that are still alive (the count goes down
        as they are freed), ``reserved`` equal to ``allocated`` (no cache), and the peak. A backend
        that tracks nothing reports zeros, as the numpy backend does for host memory."""
        return self.memory_counter.stats(index)

    def reset_peak_memory_stats(self, index: int) -> None:
        """Set ``peak_allocated`` to the current ``allocated`` (not to 0: buffers alive at the
        reset count; default: on :attr:`memory_counter`)."""
        self.memory_counter.reset_peak(index)

    def empty_cache(self, index: int) -> None:
        """Give cached, unused buffers back to the device. Default: nothing to do (no cache)."""
        return None

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        """Copy the C-contiguous host array ``src`` (same dtype and number of elements) into the
        contiguous view ``dst``, which may start at any offset of its buffer (the elements
        around it keep their values). With ``non_blocking`` and a ``src`` this backend pinned
        (:meth:`is_pinned`) the call may return after enqueueing: the backend keeps ``src``
        alive until the copy is done, the device's later primitives see the copied data (work
        on a device is ordered), and once :meth:`synchronize` returns the copy has read ``src``
        (the caller may then overwrite it)."""
        raise NotImplementedError

    def to_host(self, src: View) -> np.ndarray:
        """Return a new C-contiguous numpy array with the view's contents (waits for the data),
        of the view's numpy dtype (``src.dtype.numpy``: bfloat16 is ml_dtypes', never a wider
        type) holding the stored bits."""
        raise NotImplementedError

    def host_array(self, src: View) -> np.ndarray | None:
        """Optional zero-copy: a numpy array *sharing memory* with ``src``, or ``None``.

        The core calls it only on the ``cpu`` device's backend (``Tensor.numpy()``, DLPack and
        the MPI collectives share memory on the CPU, like PyTorch). A third-party backend is
        never asked, even if its buffers live in host memory (as the example plugin's do): it
        keeps this default (``None``), ``Tensor.numpy()`` of its tensors raises as PyTorch's does
        for a CUDA tensor, and ``.cpu()`` copies through :meth:`to_host`."""
        return None

    def wrap_host(self, array: np.ndarray) -> tuple[Any, int] | None:
        """Optional zero-copy: make a buffer that shares memory with ``array`` (``from_numpy``).

        Returns ``(buffer, offset_in_elements)`` or ``None`` when this backend cannot share host
        memory. As with :meth:`host_array`, only the ``cpu`` backend is asked (``from_numpy``
        always makes a ``cpu`` tensor); other backends keep this default."""
        return None

    def copy_between(self, dst: View, src: View) -> None:
        """Copy between two devices *of this backend* (contiguous, same dtype and numel; each
        view may start at an offset of its buffer: ``x[5:].to("mydev:1")``).

        Default (host): :meth:`to_host` of ``src``, then :meth:`from_host` into ``dst``."""
        if 0 not in src.shape:
            self.from_host(dst, self.to_host(src).reshape(dst.shape))

    def pin_memory(self, nbytes: int) -> np.ndarray | None:
        """Optional: a page-locked host buffer as a 1-D ``uint8`` numpy array, or ``None`` when
        the backend has no pinned memory. Pinned host tensors live on the ``cpu`` device and
        use this array as their storage: ``Tensor.pin_memory("mydev")`` asks this backend,
        ``Tensor.pin_memory()`` the accelerator's (``pg.accelerator``), else the first that
        can pin."""
        return None

    def is_pinned(self, array: np.ndarray) -> bool:
        """Whether ``array`` (or the array it views) came from :meth:`pin_memory`."""
        return False

    # ------------------------------------------------------------- primitives
    def unary(self, op: str, x: View, out: View) -> None:
        """``out = op(x)`` elementwise for ``op`` in :data:`UNARY_OPS`; same shapes.

        An op name outside the contract raises :func:`unknown_op`
        (:class:`portagrad.errors.UnsupportedOpError`, a ``NotImplementedError`` naming the op and
        the backend), never ``KeyError``; a known op the backend cannot run for ``x``'s dtype
        raises :class:`portagrad.errors.DTypeError`."""
        raise NotImplementedError

    def binary(self, op: str, a: View | int | float | bool, b: View | int | float | bool,
               out: View) -> None:
        """``out = op(a, b)`` for ``op`` in :data:`BINARY_OPS` or :data:`COMPARISON_OPS`.

        ``a`` and ``b`` are views of ``out``'s shape (broadcast already expressed with stride-0
        dimensions) or Python scalars, already of the computation dtype. Scalars: either side may
        be one (``x * 2.0`` passes ``b=2.0``, ``2 - x`` passes ``a=2.0``), and both may be (compute
        on the host and fill: arithmetic in ``out``'s dtype, wrapping as it would on tensors;
        a comparison of two scalars compares their values, never their truth values). A
        scalar's Python type matches the views' dtype category: ``float``
        for floating views (the core converted ``int_tensor * 2.5`` to float first), ``int`` for
        integer views, ``bool`` for bool views. An ``int`` outside a narrow integer dtype
        (``uint8 + 1000``) wraps into it, as PyTorch does. With float16/bfloat16 views a scalar is
        taken as PyTorch's CPU kernels take it: at float32 as the second operand of ``mul``,
        ``div`` and ``floordiv``, else rounded to the 16-bit type first
        (:func:`portagrad.backends.helpers.half_scalar_operands` does both); the arithmetic itself
        is float32, rounded once. ``out`` has the views' dtype, except for
        comparisons and logical ops (``bool``). An op name outside the contract raises
        :func:`unknown_op` (:class:`portagrad.errors.UnsupportedOpError`), never ``KeyError``.

        bool operands: comparisons, logical and bitwise ops, and ``maximum``/``minimum`` (logical
        or/and, ``True > False``) are requested on bool; ``add`` of two bools is logical or (as
        ``torch.add`` on bool tensors); the other arithmetic ops never see bool (the core
        promotes first)."""
        raise NotImplementedError

    def where(self, cond: View, a: View | int | float | bool, b: View | int | float | bool,
              out: View) -> None:
        """``out = cond ? a : b``; ``cond`` is bool; all views of ``out``'s shape.

        ``a`` and ``b`` are views of ``out``'s dtype (the core casts mixed operands to the
        promoted dtype first) or Python scalars of its category (``masked_fill(mask, 3)`` on a
        float tensor passes ``3.0``). A scalar stored into an integer ``out`` goes through
        PyTorch's checked conversion, :func:`portagrad.backends.helpers.fit_scalar`: an ``int``
        must fit, except that a negative one whose magnitude fits wraps into an unsigned type
        (``-1`` is 255 in uint8); a ``float`` is truncated toward zero and must be finite and in
        range; otherwise ``RuntimeError("value cannot be converted to type uint8_t without
        overflow")``, never numpy's wrapping cast (the core passes ``masked_fill(mask, 300)`` of
        a uint8 tensor unchecked). ``a`` may be ``out``
        itself (in-place ``masked_fill_``): then only the positions where ``cond`` is false
        change.

        Default (host): reads ``cond``, ``a`` and ``b`` back and writes the result."""
        if 0 in out.shape:
            return
        result = _host_ops.where(self.to_host(cond), _host_value(self, a), _host_value(self, b),
                                 out.dtype.numpy, out.dtype.name)
        _store(self, out, result)

    def copy(self, src: View, dst: View) -> None:
        """Strided copy ``dst[...] = src`` of equal shapes, converting the dtype if it differs
        (float to int truncates toward zero; to bool is ``!= 0``). This one primitive serves
        ``contiguous``, ``clone``, casts and ``copy_`` into a view."""
        raise NotImplementedError

    def fill(self, out: View, value: int | float | bool) -> None:
        """Set every element of ``out`` to ``value``. Into an integer ``out`` the value is
        converted as in :meth:`where` (:func:`~portagrad.backends.helpers.fit_scalar`:
        ``uint8.fill_(300)`` raises, ``fill_(-1)`` writes 255) and stored exactly: an int64 value
        past ``2**53`` never goes through a double."""
        raise NotImplementedError

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        """Reduce ``x`` over ``axes`` (sorted, unique) with ``op`` in :data:`REDUCE_OPS`.

        ``out`` has ``x``'s rank with the reduced axes of size 1 (keepdim layout). A reduction over
        an empty axis gives the identity (0 for sum, 1 for prod); the core never asks for max/min of
        an empty axis. Sums of floating inputs accumulate in at least float32.

        Dtypes: ``out.dtype == x.dtype`` in every call the core makes. PyTorch's promotion is done
        by the core beforehand: ``sum``/``prod`` of an integer or bool tensor casts ``x`` to
        ``int64`` first, so a backend sees int64 sums (wrapping on overflow); ``max``/``min`` do
        reach it on ``bool`` (``any``/``all``) and on every integer dtype. ``axes`` may be empty
        (a 0-d input, or ``sum(dim=())``): ``out`` then has ``x``'s shape and receives a copy.
        Inputs with a 0 in their shape are never passed for ``sum``/``prod`` (the core fills the
        identity itself)."""
        raise NotImplementedError

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        """Write ``int64`` indices of the first max/min along ``axis`` into ``out`` (keepdim
        layout); ``op`` in :data:`ARG_REDUCE_OPS`, NaN counts as the extreme.

        Default (host): reads ``x`` back (bfloat16 compared as float32)."""
        if op not in ARG_REDUCE_OPS:
            raise unknown_op("arg_reduce", op, self.device_type)
        if 0 not in out.shape:
            _store(self, out, _host_ops.arg_reduce(op, self.to_host(x), axis))

    def cumsum(self, x: View, axis: int, out: View) -> None:
        """Inclusive prefix sum along ``axis``; ``out`` has ``x``'s shape and dtype.

        Default (host): reads ``x`` back (bfloat16 accumulates in float32, rounded once)."""
        if 0 not in out.shape:
            _store(self, out, _host_ops.cumsum(self.to_host(x), axis, out.dtype.numpy))

    def matmul(self, a: View, b: View, out: View) -> None:
        """Batched matrix product: ``a`` is (B, M, K), ``b`` is (B, K, N), ``out`` is (B, M, N).

        Inputs are arbitrary strided views (a transposed operand has swapped strides, a broadcast
        batch has stride 0). Floating and integer dtypes (int32/int64 exact, wrapping on overflow
        as PyTorch's CPU matmul), never bool; K may be 0 (result 0)."""
        raise NotImplementedError

    # Optional: the 2-D product, which the core calls for every single matrix product (linear
    # layers, their gradients) when the backend has it, instead of ``matmul`` on (1, M, K) and
    # (1, K, N) views:
    #
    # def mm(self, a: View, b: View, out: View, bias: View | None) -> None:
    #     """``out = a @ b`` for the 2-D strided ``a`` (M, K) and ``b`` (K, N) (a transposed
    #     operand has swapped strides) into the contiguous ``out`` (M, N); K >= 1 and the result
    #     non-empty; what ``matmul`` gives on the operands as batches of one. ``bias``: None, or
    #     a (N,) View of the same dtype added to every row afterwards (a linear layer's), as
    #     ``binary("add")`` would with it broadcast (stride 0 over the rows)."""
    #
    # Why: building the three batch views costs a small product as much as its arithmetic. The
    # core calls ``matmul`` instead where it is redefined below ``mm`` or shadowed on the object
    # (see ``allocate_array``); the conformance kit checks ``mm`` against ``matmul``.

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis`` (``torch.gather``).

        ``index`` is int64 with ``out``'s shape and ``x``'s rank; values are already checked to lie
        in ``[0, x.shape[axis])`` by the core. Along the other axes ``x`` may be larger than
        ``index`` (PyTorch's rule: only the leading part is read).

        Default (host): reads ``x`` and ``index`` back."""
        if 0 not in out.shape:
            _store(self, out, _host_ops.gather(self.to_host(x), axis, self.to_host(index)))

    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        """In place: ``out[..., index[i], ...] = src[..., i, ...]`` (``reduce=None``) or ``+=``
        (``reduce="add"``, duplicates accumulate) along ``axis``. ``index`` and ``src`` have the
        same shape; indices are checked by the core.

        Default (host): reads ``out``, ``index`` and ``src`` back, updates ``out`` on the host and
        writes all of it (honouring its strides)."""
        if 0 in index.shape or 0 in out.shape:
            return
        host = _host_ops.scatter(self.to_host(out), axis, self.to_host(index),
                                 self.to_host(src), reduce)
        _store(self, out, host)

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        """Stable sort along ``axis``: sorted ``values`` and their int64 source ``indices``.

        NaN sorts as larger than every number (last ascending, first descending).

        Default (host): reads ``x`` back and sorts with numpy's stable sort."""
        if 0 in values.shape:
            return
        vals, idx = _host_ops.sort(self.to_host(x), axis, descending)
        _store(self, values, vals)
        _store(self, indices, idx)

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        """Fill the contiguous floating ``out`` with Philox-based numbers (see the module doc):
        ``kind="uniform"``: in ``[a, b)``; ``kind="normal"``: mean ``a``, standard deviation ``b``.

        Default (host): the numpy reference of the stream (:mod:`portagrad.backends.philox`),
        computed on the host and uploaded with :meth:`from_host` (bit-identical by
        construction; costs host time and a transfer, no read back)."""
        if kind not in RANDOM_KINDS:
            raise unknown_op("random", kind, self.device_type)
        n = out.numel
        if n:
            _store(self, out, _host_ops.random(kind, n, out.dtype.numpy, seed, offset, a, b)
                        .reshape(out.shape))

    # ---------------------------------------------------------- linear algebra
    def eigh(self, a: View, uplo: str, w: View, v: View | None) -> None:
        """Symmetric (Hermitian) eigendecomposition of the float32/float64 (on a backend that
        stores complex, also complex64/complex128) matrices in the last two axes of ``a``
        (``(..., n, n)``, any strides; only the ``uplo`` triangle, ``"L"`` or ``"U"``, is read):
        eigenvalues in ascending order into ``w`` (``(..., n)``, of ``a``'s real dtype) and
        orthonormal eigenvectors, as the columns, into ``v`` (``(..., n, n)``, ``a``'s dtype;
        ``None``: values only). Outputs are contiguous, computed in ``a``'s precision (float32 in
        float32, as LAPACK's ``ssyevd`` and PyTorch). An eigenvector's sign is the backend's choice (the
        core's derivatives and tests do not depend on it). A matrix with a NaN or infinite
        entry gets NaN eigenvalues and eigenvectors (PyTorch's result), the others of the batch
        their own; the core never calls with a 0 in ``w``'s shape.

        Default (host): reads ``a`` back and calls LAPACK through ``numpy.linalg.eigh``: the
        matrices the core decomposes are small, and LAPACK's accuracy is the reference."""
        if 0 in w.shape:
            return
        vals, vecs = _host_ops.eigh(self.to_host(a), uplo, v is not None)
        _store(self, w, vals)
        if v is not None and vecs is not None:
            _store(self, v, vecs)

    def svd(self, a: View, full_matrices: bool, u: View | None, s: View,
            vh: View | None) -> None:
        """Singular value decomposition ``A = U diag(S) Vh`` of the float32/float64 (on a backend
        that stores complex, also complex64/complex128) ``(..., m, n)`` matrices of ``a`` (any
        strides), ``k = min(m, n)``: the singular values, descending, into ``s`` (``(..., k)``,
        of ``a``'s real dtype), the left singular vectors into ``u`` (``(..., m, m)`` with
        ``full_matrices``, else ``(..., m, k)``) and the right ones, as rows, into ``vh``
        (``(..., n, n)`` or ``(..., k, n)``); ``u`` and ``vh`` are both ``None`` for values only.
        Outputs are contiguous, computed in ``a``'s precision. Singular vectors' signs (phases)
        are the backend's choice. Non-finite entries raise :class:`~portagrad.errors.LinAlgError`.
        With ``k = 0`` the core builds the (identity) full matrices itself and never calls.

        Default (host): reads ``a`` back and calls LAPACK's ``gesdd`` through
        ``numpy.linalg.svd`` (PyTorch's CPU driver)."""
        if 0 in a.shape:
            return
        uu, ss, vv = _host_ops.svd(self.to_host(a), full_matrices, u is not None)
        _store(self, s, ss)
        if u is not None and vh is not None and uu is not None and vv is not None:
            _store(self, u, uu)
            _store(self, vh, vv)

    def eig(self, a: View, w: View, v: View | None) -> None:
        """Eigendecomposition of the general square matrices in the last two axes of ``a``
        (``(..., n, n)``, any strides; float32, float64 or, on a backend that stores complex,
        complex64/complex128): eigenvalues into the complex ``w`` (``(..., n)``, the complex
        dtype of ``a``'s precision) and right eigenvectors, as the columns, into ``v`` (``(...,
        n, n)``, same dtype; ``None``: values only), ``A V = V diag(w)``. Eigenvectors have unit
        2-norm (LAPACK's ``geev``; any other phase is the backend's choice: the core's
        derivatives and tests use only phase-invariant functions of them). The order of the
        eigenvalues is the backend's. Non-finite entries raise
        :class:`~portagrad.errors.LinAlgError`. The core never calls with a 0 in ``w``'s shape;
        a backend that declines complex never gets the call (the core refuses first).

        Default (host): reads ``a`` back and calls LAPACK's ``geev`` through
        ``numpy.linalg.eig`` (PyTorch's CPU routine)."""
        if 0 in w.shape:
            return
        vals, vecs = _host_ops.eig(self.to_host(a), v is not None)
        _store(self, w, vals)
        if v is not None and vecs is not None:
            _store(self, v, vecs)

    # ------------------------------------------------------------- Fourier transforms
    def fft_c2c(self, x: View, axes: Sequence[int], forward: bool, out: View) -> None:
        """Unnormalised complex-to-complex discrete Fourier transform of the complex64/
        complex128 ``x`` (any strides) over ``axes`` (distinct, non-negative, possibly none)
        into ``out`` (``x``'s shape and dtype, contiguous): ``forward`` is ``sum_j x[j]
        exp(-2 pi i j k / n)`` per axis, backward the same with ``+`` and no ``1 / n`` (the
        core applies PyTorch's ``norm``). The core never calls with a 0 in ``out``'s shape.

        Default (host): reads ``x`` back and calls pocketfft through ``numpy.fft``, in ``x``'s
        precision (PyTorch's CPU library)."""
        _store(self, out, _host_fft.fft_c2c(self.to_host(x), axes, forward))

    def fft_r2c(self, x: View, axes: Sequence[int], onesided: bool, out: View) -> None:
        """Unnormalised forward transform of the float32/float64 ``x`` over ``axes`` (non-empty)
        into the complex ``out`` of the matching precision: ``x``'s shape, or with ``onesided``
        the last of ``axes`` cut to ``n // 2 + 1`` (the rest of the spectrum is the reflected
        complex conjugate).

        Default (host): pocketfft through ``numpy.fft``, as :meth:`fft_c2c`."""
        _store(self, out, _host_fft.fft_r2c(self.to_host(x), axes, onesided))

    def fft_c2r(self, x: View, axes: Sequence[int], last_dim_size: int, out: View) -> None:
        """Unnormalised backward transform of the one-sided Hermitian complex ``x`` over
        ``axes`` (non-empty; ``x`` holds ``last_dim_size // 2 + 1`` entries along the last)
        into the real ``out`` of the matching precision, of ``last_dim_size`` entries along the
        last of ``axes``. The imaginary parts of the zero (and, for an even size, the Nyquist)
        frequency are ignored.

        Default (host): pocketfft through ``numpy.fft``, as :meth:`fft_c2c`."""
        _store(self, out, _host_fft.fft_c2r(self.to_host(x), axes, last_dim_size))

    # ----------------------------------------------------------------- events
    # Optional, all four or none (EVENT_METHODS): ``pg.<device_type>.Event`` (``torch.cuda.Event``)
    # needs them and raises portagrad.errors.UnsupportedOpError naming the missing ones when a
    # backend lacks any. They are not defined on this base class, so they are absent by default.
    # An event is an opaque object of the backend's choosing (OpenCL: a marker ``cl.Event``).
    #
    # def record_event(self, index: int) -> Any:
    #     """Enqueue a marker behind all work submitted so far to device ``index`` and return it
    #     (without waiting). The marker completes when that work has finished."""
    # def event_wait(self, event: Any) -> None:
    #     """Block the calling thread until ``event`` has completed."""
    # def event_query(self, event: Any) -> bool:
    #     """Whether ``event`` has completed; never blocks."""
    # def event_elapsed_ms(self, start: Any, end: Any) -> float:
    #     """Milliseconds (not seconds) of device time between two events recorded on one
    #     device, ``start`` first (waits for both): the time between the moments the device
    #     reached the two markers, idle time included (as ``cudaEventElapsedTime``), so events
    #     recorded 50 ms apart on an idle device are about 50 apart. ``Event.elapsed_time``
    #     calls it only for events created with ``enable_timing=True``; a host-memory backend
    #     may return host wall-clock time."""

    # ------------------------------------------------------- optional fast paths
    # A backend may define any of the methods below (see OPTIONAL_METHODS); the core checks with
    # ``getattr(backend, name, None)`` and composes the operation from the required primitives
    # when one is missing. They are forward computations only: derivatives stay in the core (which
    # calls them for gradients while nothing is recorded, and composes public ops under
    # ``create_graph``). They are not defined on this base class, so they are absent by default.
    #
    # Softmax (used by softmax/log_softmax of every floating dtype when it exists; otherwise the
    # core composes max, sub, exp, sum and div/log):
    #
    # def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
    #     """``out = exp(x - max) / sum(exp(x - max))`` along ``axis`` (``log=True``: ``x - max -
    #     log(sum(exp(x - max)))``), max and sum taken over ``axis``. ``x`` and ``out`` are
    #     contiguous (``x`` may start at an offset of its buffer: a contiguous slice), of one
    #     shape and floating dtype; ``axis`` is in ``[0, ndim)``; the axis may have length 0
    #     (nothing to write). Subtracting the maximum is what keeps large inputs
    #     finite, as in PyTorch; a row that contains NaN or ``+inf`` gives NaN."""
    #
    # Convolution (used by conv1d/conv2d for every ``groups``; 1-D runs as height-1 2-D). The
    # core uses them only when all three exist and the dtype is floating. ``x`` is (N, C, H, W),
    # ``w`` (O, C/groups, kh, kw), ``g`` and the forward ``out`` (N, O, OH, OW); ``stride``,
    # ``padding`` and ``dilation`` are (h, w) pairs of ints. ``padding`` is the zero padding
    # *before* each axis; the output size in ``out``/``g`` fixes how far windows reach (so the
    # padding after an axis, possibly different, e.g. ``padding="same"`` with an even kernel, is
    # implied). Positions outside the input read 0. Inputs may be strided views; outputs are
    # contiguous and fully overwritten. Bias is added by the core.
    #
    # def conv2d(self, x, w, out, stride, padding, dilation, groups) -> None:
    #     """``out[n, o, i, j] = sum_{c, u, v} x[n, g(o)*C/groups + c, i*sh - ph + u*dh,
    #     j*sw - pw + v*dw] * w[o, c, u, v]`` (cross-correlation, as ``torch.nn.functional``)."""
    # def conv2d_grad_input(self, g, w, out, stride, padding, dilation, groups) -> None:
    #     """``out`` (N, C, H, W) = gradient of ``sum(conv2d(x, w) * g)`` w.r.t. ``x`` (a
    #     transposed convolution of ``g``; overlapping windows sum)."""
    # def conv2d_grad_weight(self, x, g, out, stride, padding, dilation, groups) -> None:
    #     """``out`` (O, C/groups, kh, kw) = gradient of ``sum(conv2d(x, w) * g)`` w.r.t. ``w``."""
    #
    # Max pooling (used by max_pool1d/max_pool2d when both exist and the dtype is floating):
    #
    # def max_pool2d(self, x, out, indices, kernel_size, stride, padding, dilation) -> None:
    #     """For every window of ``x`` (N, C, H, W), the maximum into ``out`` (N, C, OH, OW) and
    #     the int64 flat position ``h * W + w`` of that element into ``indices`` (same shape).
    #     Positions outside the input (``padding`` before each axis; the output size fixes the
    #     extent after, as with ``ceil_mode``) read ``-inf`` and are never chosen. PyTorch's rules:
    #     the first maximum in window order (row-major over the kernel) wins ties; NaN propagates
    #     and the last NaN of a window is the one pointed at; a window of only ``-inf`` points at
    #     its first position inside the input."""
    # def max_pool2d_grad_input(self, g, indices, out, kernel_size, stride, padding,
    #                           dilation) -> None:
    #     """``out`` (N, C, H, W) = zeros with ``g`` (N, C, OH, OW) added at the flat positions
    #     ``indices`` of each (n, c) plane (overlapping windows accumulate)."""
    #
    # Normalisation fast paths, used while nothing records (the backward ones by ``backward``
    # without ``create_graph``). ``softmax_backward`` is used on its own, for the dtypes
    # ``softmax`` sees; the others only in pairs (``layer_norm`` with ``layer_norm_backward``,
    # ``batch_norm`` with ``batch_norm_backward``, ``cross_entropy`` with
    # ``cross_entropy_backward``) and for float32/float64 operands of ONE dtype (the core
    # composes otherwise). Every view is contiguous; ``mean``/``rstd`` are the statistics the
    # forward saves for the backward (biased variance, ``rstd = 1 / sqrt(var + eps)``), in the
    # input's dtype. An output given as ``None`` is not wanted; the others are fully overwritten.
    # Sums accumulate in at least the input's precision (float32 for float16/bfloat16).
    #
    # def softmax_backward(self, g: View, y: View, axis: int, out: View, log: bool) -> None:
    #     """Gradient of :meth:`softmax` along ``axis`` from its output ``y`` and the incoming
    #     gradient ``g`` (one shape): ``out = y * (g - sum(g * y))`` (``log=False``) or ``out = g
    #     - exp(y) * sum(g)`` (``log=True``), sums over ``axis``."""
    # def layer_norm(self, x, weight, bias, eps: float, out, mean, rstd) -> None:
    #     """Normalise each row of the (M, N) ``x``: ``out = (x - mean) * rstd * weight + bias``
    #     with ``weight``/``bias`` (N,) or ``None`` (1 and 0); ``mean``/``rstd`` (M,) receive the
    #     row statistics, or are ``None`` when no gradient will be asked for. N may be 0 (then
    #     ``mean`` is 0 and ``rstd`` is ``1 / sqrt(eps)``), M may be 0. Without statistics,
    #     ``x`` and ``out`` may be views of a 16-bit dtype named in ``layer_norm_half_dtypes``
    #     (``weight``/``bias`` of that dtype or float32): computed in float32, rounded once."""
    # def layer_norm_backward(self, g, x, weight, mean, rstd, grad_x, grad_weight,
    #                         grad_bias) -> None:
    #     """Gradients of :meth:`layer_norm` for the (M, N) ``g``: ``grad_x`` (M, N) = ``rstd *
    #     (gw - mean(gw) - xhat * mean(gw * xhat))`` per row, where ``xhat = (x - mean) * rstd``
    #     and ``gw = g * weight``; ``grad_weight`` (N,) = column sums of ``g * xhat``,
    #     ``grad_bias`` (N,) = column sums of ``g`` (0 when M is 0). Any of the three may be
    #     ``None``; ``weight`` may be ``None`` (1)."""
    # def batch_norm(self, x, weight, bias, running_mean, running_var, momentum: float,
    #                eps: float, out, mean, rstd) -> None:
    #     """Training-mode batch normalisation of the (N, C, L) ``x`` (the core flattens the
    #     spatial dimensions), statistics per channel over (N, L), N * L >= 2:
    #     ``out = (x - mean) * rstd * weight + bias`` (``weight``/``bias`` (C,) or ``None``),
    #     ``mean``/``rstd`` (C,) receive the batch statistics. The running statistics are updated
    #     here, in place, when given (each (C,) or ``None``): ``running_mean = (1 - momentum) *
    #     running_mean + momentum * mean`` and the same for ``running_var`` with the *unbiased*
    #     batch variance ``var * n / (n - 1)``, ``n = N * L`` (PyTorch's rule; the core has
    #     already turned ``momentum=None`` into the cumulative factor)."""
    # def batch_norm_backward(self, g, x, weight, mean, rstd, grad_x, grad_weight,
    #                         grad_bias) -> None:
    #     """Gradients of training-mode :meth:`batch_norm` for the (N, C, L) ``g``, per channel
    #     over ``n = N * L`` elements: ``grad_x = weight * rstd * (g - sum(g) / n - xhat *
    #     sum(g * xhat) / n)``, ``grad_weight = sum(g * xhat)``, ``grad_bias = sum(g)`` (C,),
    #     ``xhat = (x - mean) * rstd``. Any output may be ``None``; ``weight`` may be ``None``."""
    # def cross_entropy(self, x, target, weight, ignore_index: int, loss, lse,
    #                   row_weight) -> None:
    #     """Per-row cross entropy of the (N, C) logits ``x`` against the int64 class indices
    #     ``target`` (N,), which the core has checked lie in ``[0, C)`` or equal
    #     ``ignore_index``. ``lse`` (N,) = ``log(sum(exp(x)))`` per row (max-subtracted);
    #     ``row_weight`` (N,) = ``weight[target]`` (1 when ``weight`` (C,) is ``None``), 0 for an
    #     ignored row; ``loss`` (N,) = ``row_weight * (lse - x[i, target])`` (0 when ignored)."""
    # def cross_entropy_backward(self, x, target, lse, coef, grad_x) -> None:
    #     """``grad_x`` (N, C) = ``coef[i] * (exp(x[i, j] - lse[i]) - [j == target[i]])`` from the
    #     saved ``lse`` and the per-row factor ``coef`` (N,) (the core folds the incoming
    #     gradient, the row weight and the ``mean`` divisor into it)."""
    #
    # GELU, exact (``approximate="none"``), used by ``gelu`` of float32 tensors only in the pair,
    # the backward while nothing records (the core composes otherwise, and for other dtypes).
    # Every view is contiguous, all of one shape and float32 (or all of one 16-bit dtype named in
    # ``gelu_half_dtypes``: computed in float32 and rounded once). The values are those of the core's
    # composition (``erf`` the backend's own, as its ``unary("erf")``), in its order of
    # operations; a backend may round differently within an ulp of each step.
    #
    # def gelu(self, x, out) -> None:
    #     """``out = (x * 0.5) * (erf(x * (1/sqrt(2))) + 1)``."""
    # def gelu_backward(self, g, x, out) -> None:
    #     """``out = g * ((erf(x * (1/sqrt(2))) + 1) * 0.5 + x * (exp(x * x * -0.5) *
    #     (1/sqrt(2 pi))))``."""
    #
    # Fused scaled dot-product attention (used by ``scaled_dot_product_attention`` only in the
    # pair, without dropout, for q/k/v of ONE dtype among float32, float64, float16, bfloat16;
    # the core composes otherwise). ``q`` is (*B, L, D), ``k`` (*B, S, D), ``v`` (*B, S, Dv),
    # all contiguous, with the same batch dimensions ``*B`` (zero or more). ``mask`` is ``None``
    # or a view of shape (*B, L, S), possibly expanded (zero strides), either bool (True = may
    # attend) or of q's dtype (added to the scores). ``causal``: query i attends to keys
    # j <= i (PyTorch's top-left alignment, ``tril`` of an (L, S) matrix), combined with no mask.
    # ``lse`` (*B, L) is float32 for 16-bit inputs, else q's dtype. The (L, S) score matrix
    # need not (and should not) be materialised whole: its rows may be recomputed blockwise.
    # 16-bit inputs compute in float32 and round once. A row that may attend to nothing gets
    # output 0, ``lse = -inf`` and zero gradients.
    #
    # A backend whose fused kernels are slower than the composition for some devices or sizes
    # (the OpenCL backend's, except where the L x S scores would crowd the device) may also
    # define ``fused_attention(index, scores) -> bool``: False for device ``index`` and
    # ``scores`` attention scores (batch x L x S) makes the core compose.
    #
    # A backend that defers work (the OpenCL backend's elementwise fusion keeps a group of
    # pending writes, and stores only the outputs someone can still read) may define
    # ``discard(buffer)``: the contents ``buffer`` (an object :meth:`allocate` returned) holds
    # now will never be read, so a pending write into it may be skipped. A captured step's replay
    # calls it for each temporary after its last launch: the replay keeps every temporary's
    # memory alive, so liveness cannot be told from the buffers as in an eager step.
    #
    # A backend whose calls cost more host time than their kernels may define
    # ``begin_trace() -> token`` and ``end_trace(token) -> trace | None``: between the two, this
    # thread's calls run as usual and what they enqueue is noted; ``trace.run()`` then enqueues
    # the same work again without the calls (a captured step's replay uses it for the runs of
    # launches between random draws and host reads). ``end_trace`` returns ``None`` when the run
    # cannot be repeated that way (it read device memory on the host, waited, or another thread
    # was tracing); the caller then makes the calls every time. Work pending inside the backend
    # is flushed at both ends and before ``run``; memory the calls allocated for themselves
    # stays the trace's.
    #
    # A backend whose reads wait for queued work may define ``defer_check(view, check)``: read
    # the few elements of ``view`` (as they are in queue order now) without waiting, and call
    # ``check(values)`` (a numpy array) once, at the device's next ``to_host`` or
    # ``synchronize``, letting what it raises out of that call. The core's index checks of
    # cross-entropy targets and of ``index_select`` (embeddings) use it, so that a training step
    # does not wait for its forward pass. Such a backend's ``gather`` and ``scatter`` must then stay
    # in bounds for any index (one outside the axis gathers an unspecified value and scatters
    # nothing): they may run before the check reports.
    #
    # def attention(self, q, k, v, mask, causal: bool, scale: float, out, lse) -> None:
    #     """``out`` (*B, L, Dv) = ``softmax(s) v`` and ``lse`` (*B, L) = ``log(sum(exp(s)))``
    #     per row, ``s = q k^T * scale`` (+ mask, -inf where masked out)."""
    # def attention_backward(self, g, q, k, v, out, lse, mask, causal: bool, scale: float, dq,
    #                        dk, dv) -> None:
    #     """Gradients of :meth:`attention` for the incoming ``g`` (*B, L, Dv), with ``p =
    #     exp(s - lse)`` recomputed (0 where ``lse`` is -inf): ``dv = p^T g``, ``ds = p * (g v^T -
    #     rowsum(g * out))``, ``dq = scale * ds k``, ``dk = scale * ds^T q``; all three fully
    #     overwritten."""


REQUIRED_METHODS = (
    "device_count", "get_device_properties", "allocate", "from_host", "to_host", "copy", "fill",
    "unary", "binary", "reduce", "matmul",
)
"""The small core: methods a backend must implement (not inherit from :class:`Backend`). Each is
irreducible: ``device_count``/``get_device_properties`` describe hardware only the backend knows;
``allocate``, ``from_host`` and ``to_host`` are the only ways to create device memory and move
data in and out of it (every default is built on them); ``copy`` is the strided, converting copy
behind every layout change and cast (a host round trip for it would put a transfer under every
``contiguous``, ``reshape`` and ``to(dtype)``); ``fill`` initialises memory (``zeros``,
``zero_``) and would otherwise cost an upload per call; ``unary``, ``binary`` and ``reduce`` are
the arithmetic everything else is composed of; ``matmul`` carries the bulk of the work of every
model (linear layers, convolutions through im2col) and has no cheap composition."""

DEFAULTED_METHODS = (
    "synchronize", "memory_stats", "reset_peak_memory_stats", "empty_cache", "copy_between",
    "where", "arg_reduce", "cumsum", "gather", "scatter", "sort", "random",
)
"""Methods with a working default on :class:`Backend` (a backend overrides them for speed). The
ones in :data:`HOST_DEFAULTS` go through the host; ``synchronize`` (nothing to wait for: an
asynchronous backend overrides it),
``memory_stats``/``reset_peak_memory_stats`` (:attr:`Backend.memory_counter`) and ``empty_cache``
(nothing to release) cost nothing worth mentioning."""

HOST_DEFAULTS = (
    "copy_between", "where", "arg_reduce", "cumsum", "gather", "scatter", "sort", "random",
)
"""The slow defaults: each reads its operands back with ``to_host`` (a synchronisation on an
asynchronous device), computes with numpy and uploads the result (``random`` only uploads). The
core calls ``where`` and ``gather`` most (masks, activations' gradients, indexing, embedding,
cross-entropy), so they are the first to replace."""

OPTIONAL_METHODS = ("allocate_array", "binary_array", "mm", "host_array", "wrap_host", "pin_memory",
                    "is_pinned", "softmax",
                    "conv2d", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d",
                    "max_pool2d_grad_input",
                    "softmax_backward", "layer_norm", "layer_norm_backward", "batch_norm", "batch_norm_backward", "cross_entropy", "cross_entropy_backward",  # noqa: E501
                    "gelu", "gelu_backward",
                    "attention", "attention_backward", "fused_attention", "discard",
                    "begin_trace", "end_trace", "defer_check",
                    "record_event", "event_wait", "event_query", "event_elapsed_ms")
"""Methods the core uses when a backend overrides them, composing or skipping otherwise."""

LINALG_METHODS = ("eigh", "svd", "eig")
"""Decompositions that need an iterative solver, with a host default on :class:`Backend`
(LAPACK through numpy) that a backend overrides only with a solver of its own; the built-in
OpenCL backend keeps the default (small matrices, LAPACK's accuracy). Not in
:data:`DEFAULTED_METHODS`: a backend object that does not subclass :class:`Backend` need not have
them, and the core then uses the default on it."""

FFT_METHODS = ("fft_c2c", "fft_r2c", "fft_c2r")
"""The discrete Fourier transforms (complex input or output), with a host default on
:class:`Backend` (pocketfft through numpy) that a backend overrides with a device FFT of its own.
As :data:`LINALG_METHODS`, not required of a backend object that does not subclass
:class:`Backend`: the core uses the default on it. A backend that declines complex storage
declines these with it (``to_host``/``from_host`` raise its ``DTypeError``)."""

EVENT_METHODS = ("record_event", "event_wait", "event_query", "event_elapsed_ms")
"""Optional, as a group: what ``pg.<device_type>.Event`` needs (see the "events" section of
:class:`Backend`). A backend that has none of them has no events; one with only some is treated
as having none (the error names the missing ones)."""


def unknown_op(kind: str, op: str, backend: str) -> UnsupportedOpError:
    """The error a backend raises for an op name outside the contract.

    ``kind`` is the primitive (``"unary"``, ``"binary"``, ``"reduce"``, ``"arg_reduce"`` or
    ``"random"``), ``op`` the name it was given and
    ``backend`` the device type. The message names all three and lists the ops of the contract,
    so a typo in a caller (or an op this contract version lacks) is found at once. Backends write
    ``raise unknown_op("unary", op, self.device_type)``.
    """
    known = {"unary": UNARY_OPS, "binary": BINARY_OPS + COMPARISON_OPS, "reduce": REDUCE_OPS,
             "arg_reduce": ARG_REDUCE_OPS, "random": RANDOM_KINDS}[kind]
    return UnsupportedOpError(
        op, backend, f"{kind} op {op!r} is not implemented by the {backend!r} backend: it is not "
        f"an op of the backend contract (known {kind} ops: {', '.join(known)})")


# The defaults' two halves of a host round trip. Module functions, not methods, so that a
# backend's own attributes can never shadow them.
def _store(backend: Backend, out: View, result: np.ndarray) -> None:
    """Write the host array ``result`` (``out``'s shape) into ``out`` through
    :meth:`Backend.from_host`, honouring ``out``'s strides: a non-contiguous ``out`` is written by
    reading the span of its buffer that it covers, setting its elements on the host and uploading
    the span (the elements in between keep their values). Nothing is written for an empty
    ``out``."""
    if 0 in out.shape:
        return
    np_dtype = out.dtype.numpy
    if out.is_contiguous():
        backend.from_host(out, np.ascontiguousarray(result, dtype=np_dtype).reshape(out.shape))
        return
    # the smallest contiguous run of the buffer holding every element of out (strides >= 0)
    span = 1 + sum((n - 1) * st for n, st in zip(out.shape, out.strides))
    whole = View(out.buffer, out.offset, (span,), (1,), out.dtype)
    host = np.ascontiguousarray(backend.to_host(whole), dtype=np_dtype)
    isz = np_dtype.itemsize
    np.lib.stride_tricks.as_strided(
        host, out.shape, tuple(st * isz for st in out.strides))[...] = result
    backend.from_host(whole, host)


def _host_value(backend: Backend, x: View | int | float | bool) -> Any:
    """A view's contents as a host array (a Python scalar is returned as it is)."""
    return backend.to_host(x) if isinstance(x, View) else x


def decline_complex(backend: object, dtype: Any, device: object) -> None:
    """Raise :class:`~portagrad.errors.DTypeError` when ``dtype`` is complex and ``backend`` does
    not store complex tensors (its ``supports_complex`` is false): the core calls this where a
    complex tensor would be made on a device, before any kernel sees a complex view."""
    if dtype._kind == 3 and not getattr(backend, "supports_complex", False):
        raise DTypeError(f"{dtype} tensors are not supported by the "
                         f"{getattr(backend, 'device_type', '') or type(backend).__name__} "
                         f"backend (device {device}): it declines complex dtypes")
