"""The one place that turns pyopencl/OpenCL failures into readable portagrad errors.

OpenCL reports failures as numeric status codes (``CL_MEM_OBJECT_ALLOCATION_FAILURE`` = -4, ...),
which pyopencl wraps in ``pyopencl.Error`` subclasses carrying the routine name. Users should see
*which device* failed, *what* portagrad was doing and, for compile errors, the build log.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ...errors import OutOfMemoryError

__all__ = ["OOM_CODES", "BuildError", "OpenCLError", "cl_errors", "status_name", "translate"]

#: status codes that mean "the device ran out of memory or resources"
OOM_CODES = frozenset({-4, -5, -6})  # MEM_OBJECT_ALLOCATION_FAILURE, OUT_OF_RESOURCES, OUT_OF_HOST_MEMORY

_NAMES = {
    -1: "DEVICE_NOT_FOUND", -2: "DEVICE_NOT_AVAILABLE", -3: "COMPILER_NOT_AVAILABLE",
    -4: "MEM_OBJECT_ALLOCATION_FAILURE", -5: "OUT_OF_RESOURCES", -6: "OUT_OF_HOST_MEMORY",
    -7: "PROFILING_INFO_NOT_AVAILABLE", -8: "MEM_COPY_OVERLAP", -11: "BUILD_PROGRAM_FAILURE",
    -30: "INVALID_VALUE", -33: "INVALID_DEVICE", -34: "INVALID_CONTEXT", -36: "INVALID_COMMAND_QUEUE",
    -38: "INVALID_MEM_OBJECT", -45: "INVALID_PROGRAM_EXECUTABLE", -46: "INVALID_KERNEL_NAME",
    -48: "INVALID_KERNEL", -49: "INVALID_ARG_INDEX", -50: "INVALID_ARG_VALUE", -51: "INVALID_ARG_SIZE",
    -52: "INVALID_KERNEL_ARGS", -54: "INVALID_WORK_GROUP_SIZE", -55: "INVALID_WORK_ITEM_SIZE",
    -56: "INVALID_GLOBAL_OFFSET", -61: "INVALID_BUFFER_SIZE", -63: "INVALID_GLOBAL_WORK_SIZE",
}

_HINTS = {
    -54: "the work-group size does not fit the kernel or device limits",
    -5: "the device ran out of resources (often a kernel crashed or read out of bounds)",
    -61: "the buffer size is 0 or larger than the device's max allocation",
}


class OpenCLError(RuntimeError):
    """An OpenCL call failed (not an out-of-memory condition)."""


class BuildError(OpenCLError):
    """A kernel failed to compile; the message carries the build log."""


def status_name(code: int) -> str:
    """Symbolic name of an OpenCL status code (``"CL_INVALID_VALUE"``), or the number."""
    name = _NAMES.get(code)
    return f"CL_{name}" if name else f"status {code}"


def _code_of(exc: BaseException) -> int | None:
    # pyopencl.Error.code is set from the underlying _ErrorRecord; be defensive about versions
    try:
        code = exc.code  # type: ignore[attr-defined]
        return int(code) if code is not None else None
    except Exception:  # any failure means "unknown"
        return None


def translate(exc: BaseException, device: str, action: str) -> Exception:
    """Return the portagrad exception for ``exc`` raised while doing ``action`` on ``device``.

    ``device`` is a readable label such as ``"opencl:0 (pthread-AMD EPYC)"``.
    """
    code = _code_of(exc)
    routine = ""
    try:
        routine = exc.routine  # type: ignore[attr-defined]
    except Exception:  # no routine: the message does without
        pass
    what = getattr(exc, "what", None)
    detail = str(what() if callable(what) else exc).strip()
    if code in OOM_CODES:
        return OutOfMemoryError(f"{device}: out of memory while {action} "
                                f"({routine or 'OpenCL'}: {status_name(code)})")
    if code == -11 or "BUILD_PROGRAM_FAILURE" in detail:
        return BuildError(f"{device}: failed to compile OpenCL kernels for {action}:\n{detail}")
    hint = _HINTS.get(code or 0)
    name = status_name(code) if code is not None else type(exc).__name__
    msg = f"{device}: {action} failed: {routine + ': ' if routine else ''}{name}"
    if detail and detail not in msg:
        msg += f" ({detail})"
    if hint:
        msg += f"; {hint}"
    return OpenCLError(msg)


@contextlib.contextmanager
def cl_errors(device: str, action: str) -> Iterator[None]:
    """Context manager re-raising pyopencl errors inside it as portagrad errors."""
    import pyopencl as cl

    try:
        yield
    except cl.Error as exc:
        raise translate(exc, device, action) from exc
