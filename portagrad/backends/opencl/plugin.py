"""Plugin module of the OpenCL backend: pyopencl is imported only when the backend is first used."""
from __future__ import annotations

from ...plugins import BackendSpec, hookimpl

__all__ = ["portagrad_backends"]


def _load():
    from .backend import OpenCLBackend

    return OpenCLBackend()


@hookimpl
def portagrad_backends() -> list[BackendSpec]:
    """The ``opencl`` device type (every OpenCL platform's devices, GPUs first)."""
    return [BackendSpec(name="opencl", device_type="opencl", priority=0, best_device_rank=10,
                        loader=_load)]
