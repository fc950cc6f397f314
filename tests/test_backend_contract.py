"""The backend contract as the built-in backends honour it: typed errors for unknown ops."""
from __future__ import annotations

import pytest

import portagrad as pg
from portagrad.errors import UnsupportedOpError


def _backend_and_view(device: str):  # type: ignore[no-untyped-def]
    x = pg.ones(3, device=device)
    return x._storage.backend, x._v


@pytest.mark.parametrize("kind", ["unary", "binary", "binary_scalar", "binary_two_scalars"])
def test_unknown_op_is_a_typed_error(device: str, kind: str) -> None:
    be, v = _backend_and_view(device)
    calls = {
        "unary": lambda: be.unary("no_such_op", v, v),
        "binary": lambda: be.binary("no_such_op", v, v, v),
        "binary_scalar": lambda: be.binary("no_such_op", v, 2.0, v),
        "binary_two_scalars": lambda: be.binary("no_such_op", 1.0, 2.0, v),
    }
    op_kind = "unary" if kind == "unary" else "binary"
    with pytest.raises(UnsupportedOpError, match=rf"{op_kind} op 'no_such_op' is not implemented "
                                                 rf"by the '{be.device_type}' backend") as info:
        calls[kind]()
        be.synchronize(0)
    assert isinstance(info.value, NotImplementedError)
    assert info.value.op == "no_such_op" and info.value.backend == be.device_type
    assert "known" in str(info.value) and ("exp" if kind == "unary" else "add") in str(info.value)
    # the backend still works afterwards
    assert (pg.ones(3, device=device) + 1).tolist() == [2.0, 2.0, 2.0]


def test_event_without_backend_support_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from portagrad._accel import DeviceModule
    from portagrad.backends.interface import EVENT_METHODS, OPTIONAL_METHODS
    from portagrad.backends.numpy import NumpyBackend

    assert set(EVENT_METHODS) <= set(OPTIONAL_METHODS)

    class NoEvents(NumpyBackend):
        device_type = "noevents"

    class SomeEvents(NumpyBackend):
        device_type = "someevents"

        def record_event(self, index: int) -> object:
            return object()

    for backend, missing in ((NoEvents(), ", ".join(EVENT_METHODS)),
                             (SomeEvents(), "event_wait, event_query, event_elapsed_ms")):
        module = DeviceModule(backend.device_type)
        monkeypatch.setattr(module, "_backend", lambda b=backend: b)
        monkeypatch.setattr(module, "_index", lambda d: 0)
        ev = module.Event()  # type: ignore[attr-defined]
        with pytest.raises(UnsupportedOpError, match=rf"'{backend.device_type}' backend does not "
                                                     rf"support events.*\(missing: {missing}\)"):
            ev.record()
        assert ev.query()  # never recorded: nothing to wait for


def test_event_on_a_backend_with_events(device: str) -> None:
    if device == "cpu":
        pytest.skip("the cpu backend has no events (as torch.cpu has no Event timing)")
    mod = getattr(pg, device.split(":")[0])
    start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
    start.record()
    (pg.ones(64, 64, device=device) @ pg.ones(64, 64, device=device)).sum().item()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
