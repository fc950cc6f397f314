"""Typed allocation (the contract's optional ``allocate_array``): a backend that has it gets each
op's result as one array, both the buffer and its View's handle; every other View over that
buffer, and every backend without the method, behave as with ``allocate``."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad import _raw
from portagrad._storage import Storage
from portagrad.backends.numpy import NumpyBackend


def _typed(t: pg.Tensor) -> bool:
    """Whether ``t``'s backend allocates results with ``allocate_array`` (the core's choice)."""
    return _raw._array_allocator(t._storage.backend) is not None


def test_numpy_backend_allocates_arrays():
    assert _typed(pg.ones(1, device="cpu"))


_CASES = {  # the op on a tensor, and on the numpy array
    "add": (lambda x: x + x, lambda a: a + a),
    "mul-scalar": (lambda x: x * 2.0, lambda a: a * np.float32(2.0)),
    "rsub": (lambda x: 1.0 - x, lambda a: np.float32(1.0) - a),
    "exp": (lambda x: pg.exp(x), np.exp),
    "sum": (lambda x: x.sum(), lambda a: np.asarray(a.sum())),
    "sum0": (lambda x: x.sum(0), lambda a: a.sum(0)),
    "gt": (lambda x: x > 2.0, lambda a: a > 2.0),
    "rows": (lambda x: x[0] + x[1], lambda a: a[0] + a[1]),
    "f64": (lambda x: x.to(pg.float64) * 0.5, lambda a: a.astype(np.float64) * 0.5),
    "i64": (lambda x: x.to(pg.int64) + 1, lambda a: a.astype(np.int64) + 1),
    "empty": (lambda x: x[:0] + 1.0, lambda a: a[:0] + np.float32(1.0)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_results_are_their_own_handle(device, case):
    op, ref = _CASES[case]
    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = op(pg.tensor(xn, device=device))
    got, expect = y.cpu().numpy(), ref(xn)
    np.testing.assert_allclose(got, expect, rtol=1e-6)
    assert got.shape == expect.shape and got.dtype == expect.dtype
    if _typed(y):
        arr = y._storage.buffer
        assert isinstance(arr, np.ndarray) and arr.dtype == y.dtype.numpy
        assert y._storage.nbytes == arr.nbytes
        if not case.startswith("sum"):  # (a sum re-views its keepdim result)
            assert y._v.cache is arr and arr.shape == tuple(y.shape)


def test_closed_form_values(device):
    x = pg.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], device=device)
    assert (x + x).tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert (1.0 - x).tolist() == [[1.0, 0.0, -1.0], [-2.0, -3.0, -4.0]]
    assert x.sum().item() == 15.0 and x.sum(0).tolist() == [3.0, 5.0, 7.0]
    assert (x > 2.0).tolist() == [[False, False, False], [True, True, True]]
    assert (x.to(pg.int64) + 1).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_other_views_of_a_result(device):
    """Views of another shape, offset or dtype over a result's buffer (made later, without the
    handle) read and write the same memory."""
    y = pg.arange(8, dtype=pg.float32, device=device).reshape(2, 4) + 0.0
    expect = np.arange(8, dtype=np.float32).reshape(2, 4)
    flat = y.view(-1)  # one dimension over a two-dimensional array
    flat.add_(1.0)
    expect += 1
    flat += flat  # in place, the output being the input
    expect *= 2
    np.testing.assert_array_equal(y.cpu().numpy(), expect)
    np.testing.assert_array_equal((flat[2:5] + 1.0).cpu().numpy(), expect.reshape(-1)[2:5] + 1)
    np.testing.assert_array_equal((y[1] * y[0]).cpu().numpy(), expect[1] * expect[0])
    np.testing.assert_array_equal(y.t().contiguous().cpu().numpy(), expect.T)
    np.testing.assert_array_equal(y.view(pg.int32).cpu().numpy(), expect.view(np.int32))
    y.view(pg.int32)[0, 0] = 0  # a write through a view of another dtype
    expect.view(np.int32)[0, 0] = 0
    np.testing.assert_array_equal(y.cpu().numpy(), expect)
    assert y.untyped_storage().nbytes() == 32


def test_numpy_shares_a_result_memory():
    y = pg.ones(2, 3) * 2.0
    a = y.numpy()
    a[1, 2] = 7.0
    assert y[1, 2].item() == 7.0
    pg.from_numpy(a)[0, 0] = 3.0
    assert y[0, 0].item() == 3.0


def test_version_counter_of_results_and_views(device):
    y = pg.ones(4, device=device) + 1.0
    v = y[1:3]
    assert y._version == 0
    v.add_(1.0)
    assert y._version == v._version == 1
    assert y.tolist() == [2.0, 3.0, 3.0, 2.0]


# --------------------------------------------------------------- who allocates
class _Counting(NumpyBackend):
    """The numpy backend with an ``allocate`` of its own (memory accounting, a limit)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        self.calls += 1
        return super().allocate(index, nbytes)


class _CountingTyped(_Counting):
    def allocate_array(self, index, nbytes, shape, dtype):  # type: ignore[no-untyped-def]
        self.calls += 1
        return np.empty(shape, dtype.numpy)


def _storage_of(be) -> Storage:  # type: ignore[no-untyped-def]
    return Storage(be.allocate(0, 8), 8, pg.device("cpu"), be, 0)


@pytest.mark.parametrize("via", ["new_on", "binary_views"])
def test_an_allocate_redefined_below_allocate_array_sees_every_allocation(via):
    be = _Counting()
    st = _storage_of(be)
    be.calls = 0
    assert _raw._array_allocator(be) is None
    if via == "new_on":
        t = _raw.new_on(st, (2,), pg.float32)
    else:
        t = _raw.binary_views("add", st, 1.0, 2.0, (2,), pg.float32)
        assert t._storage.buffer.view(np.float32).tolist() == [3.0, 3.0]
    assert be.calls == 1 and t._v.cache is not t._storage.buffer


def test_allocate_array_redefined_with_allocate_is_used():
    be = _CountingTyped()
    st = _storage_of(be)
    be.calls = 0
    t = _raw.new_on(st, (2, 2), pg.float64)
    assert be.calls == 1 and t._v.cache is t._storage.buffer and t._v.cache.shape == (2, 2)


def test_an_allocate_shadowed_on_the_object_sees_every_allocation():
    be = NumpyBackend()
    seen = []
    be.allocate = lambda index, nbytes: seen.append(nbytes) or np.empty(nbytes, np.uint8)
    t = _raw.new_on(_storage_of(be), (3,), pg.float32)
    assert seen[-1] == 12 and t._v.cache is None


def test_backends_without_allocate_array_allocate_bytes():
    class Plain(NumpyBackend):
        allocate_array = None  # type: ignore[assignment]

    be = Plain()
    assert _raw._array_allocator(be) is None
    t = _raw.new_on(_storage_of(be), (3,), pg.float32)
    assert t._storage.buffer.dtype == np.uint8 and t._storage.buffer.nbytes == 12
    assert _raw._array_allocator(pg.ones(1)._storage.backend) is not None


# ------------------------------------------------- operator results in one call (binary_array)
def test_numpy_backend_computes_small_float_operator_results_in_one_call():
    be = pg.ones(1)._storage.backend
    assert _raw._binary_array(be) is not None
    x = pg.tensor([1.0, 2.0])
    assert be.binary_array(0, 8, (2,), pg.float32, "add", x._v, 1.0) is not None
    # declined: other dtypes, other ops, large results (the pool's), scalars of other types
    i = pg.tensor([1, 2])
    assert be.binary_array(0, 16, (2,), pg.int64, "add", i._v, i._v) is None
    assert be.binary_array(0, 8, (2,), pg.float32, "maximum", x._v, x._v) is None
    assert be.binary_array(0, 8, (2,), pg.float32, "add", x._v, 1) is None
    big = pg.ones(1 << 18)
    assert be.binary_array(0, 1 << 20, (1 << 18,), pg.float32, "add", big._v, big._v) is None


class _CountingBinary(NumpyBackend):
    """The numpy backend with a ``binary`` of its own (it counts launches)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def binary(self, op, a, b, out):  # type: ignore[no-untyped-def]
        self.calls += 1
        super().binary(op, a, b, out)


@pytest.mark.parametrize("kind", ["subclass", "shadowed"])
def test_a_binary_redefined_or_shadowed_sees_every_operator(kind):
    be = _CountingBinary() if kind == "subclass" else NumpyBackend()
    if kind == "shadowed":
        seen = []
        plain = be.binary
        be.binary = lambda op, a, b, out: seen.append(op) or plain(op, a, b, out)
    assert _raw._binary_array(be) is None and _raw._array_allocator(be) is not None
    t = _raw.binary_views("add", _storage_of(be), 1.0, 2.0, (2,), pg.float32)
    assert t._v.cache.tolist() == [3.0, 3.0]
    assert (be.calls if kind == "subclass" else len(seen)) == 1


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (64, 80)])
def test_operator_results_of_binary_array_are_contiguous_arrays(shape):
    xn = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = pg.tensor(xn)
    xt = x.t() if x.dim() == 2 else x  # a transposed operand: the result is still C-ordered
    for y, want in ((x + x, xn + xn), (xt * 2.0, (xn.T if x.dim() == 2 else xn) * 2.0),
                    (1.0 - x, 1.0 - xn)):
        arr = y._v.cache
        assert arr is y._storage.buffer and arr.dtype == np.float32
        assert arr.shape == want.shape and arr.flags.c_contiguous and arr.base is None
        assert y.stride() == tuple(s // 4 for s in np.empty(want.shape, np.float32).strides)
        np.testing.assert_array_equal(y.numpy(), want)


def test_capture_records_the_allocations_and_restores_typed_allocation():
    """The capture recorder shadows ``allocate`` on the backend object: while it records, results
    are allocated through it (and so belong to the step); afterwards arrays again."""
    w = pg.tensor([1.0, 2.0, 3.0])
    step = pg.compile(lambda a: (a * w + 1.0).exp().sum(), mode="reduce-overhead")
    x = pg.tensor([0.5, -1.0, 0.25])
    expect = float(np.exp(np.array([0.5, -1.0, 0.25], np.float32) * [1, 2, 3] + 1).sum())
    for _ in range(4):
        assert step(x).item() == pytest.approx(expect, rel=1e-6)
    assert step.stats["replays"] > 0, step.stats
    y = x + x
    assert y._v.cache is y._storage.buffer


# ------------------------------------------------------- the 2-D product without batch views (mm)
class _CountingMatmul(NumpyBackend):
    """The numpy backend with a ``matmul`` of its own (it counts products)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def matmul(self, a, b, out):  # type: ignore[no-untyped-def]
        self.calls += 1
        super().matmul(a, b, out)


@pytest.mark.parametrize("kind", ["plain", "subclass", "shadowed"])
def test_products_take_mm_unless_matmul_is_redefined_or_shadowed(kind):
    be = _CountingMatmul() if kind == "subclass" else NumpyBackend()
    seen = []
    if kind == "shadowed":
        plain = be.matmul
        be.matmul = lambda a, b, out: seen.append(a.shape) or plain(a, b, out)
    assert (_raw._usable(be, "mm", ("matmul",), {}) is None) == (kind != "plain")
    st = _storage_of(be)
    an, bn = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)
    a, b = _raw.new_on(st, (2, 3), pg.float64), _raw.new_on(st, (4, 3), pg.float64)
    be.copy(pg.tensor(an, dtype=pg.float64)._v, a._v)
    be.copy(pg.tensor(bn, dtype=pg.float64)._v, b._v)
    bt = _raw.bare_view(b._v, (3, 4), (1, 3))  # b.T as a weight is used
    out = _raw.mm(a, b, bv=bt)
    np.testing.assert_array_equal(be.to_host(out._v), an @ bn.T)
    counted = be.calls if kind == "subclass" else len(seen)
    assert counted == (0 if kind == "plain" else 1)
