"""``Tensor.set_`` (re-pointing a tensor at another tensor's memory or at a storage, in place),
``slice_inverse`` (a slice's base geometry over the slice's memory) and the exception classes
``AcceleratorError`` / ``FatalError``: values, sharing, the geometry arguments, gradients,
PyTorch's errors (and PyTorch's own results where it is installed)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg


def test_set_to_a_tensor_shares_memory(device: str) -> None:
    y = pg.arange(6.0, device=device)
    x = pg.zeros(3, device=device)
    assert x.set_(y) is x
    assert x.shape == (6,) and x.is_set_to(y) and x.data_ptr() == y.data_ptr()
    x.add_(1.0)
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(6.0) + 1)
    # a view's geometry comes along
    v = pg.arange(12.0, device=device).reshape(3, 4)[:, 1:3]
    x = pg.zeros(1, device=device).set_(v)
    assert x.shape == (3, 2) and x.stride() == (4, 1) and x.storage_offset() == 1
    np.testing.assert_array_equal(x.cpu().numpy(), v.cpu().numpy())


def test_set_with_geometry_and_storages(device: str) -> None:
    y = pg.arange(6.0, device=device)
    x = pg.zeros(3, device=device).set_(y, 1, (2, 2), (2, 1))
    np.testing.assert_array_equal(x.cpu().numpy(), [[1, 2], [3, 4]])
    x = pg.zeros(3, device=device).set_(y.untyped_storage(), 2, (2,))
    np.testing.assert_array_equal(x.cpu().numpy(), [2, 3])
    x = pg.zeros(3, device=device).set_(y.untyped_storage())
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(6.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # storage() is deprecated, as in PyTorch
        x = pg.zeros(3, device=device).set_(y.storage(), 4)
    np.testing.assert_array_equal(x.cpu().numpy(), [4, 5])
    e = pg.zeros(3, device=device).set_()
    assert e.shape == (0,) and e.untyped_storage().nbytes() == 0


def test_storage_copies(device: str) -> None:
    """``copy.copy`` / ``copy.deepcopy`` / ``clone()`` of a storage copy its memory, as
    PyTorch's do (deepcopy used to fail pickling a lock); a deepcopy copies each storage once."""
    import copy

    t = pg.arange(6.0, device=device)
    u = t.untyped_storage()
    for new in (copy.copy(u), copy.deepcopy(u), u.clone()):
        assert new.nbytes() == u.nbytes() and new.data_ptr() != u.data_ptr()
        assert str(new.device) == str(u.device)
    d = copy.deepcopy(u)
    t.add_(1.0)  # the copy keeps the values it was made with
    np.testing.assert_array_equal(pg.zeros(1, device=device).set_(d).cpu().numpy(), np.arange(6.0))
    pair = copy.deepcopy([u, t[2:].untyped_storage()])
    assert pair[0] is pair[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # storage() is deprecated, as in PyTorch
        ts = copy.deepcopy(t.storage())
    assert ts.dtype == pg.float32 and ts.size() == 6 and ts.data_ptr() != u.data_ptr()


def test_set_errors(device: str) -> None:
    y = pg.arange(6.0, device=device)
    with pytest.raises(RuntimeError, match="Could not set tensor of type long int to a tensor "
                                           "of type float"):
        pg.zeros(3, device=device).set_(pg.arange(3, device=device))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        pg.zeros(3, device=device, requires_grad=True).set_(y)
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[7\], strides \[1\], storage "
                                           r"offset 0, and itemsize 4 requiring a storage size "
                                           r"of 28 are out of bounds for storage of size 24"):
        pg.zeros(3, device=device).set_(y.untyped_storage(), 0, (7,))
    with pytest.raises(NotImplementedError, match="the derivative for 'set_' is not "
                                                  "implemented"):
        pg.zeros(3, device=device).set_(pg.arange(3.0, device=device, requires_grad=True))
    with pg.no_grad():  # nothing recorded: allowed
        x = pg.zeros(3, device=device).set_(pg.arange(3.0, device=device, requires_grad=True))
    assert x.shape == (3,)


def test_set_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (torch, pg):
        y = lib.arange(6.0)
        got = [lib.zeros(3).set_(y).tolist(), lib.zeros(3).set_(y, 1, (2, 2), (2, 1)).tolist(),
               lib.zeros(3).set_(y.untyped_storage(), 2, (2,)).tolist(),
               list(lib.zeros(3).set_().shape)]
        if lib is torch:
            want = got
        else:
            assert got == want
    # (past the end of a storage PyTorch grows it; portagrad's storages have a fixed size and
    # raise the setStorage error PyTorch raises where it cannot grow one: test_set_errors)


def test_error_classes() -> None:
    assert issubclass(pg.AcceleratorError, RuntimeError)
    assert issubclass(pg.FatalError, Exception) and not issubclass(pg.FatalError, RuntimeError)
    with pytest.raises(RuntimeError):
        raise pg.AcceleratorError("a kernel faulted")
    torch = pytest.importorskip("torch")
    assert [c.__name__ for c in pg.AcceleratorError.__mro__[1:]] == \
        [c.__name__ for c in torch.AcceleratorError.__mro__[1:]]
    assert [c.__name__ for c in pg.FatalError.__mro__[1:]] == \
        [c.__name__ for c in torch.FatalError.__mro__[1:]]


def test_slice_inverse_values_and_gradients(device: str) -> None:
    """The base's geometry over the slice's memory (the base again), and PyTorch's gradient: the
    slice gets the gradient's slice, the base the rest."""
    a = pg.arange(6.0, device=device, requires_grad=True)
    b = a * 2
    c = b[1:5:2]
    b.retain_grad()
    c.retain_grad()
    r = pg.slice_inverse(c, b, 0, 1, 5, 2)
    assert r.shape == b.shape and r.data_ptr() == b.data_ptr()
    np.testing.assert_array_equal(r.detach().cpu().numpy(), np.arange(6.0) * 2)
    w = np.arange(10.0, 16.0)
    (r * pg.tensor(w, device=device)).sum().backward()
    assert c.grad is not None and b.grad is not None and a.grad is not None
    np.testing.assert_array_equal(c.grad.cpu().numpy(), w[1:5:2])
    # b's own share is w with the slice zeroed; c's share lands on the slice: w in total
    np.testing.assert_array_equal(b.grad.cpu().numpy(), w)
    np.testing.assert_array_equal(a.grad.cpu().numpy(), 2 * w)
    x = pg.arange(12.0, device=device).reshape(3, 4)
    m = x[:, 1:3].slice_inverse(x, 1, 1, 3)
    assert m.shape == (3, 4) and m.stride() == (4, 1)
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[6\], strides \[1\], storage "
                                           r"offset 0, and itemsize 4 requiring a storage size "
                                           r"of 24 are out of bounds for storage of size 8"):
        pg.slice_inverse(pg.ones(2, device=device), pg.zeros(6, device=device), 0, 1, 5, 2)


def test_slice_inverse_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, pg):
        x = lib.arange(12.0, requires_grad=True)
        B = (x * 1).reshape(3, 4)
        C = B[:, 1:3]
        R = lib.slice_inverse(C, B, 1, 1, 3)
        (R * lib.arange(12.0).reshape(3, 4) ** 2).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]
    for lib in (torch, pg):
        with pytest.raises(RuntimeError) as info:
            lib.slice_inverse(lib.ones(2), lib.zeros(6), 0, 1, 5, 2)
        grads.append(str(info.value))
    assert grads[2] == grads[3]
