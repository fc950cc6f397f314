"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The flags are thread-local, as in PyTorch. Each class works as a context manager and a decorator.
Inside portagrad, :class:`_no_grad` is the one way to switch recording off for a block.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, TypeVar
from collections.abc import Callable

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "set_multithreading_enabled",
           "is_multithreading_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _Flags(threading.local):
    def __init__(self) -> None:
        self.grad = True
        self.inference = False
        # set_multithreading_enabled's setting (recorded; backward runs on the caller's thread)
        self.multithreading = True


_flags = _Flags()

# One entry per ``inference_mode(True)`` block active now, in any thread (list append and pop are
# atomic). While it is empty no thread is in inference mode, and code making a tensor per op
# (``Tensor._fresh``) skips the thread-local read of ``_flags.inference``.
_inference_blocks: list[None] = []


def is_grad_enabled() -> bool:
    """Whether operations are recorded for autograd in this thread."""
    return _flags.grad


def is_inference_mode_enabled() -> bool:
    """Whether ``inference_mode`` is active in this thread."""
    return _flags.inference


class _no_grad:
    """``with _no_grad():`` -- recording off for the block, restored on exit. The core's own
    no-grad context: a plain context manager (no decorator forms, no ``__new__``), cheaper to
    enter and leave than the public :class:`no_grad` on the per-op and per-node paths."""

    __slots__ = ("prev",)

    def __enter__(self) -> None:
        self.prev = _flags.grad
        _flags.grad = False

    def __exit__(self, *exc: object) -> None:
        _flags.grad = self.prev


class _DecoratorContextManager:
    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        raise NotImplementedError

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> _DecoratorContextManager:
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: results have ``requires_grad=False``."""

    def __enter__(self) -> None:
        self.prev = _flags.grad
        _flags.grad = False

    def __exit__(self, *exc: object) -> None:
        _flags.grad = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording (inside ``no_grad``)."""

    def __enter__(self) -> None:
        self.prev = _flags.grad
        _flags.grad = True

    def __exit__(self, *exc: object) -> None:
        _flags.grad = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Enable (``True``) or disable (``False``) recording; acts at once, and as a context manager
    restores the previous mode on exit."""

    def __init__(self, mode: bool) -> None:
        self.prev = _flags.grad
        self.mode = bool(mode)
        _flags.grad = self.mode

    def __enter__(self) -> None:
        _flags.grad = self.mode

    def __exit__(self, *exc: object) -> None:
        _flags.grad = self.prev

    def __call__(self, func: F) -> F:
        _flags.grad = self.prev  # used as a decorator: the mode applies inside the function only
        return super().__call__(func)

    def clone(self) -> set_grad_enabled:
        prev = _flags.grad
        obj = self.__class__(self.mode)
        _flags.grad = prev
        obj.prev = prev
        return obj


def is_multithreading_enabled() -> bool:
    """This thread's :class:`set_multithreading_enabled` setting (``True`` unless turned off)."""
    return bool(_flags.multithreading)


class set_multithreading_enabled(_DecoratorContextManager):
    """PyTorch's switch between running backward on per-device worker threads (``True``, its
    default) and on the calling thread (``False``): acts at once, and as a context manager
    restores the previous setting on exit; thread-local. portagrad's engine always runs
    backward on the calling thread, which is what ``False`` asks for, so the setting is recorded
    (:func:`is_multithreading_enabled`) and either value computes the same gradients."""

    def __init__(self, mode: bool) -> None:
        self.prev = _flags.multithreading
        _flags.multithreading = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _flags.multithreading = self.prev

    def clone(self) -> set_multithreading_enabled:
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` and stricter: nothing is recorded or saved, and tensors created inside are
    inference tensors (``is_inference()``) that cannot later be saved for backward."""

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # used bare as a decorator: ``mode`` is the function

    def __init__(self, mode: Any = True) -> None:
        self.mode = mode if isinstance(mode, bool) else True

    def __enter__(self) -> None:
        self.prev = (_flags.grad, _flags.inference)
        if self.mode:
            _inference_blocks.append(None)  # before the flag: an empty list implies no inference
            _flags.grad, _flags.inference = False, True
        else:
            _flags.inference = False

    def __exit__(self, *exc: object) -> None:
        _flags.grad, _flags.inference = self.prev
        if self.mode:
            _inference_blocks.pop()

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)
