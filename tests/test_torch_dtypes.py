"""PyTorch's rules for bool and wrong-dtype operands: which ops refuse them, with which error family
(NotImplementedError is a RuntimeError in PyTorch, so RuntimeError here), and which still compute.
Literal expectations, checked on every test device; no torch needed."""
from __future__ import annotations

import pytest

import portagrad as pg
import portagrad.nn.functional as F


def _b(device: str) -> pg.Tensor:
    return pg.tensor([True, False, True], device=device)


@pytest.mark.parametrize("op", [
    lambda b: b.abs(), lambda b: b.floor(), lambda b: b.ceil(), lambda b: b.round(),
    lambda b: b.trunc(), lambda b: pg.round(b, decimals=1),
], ids=["abs", "floor", "ceil", "round", "trunc", "round_decimals"])
def test_unary_refuses_bool(device: str, op) -> None:
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        op(_b(device))


@pytest.mark.parametrize("op,name", [
    (pg.remainder, "remainder"), (pg.fmod, "fmod"), (pg.floor_divide, "div_floor"), (pg.pow, "pow"),
])
def test_binary_refuses_two_bools(device: str, op, name: str) -> None:
    b = _b(device)
    pairs = ((b, b), (True, b)) if op is pg.pow else ((b, b), (b, True), (True, b))
    for x, y in pairs:  # never numpy's casting error from the backend (b ** True: see below)
        with pytest.raises(RuntimeError, match=f"{name}.*not implemented for 'Bool'"):
            op(x, y)


def test_bool_with_int_still_computes(device: str) -> None:
    b, i = _b(device), pg.tensor([1, 2, 3], device=device)
    assert pg.remainder(b, i).tolist() == [0, 0, 1]
    assert pg.floor_divide(b, i).tolist() == [1, 0, 0]
    assert pg.pow(b, i).tolist() == [1, 0, 1] and pg.pow(b, i).dtype is pg.int64
    assert (b ** 2).tolist() == [1, 0, 1]
    assert (b ** True).tolist() == [True, False, True] and (b ** True).dtype is pg.bool
    assert (b ** False).tolist() == [True, True, True] and (b ** False).dtype is pg.bool
    with pytest.raises(RuntimeError, match="div_trunc"):
        pg.div(b, b, rounding_mode="trunc")


def test_sub_refuses_bool(device: str) -> None:
    b, f = _b(device), pg.tensor([1.0, 2.0, 3.0], device=device)
    for x, y in ((b, b), (b, True)):
        with pytest.raises(RuntimeError, match="two bool tensors is not supported"):
            x - y
    for x, y in ((b, f), (f, b), (b, 1), (f, True)):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
            pg.sub(x, y)
    with pytest.raises(RuntimeError, match="Subtraction"):
        pg.rsub(f, b)
    assert (b + b).tolist() == [True, False, True]  # addition stays allowed


def test_topk_refuses_bool(device: str) -> None:
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        _b(device).topk(1)
    with pytest.raises(RuntimeError, match="selected index k out of range"):  # k checked first
        _b(device).topk(9)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_dtypes(device: str, fn) -> None:
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        fn(_b(device), 0)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        fn(pg.tensor([1, 2], device=device), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):  # the dim is checked first
        fn(pg.tensor([1, 2], device=device), 5)
    e = fn(pg.zeros(0, 3, dtype=pg.int64, device=device), 0)  # empty: returned, any dtype
    assert e.dtype is pg.int64 and tuple(e.shape) == (0, 3)
    assert fn(_b(device), 0, dtype=pg.float32).dtype is pg.float32


def test_where_needs_bool_condition(device: str) -> None:
    f = pg.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="boolean tensor, but got a tensor with dtype Long"):
        pg.where(pg.tensor([1, 0], device=device), f, f)
    with pytest.raises(RuntimeError, match="dtype Float"):
        pg.where(f, f, 0.0)
    assert pg.where(f > 1.5, f, 0.0).tolist() == [0.0, 2.0]


def test_binary_cross_entropy_dtypes(device: str) -> None:
    x = pg.tensor([0.25, 0.75], device=device)
    for t, name in ((pg.tensor([1, 0], device=device), "Long"),
                    (pg.tensor([1.0, 0.0], dtype=pg.float64, device=device), "Double"),
                    (pg.tensor([True, False], device=device), "Bool")):
        with pytest.raises(RuntimeError, match=f"Found dtype {name} but expected Float"):
            F.binary_cross_entropy(x, t)
    i = pg.tensor([1, 0], device=device)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.binary_cross_entropy(i, i)


def test_mse_and_l1_loss_dtypes(device: str) -> None:
    i, b = pg.tensor([1, 2], device=device), pg.tensor([True, False], device=device)
    f = pg.tensor([1.0, 0.5], device=device)
    with pytest.raises(RuntimeError, match="mse_cpu.*'Long'"):
        F.mse_loss(i, i, reduction="none")
    with pytest.raises(RuntimeError, match="mse_cpu.*'Bool'"):
        F.mse_loss(b, b)
    assert F.mse_loss(b, f).item() == pytest.approx(0.125)  # promoted to float: computed
    assert F.mse_loss(f, i).dtype is pg.float32
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        F.l1_loss(f, b)  # PyTorch's l1_loss subtracts
    assert F.l1_loss(i, i, reduction="none").tolist() == [0, 0]


@pytest.mark.parametrize("op", [pg.bitwise_and, pg.bitwise_or, pg.bitwise_xor])
def test_bitwise_on_floats_is_runtime_error(device: str, op) -> None:
    f = pg.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        op(f, f)
    with pytest.raises(RuntimeError, match="not implemented for 'Double'"):
        op(f.double(), 1)
    assert op(pg.tensor([3, 5], device=device), 6).dtype is pg.int64


def test_index_dtype_errors(device: str) -> None:
    x = pg.tensor([1.0, 2.0, 3.0], device=device)
    for idx in (pg.tensor([0.0, 1.0], device=device), pg.tensor([True, False], device=device)):
        with pytest.raises(RuntimeError, match=r"index_select\(\): Expected dtype int32 or int64"):
            pg.index_select(x, 0, idx)
        with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64"):
            pg.gather(x, 0, idx)
    with pytest.raises(IndexError, match="Dimension out of range"):  # the dim is checked first
        pg.index_select(x, 5, pg.tensor([0.0], device=device))
    with pytest.raises(IndexError, match="supposed to be a vector"):
        pg.index_select(x, 0, pg.ones(2, 2, device=device))
    i32 = pg.tensor([2, 0], dtype=pg.int32, device=device)
    assert pg.index_select(x, 0, i32).tolist() == [3.0, 1.0]
    assert pg.gather(x, 0, i32).tolist() == [3.0, 1.0]
