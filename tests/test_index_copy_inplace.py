"""``Tensor.index_copy_`` writes only the slices it copies when autograd does not record it (a KV
cache written one position per step), with the results, version bumps and autograd of the
general in-place path."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.capture._recorder import Recorder


def _expected(x: np.ndarray, dim: int, index: list[int], src: np.ndarray) -> np.ndarray:
    out = x.copy()
    sl = [slice(None)] * x.ndim
    for j, i in enumerate(index):
        sl[dim] = i
        out[tuple(sl)] = np.take(src, j, axis=dim)
    return out


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_direct_write_equals_expected(device: str, dim: int) -> None:
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((3, 4, 5)).astype(np.float32)
    index = [2, 0]
    shape = list(xn.shape)
    shape[dim] = len(index)
    sn = rng.standard_normal(shape).astype(np.float32)
    x = pg.tensor(xn, device=device)
    ver = x._version
    y = x.index_copy_(dim, pg.tensor(index, device=device), pg.tensor(sn, device=device))
    assert y is x and x._version == ver + 1
    np.testing.assert_array_equal(x.cpu().numpy(), _expected(xn, dim, index, sn))


def test_direct_write_copies_only_the_slices(device: str) -> None:
    """No launch touches all of the destination (the general path copies it twice)."""
    x = pg.zeros(2, 3, 16, 4, device=device)
    src = pg.ones(2, 3, 1, 4, device=device)
    pos = pg.tensor([5], device=device)
    with Recorder() as rec:
        x.index_copy_(2, pos, src)
    # only the scatter itself names x (as its destination); no copy in or out of it
    full = [la.name for la in rec.recording.launches
            if any(getattr(a, "shape", None) == tuple(x.shape) for a in la.args)]
    assert full == ["scatter"], [la.name for la in rec.recording.launches]
    got = x.cpu().numpy()
    assert got[:, :, 5].sum() == 24 and got.sum() == 24


def test_strided_destination_and_bad_input_take_the_general_path(device: str) -> None:
    xn = np.arange(40, dtype=np.float32).reshape(5, 8)
    x = pg.tensor(xn, device=device)
    view = x[:, ::2]  # not contiguous: written through the general path
    view.index_copy_(0, pg.tensor([4], device=device), pg.full((1, 4), -1.0, device=device))
    want = xn.copy()
    want[4, ::2] = -1
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    # torch's message, index_copy_'s name first (both the in-place and the out-of-place form)
    msg = r"^index_copy_\(\): index 9 is out of bounds for dimension 0 with size 5$"
    with pytest.raises(IndexError, match=msg):
        x.index_copy_(0, pg.tensor([9], device=device), pg.ones(1, 8, device=device))
    with pytest.raises(IndexError, match=msg):
        x.index_copy(0, pg.tensor([9], device=device), pg.ones(1, 8, device=device))



@pytest.mark.parametrize("contiguous", [True, False])
def test_bad_shapes_raise_before_any_write(device: str, contiguous: bool) -> None:
    """PyTorch's checks and messages, on both paths; the destination is left untouched (a
    source wider than the slices used to be written out of bounds on OpenCL)."""
    base = pg.zeros(4, 10, device=device)
    x = base[:, :5] if not contiguous else pg.zeros(4, 5, device=device)
    i2 = pg.tensor([0, 1], device=device)
    cases = [
        (i2, (2, 7), RuntimeError, r"must have same slice shapes\. Destination slice shape: 5 at "
         r"dimension 0 and source slice shape: 7 at dimension 0\."),
        (i2, (3, 5), IndexError, r"Number of indices \(2\) should be equal to source\.size\(dim\) "
         r"\(3\)"),
        (i2, (2, 5, 1), IndexError, r"their dimensionality must match\. Source dimensionality "
         r"\(3\), destination dimensionality \(2\)"),
        (i2.view(1, 2), (2, 5), IndexError, r"Index should have dimension 1 or 0 \(got 2\)"),
    ]
    for index, shape, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            x.index_copy_(0, index, pg.ones(shape, device=device))
    assert float(base.abs().sum()) == 0 and float(x.abs().sum()) == 0


def test_recorded_when_grad_is_needed(device: str) -> None:
    """With a source that requires grad the write is recorded: the gradient reaches it."""
    x = pg.zeros(4, 3, device=device)
    src = pg.ones(2, 3, device=device, requires_grad=True)
    x.index_copy_(0, pg.tensor([3, 1], device=device), src)
    assert x.requires_grad
    (x * pg.arange(4.0, device=device).view(4, 1)).sum().backward()
    np.testing.assert_array_equal(src.grad.cpu().numpy(), [[3.0] * 3, [1.0] * 3])


def test_gradcheck(device: str) -> None:
    """index_copy (and index_copy_ on a clone) in float64: gradients for input and source."""
    rng = np.random.default_rng(1)
    x = pg.tensor(rng.standard_normal((4, 3)), device=device, requires_grad=True)
    src = pg.tensor(rng.standard_normal((2, 3)), device=device, requires_grad=True)
    idx = pg.tensor([3, 0], device=device)
    assert pg.autograd.gradcheck(lambda a, b: a.index_copy(0, idx, b), (x, src))
    assert pg.autograd.gradcheck(lambda a, b: (a * 1).index_copy_(0, idx, b), (x, src))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_whole_slice_writes_by_one_index(device: str, dim: int) -> None:
    """An index that varies along ``dim`` only (what index_copy_ and index_fill_ build, or a
    user's ``expand``-ed index for scatter) writes whole slices by one 1-D index on the cpu
    device: non-contiguous destinations, a source larger than the index (scatter reads its
    head), repeated index values (each slice then holds one of the written values)."""
    rng = np.random.default_rng(dim)
    base = rng.standard_normal((4, 5, 6)).astype(np.float32)
    shape = list(base.shape)
    shape[dim] = 2
    idx1 = np.array([3, 1])
    idx = np.broadcast_to(idx1.reshape([-1 if k == dim else 1 for k in range(3)]), shape)
    src = rng.standard_normal([s + 1 for s in shape]).astype(np.float32)
    want = base.copy()
    np.put_along_axis(want, idx, src[tuple(slice(0, n) for n in shape)], dim)
    x = pg.tensor(base, device=device)
    got = x.scatter(dim, pg.tensor(idx1, device=device).view(
        [-1 if k == dim else 1 for k in range(3)]).expand(shape), pg.tensor(src, device=device))
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    # a transposed (non-contiguous) destination, index_fill_ through it
    t = pg.tensor(np.ascontiguousarray(base.transpose(2, 1, 0)), device=device).transpose(0, 2)
    t.index_fill_(dim, pg.tensor([1, 3, 1], device=device), 7.0)
    fill = base.copy()
    np.put_along_axis(fill, np.broadcast_to(np.array([1, 3]).reshape(
        [-1 if k == dim else 1 for k in range(3)]), [2 if k == dim else n for k, n in
                                                     enumerate(base.shape)]), 7.0, dim)
    np.testing.assert_array_equal(t.cpu().numpy(), fill)
