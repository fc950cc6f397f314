"""Products as PyTorch 2.13 checks and computes them: einsum's equation checks and its sublist
form, n-dimensional inner, and the messages of mm/matmul for mixed and bool dtypes (written
out)."""
from __future__ import annotations

import pytest

import portagrad as pg


def _ab(device: str) -> tuple[pg.Tensor, pg.Tensor]:
    return (pg.arange(6.0, device=device).reshape(2, 3),
            pg.arange(12.0, device=device).reshape(3, 4))


def test_einsum_sublist_form(device: str) -> None:
    a, b = _ab(device)
    want = pg.einsum("ij,jk->ik", a, b)
    assert pg.equal(pg.einsum(a, [0, 1], b, [1, 2], [0, 2]), want)
    assert pg.einsum(a, [0, 1], b, [1, 2]).tolist() == want.tolist()  # implicit output
    x = pg.ones(5, 2, 3, device=device)
    assert pg.einsum(x, [..., 0, 1], b, [1, 2], [..., 0, 2]).shape == (5, 2, 4)
    assert pg.einsum(a, [0, 1], [1]).tolist() == [3.0, 5.0, 7.0]


def test_einsum_equation_checks(device: str) -> None:
    a, b = _ab(device)
    with pytest.raises(RuntimeError, match=r"^einsum\(\): subscript j has size 2 for operand 1 "
                       r"which does not broadcast with previously seen size 3$"):
        pg.einsum("ij,jk->ik", a, a)
    with pytest.raises(RuntimeError, match=r"^einsum\(\): invalid subscript given at index 1 in "
                       r"the equation string, subscripts must be in \[a-zA-Z\]$"):
        pg.einsum("i1,1k->ik", a, b)
    with pytest.raises(RuntimeError, match=r"^einsum\(\): output subscript i appears more than "
                       r"once in the output$"):
        pg.einsum("ij->ii", a)
    # size-1 dimensions broadcast against the others, spaces are ignored
    assert pg.einsum("ij,ij->i", pg.ones(2, 1, device=device),
                     pg.ones(2, 3, device=device)).tolist() == [3.0, 3.0]
    assert pg.equal(pg.einsum(" i j , j k -> i k ", a, b), a @ b)


def test_inner_of_matrices(device: str) -> None:
    a, _ = _ab(device)
    assert pg.inner(a, a).tolist() == [[5.0, 14.0], [14.0, 50.0]]
    assert a.inner(pg.ones(5, 3, device=device)).shape == (2, 5)
    assert pg.inner(pg.tensor(2.0, device=device), a).tolist() == (2 * a).tolist()
    assert pg.inner(pg.ones(3, device=device), pg.ones(3, device=device)).item() == 3.0
    with pytest.raises(RuntimeError, match=r"^inner\(\) the last dimension must match on both "
                       r"input tensors but got shapes \[2, 3\] and \[2, 4\]$"):
        pg.inner(a, pg.ones(2, 4, device=device))
    x = a.clone().requires_grad_()
    pg.inner(x, pg.ones(4, 3, device=device)).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [[4.0] * 3, [4.0] * 3]


def test_product_dtype_messages(device: str) -> None:
    a, b = _ab(device)
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but got: "
                       r"float != long int$"):
        pg.mm(a, b.long())
    bools = pg.ones(2, 2, dtype=pg.bool, device=device)
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for "
                       "'Bool'"):
        pg.mm(bools, bools)
    with pytest.raises(NotImplementedError, match="\"bmm\" not implemented for 'Bool'"):
        pg.bmm(bools[None], bools[None])
    with pytest.raises(NotImplementedError, match="\"dot\" not implemented for 'Bool'"):
        pg.matmul(bools[0], bools[0])
