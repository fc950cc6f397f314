"""Sparse COO tensors as PyTorch 2.13 has them: ``sparse_coo_tensor``'s checks and inference,
conversions, sparse + / - / * sparse, ``sparse.sum``, products (sparse @ sparse, the errors, the
gradient a sparse leaf gets from ``sparse.mm`` and from ``torch.mm``), ``sparse.softmax`` of hybrid
tensors, ``Embedding(sparse=True)`` gradients, optimizers given an assigned sparse ``.grad``, and
the printed form; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import pytest

import portagrad as pg

I2 = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
V2 = [1., 2., 3., 4.]


def _s(device: str, dtype=None) -> pg.sparse.SparseCooTensor:
    return pg.sparse_coo_tensor(I2, V2, (2, 3), dtype=dtype, device=device)


def _flat(x) -> list:
    return [v for row in x for v in _flat(row)] if isinstance(x, list) else [x]


def _close(got: list, want: list, abs: float = 1e-6) -> bool:
    """Nested lists equal within float32 rounding."""
    return _flat(got) == pytest.approx(_flat(want), abs=abs)


def _parts(s) -> tuple:
    return s._indices().tolist(), s._values().tolist(), s.is_coalesced()


# ------------------------------------------------------------------------------- construction
def test_indices_of_any_real_dtype_become_int64(device: str) -> None:
    s = pg.sparse_coo_tensor(pg.tensor([[0.7, 1.9]], device=device),
                             pg.tensor([1., 2.], device=device))
    assert s._indices().dtype is pg.int64
    assert s._indices().tolist() == [[0, 1]] and tuple(s.shape) == (2,)
    b = pg.sparse_coo_tensor(pg.tensor([[True, False]], device=device),
                             pg.tensor([1., 2.], device=device))
    assert b.to_dense().tolist() == [2., 1.]


def test_zero_sparse_dims_and_0d_values(device: str) -> None:
    s = pg.sparse_coo_tensor(pg.zeros((0, 2), dtype=pg.int64, device=device),
                             pg.tensor([[1., 2.], [3., 4.]], device=device), (2,))
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (0, 1, 2)
    assert s.to_dense().tolist() == [4., 6.]
    c = s.coalesce()
    assert c._values().tolist() == [[4., 6.]] and list(c._indices().shape) == [0, 1]
    one = pg.sparse_coo_tensor([[0]], pg.tensor(1., device=device), (3,))
    assert one._values().tolist() == [1.] and one.to_dense().tolist() == [1., 0., 0.]


def test_is_coalesced_flag(device: str) -> None:
    assert pg.sparse_coo_tensor([[1]], [1.], device=device).is_coalesced() is True
    assert pg.sparse_coo_tensor([[1]], [1.], is_coalesced=False, device=device).is_coalesced() is False
    assert pg.sparse_coo_tensor([[1, 0]], [1., 2.], is_coalesced=True,
                                device=device).is_coalesced() is True  # not checked by default
    with pytest.raises(RuntimeError, match="cannot set is_coalesced to true if indices "
                       "correspond to uncoalesced COO tensor"):
        pg.sparse_coo_tensor([[1, 1]], [1., 2.], (3,), check_invariants=True, is_coalesced=True,
                             device=device)


def test_constructor_errors(device: str) -> None:
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        pg.sparse_coo_tensor([[0, -1]], [1., 2.], (3,), check_invariants=True, device=device)
    with pytest.raises(RuntimeError, match=r"'len\(size\) == sparse_dim \+ dense_dim' is not "
                       r"satisfied: len\(size\) = 3, sparse_dim = 2, dense_dim = 0"):
        pg.sparse_coo_tensor(I2, V2, (2, 3, 4), device=device)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size "
                       "is 3 but found index 3"):
        pg.sparse_coo_tensor([[1, 3]], [1., 2.], (3,), check_invariants=True, device=device)


# ------------------------------------------------------------------------------- conversions
def test_conversion_errors(device: str) -> None:
    with pytest.raises(RuntimeError, match="dtype argument is not supported by sparse_to_dense"):
        _s(device).to_dense(pg.float64)
    x = pg.tensor([[0., 1.], [0., 0.], [2., 0.]], device=device)
    with pytest.raises(RuntimeError, match=r"dense_to_sparse: sparse_dim argument must be in "
                       r">0 when self.dim\(\)>0"):
        x.to_sparse(0)
    with pytest.raises(RuntimeError, match=r"sparse_dim argument must be in \[0,2\] range, but "
                       r"3 is given"):
        x.to_sparse(3)
    with pytest.raises(RuntimeError, match=r"sparse_dim argument must be in \[0,2\] range, but "
                       r"-1 is given"):
        x.to_sparse(-1)
    with pytest.raises(RuntimeError, match=r"conversion from Sparse to Sparse with sparse_dim "
                       r"argument !=self.sparse_dim\(\) is not supported"):
        x.to_sparse().to_sparse(1)
    assert x.to_sparse().to_sparse(2)._nnz() == 2


# ------------------------------------------------------------------------------- add / sub
def test_add_of_coalesced_tensors_is_their_coalesced_union(device: str) -> None:
    a = pg.sparse_coo_tensor([[0, 1]], [1., 2.], (3,), device=device).coalesce()
    b = pg.sparse_coo_tensor([[2, 0]], [10., 20.], (3,), device=device).coalesce()
    assert _parts(a + b) == ([[0, 1, 2]], [21., 2., 10.], True)
    c = _s(device).coalesce()
    assert _parts(c + c) == ([[0, 1, 1], [2, 0, 2]], [10., 4., 6.], True)


def test_add_dtypes_alpha_and_sub(device: str) -> None:
    r = _s(device) + _s(device, pg.float64)
    assert r.dtype is pg.float64
    assert (_s(device, pg.int64) + _s(device)).dtype is pg.float32
    assert (_s(device, pg.int32) + _s(device, pg.int64)).dtype is pg.int64
    assert _s(device).add(_s(device), alpha=2).to_dense().tolist() == [[0., 0., 15.], [6., 0., 9.]]
    assert (_s(device) - _s(device)).to_dense().tolist() == [[0.] * 3, [0.] * 3]
    assert _s(device).sub(_s(device) * 2).to_dense().tolist() == [[0., 0., -5.], [-2., 0., -3.]]


def test_add_errors(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"add: expected sizes of 'self' and 'other' to match, "
                       r"but \[2, 3\] != \[3\]"):
        _s(device) + pg.sparse_coo_tensor([[0]], [1.], (3,), device=device)
    hybrid = pg.sparse_coo_tensor([[0, 2]], [[1., 2.], [3., 4.]], (3, 2), device=device)
    with pytest.raises(RuntimeError, match="add: expected 'self' and 'other' to have same "
                       "density, but 'self' has 1 sparse dimensions while 'other' has 2 sparse "
                       "dimensions"):
        hybrid + pg.sparse_coo_tensor([[2, 0], [0, 1]], [5., 6.], (3, 2), device=device)
    with pytest.raises(RuntimeError, match=r"add: expected 'self' and 'other' to have same size, "
                       r"but self has size \[3\] while other has size \[2, 3\] \(FYI: "
                       r"dense-sparse addition does not currently support broadcasting\)"):
        pg.tensor([1., 2., 3.], device=device) + _s(device)
    d = pg.tensor([[1., 2., 3.], [4., 5., 6.]], device=device)
    assert (d + _s(device)).tolist() == [[1., 2., 8.], [6., 5., 9.]]


# ------------------------------------------------------------------------------- mul
def test_mul_sparse_sparse(device: str) -> None:
    def sp(i, v):
        return pg.sparse_coo_tensor(i, v, (3,), device=device)
    a, b = sp([[0, 1]], [1., 2.]), sp([[2, 0]], [10., 20.])
    u, u2 = sp([[1, 0, 1]], [1., 2., 3.]), sp([[2, 0, 2]], [10., 20., 30.])
    assert _parts(a.coalesce() * b.coalesce()) == ([[0]], [20.], True)  # the intersection
    assert _parts(u * u2) == ([[2, 0, 2]], [0., 40., 0.], False)
    assert _parts(u * a) == ([[0, 1]], [2., 8.], False)
    assert _parts(a * u) == ([[0, 1]], [2., 8.], False)
    assert _parts(a.coalesce() * u) == ([[1, 0, 1]], [2., 2., 6.], False)
    assert _parts(u * b.coalesce()) == ([[1, 0, 1]], [0., 40., 0.], False)
    assert _parts(u * u) == ([[1, 0, 1]], [4., 4., 12.], False)
    assert (a.coalesce() * b.coalesce().double()).dtype is pg.float64
    hy = (pg.sparse_coo_tensor([[0, 2]], [[1., 2.], [3., 4.]], (3, 2), device=device).coalesce()
          * pg.sparse_coo_tensor([[2]], [[5., 6.]], (3, 2), device=device).coalesce())
    assert _parts(hy) == ([[2]], [[15., 24.]], True)
    with pytest.raises(RuntimeError, match="expects sparse inputs with equal dimensionality"):
        a * pg.sparse_coo_tensor([[0]], [1.], (4,), device=device)


# ------------------------------------------------------------------------------- sparse.sum
def test_sparse_sum_checks(device: str) -> None:
    b = pg.sparse.sum(_s(device, pg.bool))  # duplicates of a bool tensor count once
    assert b.dtype is pg.int64 and b.item() == 3
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        pg.sparse.sum(_s(device), (0, -2))
    dense = pg.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="coalesce expected sparse coordinate tensor layout "
                       "but got Strided"):
        pg.sparse.sum(dense)
    with pytest.raises(NotImplementedError):
        pg.sparse.sum(dense, 0)


# ------------------------------------------------------------------------------- products
def test_sparse_sparse_mm(device: str) -> None:
    s = _s(device)
    r = pg.sparse.mm(s, s.t())
    assert _parts(r) == ([[0, 0, 1, 1], [0, 1, 0, 1]], [25., 15., 15., 13.], True)
    assert (s @ s.t()).to_dense().tolist() == [[25., 15.], [15., 13.]]


def test_mm_checks(device: str) -> None:
    s = _s(device)
    with pytest.raises(RuntimeError, match="addmm: Argument #3 \\(dense\\): Expected dim 0 size "
                       "3, got 2"):
        pg.mm(s, pg.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match="addmm: matrices expected, got 3D tensor"):
        pg.mm(s, pg.ones(3, 2, 2, device=device))
    with pytest.raises(RuntimeError, match="addmm: matrices expected, got 1D tensor"):
        pg.mm(pg.sparse_coo_tensor([[0, 2]], [[1., 2.], [3., 4.]], (3, 2), device=device),
              pg.ones(2, 2, device=device))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-1, 0\], but got 1\)"):
        pg.sparse.mm(s, pg.ones(3, device=device))
    assert (s @ pg.tensor([1., 2., 3.], device=device)).tolist() == [15., 11.]


def test_leaf_gradients_of_products(device: str) -> None:
    d_data = [[1., 2.], [3., 4.], [5., 6.]]
    w = pg.tensor([[1., -1.], [2., 0.5]], device=device)
    # sparse.mm: a sparse gradient at the (coalesced) positions, even of an uncoalesced leaf
    s = _s(device).requires_grad_()
    d = pg.tensor(d_data, device=device, requires_grad=True)
    (pg.sparse.mm(s, d) * w).sum().backward()
    assert s.grad.is_sparse and s.grad._indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert s.grad.to_dense().tolist() == [[0., 0., -1.], [3., 0., 13.]]
    assert d.grad.tolist() == [[4., 1.], [0., 0.], [11., -3.5]]
    # torch.mm, matmul, addmm, spmm: the full dense gradient
    for op in (pg.mm, pg.matmul, pg.spmm, lambda a, b: pg.addmm(pg.ones(2, 2, device=device), a, b)):
        s = _s(device).requires_grad_()
        d = pg.tensor(d_data, device=device, requires_grad=True)
        (op(s, d) * w).sum().backward()
        assert not s.grad.is_sparse
        assert s.grad.tolist() == [[-1., -1., -1.], [3., 8., 13.]]
        assert d.grad.tolist() == [[4., 1.], [0., 0.], [11., -3.5]]


def test_values_gradient_of_a_non_leaf(device: str) -> None:
    v = pg.tensor(V2, device=device, requires_grad=True)
    s = pg.sparse_coo_tensor(I2, v, (2, 3))
    assert not s.is_leaf and s.grad is None
    (pg.mm(s, pg.tensor([[1., 2.], [3., 4.], [5., 6.]], device=device)) ** 2).sum().backward()
    assert v.grad.tolist() == [610., 122., 434., 610.]


# ------------------------------------------------------------------------------- softmax
def test_softmax_of_hybrid_tensors(device: str) -> None:
    h = pg.sparse_coo_tensor([[0, 2]], [[1., 2.], [3., 4.]], (3, 2), device=device)
    r0 = pg.sparse.softmax(h, 0)
    assert _close(r0._values().tolist(), [[0.11920292, 0.11920292], [0.88079709, 0.88079709]])
    r1 = pg.sparse.softmax(h, 1)
    assert _close(r1._values().tolist(), [[0.26894143, 0.7310586]] * 2)
    lr = pg.sparse.log_softmax(h, 0)
    assert _close(lr._values().tolist(), [[-2.126928, -2.126928], [-0.126928, -0.126928]], 1e-5)


def test_softmax_errors(device: str) -> None:
    with pytest.raises(NotImplementedError, match="\"softmax\" not implemented for 'Long'"):
        pg.sparse.softmax(_s(device, pg.int64), 1)
    with pytest.raises(NotImplementedError):
        pg.sparse.softmax(pg.ones(2, 2, device=device), 1)


# ------------------------------------------------------------------------------- embedding
def test_embedding_gradient_flags_and_dense_accumulation(device: str) -> None:
    w = pg.ones(5, 2, device=device, requires_grad=True)
    pg.nn.functional.embedding(pg.tensor(2, device=device), w, sparse=True).sum().backward()
    assert w.grad.is_coalesced() is True  # a single entry
    pg.nn.functional.embedding(pg.tensor([1, 1], device=device), w, sparse=True).sum().backward()
    assert w.grad.is_coalesced() is False
    w = pg.ones(3, 2, device=device, requires_grad=True)
    pg.nn.functional.embedding(pg.tensor([1], device=device), w, sparse=True).sum().backward()
    (w * 2).sum().backward()  # a dense gradient into the sparse .grad: dense
    assert not w.grad.is_sparse
    assert w.grad.tolist() == [[2., 2.], [3., 3.], [2., 2.]]


# ------------------------------------------------------------------------------- optimizers
def _step_twice(device: str, name: str, hybrid: bool, **kw) -> list:
    w = pg.nn.Parameter(pg.ones(3, 2, device=device))
    opt = getattr(pg.optim, name)([w], **kw)
    for _ in range(2):
        if hybrid:
            g = pg.sparse_coo_tensor([[2, 0, 2]], [[1., 2.], [-2., 1.], [3., 0.]], (3, 2),
                                     device=device)
        else:
            g = pg.sparse_coo_tensor([[2, 0, 2], [1, 1, 1]], [1., -2., 3.], (3, 2), device=device)
        w.grad = g  # an assigned sparse .grad
        opt.step()
    assert w.grad is g  # the step leaves the sparse gradient as it was
    return w.detach().tolist()


def test_optimizers_take_assigned_sparse_grads(device: str) -> None:
    assert _step_twice(device, "SGD", True, lr=0.5) == [[3., 0.], [1., 1.], [-3., -1.]]
    assert _close(_step_twice(device, "SGD", True, lr=0.5, momentum=0.5),
                  [[3.5, -0.25], [1., 1.], [-4., -1.5]])
    assert _close(_step_twice(device, "Adagrad", True, lr=0.5),
                  [[1.85355341, 0.14644662], [1., 1.], [0.14644662, 0.14644662]])
    w = pg.nn.Parameter(pg.ones(3, 2, device=device))
    opt = pg.optim.SparseAdam([w], lr=0.5)
    w.grad = pg.sparse_coo_tensor([[2, 0, 2], [1, 1, 1]], [1., -2., 3.], (3, 2), device=device)
    opt.step()
    assert _close(w.detach().tolist(), [[1., 1.5], [1., 1.], [1., 0.50000006]])
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please "
                       "consider SparseAdam instead"):
        _step_twice(device, "Adam", False)
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse "
                       "gradients"):
        _step_twice(device, "Adagrad", False, weight_decay=0.1)


# ------------------------------------------------------------------------------- the rest
def test_norm_and_inplace_ops(device: str) -> None:
    s = pg.sparse_coo_tensor([[1, 1]], [3., 4.], (3,), device=device)  # one position: 7
    assert s.norm().item() == 7.0
    u = pg.sparse_coo_tensor([[1, 0, 1]], [1., 2., 3.], (3,), device=device)
    assert u.mul_(2) is u and u.to_dense().tolist() == [4., 8., 0.]
    u.sub_(pg.sparse_coo_tensor([[0]], [1.], (3,), dtype=pg.float64, device=device), alpha=2)
    assert u.dtype is pg.float32 and u.to_dense().tolist() == [2., 8., 0.]
    leaf = pg.sparse_coo_tensor([[0]], [1.], (3,), requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                       "an in-place operation."):
        leaf.mul_(2)


def test_repr(device: str) -> None:
    if device != "cpu":
        pytest.skip("the device suffix is printed only off the CPU")
    s = _s(device, pg.float64).coalesce()
    assert repr(s) == (
        "tensor(indices=tensor([[0, 1, 1],\n"
        "                       [2, 0, 2]]),\n"
        "       values=tensor([5., 2., 3.]),\n"
        "       size=(2, 3), nnz=3, dtype=portagrad.float64, layout=portagrad.sparse_coo)")
    h = pg.sparse_coo_tensor([[0, 2]], [[1., 2.], [3., 4.]], (3, 2), requires_grad=True)
    assert repr(h) == (
        "tensor(indices=tensor([[0, 2]]),\n"
        "       values=tensor([[1., 2.],\n"
        "                      [3., 4.]]),\n"
        "       size=(3, 2), nnz=2, layout=portagrad.sparse_coo, requires_grad=True)")
    e = pg.sparse_coo_tensor(pg.zeros(2, 0, dtype=pg.int64), pg.zeros(0), (2, 3))
    assert repr(e) == ("tensor(indices=tensor([], size=(2, 0)),\n"
                       "       values=tensor([], size=(0,)),\n"
                       "       size=(2, 3), nnz=0, layout=portagrad.sparse_coo)")
