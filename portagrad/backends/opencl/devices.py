"""OpenCL device discovery and per-device state (context, queue, program cache, allocator).

Order: every device of every platform, GPUs first (best first, by compute units x clock, then
memory), then the others in platform order; ``PORTAGRAD_VISIBLE_DEVICES`` then picks and reorders
them (:func:`portagrad.backends._visible.visible_indices`).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import DTypeError
from .._visible import visible_indices
from ..interface import DeviceProperties
from .allocator import CachingAllocator
from .errors import BuildError, cl_errors, translate

__all__ = ["Device", "Kernel", "discover", "make_devices"]


def _type_name(cl: Any, t: int) -> str:
    if t & cl.device_type.GPU:
        return "gpu"
    if t & cl.device_type.ACCELERATOR:
        return "accelerator"
    if t & cl.device_type.CPU:
        return "cpu"
    return "other"


def discover() -> list[Any]:
    """Physical OpenCL devices in portagrad's order (before visibility filtering)."""
    import pyopencl as cl

    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD / no platform: the backend simply has no devices
        return []
    gpus: list[Any] = []
    others: list[Any] = []
    for p in platforms:
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for d in devs:
            (gpus if d.type & cl.device_type.GPU else others).append(d)
    gpus.sort(key=lambda d: (d.max_compute_units * d.max_clock_frequency, d.global_mem_size),
              reverse=True)
    return gpus + others


#: PoCL 3.0 compiles each call of these builtins as a call into its kernel library, even
#: ``isnan`` (in every ReLU, maximum, max-reduction and softmax element), and a call inside a loop
#: also makes LLVM spill the loop's vector registers around it. ``x != x`` is the same test (true
#: for NaN only, without fast-math options), 1 for scalars and -1 per lane for vectors as
#: ``isnan`` returns, and compiles to one compare. (PoCL's headers define ``isnan`` as a macro:
#: redefining it without the ``#undef`` made clang print "1 warning generated." to the process's
#: stderr at every kernel build.)
_POCL_INLINE = "#undef isnan\n#define isnan(x) ((x) != (x))\n"


class Kernel:
    """A built kernel of one device that any thread may launch: ``kernel(queue, global_size,
    local_size, *args, global_offset=None)`` as a ``pyopencl.Kernel``.

    Why not the ``pyopencl.Kernel`` itself: its call sets the arguments *on the kernel object*
    (``clSetKernelArg``, which OpenCL does not make thread-safe for one kernel object) and then
    enqueues, in separate steps; two threads launching one cached kernel interleave, and one
    launch runs with the other's arguments (or the driver frees an argument another thread's
    enqueue is reading). This object does both under the device's :attr:`Device.launch_lock`.
    Hot paths that launch a cached plan use :attr:`cl` and :attr:`lock` directly (one lock, no
    extra call), the same rule spelled out."""

    __slots__ = ("cl", "lock")

    def __init__(self, cl_kernel: Any, lock: Any) -> None:
        self.cl = cl_kernel
        self.lock = lock

    def __call__(self, queue: Any, global_size: Any, local_size: Any, *args: Any,
                 global_offset: Any = None) -> Any:
        lock = self.lock
        lock.acquire()
        try:
            if global_offset is None:  # (a keyword argument costs pyopencl a slower call)
                return self.cl(queue, global_size, local_size, *args)
            return self.cl(queue, global_size, local_size, *args, global_offset=global_offset)
        finally:
            lock.release()


class Device:
    """One visible OpenCL device: its context, in-order queue, kernels and allocator.

    Threads share it. What guards what:

    * :attr:`launch_lock` (re-entrant: a finalizer may launch while this thread holds it) is held
      from setting a kernel object's arguments to its enqueue, for every kernel of the device
      (:class:`Kernel`, :meth:`launch1d`, the cached launch plans of :mod:`.launch` and
      :mod:`.fusion`). Nothing else is done under it, so no other lock is taken inside it (but
      the allocator's, by a finalizer returning a buffer during a garbage collection).
    * ``_build_lock`` makes the program and kernel caches build each entry once; lookups that hit
      take no lock (a dict lookup is atomic).
    * :attr:`stage_lock` guards the pinned staging buffers of large device->host reads
      (:mod:`.runtime`).
    * the allocator has its own lock (:mod:`.allocator`).

    The queue itself needs no lock: OpenCL's enqueue and wait calls are thread-safe, and each
    thread's commands keep their order on the in-order queue, which is all the allocator's reuse
    rule needs (a buffer is freed after its last command was enqueued; whoever gets it next
    enqueues after that)."""

    def __init__(self, index: int, cl_device: Any) -> None:
        import pyopencl as cl

        self.index = index
        self.cl_device = d = cl_device
        self.name = d.name.strip()
        self.label = f"opencl:{index} ({self.name})"
        exts = d.extensions.split()
        self.fp64 = "cl_khr_fp64" in exts or bool(getattr(d, "double_fp_config", 0))
        self.fp16 = "cl_khr_fp16" in exts
        #: "cpu", "gpu", "accelerator"...; ``PORTAGRAD_OPENCL_DEVICE_TYPE`` overrides it, which
        #: picks the kernels of that kind of device: the CPU kernel families are checked on
        #: Oclgrind (a simulator that reports itself a GPU) that way
        self.type = os.environ.get("PORTAGRAD_OPENCL_DEVICE_TYPE") or _type_name(cl, d.type)
        self.is_gpu = self.type == "gpu"
        #: PoCL compiles with clang, so clang builtins (non-temporal stores) are available
        self.is_pocl = "Portable Computing Language" in d.platform.name
        #: generated kernels read and write vectors through pointers instead of vloadn/vstoren,
        #: which PoCL calls out of line, spilling a loop's vector registers (see .vectors);
        #: ``PORTAGRAD_OPENCL_DIRECT_VECTORS=0|1`` overrides it (to check those kernels elsewhere)
        env_direct = os.environ.get("PORTAGRAD_OPENCL_DIRECT_VECTORS")
        self.direct_vectors = self.is_pocl if not env_direct else env_direct == "1"
        #: text put before every program's source: on PoCL, inline forms of builtins it calls
        #: out of line (see _POCL_INLINE)
        self.source_prefix = _POCL_INLINE if self.is_pocl else ""
        #: alignment of every buffer's start, in bytes
        self.mem_align = int(d.mem_base_addr_align) // 8
        with cl_errors(self.label, "creating the context and queue"):
            self.context = cl.Context([d])
            try:
                self.queue = cl.CommandQueue(
                    self.context, d, properties=cl.command_queue_properties.PROFILING_ENABLE)
            except cl.Error:  # profiling unsupported: events then have no timings
                self.queue = cl.CommandQueue(self.context, d)
        self.properties = DeviceProperties(
            name=self.name, type=self.type, total_memory=int(d.global_mem_size), fp64=self.fp64,
            fp16=self.fp16, compute_units=int(d.max_compute_units), max_alloc=int(d.max_mem_alloc_size),
            extra={"platform": d.platform.name.strip(), "vendor": d.vendor.strip(),
                   "driver_version": d.driver_version.strip(), "opencl_version": d.version.strip(),
                   "max_work_group_size": int(d.max_work_group_size),
                   "local_mem_size": int(d.local_mem_size)})
        self.max_wg = int(d.max_work_group_size)
        #: local size of the main launch of 1-D kernels (the tail runs with local size 1)
        self.local_size = min(256 if self.is_gpu else 64, self.max_wg)
        #: how elementwise kernels are laid out (see :mod:`.kernels`): "loop" (CPU devices: each
        #: work-item loops over a chunk, which the compiler vectorises; one launch for any size),
        #: "grid" (GPUs: one element per work-item, bounds-checked, N-D ranges for strided views)
        #: or "exact" (one element per work-item, exact main launch + tail, no bounds check).
        #: ``PORTAGRAD_OPENCL_EW_STYLE`` overrides it (tests and benchmarks use that).
        self.ew_style = os.environ.get("PORTAGRAD_OPENCL_EW_STYLE") or ("grid" if self.is_gpu else "loop")
        #: in the "grid" style, contiguous elementwise ops on fewer elements than this (and not a
        #: multiple of ``local_size``) run as ONE launch of a bounds-checked kernel instead of an
        #: exact-size main launch plus a tail launch. On PoCL the guard stops vectorisation but
        #: saves a launch, which wins only for small sizes (the default is where the two cost the
        #: same). GPUs do not care about the guard, so there every size gets one guarded launch.
        env = os.environ.get("PORTAGRAD_OPENCL_GUARD_BELOW")
        self.guard_below = int(env) if env else (1 << 62 if self.is_gpu else 8192)
        #: work-group size of reductions (power of two)
        self.reduce_wg = min(256 if self.is_gpu else 64, 1 << (self.max_wg.bit_length() - 1))
        self.allocator = CachingAllocator(self.context, self.label, index,
                                          int(d.global_mem_size), int(d.max_mem_alloc_size))
        single_cfg = int(getattr(d, "single_fp_config", 0) or 0)
        # float32 divide and sqrt correctly rounded, as numpy's (the OpenCL default allows 2.5 ulp)
        self.build_options = ["-cl-fp32-correctly-rounded-divide-sqrt"] if single_cfg & (1 << 7) else []
        self._programs: dict[Any, Any] = {}
        self._kernels: dict[Any, Kernel] = {}
        #: deferred checks (see ``RuntimeMixin.defer_check``): (event of the read, host array,
        #: check), run at the device's next host read or synchronisation; guarded by checks_lock
        self.checks: list[tuple[Any, Any, Callable[[Any], None]]] = []
        self.checks_lock = threading.Lock()
        self.launch_lock = threading.RLock()
        self._build_lock = threading.RLock()
        self.stage_lock = threading.Lock()

    # ------------------------------------------------------------ programs
    def require_dtypes(self, dtypes: Sequence[str]) -> None:
        """Raise :class:`DTypeError` when the device lacks a capability ``dtypes`` need."""
        if not self.fp64:
            for dt in ("float64", "complex128"):  # complex128: pairs of float64
                if dt in dtypes:
                    alt = "complex64" if dt == "complex128" else "float32"
                    raise DTypeError(f"{self.label} does not support {dt} (no cl_khr_fp64); "
                                     f"use {alt} tensors on this device")
        # float16 needs nothing: it is stored as bits and computed in float on every device

    def program(self, key: Any, source: Callable[[], str], dtypes: Sequence[str], what: str) -> Any:
        """The built program for ``key``, generating ``source()`` and building it on first use.

        pyopencl keeps its binary cache on disk (and PoCL its own), so a warm build is cheap."""
        prg = self._programs.get(key)
        if prg is not None:
            return prg
        with self._build_lock:  # one build per program, not one per thread that missed
            prg = self._programs.get(key)
            if prg is not None:
                return prg
            import pyopencl as cl

            self.require_dtypes(dtypes)
            src = self.source_prefix + source()
            try:
                with warnings.catch_warnings():
                    # a successful build's log is the driver's notes on our own kernels (NVIDIA's:
                    # "Function pg_ne is a kernel, so overriding noinline attribute"): nothing a
                    # user can act on, and an error under -W error
                    warnings.simplefilter("ignore", cl.CompilerWarning)
                    prg = cl.Program(self.context, src).build(options=self.build_options)
                names = prg.get_info(cl.program_info.KERNEL_NAMES)
            except cl.Error as exc:
                err = translate(exc, self.label, what)
                if isinstance(err, BuildError):
                    raise BuildError(f"{err}\n--- source ---\n{src}") from exc
                raise err from exc
            if not names and "__kernel" in src:
                # a driver defect, not a build error: caught here, with its cause, instead of
                # as CL_INVALID_KERNEL_NAME at the first kernel (see .vectors)
                raise BuildError(
                    f"{self.label}: building {what} succeeded but the program has no kernels; "
                    "the driver's kernel cache returned a broken program (PoCL does this for "
                    "kernels calling builtins on 64-byte vectors on CPUs its LLVM takes for "
                    "models without AVX-512); POCL_KERNEL_CACHE=0 works around it"
                    f"\n--- source ---\n{src}")
            self._programs[key] = prg
        return prg

    def kernel(self, key: Any, name: str, source: Callable[[], str], dtypes: Sequence[str],
               arg_types: Sequence[Any] | Callable[[], Sequence[Any]] | None = None) -> Kernel:
        """Kernel ``name`` of program ``key``, with scalar argument dtypes set (cached), as a
        :class:`Kernel` any thread may launch."""
        kkey = (key, name)
        k = self._kernels.get(kkey)
        if k is not None:
            return k
        with self._build_lock:
            k = self._kernels.get(kkey)
            if k is not None:
                return k
            # checked for every kernel, not only when its program is built: a program made
            # earlier for other kernels (the casts of one source dtype) lacks this kernel when
            # the device lacks its dtype, which would otherwise surface as INVALID_KERNEL_NAME
            self.require_dtypes(dtypes)
            prg = self.program(key, source, dtypes, f"{key[0]} kernels {key[1:]}")
            import pyopencl as cl

            ck = cl.Kernel(prg, name)
            if callable(arg_types):  # computed only on a cache miss
                arg_types = arg_types()
            if arg_types is not None:
                ck.set_scalar_arg_dtypes(list(arg_types))
            k = self._kernels[kkey] = Kernel(ck, self.launch_lock)
        return k

    # ------------------------------------------------------------ launching
    def launch1d(self, kernel: Kernel, n: int, args: Sequence[Any]) -> None:
        """Run ``kernel`` on exactly ``n`` work-items: a main launch with the device's local size
        and a tail launch of local size 1 at a global offset (kernels have no bounds check)."""
        if n <= 0:
            return
        q = self.queue
        ls = self.local_size
        main = n - n % ls
        k = kernel.cl
        with self.launch_lock:
            if main:
                k(q, (main,), (ls,), *args)
            if n != main:
                k(q, (n - main,), (1,), *args, global_offset=(main,))

    def finish(self) -> None:
        with cl_errors(self.label, "synchronize"):
            self.queue.finish()

    def run_checks(self, done_only: bool = False) -> None:
        """Run the deferred checks (see ``RuntimeMixin.defer_check``), each once, waiting for its
        read (``done_only``: only those whose read has completed, without waiting); the first
        exception one of them raises is raised after all have run."""
        if not self.checks:
            return
        with self.checks_lock:
            if done_only:
                import pyopencl as cl

                complete = cl.command_execution_status.COMPLETE
                todo: list[Any] = []
                keep: list[Any] = []
                for c in self.checks:
                    (todo if c[0].command_execution_status == complete else keep).append(c)
                self.checks[:] = keep
            else:
                todo = list(self.checks)
                self.checks.clear()
        first: BaseException | None = None
        for ev, values, check in todo:
            try:
                with cl_errors(self.label, "reading a check's values"):
                    ev.wait()
                check(values)
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first


#: every Device made, for the wait at interpreter exit
_LIVE: weakref.WeakSet[Device] = weakref.WeakSet()


def _finish_at_exit() -> None:
    """Wait for the commands still queued on every device before the process exits.

    A program may end with work in flight (its last result never read). Without this wait the
    exit runs the shared libraries' destructors while a driver thread still executes it: PoCL
    compiles a kernel at its first launch with the LLVM in its library, and that LLVM's static
    objects are destroyed under the compiling thread (a segfault after the program's last line).
    Runs from :mod:`atexit`, so before any module is torn down; forked children leave with
    ``os._exit`` and never get here."""
    for dev in list(_LIVE):
        try:
            dev.finish()
        except Exception:  # a lost device cannot be waited for; exiting is all that is left
            continue
        try:
            dev.run_checks()
        except Exception as exc:  # nothing is left to raise it in: say it
            print(f"portagrad: {type(exc).__name__}: {exc} (a check of an operation on "
                  f"{dev.label} found it at exit; no later read of the device raised it)",
                  file=sys.stderr)


def make_devices() -> list[Device]:
    """Create :class:`Device` objects for the visible devices, in logical order."""
    phys = discover()
    devices = [Device(i, phys[p]) for i, p in enumerate(visible_indices("opencl", len(phys)))]
    # registered after pyopencl's own exit hooks, so it runs before them
    atexit.unregister(_finish_at_exit)
    atexit.register(_finish_at_exit)
    _LIVE.update(devices)
    return devices

