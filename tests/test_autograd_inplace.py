"""Autograd and in-place ops: version counters, leaves, views (CopySlices), never a wrong gradient."""
from __future__ import annotations

import pytest

import portagrad as pg

from test_autograd_graph import close

VERSION_ERR = "modified by an inplace operation"


def test_inplace_in_graph_gradients(device):
    a = pg.tensor([1.0, 2.0, 3.0], dtype=pg.float64, device=device, requires_grad=True)
    b = a * 2
    b.add_(1)
    assert b.grad_fn.name() == "AddBackward0"
    assert b.grad_fn.next_functions[0][0].name() == "MulBackward0"  # no copy node in between
    b.mul_(b.detach() + 0)  # mul_ saves its operand, not the overwritten value
    b.sin_()  # needs the old value for its backward
    b.sum().backward()
    v = [2 * x + 1 for x in (1.0, 2.0, 3.0)]
    import math
    close(a.grad, [math.cos(t * t) * t * 2 for t in v], tol=1e-9)
    # b.mul_(b) saves b as the operand, which the op itself overwrites: torch raises too
    b = a * 2
    b.mul_(b)
    with pytest.raises(RuntimeError, match=VERSION_ERR + ".*at version 1; expected version 0"):
        b.sum().backward()


def test_inplace_on_constant_with_grad_operand(device):
    x = pg.ones(3, device=device)
    w = pg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True) * 2
    x.mul_(w)
    assert x.requires_grad and x.grad_fn.name() == "MulBackward0"
    x.sum().backward()  # the old x (ones) is kept for the gradient of w


def test_inplace_on_leaf_raises(device):
    x = pg.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[1:].mul_(2)
    with pg.no_grad():
        x.add_(1)  # fine without recording (an optimizer step)
    close(x.detach(), [2, 2, 2])


def test_saved_tensor_version_check(device):
    a = pg.ones(3, device=device, requires_grad=True)
    b = a * 2
    c = b * b
    assert b._version == 0
    b.add_(1)
    assert b._version == 1
    with pytest.raises(RuntimeError, match=VERSION_ERR + r".*\[.*3\]\].*is at version 1; expected "
                                           r"version 0 instead"):
        c.sum().backward()


def test_version_check_through_another_view(device):
    a = pg.ones(4, device=device, requires_grad=True)
    b = a * 2
    c = b.sigmoid()  # saves its output c
    d = b.sin()  # saves b
    v = b[1:3]
    v.mul_(3)  # changes b through a view
    with pytest.raises(RuntimeError, match=VERSION_ERR + ".*version 1; expected version 0"):
        d.sum().backward()
    e = c.detach()
    e.zero_()  # the detached alias shares the version counter
    with pytest.raises(RuntimeError, match=VERSION_ERR):
        c.sum().backward()


def test_inplace_on_view_copyslices(device):
    a = pg.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    w = pg.tensor([5.0, 7.0], device=device, requires_grad=True)
    b = a * 1
    v = b[1:3]
    v.mul_(w)
    assert b.grad_fn.name() == "CopySlices"
    close(b.detach(), [1, 10, 21, 4])
    (b * b).sum().backward()
    close(a.grad, [2, 20 * 5, 42 * 7, 8])
    close(w.grad, [20 * 2, 42 * 3])


def test_setitem_gradient(device):
    a = pg.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    b = a * 1
    b[0] = a[3] * 10
    b.sum().backward()
    close(a.grad, [0, 1, 1, 11])


def test_stale_view_follows_base(device):
    # a view taken before its base changed in place reads the new values: its gradient too
    a = pg.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    b = a * 1
    v = b[1:3]
    b.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * 1).sum().backward()
    close(a.grad, [0, 2, 2, 0])
    # a view of a constant whose base gains a history through another view
    base = pg.zeros(4, device=device)
    w = pg.tensor([2.0, 3.0], device=device, requires_grad=True)
    v1 = base[1:3]
    v2 = base[0:2]
    v1.add_(w)
    assert v2.requires_grad
    (v2 * pg.tensor([10.0, 100.0], device=device)).sum().backward()
    close(w.grad, [100, 0])


def test_no_grad_view_modified_with_grad_raises(device):
    a = pg.ones(3, device=device, requires_grad=True)
    b = a * 2
    with pg.no_grad():
        v = b[1:]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)


def test_inplace_view_gradcheck(device):
    def fn(x, w):
        y = x * 1
        y[1:3].mul_(w)
        y[0:2].add_(w.exp())
        return (y * y).sum(0)

    x = pg.tensor([[0.5, 1.0], [2.0, -1.0], [0.3, 0.7], [1.5, 2.5]], dtype=pg.float64,
                  device=device, requires_grad=True)
    w = pg.tensor([0.2, -0.4], dtype=pg.float64, device=device, requires_grad=True)
    assert pg.autograd.gradcheck(fn, (x, w))


def test_retain_grad_on_base_after_view_inplace(device):
    a = pg.ones(3, device=device, requires_grad=True)
    b = a * 2
    b.retain_grad()
    b[0:1].mul_(5)
    (b * 1).sum().backward()
    close(b.grad, [1, 1, 1])
    close(a.grad, [10, 2, 2])


def _view_case(case, a, w):
    b = a * 1
    if case == "view_of_transposed_view":
        v = b.t()[1]
        v.mul_(w)
        return b * b
    if case == "view_of_view":
        v = b[1:, ::2]
        v2 = v[0]
        v2.add_(w[:2].exp())
        return b.sin()[1:, ::2] * v + (v2 * 3).sum()
    if case == "stale_reshaped_view":
        v = b.view(12)
        b.mul_(w[0])
        return v[3:7] ** 2
    if case == "advanced_setitem":
        b[[0, 2]] = b[[0, 2]] * w[0]
        return b ** 3
    if case == "copy_into_row":
        x = b[0]
        x.copy_(w.sum().expand(4))
        return b * b
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["view_of_transposed_view", "view_of_view", "stale_reshaped_view",
                                  "advanced_setitem", "copy_into_row"])
def test_inplace_view_cases_gradcheck(device, case):
    # the same cases were compared by hand against torch 2.13 (same values)
    a = (pg.arange(12, dtype=pg.float64, device=device).reshape(3, 4) / 7 + 0.3).requires_grad_()
    w = pg.tensor([0.5, -1.5, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    assert pg.autograd.gradcheck(lambda a, w: _view_case(case, a, w), (a, w))
