"""DLPack exchange (``torch.utils.dlpack``): ``from_dlpack`` and ``to_dlpack``.

CPU tensors are exchanged without copying, both ways, with any DLPack producer or consumer on the
host (numpy, PyTorch CPU tensors, JAX/CuPy host arrays ...): writes through one are seen by the
other, and views keep their shape, strides and offset. portagrad's OpenCL buffers cannot be
handed to another library through DLPack; see ``Tensor.__dlpack__``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._creation import from_numpy
from .._device import device as _device_cls
from .._dlpack import _BF16, DLDeviceType, capsule_dtype, kDLBfloat, kDLInt, retag_capsule
from .._tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule (``"dltensor"``) sharing ``tensor``'s memory (CPU tensors)."""
    return tensor.__dlpack__()


class _Capsule:
    """Presents a bare DLPack capsule to numpy's consumer, which wants the ``__dlpack__``
    protocol (a capsule is consumed once, whatever keyword the consumer passes)."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return int(DLDeviceType.kDLCPU), 0


def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A portagrad tensor from an object with ``__dlpack__`` or from a DLPack capsule.

    From a CPU producer the result shares its memory (``copy=True`` copies). A portagrad tensor
    gives a tensor on its own device over the same storage. ``device`` moves the result there
    (a copy, refused when ``copy=False``)."""
    if isinstance(ext_tensor, Tensor):
        if ext_tensor.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        out = ext_tensor.detach()
        out = out.clone() if copy else out
    else:
        if hasattr(ext_tensor, "__dlpack__"):
            dev = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") \
                else (DLDeviceType.kDLCPU, 0)
            if int(dev[0]) not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost,
                                   DLDeviceType.kDLROCMHost):
                raise BufferError(f"from_dlpack: portagrad takes DLPack tensors in host memory "
                                  f"only, got device {_device_name(dev)}; copy it to the CPU "
                                  f"first")
            producer = ext_tensor
        elif type(ext_tensor).__name__ == "PyCapsule":
            if copy is not None or device is not None:
                raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                     "already a DLPack capsule.")
            producer = _Capsule(ext_tensor)
        else:
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack "
                            f"capsule, got {type(ext_tensor).__name__}")
        try:
            arr = _bfloat16_array(producer, copy)
            if arr is None:
                arr = np.from_dlpack(producer, copy=copy)
        except BufferError as exc:
            raise BufferError(f"from_dlpack: {exc}") from None
        if isinstance(producer, _Capsule) and not arr.flags.writeable:
            # a legacy capsule cannot say read-only; numpy assumes it is, PyTorch that it is
            # not: writes are shared, as with torch.from_dlpack
            arr = np.asarray(_WritableView(arr))
        if arr.dtype.byteorder == ">":
            raise BufferError("from_dlpack: big-endian data is not supported")
        out = from_numpy(arr)
    if device is not None:
        target = _device_cls(device) if not isinstance(device, _device_cls) else device
        if target != out.device:
            if copy is False:
                raise ValueError(f"cannot move DLPack tensor from device {out.device} to "
                                 f"{target} without copying. Set copy=None or copy=True.")
            out = out.to(target)
    return out


def _bfloat16_array(producer: Any, copy: bool | None) -> np.ndarray | None:
    """The array of a bfloat16 DLPack tensor (``None`` for any other dtype). numpy refuses
    DLPack's ``kDLBfloat``: the capsule is relabelled int16 (the same bits), taken by numpy and
    viewed as bfloat16, memory still shared."""
    if isinstance(producer, _Capsule):
        capsule = producer.capsule
        if capsule_dtype(capsule)[:2] != (kDLBfloat, 16):
            return None
    else:
        if "bfloat16" not in str(getattr(producer, "dtype", "")):
            return None  # (the common case costs no second capsule)
        try:
            capsule = producer.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer of the first protocol version
            capsule = producer.__dlpack__()
        if capsule_dtype(capsule)[:2] != (kDLBfloat, 16):
            return None
    arr = np.from_dlpack(_Capsule(retag_capsule(capsule, kDLInt)))
    if not arr.flags.writeable and isinstance(producer, _Capsule):
        arr = np.asarray(_WritableView(arr))
    arr = arr.view(_BF16)
    return arr.copy() if copy else arr


class _WritableView:
    """The memory of a read-only array exposed as writable (``__array_interface__``), keeping the
    array, and through it the capsule's owner, alive."""

    def __init__(self, arr: np.ndarray) -> None:
        self._keep = arr
        iface = dict(arr.__array_interface__)
        iface["data"] = (iface["data"][0], False)
        self.__array_interface__ = iface


def _device_name(dev: tuple[Any, int]) -> str:
    try:
        return f"{DLDeviceType(int(dev[0])).name}:{dev[1]}"
    except ValueError:
        return f"{dev[0]}:{dev[1]}"
