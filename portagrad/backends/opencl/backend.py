"""The OpenCL backend: every OpenCL device (GPUs first) through pyopencl.

Per device: one context, one in-order queue (profiling on, for events), a caching allocator and a
cache of built kernels. Primitives only *enqueue*; :meth:`OpenCLBackend.to_host` and
:meth:`OpenCLBackend.synchronize` wait.

:class:`OpenCLBackend` assembles the parts and owns their state:

* the device runtime: :mod:`.runtime` (devices, events, memory, host copies), :mod:`.devices`,
  :mod:`.allocator`, :mod:`.pinned`, :mod:`.errors`;
* the primitives: :mod:`.primitives` (elementwise, reductions, GEMM, index ops, sort, random),
  :mod:`.conv` (convolution and max pooling), :mod:`.norms` (softmax, layer/batch norm,
  cross-entropy), :mod:`.fft_methods` (discrete Fourier transforms, kernels driven by
  :mod:`.fft`), with the launch plans of :mod:`.launch` and the
  elementwise fusion of :mod:`.fusion`;
* code generation: :mod:`.kernels`, :mod:`.gemm`, :mod:`.conv_kernels`, :mod:`.fusion_kernels`,
  :mod:`.norm_kernels`, :mod:`.fft_kernels`; complex dtypes: :mod:`.complex_kernels` (the
  arithmetic helpers) and :mod:`.gemm_complex` (matmul through the real GEMM).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..interface import Backend
from .conv import ConvMixin
from .devices import Device, make_devices
from .fft_methods import FFTMixin
from .fusion import Fuser, fusion_enabled
from .launch import Plan, chunk
from .attention import AttentionMixin
from .norms import NormsMixin
from .primitives import PrimitivesMixin
from .runtime import RuntimeMixin
from .trace import TracingMixin

__all__ = ["OpenCLBackend"]


class OpenCLBackend(FFTMixin, NormsMixin, AttentionMixin, ConvMixin, PrimitivesMixin,
                    RuntimeMixin, TracingMixin, Backend):
    """Backend for the ``opencl`` device type."""

    device_type = "opencl"
    #: complex64/complex128 stored as float2/double2 pairs (see .complex_kernels); complex128
    #: only where the device has cl_khr_fp64, as float64
    supports_complex = True

    def __init__(self) -> None:
        # runtime (see .runtime)
        self._devices: list[Device] = make_devices()
        self._pending: list[list[tuple[Any, Any]]] = [[] for _ in self._devices]
        self._pending_lock = threading.RLock()
        self._stages: dict[int, list[np.ndarray]] = {}
        self._staged_reads: bool | None = None
        # primitives (see .primitives): elementwise launch plans per primitive, forced GEMM family
        self._uplans: dict[tuple, Plan] = {}
        self._bplans: dict[tuple, Plan] = {}
        self._wplans: dict[tuple, Plan] = {}
        self._cplans: dict[tuple, Plan] = {}
        self._force_gemm_kind: str | None = None
        # elementwise fusion (see .fusion): unary/binary record, the methods marked @flushes
        # flush the pending group first
        self._fz: Fuser | None = None
        if fusion_enabled():
            self._fz = Fuser(self, self._unary_eager, self._binary_eager, chunk)
        else:  # straight to the kernels, without the fuser test per call
            self.unary, self.binary = self._unary_eager, self._binary_eager  # type: ignore[method-assign]

    # eigh and svd: the host defaults of Backend (LAPACK's syevd/gesdd through numpy) are kept on
    # purpose. The matrices the core decomposes are small (covariances, weight matrices of a few
    # hundred rows), where one read back and LAPACK cost less than iterative kernels would, and
    # LAPACK's accuracy is the reference PyTorch's CPU results have too.
