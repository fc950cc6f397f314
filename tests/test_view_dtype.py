"""``Tensor.view(dtype)`` with another element size: PyTorch's shapes, strides, offsets, values
and errors, and writes through the view reaching the original tensor, on every device."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg


def _cases(m):
    return [
        lambda x: x.view(m.uint8),  # smaller: the last dimension x4
        lambda x: x.view(m.float64),  # larger: the last dimension /2
        lambda x: x.view(m.int16)[:, 2:6].view(m.float32),  # an offset view back up
        lambda x: x[1:].view(m.float64),  # offset 4 elements: divisible
        lambda x: x.view(m.uint8).view(m.int32),
        lambda x: x.view(m.float16).view(m.float64),
    ]


def test_view_dtype_sizes_strides_offsets_values(device):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = pg.tensor(base, device=device)
    expect = [base.view(np.uint8), base.view(np.float64),
              base.view(np.int16)[:, 2:6].copy().view(np.float32), base[1:].view(np.float64),
              base.view(np.uint8).view(np.int32), base.view(np.float16).view(np.float64)]
    for case, ref in zip(_cases(pg), expect):
        y = case(x)
        assert tuple(y.shape) == ref.shape
        assert y.is_contiguous() or y.stride()[-1] == 1
        np.testing.assert_array_equal(y.cpu().numpy(), ref)
    y = x.view(pg.uint8)
    assert tuple(y.shape) == (3, 16) and y.stride() == (16, 1)
    z = x[1:].view(pg.float64)
    assert tuple(z.shape) == (2, 2) and z.stride() == (2, 1) and z.storage_offset() == 2


def test_view_dtype_matches_torch():
    torch = pytest.importorskip("torch")
    x, tx = pg.arange(36.0).reshape(3, 3, 4), torch.arange(36.0).reshape(3, 3, 4)
    for a_fn, b_fn in zip(_cases(pg), _cases(torch)):
        a, b = a_fn(x[1:]), b_fn(tx[1:])
        assert tuple(a.shape) == tuple(b.shape)
        assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_view_dtype_writes_reach_the_original(device):
    x = pg.zeros(2, 4, device=device)
    bytes_ = x.view(pg.uint8)
    bytes_[1, 4:8] = pg.tensor(np.frombuffer(np.float32(1.5).tobytes(), np.uint8), device=device)
    np.testing.assert_array_equal(x.cpu().numpy(), [[0, 0, 0, 0], [0, 1.5, 0, 0]])
    x.view(pg.float64)[0, 1] = 2.0
    np.testing.assert_array_equal(x[0].cpu().numpy().view(np.float64), [0.0, 2.0])


@pytest.mark.parametrize("make, dtype, message", [
    (lambda d: pg.tensor(1.0, device=d), pg.uint8,
     "self.dim() cannot be 0 to view Float as Byte (different element sizes)"),
    (lambda d: pg.zeros(3, 4, device=d).t(), pg.uint8,
     "self.stride(-1) must be 1 to view Float as Byte (different element sizes), but got 4"),
    (lambda d: pg.zeros(3, 4, device=d)[:, :3], pg.float64,
     "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 3"),
    (lambda d: pg.zeros(12, device=d)[1:9], pg.float64,
     "self.storage_offset() must be divisible by 2 to view Float as Double (different element "
     "sizes), but got 1"),
    (lambda d: pg.zeros(3, 6, device=d)[:, ::2], pg.uint8,
     "self.stride(-1) must be 1 to view Float as Byte (different element sizes), but got 2"),
    (lambda d: pg.zeros(3, 6, device=d).as_strided((2, 2), (3, 1)), pg.float64,
     "self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 3"),
])
def test_view_dtype_errors_are_torchs(device, make, dtype, message):
    with pytest.raises(RuntimeError) as info:
        make(device).view(dtype)
    assert str(info.value) == message
