"""Checks of copies between two devices of one backend, shared by the kit's ``test_contract`` and
by backend-specific tests."""
from __future__ import annotations

from typing import Any

import numpy as np

import portagrad as pg

from ._util import SENTINEL, Twin, contiguous, empty, sample

__all__ = ["check_copy_between", "check_to_another_device"]


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

