"""Anomaly detection: remember where each node was created and check backward results for NaN."""
from __future__ import annotations

import threading
import traceback
from typing import Any

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


_state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for NaN."""
    return _state.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off in this thread (``torch.set_anomaly_enabled``): the
    switch that :class:`detect_anomaly` and :class:`set_detect_anomaly` set for a region."""
    _state.enabled, _state.check_nan = bool(enabled), bool(check_nan)


_PKG = __file__.rsplit("autograd", 1)[0]  # .../portagrad/


def _record_trace() -> str:
    """The user's part of the current stack (portagrad's own frames left out)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PKG)]
    return "".join(traceback.format_list(frames))


def _check_nan(node: Any, outs: Any) -> None:
    if not _state.check_nan:
        return
    for i, g in enumerate(outs):
        if g is not None and g.__class__.is_sparse is True:
            g = g._values()
        if g is not None and g.is_floating_point() and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


class detect_anomaly:
    """Context manager: record forward tracebacks and check backward for NaN
    (``torch.autograd.detect_anomaly``). Slows everything down: for debugging only."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        import warnings

        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and "
                      "should only be enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.check_nan = self.prev


class set_detect_anomaly:
    """Turn anomaly detection on or off; as a context manager it restores the previous setting."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = bool(mode), check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.check_nan = self.prev
