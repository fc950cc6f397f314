"""Batch normalisation (running statistics in buffers, ``momentum``, eval mode)."""
from __future__ import annotations

import warnings
from typing import Any

from ... import _creation, _dtype, distributed as dist
from ..._ops.nn import sync_norm
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, UninitializedBuffer, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = Parameter(_creation.empty(num_features, **kw))
            if bias:
                self.bias = Parameter(_creation.empty(num_features, **kw))
            else:  # bias=False: a scale without a shift
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(num_features, **kw))
            self.register_buffer("running_var", _creation.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 _creation.tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else _creation.tensor(0, dtype=_dtype.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:  # cumulative moving average
                    factor = 1.0 / float(self.num_batches_tracked)
                else:
                    factor = self.momentum
        bn_training = True if self.training else (self.running_mean is None and
                                                  self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    _nd = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (self._nd + 1, self._nd + 2):
            raise ValueError(f"expected {self._nd + 1}D or {self._nd + 2}D input (got "
                             f"{input.dim()}D input)")

    def _check_num_features(self, input: Tensor) -> None:
        """The channel dim against ``num_features``: an error with affine parameters, else a
        warning (the number is unused), as PyTorch."""
        dim = input.dim() - self._nd - 1  # 0 for an unbatched input
        if input.shape[dim] == self.num_features:
            return
        if self.affine:
            raise ValueError(f"expected input's size at dim={dim} to match num_features "
                             f"({self.num_features}), but got: {input.shape[dim]}.")
        warnings.warn(f"input's size at dim={dim} does not match num_features. You can silence "
                      f"this warning by not passing in num_features, which is not used because "
                      f"affine=False", stacklevel=3)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        self._check_num_features(input)
        unbatched = input.dim() == self._nd + 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum or 0.0,
                              self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _nd = 3


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose batch statistics span the processes of ``process_group``
    (``torch.nn.SyncBatchNorm``).

    In training, with a distributed world initialised (``process_group=None``: the default
    group) of more than one process, the mean and variance are those of the batches of every
    process together (per-process batch sizes may differ), the running statistics are updated
    with them, and the backward exchanges what the input gradient needs, so each process gets
    the gradients of batch norm on the concatenated batch. Every process of the group must call
    it, as any collective. In eval mode, without an initialised world, or in a group of one
    process it is plain batch norm over (N, C, *)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _group(self) -> Any:
        """The process group to synchronise over, or ``None`` for plain batch norm."""
        if not self.training:
            return None
        group = self.process_group
        if group is None:
            if not dist.is_initialized():
                return None
            group = dist.group.WORLD
        elif group is dist.GroupMember.NON_GROUP_MEMBER:
            return None  # this process is outside the group: only its own batch
        elif not isinstance(group, dist.ProcessGroup):
            raise TypeError(f"SyncBatchNorm process_group must be a ProcessGroup from "
                            f"portagrad.distributed.new_group() or None, got {group!r}")
        return group if group.size() > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        group = self._group()
        if group is None:
            return super().forward(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm expected input with {self.num_features} channels, "
                             f"got {input.shape[1]} (input size {tuple(input.shape)})")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        stats = self.track_running_stats
        return sync_norm.sync_batch_norm(input, self.weight, self.bias,
                                         self.running_mean if stats else None,
                                         self.running_var if stats else None, factor, self.eps,
                                         _gather_over(group))

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` replaced by a ``SyncBatchNorm`` holding the same
        parameters and running statistics (recursively, as PyTorch)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


def _gather_over(group: Any) -> Any:
    """The ``gather`` of :mod:`portagrad._ops.nn.sync_norm`: every process's ``(k, C)`` statistics
    stacked ``(world, k, C)``, by one all_gather on ``group``."""

    def gather(t: Tensor) -> Tensor:
        t = t.contiguous()
        out = _creation.empty((group.size(),) + tuple(t.shape), dtype=t.dtype, device=t.device)
        dist.all_gather_into_tensor(out, t, group=group)
        return out

    return gather


class _LazyNormBase(LazyModuleMixin):
    """``num_features`` from the first input's dim 1."""

    num_features: int
    affine: bool
    track_running_stats: bool
    weight: Any
    bias: Any
    running_mean: Any
    running_var: Any

    def _lazy_init(self, affine: bool, track_running_stats: bool, device: Any, dtype: Any,
                   bias: bool = True) -> None:
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:  # else bias stays the None the base class registered
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _creation.tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base: Any) -> type:
    # (PyTorch's lazy instance norms default to affine=True, track_running_stats=True as well,
    # unlike InstanceNorm*d itself)
    def __init__(self: Any, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        # no tensors yet: affine, bias and statistics come with _lazy_init (as PyTorch)
        base.__init__(self, 0, eps, momentum, False, False, device=device, dtype=dtype,
                      bias=False)
        self._lazy_init(affine, track_running_stats, device, dtype, bias)
        self._register_lazy_hook()

    doc = f"A :class:`{base.__name__}` whose ``num_features`` comes from its first input."
    return type(f"Lazy{base.__name__}", (_LazyNormBase, base),
                {"cls_to_become": base, "__init__": __init__, "__doc__": doc,
                 "__module__": __name__})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
