"""Process groups over MPI communicators, their communication thread, and work handles.

A :class:`ProcessGroup` wraps an MPI communicator. A collective is one *body*: a function that
issues non-blocking MPI calls and waits for them through the ``wait`` it is given. A synchronous
call runs its body in the calling thread, polling ``MPI_Testall`` against the group's timeout (as
an MPI blocking call would spin, but able to give up). An asynchronous call (``async_op=True``,
and DDP's bucket reductions) hands the body to the group's communication thread, which runs bodies
one at a time in call order -- MPI needs every rank to issue collectives on a communicator in the
same order -- and waits with ``MPI_Waitall``, which releases the GIL, so the reduction proceeds
while the caller computes (the design of PyTorch's ``ProcessGroupMPI``). A synchronous call made
while asynchronous ones are queued joins the queue, so order is kept.

Faults: a wait past the timeout raises :class:`DistBackendError` naming the rank, the collective
and its sequence number, and the group is marked broken (MPI cannot cancel a collective). An
exception that escapes a rank's program, in any thread, aborts the whole MPI job with the rank's
traceback (``MPI_Abort``, installed by ``init_process_group``), so no peer waits forever.
"""
from __future__ import annotations

import collections
import datetime
import itertools
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from . import _shm
from ._checks import enabled as _checks_enabled, exchange
from ._future import Future
from ._mpi import mpi

__all__ = ["ProcessGroup", "abort_job", "Work", "DistBackendError", "DistError", "default_timeout",
           "install_abort_on_error", "uninstall_abort_on_error"]

default_timeout = datetime.timedelta(minutes=30)  # torch.distributed's default for CPU backends



def abort_job(code: int) -> None:
    """``MPI_Abort`` the whole job after a short pause. The ranks' stderr reaches the terminal
    through the launcher's proxies, and the abort kills them at once: without the pause the
    message just written (which rank failed, and why) is sometimes lost. MPICH's shared-memory
    files, which an abort leaves in ``/dev/shm``, are removed first (see :mod:`._shm`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    MPI = mpi()
    _shm.remove(_shm.mapped_files())
    time.sleep(_ABORT_GRACE_S)
    MPI.COMM_WORLD.Abort(code)


_ABORT_GRACE_S = 0.5
_TAG_LIMIT = 32768  # MPI guarantees tags up to 32767 (MPI_TAG_UB is at least that)

class DistError(RuntimeError):
    """An error of the distributed package (``torch.distributed.DistError``)."""

    __module__ = "portagrad.distributed"


class DistBackendError(DistError):
    """The communication library failed or timed out (``torch.distributed.DistBackendError``)."""

    __module__ = "portagrad.distributed"


Body = Callable[[], None]


class Work:
    """The handle of an asynchronous collective (``torch.distributed.Work``): ``wait()`` blocks
    until it is done and its result is in the tensors; ``is_completed()`` asks without blocking."""

    # the tensors a Future of this work holds (set by the public collectives; None: no Future)
    _outputs: list | None = None

    def __init__(self, group: ProcessGroup, name: str, seq: int, finish: Callable[[], Any] | None
                 ) -> None:
        self._group = group
        self._name = name
        self._seq = seq
        self._finish = finish
        self._done = threading.Event()
        self._exc: BaseException | None = None
        self._finished = False
        self._value: Any = None
        # when the communication thread started and finished it (perf_counter), for timelines
        self.t_start = self.t_end = 0.0

    def _complete(self) -> None:
        # in the waiting thread: results go into the tensors once (device copies, version bumps)
        if self._exc is not None:
            raise self._exc
        if not self._finished:
            self._finished = True
            if self._finish is not None:
                self._value = self._finish()

    def is_completed(self) -> bool:
        """Whether the operation has finished (its results are then in the tensors)."""
        if not self._done.is_set():
            return False
        self._complete()
        return True

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        """Block until done (at most ``timeout``, default the group's), then return ``True``.
        Raises :class:`DistBackendError` on a timeout, or the operation's own error."""
        if not self._done.is_set():
            limit = self._group._timeout if timeout is None else _seconds(timeout)
            if not self._done.wait(limit):
                self._group._broken = self._group._describe(self._name, self._seq, limit)
                raise DistBackendError(self._group._broken)
        self._complete()
        return True

    def exception(self) -> BaseException | None:
        """The error the operation raised, if any (``None`` while it runs)."""
        return self._exc

    def is_success(self) -> bool:
        return self._done.is_set() and self._exc is None

    def source_rank(self) -> int:
        """For ``irecv``: the rank the message came from (``-1`` before it arrived)."""
        return self._value if isinstance(self._value, int) else -1

    def result(self) -> Any:
        self.wait()
        return self._value

    def get_future(self) -> Future:
        """A :class:`~portagrad.distributed._future.Future` whose value, once the work is done, is
        the list of its output tensors (``[tensor]`` for ``all_reduce``), as PyTorch's."""
        outputs = self._outputs
        if outputs is None:
            raise RuntimeError(f"get_future() is not supported for {self._name}: its Work has no "
                               f"output tensors to resolve a Future with")

        def resolve() -> list:
            self.wait()
            return list(outputs)

        return Future._of(resolve, self.is_completed)


def _seconds(t: datetime.timedelta | float) -> float:
    return t.total_seconds() if isinstance(t, datetime.timedelta) else float(t)


class ProcessGroup:
    """A group of ranks with its MPI communicator (``torch.distributed.ProcessGroup``)."""

    def __init__(self, comm: Any, ranks: list[int], timeout: datetime.timedelta | float,
                 global_rank: int) -> None:
        self._comm = comm
        self._ranks = list(ranks)  # group rank -> global rank
        self._global = {g: i for i, g in enumerate(self._ranks)}
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._global_rank = global_rank
        self._timeout = _seconds(timeout)
        self._seq = 0  # collectives issued on this group, the same count on every rank
        self._queue: collections.deque[tuple[Work, Body]] = collections.deque()
        self._cv = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        self._inflight: tuple[float, str, int] | None = None  # (deadline, name, seq)
        self._broken: str | None = None
        self.bound_device_id = None
        self._checks = _checks_enabled()  # the header exchange of _checks before each collective
        # Point to point: a message is a header (on ``comm``, with the caller's tag) and then its
        # data on this duplicate, tagged with a per-peer sequence number the header carries, so
        # that several receives from one peer, posted before any completes, each take their own
        # header's data, in posting order (with one tag for both, the second receive's header
        # would match the first message's data). Duplicating is collective, as creating a group.
        self._p2p = comm.Dup()
        self._p2p_seq: dict[int, Any] = {}  # group rank of the peer -> itertools.count

    # ----------------------------------------------------------------- torch API
    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return "mpi"

    def __repr__(self) -> str:
        return f"ProcessGroup(backend='mpi', ranks={self._ranks}, rank={self._rank})"

    # ------------------------------------------------------------------ running
    def _next_p2p_tag(self, peer: int) -> int:
        """The data tag of the next message to group rank ``peer`` (``next`` on a count is
        atomic, so threads sending to one peer get distinct numbers)."""
        counter = self._p2p_seq.get(peer)
        if counter is None:
            counter = self._p2p_seq.setdefault(peer, itertools.count())
        return next(counter) % _TAG_LIMIT

    def _describe(self, name: str, seq: int, limit: float) -> str:
        return (f"[rank {self._global_rank}] {name} (collective #{seq} of the group of ranks "
                f"{self._ranks}) timed out after {limit:g} s: another rank failed, was killed, or "
                f"did not call the same collective")

    def run(self, name: str, body: Body, finish: Callable[[], Any] | None, async_op: bool) -> Any:
        """Run ``body`` (see the module docstring), then ``finish`` in the calling thread; return
        a :class:`Work` when ``async_op``, else ``finish``'s value."""
        if self._broken is not None:
            raise DistBackendError(f"the process group is unusable after an earlier failure: "
                                   f"{self._broken}")
        self._seq += 1
        seq = self._seq
        with self._cv:
            inline = not async_op and self._pending == 0
            if not inline:
                work = Work(self, name, seq, finish)
                self._pending += 1
                self._queue.append((work, body))
                self._start_thread()
                self._cv.notify()
        if not inline:
            if async_op:
                return work
            work.wait()
            return work._value
        # a blocking MPI call cannot be interrupted: the watchdog aborts the job if it overruns
        self._inflight = (time.monotonic() + self._timeout, name, seq)
        self._start_watchdog()
        try:
            body()
        finally:
            self._inflight = None
        return finish() if finish is not None else None

    def run_inline(self, name: str, header: Any, call: Callable[..., Any], args: tuple) -> None:
        """The lean form of a synchronous :meth:`run` whose body is ``call(comm, *args)`` after
        the header exchange (``header``: None to skip it); the caller has checked that nothing
        is queued on the group."""
        if self._broken is not None:
            raise DistBackendError(f"the process group is unusable after an earlier failure: "
                                   f"{self._broken}")
        self._seq += 1
        self._inflight = (time.monotonic() + self._timeout, name, self._seq)
        if self._watchdog is None:
            self._start_watchdog()
        try:
            if header is not None:
                exchange(self._comm, header, self._ranks, self._rank)
            call(self._comm, *args)
        finally:
            self._inflight = None

    def _start_watchdog(self) -> None:
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="portagrad-mpi-watchdog",
                                              daemon=True)
            self._watchdog.start()

    def _watch(self) -> None:
        period = min(max(self._timeout / 20, 0.01), 1.0)
        while self._watchdog is not None:
            time.sleep(period)
            inflight = self._inflight
            if inflight is not None and time.monotonic() > inflight[0]:
                msg = self._describe(inflight[1], inflight[2], self._timeout)
                sys.stderr.write(f"{msg}\n[rank {self._global_rank}] aborting the MPI job: a "
                                 f"blocking collective cannot be interrupted\n")
                abort_job(1)

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="portagrad-mpi-comm",
                                            daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._queue:
                    self._cv.wait()
                work, body = self._queue.popleft()
            if body is None:  # shutdown
                return
            work.t_start = time.perf_counter()
            try:
                body()  # blocking MPI calls, which release the GIL while they wait
            except BaseException as exc:  # handed to whoever waits on the work
                work._exc = exc
            work.t_end = time.perf_counter()
            with self._cv:
                self._pending -= 1
            work._done.set()

    def shutdown(self) -> None:
        """Stop the threads (after the queued work) and free the communicator."""
        self._watchdog = None
        if self._thread is not None and self._broken is None:
            with self._cv:
                self._queue.append((None, None))  # type: ignore[arg-type]
                self._cv.notify()
            self._thread.join(timeout=self._timeout)
        self._thread = None
        MPI = mpi()
        if self._broken is None:
            self._p2p.Free()
        if self._comm != MPI.COMM_WORLD and self._broken is None:
            self._comm.Free()


# -------------------------------------------------------------------- faults
_saved_hooks: tuple[Any, Any] | None = None


def install_abort_on_error(rank: int) -> None:
    """An exception escaping the program (or any thread) on this rank prints its traceback with
    the rank and aborts the whole MPI job: the peers would otherwise wait in their next
    collective until the timeout, or forever inside MPI_Finalize."""
    global _saved_hooks
    if _saved_hooks is not None:
        return
    _saved_hooks = (sys.excepthook, threading.excepthook)

    def abort(kind: type[BaseException], exc: BaseException | None, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, exc, tb))
        sys.stderr.write(f"[rank {rank}] {text}[rank {rank}] aborting the MPI job after an "
                         f"uncaught {kind.__name__} on rank {rank}\n")
        abort_job(1)

    def thread_hook(args: Any) -> None:
        abort(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = abort
    threading.excepthook = thread_hook


def uninstall_abort_on_error() -> None:
    global _saved_hooks
    if _saved_hooks is not None:
        sys.excepthook, threading.excepthook = _saved_hooks
        _saved_hooks = None
