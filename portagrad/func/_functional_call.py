"""``torch.func.functional_call`` and ``stack_module_state``.

``functional_call`` runs a module with some of its tensors (parameters, buffers, or plain tensor
attributes, addressed by dotted names) exchanged for given ones, and exchanges them back
afterwards, also when the call raises. The exchange is done by :class:`_Exchange`, which writes
straight into the owning module's ``_parameters`` / ``_buffers`` tables, so a plain tensor can
stand where a Parameter was without being wrapped. ``stack_module_state`` turns a list of
identical modules into stacked tensors for :func:`portagrad.vmap`.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

from .._ops.joining import stack
from .._tensor import Tensor
from ..nn.modules.module import Module

__all__ = ["functional_call", "stack_module_state"]

_ABSENT: Any = object()  # marks a slot that held nothing


# ---------------------------------------------------------------------------- naming

def _all_named_tensors(module: Module) -> dict[str, Any]:
    """Every parameter and buffer of ``module`` under each of its names (tied ones repeat)."""
    found: dict[str, Any] = dict(module.named_parameters(remove_duplicate=False))
    found.update(module.named_buffers(remove_duplicate=False))
    return found


def _with_ties(module: Module, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` extended so that a tensor given for one name of a tied tensor is used for all of
    its names; giving several distinct tensors for one tied tensor is an error."""
    names_of: dict[int, list[str]] = {}
    for name, t in _all_named_tensors(module).items():
        names_of.setdefault(id(t), []).append(name)
    extended = dict(values)
    for names in names_of.values():
        if len(names) < 2:
            continue
        given = [values[n] for n in names if n in values]
        if not given:
            continue
        if any(g is not given[0] for g in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
        for n in names:
            extended[n] = given[0]
    return extended


def _require_exact_keys(module: Module, names: Iterable[str]) -> None:
    """``strict=True``: the given names are exactly the module's parameters and buffers."""
    expected = set(_all_named_tensors(module))
    given = set(names)
    problems = []
    if given - expected:
        problems.append("Unexpected key(s): "
                        + ", ".join(repr(k) for k in sorted(given - expected)) + ".")
    if expected - given:
        problems.append("Missing key(s): "
                        + ", ".join(repr(k) for k in sorted(expected - given)) + ".")
    if problems:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                           + "\n\t".join(problems))


# ---------------------------------------------------------------------------- the exchange

class _Exchange:
    """Context manager placing ``values`` (dotted name -> tensor or None) into ``module``.

    On exit the previous occupants go back (a name that held nothing is removed again), and each
    entry of ``report`` is refreshed with what the call left in its slot, so a buffer the forward
    pass reassigned is visible to the caller, as in PyTorch.
    """

    def __init__(self, module: Module, values: dict[str, Any], report: dict[str, Any]) -> None:
        self.module = module
        self.values = values
        self.report = report
        self.previous: list[tuple[str, Any]] = []

    def _put(self, name: str, value: Any) -> Any:
        """Write ``value`` (``_ABSENT``: delete) at ``name``; return what was there."""
        owner_path, _, attr = name.rpartition(".")
        owner = self.module.get_submodule(owner_path) if owner_path else self.module
        if value is not _ABSENT and value is not None and not isinstance(value, Tensor):
            raise TypeError(f"{value} is not an instance of torch.Tensor")
        for table in (owner._parameters, owner._buffers):
            if attr in table:
                old = table[attr]
                if value is _ABSENT:
                    del table[attr]
                else:
                    table[attr] = value
                return old
        old = getattr(owner, attr, _ABSENT)
        if old is not _ABSENT and old is not None and not isinstance(old, Tensor):
            raise TypeError(f"attribute `{attr}`: {old} is not an instance of torch.Tensor")
        if value is _ABSENT:
            delattr(owner, attr)
        else:
            setattr(owner, attr, value)
        return old

    def __enter__(self) -> _Exchange:
        try:
            for name, value in self.values.items():
                self.previous.append((name, self._put(name, value)))
        except BaseException:
            self._undo()
            raise
        return self

    def _undo(self) -> dict[str, Any]:
        left: dict[str, Any] = {}
        while self.previous:
            name, old = self.previous.pop()
            left[name] = self._put(name, old)
        return left

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        left = self._undo()
        for name in self.report:
            if left.get(name, _ABSENT) is not _ABSENT:
                self.report[name] = left[name]


def _merge(parameter_and_buffer_dicts: Any) -> dict[str, Any]:
    """The name -> tensor mapping given as a dict or as a sequence of disjoint dicts."""
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if not isinstance(parameter_and_buffer_dicts, Sequence):
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if any(not isinstance(d, dict) for d in parameter_and_buffer_dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    merged: dict[str, Any] = {}
    repeated: list[str] = []
    for d in parameter_and_buffer_dicts:
        for name, value in d.items():
            if name in merged and name not in repeated:
                repeated.append(name)
            merged[name] = value
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return merged


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the tensors named in ``parameter_and_buffer_dicts`` (a dict,
    or a list/tuple of dicts with distinct keys) in place of the module's own for this call.

    ``args`` that is not a tuple is passed as the single positional argument. With
    ``tie_weights`` a value given for one name of a tied tensor applies to all its names;
    ``strict`` requires exactly the module's parameter and buffer names.
    """
    values = _merge(parameter_and_buffer_dicts)
    positional = () if args is None else (args if isinstance(args, tuple) else (args,))
    placed = _with_ties(module, values) if tie_weights else dict(values)
    if strict:
        _require_exact_keys(module, placed)
    with _Exchange(module, placed, report=values):
        return module(*positional, **(kwargs or {}))


# ---------------------------------------------------------------------------- stacking

def _stacked(models: Sequence[Module], named: str) -> dict[str, Tensor]:
    """``{name: stack of that tensor over models}`` for ``named`` (``"named_parameters"`` or
    ``"named_buffers"``); stacks of tensors that require grad are new leaves requiring grad."""
    per_model = [dict(getattr(m, named)()) for m in models]
    out: dict[str, Tensor] = {}
    for name in per_model[0]:
        column = [d[name] for d in per_model]
        flags = {t.requires_grad for t in column}
        if len(flags) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        joined = stack(column).detach()
        out[name] = joined.requires_grad_() if flags == {True} else joined
    return out


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)`` of identical ``models``, each tensor stacked over the models along a
    new leading dimension (detached; stacked parameters are leaves that require grad)."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    return _stacked(models, "named_parameters"), _stacked(models, "named_buffers")
