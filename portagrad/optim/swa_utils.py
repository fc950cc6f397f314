"""Weight averaging (``torch.optim.swa_utils``): :class:`AveragedModel` (SWA and EMA of a model's
parameters), :func:`update_bn` (recompute batch-norm statistics for the averaged weights) and
:class:`SWALR` (anneal to a constant SWA learning rate)."""
from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from ..autograd import grad_mode
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from . import _inplace as inplace
from ._lr_base import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]

ParamList = list[Tensor]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         f"range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place exponential moving average over lists: ``ema = lerp(ema, p, 1 - decay)``."""
    _check_decay(decay)

    def ema_update(ema_param_list: ParamList, current_param_list: ParamList, _: Any) -> None:
        with grad_mode._no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.is_floating_point():
                    inplace.lerp_(p_ema, p_model, 1 - decay)
                else:
                    inplace.assign_(p_ema, p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[ParamList, ParamList, Any], None]:
    """An in-place running mean over lists: ``avg += (p - avg) / (n + 1)``."""

    def swa_update(averaged_param_list: ParamList, current_param_list: ParamList,
                   num_averaged: Any) -> None:
        n = float(num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged)
        with grad_mode._no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.is_floating_point():
                    inplace.lerp_(p_avg, p_model, 1 / (n + 1))
                else:
                    inplace.assign_(p_avg, p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """``decay * ema + (1 - decay) * p`` (a new tensor)."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with grad_mode._no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """``avg + (p - avg) / (n + 1)`` (a new tensor)."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with grad_mode._no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) hold an average of
    ``model``'s over the calls to :meth:`update_parameters`: the running mean by default (SWA),
    or what ``avg_fn(avg, p, n) -> new`` / ``multi_avg_fn(avg_list, p_list, n)`` (in place)
    computes, e.g. :func:`get_ema_multi_avg_fn`. ``n_averaged`` counts the updates."""

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[ParamList, ParamList, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=_dtype.int64,
                                                            device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the averaged module."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        if self.use_buffers:
            self_params: Iterable[Tensor] = itertools.chain(self.module.parameters(),
                                                            self.module.buffers())
            model_params: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        avg_list: ParamList = []
        cur_list: ParamList = []
        n = int(self.n_averaged.item())
        with grad_mode._no_grad():
            for p_avg, p_model in zip(self_params, model_params):
                p_model_ = p_model.detach().to(p_avg.device)
                avg_list.append(p_avg.detach())
                cur_list.append(p_model_)
                if n == 0:
                    inplace.assign_(p_avg.detach(), p_model_)
            if n > 0:
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(avg_list, cur_list, self.n_averaged)
                else:
                    # PyTorch's default off CUDA: the out-of-place running mean
                    avg_fn = self.avg_fn or get_swa_avg_fn()
                    for p_avg, p_model in zip(avg_list, cur_list):
                        inplace.assign_(p_avg, avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
            if not self.use_buffers:
                # buffers (e.g. batch-norm statistics) are copied, not averaged
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    inplace.assign_(b_swa.detach(), b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every batch-norm layer of ``model`` with one pass over
    ``loader`` (a cumulative average, i.e. ``momentum=None`` during the pass). Batches that are
    lists or tuples contribute their first element."""
    momenta: dict[Any, Any] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with grad_mode._no_grad():
        for inp in loader:
            if isinstance(inp, (list, tuple)):
                inp = inp[0]
            if device is not None:
                inp = inp.to(device)
            model(inp)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or
    ``"linear"``), then keep it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
