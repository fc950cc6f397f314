"""The Tensor object's Python protocol as PyTorch 2.13's: ``copy.copy`` aliases, ``copy.deepcopy``
keeps layouts and storage sharing, ``==`` with numpy arrays, numpy results wrapped back into
tensors, ``reversed``, ``is_contiguous(memory_format=...)``, ``detach_`` on views, pickling a
non-leaf; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import portagrad as pg


def _cpu_only(device: str) -> None:
    if device != "cpu":  # numpy's arrays meet CPU tensors only (PyTorch's too)
        pytest.skip("numpy interoperation is for CPU tensors")


# ------------------------------------------------------------------------------- copy.copy
def test_copy_aliases_memory(device: str) -> None:
    a = pg.tensor([1.0, 2.0], device=device)
    b = copy.copy(a)
    assert b is not a
    b[0] = 9.0  # PyTorch: the copy shares the memory
    assert a.tolist() == [9.0, 2.0]


def test_copy_keeps_requires_grad_drops_grad_and_history(device: str) -> None:
    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    a.grad = pg.tensor([3.0, 4.0], device=device)
    b = copy.copy(a)
    assert b.requires_grad and b.is_leaf and b.grad is None
    y = a * 2
    c = copy.copy(y)  # a non-leaf copies as a leaf that requires grad
    assert c.requires_grad and c.is_leaf and c.grad_fn is None
    assert c.tolist() == [2.0, 4.0]


def test_copy_keeps_view_layout_and_attributes(device: str) -> None:
    a = pg.arange(6.0, device=device).reshape(2, 3)[:, 1:]
    a.tag = [1]  # type: ignore[attr-defined]
    b = copy.copy(a)
    assert b.stride() == (3, 1) and b.storage_offset() == 1
    assert b.tag is a.tag  # type: ignore[attr-defined]
    p = pg.nn.Parameter(pg.ones(2, device=device))
    q = copy.copy(p)
    assert type(q) is pg.nn.Parameter and q.requires_grad


# --------------------------------------------------------------------------- copy.deepcopy
def test_deepcopy_keeps_strides_and_offset(device: str) -> None:
    v = pg.arange(6.0, device=device).reshape(2, 3)[:, 1:]
    d = copy.deepcopy(v)
    assert d.stride() == (3, 1) and d.storage_offset() == 1 and not d.is_contiguous()
    assert d.tolist() == [[1.0, 2.0], [4.0, 5.0]]
    tr = copy.deepcopy(pg.arange(6.0, device=device).reshape(2, 3).t())
    assert tr.stride() == (1, 3)


def test_deepcopy_shares_one_copy_of_a_storage(device: str) -> None:
    a = pg.arange(6.0, device=device)
    x, y = copy.deepcopy([a, a[2:]])
    x[3] = 99.0
    assert y.tolist() == [2.0, 99.0, 4.0, 5.0]
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the original untouched


def test_deepcopy_of_a_non_leaf_refuses(device: str) -> None:
    y = pg.tensor([1.0, 2.0], device=device, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"\(graph leaves\) support the deepcopy protocol at the "
                       r"moment.  If you were attempting to deepcopy a module"):
        copy.deepcopy(y)


# ---------------------------------------------------------------------------------- pickle
def test_pickle_non_leaf_loads_as_leaf(device: str) -> None:
    y = pg.tensor([1.0, 2.0], device=device, requires_grad=True) * 2
    z = pickle.loads(pickle.dumps(y))
    assert z.requires_grad and z.is_leaf and z.tolist() == [2.0, 4.0]


# ---------------------------------------------------------------------- numpy interoperation
def test_eq_with_numpy_array(device: str) -> None:
    _cpu_only(device)
    a = pg.tensor([1.0, 2.0], device=device)
    r = a == np.array([1.0000000001, 2.0])  # compared as float64, the array's dtype
    assert isinstance(r, pg.Tensor) and r.dtype is pg.bool and r.tolist() == [False, True]
    r = np.array([1.0, 2.0]) == a
    assert isinstance(r, pg.Tensor) and r.tolist() == [True, True]
    assert (a == np.array([[1.0], [2.0]])).tolist() == [[True, False], [False, True]]
    assert (a == np.array(["a", "b"])) is False
    assert (a != np.array([1.0, 2.0])) is True  # PyTorch's != does not take arrays


def test_numpy_results_come_back_as_tensors(device: str) -> None:
    _cpu_only(device)
    a = pg.tensor([1.0, 2.0], device=device)
    r = a + np.array([1.0, 2.0])
    assert isinstance(r, pg.Tensor) and r.dtype is pg.float64 and r.tolist() == [2.0, 4.0]
    r = a - np.array([1.0, 2.0], dtype=np.float32)
    assert isinstance(r, pg.Tensor) and r.dtype is pg.float32 and r.tolist() == [0.0, 0.0]
    r = np.exp(pg.tensor(0.0, device=device))
    assert isinstance(r, pg.Tensor) and r.shape == () and r.item() == 1.0
    r = np.isfinite(pg.tensor([1.0, float("inf")], device=device))
    assert isinstance(r, pg.Tensor) and r.dtype is pg.uint8 and r.tolist() == [1, 0]
    r = np.maximum(a, 1.5)
    assert isinstance(r, pg.Tensor) and r.dtype is pg.float32 and r.tolist() == [1.5, 2.0]
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        np.exp(pg.tensor([1.0], device=device, requires_grad=True))


# -------------------------------------------------------------------------------- reversed
def test_reversed_is_a_flipped_tensor(device: str) -> None:
    r = reversed(pg.arange(6, device=device).reshape(2, 3))
    assert isinstance(r, pg.Tensor) and r.tolist() == [[3, 4, 5], [0, 1, 2]]
    z = pg.tensor(3, device=device)
    assert reversed(z) is z
    assert [int(x) for x in reversed(pg.arange(3, device=device))] == [2, 1, 0]


# ---------------------------------------------------------------------------- is_contiguous
def test_is_contiguous_memory_formats(device: str) -> None:
    cl, cl3 = pg.channels_last, pg.channels_last_3d
    x = pg.zeros(2, 3, 4, 5, device=device)
    assert x.is_contiguous(memory_format=pg.contiguous_format)
    assert x.is_contiguous(memory_format=pg.preserve_format)
    assert not x.is_contiguous(memory_format=cl)
    assert pg.zeros(2, 1, 4, 5, device=device).is_contiguous(memory_format=cl)
    assert pg.zeros(2, 3, 1, 1, device=device).is_contiguous(memory_format=cl)
    assert not pg.zeros(1, 3, 4, 5, device=device).is_contiguous(memory_format=cl)
    assert not pg.zeros(2, 3, 0, 5, device=device).is_contiguous(memory_format=cl)
    assert not pg.zeros(2, 3, 4, device=device).is_contiguous(memory_format=cl)
    assert not pg.zeros(2, 3, 4, 5, 6, device=device).is_contiguous(memory_format=cl)
    assert not pg.zeros(2, 3, 4, 5, 6, device=device).is_contiguous(memory_format=cl3)
    nhwc = pg.zeros(2, 4, 5, 3, device=device).permute(0, 3, 1, 2)
    assert nhwc.stride() == (60, 1, 15, 3)
    assert nhwc.is_contiguous(memory_format=cl) and not nhwc.is_contiguous()
    assert not pg.zeros(2, 4, 5, 3, device=device)[..., :2].permute(0, 3, 1, 2).is_contiguous(
        memory_format=cl)
    ndhwc = pg.zeros(2, 4, 5, 6, 3, device=device).permute(0, 4, 1, 2, 3)
    assert ndhwc.is_contiguous(memory_format=cl3) and not ndhwc.is_contiguous(memory_format=cl)
    assert not pg.zeros(2, 3, device=device).t().is_contiguous(memory_format=pg.preserve_format)
    with pytest.raises(TypeError, match="argument 'memory_format' must be torch.memory_format, "
                       "not str"):
        x.is_contiguous(memory_format="x")


# ------------------------------------------------------------------------- detach_ and data
def test_detach_inplace_refuses_every_view(device: str) -> None:
    a = pg.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match=r"Can't detach views in-place. Use detach\(\) instead. "
                       r"If you are using DistributedDataParallel"):
        a[:1].detach_()
    b = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        b.detach()[:1].detach_()
    y = b * 2
    assert y.detach_() is y and not y.requires_grad and y.is_leaf


def test_data_assignment_type_error(device: str) -> None:
    a = pg.tensor([1.0, 2.0], device=device)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        a.data = [1, 2]  # type: ignore[assignment]
    a.data = pg.zeros(3, dtype=pg.float64, device=device)
    assert a.shape == (3,) and a.dtype is pg.float64


def test_transposes_off_matrices(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``.T`` off 2-D tensors and ``.mT``/``.mH``/``.H`` on 0-d ones: PyTorch's deprecation
    warnings and results (the 0-d identity or conjugate; ``x.T`` reversing every dimension
    warns once per process); ``.mH`` on a 1-D tensor raises as ``.mT`` does."""
    from portagrad import _tensor_api
    monkeypatch.setattr(_tensor_api, "_T_WARNED", [])
    x0 = pg.tensor(2.0, device=device)
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        assert x0.T.item() == 2.0
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        assert x0.mT.shape == ()
    with pytest.warns(UserWarning, match="Tensor.mH is deprecated on 0-D tensors"):
        assert x0.mH.item() == 2.0
    x3 = pg.ones(2, 3, 4, device=device)
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        assert x3.T.shape == (4, 3, 2)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x3.T.shape == (4, 3, 2)  # once per process
        assert pg.ones(2, 3, device=device).T.shape == (3, 2)
        assert x3.mT.shape == (2, 4, 3) and x3.mH.shape == (2, 4, 3)
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices or batches "
                                           "of matrices. Got 1-D tensor."):
        _ = pg.ones(3, device=device).mH
