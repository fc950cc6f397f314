"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and report the
first failure with its traceback (``torch.multiprocessing.spawn``)."""
from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"]

_GRACE_S = 30.0  # how long failed runs wait for the other processes after SIGTERM


class ProcessException(Exception):
    """A process started by :func:`spawn` failed."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed with an exception raised by ``fn`` (the message holds its traceback)."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return (type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                             self.signal_name))


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # stopped by the parent
    except Exception:
        with open(error_file, "wb") as fh:  # the parent raises it with this traceback
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call; :meth:`join` waits for them."""

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids, by rank."""
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds; ``True`` once all processes exited successfully. When
        one fails, the others are terminated and the failure is raised
        (:class:`ProcessRaisedException` with the child's traceback, or
        :class:`ProcessExitedException`)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)  # type: ignore[call-overload]
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_others(_GRACE_S if grace_period is None else grace_period)
        raise self._failure(error_index)

    def _stop_others(self, grace: float) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(grace)
            if p.is_alive():
                p.kill()
                p.join()

    def _failure(self, index: int) -> ProcessException:
        process, path = self.processes[index], self.error_files[index]
        if os.access(path, os.R_OK):
            with open(path, "rb") as fh:
                trace = pickle.load(fh)
            return ProcessRaisedException(
                f"\n\n-- Process {index:d} terminated with the following error:\n{trace}",
                index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                          index, process.pid, code, name)
        return ProcessExitedException(f"process {index:d} terminated with exit code {code:d}",
                                      index, process.pid, code)

    def __del__(self) -> None:
        for path in getattr(self, "error_files", ()):
            with contextlib.suppress(OSError):
                os.unlink(path)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` (``i`` = 0 .. nprocs - 1) with the
    given start method; with ``join``, wait for all and return ``None``, else return the
    :class:`ProcessContext`."""
    ctx: Any = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="portagrad-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(path)  # created by the child only if it fails
        p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """:func:`start_processes` (PyTorch's ``torch.multiprocessing.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
