"""Padding, upsampling, distance and channel-shuffle modules."""
from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d",
           "CircularPad2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "CosineSimilarity", "PairwiseDistance", "ChannelShuffle", "Fold", "Unfold", "ZeroPad3d",
           "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"]


class _PadNd(Module):
    _n = 2
    _mode = "constant"
    _with_value = False  # ConstantPad*d: its fill value is an argument and in the repr

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * (2 * self._n)
        self.padding = tuple(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "circular" and input.dim() not in (self._n + 1, self._n + 2):
            # CircularPad*d checks the rank itself (F.pad would raise NotImplementedError)
            raise ValueError(f"expected {self._n + 1}D or {self._n + 2}D input (got "
                             f"{input.dim()}D input)")
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        # ZeroPad*d pads with constant 0 but prints only its padding, as PyTorch's
        if self._with_value:
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_cls(name: str, n: int, mode: str, with_value: bool) -> type:
    if with_value:
        def __init__(self: Any, padding: Any, value: float) -> None:
            _PadNd.__init__(self, padding, value)
    else:
        def __init__(self: Any, padding: Any) -> None:  # type: ignore[misc]
            _PadNd.__init__(self, padding, 0.0)
    __init__.__qualname__ = f"{name}.__init__"  # as in the messages of argument errors
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "_with_value": with_value,
                                  "__init__": __init__, "__module__": __name__})


ZeroPad1d = _pad_cls("ZeroPad1d", 1, "constant", False)
ZeroPad2d = _pad_cls("ZeroPad2d", 2, "constant", False)
ConstantPad1d = _pad_cls("ConstantPad1d", 1, "constant", True)
ConstantPad2d = _pad_cls("ConstantPad2d", 2, "constant", True)
ReflectionPad1d = _pad_cls("ReflectionPad1d", 1, "reflect", False)
ReflectionPad2d = _pad_cls("ReflectionPad2d", 2, "reflect", False)
ReplicationPad1d = _pad_cls("ReplicationPad1d", 1, "replicate", False)
ReplicationPad2d = _pad_cls("ReplicationPad2d", 2, "replicate", False)
CircularPad1d = _pad_cls("CircularPad1d", 1, "circular", False)
CircularPad2d = _pad_cls("CircularPad2d", 2, "circular", False)
ZeroPad3d = _pad_cls("ZeroPad3d", 3, "constant", False)
ConstantPad3d = _pad_cls("ConstantPad3d", 3, "constant", True)
ReflectionPad3d = _pad_cls("ReflectionPad3d", 3, "reflect", False)
ReplicationPad3d = _pad_cls("ReplicationPad3d", 3, "replicate", False)
CircularPad3d = _pad_cls("CircularPad3d", 3, "circular", False)


class Upsample(Module):
    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None
                 ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        info += ", mode=" + repr(self.mode)
        return info


class UpsamplingNearest2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class ChannelShuffle(Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Fold(Module):
    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return ("output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
                "padding={padding}, stride={stride}".format(**self.__dict__))


class Unfold(Module):
    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
                 ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
                "stride={stride}".format(**self.__dict__))
