"""``swap_in_optimizer_params_and_state``: run optimizer APIs on other parameters and state."""
from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state: Any) -> dict[Any, Any]:
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed "
                           f"parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    return state


def _check_group(idx: int, group: dict[str, Any], swapin_group: Any) -> list[int]:
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           f"param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of "
                           f"params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           f"exactly match the live optimizer group keys for group {idx}. Keys "
                           f"only in swap-in: {swapin_only}. Keys only in live: {live_only}.")
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer,
                                       swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Within the context, ``optimizer`` works on ``swapin_parameters`` (in the order of its
    parameters) and on the state and hyper-parameters of ``swapin_optim_state`` (a
    :meth:`Optimizer.state_dict`-shaped dict); the live parameters, state and groups are restored
    on exit. In-place changes of the swapped-in state tensors are visible to the caller."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of "
                           f"param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than "
                           "the live optimizer.")
    flat = list(swapin_parameters.values())
    offset = 0
    seen: set[int] = set()
    plan = []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, group, swapin_group)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        plan.append((group, swapin_group, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra keys "
                           f"{extra!r}.")
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for group, swapin_group, params in plan:
            group["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    group[key] = value
            for p, pid in zip(params, swapin_group["params"]):
                # a shallow copy: in-place tensor updates reach the caller's dict, new entries
                # stay local
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
