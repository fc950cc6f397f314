"""``@record``: a rank's uncaught exception written where its launcher looks for it.

``torch.distributed.elastic.multiprocessing.errors.record`` decorates a script's ``main``: an
exception that escapes it is written as JSON to the file named by ``TORCHELASTIC_ERROR_FILE``
(when set), in PyTorch's format, and raised again, so the launcher (and its log) can name the
rank that failed first and why.
"""
from __future__ import annotations

import faulthandler
import functools
import json
import os
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["record", "ErrorHandler"]

F = TypeVar("F", bound=Callable[..., Any])


class ErrorHandler:
    """Writes an exception to ``TORCHELASTIC_ERROR_FILE`` (``torch``'s ``ErrorHandler``)."""

    def _get_error_file_path(self) -> str | None:
        return os.environ.get("TORCHELASTIC_ERROR_FILE", None)

    def initialize(self) -> None:
        """Dump every thread's stack on a fatal signal (segfault, abort), as PyTorch does."""
        try:
            faulthandler.enable(all_threads=True)
        except Exception as e:  # (no usable stderr: the handler is a convenience)
            warnings.warn(f"Unable to enable fault handler. {type(e).__name__}: {e}",
                          stacklevel=2)

    def record_exception(self, e: BaseException) -> None:
        """Write ``{"message": {"message": "Type: text", "extraInfo": {"py_callstack": ...,
        "timestamp": ...}}}`` to the error file, if one is set."""
        file = self._get_error_file_path()
        if file:
            data = {"message": {"message": f"{type(e).__name__}: {e}",
                                "extraInfo": {"py_callstack": traceback.format_exc(),
                                              "timestamp": str(int(time.time()))}}}
            with open(file, "w") as fp:
                json.dump(data, fp)


def record(fn: F, error_handler: ErrorHandler | None = None) -> F:
    """Decorate a script's entry point: an exception escaping ``fn`` is recorded (see the module)
    and raised again; ``SystemExit(0)`` returns ``None``."""
    handler = error_handler if error_handler is not None else ErrorHandler()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as se:
            if se.code == 0:
                return None
            raise
        except Exception as e:
            handler.record_exception(e)
            raise

    return wrapper  # type: ignore[return-value]
