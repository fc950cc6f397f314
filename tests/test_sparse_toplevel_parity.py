"""Top-level functions (``portagrad.sqrt(s)``, ``portagrad.cat([s, s])``, ``F.linear(x, s)`` ...)
on sparse COO tensors: PyTorch's results (values, dtype, coalesced state), its refusals of the
ops that would make the result dense (``NotImplementedError`` naming the op), and gradients
through the values; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg
import portagrad.nn.functional as F

NAN, INF = math.nan, math.inf


def sp(device: str, values=(3.0, -4.0, 5.0), dtype=None, requires_grad: bool = False):
    """The 2x3 sparse tensor [[0, 0, v0], [v1, 0, v2]] (uncoalesced, as PyTorch builds it)."""
    i = pg.tensor([[0, 1, 1], [2, 0, 2]], device=device)
    return pg.sparse_coo_tensor(i, pg.tensor(list(values), dtype=dtype, device=device), (2, 3),
                                requires_grad=requires_grad)


def check(r, indices, values, shape, coalesced, dtype=pg.float32) -> None:
    assert r.is_sparse
    assert tuple(r.shape) == shape
    assert r.dtype is dtype
    assert r.is_coalesced() is coalesced
    assert r._indices().tolist() == indices
    got = r._values().tolist()
    assert len(got) == len(values)
    for g, e in zip(got, values):
        assert (math.isnan(g) and math.isnan(e)) or g == pytest.approx(e, rel=1e-6), (got, values)


IDX = [[0, 1, 1], [2, 0, 2]]


# ----------------------------------------------------------------------------- unary
def test_zero_preserving_unary(device: str) -> None:
    s = sp(device)
    check(pg.sqrt(s), IDX, [1.7320507764816284, NAN, 2.2360680103302], (2, 3), True)
    check(pg.abs(s), IDX, [3.0, 4.0, 5.0], (2, 3), True)
    check(pg.relu(s), IDX, [3.0, 0.0, 5.0], (2, 3), True)
    check(pg.sign(s), IDX, [1.0, -1.0, 1.0], (2, 3), True)
    check(pg.floor(s), IDX, [3.0, -4.0, 5.0], (2, 3), True)
    check(pg.tanh(s), IDX, [0.9950547814369202, -0.9993293285369873, 0.9999092221260071],
          (2, 3), True)
    check(pg.sin(s), IDX, [0.14112000167369843, 0.756802499294281, -0.9589242935180664],
          (2, 3), True)
    check(pg.log1p(s), IDX, [1.3862943649291992, NAN, 1.7917594909667969], (2, 3), True)
    check(pg.asinh(s), IDX, [1.8184465169906616, -2.094712495803833, 2.3124382495880127],
          (2, 3), True)
    check(pg.deg2rad(s), IDX, [0.05235987901687622, -0.06981316953897476, 0.0872664600610733],
          (2, 3), True)
    # neg is linear: the duplicates need no summing, the coalesced state is kept
    check(pg.neg(s), IDX, [-3.0, 4.0, -5.0], (2, 3), False)
    check(pg.neg(s.coalesce()), IDX, [-3.0, 4.0, -5.0], (2, 3), True)


def test_unary_sums_duplicates_first(device: str) -> None:
    # one position stored twice (1 + 3): sqrt(4), not sqrt(1) + sqrt(3)
    s = pg.sparse_coo_tensor(pg.tensor([[0, 0]], device=device),
                             pg.tensor([1.0, 3.0], device=device), (2,))
    check(pg.sqrt(s), [[0]], [2.0], (2,), True)


def test_unary_integer_values(device: str) -> None:
    s = sp(device, (3, -4, 5), pg.int64)
    check(pg.abs(s), IDX, [3, 4, 5], (2, 3), True, pg.int64)
    check(pg.sqrt(sp(device, (3, 4, 5), pg.int64)), IDX,
          [1.7320507764816284, 2.0, 2.2360680103302], (2, 3), True)
    check(pg.isnan(s), IDX, [False, False, False], (2, 3), True, pg.bool)


def test_isnan_and_nan_to_num(device: str) -> None:
    s = sp(device, (NAN, INF, -2.0))
    check(pg.isnan(s), IDX, [True, False, False], (2, 3), True, pg.bool)
    check(pg.isinf(s), IDX, [False, True, False], (2, 3), True, pg.bool)
    check(pg.nan_to_num(s, 1.0, 9.0), IDX, [1.0, 9.0, -2.0], (2, 3), True)
    check(pg.signbit(sp(device)), IDX, [False, True, False], (2, 3), True, pg.bool)


@pytest.mark.parametrize("name", ["exp", "cos", "sigmoid", "log", "reciprocal", "rsqrt"])
def test_unary_not_zero_preserving_refused(device: str, name: str) -> None:
    with pytest.raises(NotImplementedError, match=f"{name} is not supported for tensors with "
                                                  f"layout=portagrad.sparse_coo"):
        getattr(pg, name)(sp(device))


def test_inplace_functions(device: str) -> None:
    c = sp(device, (4.0, -9.0, 16.0)).coalesce()
    assert pg.sqrt_(c) is c
    check(c, IDX, [2.0, NAN, 4.0], (2, 3), True)
    s = sp(device)
    assert pg.neg_(s) is s  # linear: an uncoalesced tensor is fine
    check(s, IDX, [-3.0, 4.0, -5.0], (2, 3), False)
    with pytest.raises(RuntimeError, match="abs_ requires coalesced input"):
        pg.abs_(sp(device))
    with pytest.raises(NotImplementedError, match="exp_ is not supported"):
        pg.exp_(sp(device).coalesce())


# ----------------------------------------------------------------------------- binary
def test_add_sub(device: str) -> None:
    c = sp(device).coalesce()
    check(pg.add(c, c), IDX, [6.0, -8.0, 10.0], (2, 3), True)
    check(pg.add(c, c, alpha=2), IDX, [9.0, -12.0, 15.0], (2, 3), True)
    assert pg.add(sp(device), sp(device)).to_dense().tolist() == [[0.0, 0.0, 6.0],
                                                                  [-8.0, 0.0, 10.0]]
    assert pg.sub(sp(device), sp(device)).to_dense().tolist() == [[0.0] * 3] * 2
    d = pg.ones(2, 3, device=device)
    r = pg.add(d, sp(device))
    assert not r.is_sparse and r.tolist() == [[1.0, 1.0, 4.0], [-3.0, 1.0, 6.0]]
    assert pg.sub(d, sp(device)).tolist() == [[1.0, 1.0, -2.0], [5.0, 1.0, -4.0]]
    msg = r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\) instead."
    for other in (d, 1):
        with pytest.raises(RuntimeError, match=msg):
            pg.add(sp(device), other)
        with pytest.raises(RuntimeError, match=msg):
            pg.sub(sp(device), other)


def test_mul_div_pow(device: str) -> None:
    check(pg.mul(sp(device), 2), IDX, [6.0, -8.0, 10.0], (2, 3), False)
    check(pg.mul(2, sp(device)), IDX, [6.0, -8.0, 10.0], (2, 3), False)
    check(pg.mul(sp(device), pg.ones(2, 3, device=device)), IDX, [3.0, -4.0, 5.0], (2, 3), False)
    c = sp(device).coalesce()
    check(pg.mul(c, c), IDX, [9.0, 16.0, 25.0], (2, 3), True)
    check(pg.div(sp(device), 2), IDX, [1.5, -2.0, 2.5], (2, 3), False)
    check(pg.div(sp(device, (3, 4, 5), pg.int64), 2), IDX, [1.5, 2.0, 2.5], (2, 3), False)
    check(pg.div(sp(device), 2, rounding_mode="floor"), IDX, [1.0, -2.0, 2.0], (2, 3), True)
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim dense "
                       r"tensor divisor \(got shape \[2, 3\] for divisor\)"):
        pg.div(sp(device), sp(device))
    check(pg.pow(sp(device), 2), IDX, [9.0, 16.0, 25.0], (2, 3), True)
    check(pg.pow(sp(device), -1), IDX, [0.3333333432674408, -0.25, 0.20000000298023224], (2, 3),
          True)
    with pytest.raises(RuntimeError, match="pow: cannot raise to zeroth power on sparse tensor"):
        pg.pow(sp(device), 0)
    with pytest.raises(NotImplementedError, match="layout=portagrad.sparse_coo"):
        pg.pow(2, sp(device))
    check(pg.square(c), IDX, [9.0, 16.0, 25.0], (2, 3), True)
    sq = pg.square(sp(device, (3, 4, 5), pg.int64).coalesce())
    check(sq, IDX, [9, 16, 25], (2, 3), True, pg.int64)


def test_binary_ops_without_sparse_kernel_refused(device: str) -> None:
    for fn in (pg.maximum, pg.eq, pg.atan2):
        with pytest.raises(NotImplementedError, match="is not supported for tensors with "
                                                      "layout=portagrad.sparse_coo"):
            fn(sp(device), sp(device))
    # the dense errors stay as they were
    with pytest.raises(TypeError, match=r"add\(\): expected at least one Tensor operand"):
        pg.add(1, 2)
    with pytest.raises(TypeError, match=r"sqrt\(\): argument 'input' must be Tensor, not list"):
        pg.sqrt([1.0])


# ----------------------------------------------------------------------------- reductions
def test_sum(device: str) -> None:
    s = sp(device)
    r = pg.sum(s)
    assert not r.is_sparse and r.shape == () and r.item() == 4.0 and r.dtype is pg.float32
    assert pg.sum(s, dtype=pg.float64).dtype is pg.float64
    assert pg.sum(s, (0, 1)).item() == 4.0
    check(pg.sum(s, dim=0), [[0, 2]], [-4.0, 8.0], (3,), True)
    check(pg.sum(s, 1, keepdim=True), [[0, 1], [0, 0]], [3.0, 1.0], (2, 1), False)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 5\)"):
        pg.sum(s, 5)


def test_norm(device: str) -> None:
    s = sp(device)
    assert pg.norm(s).item() == pytest.approx(7.071067810058594)
    assert pg.norm(s, 1).item() == 12.0
    assert pg.norm(s, dim=(0, 1)).item() == pytest.approx(7.071067810058594)
    with pytest.raises(RuntimeError, match="norm_sparse currently only supports full "
                                           "reductions"):
        pg.norm(s, dim=0)


@pytest.mark.parametrize("call", [
    lambda s: pg.max(s), lambda s: pg.min(s), lambda s: pg.mean(s), lambda s: pg.amax(s),
    lambda s: pg.narrow(s, 1, 0, 2), lambda s: pg.squeeze(s), lambda s: pg.prod(s)],
    ids=["max", "min", "mean", "amax", "narrow", "squeeze", "prod"])
def test_unsupported_raise_not_implemented(device: str, call) -> None:
    with pytest.raises(NotImplementedError, match="is not supported for tensors with "
                                                  "layout=portagrad.sparse_coo"):
        call(sp(device))


def test_unsupported_names_the_function(device: str) -> None:
    with pytest.raises(NotImplementedError, match=r"^narrow is not supported"):
        pg.narrow(sp(device), 1, 0, 2)
    # code probing a dense tensor's internals still sees an AttributeError
    assert getattr(sp(device), "_storage", None) is None
    assert not hasattr(sp(device), "_v")


# ----------------------------------------------------------------------------- shape
def test_transpose_t_permute(device: str) -> None:
    for r in (pg.transpose(sp(device), 0, 1), pg.t(sp(device)), pg.permute(sp(device), (1, 0)),
              pg.transpose(sp(device).coalesce(), 0, 1)):
        check(r, [[2, 0, 2], [0, 1, 1]], [3.0, -4.0, 5.0], (3, 2), False)
    check(pg.permute(sp(device).coalesce(), (0, 1)), IDX, [3.0, -4.0, 5.0], (2, 3), True)


def test_unsqueeze(device: str) -> None:
    check(pg.unsqueeze(sp(device), 0), [[0, 0, 0], [0, 1, 1], [2, 0, 2]], [3.0, -4.0, 5.0],
          (1, 2, 3), False)
    check(pg.unsqueeze(sp(device).coalesce(), -1), [[0, 1, 1], [2, 0, 2], [0, 0, 0]],
          [3.0, -4.0, 5.0], (2, 3, 1), False)
    # after a dense dimension: a dense one
    h = pg.sparse_coo_tensor(pg.tensor([[0, 1, 0]], device=device),
                             pg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=device), (2, 2))
    r = pg.unsqueeze(h, 2)
    assert tuple(r.shape) == (2, 2, 1) and r.sparse_dim() == 1
    assert tuple(r._values().shape) == (3, 2, 1)


def test_clone(device: str) -> None:
    s = sp(device)
    r = pg.clone(s)
    check(r, IDX, [3.0, -4.0, 5.0], (2, 3), False)
    assert r._values() is not s._values()
    check(pg.clone(s.coalesce()), IDX, [3.0, -4.0, 5.0], (2, 3), True)


def test_cat_stack(device: str) -> None:
    check(pg.cat([sp(device), sp(device)]), [[0, 1, 1, 2, 3, 3], [2, 0, 2, 2, 0, 2]],
          [3.0, -4.0, 5.0] * 2, (4, 3), False)
    check(pg.cat([sp(device), sp(device).coalesce()], 1),
          [[0, 1, 1, 0, 1, 1], [2, 0, 2, 5, 3, 5]], [3.0, -4.0, 5.0] * 2, (2, 6), False)
    c = sp(device).coalesce()
    assert pg.cat([c, c.double()]).dtype is pg.float64
    check(pg.stack([sp(device), sp(device)]),
          [[0, 0, 0, 1, 1, 1], [0, 1, 1, 0, 1, 1], [2, 0, 2, 2, 0, 2]], [3.0, -4.0, 5.0] * 2,
          (2, 2, 3), False)
    check(pg.stack([sp(device), sp(device)], 1),
          [[0, 1, 1, 0, 1, 1], [0, 0, 0, 1, 1, 1], [2, 0, 2, 2, 0, 2]], [3.0, -4.0, 5.0] * 2,
          (2, 2, 3), False)
    msg = "Concatenating sparse tensors, but a dense tensor was found at position 1."
    with pytest.raises(RuntimeError, match=msg):
        pg.cat([sp(device), pg.zeros(2, 3, device=device)])
    with pytest.raises(RuntimeError, match=msg):
        pg.stack([sp(device), pg.zeros(2, 3, device=device)])


def test_index_select(device: str) -> None:
    idx = pg.tensor([0, 2], device=device)
    check(pg.index_select(sp(device), 1, idx), [[1, 0, 1], [0, 1, 1]], [-4.0, 3.0, 5.0], (2, 2),
          False)
    check(pg.index_select(sp(device).coalesce(), 0, pg.tensor([1, 1], device=device)),
          [[0, 0, 1, 1], [0, 2, 0, 2]], [-4.0, 5.0, -4.0, 5.0], (2, 3), False)
    check(pg.index_select(sp(device, (1.0, 2.0, 3.0)), 1, pg.tensor([-1], device=device)),
          [[0, 1], [0, 0]], [1.0, 3.0], (2, 1), False)
    with pytest.raises(IndexError, match=r"index_select\(\): index contains 3 that is out of "
                                         r"range for tensor of size \[2, 3\] at dimension 1"):
        pg.index_select(sp(device), 1, pg.tensor([3], device=device))


# ----------------------------------------------------------------------------- linear
def test_linear(device: str) -> None:
    r = F.linear(pg.ones(2, 3, device=device), sp(device))
    assert not r.is_sparse and r.tolist() == [[3.0, 1.0], [3.0, 1.0]]
    assert F.linear(pg.ones(3, device=device), sp(device)).tolist() == [3.0, 1.0]
    assert tuple(F.linear(pg.ones(4, 2, 3, device=device), sp(device)).shape) == (4, 2, 2)
    with pytest.raises(RuntimeError, match="addmm_sparse_dense: expected either 'mat1' to have "
                                           "sparse layout"):
        F.linear(pg.ones(2, 3, device=device), sp(device), pg.ones(2, device=device))


# ----------------------------------------------------------------------------- autograd
def _weighted_backward(r) -> None:
    d = r.to_dense() if r.is_sparse else r
    w = pg.arange(1.0, 1.0 + d.numel(), device=d.device).reshape(tuple(d.shape))
    (d * w).sum().backward()


@pytest.mark.parametrize("name,call,grad", [
    ("neg", pg.neg, [[0.0, 0.0, -3.0], [-4.0, 0.0, -6.0]]),
    ("abs", pg.abs, [[0.0, 0.0, 3.0], [4.0, 0.0, 6.0]]),
    ("mul", lambda s: pg.mul(s, 2), [[0.0, 0.0, 6.0], [8.0, 0.0, 12.0]]),
    ("pow", lambda s: pg.pow(s, 2), [[0.0, 0.0, 18.0], [32.0, 0.0, 60.0]]),
    ("div", lambda s: pg.div(s, 2), [[0.0, 0.0, 1.5], [2.0, 0.0, 3.0]]),
    ("t", pg.t, [[0.0, 0.0, 5.0], [2.0, 0.0, 6.0]]),
    ("add", lambda s: pg.add(s, s), [[0.0, 0.0, 6.0], [8.0, 0.0, 12.0]]),
    ("clone", pg.clone, [[0.0, 0.0, 3.0], [4.0, 0.0, 6.0]]),
])
def test_grad_through_values(device: str, name: str, call, grad) -> None:
    s = sp(device, (3.0, 4.0, 5.0), requires_grad=True)
    r = call(s)
    assert r.requires_grad
    _weighted_backward(r)
    assert s.grad.is_sparse
    assert s.grad.to_dense().tolist() == grad


def test_grad_of_sqrt_and_cat(device: str) -> None:
    s = sp(device, (4.0, 9.0, 16.0), requires_grad=True)
    pg.sqrt(s).to_dense().sum().backward()
    assert s.grad.to_dense().reshape(-1).tolist() == pytest.approx([0.0, 0.0, 0.25, 1 / 6,
                                                                    0.0, 0.125])
    s = sp(device, (3.0, 4.0, 5.0), requires_grad=True)
    _weighted_backward(pg.cat([s, s]))
    assert s.grad.to_dense().tolist() == [[0.0, 0.0, 12.0], [14.0, 0.0, 18.0]]


def test_linear_grad_is_dense(device: str) -> None:
    # as torch.mm's: the sparse weight's gradient is the full dense one
    s = sp(device, (3.0, 4.0, 5.0), requires_grad=True)
    _weighted_backward(F.linear(pg.ones(2, 3, device=device), s))
    assert not s.grad.is_sparse
    assert s.grad.tolist() == [[4.0, 4.0, 4.0], [6.0, 6.0, 6.0]]
