"""The :class:`Optimizer` base class (``torch.optim.Optimizer``): parameter groups, per-parameter
state, ``zero_grad`` and ``state_dict``/``load_state_dict`` in PyTorch's format."""
from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .. import _creation, _dtype
from .._ops.complexnum import view_as_complex, view_as_real
from .._ops.sparse import SPARSE_GRADS
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.function import RemovableHandle
from . import _inplace

__all__ = ["Optimizer", "required", "check_lr", "check_betas", "check_nonneg", "to_scalar"]


class _RequiredParameter:
    """Singleton marking a hyper-parameter without default (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_post_hooks: OrderedDict[int, Callable] = OrderedDict()


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return "portagrad." + obj._type_description().split()[1]
    return type(obj).__module__ + "." + type(obj).__qualname__ \
        if type(obj).__module__ != "builtins" else type(obj).__qualname__


def _step_counter() -> Tensor:
    """A fresh ``state["step"]``: a float32 scalar on the CPU, as PyTorch keeps it."""
    return _creation.tensor(0.0, dtype=_dtype.float32, device="cpu")


def to_scalar(x: Any) -> Any:
    """A hyper-parameter as a Python number (a one-element tensor ``lr`` is read once)."""
    return x.item() if isinstance(x, Tensor) else x


def check_lr(lr: Any, strict: bool = False) -> None:
    """PyTorch's learning-rate check: a one-element tensor or a number ``>= 0`` (``> 0`` when
    ``strict``)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not (0.0 < to_scalar(lr) if strict else 0.0 <= to_scalar(lr)):
        raise ValueError(f"Invalid learning rate: {lr}")


def check_betas(betas: Any) -> None:
    """Both betas in ``[0, 1)``, with PyTorch's messages."""
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def check_nonneg(what: str, value: float) -> None:
    """``ValueError("Invalid <what>: <value>")`` unless ``value >= 0`` (PyTorch's wording, e.g.
    ``"epsilon value"``, ``"weight_decay value"``)."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def _inc(step_t: Tensor) -> float:
    """``step_t += 1``, returning the new value as a Python float."""
    _inplace.add_scalar_(step_t, 1.0)
    return step_t.item()


def _check_implementation_flags(defaults: dict[str, Any]) -> None:
    """PyTorch's implementation switches. ``foreach``, ``fused`` and ``capturable`` only choose how
    PyTorch computes a step (the values are the same), and portagrad has one implementation on
    every device, so they are accepted and ignored; their invalid combinations raise as in PyTorch.
    ``differentiable=True`` (autograd through the step) is not supported: steps run without
    autograd."""
    if defaults.get("fused"):
        if defaults.get("differentiable"):
            raise RuntimeError("`fused` does not support `differentiable`")
        if defaults.get("foreach"):
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if defaults.get("differentiable"):
        raise NotImplementedError("differentiable=True is not supported: portagrad's optimizer "
                                  "steps run without autograd, so no graph through the update "
                                  "can be recorded")


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts defining parameter
    groups (each with a ``"params"`` entry and optional per-group hyper-parameters overriding
    ``defaults``).
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._opt_called = False
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)
        _check_implementation_flags(defaults)

    #: How ``step`` takes sparse gradients (``Embedding(sparse=True)``'s), as PyTorch's optimizer
    #: of the same name: ``"refuse"`` raises ``_sparse_error``; ``"dense"`` runs the step on their
    #: dense equivalent (SGD, Adagrad: for them PyTorch's sparse path gives the same numbers, as
    #: the rows without an entry get a zero gradient either way); ``"sparse"``: the step reads
    #: them itself (SparseAdam).
    _sparse_grads = "refuse"
    _sparse_error: str | None = None  # default: "<Name> does not support sparse gradients"
    #: Whether ``step`` sees a complex parameter (and its gradient and state) as its real view
    #: (``view_as_real``, a trailing dimension of 2), as PyTorch's optimizers do: each of the real
    #: and imaginary parts then gets its own adaptive scale (Adam's second moment of ``1+2j`` is
    #: ``(1, 4)``, not ``(1+2j)**2``). Off for the ones that flatten parameters themselves.
    _complex_as_real = True
    #: the error PyTorch raises for sparse gradients with a nonzero ``weight_decay``
    _sparse_weight_decay_error = "weight_decay option is not compatible with sparse gradients"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_hooks(cls.__dict__["step"])  # type: ignore[method-assign]

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    _HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                   "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                   "_optimizer_load_state_dict_pre_hooks",
                   "_optimizer_load_state_dict_post_hooks")

    def _patch_hook_dicts(self) -> None:
        for name in self._HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._patch_hook_dicts()
        self.__dict__.setdefault("_opt_called", False)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key not in ("params", "param_names"):
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ----------------------------------------------------------------- groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with optional per-group hyper-parameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use "
                            "a list instead.")
        else:
            param_group["params"] = list(params)
        # (name, tensor) pairs, as from named_parameters(): all of a group's params or none
        names = [p[0] for p in param_group["params"] if isinstance(p, tuple)]
        plist = [p[1] if isinstance(p, tuple) else p for p in param_group["params"]]
        param_group["params"] = plist
        if names:
            if len(names) != len(plist):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in plist:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", False) and not (p.is_leaf or
                                                                        p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        if len(set(map(id, plist))) != len(plist):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(map(id, group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(map(id, plist)):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ grads
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (``None`` by default, else zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                elif g.__class__.is_sparse is True:
                    g.zero_()  # no entries left, as PyTorch
                else:
                    if g._grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    _inplace.fill_(g, 0)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step (re-evaluating the loss with ``closure`` if given)."""
        raise NotImplementedError

    def _closure_loss(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before each ``step``; it may return new
        ``(args, kwargs)``."""
        h = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[h.id] = hook
        return h

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each ``step``."""
        h = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[h.id] = hook
        return h

    @staticmethod
    def _add_hook(hooks: OrderedDict[int, Callable], hook: Callable,
                  prepend: bool) -> RemovableHandle:
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        if prepend:
            hooks.move_to_end(h.id, last=False)
        return h

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                     ) -> RemovableHandle:
        """``hook(optimizer)`` runs before :meth:`state_dict` builds the dict (``prepend``: before
        the hooks already registered)."""
        return self._add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                      ) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs on the dict :meth:`state_dict` built; it may change
        it in place or return a replacement."""
        return self._add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                          ) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs on (a shallow copy of) the dict given to
        :meth:`load_state_dict` before it is loaded; it may return a replacement."""
        return self._add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                           ) -> RemovableHandle:
        """``hook(optimizer)`` runs after :meth:`load_state_dict` loaded a state."""
        return self._add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` -- parameters
        are replaced by their position in the order of the groups, as in PyTorch."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mappings: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mappings.setdefault(id(p), i)
            packed["params"] = [mappings[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state produced by :meth:`state_dict` (state tensors are moved to each parameter's
        device and, when floating point, cast to its dtype -- except ``"step"``)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the "
                             "size of optimizer's group")
        id_map = {old_id: p for old_id, p in zip(
            (i for g in saved_groups for i in g["params"]),
            (p for g in groups for p in g["params"]))}

        def cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key == "step":
                    return value.detach().to("cpu", dtype=_dtype.float32, copy=True)
                if param.is_floating_point() and value.is_floating_point():
                    return value.detach().to(param.device, dtype=param.dtype, copy=True)
                return value.detach().to(param.device, copy=True)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, key) for v in value)
            return value

        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            key = int(k) if isinstance(k, str) and k.isdigit() else k
            if key in id_map:
                param = id_map[key]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            for k, v in new_group.items():  # JSON has no tuples: restore e.g. ``betas``
                if isinstance(group.get(k), tuple) and isinstance(v, list):
                    new_group[k] = tuple(v)
            return new_group

        # through __setstate__, so subclasses fill in entries an older state lacks
        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng)
                                            for g, ng in zip(groups, saved_groups)]})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)


def _with_hooks(step: Callable) -> Callable:
    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        self._opt_called = True
        if self._optimizer_step_pre_hooks or _global_pre_hooks:
            # as in PyTorch, hooks see ``step``'s positional arguments with the optimizer first
            # (``args[0] is self``), and a pre-hook may replace all of them
            full_args = (self, *args)
            for hook in (*_global_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()):
                res = hook(self, full_args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                           f"new_kwargs), but got {res}.")
                    full_args, kwargs = res
            args = tuple(full_args[1:])
        hook_args, hook_kwargs = (self, *args), kwargs  # (the closure as given, for post-hooks)
        swapped = _densify_sparse_grads(self) if SPARSE_GRADS.made else None
        realified = None
        if self._complex_as_real and any(p.dtype.is_complex for g in self.param_groups
                                         for p in g["params"]):
            args, kwargs = _closure_first(self, args, kwargs)
            realified = _complex_as_real(self)
        try:
            with grad_mode._no_grad():
                out = step(self, *args, **kwargs)
        finally:
            if realified:
                _complex_back(self, realified)
            if swapped:
                for p, g in swapped:  # the user's sparse .grad back, untouched
                    p._grad = g
        if self._optimizer_step_post_hooks or _global_post_hooks:
            for hook in (*self._optimizer_step_post_hooks.values(), *_global_post_hooks.values()):
                hook(self, hook_args, hook_kwargs)
        return out

    wrapper._wrapped_step = True  # type: ignore[attr-defined]
    return wrapper


def _closure_first(opt: Optimizer, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Run ``step``'s closure now (it is the first thing every such ``step`` does), so that the
    gradients it computes are the ones seen as real views; the step gets its loss back."""
    closure = args[0] if args else kwargs.get("closure")
    if closure is None:
        return args, kwargs
    loss = opt._closure_loss(closure)

    def done() -> Any:
        return loss

    return ((done,) + args[1:], kwargs) if args else (args, {**kwargs, "closure": done})


def _complex_as_real(opt: Optimizer) -> list[tuple[dict[str, Any], int, Tensor, Tensor]]:
    """For the step, put each complex parameter that has a gradient into its group as its real
    view, with the gradient's real view as ``.grad`` and its state's parameter-shaped tensors as
    real views too (keyed by the view); :func:`_complex_back` undoes it. The views share memory
    with the originals, so the step's in-place updates land in them."""
    done: list[tuple[dict[str, Any], int, Tensor, Tensor]] = []
    for group in opt.param_groups:
        params = group["params"]
        for i, p in enumerate(params):
            if not p.dtype.is_complex or p._grad is None or p._grad.__class__.is_sparse is True:
                continue
            pr = view_as_real(p)
            pr._grad = view_as_real(p._grad)
            st = opt.state.pop(p, None)
            if st:
                opt.state[pr] = {k: (view_as_real(v) if isinstance(v, Tensor) and v.dtype.is_complex
                                     and v.shape == p.shape else v) for k, v in st.items()}
            params[i] = pr
            done.append((group, i, p, pr))
    return done


def _complex_back(opt: Optimizer, done: list[tuple[dict[str, Any], int, Tensor, Tensor]]) -> None:
    """Undo :func:`_complex_as_real`: the complex parameters back in their groups, their state
    keyed by them again, the tensors the step made in the real view's shape as complex views
    (PyTorch's state holds tensors of the parameter's shape and dtype)."""
    for group, i, p, pr in done:
        group["params"][i] = p
        st = opt.state.pop(pr, None)
        if st:
            opt.state[p] = {k: (view_as_complex(v) if isinstance(v, Tensor) and not v.dtype.is_complex
                                and v.shape == pr.shape else v) for k, v in st.items()}


def _densify_sparse_grads(opt: Optimizer) -> list[tuple[Tensor, Any]] | None:
    """Apply ``opt._sparse_grads`` to the sparse ``.grad`` s of its parameters: raise, or put their
    dense equivalent in place for the step (returned, to be put back after), or leave them."""
    if opt._sparse_grads == "sparse":
        return None
    found = [(group, p) for group in opt.param_groups for p in group["params"]
             if p._grad is not None and p._grad.__class__.is_sparse is True]
    for group, _ in found:  # (checked before any .grad is replaced: a refusal changes nothing)
        if opt._sparse_grads == "refuse":
            raise RuntimeError(opt._sparse_error
                               or f"{type(opt).__name__} does not support sparse gradients")
        if group.get("weight_decay", 0) != 0:
            raise RuntimeError(opt._sparse_weight_decay_error)
    swapped = [(p, p._grad) for _, p in found]
    for p, g in swapped:
        p._grad = g.to_dense()
    return swapped


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """A pre-step hook for every optimizer."""
    h = RemovableHandle(_global_pre_hooks)
    _global_pre_hooks[h.id] = hook
    return h


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """A post-step hook for every optimizer."""
    h = RemovableHandle(_global_post_hooks)
    _global_post_hooks[h.id] = hook
    return h
