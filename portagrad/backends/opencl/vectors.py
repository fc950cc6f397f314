"""Vector loads and stores no wider than 32 bytes, for generated OpenCL C.

PoCL compiles CPU kernels with LLVM for the host's CPU model; where its LLVM takes the host for a
model without AVX-512 (PoCL 3.0 on AMD Zen 4 reads it as Zen 3), a kernel that calls a builtin on
a 64-byte vector (``vload16`` of floats, ``vstore8`` or ``exp`` of doubles) builds once, and then
comes back from PoCL's kernel cache with no kernels at all: every later build of the same source,
in this process or the next, fails with ``CL_INVALID_KERNEL_NAME``. Arithmetic on 64-byte vectors
is not affected, only calls. These helpers split a wide load or store into 32-byte halves, the
same memory accesses. Kernels that call math builtins on vectors keep them at 32 bytes
(:data:`SAFE_VECTOR_BYTES`); a program that still comes back without kernels is reported by
:meth:`Device.program <.devices.Device.program>`.
"""
from __future__ import annotations

__all__ = ["SAFE_VECTOR_BYTES", "vload", "vstore"]

#: the widest vector a builtin call may take or return on every device
SAFE_VECTOR_BYTES = 32

_ITEMSIZE = {"double": 8, "long": 8, "ulong": 8, "half": 2, "short": 2, "ushort": 2,
             "char": 1, "uchar": 1}  # any other OpenCL C scalar: 4 bytes


def _narrow_enough(t: str, w: int) -> bool:
    return w * _ITEMSIZE.get(t, 4) <= SAFE_VECTOR_BYTES or w % 2 == 1


def vload(t: str, w: int, p: str) -> str:
    """OpenCL C for ``vload{w}(0, p)`` of ``t`` elements, in loads of at most 32 bytes."""
    if _narrow_enough(t, w):
        return f"vload{w}(0, {p})"
    h = w // 2
    return f"({t}{w})({vload(t, h, p)}, {vload(t, h, f'({p}) + {h}')})"


def vstore(t: str, w: int, v: str, p: str) -> str:
    """OpenCL C statement(s) for ``vstore{w}(v, 0, p)`` of ``t`` elements, in stores of at most
    32 bytes."""
    if _narrow_enough(t, w):
        return f"vstore{w}({v}, 0, {p});"
    h = w // 2
    return f"{vstore(t, h, f'({v}).lo', p)} {vstore(t, h, f'({v}).hi', f'({p}) + {h}')}"
