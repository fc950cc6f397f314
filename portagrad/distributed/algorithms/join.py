"""``torch.distributed.algorithms.Join``: training with uneven inputs. Inside ``with Join([...])``
a rank that runs out of batches leaves the loop and, in ``__exit__``, shadows the collectives the
other ranks still issue (each :class:`Joinable`'s :class:`JoinHook`) until every rank has joined;
then each hook's ``post_hook`` runs (DDP: the last joiner's parameters are broadcast).

The protocol is PyTorch's: every iteration, a rank that has not joined all-reduces a one
(:meth:`Join.notify_join_context`, called by the joinable at the start of its iteration), a
joined rank a zero, so the sum counts the ranks still training; when it reaches zero all are
done."""
from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any

import numpy as np

from .._group import ProcessGroup, Work
from .._mpi import mpi

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joined rank runs for one :class:`Joinable`: ``main_hook()`` once per iteration the
    others still train (issue their collectives), ``post_hook(is_last_joiner)`` once at the end."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the ranks still training."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined; ``is_last_joiner``: this rank joined last."""


class Joinable(ABC):
    """A class whose collectives :class:`Join` can shadow (DDP, as in PyTorch)."""

    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs: Any) -> JoinHook:
        """The hook a joined rank runs for this object (``kwargs``: those given to Join)."""

    @property
    @abstractmethod
    def join_device(self) -> Any:
        """The device of the join context's collectives."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join context's collectives."""


class _JoinConfig:
    def __init__(self, enable: bool, throw_on_early_termination: bool,
                 is_first_joinable: bool) -> None:
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable

    @staticmethod
    def construct_disabled_join_config() -> _JoinConfig:
        return _JoinConfig(False, False, False)


def _allreduce_int(group: ProcessGroup, value: int, async_op: bool = False) -> Any:
    """Sum ``value`` over ``group``; when async, the Work (``wait()``, then ``result()[0]``)."""
    MPI = mpi()
    buf = np.array([value], np.int64)

    def body() -> None:
        group._comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)

    if async_op:  # result(): [the sum]
        return group.run("Join all_reduce", body, lambda: [int(buf[0])], True)
    group.run("Join all_reduce", body, None, False)
    return int(buf[0])


class Join:
    """``with Join(joinables, enable=True, throw_on_early_termination=False, **kwargs):`` around
    a training loop whose ranks may have different numbers of batches. ``kwargs`` go to each
    joinable's ``join_hook`` (DDP: ``divide_by_initial_world_size``). With
    ``throw_on_early_termination`` the first rank to run out makes every rank raise instead."""

    def __init__(self, joinables: list[Joinable], enable: bool = True,
                 throw_on_early_termination: bool = False, **kwargs: Any) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join expects Joinable objects, got {type(j).__name__}")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self) -> None:
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, i == 0)

    def _extract_dist_info(self) -> None:
        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group: ProcessGroup = self._joinables[0].join_process_group
        self._device = self._joinables[0].join_device

    def __enter__(self) -> Join:
        return self

    def __exit__(self, type: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if not self._enable or type is not None:
            return  # an exception propagates as it is (PyTorch does not shadow then either)
        all_joined = False
        is_last_joiner = True
        i = 0
        warn_threshold = 1000
        while not all_joined:
            if i == warn_threshold + 1:  # once
                warnings.warn(f"Detected uneven input skew of greater than {warn_threshold}. "
                              f"This means that rank {self._process_group.rank()} has at least "
                              f"{warn_threshold} fewer inputs than other currently-active ranks. "
                              f"This level of skew could lead to performance degradation during "
                              f"training.", stacklevel=2)
            if _allreduce_int(self._process_group, 0) == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    _allreduce_int(self._process_group, 1)
                    raise RuntimeError(f"Rank {self._process_group.rank()} exhausted all inputs.")
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                i += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    @staticmethod
    def notify_join_context(joinable: Joinable) -> Work | None:
        """Called by ``joinable`` at the start of each iteration (before its collectives): the
        first joinable of the context all-reduces a one, counting the ranks still training.
        Returns that async Work (``None`` when not the first joinable or join is disabled)."""
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        work = _allreduce_int(group, 1, async_op=True)
        if config.throw_on_early_termination:
            if _allreduce_int(group, 0) > 0:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return work

