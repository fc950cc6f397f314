"""ATen's ``native_*`` normalisation and dropout entry points and the other ATen-level aliases of
``nn.functional`` that ``torch`` exposes at top level (``grid_sampler``, ``affine_grid_generator``,
``conv_tbc``, ``norm_except_dim``), with ATen's argument order and return tuples.

Each computes its result through :mod:`portagrad.nn.functional` (so gradients are the ones of that
implementation); the extra statistics ATen returns (``mean``/``rstd``, a dropout ``mask``) are
computed beside it without gradient, as PyTorch marks them non-differentiable.
"""
from __future__ import annotations

from collections.abc import Sequence
from . import _random
from ._creation import empty
from ._dtype import bool as bool_
from ._tensor import Tensor
from .autograd.grad_mode import no_grad
from .nn import functional as F

__all__ = ["native_layer_norm", "native_group_norm", "native_batch_norm", "native_dropout",
           "norm_except_dim", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
           "affine_grid_generator", "conv_tbc"]


def _mean_rstd(input: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor]:
    """The mean and ``1/sqrt(biased var + eps)`` over ``dims`` (kept), without gradient."""
    with no_grad():
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        return mean, (var + eps).rsqrt()


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """Layer normalisation returning ``(output, mean, rstd)``; ``mean`` and ``rstd`` keep the
    normalised dimensions as size 1 (shape ``input.shape[:-k] + (1,) * k``)."""
    shape = [int(s) for s in normalized_shape]
    k = len(shape)
    if k == 0 or input.dim() < k or list(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    out = F.layer_norm(input, shape, weight, bias, eps)
    mean, rstd = _mean_rstd(input, tuple(range(input.dim() - k, input.dim())), eps)
    return out, mean, rstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int,
                      HxW: int, group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """Group normalisation of an ``(N, C, *)`` input with ``HxW`` elements per channel,
    returning ``(output, mean, rstd)``, the statistics of shape ``(N, group)``."""
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={group}")
    if input.dim() < 2 or input.numel() != N * C * HxW or tuple(input.shape[:2]) != (N, C):
        raise RuntimeError(f"native_group_norm: expected an input of N={N}, C={C} and HxW={HxW} "
                           f"elements per channel, but got input of size {list(input.shape)}")
    out = F.group_norm(input, group, weight, bias, eps)
    mean, rstd = _mean_rstd(input.reshape(N, group, -1), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalisation returning ``(output, save_mean, save_invstd)``: in training the batch
    statistics per channel (``invstd`` from the biased variance; the running statistics are
    updated in place as ``batch_norm`` does), in evaluation two empty tensors."""
    if not training and (running_mean is None or running_var is None):
        # PyTorch dereferences the missing statistics here (a crash); say what is needed
        raise RuntimeError("native_batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode (training=False)")
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return (out, empty(0, dtype=input.dtype, device=input.device),
                empty(0, dtype=input.dtype, device=input.device))
    dims = (0,) + tuple(range(2, input.dim()))
    mean, invstd = _mean_rstd(input, dims, eps)
    return out, mean.reshape(-1), invstd.reshape(-1)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """Dropout returning ``(output, mask)``: ``mask`` (bool) marks the kept elements, which are
    scaled by ``1/(1-p)``. ``train=False`` keeps everything (an all-true mask); ``None`` trains,
    as in PyTorch."""
    F._check_p(p)
    if train is not None and not train:
        return input.clone(), empty(tuple(input.shape), dtype=bool_, device=input.device).fill_(True)
    with no_grad():
        keep = _random.rand(tuple(input.shape), dtype=input.dtype, device=input.device) >= p
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * keep.to(dtype=input.dtype) * scale, keep


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept as size 1 (``dim=-1``:
    the norm of the whole tensor, a 0-d tensor), the norm weight normalisation divides by."""
    if dim == -1:
        return v.norm(pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")
    dim %= nd
    others = tuple(d for d in range(nd) if d != dim)
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


# --- grid sampling: integer modes as ATen's GridSamplerInterpolation / GridSamplerPadding enums
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sample(fn: str, input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool, rank: int | None) -> Tensor:
    if not isinstance(align_corners, bool):
        raise TypeError(f"{fn}(): argument 'align_corners' (position 5) must be bool, not "
                        f"{type(align_corners).__name__}")
    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"{fn}(): invalid interpolation_mode {interpolation_mode} "
                           f"(0: bilinear, 1: nearest, 2: bicubic)")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"{fn}(): invalid padding_mode {padding_mode} "
                           f"(0: zeros, 1: border, 2: reflection)")
    if rank is not None and (input.dim() != rank or grid.dim() != rank):
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode],
                         align_corners)


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``nn.functional.grid_sample`` with ATen's integer modes (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sample("grid_sampler", input, grid, interpolation_mode, padding_mode,
                        align_corners, None)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """:func:`grid_sampler` for a 4-d input and grid only."""
    return _grid_sample("grid_sampler_2d", input, grid, interpolation_mode, padding_mode,
                        align_corners, 4)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """:func:`grid_sampler` for a 5-d input and grid only."""
    return _grid_sample("grid_sampler_3d", input, grid, interpolation_mode, padding_mode,
                        align_corners, 5)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``nn.functional.affine_grid`` with ``align_corners`` required, as ATen."""
    return F.affine_grid(theta, list(size), align_corners=align_corners)


# the same function as nn.functional's (time, batch, channels) convolution
conv_tbc = F.conv_tbc
