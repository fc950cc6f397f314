"""Checks of a backend's devices: copies between two devices of one backend, and
``PORTAGRAD_VISIBLE_DEVICES``; shared by the kit's ``test_contract`` and by backend-specific
tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

import portagrad as pg

from ._util import SENTINEL, Twin, contiguous, empty, sample

__all__ = ["check_copy_between", "check_to_another_device", "visible_devices",
           "check_visible_devices"]


def check_copy_between(be: Any, dtype: Any, src_index: int, dst_index: int) -> None:
    """``copy_between`` from device ``src_index`` to ``dst_index`` lands intact, from a source and
    into a destination at offsets in their buffers (a contiguous slice, ``x[5:].to(...)``), the
    elements around the destination untouched, and the copy is usable by the primitives of its
    device."""
    n = 1037
    a = sample(dtype, (n,))
    src = contiguous(be, a, dtype, offset=5, device=src_index)
    fill = np.full(n + 7, SENTINEL[dtype.name], dtype.numpy)
    whole = Twin(be, fill, dtype, dst_index)
    dst = whole.view(3, (n,), (1,))
    be.copy_between(dst.dev, src.dev)
    be.synchronize(dst_index)
    want = fill.copy()
    want[3:3 + n] = a
    got = be.to_host(whole.whole().dev)
    assert got[3:3 + n].tobytes() == a.tobytes(), (
        f"copy_between {dtype.name} device {src_index} -> {dst_index} (source at offset 5, "
        f"destination at offset 3) changed the values")
    assert got.tobytes() == want.tobytes(), (
        f"copy_between {dtype.name} device {src_index} -> {dst_index} wrote outside the "
        f"destination view")
    out = empty(be, (n,), dtype, device=dst_index)
    be.copy(dst.dev, out.dev)
    assert be.to_host(out.dev).tobytes() == a.tobytes(), (
        f"copy on device {dst_index} of what copy_between wrote differs")


def check_to_another_device(device_type: str) -> None:
    """``Tensor.to("<type>:1")`` of a strided view and back, with arithmetic on device 1."""
    x = pg.arange(3000, dtype=pg.float32, device=f"{device_type}:0").reshape(30, 100)[:, 7:57]
    y = x.to(f"{device_type}:1")
    assert y.device == pg.device(f"{device_type}:1")
    want = np.arange(3000, dtype=np.float32).reshape(30, 100)[:, 7:57]
    np.testing.assert_array_equal(y.cpu().numpy(), want, err_msg=".to(':1') changed the values")
    z = (y * 2.0 + 1.0).to(f"{device_type}:0")
    np.testing.assert_array_equal(z.cpu().numpy(), want * 2 + 1)
    np.testing.assert_array_equal(y.to(f"{device_type}:0").cpu().numpy(), want)
    i = pg.arange(10, device=f"{device_type}:1").to(f"{device_type}:0")
    assert i.tolist() == list(range(10))
    tail = pg.arange(100, device=f"{device_type}:0")[37:]  # contiguous, at an offset
    assert tail.to(f"{device_type}:1").tolist() == list(range(37, 100))


# One fresh process reports the devices a fresh backend sees under each setting of
# PORTAGRAD_VISIBLE_DEVICES: a child forked per setting after the costly imports (or, without
# fork, a fresh backend object per setting in the process itself).
_VISIBLE_DRIVER = r"""
import json, os, sys

kind, ref, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import portagrad  # noqa: F401  (numpy, ml_dtypes: imported once, before forking)


def devices(value):
    got = {}
    try:
        if value is None:
            os.environ.pop("PORTAGRAD_VISIBLE_DEVICES", None)
        else:
            os.environ["PORTAGRAD_VISIBLE_DEVICES"] = value
        if kind == "object":
            from portagrad.testing.plugin import load_object
            be = load_object(ref)
        else:
            from portagrad.plugins.manager import get_backend, reset
            reset()
            be = get_backend(ref)
        got["count"] = n = be.device_count()
        got["names"] = [be.get_device_properties(i).name for i in range(n)]
    except Exception as exc:
        got["error"] = f"{type(exc).__name__}: {exc}"
    return got


results = {}
if hasattr(os, "fork"):
    children = []
    for value in settings:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                os.write(w, json.dumps(devices(value)).encode())
            finally:
                os._exit(0)
        os.close(w)
        children.append((value, pid, r))
    for value, pid, r in children:
        with os.fdopen(r, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        results[json.dumps(value)] = json.loads(data) if data else {"error": "the child died"}
else:
    for value in settings:
        results[json.dumps(value)] = devices(value)
print(json.dumps(results))
"""


def visible_devices(kind: str, ref: str, settings: list[str | None]) -> dict[str | None, dict]:
    """For each value of ``PORTAGRAD_VISIBLE_DEVICES`` in ``settings`` (``None``: unset), what a
    backend built afresh in another process reports: ``{"count": n, "names": [...]}`` or
    ``{"error": text}``. ``kind``/``ref``: ``"object"`` and ``module:attr`` (as
    ``--portagrad-backend-object``), or ``"type"`` and a device type (through the plugins)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
    # a hang detector: the child processes take a few seconds
    r = subprocess.run([sys.executable, "-c", _VISIBLE_DRIVER, kind, ref, json.dumps(settings)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"the device probe failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
    got = json.loads(r.stdout.strip().splitlines()[-1])
    return {value: got[json.dumps(value)] for value in settings}


def check_visible_devices(kind: str, ref: str, device_type: str) -> None:
    """The backend applies ``PORTAGRAD_VISIBLE_DEVICES`` itself (the core never does): naming
    only out-of-range devices of its type hides every device, and bare indices ``1,0`` pick and
    reorder its devices (logical index ``i`` is the ``i``-th listed physical device)."""
    hide_all = f"{device_type}:1000"
    reorder = "1,0"
    res = visible_devices(kind, ref, [None, hide_all, reorder])
    assert "error" not in res[None], f"the backend failed in a fresh process: {res[None]['error']}"
    n, names = res[None]["count"], res[None]["names"]
    assert n >= 1, f"the backend reports no devices: {res[None]}"
    got = res[hide_all]
    assert got.get("count") in (0, None), (
        f"PORTAGRAD_VISIBLE_DEVICES={hide_all!r} names no existing {device_type} device, so none "
        f"is visible, but device_count() is {got['count']} (of {n}): the backend ignores the "
        f"variable (see portagrad.backends.helpers.visible_indices)")
    got = res[reorder]
    want = [names[1], names[0]] if n >= 2 else names[:1]
    assert got.get("count") in (len(want), None), (
        f"PORTAGRAD_VISIBLE_DEVICES={reorder!r} with {n} physical device(s): device_count() is "
        f"{got['count']}, expected {len(want)}")
    for value in (hide_all, reorder):
        assert "error" not in res[value], (
            f"with PORTAGRAD_VISIBLE_DEVICES={value!r} the backend failed: {res[value]['error']}")
    if len(set(names)) == len(names):  # devices told apart by name: the order is checked too
        assert got["names"] == want, (
            f"PORTAGRAD_VISIBLE_DEVICES={reorder!r}: logical devices {got['names']}, expected "
            f"{want} (logical index i is the i-th listed physical device)")
