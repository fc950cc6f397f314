"""What runs inside a DataLoader worker process."""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ... import _creation, _device, _dtype, _random
from ._collate import default_collate
from .dataset import TensorDataset

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

_worker_info: WorkerInfo | None = None
_POLL_S = 0.2  # how often an idle worker checks the loader's stop event


@dataclass(frozen=True)
class WorkerInfo:
    """Set in each worker process: ``id``, ``num_workers``, ``seed`` and its copy of ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """The :class:`WorkerInfo` inside a DataLoader worker, ``None`` in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and re-raised there."""

    def __init__(self, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyError(msg)  # type: ignore[assignment]
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch."""


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    worker_id: int


class _MapFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        fast = _fast_tensor_batch(self.dataset, index, self.collate_fn)
        if fast is not None:
            return fast
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems is not None else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _fast_tensor_batch(dataset: Any, index: Any, collate_fn: Callable) -> Any:
    """``default_collate([dataset[i] for i in index])`` for a TensorDataset in one gather per
    tensor (the same values, far fewer ops)."""
    if type(dataset) is not TensorDataset or collate_fn is not default_collate:
        return None
    idx = _creation.tensor(list(index), dtype=_dtype.int64, device="cpu")
    out = []
    for t in dataset.tensors:
        i = idx if t.device.type == "cpu" else idx.to(t.device)
        out.append(t[i])
    return out


def make_fetcher(is_iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> Any:
    cls = _IterableFetcher if is_iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def worker_loop(is_iterable: bool, dataset: Any, index_queue: Any, data_queue: Any,
                auto_collation: bool, collate_fn: Callable, drop_last: bool, base_seed: int,
                init_fn: Callable | None, worker_id: int, num_workers: int,
                done_event: Any = None) -> None:
    """Fetch batches for the indices received on ``index_queue`` until ``None`` arrives."""
    global _worker_info
    import multiprocessing

    forked = multiprocessing.parent_process() is not None and \
        multiprocessing.get_start_method(allow_none=True) in (None, "fork")
    if forked:
        _mark_forked()
    # workers build batches on the host whatever the parent's default device (PyTorch's default
    # device does not apply in workers either); a forked one must not touch a device at all: the
    # parent's OpenCL context does not survive fork, and using it blocks forever
    _device.host_only_process(
        f"in DataLoader worker process {worker_id}: device contexts do not survive fork. Keep "
        f"the dataset on the cpu and move each batch to the device in the training loop, or "
        f"pass multiprocessing_context='spawn' to the DataLoader" if forked else None)
    ppid = os.getppid()
    try:
        import numpy as np

        seed = base_seed + worker_id
        random.seed(seed)
        _random.manual_seed(seed)
        np.random.seed(seed % 2 ** 32)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            fetcher = None
        iteration_end = False
        while True:
            try:
                r = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if done_event is not None and done_event.is_set():
                    break
                if os.getppid() != ppid:  # the loader's process died: do not outlive it
                    break
                continue
            if r is None:
                break
            idx, index = r
            if isinstance(index, _ResumeIteration):
                data_queue.put((idx, None))
                iteration_end = False
                if fetcher is not None:
                    fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                           drop_last)
                continue
            if iteration_end:
                continue
            data: Any
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if is_iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data
    except KeyboardInterrupt:
        pass
    # flush what this worker sent, then leave without running the interpreter's exit machinery:
    # a forked child inherits the parent's atexit handlers and foreign threads' locks (an OpenCL
    # runtime's, for one), and running those can hang the exit
    try:
        data_queue.close()
        data_queue.join_thread()
    except Exception:
        pass
    if _FORKED:
        os._exit(0)


_FORKED = False


def _mark_forked() -> None:
    global _FORKED
    _FORKED = True
