"""The device-generic ``pg.Stream`` and ``pg.Event`` (``torch.Stream``, ``torch.Event``).

Host devices (``cpu``, ``meta``) have no queue: as in PyTorch, a stream there is always idle
(``query()`` is ``True``, ``synchronize()`` returns at once), waiting on an event does nothing,
and recording an event raises ``RuntimeError("cpu backend doesn't support events.")``.

An accelerator device (``opencl:N`` or a plugin's type) has one in-order queue, so every stream of
a device is that queue (``stream_id`` 0): ``synchronize()`` waits for the device, events are the
device module's events (:class:`~portagrad.accelerator._device_module.Event`, the backend's
optional event methods), and making a stream wait for an event or a stream of the same device
needs nothing (its later work already runs after it); across devices the host waits.
"""
from __future__ import annotations

import time
from typing import Any

from .. import _device
from ..plugins.manager import BackendUnavailableError
from ._device_module import DeviceModule
from ._device_module import Event as _QueueEvent
from ._select import accelerator_type, require

__all__ = ["Stream", "Event"]

#: PyTorch's ``DeviceType`` numbers (``Stream.device_type``).
_TYPE_IDS = {"cpu": 0, "cuda": 1, "mkldnn": 2, "opengl": 3, "opencl": 4, "ideep": 5, "hip": 6,
             "fpga": 7, "maia": 8, "xla": 9, "vulkan": 10, "metal": 11, "xpu": 12, "mps": 13,
             "meta": 14, "hpu": 15, "ve": 16, "lazy": 17, "ipu": 18, "mtia": 19,
             "privateuseone": 20}
#: How long :meth:`Stream.query` waits for its marker on a queue that may be idle (seconds).
_IDLE_WAIT_S = 1e-3
#: Device types without a queue: their streams and events have index -1 and no events.
_HOST_TYPES = ("cpu", "meta")


def _placed(device: Any, who: str) -> tuple[_device.device, int]:
    """``(device, index)`` of a stream or event made for ``device``: ``None`` is the current
    accelerator device (``cpu`` without one), an int an index of the accelerator."""
    if device is None:
        acc = accelerator_type()
        dev = _device.device("cpu") if acc is None else _device.device(acc)
    elif isinstance(device, int) and not isinstance(device, bool):
        dev = _device.device(require().device_type, device)
    elif isinstance(device, (str, _device.device)):
        dev = _device.as_device(device)
    else:
        raise TypeError(f"{who}(): argument 'device' (position 1) must be torch.device, not "
                        f"{type(device).__name__}")
    if dev.type in _HOST_TYPES:
        return _device.device(dev.type), -1
    try:
        concrete, _, index = _device.resolve(dev)
    except BackendUnavailableError:
        raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices") from None
    return concrete, index


def _no_events(device_type: str) -> RuntimeError:
    return RuntimeError(f"{device_type} backend doesn't support events.")


class Stream:
    """``torch.Stream``: an in-order queue of work on one device (see the module's docstring).

    Also a context manager (``with pg.Stream(dev):``), which changes nothing: a device has one
    queue."""

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        self.device, self.device_index = _placed(device, "Stream")
        self.stream_id = 0
        self._priority = priority  # (one queue per device: accepted, without effect)

    @property
    def device_type(self) -> int:
        """PyTorch's ``DeviceType`` number of the stream's device (``cpu``: 0)."""
        return _TYPE_IDS.get(self.device.type, _TYPE_IDS["privateuseone"])

    def _host(self) -> bool:
        return self.device.type in _HOST_TYPES

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        if self._host():
            return True
        # a marker enqueued now completes when the queue reaches it: at once on a busy queue's
        # terms, but even an idle queue takes some microseconds to run it (PoCL: 10-30), so a
        # query right after synchronize() would say False. A short wait for the marker tells an
        # idle queue from a busy one; a busy queue is reported after at most _IDLE_WAIT_S.
        ev = self.record_event()
        deadline = time.perf_counter() + _IDLE_WAIT_S
        while not ev.query():
            if time.perf_counter() > deadline:
                return False
        return True

    def synchronize(self) -> None:
        """Wait until all work queued on the stream has finished."""
        if not self._host():
            DeviceModule(self.device.type).synchronize(self.device_index)

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when ``None``) on the stream and return it."""
        if self._host():
            raise _no_events(self.device.type)
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make the stream's later work wait for ``event``."""
        if event is not None and not self._host() and event.device != self.device:
            event.synchronize()  # (the same device's queue is in order: nothing to do)

    def wait_stream(self, stream: Stream) -> None:
        """Make the stream's later work wait for the work queued on ``stream`` so far."""
        if not isinstance(stream, Stream):
            raise _no_events(self.device.type)
        self.wait_event(stream.record_event())

    def is_capturing(self) -> bool:
        """Whether a graph capture is recording the stream (never)."""
        return False

    @property
    def native_handle(self) -> Any:
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Stream) and other.device == self.device
                and other.stream_id == self.stream_id)

    def __hash__(self) -> int:
        return hash((self.device.type, self.device_index, self.stream_id))

    def __repr__(self) -> str:
        return (f"portagrad.Stream device_type={self.device.type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event:
    """``torch.Event``: a marker in a device's queue, for synchronisation and timing (see the
    module's docstring). ``blocking`` and ``interprocess`` are accepted and ignored, as in
    PyTorch."""

    def __init__(self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.device, self.device_index = _placed(device, "Event")
        self._timing = bool(enable_timing)
        self._recorded = False
        self._ev: _QueueEvent | None = None
        if self.device.type not in _HOST_TYPES:
            self._ev = _QueueEvent(DeviceModule(self.device.type), self._timing)

    @property
    def event_id(self) -> int:
        return 0

    def record(self, stream: Stream | None = None) -> None:
        """Enqueue the marker on ``stream`` (default: the event's device's queue)."""
        if stream is not None and stream.device != self.device:
            raise RuntimeError(f"Event device {self.device} does not match recording stream's "
                               f"device {stream.device}.")
        if self._ev is None:
            raise _no_events(self.device.type)
        module = DeviceModule(self.device.type)
        with module.device(self.device_index):  # (the module's event records on the current one)
            self._ev.record()
        self._recorded = True

    def query(self) -> bool:
        """Whether all work before the marker has finished (``True`` if never recorded)."""
        return self._ev is None or self._ev.query()

    def synchronize(self) -> None:
        """Wait for the marker (returns at once if it was never recorded)."""
        if self._ev is not None:
            self._ev.synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream``'s later work wait for the marker (another device's: the host waits)."""
        if stream is not None and stream.device != self.device:
            self.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this marker to ``end_event``'s (both recorded, with timing)."""
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        assert self._ev is not None and end_event._ev is not None  # (recorded: a device queue)
        return self._ev.elapsed_time(end_event._ev)

    def ipc_handle(self) -> Any:
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if "
                                  "you need this!")

    @classmethod
    def from_ipc_handle(cls, device: Any, ipc_handle: Any) -> Event:
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if "
                                  "you need this!")

    def __repr__(self) -> str:
        return (f"portagrad.Event device_type={self.device.type}, "
                f"device_index={self.device_index}, event_flag={int(self._timing)}, "
                f"event_id={self.event_id}")
