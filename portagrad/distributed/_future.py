"""``Work.get_future()``: a :class:`Future` that holds a collective's output tensors once done.

PyTorch's DDP communication hooks and overlap code chain work on a collective with
``work.get_future().then(callback)``. There is no event loop here: a future resolves when it is
asked (``wait``, ``value``, ``done``), by completing the work it stands for, and a ``then``
callback runs once, when its future is first asked after the parent is done -- in the asking
thread, where PyTorch runs it in the communication thread. Results are the same; only the
moment the callback runs differs.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Future"]

_UNSET: Any = object()


class Future:
    """``torch.futures.Future``: ``wait()``, ``value()``, ``done()``, ``then(fn)``,
    ``add_done_callback(fn)``, ``set_result(v)``, ``set_exception(e)``."""

    def __init__(self, *, devices: Any = None) -> None:
        self._value: Any = _UNSET
        self._exc: BaseException | None = None
        self._resolve: Callable[[], Any] | None = None  # computes the value when asked
        self._ready: Callable[[], bool] | None = None  # whether _resolve would not block
        self._callbacks: list[Callable[[Future], None]] = []
        self._lock = threading.RLock()

    @classmethod
    def _of(cls, resolve: Callable[[], Any], ready: Callable[[], bool]) -> Future:
        fut = cls()
        fut._resolve, fut._ready = resolve, ready
        return fut

    def _settle(self, block: bool) -> bool:
        with self._lock:
            if self._value is not _UNSET or self._exc is not None:
                return True
            if self._resolve is None or (not block and not self._ready()):  # type: ignore[misc]
                return False
            try:
                value = self._resolve()
            except BaseException as exc:  # kept for whoever asks (wait/value raise it)
                self._exc = exc
            else:
                self._value = value
            self._resolve = None
        self._run_callbacks()
        return True

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def done(self) -> bool:
        """Whether the value (or an error) is there."""
        return self._settle(block=False)

    def wait(self) -> Any:
        """Block until done; return the value or raise the error."""
        if not self._settle(block=True):
            raise RuntimeError("this Future has no result yet and nothing will set it: call "
                               "set_result() first")
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self) -> Any:
        """The value (blocking until done, as ``wait``)."""
        return self.wait()

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future whose value is ``callback(self)``, computed once this one is done."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        return Future._of(lambda: callback(self._done_self()), self.done)

    def _done_self(self) -> Future:
        self.wait()  # errors of the parent propagate to the chained future
        return self

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        """Run ``callback(self)`` when done (at once if done already)."""
        with self._lock:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def set_result(self, result: Any) -> None:
        """Complete a future made by ``Future()`` with ``result``."""
        with self._lock:
            if self._value is not _UNSET or self._exc is not None or self._resolve is not None:
                raise RuntimeError("Future can only be marked completed once.")
            self._value = result
        self._run_callbacks()

    def set_exception(self, result: BaseException) -> None:
        """Complete a future made by ``Future()`` with an error that ``wait`` raises."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception needs an exception, got {type(result).__name__}")
        with self._lock:
            if self._value is not _UNSET or self._exc is not None or self._resolve is not None:
                raise RuntimeError("Future can only be marked completed once.")
            self._exc = result
        self._run_callbacks()
