"""Sparse gradients: ``nn.Embedding(sparse=True)`` / ``EmbeddingBag(sparse=True)`` give their table
a sparse COO gradient (the picked rows, ``padding_idx`` left out), the engine sums them with other
gradients of the same table, and the optimizers take them as PyTorch's do: ``SparseAdam`` with its
lazy update, ``SGD`` and ``Adagrad`` with the numbers of their dense step, the others refusing with
PyTorch's message.

The references are the dense computations these are defined by (and, where torch is installed,
torch itself on the same weights and batches).
"""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg

from torch_cases import torch

W = np.random.default_rng(0).standard_normal((10, 3))
BATCHES = [np.random.default_rng(i).integers(0, 10, (4, 5)) for i in range(1, 5)]


def _emb(device, sparse=True, **kw):
    e = pg.nn.Embedding(10, 3, sparse=sparse, device=device, dtype=pg.float64, **kw)
    with pg.no_grad():
        e.weight.copy_(pg.tensor(W, device=device))
    return e


def test_embedding_gives_a_sparse_gradient_without_the_padding_rows(device):
    e = _emb(device, padding_idx=2)
    x = pg.tensor([[1, 2, 1], [4, 2, 9]], device=device)
    (e(x) * pg.arange(3, dtype=pg.float64, device=device)).sum().backward()
    g = e.weight.grad
    assert g.is_sparse and g.layout == pg.sparse_coo and tuple(g.shape) == (10, 3)
    assert g._indices().cpu().tolist() == [[1, 1, 4, 9]]  # uncoalesced, padding left out
    dense = np.zeros((10, 3))
    for i in (1, 1, 4, 9):
        dense[i] += np.arange(3)
    np.testing.assert_array_equal(g.to_dense().cpu().numpy(), dense)


def test_sparse_gradients_accumulate_over_backward_calls_and_with_dense_ones(device):
    e = _emb(device)
    x = pg.tensor([[1, 3]], device=device)
    e(x).sum().backward()
    e(x).sum().backward()
    assert e.weight.grad.is_sparse
    expected = np.zeros((10, 3))
    expected[[1, 3]] = 2
    np.testing.assert_array_equal(e.weight.grad.to_dense().cpu().numpy(), expected)
    # the table used twice in one graph, sparsely and densely (tied weights): a dense gradient
    e.weight.grad = None
    (e(x).sum() + (e.weight * 3).sum()).backward()
    assert not e.weight.grad.is_sparse
    np.testing.assert_array_equal(e.weight.grad.cpu().numpy(), expected / 2 + 3)
    # a sparse gradient into an existing dense .grad: added into it
    e(x).sum().backward()
    assert not e.weight.grad.is_sparse
    np.testing.assert_array_equal(e.weight.grad.cpu().numpy(), expected + 3)


def test_two_sparse_uses_in_one_graph_sum_sparsely(device):
    e = _emb(device)
    (e(pg.tensor([1, 2], device=device)).sum() + e(pg.tensor([2], device=device)).sum()).backward()
    g = e.weight.grad
    assert g.is_sparse
    assert g.to_dense().cpu().numpy()[:, 0].tolist() == [0, 1, 2, 0, 0, 0, 0, 0, 0, 0]


def test_a_computed_table_and_no_grad_keep_dense_rules(device):
    w = pg.tensor(W, device=device, requires_grad=True)
    pg.nn.functional.embedding(pg.tensor([1, 1], device=device), w * 2, sparse=True).sum().backward()
    assert not w.grad.is_sparse and w.grad.cpu().numpy()[1].tolist() == [4, 4, 4]
    with pg.no_grad():
        out = _emb(device)(pg.tensor([3], device=device))
    np.testing.assert_array_equal(out.cpu().numpy(), W[[3]])


def test_refusals_as_pytorch(device):
    e = pg.nn.Embedding(10, 3, sparse=True, scale_grad_by_freq=True, device=device)
    out = e(pg.tensor([1, 1], device=device)).sum()  # the forward is fine, the backward is not
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        out.backward()
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        pg.nn.EmbeddingBag(10, 3, sparse=True, mode="max", device=device)(
            pg.tensor([[1, 2]], device=device))
    e = _emb(device)
    e(pg.tensor([1], device=device)).sum().backward()
    messages = {"Adam": "Adam does not support sparse gradients, please consider SparseAdam",
                "AdamW": "Adam does not support sparse gradients, please consider SparseAdam",
                "RMSprop": "RMSprop does not support sparse gradients",
                "NAdam": "NAdam does not support sparse gradients",
                "Adamax": "Adamax does not support sparse gradients"}
    before = e.weight.detach().cpu().numpy().copy()
    for name, msg in messages.items():
        with pytest.raises(RuntimeError, match=msg):
            getattr(pg.optim, name)(e.parameters()).step()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible"):
        pg.optim.Adagrad(e.parameters(), weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        pg.optim.SGD(e.parameters(), lr=0.1, weight_decay=0.1).step()
    np.testing.assert_array_equal(e.weight.detach().cpu().numpy(), before)
    assert e.weight.grad.is_sparse  # a refused step leaves the gradient as it was
    dense = pg.nn.Embedding(10, 3, device=device)
    dense(pg.tensor([1], device=device)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        pg.optim.SparseAdam(dense.parameters()).step()


def _lazy_adam_reference(batches, betas=(0.9, 0.999), lr=1e-3, eps=1e-8, padding=None):
    """The lazy Adam of the sparse gradients of ``(e(x) ** 2).sum()``, in numpy."""
    w, m, v = W.copy(), np.zeros_like(W), np.zeros_like(W)
    for step, b in enumerate(batches, 1):
        g = np.zeros_like(W)
        for i in b.reshape(-1):
            if i != padding:
                g[i] += 2 * w[i]
        rows = sorted({int(i) for i in b.reshape(-1) if i != padding})
        m[rows] = betas[0] * m[rows] + (1 - betas[0]) * g[rows]
        v[rows] = betas[1] * v[rows] + (1 - betas[1]) * g[rows] ** 2
        size = lr * np.sqrt(1 - betas[1] ** step) / (1 - betas[0] ** step)
        w[rows] -= size * m[rows] / (np.sqrt(v[rows]) + eps)
    return w


def test_sparse_adam_updates_only_the_rows_present(device):
    e = _emb(device, padding_idx=2)
    opt = pg.optim.SparseAdam(e.parameters(), lr=0.01)
    for b in BATCHES:
        opt.zero_grad()
        (e(pg.tensor(b, device=device)) ** 2).sum().backward()
        opt.step()
    got = e.weight.detach().cpu().numpy()
    np.testing.assert_allclose(got, _lazy_adam_reference(BATCHES, lr=0.01, padding=2),
                               rtol=1e-12, atol=1e-14)
    assert opt.state[e.weight]["step"] == len(BATCHES)
    unused = sorted(set(range(10)) - {int(i) for b in BATCHES for i in b.reshape(-1)} | {2})
    np.testing.assert_array_equal(got[unused], W[unused])


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("SGD", dict(lr=0.1, maximize=True)), ("Adagrad", {})])
def test_sgd_and_adagrad_with_sparse_gradients_equal_their_dense_step(device, name, kw):
    weights = []
    for sparse in (True, False):
        e = _emb(device, sparse=sparse)
        opt = getattr(pg.optim, name)(e.parameters(), **kw)
        for b in BATCHES:
            opt.zero_grad(set_to_none=False)
            (e(pg.tensor(b, device=device)) ** 2).sum().backward()
            assert e.weight.grad.is_sparse == sparse
            opt.step()
        weights.append(e.weight.detach().cpu().numpy())
    np.testing.assert_allclose(weights[0], weights[1], rtol=1e-13, atol=1e-15)


def test_zero_grad_keeps_a_sparse_gradient_empty(device):
    e = _emb(device)
    e(pg.tensor([4], device=device)).sum().backward()
    pg.optim.SGD(e.parameters(), lr=0.1).zero_grad(set_to_none=False)
    g = e.weight.grad
    assert g.is_sparse and g._nnz() == 0 and not g.to_dense().cpu().numpy().any()


def test_embedding_bag_sparse_sum_and_mean(device):
    for mode in ("sum", "mean"):
        grads = []
        for sparse in (True, False):
            bag = pg.nn.EmbeddingBag(10, 3, mode=mode, sparse=sparse, device=device,
                                     dtype=pg.float64)
            bag(pg.tensor([[1, 2], [3, 3]], device=device)).sum().backward()
            g = bag.weight.grad
            assert g.is_sparse == sparse
            grads.append((g.to_dense() if sparse else g).cpu().numpy())
        np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.skipif(torch is None, reason="compares with torch, which is not installed")
@pytest.mark.parametrize("name,kw", [("SparseAdam", {}), ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adagrad", dict(lr=0.1))])
def test_same_steps_as_torch(device, name, kw):
    te = torch.nn.Embedding(10, 3, sparse=True, padding_idx=2, dtype=torch.float64)
    te.weight.data = torch.tensor(W)
    pe = _emb(device, padding_idx=2)
    to, po = getattr(torch.optim, name)(te.parameters(), **kw), getattr(pg.optim, name)(
        pe.parameters(), **kw)
    for b in BATCHES:
        for m, o, x in ((te, to, torch.tensor(b)), (pe, po, pg.tensor(b, device=device))):
            o.zero_grad()
            (m(x) ** 2).sum().backward()
            o.step()
        np.testing.assert_allclose(pe.weight.grad.to_dense().cpu().numpy(),
                                   te.weight.grad.to_dense().numpy(), rtol=1e-13)
    np.testing.assert_allclose(pe.weight.detach().cpu().numpy(), te.weight.detach().numpy(),
                               rtol=1e-12, atol=1e-14)
