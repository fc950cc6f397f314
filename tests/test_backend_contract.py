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


@pytest.mark.parametrize("kind", ["reduce", "arg_reduce", "random"])
def test_unknown_reduction_or_distribution_is_a_typed_error(device: str, kind: str) -> None:
    # before: numpy's arg_reduce ran argmin and its random drew normals for any unknown name
    be, v = _backend_and_view(device)
    out = pg.empty(1, device=device)._v
    idx = pg.empty(1, dtype=pg.int64, device=device)._v
    calls = {
        "reduce": lambda: be.reduce("mean", v, (0,), out),
        "arg_reduce": lambda: be.arg_reduce("argmean", v, 0, idx),
        "random": lambda: be.random("gamma", v, 0, 0, 0.0, 1.0),
    }
    with pytest.raises(UnsupportedOpError, match=rf"{kind} op '\w+' is not implemented by the "
                                                 rf"'{be.device_type}' backend") as info:
        calls[kind]()
    known = {"reduce": "sum", "arg_reduce": "argmax", "random": "uniform"}[kind]
    assert known in str(info.value)
    assert pg.ones(3, device=device).sum().item() == 3.0  # the backend still works


def test_event_without_backend_support_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from portagrad.accelerator._device_module import DeviceModule
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
    from portagrad.backends.interface import EVENT_METHODS

    if device == "cpu":
        pytest.skip("the cpu backend has no events (as torch.cpu has no Event timing)")
    if not all(hasattr(pg.empty(0, device=device)._storage.backend, m) for m in EVENT_METHODS):
        pytest.skip(f"the {device} backend has no events (they are optional)")
    mod = getattr(pg, device.split(":")[0])
    start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
    start.record()
    (pg.ones(64, 64, device=device) @ pg.ones(64, 64, device=device)).sum().item()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0


def test_backend_softmax_is_used_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """``softmax`` is an optional primitive the core calls (nn.functional.softmax): a backend
    defining it gets contiguous ``x``/``out`` of one floating dtype and an axis in range."""
    import numpy as np

    from portagrad.backends.numpy import NumpyBackend

    x = pg.tensor([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    want = pg.softmax(x, 1).numpy().copy()  # composed by the core (numpy has no softmax)
    want_log = pg.log_softmax(x, 0).numpy().copy()
    calls = []

    def softmax(self, xv, axis, out, log):  # type: ignore[no-untyped-def]
        calls.append((xv.is_contiguous(), out.is_contiguous(), xv.shape, axis, log))
        a = self.to_host(xv).astype(np.float64)
        z = a - a.max(axis, keepdims=True)
        s = np.log(np.exp(z).sum(axis, keepdims=True))
        r = z - s if log else np.exp(z - s)
        self.from_host(out, r.astype(xv.dtype.numpy))

    monkeypatch.setattr(NumpyBackend, "softmax", softmax, raising=False)
    np.testing.assert_allclose(pg.softmax(x, 1).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(pg.log_softmax(x.t().contiguous().t(), 0).numpy(), want_log,
                               rtol=1e-6)
    assert calls == [(True, True, (2, 3), 1, False), (True, True, (2, 3), 0, True)]


def test_helpers_are_public_and_match_the_old_paths() -> None:
    import numpy as np

    from portagrad.backends import _visible, helpers, philox

    assert helpers.visible_indices is _visible.visible_indices
    assert helpers.philox_uniform is philox.uniform and helpers.philox_normal is philox.normal
    assert set(helpers.__all__) <= set(dir(helpers))
    assert helpers.DTYPES["float32"] is pg.float32 and helpers.DTYPES["bool"] is pg.bool
    assert helpers.NUMPY_DTYPES["int64"] == np.int64
    assert pg.bfloat16 in helpers.FLOATING_DTYPES and pg.bool not in helpers.INTEGER_DTYPES
    assert helpers.INTEGER_DTYPES == {pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64}
    assert helpers.from_numpy_dtype(np.dtype(np.float64)) is pg.float64
    assert helpers.contiguous_strides((2, 3, 4)) == (12, 4, 1)
    # the reference stream by the contract's rule (float32 uniform, seed 42, slots 17..19: words
    # 1, 2 and 3 of block 4)
    u = helpers.philox_uniform(3, 42, 17, 0.0, 1.0, np.float32)
    assert u.dtype == np.float32 and ((u >= 0) & (u < 1)).all()
    r = np.array([w[0] for w in helpers.philox4x32(np.array([4], dtype=np.uint64), 42)[1:]])
    np.testing.assert_array_equal(u, (r >> 8).astype(np.float32) * np.float32(2.0 ** -24))
    np.testing.assert_array_equal(helpers.philox_words(3, 42, 17), r)
    assert helpers.philox_slots("normal", np.float64) == 4


def test_visible_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    from portagrad.backends.helpers import visible_indices

    monkeypatch.delenv("PORTAGRAD_VISIBLE_DEVICES", raising=False)
    assert visible_indices("mydev", 3) == [0, 1, 2]
    monkeypatch.setenv("PORTAGRAD_VISIBLE_DEVICES", "2,0,9")
    assert visible_indices("mydev", 3) == [2, 0]
    monkeypatch.setenv("PORTAGRAD_VISIBLE_DEVICES", "mydev:1,opencl:0")
    assert visible_indices("mydev", 3) == [1] and visible_indices("other", 2) == [0, 1]


@pytest.mark.parametrize("op,a,b,dtype,want", [
    ("eq", 3, -2, "bool", False), ("lt", 3, 200, "bool", True), ("gt", 2.5, -1.0, "bool", True),
    ("add", 3, 200, "uint8", 203), ("sub", 3, 200, "uint8", 59), ("maximum", 3, 200, "uint8", 200)])
def test_binary_of_two_scalars(device: str, op: str, a: object, b: object, dtype: str,
                               want: object) -> None:
    # both operands scalars (computed on the host, then filled): comparisons compare the values,
    # not their truth values; narrow integer results wrap into the output dtype
    be = pg.ones(1, device=device)._storage.backend
    out = pg.empty(3, dtype=getattr(pg, dtype), device=device)
    be.binary(op, a, b, out._v)
    assert out.tolist() == [want] * 3


def test_zero_dim_bfloat16_into_bool(device: str) -> None:
    try:
        x = pg.tensor(1.5, dtype=pg.bfloat16, device=device)
    except pg.errors.DTypeError as exc:  # a backend may lack bfloat16 (array-api-strict)
        pytest.skip(str(exc))
    if x.dtype is not pg.bfloat16:
        pytest.skip("no bfloat16")
    assert x.isnan().item() is False and x.logical_not().item() is False
    assert (x > x).item() is False


def test_float16_sums_accumulate_in_float32(device: str) -> None:
    """float16 sums and prefix sums accumulate in float32 and round once, as PyTorch's: a float16
    accumulator stalls at 2048 when adding ones."""
    try:
        x = pg.ones(4100, dtype=pg.float16, device=device)
    except (pg.errors.DTypeError, pg.errors.UnsupportedOpError) as exc:
        pytest.skip(str(exc))
    assert x.sum().item() == 4100.0
    assert x.cumsum(0)[-1].item() == 4100.0
