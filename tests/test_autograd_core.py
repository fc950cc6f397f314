"""The autograd core's internals: its one no-grad context, its one device-mismatch error, and who
owns a gradient's memory (``leaf.grad`` adopts the engine's fresh gradient without a copy, and never
memory anything else can still see)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd.grad_mode import _no_grad


# ------------------------------------------------------------------- no-grad context
def test_internal_no_grad_restores_the_mode_also_on_errors(device):
    x = pg.ones(2, device=device, requires_grad=True)
    with _no_grad():
        assert not pg.is_grad_enabled()
        assert (x * 2).grad_fn is None
        with _no_grad():
            pass
        assert not pg.is_grad_enabled()  # nested: the outer mode stays
    assert pg.is_grad_enabled()
    with pytest.raises(ValueError):
        with _no_grad():
            raise ValueError
    assert pg.is_grad_enabled()
    with pg.no_grad():
        with _no_grad():
            pass
        assert not pg.is_grad_enabled()  # restores what it found, not True
    assert (x * 2).grad_fn is not None


def test_internal_no_grad_is_thread_local():
    seen = []
    with _no_grad():
        t = threading.Thread(target=lambda: seen.append(pg.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ------------------------------------------------------------------ device mismatch
def test_one_device_mismatch_error_with_pytorchs_text():
    from portagrad.errors import DeviceMismatchError, raise_device_mismatch

    with pytest.raises(DeviceMismatchError) as info:
        raise_device_mismatch(pg.device("opencl:0"), pg.device("cpu"), "linear")
    assert str(info.value) == ("Expected all tensors to be on the same device, but found at least "
                               "two devices, opencl:0 and cpu! (when checking arguments for linear)")
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(DeviceMismatchError, match=r"devices, cpu and opencl:1!$"):
        raise_device_mismatch("cpu", "opencl:1")


def test_check_same_device_uses_it(monkeypatch):
    from portagrad import errors
    from portagrad._ops._common import check_same_device

    calls = []
    monkeypatch.setattr(errors, "raise_device_mismatch", lambda *a: calls.append(a))
    a = pg.ones(1)
    fake = pg.ones(1)
    fake._storage = type("S", (), {"device": pg.device("opencl:0")})()
    check_same_device(a, a, "add")
    assert calls == []
    check_same_device(a, fake, "add")
    assert calls == [(pg.device("cpu"), pg.device("opencl:0"), "add")]
