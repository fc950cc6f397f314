"""The per-device-type module API (``pg.opencl``, and the same for any plugin's device type).

``pg.opencl.is_available()``, ``device_count()``, ``current_device()``, ``set_device()``,
``device(i)`` (context manager), memory statistics, ``empty_cache()`` and ``synchronize()``, as
``torch.cuda`` offers them. Nothing here imports the backend until a function is called.
"""
from __future__ import annotations

from typing import Any

from .. import _device, _random
from ..backends.interface import EVENT_METHODS
from ..errors import UnsupportedOpError
from ..plugins.manager import get_backend

__all__ = ["DeviceModule", "Event"]


class _DeviceContext:
    """``with pg.opencl.device(1):`` selects the current device and the default for factories."""

    def __init__(self, module: DeviceModule, index: Any) -> None:
        self.module = module
        self.dev = module._as_device(index)

    def __enter__(self) -> Any:
        self.prev = _device.current_index(self.dev.type)
        assert self.dev.index is not None  # _as_device always gives a concrete index
        _device.set_current_index(self.dev.type, self.dev.index)
        self.dev.__enter__()
        return self.dev

    def __exit__(self, *exc: object) -> None:
        self.dev.__exit__(*exc)
        _device.set_current_index(self.dev.type, self.prev)


class DeviceModule:
    """Functions for one device type (``torch.cuda``'s API for ``opencl`` or a plugin's type)."""

    #: ``pg.cpu.amp`` (PyTorch's deprecated ``torch.cpu.amp``), set by the package for ``cpu``
    amp: Any

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type

    def _backend(self) -> Any:
        return get_backend(self.device_type)

    def _as_device(self, d: Any) -> _device.device:
        if d is None:
            return _device.device(self.device_type, self.current_device())
        if isinstance(d, int):
            return _device.device(self.device_type, d)
        dev = _device.as_device(d)
        if dev.type != self.device_type:
            raise ValueError(f"expected a {self.device_type} device, got {dev}")
        return _device.resolve(dev)[0]

    def _index(self, d: Any) -> int:
        dev = self._as_device(d)
        return _device.resolve(dev)[2]

    def is_available(self) -> bool:
        """Whether the backend loads and has at least one device (never raises)."""
        try:
            return self._backend().device_count() > 0
        except Exception:
            return False

    def device_count(self) -> int:
        """Number of visible devices (0 when the backend is unavailable)."""
        try:
            return self._backend().device_count()
        except Exception:
            return 0

    def current_device(self) -> int:
        return _device.current_index(self.device_type)

    def set_device(self, d: Any) -> None:
        """Select the current device (used for ``"opencl"`` without an index)."""
        dev = _device.device(self.device_type, d) if isinstance(d, int) else _device.as_device(d)
        _device.resolve(_device.device(self.device_type, dev.index or 0))
        _device.set_current_index(self.device_type, dev.index or 0)

    def device(self, d: Any) -> _DeviceContext:
        return _DeviceContext(self, d)

    def get_device_name(self, d: Any = None) -> str:
        return self.get_device_properties(d).name

    def get_device_properties(self, d: Any = None) -> Any:
        return self._backend().get_device_properties(self._index(d))

    def synchronize(self, d: Any = None) -> None:
        """Wait for all queued work on the device."""
        self._backend().synchronize(self._index(d))

    def empty_cache(self) -> None:
        """Release cached, unused device memory (all devices of this type)."""
        backend = self._backend()
        for i in range(backend.device_count()):
            backend.empty_cache(i)

    def memory_allocated(self, d: Any = None) -> int:
        return self._backend().memory_stats(self._index(d))["allocated"]

    def max_memory_allocated(self, d: Any = None) -> int:
        return self._backend().memory_stats(self._index(d))["peak_allocated"]

    def memory_reserved(self, d: Any = None) -> int:
        return self._backend().memory_stats(self._index(d))["reserved"]

    def memory_stats(self, d: Any = None) -> dict:
        return dict(self._backend().memory_stats(self._index(d)))

    def reset_peak_memory_stats(self, d: Any = None) -> None:
        self._backend().reset_peak_memory_stats(self._index(d))

    def set_per_process_memory_fraction(self, fraction: float, device: Any = None) -> None:
        """Let this process allocate at most ``fraction`` (0 to 1) of the device's memory;
        past it allocations raise :class:`portagrad.OutOfMemoryError`
        (``torch.cuda.set_per_process_memory_fraction``). A backend without a cap (its
        ``set_memory_fraction``) raises ``NotImplementedError``."""
        if not isinstance(fraction, (int, float)) or isinstance(fraction, bool):
            raise TypeError(f"Invalid type for fraction argument, must be `float`, got "
                            f"{type(fraction).__name__}")
        if not 0 <= fraction <= 1:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        backend = self._backend()
        cap = getattr(backend, "set_memory_fraction", None)
        if cap is None:
            raise NotImplementedError(f"set_per_process_memory_fraction: the "
                                      f"{self.device_type!r} backend has no memory cap")
        cap(self._index(device), float(fraction))

    def manual_seed(self, seed: int) -> None:
        _random.manual_seed(seed)

    def __repr__(self) -> str:
        return f"<portagrad device module {self.device_type!r}>"


class Event:
    """A marker in a device's queue, for synchronisation and timing (``torch.cuda.Event``).

    Needs the backend's optional ``record_event(index)``, ``event_wait(ev)``,
    ``event_query(ev)`` and ``event_elapsed_ms(start, end)``
    (:data:`portagrad.backends.interface.EVENT_METHODS`); :meth:`record` raises
    :class:`portagrad.errors.UnsupportedOpError` (a ``NotImplementedError``) naming the missing
    ones when the backend lacks any."""

    def __init__(self, module: DeviceModule, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self._module = module
        self.enable_timing = enable_timing
        self._ev: Any = None
        self._index: int | None = None

    def record(self, stream: Any = None) -> None:
        """Enqueue the marker on the current device's queue."""
        backend = self._module._backend()
        missing = [m for m in EVENT_METHODS if getattr(backend, m, None) is None]
        if missing:
            raise UnsupportedOpError(
                "Event", self._module.device_type,
                f"the {self._module.device_type!r} backend does not support events: "
                f"pg.{self._module.device_type}.Event needs the backend methods "
                f"{', '.join(EVENT_METHODS)} (missing: {', '.join(missing)})")
        self._index = self._module._index(None)
        self._ev = backend.record_event(self._index)

    def query(self) -> bool:
        """Whether all work before the marker has finished."""
        return self._ev is None or self._module._backend().event_query(self._ev)

    def synchronize(self) -> None:
        """Wait for the marker."""
        if self._ev is not None:
            self._module._backend().event_wait(self._ev)

    def wait(self, stream: Any = None) -> None:
        self.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this marker and ``end_event`` (both recorded, timing enabled)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._ev is None or end_event._ev is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        end_event.synchronize()
        return float(self._module._backend().event_elapsed_ms(self._ev, end_event._ev))


def _event_factory(self: DeviceModule, enable_timing: bool = False, blocking: bool = False,
                   interprocess: bool = False) -> Event:
    return Event(self, enable_timing, blocking, interprocess)


DeviceModule.Event = _event_factory  # type: ignore[attr-defined]
