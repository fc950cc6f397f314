"""DLPack and the numpy array protocol: zero-copy exchange with numpy and (optionally) PyTorch,
views/strides/offsets kept, clear errors for device tensors."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import portagrad as pg
from portagrad.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack


def test_numpy_to_portagrad_shares_memory_and_keeps_strides():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[1:, 1::2]  # an offset and a non-unit stride
    t = pg.from_dlpack(view)
    assert t.shape == (3, 3) and t.stride() == (6, 2) and t.dtype == pg.float32
    np.testing.assert_array_equal(t.numpy(), view)
    t[0, 0] = -1.0
    assert base[1, 1] == -1.0
    view[2, 2] = 99.0
    assert t[2, 2].item() == 99.0


def test_portagrad_to_numpy_shares_memory_and_keeps_strides():
    t = pg.arange(12, dtype=pg.int64).reshape(3, 4).t()[1:]
    a = np.from_dlpack(t)
    assert a.shape == (3, 3) and a.strides == (8, 32)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4).T[1:])
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[2, 2] = -7
    assert a[2, 2] == -7


def test_capsules_round_trip_and_outlive_the_source():
    src = pg.arange(6.0).reshape(2, 3)[:, 1:]
    capsule = to_dlpack(src)
    assert type(capsule).__name__ == "PyCapsule"
    t = from_dlpack(capsule)
    del capsule
    gc.collect()
    t[0, 0] = 7.0
    assert src[0, 0].item() == 7.0 and t.stride() == (3, 1)
    # the exported memory stays alive after the source tensor is gone
    x = pg.full((4,), 3.0)
    arr = np.from_dlpack(x)
    del x
    gc.collect()
    assert arr.tolist() == [3.0, 3.0, 3.0, 3.0]
    with pytest.raises(AssertionError, match="device and copy kwargs"):
        from_dlpack(to_dlpack(pg.ones(1)), copy=True)


def test_dlpack_keywords():
    t = pg.arange(4.0)
    assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    a = np.from_dlpack(t, copy=True)
    a[0] = 50.0
    assert t[0].item() == 0.0  # copy=True: not shared
    b = np.from_dlpack(t, copy=False)
    b[0] = 50.0
    assert t[0].item() == 50.0
    assert type(t.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
    assert type(t.__dlpack__(stream=None, dl_device=(DLDeviceType.kDLCPU, 0))).__name__ == \
        "PyCapsule"
    with pytest.raises(BufferError, match="require gradient"):
        pg.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="stream must be"):
        t.__dlpack__(stream="s")
    with pytest.raises(BufferError, match="stream should be None on cpu"):
        t.__dlpack__(stream=5)
    with pytest.raises(BufferError, match="DLPack device"):
        t.__dlpack__(dl_device=(DLDeviceType.kDLCUDA, 0))
    c = pg.from_dlpack(np.arange(3.0), copy=True)
    assert c.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        pg.from_dlpack([1, 2])


def test_from_dlpack_of_portagrad_tensors_and_device_moves(device):
    t = pg.arange(4.0, device=device)
    same = pg.from_dlpack(t)
    same[0] = 9.0
    assert t[0].item() == 9.0 and same.device == t.device
    moved = pg.from_dlpack(np.arange(3.0), device=device)
    assert moved.device == pg.device(device) and moved.tolist() == [0.0, 1.0, 2.0]
    if device != "cpu":
        with pytest.raises(ValueError, match="without copying"):
            pg.from_dlpack(np.arange(3.0), device=device, copy=False)


def test_device_tensors_refuse_dlpack_and_numpy(device):
    t = pg.arange(3.0, device=device)
    if device == "cpu":  # the contrast: a CPU tensor exports, and converts, without copying
        assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
        assert np.asarray(t, copy=False).tolist() == [0.0, 1.0, 2.0]
        return
    # OpenCL's own DLPack device type; a plugin's device is an extension device
    opencl = pg.device(device).type == "opencl"
    kind = DLDeviceType.kDLOpenCL if opencl else DLDeviceType.kDLExtDev
    assert t.__dlpack_device__() == (kind, pg.device(device).index or 0)
    memory = "is an OpenCL buffer" if opencl else f"belongs to the {pg.device(device).type!r} backend"
    with pytest.raises(BufferError, match=memory):
        t.__dlpack__()
    with pytest.raises(BufferError, match=memory):
        t.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False)
    # the documented exception: a host copy, asked for explicitly
    host = np.from_dlpack(t, device="cpu", copy=True)
    assert host.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match=f"can't convert {device} device type tensor to numpy"):
        np.asarray(t)
    with pytest.raises(BufferError, match="host memory only"):
        pg.from_dlpack(_FakeDevice())


class _FakeDevice:
    def __dlpack__(self, **kw):
        raise AssertionError("must not be called")

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCUDA, 0)


def test_array_protocol():
    t = pg.arange(6.0).reshape(2, 3)
    a = np.asarray(t)
    a[0, 0] = 5.0
    assert t[0, 0].item() == 5.0  # shared, as with torch
    c = np.array(t, copy=True)
    c[0, 0] = -1.0
    assert t[0, 0].item() == 5.0
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(t.t(), copy=False).strides == (4, 12)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(pg.ones(2, requires_grad=True))
    assert np.asarray(pg.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]
    assert np.exp(pg.zeros(3)).tolist() == [1.0, 1.0, 1.0]  # ufuncs on CPU tensors still work


def test_pytorch_exchange_both_ways():
    torch = pytest.importorskip("torch")
    tt = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1::2]
    p = pg.from_dlpack(tt)
    assert p.shape == (3, 2) and p.stride() == (4, 2)
    p[0, 0] = -3.0
    assert tt[0, 0].item() == -3.0
    q = pg.arange(6, dtype=pg.int64).reshape(2, 3).t()
    back = torch.from_dlpack(q)
    assert back.stride() == (1, 3) and back.dtype == torch.int64
    back[2, 1] = 77
    assert q[2, 1].item() == 77
    assert torch.utils.dlpack.from_dlpack(to_dlpack(q)).tolist() == q.tolist()
    b = torch.tensor([True, False])
    assert pg.from_dlpack(b).tolist() == [True, False]


def test_bfloat16_round_trips_through_a_capsule():
    """numpy exchanges no bfloat16 through DLPack; portagrad does (code kDLBfloat, as torch)."""
    from portagrad._dlpack import capsule_dtype
    src = pg.tensor([1.5, 2.0, -3.25, 0.1], dtype=pg.bfloat16)[::2]
    capsule = to_dlpack(src)
    assert capsule_dtype(capsule) == (4, 16, 1)  # kDLBfloat, 16 bits, 1 lane
    t = from_dlpack(capsule)
    assert t.dtype == pg.bfloat16 and t.stride() == (2,)
    np.testing.assert_array_equal(t.float().numpy(), [1.5, -3.25])
    t[1] = 8.0  # shared memory
    assert src[1].item() == 8.0
    versioned = src.__dlpack__(max_version=(1, 0))
    assert capsule_dtype(versioned) == (4, 16, 1)
    assert from_dlpack(versioned).tolist() == [1.5, 8.0]


def test_pytorch_bfloat16_both_ways():
    torch = pytest.importorskip("torch")
    tt = torch.tensor([1.5, 2.0, -3.25], dtype=torch.bfloat16)
    p = pg.from_dlpack(tt)
    assert p.dtype == pg.bfloat16 and p.tolist() == [1.5, 2.0, -3.25]
    p[0] = 9.0
    assert tt[0].item() == 9.0  # shared
    back = torch.from_dlpack(p)
    assert back.dtype == torch.bfloat16 and back.tolist() == [9.0, 2.0, -3.25]
    back[2] = 0.5
    assert p[2].item() == 0.5
    copied = pg.from_dlpack(tt, copy=True)
    copied[1] = -1.0
    assert tt[1].item() == 2.0


def test_numpy_scalars_on_the_left_give_tensors():
    """``np.float32(2) * t`` goes to the tensor's reflected operator (``__array_priority__``, as
    torch): a Tensor with its autograd history, not an ndarray made through ``__array__``."""
    t = pg.tensor([1.0, 2.0], requires_grad=True)
    for r, name in ((np.float64(2) * t, "MulBackward0"), (np.float32(3) - t, "SubBackward0"),
                    (np.int64(1) + t, "AddBackward0"), (np.float32(1) / t, "DivBackward0")):
        assert isinstance(r, pg.Tensor) and r.grad_fn.name() == name
    (np.float32(3) - t).sum().backward()
    assert t.grad.tolist() == [-1.0, -1.0]
    with pytest.raises(TypeError):
        np.ones(2) * t  # as torch: an array on the left is neither converted nor broadcast
