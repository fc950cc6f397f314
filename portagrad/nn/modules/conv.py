"""Convolutions: ``Conv1d``/``2d``/``3d`` and ``ConvTranspose1d``/``2d``/``3d``."""
from __future__ import annotations

from typing import Any

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _ntuple(x: Any, n: int) -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,) * n


class _ConvNd(Module):
    _nd = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        n = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = self.transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice: list[int] | tuple[int, ...]
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            # a tuple, as PyTorch's (a list for the string paddings)
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding)
                                                          for _ in range(2))
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_creation.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._reset_weight_and_bias(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = _CONV[self._nd]
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                      weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L)."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W): stride, padding (ints or ``'same'``/``'valid'``),
    dilation, groups, padding_mode."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W)."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output padding that gives ``output_size`` (the spatial sizes, or all of the output's
        sizes), with PyTorch's messages: they show ``output_size`` as given, less its leading
        sizes, and the input's sizes from dim 2 on, also for an unbatched input."""
        if output_size is None:
            return self.output_padding
        n = self._nd
        lead = input.dim() - n  # 2, or 1 for an unbatched input
        if len(output_size) == n + lead:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have "
                             f"{n} or {n + lead} elements (got {len(output_size)})")
        spatial = input.shape[lead:]
        mins = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] +
                self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        maxs = [m + self.stride[d] - 1 for d, m in enumerate(mins)]
        if not all(mins[d] <= output_size[d] <= maxs[d] for d in range(n)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range "
                             f"from {mins} to {maxs} (for an input of {input.shape[2:]})")
        return tuple(output_size[d] - mins[d] for d in range(n))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        op = self._output_padding(input, output_size)
        fn = _CONV_T[self._nd]
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                  self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (weight (C_in, C_out/groups, kh, kw))."""

    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution (weight (C_in, C_out/groups, kd, kh, kw))."""

    _nd = 3


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from the first input (dim 1, or dim 0 of an unbatched one)."""

    _nd: int
    transposed: bool
    in_channels: int
    out_channels: int
    groups: int
    kernel_size: tuple
    weight: Any
    bias: Any

    def _lazy_init(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def _get_in_channels(self, input: Tensor) -> int:
        n = self._nd + 1
        if input.dim() not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == n + 1 else input.shape[0]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_channels = self._get_in_channels(input)
                if self.in_channels % self.groups != 0:
                    raise ValueError("in_channels must be divisible by groups")
                if self.transposed:
                    shape = (self.in_channels, self.out_channels // self.groups)
                else:
                    shape = (self.out_channels, self.in_channels // self.groups)
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(base: Any) -> type:
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                      padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)
        self._register_lazy_hook()

    doc = f"A :class:`{base.__name__}` whose ``in_channels`` comes from its first input."
    return type(f"Lazy{base.__name__}", (_LazyConvXdMixin, base),
                {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                 "__module__": __name__})


def _lazy_conv_transpose(base: Any) -> type:
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                      dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)
        self._register_lazy_hook()

    doc = f"A :class:`{base.__name__}` whose ``in_channels`` comes from its first input."
    return type(f"Lazy{base.__name__}", (_LazyConvXdMixin, base),
                {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                 "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)
