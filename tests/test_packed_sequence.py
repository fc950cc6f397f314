"""``nn.utils.rnn`` packed sequences and recurrent layers over them.

The packing layout, ``batch_sizes``, the sorted/unsorted permutations and the error messages are
PyTorch 2.13's, written out as literals. A recurrent layer over a packed batch is checked against
the same layer run on each sequence alone (exact in float64: the masked steps change nothing),
and against PyTorch with copied weights where it is installed."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence,
                                    pad_packed_sequence, pad_sequence, unpack_sequence,
                                    unpad_sequence)


def H(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_pack_sequence_layout(device: str) -> None:
    seqs = [pg.tensor([1.0, 2.0, 3.0], device=device), pg.tensor([4.0, 5.0], device=device)]
    p = pack_sequence(seqs)
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert H(p.data).tolist() == [1.0, 4.0, 2.0, 5.0, 3.0]
    assert p.batch_sizes.tolist() == [2, 2, 1]
    assert p.batch_sizes.dtype == pg.int64 and p.batch_sizes.device.type == "cpu"
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert [H(s).tolist() for s in unpack_sequence(p)] == [[1.0, 2.0, 3.0], [4.0, 5.0]]


def test_pack_padded_unsorted_and_gradient(device: str) -> None:
    x = pg.arange(15.0, device=device).reshape(5, 3).requires_grad_()
    p = pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False)
    assert H(p.data).tolist() == [1.0, 2.0, 0.0, 4.0, 5.0, 3.0, 7.0, 8.0, 10.0, 13.0]
    assert p.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    assert p.sorted_indices.tolist() == [1, 2, 0]  # type: ignore[union-attr]
    assert p.unsorted_indices.tolist() == [2, 0, 1]  # type: ignore[union-attr]
    # packing is a gather of rows: each valid element gets its packed weight, padding nothing
    (p.data * pg.arange(1.0, 11.0, device=device)).sum().backward()
    assert H(x.grad).tolist() == [[3.0, 1.0, 2.0], [6.0, 4.0, 5.0], [0.0, 7.0, 8.0],
                                  [0.0, 9.0, 0.0], [0.0, 10.0, 0.0]]
    y, lengths = pad_packed_sequence(p, batch_first=True, padding_value=-1.0, total_length=6)
    assert H(y).tolist() == [[0.0, 3.0, -1.0, -1.0, -1.0, -1.0],
                             [1.0, 4.0, 7.0, 10.0, 13.0, -1.0],
                             [2.0, 5.0, 8.0, -1.0, -1.0, -1.0]]
    assert lengths.tolist() == [2, 5, 3] and lengths.dtype == pg.int64
    # unpacking is differentiable too
    x.grad = None
    y2, _ = pad_packed_sequence(pack_padded_sequence(x, [2, 5, 3], enforce_sorted=False))
    (y2 * y2).sum().backward()
    mask = np.array([[1, 1, 1], [1, 1, 1], [0, 1, 1], [0, 1, 0], [0, 1, 0]])
    np.testing.assert_array_equal(H(x.grad), 2 * H(x) * mask)


def test_pack_padded_batch_first_tensor_lengths(device: str) -> None:
    x = pg.arange(8.0, device=device).reshape(2, 4, 1)
    p = pack_padded_sequence(x, pg.tensor([4, 1]), batch_first=True)
    assert H(p.data).ravel().tolist() == [0.0, 4.0, 1.0, 2.0, 3.0]
    assert p.batch_sizes.tolist() == [2, 1, 1, 1]
    back, lengths = pad_packed_sequence(p, batch_first=True)
    assert H(back).ravel().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0]
    assert lengths.tolist() == [4, 1]


def test_pack_errors(device: str) -> None:
    x = pg.arange(1.0, 7.0, device=device).reshape(3, 2)
    with pytest.raises(RuntimeError, match=r"^`lengths` array must be sorted in decreasing order "
                                           r"when `enforce_sorted` is True. You can pass"):
        pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match=r"^Length of all samples has to be greater than 0, "
                                           r"but found an element in 'lengths' that is <= 0$"):
        pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match=r"^Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 3 \(batch_size=2\)$"):
        pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(RuntimeError, match=r"^'lengths' argument should be a 1D CPU int64 tensor, "
                                           r"but got 2D cpu Long tensor$"):
        pack_padded_sequence(x, [[3, 2]])
    p = pack_padded_sequence(x, [2, 3], enforce_sorted=False)
    with pytest.raises(ValueError, match=r"^Expected total_length to be at least the length of "
                                         r"the longest sequence in input, but got total_length=2 "
                                         r"and max sequence length being 3$"):
        pad_packed_sequence(p, total_length=2)


def test_pad_sequence_dtype_and_errors(device: str) -> None:
    a = pg.tensor([1, 2], device=device)
    out = pad_sequence([a, pg.tensor([3.5], device=device)], padding_value=9)
    assert out.dtype == pg.int64 and H(out).tolist() == [[1, 3], [2, 9]]
    left = pad_sequence([pg.tensor([1.0, 2.0], device=device),
                         pg.tensor([3.0, 4.0, 5.0], device=device)], batch_first=True,
                        padding_side="left")
    assert H(left).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(RuntimeError, match=r"^Expected padding_side to be one of left or right, "
                                           r"but got middle.$"):
        pad_sequence([a], padding_side="middle")
    with pytest.raises(RuntimeError, match=r"^ArrayRef: invalid slice, N = 1; size = 0$"):
        pad_sequence([pg.tensor(1.0, device=device), pg.tensor(2.0, device=device)])
    with pytest.raises(RuntimeError, match=r"^received an empty list of sequences$"):
        pad_sequence([])
    padded = pg.arange(6.0, device=device).reshape(3, 2)
    assert [H(s).tolist() for s in unpad_sequence(padded, pg.tensor([3, 1]))] == \
        [[0.0, 2.0, 4.0], [1.0]]


def test_packed_sequence_methods(device: str) -> None:
    p = pack_sequence([pg.tensor([4.0, 5.0], device=device),
                       pg.tensor([1.0, 2.0, 3.0], device=device)], enforce_sorted=False)
    assert p.to(device) is p and p.float() is p
    d = p.double()
    assert d.data.dtype == pg.float64 and d.batch_sizes is p.batch_sizes
    assert d.sorted_indices.tolist() == [1, 0]  # type: ignore[union-attr]
    assert p.long().data.dtype == pg.int64
    try:
        assert p.half().data.dtype == pg.float16
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no float16)
        pass
    c = p.cpu()
    assert c.data.device.type == "cpu" and c.sorted_indices.device.type == "cpu"  # type: ignore
    assert p.is_cuda is False and p.is_pinned() is False
    assert p.unsorted_indices.tolist() == [1, 0]  # type: ignore[union-attr]


def test_cells_reject_3d_and_unknown_nonlinearity(device: str) -> None:
    x3 = pg.zeros(2, 2, 3, device=device)
    for cls in (nn.RNNCell, nn.GRUCell, nn.LSTMCell):
        cell = cls(3, 4, device=device)
        with pytest.raises(ValueError, match=rf"^{cls.__name__}: Expected input to be 1D or 2D, "
                                             rf"got 3D instead$"):
            cell(x3)
    with pytest.raises(ValueError, match=r"^RNNCell: Expected hidden to be 1D or 2D, got 3D"):
        nn.RNNCell(3, 4, device=device)(pg.zeros(2, 3, device=device), x3)
    with pytest.raises(ValueError, match=r"^LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D"):
        nn.LSTMCell(3, 4, device=device)(pg.zeros(2, 3, device=device),
                                         (pg.zeros(2, 4, device=device), x3))
    cell = nn.RNNCell(3, 4, nonlinearity="sigmoid", device=device)  # accepted, as PyTorch
    with pytest.raises(RuntimeError, match=r"^Unknown nonlinearity: sigmoid$"):
        cell(pg.zeros(2, 3, device=device))


# (layer class, keyword arguments): the cases run over a packed batch
LAYERS = [
    ("RNN", {"nonlinearity": "relu"}),
    ("GRU", {}),
    ("LSTM", {}),
    ("LSTM", {"proj_size": 2}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
]
IDS = ["rnn_relu", "gru", "lstm", "lstm_proj", "gru_2l_bidir", "lstm_2l_bidir_proj"]


def _states(mode: str, h: Any) -> tuple[Any, ...]:
    return tuple(h) if mode == "LSTM" else (h,)


@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 2], True), ([2, 5, 3], False)],
                         ids=["sorted", "unsorted"])
@pytest.mark.parametrize("mode,kw", LAYERS, ids=IDS)
def test_rnn_packed_matches_each_sequence_alone(device: str, mode: str, kw: dict[str, Any],
                                                lengths: list[int], enforce_sorted: bool) -> None:
    pg.manual_seed(0)
    # batch_first is ignored for a packed input, as PyTorch's
    m = getattr(nn, mode)(4, 3, batch_first=True, dtype=pg.float64, device=device, **kw)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    H_out = kw.get("proj_size") or 3
    rng = np.random.default_rng(1)
    x = pg.tensor(rng.standard_normal((5, 3, 4)), device=device, requires_grad=True)
    h0 = pg.tensor(rng.standard_normal((L * D, 3, H_out)), device=device)
    c0 = pg.tensor(rng.standard_normal((L * D, 3, 3)), device=device)
    hx = (h0, c0) if mode == "LSTM" else h0
    out, hn = m(pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted), hx)
    assert isinstance(out, PackedSequence)
    padded, out_lengths = pad_packed_sequence(out)
    assert out_lengths.tolist() == lengths
    ((padded ** 2).sum() + sum((s ** 3).sum() for s in _states(mode, hn))).backward()
    packed_grads = [H(p.grad) for p in m.parameters()]
    x_grad = H(x.grad)
    m.zero_grad()
    x.grad = None
    loss = 0
    for i, n in enumerate(lengths):
        hx_i = ((h0[:, i:i + 1], c0[:, i:i + 1]) if mode == "LSTM" else h0[:, i:i + 1])
        o_i, h_i = m(x[:n, i:i + 1].transpose(0, 1), hx_i)  # batch_first: (1, n, 4)
        np.testing.assert_allclose(H(padded[:n, i]), H(o_i[0]), rtol=1e-12, atol=1e-12)
        for s, s_i in zip(_states(mode, hn), _states(mode, h_i)):
            np.testing.assert_allclose(H(s[:, i]), H(s_i[:, 0]), rtol=1e-12, atol=1e-12)
        loss = loss + (o_i ** 2).sum() + sum((s ** 3).sum() for s in _states(mode, h_i))
        assert np.all(H(padded[n:, i]) == 0.0)
    loss.backward()  # type: ignore[union-attr]
    np.testing.assert_allclose(x_grad, H(x.grad), rtol=1e-10, atol=1e-12)
    for g, p in zip(packed_grads, m.parameters()):
        np.testing.assert_allclose(g, H(p.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 2], True), ([2, 5, 3], False)],
                         ids=["sorted", "unsorted"])
@pytest.mark.parametrize("mode,kw", LAYERS, ids=IDS)
def test_rnn_packed_matches_torch(device: str, mode: str, kw: dict[str, Any],
                                  lengths: list[int], enforce_sorted: bool) -> None:
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as trnn

    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(4, 3, dtype=torch.float64, **kw)
    m = getattr(nn, mode)(4, 3, dtype=pg.float64, device=device, **kw)
    with pg.no_grad():
        for name, p in tm.named_parameters():
            getattr(m, name).copy_(pg.tensor(p.detach().numpy(), device=device))
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((5, 3, 4))
    h0s = rng.standard_normal((L * D, 3, kw.get("proj_size") or 3))
    c0s = rng.standard_normal((L * D, 3, 3))
    tx, th0, tc0 = (torch.tensor(a, requires_grad=True) for a in (xs, h0s, c0s))
    x, h0, c0 = (pg.tensor(a, device=device, requires_grad=True) for a in (xs, h0s, c0s))
    t_out, t_h = tm(trnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted),
                    (th0, tc0) if mode == "LSTM" else th0)
    out, h = m(pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted),
               (h0, c0) if mode == "LSTM" else h0)
    np.testing.assert_allclose(H(out.data), t_out.data.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    t_pad, _ = trnn.pad_packed_sequence(t_out)
    pad, _ = pad_packed_sequence(out)
    for s, ts in zip(_states(mode, h), _states(mode, t_h)):
        np.testing.assert_allclose(H(s), ts.detach().numpy(), rtol=1e-10, atol=1e-12)
    ((t_pad ** 2).sum() + sum((s ** 3).sum() for s in _states(mode, t_h))).backward()
    ((pad ** 2).sum() + sum((s ** 3).sum() for s in _states(mode, h))).backward()
    for ours, theirs in [(x, tx), (h0, th0)] + ([(c0, tc0)] if mode == "LSTM" else []):
        np.testing.assert_allclose(H(ours.grad), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name, p in tm.named_parameters():
        np.testing.assert_allclose(H(getattr(m, name).grad), p.grad.numpy(), rtol=1e-9,
                                   atol=1e-12)


def test_rnn_packed_dropout_and_default_state(device: str) -> None:
    m = nn.LSTM(2, 3, num_layers=2, dropout=0.5, device=device)
    p = pack_sequence([pg.randn(4, 2, device=device), pg.randn(1, 2, device=device)])
    out, (h, c) = m(p)  # training: dropout between the layers
    assert out.data.shape == (5, 3) and h.shape == (2, 2, 3) and c.shape == (2, 2, 3)
    assert out.batch_sizes.tolist() == [2, 1, 1, 1]
    with pytest.raises(RuntimeError, match=r"^input must have 2 dimensions, got 1$"):
        nn.RNN(2, 3, device=device)(pack_sequence([pg.zeros(2, device=device)]))


def test_functional_lstm_packed_form(device: str) -> None:
    """``torch.lstm(data, batch_sizes, hx, params, ...)`` (ATen's packed overload, states in
    the sorted order) gives what ``nn.LSTM`` gives on the packed batch."""
    pg.manual_seed(0)
    m = nn.LSTM(2, 3, bidirectional=True, dtype=pg.float64, device=device)
    p = pack_sequence([pg.randn(4, 2, dtype=pg.float64, device=device),
                       pg.randn(2, 2, dtype=pg.float64, device=device)])
    hx = (pg.zeros(2, 2, 3, dtype=pg.float64, device=device),) * 2
    out, (h, c) = m(p, hx)
    weights = [getattr(m, n) for n in m._flat_weights_names]
    data, h2, c2 = pg.lstm(p.data, p.batch_sizes, hx, weights, True, 1, 0.0, False, True)
    for a, b in ((out.data, data), (h, h2), (c, c2)):
        np.testing.assert_allclose(H(a), H(b), rtol=1e-12)
