"""Sparse COO tensors (``layout=portagrad.sparse_coo``): construction and its checks,
``to_sparse``/``to_dense``/``coalesce``, sparse @ dense in every spelling (differentiable with
respect to the dense operand and the values), ``sparse.sum``, and the clear refusal of everything
else."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]
DENSE = np.array([[0.0, 0.0, 4.0], [4.0, 0.0, 5.0]])  # duplicates (0, 2) summed


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _sparse(device: str, dtype: pg.dtype = pg.float32, **kw: object) -> pg.sparse.SparseCooTensor:
    return pg.sparse_coo_tensor(pg.tensor(IDX, device=device), pg.tensor(VAL, dtype=dtype,
                                                                          device=device),
                                (2, 3), **kw)


def test_construction_metadata_and_dense_form(device: str) -> None:
    s = _sparse(device)
    assert s.is_sparse and s.layout is pg.sparse_coo and repr(pg.sparse_coo) == \
        "portagrad.sparse_coo"
    assert s.shape == (2, 3) and s.size(1) == 3 and s.dim() == 2 and s.dtype is pg.float32
    assert s.device == pg.device(device) and s._nnz() == 4 and not s.is_coalesced()
    assert s.sparse_dim() == 2 and s.dense_dim() == 0
    np.testing.assert_array_equal(_np(s.to_dense()), DENSE)
    assert "layout=portagrad.sparse_coo" in repr(s) and "nnz=4" in repr(s)
    # size inferred from the indices
    assert pg.sparse_coo_tensor(IDX, VAL).shape == (2, 3)
    # dense trailing dimensions in the values
    h = pg.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2))
    np.testing.assert_array_equal(_np(h.to_dense()), [[1, 2], [0, 0], [3, 4]])


def test_coalesce_sums_duplicates_and_sorts(device: str) -> None:
    s = _sparse(device)
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor, please "
                                           "call .coalesce\\(\\) first"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    np.testing.assert_array_equal(_np(c.indices()), [[0, 1, 1], [2, 0, 2]])
    np.testing.assert_array_equal(_np(c.values()), [4.0, 4.0, 5.0])
    np.testing.assert_array_equal(_np(c.to_dense()), DENSE)


def test_to_sparse_round_trip(device: str) -> None:
    x = pg.tensor(DENSE, device=device)
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == 3
    np.testing.assert_array_equal(_np(s.indices()), [[0, 1, 1], [2, 0, 2]])
    np.testing.assert_array_equal(_np(s.to_dense()), DENSE)
    h = pg.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]], device=device).to_sparse(1)
    assert h.sparse_dim() == 1 and h.dense_dim() == 1
    np.testing.assert_array_equal(_np(h.values()), [[1.0, 0.0]])
    assert x.to_sparse_coo().to_dense().shape == (2, 3)


def test_sparse_times_dense_every_spelling(device: str) -> None:
    s = _sparse(device)
    d = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    dt = pg.tensor(d, device=device)
    ref = DENSE @ d
    for out in (s @ dt, pg.mm(s, dt), pg.matmul(s, dt), pg.sparse.mm(s, dt), pg.spmm(s, dt),
                s.mm(dt)):
        np.testing.assert_allclose(_np(out), ref)
    np.testing.assert_allclose(_np(s @ dt[:, 0]), DENSE @ d[:, 0])  # matrix-vector
    np.testing.assert_allclose(_np(pg.tensor(d.T, device=device) @ s.t()), d.T @ DENSE.T)
    np.testing.assert_allclose(_np(pg.spmm(dt.t(), dt)), d.T @ d)  # two dense: mm
    with pytest.raises(RuntimeError, match="addmm: Argument #3 \\(dense\\): Expected dim 0 "
                                           "size 3, got 4"):
        s @ dt.t()


def test_products_are_differentiable(device: str) -> None:
    rng = np.random.default_rng(0)
    d = pg.tensor(rng.normal(size=(3, 2)), dtype=pg.float64, device=device, requires_grad=True)
    vals = pg.tensor(VAL, dtype=pg.float64, device=device, requires_grad=True)

    def f(dense: pg.Tensor, v: pg.Tensor) -> pg.Tensor:
        return pg.sparse.mm(pg.sparse_coo_tensor(pg.tensor(IDX, device=device), v, (2, 3)),
                            dense)

    assert gradcheck(f, (d, vals))
    leaf = _sparse(device, pg.float64, requires_grad=True)
    pg.sparse.mm(leaf, d).sum().backward()  # (leaf @ d: a dense gradient, as PyTorch's)
    g = leaf.grad
    assert g is not None and g.is_sparse  # at the coalesced positions: (0, 2) once
    assert g._indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    np.testing.assert_allclose(_np(g._values()), _np(d.sum(1))[[2, 0, 2]])
    dense_grad = pg.sparse.sum(_sparse(device, pg.float64) * 2.0)
    assert dense_grad.item() == 2 * sum(VAL)


def test_sparse_sum_over_dims(device: str) -> None:
    s = _sparse(device)
    assert pg.sparse.sum(s).item() == sum(VAL)
    r = pg.sparse.sum(s, 1)
    assert r.is_sparse and r.shape == (2,)
    np.testing.assert_array_equal(_np(r.to_dense()), DENSE.sum(1))
    np.testing.assert_array_equal(_np(pg.sparse.sum(s, (0, 1))), DENSE.sum())
    np.testing.assert_array_equal(_np(s.sum(0).to_dense()), DENSE.sum(0))


def test_arithmetic_that_is_supported(device: str) -> None:
    s = _sparse(device)
    np.testing.assert_array_equal(_np((s * 2).to_dense()), DENSE * 2)
    np.testing.assert_array_equal(_np((s / 2).to_dense()), DENSE / 2)
    np.testing.assert_array_equal(_np((-s).to_dense()), -DENSE)
    np.testing.assert_array_equal(_np((s + s).to_dense()), DENSE * 2)
    dense = pg.ones(2, 3, device=device)
    np.testing.assert_array_equal(_np(dense + s), DENSE + 1)
    np.testing.assert_array_equal(_np(s.to(pg.float64).to_dense()), DENSE)
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported. Use "
                                           "add\\(dense, sparse\\) instead."):
        s + dense


def test_unsupported_ops_say_so(device: str) -> None:
    s = _sparse(device)
    for name in ("exp", "view", "relu", "softmax"):
        with pytest.raises(NotImplementedError, match=f"{name} is not supported for tensors "
                                                      f"with layout=portagrad.sparse_coo"):
            getattr(s, name)
    with pytest.raises(NotImplementedError, match="indexing is not supported for tensors with "
                                                  "layout=portagrad.sparse_coo"):
        s[0]
    with pytest.raises(AttributeError):
        s.no_such_attribute  # noqa: B018


def test_construction_errors(device: str) -> None:
    i = pg.tensor(IDX, device=device)
    v = pg.tensor(VAL, device=device)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size "
                                           "is 2 but found index 2"):
        pg.sparse_coo_tensor(i, v, (2, 2))
    with pytest.raises(RuntimeError, match="indices and values must have same nnz, but got nnz "
                                           "from indices: 4, nnz from values: 3"):
        pg.sparse_coo_tensor(i, v[:3], (2, 3))
    with pytest.raises(RuntimeError, match="indices must be sparse_dim x nnz"):
        pg.sparse_coo_tensor(i[0], v, (2, 3))
    with pytest.raises(RuntimeError, match="found negative index"):
        pg.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="'len\\(size\\) == sparse_dim \\+ dense_dim' is not "
                                           "satisfied: len\\(size\\) = 3, sparse_dim = 2"):
        pg.sparse_coo_tensor(i, v, (2, 3, 4))


def test_matches_torch_when_installed() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 5, size=(2, 12))
    val = rng.normal(size=12)
    d = rng.normal(size=(5, 3))
    ts = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), (5, 5),
                                 check_invariants=True)
    ps = pg.sparse_coo_tensor(pg.tensor(idx), pg.tensor(val), (5, 5))
    np.testing.assert_allclose(_np(ps.to_dense()), ts.to_dense().numpy())
    np.testing.assert_array_equal(_np(ps.coalesce().indices()), ts.coalesce().indices().numpy())
    np.testing.assert_allclose(_np(ps.coalesce().values()), ts.coalesce().values().numpy())
    np.testing.assert_allclose(_np(pg.sparse.mm(ps, pg.tensor(d))),
                               torch.sparse.mm(ts, torch.tensor(d)).numpy())
    np.testing.assert_allclose(_np(pg.sparse.sum(ps, 0).to_dense()),
                               torch.sparse.sum(ts, 0).to_dense().numpy())


def test_graph_normalisation_ops(device: str) -> None:
    """What a GCN layer does with an adjacency matrix: scale rows and columns by dense degree
    vectors, a softmax over each row's stored entries, addmm."""
    s = _sparse(device, pg.float64)
    d = pg.tensor([[2.0], [10.0]], dtype=pg.float64, device=device)
    np.testing.assert_array_equal(_np((s * d).to_dense()), DENSE * [[2.0], [10.0]])
    np.testing.assert_array_equal(_np((d * s).to_dense()), DENSE * [[2.0], [10.0]])
    sm = pg.sparse.softmax(s, 1)
    assert sm.is_sparse and sm._nnz() == 3
    row1 = np.array([4.0, 5.0])
    np.testing.assert_allclose(_np(sm.to_dense()),
                               [[0, 0, 1], [np.exp(4) / np.exp(row1).sum(), 0,
                                            np.exp(5) / np.exp(row1).sum()]], rtol=1e-12)
    lse = np.log(np.exp(4) + np.exp(5))  # column 2 stores 4 and 5, column 0 only 4
    np.testing.assert_allclose(_np(pg.sparse.log_softmax(s, 0).values()), [4 - lse, 0.0, 5 - lse],
                               rtol=1e-12, atol=1e-15)
    out = pg.sparse.addmm(pg.ones(2, 2, dtype=pg.float64, device=device), s,
                          pg.ones(3, 2, dtype=pg.float64, device=device), beta=0.5)
    np.testing.assert_array_equal(_np(out), 0.5 + DENSE @ np.ones((3, 2)))
    vals = pg.tensor(VAL, dtype=pg.float64, device=device, requires_grad=True)
    idx = pg.tensor(IDX, device=device)
    assert gradcheck(lambda v: pg.sparse.softmax(pg.sparse_coo_tensor(idx, v, (2, 3)), 1)
                     ._values(), (vals,))
