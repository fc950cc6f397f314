"""The profiler API of ``torch.profiler``: ``profile(activities=[ProfilerActivity.CPU, ...])``,
``schedule``, ``record_function``, ``tensorboard_trace_handler``.

It records with the same op recorder as :mod:`portagrad.autograd.profiler`. A non-CPU activity
(``ProfilerActivity.CUDA``, ``XPU``, ``MTIA``, ``PrivateUse1`` or ``OPENCL``) turns on device time
for the accelerator the ops run on (OpenCL events).
"""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd.profiler import EventList, FunctionEventAvg
from ..autograd.profiler import profile as _autograd_profile
from ..autograd.profiler import record_function

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler", "kineto_available"]

class ProfilerActivity(enum.Enum):
    """What to record: host ops (``CPU``) and/or accelerator time (any other member)."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5
    OPENCL = 6

def supported_activities() -> set[ProfilerActivity]:
    """The activities this build can record: the CPU, and the accelerator through events."""
    return {ProfilerActivity.CPU, ProfilerActivity.OPENCL}

class ProfilerAction(enum.Enum):
    """What the profiler does at a step (given by a ``schedule``)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3

def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The step -> action function of ``torch.profiler.schedule``: skip ``skip_first`` steps,
    then cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps, ``repeat`` times
    (0 = forever); the last active step of a cycle saves (calls ``on_trace_ready``)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError(f"step {step} must be non-negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    return schedule_fn

def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD

def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` callback that writes each trace as a Chrome trace file into
    ``dir_name`` (``<worker>.<time>.pt.trace.json``)."""
    if use_gzip:
        raise NotImplementedError("tensorboard_trace_handler(use_gzip=True) is not supported")

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns() // 1_000_000}.pt.trace.json")
        prof.export_chrome_trace(path)

    return handler

class profile:
    """``torch.profiler.profile``: record ops, as a context manager or with ``start``/``stop``,
    optionally over training steps driven by ``schedule`` and ``step()``."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Any = None) -> None:
        acts = set(activities) if activities is not None else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity members, got {a!r}")
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        self.activities = acts
        device = any(a is not ProfilerActivity.CPU for a in acts)
        self._use_device = "opencl" if device else None
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.schedule = schedule or _default_schedule_fn
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._session: _autograd_profile | None = None
        self._last: _autograd_profile | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Begin (recording now if the schedule's first action records)."""
        self._transition(ProfilerAction.NONE, self.current_action)

    def stop(self) -> None:
        """End; a recording in progress is finished and handed to ``on_trace_ready``."""
        if self._session is not None:
            self._finish(save=True)

    def step(self) -> None:
        """Mark the end of a training step: advance the schedule."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transition(prev, self.current_action)

    def _transition(self, prev: ProfilerAction, cur: ProfilerAction) -> None:
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev is ProfilerAction.RECORD_AND_SAVE and self._session is not None:
            self._finish(save=True)
        if cur in recording and self._session is None:
            self._session = _autograd_profile(use_device=self._use_device,
                                              record_shapes=self.record_shapes,
                                              profile_memory=self.profile_memory)
            self._session.__enter__()
        elif cur not in recording and self._session is not None:
            self._finish(save=False)

    def _finish(self, save: bool) -> None:
        sess = self._session
        assert sess is not None
        sess.__exit__(None, None, None)
        self._session = None
        self._last = sess
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ------------------------------------------------------------------ results
    @property
    def profiler(self) -> _autograd_profile | None:
        """The ``autograd.profiler.profile`` of the last recording."""
        return self._last

    def _done(self) -> _autograd_profile:
        if self._last is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._last

    def events(self) -> EventList:
        """Every call of the last recording, in start order."""
        return self._done().events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Calls of the last recording grouped by op name (and input shapes)."""
        return self._done().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the last recording as a Chrome trace JSON file."""
        self._done().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        raise NotImplementedError("export_stacks: portagrad's profiler records no stacks")

    def total_average(self) -> FunctionEventAvg:
        return self._done().total_average()

def kineto_available() -> bool:
    """Whether PyTorch's Kineto tracer is built in: no (portagrad records its own events)."""
    return False
