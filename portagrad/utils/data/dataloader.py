"""``DataLoader``: batches from a dataset, optionally loaded by worker processes.

With ``num_workers > 0`` each worker process gets its own index queue and all send
``(task index, batch)`` on one result queue; the main process keeps ``prefetch_factor`` batches per
worker in flight and yields them in sampler order. Tensors cross processes by value (see
:mod:`portagrad.multiprocessing.reductions`).
"""
from __future__ import annotations

import itertools
import multiprocessing as python_mp
import queue
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ... import _random
from ..._tensor import Tensor
from . import _worker
from ._collate import default_collate, default_convert
from ._collate import pin_memory as _pin
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info

_POLL_S = 1.0  # how often a waiting main process checks that its workers are alive
_SHUTDOWN_GRACE_S = 2.0


def _check_context(ctx: Any, num_workers: int) -> Any:
    """PyTorch's checks of ``multiprocessing_context``: a start method's name or a context, and
    only with worker processes. A name becomes its context."""
    if ctx is None:
        return None
    if num_workers == 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(ctx, str):
        methods = python_mp.get_all_start_methods()
        if ctx not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method "
                             f"in {methods!r}, but got multiprocessing_context={ctx!r}")
        return python_mp.get_context(ctx)
    if not isinstance(ctx, python_mp.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got "
                        f"multiprocessing_context={ctx}")
    return ctx


class _InfiniteConstantSampler(Sampler):
    """For iterable datasets: ``None`` forever (the dataset decides when to stop)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches (``torch.utils.data.DataLoader``)."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _check_context(multiprocessing_context, num_workers)
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator: Any = None
        self._frozen = True  # (see __setattr__)

    # what decides the batches is fixed once built, as in PyTorch: assigning it later raised
    # nothing and the old value went on being used
    _FIXED = frozenset(("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                        "persistent_workers"))

    def __setattr__(self, name: str, value: Any) -> None:
        if name in DataLoader._FIXED and self.__dict__.get("_frozen", False):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            # a fresh set of workers after the last set was shut down (a worker died, or timed out)
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def _base_seed(self) -> int:
        return int(_random.randint(0, 2 ** 62, (1,), generator=self.generator,
                                   device="cpu").item())

    def __del__(self) -> None:
        it = self.__dict__.get("_iterator")
        if it is not None:
            it._shutdown_workers()


def _device_tensor(obj: Any, depth: int = 0) -> Tensor | None:
    """A non-cpu tensor that ``obj`` holds, looking a few levels into datasets, containers (their
    first elements) and attributes; ``None`` if none is found."""
    if isinstance(obj, Tensor):
        return obj if obj.device.type != "cpu" else None
    if depth >= 6:  # deep enough for wrapped datasets (Subset of a ConcatDataset of ...)
        return None
    if isinstance(obj, (list, tuple)):
        items: Iterable[Any] = obj[:16]
    elif isinstance(obj, dict):
        items = list(obj.values())[:16]
    elif isinstance(obj, Dataset):
        items = list(vars(obj).values())
    else:
        return None
    for item in items:
        found = _device_tensor(item, depth + 1)
        if found is not None:
            return found
    return None


def _refuse_device_data(dataset: Any, num_workers: int) -> None:
    """Forked workers cannot use a device (its context does not survive fork, and an op on the
    parent's device memory blocks forever): refuse a dataset holding device tensors up front."""
    t = _device_tensor(dataset)
    if t is not None:
        raise RuntimeError(
            f"DataLoader(num_workers={num_workers}): the dataset holds a tensor on device "
            f"'{t.device}', which forked worker processes cannot use (device contexts do not "
            f"survive fork). Keep the dataset on the cpu and move each batch to the device in the "
            f"training loop, use num_workers=0, or pass multiprocessing_context='spawn'.")


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        # a weak reference: a loader keeps its persistent iterator, and a reference cycle would
        # leave their shutdown to the cycle collector, which closes the queues' feeder threads
        # first (the workers would never receive their stop message)
        self._loader_ref = weakref.ref(loader)
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._pin_memory = loader.pin_memory
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._sampler_iter = iter(self._index_sampler)
        # as PyTorch, every iterator draws the workers' base seed from the loader's generator (so
        # a shuffled order is the same with and without workers)
        self._base_seed = loader._base_seed()
        self._num_yielded = 0
        # the length now (the loader is held weakly and may be gone when it is asked for)
        try:
            self._length: int | Exception = len(loader)
        except Exception as exc:  # (no __len__: raised when asked, as PyTorch)
            self._length = exc

    def __iter__(self) -> _BaseIter:
        return self

    def __len__(self) -> int:
        if isinstance(self._length, Exception):
            raise self._length
        return self._length

    def _next_index(self) -> Any:
        return next(self._sampler_iter)

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        return _pin(data) if self._pin_memory else data

    def _next_data(self) -> Any:
        raise NotImplementedError


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(loader._is_iterable, self._dataset,
                                             self._auto_collation, self._collate_fn,
                                             self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor or 2
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = python_mp.get_context()
        elif isinstance(ctx, str):
            ctx = python_mp.get_context(ctx)
        if ctx.get_start_method() == "fork":
            _refuse_device_data(self._dataset, self._num_workers)
        self._data_queue = ctx.Queue()
        # set at shutdown: workers also stop on it when a stop message cannot reach them (at
        # garbage collection the queues' feeder threads may already be closed)
        self._done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        base_seed = self._base_seed
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker.worker_loop,
                            args=(loader._is_iterable, self._dataset, iq, self._data_queue,
                                  self._auto_collation, self._collate_fn, self._drop_last,
                                  base_seed, loader.worker_init_fn, i, self._num_workers,
                                  self._done_event),
                            daemon=True)
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        if not first_iter:
            self._sampler_iter = iter(self._index_sampler)
            self._base_seed = loader._base_seed()
        self._num_yielded = 0
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: wait until each has restarted its epoch
            for iq in self._index_queues:
                iq.put((-1, _worker._ResumeIteration()))
            acks = self._num_workers
            while acks > 0:
                idx, _ = self._get_data()
                if idx == -1:
                    acks -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self) -> tuple[int, Any]:
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w.pid for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) "
                                       f"{', '.join(map(str, dead))}) exited unexpectedly") from None
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") \
                        from None

    def _next_data(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                return self._process(data)
            idx, data = self._get_data()
            if idx == -1:
                continue
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_done(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                return self._process(data)

    def _mark_worker_done(self, worker_id: int) -> None:
        self._workers_status[worker_id] = False
        self._index_queues[worker_id].put(None)

    def _process(self, data: Any) -> Any:
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self) -> None:
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        self._done_event.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except Exception:
                pass
        # workers exit when they read None; one still busy in user code (a slow or hung
        # __getitem__) gets a short grace period and is then terminated
        deadline = time.monotonic() + _SHUTDOWN_GRACE_S
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in self._workers:
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
        for q in (*self._index_queues, self._data_queue):
            try:
                q.cancel_join_thread()
                q.close()
            except Exception:
                pass

    def __del__(self) -> None:
        self._shutdown_workers()


# PyTorch's names of the iterator classes: libraries subclass or type-check them
# (``_BaseDataLoaderIter`` in Lightning's loops, ``_MultiProcessingDataLoaderIter`` in skorch)
_BaseDataLoaderIter = _BaseIter
_SingleProcessDataLoaderIter = _SingleProcessIter
_MultiProcessingDataLoaderIter = _MultiProcessIter
