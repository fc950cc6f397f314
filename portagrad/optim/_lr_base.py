"""The base class of learning-rate schedulers (:class:`LRScheduler`) and the helpers the schedules
share: argument formatting, the ``get_lr`` warning, the step-order check."""
from __future__ import annotations

import warnings
import weakref
from functools import wraps
from typing import Any

from .._tensor import Tensor
from .optimizer import Optimizer, to_scalar

__all__ = ["LRScheduler", "EPOCH_DEPRECATION_WARNING"]


def _update_param_group_val(group: dict[str, Any], key: str, value: Any) -> None:
    """``group[key] = value``, except that a tensor there (a tensor ``lr``) is filled in place, so
    whoever holds it sees the new value (PyTorch's rule)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(to_scalar(value))
    else:
        group[key] = value


def _param_groups_val_list(optimizer: Optimizer, key: str) -> list[Any]:
    """``group[key]`` of every group; tensors are copied so the list never aliases a group."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key]
            for g in optimizer.param_groups]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose.")


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _warn_get_lr_called_within_step(sched: LRScheduler) -> None:
    if not sched._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(param)} values, param_groups has "
                             f"{len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


# Every scheduler alive, so that a captured step (portagrad.capture) can tell whether one stepped
# inside it: a replay runs none of the step's Python, and the schedule would stop there.
_LIVE: weakref.WeakSet[LRScheduler] = weakref.WeakSet()


def scheduler_states() -> dict[LRScheduler, str]:
    """``scheduler -> repr(state_dict())`` for every live scheduler, compared before and after a
    step (the dict holds the schedulers, so none is collected, nor its id reused, in between)."""
    return {s: repr(s.state_dict()) for s in list(_LIVE)}


class LRScheduler:
    """Base class: keeps ``base_lrs``, ``last_epoch`` and ``get_last_lr()``."""

    _get_lr_called_within_step = False
    _is_initial = False

    def __new__(cls, *args: Any, **kwargs: Any) -> LRScheduler:
        self = super().__new__(cls)
        _LIVE.add(self)
        return self

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                   f"resuming scheduler with last_epoch >= 0.\nThis typically "
                                   f"happens when:\n1. You're trying to resume training from a "
                                   f"checkpoint but haven't properly loaded the optimizer state\n"
                                   f"2. You're using last_epoch >= 0 for a fresh training run (not "
                                   f"recommended)")
        self.base_lrs: list[float] = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._patch_optimizer_step()
        self._initial_step()

    def _patch_optimizer_step(self) -> None:
        # count optimizer.step() calls to warn about the wrong call order, as PyTorch does
        opt = self.optimizer
        if getattr(opt.step, "_with_counter", False):
            return
        method = opt.step
        instance_ref = weakref.ref(method.__self__)  # type: ignore[attr-defined]
        func = method.__func__  # type: ignore[attr-defined]

        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            inst = instance_ref()
            inst._opt_called = True  # type: ignore[union-attr]
            inst._step_count = getattr(inst, "_step_count", 0) + 1  # type: ignore[union-attr]
            return func.__get__(inst, inst.__class__)(*args, **kwargs)

        wrapper._with_counter = True  # type: ignore[attr-defined]
        opt.step = wrapper  # type: ignore[method-assign]
        opt._step_count = 0  # type: ignore[attr-defined]

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True  # the step made by the constructor (some schedules treat it apart)
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The learning rates of the epoch :meth:`step` moves to (subclasses define it; read the
        current rates with :meth:`get_last_lr`)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one (``epoch``: jump there, deprecated as in PyTorch)."""
        if self._step_count == 1:
            opt = self.optimizer
            if not hasattr(opt.step, "_with_counter"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization. Please, make sure to call "
                              "`optimizer.step()` before `lr_scheduler.step()`. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
            elif not getattr(opt, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In "
                              "PyTorch 1.1.0 and later, you should call them in the opposite order: "
                              "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                              "will result in PyTorch skipping the first value of the learning rate "
                              "schedule. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Advance ``last_epoch`` (or set it to ``epoch``, using the closed form where there is
        one) and write the new rates into the optimizer."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _lrs(self) -> list[float]:
        return _param_groups_val_list(self.optimizer, "lr")
