"""Shape ops and in-place overwrites as PyTorch 2.13 has them: ``tensor_split``'s index forms,
``roll``/``flip``/``squeeze`` argument errors, and the zero gradient a fully overwritten tensor's
history receives. Expected values are PyTorch's, written out."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg


def _parts(parts: tuple) -> list:
    return [p.tolist() for p in parts]


@pytest.mark.parametrize("arg, expected", [
    ([-2, 10], [[0, 1, 2, 3, 4], [5, 6], []]),  # negative: counted from the end
    ([-10, 3], [[], [0, 1, 2], [3, 4, 5, 6]]),  # clamped to 0
    ([5, 2], [[0, 1, 2, 3, 4], [], [2, 3, 4, 5, 6]]),  # an end before its start: empty
    (3, [[0, 1, 2], [3, 4], [5, 6]]),
])
def test_tensor_split_indices_as_python_slices(arg, expected, device: str) -> None:
    x = pg.arange(7, device=device)
    assert _parts(x.tensor_split(arg)) == expected
    assert _parts(pg.tensor_split(x, arg)) == expected


def test_tensor_split_tensor_and_keyword_forms(device: str) -> None:
    x = pg.arange(7, device=device)
    assert _parts(x.tensor_split(pg.tensor([-2, 3]))) == [[0, 1, 2, 3, 4], [], [3, 4, 5, 6]]
    assert _parts(x.tensor_split(pg.tensor(3))) == [[0, 1, 2], [3, 4], [5, 6]]  # 0-d: sections
    assert _parts(x.tensor_split(pg.tensor([3]))) == [[0, 1, 2], [3, 4, 5, 6]]
    assert _parts(pg.tensor_split(x, sections=2)) == [[0, 1, 2, 3], [4, 5, 6]]
    assert _parts(x.tensor_split(indices=[1])) == [[0], [1, 2, 3, 4, 5, 6]]
    assert _parts(x.tensor_split(tensor_indices_or_sections=pg.tensor([2]))) == \
        [[0, 1], [2, 3, 4, 5, 6]]
    with pytest.raises(RuntimeError, match="to have dtype of long, but got Float"):
        x.tensor_split(pg.tensor([1.5]))
    with pytest.raises(RuntimeError, match="zero-dimensional or one-dimensional tensor, but got "
                                           "a tensor with 2 dims"):
        x.tensor_split(pg.tensor([[1]]))
    with pytest.raises(TypeError):
        x.tensor_split(2.0)


@pytest.mark.parametrize("call, msg", [
    (lambda x: x.roll((1, 2), (0,)), "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda x: x.roll((1,), (0, 1)), "shifts and dimensions must align. shifts: 1, dims:2"),
    (lambda x: x.roll(1, (0, 1)), "shifts and dimensions must align. shifts: 1, dims:2"),
    (lambda x: x.roll((1, 2)), "shifts and dimensions must align. shifts: 2, dims:0"),
    (lambda x: x.roll((), ()), "`shifts` required"),
    (lambda x: x.flip((0, 0)), "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.flip((1, -1)), "dim 1 appears multiple times in the list of dims"),
    (lambda x: x.reshape(1, 2, 3).squeeze((0, -3)),
     "dim 0 appears multiple times in the list of dims"),
    (lambda x: x.sum((0, 0)), "dim 0 appears multiple times in the list of dims"),
])
def test_dims_errors(call, msg: str, device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    with pytest.raises(RuntimeError) as info:
        call(x)
    assert str(info.value) == msg


def test_roll_twice_along_one_dim(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    assert x.roll([1, 1], [0, -2]).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x.roll([1], [0]).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]


@pytest.mark.parametrize("overwrite", ["zero_", "fill_", "fill_tensor", "copy_", "copy_const"])
def test_overwritten_history_gets_zero_grad(overwrite: str, device: str) -> None:
    """PyTorch gives the history of a fully overwritten tensor ``zeros_like(grad)``
    (``ZeroBackward0``/``FillBackward``/``CopyBackwards``): ``x.grad`` is zeros, not None, and
    ``autograd.grad`` finds ``x`` used."""
    x = pg.tensor([1.0, 2.0], requires_grad=True, device=device)
    z = pg.tensor([3.0, 4.0], requires_grad=True, device=device)
    y = x * 2
    if overwrite == "zero_":
        y.zero_()
    elif overwrite == "fill_":
        y.fill_(3.0)
    elif overwrite == "fill_tensor":
        y.fill_(pg.tensor(3.0, device=device))
    elif overwrite == "copy_":
        y.copy_(z)
    else:
        y.copy_(z.detach())
    (gx,) = pg.autograd.grad(y.sum(), x, retain_graph=True)
    assert gx.tolist() == [0.0, 0.0]
    y.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [0.0, 0.0]
    if overwrite == "copy_":
        assert z.grad is not None and z.grad.tolist() == [1.0, 1.0]


def test_copy_into_a_view_of_a_graph_tensor(device: str) -> None:
    x = pg.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    z = pg.tensor([5.0, 6.0], requires_grad=True, device=device)
    y = x * 2
    y[1:].copy_(z * 3)
    (y * pg.tensor([1.0, 10.0, 100.0], device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(z.grad.cpu().numpy(), [30.0, 300.0])


@pytest.mark.parametrize("call", [
    lambda x, d: x.__setitem__(pg.tensor([1], device=d), pg.tensor([5], device=d)),
    lambda x, d: x.__setitem__(pg.tensor([1], device=d), pg.tensor(5, device=d)),
    lambda x, d: x.__setitem__([0, 1], pg.tensor([5.0, 6.0], dtype=pg.float64, device=d)),
    lambda x, d: x.__setitem__(pg.tensor([True, False, True], device=d),
                               pg.tensor([5, 6], device=d)),
    lambda x, d: x.index_put_((pg.tensor([1], device=d),), pg.tensor([5], device=d)),
    lambda x, d: x.index_put_((pg.tensor([1], device=d),),
                              pg.tensor([5.0], dtype=pg.float64, device=d), accumulate=True),
])
def test_index_put_requires_matching_dtypes(call, device: str) -> None:
    """PyTorch's index_put_ (advanced-key assignment) takes a source of the destination's dtype
    only (the value was cast)."""
    x = pg.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes "
                                           "match, got Float for the destination and "):
        call(x, device)
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_assignments_that_cast_as_pytorch(device: str) -> None:
    """A basic key copies with a cast, a lone mask writes a one-element value as a number, and a
    Python number converts: each as PyTorch."""
    x = pg.zeros(3, device=device)
    x[0:2] = pg.tensor([5, 6], device=device)
    x[pg.tensor([False, False, True], device=device)] = pg.tensor(7, device=device)
    assert x.tolist() == [5.0, 6.0, 7.0]
    x[pg.tensor([True, False, False], device=device)] = pg.tensor([8], device=device)
    x[pg.tensor([1], device=device)] = 9
    assert x.tolist() == [8.0, 9.0, 7.0]


# ------------------------------------------------------ call forms and checks (PyTorch 2.13)
def test_flip_varargs_and_shape_op_checks(device: str) -> None:
    x = pg.arange(24.0, device=device).reshape(2, 3, 4)
    assert pg.equal(x.flip(0, 2), x.flip((0, 2)))
    assert x.flip(0, 2)[0, 0, 0].item() == 15.0  # x[1, 0, 3]
    with pytest.raises(RuntimeError, match=r"^as_strided: Negative strides are not supported at "
                       r"the moment, got strides: \[-1\]$"):
        pg.as_strided(x, (2,), (-1,))
    with pytest.raises(RuntimeError, match=r"^tensor.mT is only supported on matrices or "
                       r"batches of matrices. Got 1-D tensor.$"):
        pg.ones(2, device=device).mT  # noqa: B018
    with pytest.raises(RuntimeError, match=r"^movedim: repeated dim in `source` \(\[0, 0\]\)$"):
        x.movedim((0, 0), (1, 2))
    with pytest.raises(RuntimeError, match=r"should contain the same number of dims as "
                       r"destination \(\[1\] dims\)$"):
        x.movedim((0, 1), (1,))
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(-1\) isn't allowed "
                       r"in a leading, non-existing dimension 0$"):
        x.expand(-1, 2, 3, 4)
    with pytest.raises(RuntimeError, match=r"^cannot reshape tensor of 0 elements into shape "
                       r"\[-1, 0\] because the unspecified dimension size -1 can be any value and "
                       r"is ambiguous$"):
        pg.ones(0, 3, device=device).reshape(-1, 0)
    with pytest.raises(IndexError, match=r"start out of range"):
        x.narrow(2, -5, 1)
    assert x.narrow(2, 4, 0).shape == (2, 3, 0)
