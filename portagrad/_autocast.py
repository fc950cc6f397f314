"""The autocast state and the cast applied at the op entry points.

Autocast state is thread-local as in PyTorch: per device type, whether it is enabled and its
dtype, plus the cache flag, the region nesting and the weight-cast cache. The op entry points named
in :mod:`portagrad._autocast_policy` test ``STATE.on``, one attribute of a module global that is
true while some thread has autocast enabled for some device type, and only then call
:func:`autocast_call`; with no region active an op pays that one test and nothing else.

:func:`autocast_call` returns :data:`SKIP` when the op runs unchanged (autocast not enabled in this
thread for the inputs' device type, the op not in that device type's table, or already inside an
autocast op), otherwise it casts the arguments by the op's policy and calls the op again with
autocast excluded, as PyTorch's autocast kernels exclude their dispatch key while they run, so the
ops an op is composed of are not cast a second time.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from ._autocast_policy import BANNED, FP32, FP32_SET_OPT_DTYPE, LOWER, PROMOTE, policy_for
from ._dtype import bfloat16, dtype, float16, float32, float64
from ._tensor import Tensor

__all__ = ["STATE", "SKIP", "autocast_call", "is_enabled", "set_enabled", "get_dtype", "set_dtype",
           "is_cache_enabled", "set_cache_enabled", "clear_cache", "increment_nesting",
           "decrement_nesting", "cache_size", "default_dtype", "snapshot", "restore"]


class _State:
    """``on``: some thread has autocast enabled for some device type (the hot-path flag)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False


STATE = _State()
#: what :func:`autocast_call` returns when the op is to run its own body unchanged
SKIP: Any = object()

# An op that portagrad composes from other ops (a derivative, nn.functional's avg_pool3d from a
# sum) is one kernel in PyTorch, whose inner steps autocast does not see: calls made from these
# modules are not cast. Methods and top-level aliases only pass a call on, so the caller is looked
# for above them; modules, user code and the rest of the package are cast as PyTorch casts them.
_INTERNAL = ("portagrad._ops", "portagrad.nn.functional", "portagrad.linalg", "portagrad.special",
             "portagrad.autograd", "portagrad._raw", "portagrad._creation")
_PASS_ON = ("portagrad._tensor_api", "portagrad._toplevel")
# nn.functional helpers that PyTorch writes in Python too: the ops they call are cast
_PASS_ON_FUNCTIONS = frozenset({"multi_head_attention_forward", "local_response_norm"})
_lock = threading.Lock()
_enabled_count = 0  # (thread, device type) pairs enabled, over all threads


def default_dtype(device_type: str) -> dtype:
    """PyTorch's default autocast dtype: bfloat16 on cpu, float16 on the others."""
    return bfloat16 if device_type == "cpu" else float16


class _Local(threading.local):
    def __init__(self) -> None:
        self.enabled: set[str] = set()
        self.dtypes: dict[str, dtype] = {}
        self.cache_enabled = True
        self.nesting = 0
        self.excluded = 0
        # id(parameter) -> (parameter, its cast): the parameter is kept so its id is not reused
        self.cache: dict[int, tuple[Tensor, Tensor]] = {}


_tls = _Local()


def is_enabled(device_type: str) -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread."""
    return device_type in _tls.enabled


def set_enabled(device_type: str, enabled: bool) -> None:
    """Enable or disable autocast for ``device_type`` in this thread."""
    global _enabled_count
    was = device_type in _tls.enabled
    if bool(enabled) == was:
        return
    with _lock:
        if enabled:
            _tls.enabled.add(device_type)
            _enabled_count += 1
        else:
            _tls.enabled.discard(device_type)
            _enabled_count -= 1
        # a thread that ends inside a region leaves the flag on: ops then take the slow path,
        # which reads their own thread's state and finds nothing enabled
        STATE.on = _enabled_count > 0


def get_dtype(device_type: str) -> dtype:
    """This thread's autocast dtype for ``device_type``."""
    return _tls.dtypes.get(device_type) or default_dtype(device_type)


def set_dtype(device_type: str, value: dtype) -> None:
    """Set this thread's autocast dtype for ``device_type``."""
    _tls.dtypes[device_type] = value


def snapshot() -> tuple[frozenset[str], dict[str, dtype]]:
    """This thread's autocast state (enabled device types, their dtypes), for :func:`restore`:
    a recomputation (activation checkpointing) runs under the state its forward saw."""
    return frozenset(_tls.enabled), dict(_tls.dtypes)


def restore(state: tuple[frozenset[str], dict[str, dtype]]) -> None:
    """Set this thread's autocast state to one :func:`snapshot` returned."""
    enabled, dtypes = state
    for device_type in set(_tls.enabled) | set(enabled):
        set_enabled(device_type, device_type in enabled)
    _tls.dtypes = dict(dtypes)


def is_cache_enabled() -> bool:
    """Whether casts of parameters are cached inside regions (this thread)."""
    return _tls.cache_enabled


def set_cache_enabled(enabled: bool) -> None:
    """Set this thread's cache flag."""
    _tls.cache_enabled = bool(enabled)


def clear_cache() -> None:
    """Drop this thread's cached casts."""
    _tls.cache.clear()


def cache_size() -> int:
    """How many casts this thread's cache holds."""
    return len(_tls.cache)


def increment_nesting() -> int:
    """Enter a region (enabled or not); the new depth."""
    _tls.nesting += 1
    return _tls.nesting


def decrement_nesting() -> int:
    """Leave a region; the new depth (0: the outermost region was left)."""
    _tls.nesting -= 1
    return _tls.nesting


def _called_inside_an_op(frame: Any) -> bool:
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(_PASS_ON) and frame.f_code.co_name not in _PASS_ON_FUNCTIONS:
            return module.startswith(_INTERNAL)
        frame = frame.f_back
    return False


def _device_type(values: Any) -> str | None:
    for v in values:
        if isinstance(v, Tensor):
            return v.device.type
        if isinstance(v, (list, tuple)):
            found = _device_type(v)
            if found is not None:
                return found
    return None


def _eligible(t: Any, device_type: str) -> bool:
    # PyTorch's is_eligible: a floating tensor of the region's device type, not float64
    return (isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not float64
            and t.device.type == device_type)


def _cast(value: Any, to: dtype, device_type: str, lower: dtype) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, to, device_type, lower) for v in value)
    if not _eligible(value, device_type) or value.dtype is to:
        return value
    t: Tensor = value
    # PyTorch caches the lower-precision casts of float32 leaves that require grad (parameters)
    # until the outermost region exits, so a weight used by several ops is cast once
    if (to is lower and t.dtype is float32 and t.requires_grad and t.is_leaf
            and t._base is None and _tls.cache_enabled):
        hit = _tls.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        out = t.to(to)
        _tls.cache[id(t)] = (t, out)
        return out
    return t.to(to)


def _widest(values: Any, current: dtype, device_type: str, lower: dtype) -> dtype:
    for v in values:
        if isinstance(v, (list, tuple)):
            current = _widest(v, current, device_type, lower)
        elif isinstance(v, Tensor) and v.dtype.is_floating_point and v.device.type == device_type:
            nxt = v.dtype
            if nxt is float64:
                continue  # PyTorch's prioritize ignores float64 inputs
            if current is float32 or nxt is float32:
                current = float32
            elif not (current is lower and nxt is lower):
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


_BCE_BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def autocast_call(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)``, the entry point of ATen op ``name``, under the autocast
    policy of its inputs' device type, or return :data:`SKIP` when autocast does not apply.
    Calls that write into ``out=`` are not autocast (as in PyTorch)."""
    tls = _tls
    if tls.excluded or not tls.enabled or kwargs.get("out") is not None:
        return SKIP
    if _called_inside_an_op(sys._getframe(2)):
        return SKIP
    device_type = _device_type(args) or _device_type(kwargs.values())
    if device_type is None or device_type not in tls.enabled:
        return SKIP
    policy = policy_for(device_type).get(name)
    if policy is None:
        return SKIP
    lower = get_dtype(device_type)
    if policy == BANNED:
        raise RuntimeError(_BCE_BANNED)
    if policy == FP32_SET_OPT_DTYPE:
        # PyTorch: if the first argument is eligible and no dtype was given, pass dtype=float32
        if args and _eligible(args[0], device_type) and kwargs.get("dtype") is None:
            kwargs["dtype"] = float32
    else:
        to = (lower if policy == LOWER else float32 if policy == FP32
              else _widest(args + tuple(kwargs.values()), lower, device_type, lower))
        assert policy in (LOWER, FP32, PROMOTE), policy
        args = tuple(_cast(a, to, device_type, lower) for a in args)
        kwargs = {k: _cast(v, to, device_type, lower) for k, v in kwargs.items()}
    tls.excluded += 1
    try:
        return fn(*args, **kwargs)
    finally:
        tls.excluded -= 1
