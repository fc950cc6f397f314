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

**Direct access.** PoCL 3.0 does not inline ``vloadn``/``vstoren``: each one is a call into its
kernel library, and a call inside a loop makes LLVM spill every vector register around it (the
accumulators of a GEMM are stored to the stack and read back on every ``k`` step). With
``direct=True`` these helpers dereference a pointer to a vector type declared with the alignment
of its element (:func:`direct_typedefs`), which clang compiles to one unaligned vector move. The
kernels of a device use it where :attr:`Device.direct_vectors <.devices.Device.direct_vectors>`
says so (PoCL); other drivers keep the builtins, which they inline, and which need only element
alignment on every device.
"""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SAFE_VECTOR_BYTES", "direct_typedefs", "vload", "vstore"]

#: the widest vector a builtin call may take or return on every device
SAFE_VECTOR_BYTES = 32

_ITEMSIZE = {"double": 8, "long": 8, "ulong": 8, "half": 2, "short": 2, "ushort": 2,
             "char": 1, "uchar": 1}  # any other OpenCL C scalar: 4 bytes


def _narrow_enough(t: str, w: int) -> bool:
    return w * _ITEMSIZE.get(t, 4) <= SAFE_VECTOR_BYTES or w % 2 == 1


def _direct_type(t: str, w: int) -> str:
    return f"pg_{t}{w}_u"


def direct_typedefs(t: str, widths: Sequence[int]) -> str:
    """OpenCL C typedefs of the ``t`` vectors of ``widths`` aligned as one ``t`` element (what
    ``direct=True`` loads and stores dereference), one per line; put them after any extension
    pragma the element type needs (``cl_khr_fp64`` for double)."""
    return "".join(f"typedef {t}{w} __attribute__((aligned({_ITEMSIZE.get(t, 4)}))) "
                   f"{_direct_type(t, w)};\n" for w in sorted(set(widths)))


def vload(t: str, w: int, p: str, direct: bool = False) -> str:
    """OpenCL C for ``vload{w}(0, p)`` of ``t`` elements, in loads of at most 32 bytes; with
    ``direct`` (``p`` a ``__global`` pointer, :func:`direct_typedefs` of ``t`` and ``w`` in the
    program), one dereference instead (see the module's notes)."""
    if direct:
        return f"(*(__global const {_direct_type(t, w)}*)({p}))"
    if _narrow_enough(t, w):
        return f"vload{w}(0, {p})"
    h = w // 2
    return f"({t}{w})({vload(t, h, p)}, {vload(t, h, f'({p}) + {h}')})"


def vstore(t: str, w: int, v: str, p: str, direct: bool = False) -> str:
    """OpenCL C statement(s) for ``vstore{w}(v, 0, p)`` of ``t`` elements, in stores of at most
    32 bytes; with ``direct`` (as for :func:`vload`), one assignment through the pointer."""
    if direct:
        return f"*(__global {_direct_type(t, w)}*)({p}) = {v};"
    if _narrow_enough(t, w):
        return f"vstore{w}({v}, 0, {p});"
    h = w // 2
    return f"{vstore(t, h, f'({v}).lo', p)} {vstore(t, h, f'({v}).hi', f'({p}) + {h}')}"
