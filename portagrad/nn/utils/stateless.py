"""``torch.nn.utils.stateless.functional_call`` (deprecated in favour of
``torch.func.functional_call``).

The module is called with some of its parameters and buffers (named as in ``state_dict``)
replaced by caller-given tensors. The replacement is temporary: every swapped slot is put back
when the call returns or raises, and values the module itself assigned to a swapped name during
the call are written back into the caller's dict."""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..._tensor import Tensor
from ..modules.module import Module
from ..parallel.data_parallel import DataParallel

__all__ = ["functional_call"]


class _Absent:
    """Marks a slot that holds nothing (the name was not set on the module)."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()


def _all_tensors(module: Module) -> dict[str, Tensor]:
    """Every parameter and buffer under every name it is reachable by (tied ones repeated)."""
    found: dict[str, Tensor] = dict(module.named_parameters(remove_duplicate=False))
    found.update(module.named_buffers(remove_duplicate=False))
    return found


def _spread_to_tied(module: Module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """``given`` extended so that every name sharing a tensor with a given name gets the same
    value; raises when tied names were given different tensors."""
    groups: dict[int, list[str]] = {}
    for name, tensor in _all_tensors(module).items():
        groups.setdefault(id(tensor), []).append(name)
    result = dict(given)
    for names in groups.values():
        if len(names) < 2:
            continue
        supplied = [n for n in names if n in given]
        if not supplied:
            continue
        if len({id(given[n]) for n in supplied}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
        for name in names:
            result[name] = given[supplied[0]]
    return result


def _check_exact(module: Module, names: dict[str, Tensor]) -> None:
    expected = set(_all_tensors(module))
    problems = []
    unexpected = sorted(set(names) - expected)
    missing = sorted(expected - set(names))
    if unexpected:
        problems.append(f"Unexpected key(s): {', '.join(repr(k) for k in unexpected)}.")
    if missing:
        problems.append(f"Missing key(s): {', '.join(repr(k) for k in missing)}.")
    if problems:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                           + "\n\t".join(problems))


def _exchange(owner: Module, name: str, value: Any) -> Any:
    """Put ``value`` (or nothing, for ``_ABSENT``) in ``owner``'s slot ``name`` and return what
    was there before."""
    if value is not _ABSENT and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of torch.Tensor")
    if not name:
        raise KeyError('tensor name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'tensor name can\'t contain ".", got: {name}')
    for registry in (owner._parameters, owner._buffers):
        if name in registry:
            previous = registry[name]
            if value is _ABSENT:
                del registry[name]
            else:
                registry[name] = value
            return previous
    previous = getattr(owner, name, _ABSENT)
    if previous is not _ABSENT and not isinstance(previous, Tensor):
        raise TypeError(f"attribute `{name}`: {previous} is not an instance of torch.Tensor")
    if value is not _ABSENT:
        setattr(owner, name, value)
    elif previous is not _ABSENT:
        delattr(owner, name)
    return previous


def _exchange_all(module: Module, values: dict[str, Any]) -> dict[str, Any]:
    """:func:`_exchange` for every dotted name of ``values``; the displaced values by name."""
    displaced: dict[str, Any] = {}
    for dotted, value in values.items():
        path, _, leaf = dotted.rpartition(".")
        displaced[dotted] = _exchange(module.get_submodule(path), leaf, value)
    return displaced


@contextmanager
def _swapped_in(module: Module, values: dict[str, Tensor], tie_weights: bool,
                strict: bool) -> Iterator[None]:
    """Within the block ``module`` uses ``values``; afterwards its own tensors are back and
    ``values`` holds what the module left in the swapped slots."""
    wanted = _spread_to_tied(module, values) if tie_weights else dict(values)
    if strict:
        _check_exact(module, wanted)
    saved: dict[str, Any] = {}
    try:
        saved = _exchange_all(module, wanted)
        yield
    finally:
        left = _exchange_all(module, saved)
        for name in values:
            if left.get(name, _ABSENT) is not _ABSENT:
                values[name] = left[name]


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with the parameters and buffers named (dotted, as in
    ``state_dict``) in ``parameters_and_buffers`` replaced by the given tensors for this call
    only. A non-tuple ``args`` is the single positional argument. ``tie_weights``: names that
    share one tensor in the module all take the value given for any of them. ``strict``: the
    names must be exactly the module's parameters and buffers. Deprecated in favour of
    ``torch.func.functional_call``."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped_in(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **(kwargs or {}))
