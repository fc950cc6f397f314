"""Property tests of the core: broadcasting vs numpy, chains of views vs numpy (values and shared
storage), and PyTorch's type-promotion table (written out by hand in ``op_table``) vs
``pg.result_type`` and real ops."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import portagrad as pg

from op_table import ALL, B, F32, F64, I32, I64, PROMOTE, expected_result_type

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcastable_pair(draw: Any) -> tuple[tuple, tuple]:
    out = draw(st.lists(st.integers(0, 4), min_size=0, max_size=4))
    a, b = [], []
    for n in out:
        a.append(draw(st.sampled_from([n, 1])))
        b.append(draw(st.sampled_from([n, 1])))
    a = a[draw(st.integers(0, len(a))):]
    b = b[draw(st.integers(0, len(b))):]
    return tuple(a), tuple(b)


# --------------------------------------------------------------------------- broadcasting
@SETTINGS
@given(pair=broadcastable_pair())
def test_broadcast_ops_match_numpy(pair: tuple, device: str) -> None:
    sa, sb = pair
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
    assert tuple(pg.broadcast_shapes(sa, sb)) == np.broadcast_shapes(sa, sb)
    ta, tb = pg.tensor(a, device=device), pg.tensor(b, device=device)
    for fn, ref in ((pg.add, np.add), (pg.mul, np.multiply), (pg.maximum, np.maximum)):
        out = fn(ta, tb)
        assert tuple(out.shape) == np.broadcast_shapes(sa, sb)
        np.testing.assert_allclose(out.cpu().numpy(), ref(a, b), rtol=1e-6)
    ea, eb = pg.broadcast_tensors(ta, tb)
    np.testing.assert_array_equal(ea.cpu().numpy(), np.broadcast_to(a, ea.shape))
    assert ea._storage is ta._storage and eb._storage is tb._storage


@SETTINGS
@given(sa=shapes, sb=shapes)
def test_broadcast_shapes_errors_like_numpy(sa: tuple, sb: tuple) -> None:
    try:
        expected = np.broadcast_shapes(sa, sb)
    except ValueError:
        with pytest.raises(RuntimeError, match=r"The size of tensor a \(\d+\) must match the size "
                                               r"of tensor b \(\d+\) at non-singleton dimension"):
            pg.broadcast_shapes(sa, sb)
        with pytest.raises(RuntimeError, match=r"must match the size of tensor b"):
            pg.zeros(sa) + pg.zeros(sb)
        return
    assert tuple(pg.broadcast_shapes(sa, sb)) == expected


# --------------------------------------------------------------------------- views
@st.composite
def view_chain(draw: Any) -> tuple[tuple, list]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    steps = draw(st.lists(st.tuples(st.sampled_from(
        ["permute", "slice", "transpose", "unsqueeze", "squeeze", "narrow", "select", "view",
         "expand", "flip_T"]), st.randoms(use_true_random=False)), min_size=1, max_size=5))
    return shape, steps


def _apply(kind: str, r: Any, t: pg.Tensor, a: np.ndarray) -> tuple[pg.Tensor, np.ndarray] | None:
    nd = a.ndim
    if kind == "permute" and nd:
        p = list(range(nd))
        r.shuffle(p)
        return t.permute(*p), np.transpose(a, p)
    if kind == "transpose" and nd:
        i, j = r.randrange(nd), r.randrange(nd)
        return t.transpose(i, j), np.swapaxes(a, i, j)
    if kind == "flip_T" and nd:
        return t.T, a.transpose()
    if kind == "slice" and nd:
        d = r.randrange(nd)
        n = a.shape[d]
        start, stop, step = r.randrange(-n - 1, n + 1), r.randrange(-n - 1, n + 2), r.randrange(1, 4)
        key = (slice(None),) * d + (slice(start, stop, step),)
        return t[key], a[key]
    if kind == "narrow" and nd:
        d = r.randrange(nd)
        n = a.shape[d]
        s = r.randrange(0, n + 1)
        ln = r.randrange(0, n - s + 1)
        return t.narrow(d, s, ln), a[(slice(None),) * d + (slice(s, s + ln),)]
    if kind == "select" and nd and all(a.shape):
        d = r.randrange(nd)
        i = r.randrange(-a.shape[d], a.shape[d])
        return t.select(d, i), a[(slice(None),) * d + (i,)]
    if kind == "unsqueeze":
        d = r.randrange(-nd - 1, nd + 1)
        return t.unsqueeze(d), np.expand_dims(a, d)
    if kind == "squeeze":
        return t.squeeze(), np.squeeze(a)
    if kind == "view":
        # flatten a run of dims that is contiguous in memory (so that a view exists)
        if t.is_contiguous():
            return t.view(-1), a.reshape(-1)
        return None
    if kind == "expand" and nd:
        ones = [i for i, n in enumerate(a.shape) if n == 1]
        if not ones:
            return None
        shape = list(a.shape)
        shape[r.choice(ones)] = 3
        return t.expand(*shape), np.broadcast_to(a, shape)
    return None


@SETTINGS
@given(chain=view_chain())
def test_view_chains_match_numpy_and_share_storage(chain: tuple, device: str) -> None:
    shape, steps = chain
    base_np = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    base = pg.tensor(base_np, device=device)
    t, a = base, base_np
    expanded = False
    for kind, r in steps:
        res = _apply(kind, r, t, a)
        if res is None:
            continue
        t, a = res
        expanded |= kind == "expand"
        assert tuple(t.shape) == a.shape, (kind, t.shape, a.shape)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    assert t._storage is base._storage
    if not expanded and t.numel():
        # a write through the view lands in the base exactly where numpy's view writes
        v0 = base._version
        t.fill_(-1.0)
        assert base._version == v0 + 1 and t._version == base._version
        a_view = a if np.shares_memory(a, base_np) else None
        assume(a_view is not None)
        a_view[...] = -1.0
        np.testing.assert_array_equal(base.cpu().numpy(), base_np)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_reshape_views_when_possible(shape: tuple, data: Any, device: str) -> None:
    base = pg.arange(int(np.prod(shape)), dtype=F32, device=device).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    t = base.permute(*perm)
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape).transpose(perm)
    new = data.draw(st.sampled_from([(-1,), (a.shape[0], -1), a.shape[::-1]]))
    r = t.reshape(*new)
    np.testing.assert_array_equal(r.cpu().numpy(), a.reshape(new))
    if t.is_contiguous():
        assert r._storage is base._storage


# --------------------------------------------------------------------------- type promotion
def test_promote_types_table() -> None:
    for (a, b), want in PROMOTE.items():
        assert pg.promote_types(a, b) is want, (a, b)
        assert pg.promote_types(b, a) is want, (b, a)


operand = st.one_of(
    st.tuples(st.sampled_from(ALL), st.sampled_from([0, 1])).map(lambda p: ("tensor",) + p),
    st.sampled_from([True, 3, 2.5]).map(lambda v: ("scalar", v)))


def _make(o: tuple, device: str = "cpu") -> Any:
    if o[0] == "scalar":
        return o[1]
    shape = () if o[2] == 0 else (2,)
    return pg.ones(shape, dtype=o[1], device=device)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(operand, min_size=1, max_size=4))
def test_result_type_matches_pytorch_rule(ops: list) -> None:
    vals = [_make(o) for o in ops]
    assume(any(isinstance(v, pg.Tensor) for v in vals) or len(vals) == 1)
    assert pg.result_type(*vals) is expected_result_type(*vals), ops


@SETTINGS
@given(a=operand, b=operand)
def test_binary_ops_follow_the_promotion_table(a: tuple, b: tuple, device: str) -> None:
    x, y = _make(a, device), _make(b, device)
    assume(isinstance(x, pg.Tensor) or isinstance(y, pg.Tensor))
    want = expected_result_type(x, y)
    assert (x + y).dtype is want if isinstance(x, pg.Tensor) else (y + x).dtype is want
    assert pg.mul(x, y).dtype is want
    assert pg.div(x, y).dtype is (want if want.is_floating_point else pg.get_default_dtype())
    assert pg.eq(x, y).dtype is B


def test_promotion_examples_from_pytorch_docs(device: str) -> None:
    """A few hand-checked cases from PyTorch's type-promotion documentation."""
    def t(v: Any, dtype: Any) -> pg.Tensor:
        return pg.tensor(v, dtype=dtype, device=device)
    assert (t([1], I32) + 5).dtype is I32
    assert (t([1], I32) + 5.5).dtype is F32
    assert (t([1], I32) + t(5, I64)).dtype is I32  # zero-dim does not widen the same category
    assert (t([1], I32) + t(5.0, F64)).dtype is F64  # ...but a higher category wins
    assert (t([1.0], F32) + t(5.0, F64)).dtype is F32
    assert (t([1.0], F32) + t([5.0], F64)).dtype is F64
    assert (t([True], B) + 1).dtype is I64
    assert (t([True], B) + t(1, I32)).dtype is I32
    assert (t(1, I32) + 2.5).dtype is F32
    assert (t(1, I64) + t(2, I32)).dtype is I64
