"""``portagrad._raw``: the core's one door to the backend primitives (raw views, in-place writes and
their version bumps, bare-View scratch work)."""
from __future__ import annotations

import numpy as np

import portagrad as pg
from portagrad import _raw
from portagrad.backends.interface import View


def _arange(n: int, device: str, shape: tuple = ()) -> pg.Tensor:
    t = pg.arange(n, dtype=pg.float32, device=device)
    return t.reshape(shape) if shape else t


# ------------------------------------------------------------------------- views
def test_view_shares_storage_and_version_without_autograd(device):
    x = _arange(12, device)
    v = _raw.view(x, (3, 4), (4, 1))
    assert v._storage is x._storage and v._vc is x._vc
    assert v._base is None and v.grad_fn is None and not v.requires_grad
    assert v.tolist() == np.arange(12, dtype=np.float32).reshape(3, 4).tolist()
    w = _raw.view(x, (2,), (3,), offset=1)  # elements 1 and 4
    assert w.tolist() == [1.0, 4.0]
    _raw.fill(w, -1.0)
    assert x.tolist()[:5] == [0.0, -1.0, 2.0, 3.0, -1.0]


def test_view_of_a_tensor_that_requires_grad_records_nothing(device):
    x = _arange(6, device).requires_grad_()
    v = _raw.view(x, (2, 3), (3, 1))
    assert not v.requires_grad and v.grad_fn is None


def test_expand_view_broadcasts_with_zero_strides(device):
    col = _arange(3, device, (3, 1))
    e = _raw.expand_view(col, (2, 3, 4))
    assert e._v.strides == (0, 1, 0) and e._storage is col._storage and e._vc is col._vc
    assert e.tolist() == np.broadcast_to(np.arange(3.0).reshape(3, 1), (2, 3, 4)).tolist()


def test_bare_view_and_bare_expand_make_views_only(device):
    x = _arange(6, device, (2, 3))
    b = _raw.bare_view(x._v, (3,), (1,), offset=3)
    assert type(b) is View and b.buffer is x._v.buffer and b.offset == 3 and b.dtype is pg.float32
    e = _raw.bare_expand(x._v, (4, 2, 3))
    assert type(e) is View and e.strides == (0, 3, 1) and e.offset == x._v.offset
    row = _raw.view(x, (1, 3), (3, 1), offset=3)
    assert _raw.bare_expand(row._v, (2, 3)).strides == (0, 1)
    # a primitive writes through them: row 1 of x doubled
    out = _raw.new_like(x)
    _raw.binary("mul", x, _raw.bare_expand(row._v, (2, 3)), pg.float32, out=out)
    assert out.tolist() == [[0.0, 4.0, 10.0], [9.0, 16.0, 25.0]]


def test_min_max_of_zero_dim_and_strided(device):
    assert _raw.min_max(pg.tensor(3.5, device=device)) == (3.5, 3.5)
    x = pg.tensor([[4, -2, 9], [0, 7, 1]], device=device)
    assert _raw.min_max(x.t()) == (-2, 9)
