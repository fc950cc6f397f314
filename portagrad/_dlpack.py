"""The producer side of DLPack and the numpy array protocol for :class:`~portagrad.Tensor`.

A CPU tensor is exported without copying: numpy views the tensor's memory (with its shape,
strides and offset) and numpy makes the DLPack capsule, which keeps that memory alive for the
consumer. Tensors on an OpenCL device (or another accelerator) live in device buffers that no
DLPack consumer can address here; exporting one raises ``BufferError``, unless the consumer asks
for a host copy (``dl_device=(kDLCPU, 0)`` with ``copy=True`` or ``None``), which is then made.
"""
from __future__ import annotations

import ctypes
import enum
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DLDeviceType", "dlpack", "dlpack_device", "array", "capsule_dtype", "retag_capsule"]

# DLPack's dtype codes: numpy exchanges neither bfloat16 (ml_dtypes) nor code kDLBfloat, so a
# bfloat16 array travels as int16 (the same bits) whose capsule is relabelled in place
kDLInt, kDLBfloat = 0, 4
_BF16 = np.dtype(ml_dtypes.bfloat16)


def _dtype_field(capsule: Any) -> Any:
    """The ``DLDataType`` (code, bits, lanes) inside a not yet consumed DLPack capsule, as a
    ctypes structure over its memory (``dltensor``: a DLManagedTensor, whose DLTensor comes
    first; ``dltensor_versioned``: after the version, manager context, deleter and flags)."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"not a live DLPack capsule (its name is {name!r})")
    base = api.PyCapsule_GetPointer(capsule, name)
    tensor = base + (32 if name == b"dltensor_versioned" else 0)
    # DLTensor: data (pointer), device (2 x int32), ndim (int32), dtype (uint8, uint8, uint16)
    return _DLDataType.from_address(tensor + ctypes.sizeof(ctypes.c_void_p) + 12)


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


def capsule_dtype(capsule: Any) -> tuple[int, int, int]:
    """``(code, bits, lanes)`` of a DLPack capsule's tensor."""
    f = _dtype_field(capsule)
    return f.code, f.bits, f.lanes


def retag_capsule(capsule: Any, code: int) -> Any:
    """Relabel a capsule's element type code in place (same bits), and return the capsule."""
    _dtype_field(capsule).code = code
    return capsule


class DLDeviceType(enum.IntEnum):
    """DLPack's device type codes."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def dlpack_device(t: Any) -> tuple[DLDeviceType, int]:
    """``(device type, index)`` of ``t`` in DLPack's terms."""
    dev = t._storage.device
    if dev.type == "cpu":
        return DLDeviceType.kDLCPU, 0
    if dev.type == "opencl":
        return DLDeviceType.kDLOpenCL, dev.index or 0
    return DLDeviceType.kDLExtDev, dev.index or 0  # a plugin's device type


def dlpack(t: Any, *, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """A DLPack capsule of ``t`` (``Tensor.__dlpack__``, the Array API's signature)."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    src_type, src_index = dlpack_device(t)
    to_cpu = dl_device is not None and int(dl_device[0]) == DLDeviceType.kDLCPU
    if dl_device is not None and not to_cpu and (int(dl_device[0]), int(dl_device[1])) != (
            int(src_type), src_index):
        raise BufferError(f"Can't export the {t._storage.device} tensor to DLPack device "
                          f"{tuple(dl_device)}: only its own device or the CPU (a copy)")
    kw: dict[str, Any] = {}
    if max_version is not None:
        kw["max_version"] = max_version
    if src_type == DLDeviceType.kDLCPU:
        if stream is not None and stream != -1:
            raise BufferError("stream should be None on cpu.")
        arr = t._storage.backend.host_array(t._v)
        if arr is None and copy is False:
            raise BufferError("Can't export this tensor through DLPack without copying")
        if arr is None or copy:
            arr = t._storage.backend.to_host(t._v)
        else:
            t._storage._epoch = None  # shared with the consumer: no longer autograd's alone
        return _capsule(arr, kw)
    if to_cpu and copy is not False:
        # the documented exception: a host copy of a device tensor, asked for explicitly
        return _capsule(t._storage.backend.to_host(t._v), kw)
    memory = ("is an OpenCL buffer" if src_type == DLDeviceType.kDLOpenCL
              else f"belongs to the {t._storage.device.type!r} backend")
    raise BufferError(
        f"Can't export the {t._storage.device} tensor through DLPack without copying: its memory "
        f"{memory}, which DLPack consumers here cannot address. Use tensor.cpu() first, "
        f"or ask for a host copy with __dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=True).")


def _capsule(arr: np.ndarray, kw: dict[str, Any]) -> Any:
    """numpy's DLPack capsule of ``arr``; bfloat16 as int16 relabelled ``kDLBfloat``."""
    if arr.dtype == _BF16:
        return retag_capsule(arr.view(np.int16).__dlpack__(**kw), kDLBfloat)
    return arr.__dlpack__(**kw)


def array(t: Any, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``np.asarray(t)`` (``Tensor.__array__``): the CPU tensor's memory, shared when possible.

    As in PyTorch, a tensor that requires grad or lives on another device is refused (call
    ``.detach()`` / ``.cpu()`` first). ``copy=True`` always copies, ``copy=False`` refuses to
    (numpy 2's ``copy`` keyword)."""
    if t._requires_grad:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")
    st = t._storage
    if st.device.type != "cpu":
        raise TypeError(f"can't convert {st.device} device type tensor to numpy. Use "
                        f"Tensor.cpu() to copy the tensor to host memory first.")
    arr = st.backend.host_array(t._v)
    if arr is None:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        arr = st.backend.to_host(t._v)
    else:
        st._epoch = None  # the array shares the memory
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return arr.astype(dtype)
    return arr.copy() if copy else arr
