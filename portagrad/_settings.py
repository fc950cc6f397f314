"""Process-wide runtime settings of ``torch.*``: thread counts, deterministic algorithms, float32
matmul precision and always-warn.

Thread counts are real: ``set_num_threads`` limits the BLAS and OpenMP pools that numpy (the
``cpu`` backend) computes with, through ``threadpoolctl``; OpenCL devices schedule their own
work and are not affected. portagrad's kernels are deterministic (the same inputs give the same
bits on a device), so the deterministic-algorithm switches are flags that PyTorch code can set
and read back; they change no result.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any

from threadpoolctl import ThreadpoolController

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "set_warn_always",
           "is_warn_always_enabled"]

_lock = threading.Lock()
_controller: ThreadpoolController | None = None


def _pools() -> ThreadpoolController:
    # inspecting the loaded libraries walks the process's shared objects: do it once, on demand
    global _controller
    with _lock:
        if _controller is None:
            _controller = ThreadpoolController()
        return _controller


def _default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_state: dict[str, Any] = {"threads": None, "interop": None, "deterministic": False,
                          "warn_only": False, "matmul_precision": "highest",
                          "warn_always": False}


def _check_int(fn: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def set_num_threads(int: int) -> None:
    """Use at most ``int`` threads for intra-op parallelism on the cpu: the BLAS (OpenBLAS, MKL,
    BLIS) and OpenMP pools numpy computes with are limited to that many threads."""
    n = _check_int("set_num_threads", int)
    _pools().limit(limits=n)
    _state["threads"] = n


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the cpu: what
    :func:`set_num_threads` set, else the BLAS pool's size (the available cores when numpy's
    BLAS has no pool)."""
    if _state["threads"] is not None:
        return int(_state["threads"])
    sizes = [info["num_threads"] for info in _pools().info() if info.get("user_api") == "blas"]
    return max(sizes) if sizes else _default_threads()


def set_num_interop_threads(int: int) -> None:
    """Set the number of threads for inter-op parallelism. As in PyTorch it can be set once,
    before any is used; portagrad runs ops one after another, so it is recorded only."""
    n = _check_int("set_num_interop_threads", int)
    with _lock:
        if _state["interop"] is not None:
            raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                               "has started or set_num_interop_threads called")
        _state["interop"] = n


def get_num_interop_threads() -> int:
    """The number of inter-op threads (what :func:`set_num_interop_threads` set, else the
    available cores)."""
    value = _state["interop"]
    return int(value) if value is not None else _default_threads()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms. portagrad's kernels are all deterministic already, so
    this records the flags (read back by :func:`are_deterministic_algorithms_enabled` and
    :func:`is_deterministic_algorithms_warn_only_enabled`) and changes no result."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` turned the flag on."""
    return bool(_state["deterministic"])


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether the deterministic flag is in warn-only mode."""
    return bool(_state["warn_only"])


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """The deterministic flag as a debug mode: ``"default"``/0 (off), ``"warn"``/1 (warn only),
    ``"error"``/2 (on). portagrad's kernels are deterministic: this only sets the flags."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError("debug_mode must be str or int, but got "
                        f"{type(debug_mode).__name__}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError("invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")


def get_deterministic_debug_mode() -> int:
    """0 (deterministic flag off), 1 (warn only) or 2 (on)."""
    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``: the precision float32 matmuls may use. portagrad
    always computes them in float32 (``"highest"``), which every setting permits; the value is
    recorded for :func:`get_float32_matmul_precision`."""
    if precision not in _PRECISIONS:
        # PyTorch warns and keeps the current setting
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision
    from .backend_flags import mkldnn  # the flag modules import after this one

    # PyTorch mirrors the setting into the CPU products' own flag
    mkldnn.matmul.fp32_precision = {"highest": "ieee", "high": "tf32", "medium": "bf16"}[precision]


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set (``"highest"`` by default)."""
    return str(_state["matmul_precision"])


def set_warn_always(b: bool) -> None:
    """Ask warnings that PyTorch issues once per process to be issued every time (portagrad
    warns through Python's ``warnings``, whose filters decide repetition)."""
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` is on."""
    return bool(_state["warn_always"])
