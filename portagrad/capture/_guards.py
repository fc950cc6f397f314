"""What must still hold for a recorded step to be replayed.

A replay skips the Python of the step, so whatever the Python would have decided differently must
be checked before each replay. :class:`StateGuard` notes, for the modules called and the
optimizers stepped while a step was recorded: every parameter and buffer (the tensor object, its
storage and view: ``param.data = ...`` replaces them), ``requires_grad``, the modules' ``training``
flags, every hook dictionary (sizes), the optimizers' hyper-parameters (an LR schedule changes
``lr``) and state tensors; and the global module and optimizer hooks. :meth:`StateGuard.changed`
names the first difference.
"""
from __future__ import annotations

import struct
from typing import Any

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..nn.modules import module as _module
from ..optim import optimizer as _optimizer

__all__ = ["StateGuard", "watch"]

_MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                 "_backward_pre_hooks")
_OPT_HOOKS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks")


def _scalar(v: Any) -> Any:
    if isinstance(v, float):
        return struct.pack("<d", v)
    if isinstance(v, (tuple, list)):
        return tuple(_scalar(e) for e in v)
    if isinstance(v, Tensor):
        return ("tensor", id(v), id(v._storage), v._v)
    return v


def _tensor_key(t: Tensor | None) -> Any:
    if t is None:
        return None
    hooks = t._hooks
    return (id(t), t._storage, t._v, t._requires_grad, len(hooks) if hooks else 0)


class _Watch:
    """Collects the modules called and the optimizers stepped while a step runs."""

    def __init__(self) -> None:
        self.modules: dict[int, Any] = {}
        self.optimizers: dict[int, Any] = {}
        self._handles: list[Any] = []

    def __enter__(self) -> _Watch:
        def on_module(mod: Any, args: Any) -> None:
            self.modules[id(mod)] = mod

        def on_step(opt: Any, args: Any, kwargs: Any) -> None:
            self.optimizers[id(opt)] = opt

        self._handles = [_module.register_module_forward_pre_hook(on_module),
                         _optimizer.register_optimizer_step_pre_hook(on_step)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


def watch() -> _Watch:
    """A context manager noting the modules and optimizers a step uses."""
    return _Watch()


class StateGuard:
    """The Python-side state a recorded step depends on, compared before each replay."""

    def __init__(self, seen: _Watch, keep_grads: bool = True) -> None:
        self._modules = list(seen.modules.values())
        self._optimizers = list(seen.optimizers.values())
        self._snapshot = self._take()
        # ``.grad`` of every optimized parameter after the step: a replay writes these buffers,
        # and hands them back to the parameters as the eager step would have set ``.grad``
        # (``keep_grads=False``: a snapshot only, which must not keep a step's tensors alive)
        self.grads = [(p, p._grad) for opt in self._optimizers
                      for g in opt.param_groups for p in g["params"]] if keep_grads else []

    def _take(self) -> list[tuple[str, Any]]:
        snap: list[tuple[str, Any]] = [
            ("grad mode", is_grad_enabled()),
            ("global module hooks", (len(_module._global_forward_hooks),
                                     len(_module._global_forward_pre_hooks))),
            ("global optimizer hooks", (len(_optimizer._global_pre_hooks),
                                        len(_optimizer._global_post_hooks))),
        ]
        for m in self._modules:
            name = type(m).__name__
            snap.append((f"{name}.training", m.training))
            snap.append((f"hooks of a {name}", tuple(len(getattr(m, h)) for h in _MODULE_HOOKS)))
            for pname, p in m._parameters.items():
                snap.append((f"parameter {pname!r} of a {name}", _tensor_key(p)))
            for bname, b in m._buffers.items():
                snap.append((f"buffer {bname!r} of a {name}", _tensor_key(b)))
        for opt in self._optimizers:
            name = type(opt).__name__
            snap.append((f"hooks of {name}", tuple(len(getattr(opt, h)) for h in _OPT_HOOKS)))
            for i, group in enumerate(opt.param_groups):
                for k, v in group.items():
                    if k == "params":
                        snap.append((f"parameters of {name} group {i}",
                                     tuple(_tensor_key(p)[:4] for p in v)))
                    else:
                        snap.append((f"{name} hyper-parameter {k!r} (group {i})", _scalar(v)))
            for p, st in opt.state.items():
                snap.append((f"state of {name}", (id(p), tuple(
                    (k, _scalar(v)) for k, v in st.items()))))
        return snap

    def changed(self) -> str | None:
        """The first thing that differs from when the step was recorded (``None``: nothing)."""
        now = self._take()
        if len(now) != len(self._snapshot):
            return "the modules' parameters or buffers changed"
        for (what, a), (_, b) in zip(self._snapshot, now):
            if a != b:
                if what == "grad mode":
                    return "grad mode changed (torch.no_grad / enable_grad around the call)"
                return f"{what} changed since the step was recorded"
        return None

    def restore_grads(self) -> None:
        """Give each optimized parameter the ``.grad`` the replayed step wrote."""
        for p, g in self.grads:
            p._grad = g
