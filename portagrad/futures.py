"""``torch.futures``: a completed-or-pending value with callbacks, as :func:`portagrad.jit.fork`
returns (portagrad runs forked work eagerly, so its futures are complete when handed out).

The semantics follow ``torch.futures.Future``: ``wait()`` returns the value or raises the stored
exception, ``then(cb)`` gives a new future holding ``cb(self)``, ``set_result`` may be called
once.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")

_PENDING = object()


class Future(Generic[T]):
    """A value that is set once; ``wait`` blocks until then (``torch.futures.Future``)."""

    def __init__(self, *, devices: list[Any] | None = None) -> None:
        self._value: Any = _PENDING
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._callbacks: list[Callable[[Future[T]], None]] = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        """Whether a result or an exception has been set."""
        return self._done.is_set()

    def wait(self) -> T:
        """Block until the future completes; its value, or its exception raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> T:
        """The value of a completed future (its exception raised); it must be done."""
        if not self.done():
            raise RuntimeError("Future.value() called on a future that is not completed yet")
        return self.wait()

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Future can only be marked completed once")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def set_result(self, result: T) -> None:
        """Complete the future with ``result`` (once)."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception that ``wait`` raises."""
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes (now, if it already has)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new future completed with ``callback(self)`` (or its exception) once this one is."""
        out: Future[S] = Future()

        def run(fut: Future[T]) -> None:
            try:
                out.set_result(callback(fut))
            except Exception as e:  # the chained future carries the callback's failure
                out.set_exception(e)
        self.add_done_callback(run)
        return out


def collect_all(futures: list[Future[Any]]) -> Future[list[Future[Any]]]:
    """A future completed with the list ``futures`` once every one of them is done."""
    out: Future[list[Future[Any]]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one_done(_: Future[Any]) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            out.set_result(list(futures))
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures: list[Future[Any]]) -> list[Any]:
    """The values of ``futures``, waiting for each (the first exception is raised)."""
    return [f.wait() for f in futures]
