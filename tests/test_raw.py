"""``portagrad._raw``: the core's one door to the backend primitives (raw views, in-place writes and
their version bumps, bare-View scratch work)."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

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
    _raw.fill_(w, -1.0)
    assert x._version == 1 and v._version == 1  # one counter for every raw view
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


# ---------------------------------------------------------------------- in place
def _vals(device: str) -> tuple[pg.Tensor, pg.Tensor, pg.Tensor]:
    y = pg.tensor([1.0, -2.0, 3.0, 0.5], device=device)
    a = pg.tensor([2.0, 4.0, -1.0, 8.0], device=device)
    b = pg.tensor([0.5, 2.0, 4.0, -2.0], device=device)
    return y, a, b


@pytest.mark.parametrize("case", [
    ("binary_ add tensor", lambda y, a, b: _raw.binary_("add", y, a), lambda y, a, b: y + a),
    ("binary_ mul scalar", lambda y, a, b: _raw.binary_("mul", y, 0.25), lambda y, a, b: y * 0.25),
    ("binary_ bare view", lambda y, a, b: _raw.binary_("sub", y, a._v), lambda y, a, b: y - a),
    ("fill_", lambda y, a, b: _raw.fill_(y, 7.0), lambda y, a, b: np.full(4, 7.0)),
    ("copy_", lambda y, a, b: _raw.copy_(y, a), lambda y, a, b: a),
    ("axpy_ 1", lambda y, a, b: _raw.axpy_(y, 1, a), lambda y, a, b: y + a),
    ("axpy_ -1", lambda y, a, b: _raw.axpy_(y, -1, a), lambda y, a, b: y - a),
    ("axpy_ 0.3", lambda y, a, b: _raw.axpy_(y, 0.3, a), lambda y, a, b: y + np.float32(0.3) * a),
    ("lerp_ 0.1", lambda y, a, b: _raw.lerp_(y, a, 0.1),
     lambda y, a, b: y + (a - y) * np.float32(0.1)),
    ("lerp_ 0.9", lambda y, a, b: _raw.lerp_(y, a, 0.9),
     lambda y, a, b: a - (a - y) * np.float32(1 - 0.9)),
    ("addc_ mul 1", lambda y, a, b: _raw.addc_("mul", y, a, b, 1), lambda y, a, b: y + a * b),
    ("addc_ div -0.5", lambda y, a, b: _raw.addc_("div", y, a, b, -0.5),
     lambda y, a, b: y + (a * np.float32(-0.5)) / b),
], ids=lambda c: c[0])
def test_in_place_writes_bump_the_version_once(device, case):
    _, run, expect = case
    y, a, b = _vals(device)
    alias = y.detach()  # shares the version counter
    want = expect(*(t.numpy(force=True) for t in (y, a, b)))
    assert run(y, a, b) is y
    assert y._version == 1 and alias._version == 1
    assert a._version == 0 and b._version == 0
    np.testing.assert_allclose(y.numpy(force=True), np.asarray(want, np.float32), rtol=1e-6)


def test_writes_into_fresh_outputs_do_not_bump(device):
    y, a, _ = _vals(device)
    _raw.binary("add", y, a, pg.float32, out=y)
    _raw.copy_into(y, a)
    _raw.fill(y, 1.0)
    assert y._version == 0


def test_an_in_place_write_on_a_saved_tensor_is_caught(device):
    w = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    p = pg.tensor([3.0, 4.0], device=device)
    loss = (w * p).sum()  # saves p
    _raw.axpy_(p, 0.5, pg.ones(2, device=device))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_the_version_counter_has_one_writer():
    """``_raw.bump`` is the one place a version changes (``Tensor`` itself never bumps)."""
    root = pathlib.Path(pg.__file__).parent
    hits = [(str(f.relative_to(root)), line) for f in sorted(root.rglob("*.py"))
            for line in f.read_text().splitlines() if re.search(r"_vc\[0\]\s*\+=", line)]
    assert [h[0] for h in hits] == ["_raw.py"], hits


def test_binary_into_writes_without_bumping(device):
    y, _, _ = _vals(device)
    _raw.binary_into("mul", y, _raw.bare_expand(pg.tensor([2.0], device=device)._v, (4,)))
    assert y._version == 0 and y.tolist() == [2.0, -4.0, 6.0, 1.0]
    _raw.binary_into("add", y, 1.0)
    assert y.tolist() == [3.0, -3.0, 7.0, 2.0]


def test_binary_views_makes_a_new_tensor(device):
    a = _arange(6, device, (2, 3))
    row = pg.tensor([10.0, 20.0, 30.0], device=device)
    out = _raw.binary_views("add", a._storage, a._v, _raw.bare_expand(row._v, (2, 3)), (2, 3),
                            pg.float32)
    assert out._storage is not a._storage and out.device == a.device
    assert out.tolist() == [[10.0, 21.0, 32.0], [13.0, 24.0, 35.0]]


# ------------------------------------------------------------------------ scratch
def test_scratch_temporaries_are_bare_views_on_the_device(device):
    x = pg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], device=device)
    ws = _raw.Scratch(x)
    m = ws.new((2, 1), pg.float32)
    assert type(m) is View and m.shape == (2, 1) and m.strides == (1, 1) and m.offset == 0
    ws.reduce("max", x._v, (1,), m)
    d = ws.new((2, 3), pg.float32)
    ws.binary("sub", x._v, _raw.bare_view(m, (2, 3), (1, 0)), d)
    ws.unary("neg", d, d)
    out = _raw.new_like(x)
    ws.copy(d, out._v)
    assert out.tolist() == [[4.0, 0.0, 3.0], [0.0, 7.0, 4.0]]
    ws.fill(out._v, 2.5)
    assert out.tolist() == [[2.5] * 3] * 2
    flags = ws.new((2,), pg.bool)
    ws.binary("gt", _raw.bare_view(x._v, (2,), (3,)), 1.5, flags)  # column 0
    res = _raw.new_like(x, (2,), pg.bool)
    ws.copy(flags, res._v)
    assert res.tolist() == [False, True]


# ---------------------------------------------------------------- fast paths
def test_has_prims_reports_optional_primitives(device):
    x = pg.ones(2, device=device)
    be = x._storage.backend
    assert _raw.has_prims(x) is True
    assert _raw.has_prims(x, "unary", "binary") is True
    assert _raw.has_prims(x, "no_such_primitive") is False
    assert _raw.has_prims(x, "conv2d") == (getattr(be, "conv2d", None) is not None)


def test_optional_primitive_wrappers_match_the_composed_ops(device):
    import portagrad.nn.functional as F

    x = pg.randn(2, 3, 5, 5, generator=pg.Generator().manual_seed(0)).to(device)
    w = pg.randn(4, 3, 3, 3, generator=pg.Generator().manual_seed(1)).to(device)
    if _raw.has_prims(x, "conv2d", "conv2d_grad_input", "conv2d_grad_weight"):
        out = _raw.new_like(x, (2, 4, 3, 3))
        assert _raw.conv2d(x, w, out, (1, 1), (0, 0), (1, 1), 1) is out
        want = F.conv2d(x, w)
        np.testing.assert_allclose(out.numpy(force=True), want.numpy(force=True), rtol=1e-4,
                                   atol=1e-5)
        g = pg.ones(2, 4, 3, 3, device=device)
        gx = _raw.conv2d_grad_input(g, w, _raw.new_like(x), (1, 1), (0, 0), (1, 1), 1)
        gw = _raw.conv2d_grad_weight(x, g, _raw.new_like(w), (1, 1), (0, 0), (1, 1), 1)
        xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
        F.conv2d(xr, wr).sum().backward()
        np.testing.assert_allclose(gx.numpy(force=True), xr.grad.numpy(force=True), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(gw.numpy(force=True), wr.grad.numpy(force=True), rtol=1e-4,
                                   atol=1e-4)
    if _raw.has_prims(x, "max_pool2d", "max_pool2d_grad_input"):
        vals = _raw.new_like(x, (2, 3, 2, 2))
        idx = _raw.new_like(x, (2, 3, 2, 2), pg.int64)
        _raw.max_pool2d(x, vals, idx, (2, 2), (2, 2), (0, 0), (1, 1))
        want, want_idx = F.max_pool2d(x, 2, return_indices=True)
        assert vals.tolist() == want.tolist() and idx.tolist() == want_idx.tolist()
        gx = _raw.max_pool2d_grad_input(pg.ones(2, 3, 2, 2, device=device), idx, _raw.new_like(x),
                                        (2, 2), (2, 2), (0, 0), (1, 1))
        assert gx.sum().item() == 24.0 and set(np.unique(gx.numpy(force=True))) <= {0.0, 1.0}
    if _raw.has_prims(x, "softmax"):
        y = _raw.softmax(_raw.contiguous(x), 1, _raw.new_like(x), False)
        np.testing.assert_allclose(y.numpy(force=True), F.softmax(x, 1).numpy(force=True),
                                   rtol=1e-5, atol=1e-6)


def test_softmax_forwards_to_the_backend_primitive():
    # no built-in backend has the optional softmax: a stub stands in for one
    from types import SimpleNamespace

    calls = []
    be = SimpleNamespace(softmax=lambda *args: calls.append(args))
    x = SimpleNamespace(_storage=SimpleNamespace(backend=be), _v="xv")
    out = SimpleNamespace(_v="ov")
    assert _raw.softmax(x, 1, out, True) is out
    assert calls == [("xv", 1, "ov", True)]


# ---------------------------------------------------------------------- ownership
def test_allocation_epochs_stamp_new_on_storages(device):
    x = pg.ones(3, device=device)
    epoch, prev = _raw.open_epoch()
    try:
        assert epoch != prev
        t = _raw.new_like(x)
        assert _raw.owned(t, epoch) and not _raw.owned(t, prev)
        m = _raw.moved(t, (1, 3), (3, 1))  # a caller that drops t hands its stamp on
        assert _raw.owned(m, epoch) and m._storage is t._storage
        _raw.disown(m)
        assert not _raw.owned(m, epoch)
        u = _raw.new_like(x)
        assert _raw.owned(u, epoch)
        _raw.view(u, (3,), (1,))  # a second tensor over the memory: nobody owns it alone
        assert not _raw.owned(u, epoch)
        w = _raw.new_like(x)
        pg.Tensor._make(w._storage, 0, (3,), (1,), w.dtype)  # likewise, however it is made
        assert not _raw.owned(w, epoch)
        if device == "cpu":
            h = _raw.new_like(x)
            h.numpy()  # memory handed out
            assert not _raw.owned(h, epoch)
        inner, back = _raw.open_epoch()  # nested: a backward run inside a hook
        assert back == epoch and inner not in (epoch, prev)
        assert not _raw.owned(_raw.new_like(x), epoch)
        _raw.close_epoch(back)
        assert _raw.owned(_raw.new_like(x), epoch)
    finally:
        _raw.close_epoch(prev)
    later = _raw.new_like(x)
    assert not _raw.owned(later, epoch)
    again, prev2 = _raw.open_epoch()
    _raw.close_epoch(prev2)
    assert again > epoch  # epochs are never reused


def test_storages_made_elsewhere_are_never_owned(device):
    epoch, prev = _raw.open_epoch()
    try:
        made = [pg.zeros(2, device=device), pg.tensor([1.0, 2.0], device=device),
                pg.from_numpy(np.ones(2, np.float32)).to(device), pg.ones(2).to(device)]
        for t in made:
            assert not _raw.owned(t, epoch)
    finally:
        _raw.close_epoch(prev)
