"""The core's cheap paths keep the semantics of the general ones: fresh results built without
``__init__``, saved tensors and gradients freed as soon as backward no longer needs them."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import portagrad as pg
from portagrad import _raw
from portagrad._tensor import Tensor


def _slots(t: Tensor) -> dict:
    return {s: getattr(t, s) for s in Tensor.__slots__ if s not in ("__weakref__", "__dict__")}


# ----------------------------------------------------------------- fresh results
def test_new_on_sets_every_slot_as_make_does(device):
    x = pg.ones(3, device=device)
    fresh = _raw.new_on(x._storage, (2, 3), pg.float32)
    made = Tensor._make(fresh._storage, 0, (2, 3), (3, 1), pg.float32)
    a, b = _slots(fresh), _slots(made)  # every slot is set (getattr raises otherwise)
    for name in ("_storage", "_v", "_vc"):
        a.pop(name), b.pop(name)
    assert a == b
    assert fresh._vc == [0] and fresh._vc is not made._vc
    assert fresh._v.shape == (2, 3) and fresh._v.strides == (3, 1) and fresh._v.offset == 0
    st = fresh._storage
    assert st.nbytes == 24 and st.device == x.device and not st.pinned and not st.shared


def test_new_on_stamps_the_allocation_epoch(device):
    x = pg.ones(2, device=device)
    epoch, prev = _raw.open_epoch()
    try:
        t = _raw.new_on(x._storage, (2,), pg.float32)
        assert _raw.owned(t, epoch)
    finally:
        _raw.close_epoch(prev)
    assert not _raw.owned(_raw.new_on(x._storage, (2,), pg.float32), epoch)


def test_new_on_under_inference_mode_makes_inference_tensors(device):
    x = pg.ones(2, device=device)
    with pg.inference_mode():
        y = x + x
    assert y.is_inference() and not (x + x).is_inference()
