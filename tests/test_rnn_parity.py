"""Recurrent layers, their cells, packed sequences and transformer layers against PyTorch 2.13:
values and gradients with deterministic weights (``_fill``: parameter ``k`` in
``named_parameters`` order is ``0.5 * sin(0.37 * i + k)``), argument checks (exception types and
messages, in PyTorch's order) and the constructors' flags and warnings. Expected values are
PyTorch 2.13's, written out."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.nn.utils.rnn import (pack_padded_sequence, pad_packed_sequence, pad_sequence)


def _fill(m: nn.Module) -> nn.Module:
    with pg.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            i = pg.arange(p.numel(), dtype=pg.float64, device=p.device)
            p.copy_(((i * 0.37 + k).sin() * 0.5).reshape(p.shape))
    return m


def _inp(device: str, *shape: int, s: float = 0.0) -> pg.Tensor:
    i = pg.arange(math.prod(shape), dtype=pg.float64, device=device)
    return (i * 0.61 + s).cos().reshape(shape).float().requires_grad_()


def _close(t: pg.Tensor, expected: list, tol: float = 3e-5) -> None:
    got = t.detach().cpu().numpy()
    assert got.shape == np.asarray(expected).shape
    np.testing.assert_allclose(got, np.asarray(expected), atol=tol, rtol=0)


# ------------------------------------------------------------------ layers: values, gradients
def test_gru_bidirectional_batch_first_values_and_grads(device: str) -> None:
    m = _fill(nn.GRU(3, 2, num_layers=2, bidirectional=True, batch_first=True).to(device))
    x = _inp(device, 2, 3, 3)
    h0 = _inp(device, 4, 2, 2, s=1.0)
    o, h = m(x, h0)
    (o.sum() + (h * h).sum()).backward()
    _close(o, [[[-0.35835, -0.10363, 0.04807, -0.32068], [-0.39874, -0.23336, -0.04074, -0.39327],
                [-0.53237, -0.15604, -0.13597, -0.66706]],
               [[-0.26415, -0.36135, 0.13716, -0.13275], [-0.3868, -0.47824, -0.0759, -0.03036],
                [-0.16961, -0.47478, -0.37428, 0.028]]])
    _close(h, [[[0.23313, -0.29195], [0.44575, -0.23732]], [[-0.0305, 0.44799], [0.3938, 0.66383]],
               [[-0.53237, -0.15604], [-0.16961, -0.47478]],
               [[0.04807, -0.32068], [0.13716, -0.13275]]])
    _close(x.grad, [[[0.01964, -0.00343, -0.02603], [-0.14831, -0.22413, -0.26962],
                     [0.00479, -0.1446, -0.27443]],
                    [[0.03654, 0.00048, -0.03564], [-0.05699, -0.13612, -0.19682],
                     [-0.13984, -0.26226, -0.34918]]])
    _close(h0.grad, [[[0.15057, 0.0138], [-0.00232, -0.00166]], [[0.24252, 0.2494],
                     [0.96294, 1.03435]], [[-0.11594, 0.01399], [0.08637, 0.17946]],
                     [[0.43842, 0.39201], [0.14967, -0.02652]]])
    _close(m.weight_hh_l1_reverse.grad, [[0.02625, 0.03171], [-0.03175, -0.03832],
                                         [0.52473, 0.50801], [0.36494, 0.44862],
                                         [-0.98028, -1.1928], [-0.56655, -0.59301]])
    _close(m.bias_ih_l0.grad, [-0.03525, 0.03876, -0.21786, 0.06407, 0.80034, -0.34297])


def test_lstm_proj_on_unsorted_packed_batch(device: str) -> None:
    m = _fill(nn.LSTM(2, 3, proj_size=2, bidirectional=True).to(device))
    x = _inp(device, 3, 3, 2)
    o, (h, c) = m(pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False))
    assert o.unsorted_indices.tolist() == [1, 0, 2]
    pad, lens = pad_packed_sequence(o, padding_value=-1.0)
    assert lens.tolist() == [2, 3, 1]
    (pad.clamp(min=-0.5).sum() + h.sum() + (c * c).sum()).backward()
    _close(o.data, [[0.23348, 0.17842, 0.00829, 0.22191], [0.45621, 0.34259, 0.03027, 0.23302],
                    [0.03277, 0.01702, -0.00551, -0.01551], [0.41695, 0.34116, 0.01627, 0.18122],
                    [0.17753, 0.15302, -0.00842, 0.03083], [0.1485, 0.1264, -0.00459, -0.00439]])
    _close(pad[2], [[-1.0] * 4, [0.1485, 0.1264, -0.00459, -0.00439], [-1.0] * 4])
    # the final states in the original batch order, each at its own sequence's last step
    _close(h, [[[0.17753, 0.15302], [0.1485, 0.1264], [0.03277, 0.01702]],
               [[0.03027, 0.23302], [0.00829, 0.22191], [-0.00551, -0.01551]]])
    _close(c, [[[-0.49134, -0.31067, -0.22026], [-0.4339, -0.28009, -0.20958],
                [-0.00831, -0.05418, -0.13179]],
               [[-0.31266, -0.57163, -0.75137], [-0.38264, -0.6606, -0.79202],
                [-0.05173, 0.12777, 0.06294]]])
    _close(x.grad, [[[0.53615, 0.75027], [1.13461, 1.36156], [0.38105, 0.34927]],
                    [[1.75969, 1.81615], [0.69581, 0.83935], [0.0, 0.0]],
                    [[0.0, 0.0], [1.48313, 1.49501], [0.0, 0.0]]])
    _close(m.weight_hr_l0_reverse.grad, [[-0.6289, -0.83444, -1.49199],
                                         [-0.6202, -0.81516, -1.45935]])


def test_rnn_relu_unbatched_no_bias(device: str) -> None:
    m = _fill(nn.RNN(2, 3, nonlinearity="relu", bias=False, num_layers=2).to(device))
    x = _inp(device, 4, 2)
    o, h = m(x)
    (o * o).sum().backward()
    _close(o, [[0.48721, 0.0, 0.0], [0.54104, 0.0, 0.0], [0.20061, 0.0, 0.0], [0.04731, 0.0, 0.0]])
    _close(h, [[0.07292, 0.0, 0.0], [0.04731, 0.0, 0.0]])
    _close(x.grad, [[0.55404, 0.80273], [0.1642, 0.32491], [0.0, 0.0368], [0.0, 0.00778]])


def test_cells_unbatched_without_state(device: str) -> None:
    expected = {"RNNCell": ([0.58722, 0.73506, 0.6672], None, [0.43126, 0.59101]),
                "LSTMCell": ([-0.28802, -0.39506, -0.32243], [-0.6247, -0.6554, -0.46599],
                             [-0.56067, -0.53143]),
                "GRUCell": ([-0.41234, -0.58581, -0.52004], None, [-0.10089, -0.08658])}
    for kind, (h_exp, c_exp, dx_exp) in expected.items():
        m = _fill(getattr(nn, kind)(2, 3).to(device))
        x = _inp(device, 2)
        out = m(x)
        if c_exp is None:
            _close(out, h_exp)
            out.sum().backward()
        else:
            _close(out[0], h_exp)
            _close(out[1], c_exp)
            (out[0].sum() + out[1].sum()).backward()
        _close(x.grad, dx_exp)


# ------------------------------------------------------------------------- layers: checks
def test_rnn_constructor_checks() -> None:
    with pytest.raises(ValueError, match="^input_size must be greater than zero$"):
        nn.LSTM(0, 6)
    with pytest.raises(ValueError, match="^input_size must be greater than zero$"):
        nn.GRU(0, 0)  # before hidden_size's
    with pytest.raises(TypeError, match="^hidden_size should be of type int, got: float$"):
        nn.RNN(5, 2.0)
    with pytest.raises(TypeError, match="^input_size should be of type int, got: float$"):
        nn.RNN(5.0, 0.0)
    with pytest.raises(ValueError, match="^hidden_size must be greater than zero$"):
        nn.RNN(5, 0, num_layers=0)
    with pytest.raises(ValueError, match="^dropout should be a number"):
        nn.GRU(5, 6, dropout=2, num_layers=0)
    for kind in ("RNN", "LSTM", "GRU"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(nn, kind)(5, 6, dropout=0.5)
            getattr(nn, kind)(5, 6, dropout=0.5, num_layers=2)
        assert [str(x.message) for x in w] == [
            "dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
            "expects num_layers greater than 1, but got dropout=0.5 and num_layers=1"]


def test_rnn_forward_checks_in_order(device: str) -> None:
    x = pg.randn(4, 3, 5, device=device)
    for kind in ("RNN", "LSTM", "GRU"):
        m = getattr(nn, kind)(5, 6).to(device)

        def state(*shape: int, dtype: pg.dtype = pg.float32, kind: str = kind) -> object:
            h = pg.zeros(*shape, dtype=dtype, device=device)
            return (h, pg.zeros(*shape, dtype=dtype, device=device)) if kind == "LSTM" else h

        tensor = " tensor" if kind == "RNN" else ""
        with pytest.raises(ValueError, match=f"^{kind}: Expected input to be 2D or 3D, got 4D"
                           f"{tensor} instead$"):
            m(x.unsqueeze(0))
        both = "hx and cx" if kind == "LSTM" else "hx"
        got = "(2-D, 2-D) tensors" if kind == "LSTM" else "2-D tensor"
        with pytest.raises(RuntimeError, match=rf"^For batched 3-D input, {both} should also be "
                           rf"3-D but got {re.escape(got)}$"):
            m(x[..., :4], state(1, 6))  # before the input size
        got = "(3-D, 3-D) tensors" if kind == "LSTM" else "3-D tensor"
        with pytest.raises(RuntimeError, match=rf"^For unbatched 2-D input, {both} should also be "
                           rf"2-D but got {re.escape(got)}$"):
            m(x[0], state(1, 1, 6))
        with pytest.raises(ValueError, match=r"^RNN input dtype \(portagrad.float64\) does not "
                           r"match weight dtype \(portagrad.float32\)"):
            m(x[..., :4].double(), state(2, 3, 6))  # before the input size
        with pytest.raises(RuntimeError, match="^input.size\\(-1\\) must be equal to input_size. "
                           "Expected 5, got 4$"):
            m(x[0:0, :, :4], state(2, 3, 6))  # before the empty sequence
        which = "hidden\\[0\\] size" if kind == "LSTM" else "hidden size"
        with pytest.raises(RuntimeError, match=rf"^Expected {which} \(1, 3, 6\), got \[2, 3, 6\]$"):
            m(x[0:0], state(2, 3, 6))
        with pytest.raises(RuntimeError, match="^Expected sequence length to be larger than 0 in "
                           "RNN$"):
            m(x[0:0])
        with pytest.raises(RuntimeError, match="^mat1 and mat2 must have the same dtype, but got "
                           "Double and Float$"):
            m(x, state(1, 3, 6, dtype=pg.float64))
        out = m(x[:, 0:0])[0]  # an empty batch runs
        assert tuple(out.shape) == (4, 0, 6)
    lstm = nn.LSTM(5, 6).to(device)
    with pytest.raises(RuntimeError, match="^For batched 3-D input, hx and cx should also be 3-D "
                       r"but got \(3-D, 2-D\) tensors$"):
        lstm(x, (pg.zeros(1, 3, 6, device=device), pg.zeros(1, 6, device=device)))
    with pytest.raises(RuntimeError, match="^lstm expects two hidden states$"):
        lstm(x, (pg.zeros(1, 3, 6, device=device),) * 3)


def test_cell_checks(device: str) -> None:
    for kind in ("RNNCell", "LSTMCell", "GRUCell"):
        m = getattr(nn, kind)(5, 6).to(device)

        def st(*shape: int, dtype: pg.dtype = pg.float32, kind: str = kind) -> object:
            h = pg.zeros(*shape, dtype=dtype, device=device)
            return (h, pg.zeros(*shape, dtype=dtype, device=device)) if kind == "LSTMCell" else h

        x = pg.randn(3, 5, device=device)
        with pytest.raises(RuntimeError, match="^input has inconsistent input_size: got 4 "
                           "expected 5$"):
            m(x[:, :4], st(2, 7))
        with pytest.raises(RuntimeError, match="^input has inconsistent input_size: got 4 "
                           "expected 5$"):
            m(x[0, :4])
        with pytest.raises(RuntimeError, match="^Input batch size 3 doesn't match hidden0 batch "
                           "size 2$"):
            m(x.double(), st(2, 7))  # the shapes before the dtypes
        # no broadcasting of a state over the batch (it used to run)
        with pytest.raises(RuntimeError, match="^Input batch size 3 doesn't match hidden0 batch "
                           "size 1$"):
            m(x, st(1, 6))
        with pytest.raises(RuntimeError, match="^Input batch size 3 doesn't match hidden0 batch "
                           "size 6$"):
            m(x, st(6))
        with pytest.raises(IndexError, match="^Dimension out of range"):
            m(x, st(3))
        with pytest.raises(RuntimeError, match="^hidden0 has inconsistent hidden_size: got 7, "
                           "expected 6$"):
            m(x, st(3, 7))
        with pytest.raises(RuntimeError, match="^hidden0 has inconsistent hidden_size: got 1, "
                           "expected 6$"):
            m(x[0], st(1, 6))  # a 1-D input's state is one row
        with pytest.raises(RuntimeError, match="^mat1 and mat2 must have the same dtype, but got "
                           "Double and Float$"):
            m(x.double())
        with pytest.raises(RuntimeError, match="^mat1 and mat2 must have the same dtype, but got "
                           "Long and Float$"):
            m(x.long())
        with pytest.raises(RuntimeError, match="^mat1 and mat2 must have the same dtype, but got "
                           "Double and Float$"):
            m(x, st(3, 6, dtype=pg.float64))
        assert tuple((m(x[0:0]) if kind != "LSTMCell" else m(x[0:0])[1]).shape) == (0, 6)
    lstm = nn.LSTMCell(5, 6).to(device)
    x = pg.randn(3, 5, device=device)
    with pytest.raises(RuntimeError, match="^Input batch size 3 doesn't match hidden1 batch size "
                       "2$"):
        lstm(x, (pg.zeros(3, 6, device=device), pg.zeros(2, 6, device=device)))
    with pytest.raises(RuntimeError, match="^lstm_cell expects two hidden states$"):
        lstm(x, (pg.zeros(3, 6, device=device),))
    with pytest.raises(ValueError, match="^LSTMCell: Expected input to be 1D or 2D, got 3D "
                       "instead$"):
        lstm(x.unsqueeze(0), (pg.zeros(3, 6, device=device),))  # the input's dims first
    with pytest.raises(TypeError, match="^lstm_cell\\(\\): argument 'hx' \\(position 2\\) must be "
                       "tuple of Tensors, not Tensor$"):
        lstm(x, pg.zeros(2, 3, 6, device=device))


# ---------------------------------------------------------------------- packing and padding
def test_pack_padded_unsorted_argument_errors(device: str) -> None:
    x = pg.randn(5, 4, 3, device=device)
    for lengths in ([], pg.tensor([], dtype=pg.int64)):
        with pytest.raises(RuntimeError, match="^Cannot pack empty tensors.$"):
            pack_padded_sequence(x, lengths, enforce_sorted=False)
    for lengths in ([[5, 3, 3, 1]], pg.tensor([[5, 3, 3, 1]])):
        with pytest.raises(IndexError, match="^index_select\\(\\): Index is supposed to be a "
                           "vector$"):
            pack_padded_sequence(x, lengths, enforce_sorted=False)
        with pytest.raises(RuntimeError, match="^'lengths' argument should be a 1D CPU int64 "
                           "tensor"):
            pack_padded_sequence(x, lengths)


def test_pad_sequence_broadcasts_into_slots(device: str) -> None:
    ones = pg.ones(3, 2, device=device)
    out = pad_sequence([ones, 2 * pg.ones(2, 1, device=device)])
    assert out.tolist() == [[[1.0, 1.0], [2.0, 2.0]], [[1.0, 1.0], [2.0, 2.0]],
                            [[1.0, 1.0], [0.0, 0.0]]]
    out = pad_sequence([ones, pg.arange(2.0, device=device)], batch_first=True, padding_value=-1)
    assert out.tolist() == [[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]],
                            [[0.0, 1.0], [0.0, 1.0], [-1.0, -1.0]]]
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of "
                       r"tensor b \(4\) at non-singleton dimension 1$"):
        pad_sequence([pg.ones(3, 2, 2, device=device), pg.ones(3, 4, 2, device=device)])
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of "
                       r"tensor b \(3\) at non-singleton dimension 1$"):
        pad_sequence([pg.ones(3, device=device), pg.ones(2, 3, device=device)])
    with pytest.raises(RuntimeError, match=r"^output with shape \[3, 2\] doesn't match the "
                       r"broadcast shape \[3, 3, 2\]$"):
        pad_sequence([ones, pg.ones(3, 1, 2, device=device)])
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no "
                       "dimensions$"):
        pad_sequence([ones, pg.tensor(2.0, device=device)])
    with pytest.raises(RuntimeError, match="^ArrayRef: invalid slice, N = 1; size = 0$"):
        pad_sequence([pg.tensor(2.0, device=device), ones])


# ------------------------------------------------------------------------------ transformers
def test_encoder_layer_gelu_norm_first_masks(device: str) -> None:
    m = _fill(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu",
                                         norm_first=True, batch_first=True).to(device)).eval()
    x = _inp(device, 2, 3, 4)
    mask = pg.tensor([[False, True, False], [False, False, True], [False, False, False]],
                     device=device)
    kpm = pg.tensor([[False, False, True], [False, False, False]], device=device)
    o = m(x, mask, kpm)
    (o * o).sum().backward()
    _close(o, [[[1.32239, 1.39506, 1.0567, -0.16523], [-0.42132, -0.33705, -0.19121, -0.34352],
                [0.5154, 1.37219, 1.64192, 1.00631]],
               [[0.81546, 0.49648, 0.09922, -0.88869], [-0.5737, 0.13112, 0.59769, 0.64557],
                [1.27132, 1.60191, 1.36009, 0.16007]]])
    _close(x.grad, [[[2.53577, 2.85898, 2.21343, -0.39035], [-0.77679, -0.66064, -0.40517,
                                                            -0.7436],
                     [1.03527, 2.74426, 3.28126, 2.01086]],
                    [[1.64116, 0.99863, 0.20064, -1.79546], [-1.10773, 0.23967, 1.16337, 1.30603],
                     [2.29534, 3.31335, 2.91493, 0.26316]]], tol=1e-4)
    _close(m.linear1.bias.grad, [-0.25613, -0.22942, 0.06393, -0.10664, -0.85052, -0.76007],
           tol=1e-4)


def test_decoder_layer_causal(device: str) -> None:
    m = _fill(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0).to(device)).eval()
    t = _inp(device, 2, 1, 4)
    mem = _inp(device, 3, 1, 4, s=0.5)
    o = m(t, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(2, device=device),
          tgt_is_causal=True)
    o.sum().backward()
    _close(o, [[[-0.46327, -0.76766, -0.80478, 0.44593]], [[-0.62806, -0.57149, -0.61619,
                                                             0.47901]]])
    _close(mem.grad, [[[0.05718, 0.07622, 0.08495, 0.08218]], [[0.04225, 0.05164, 0.05404,
                                                                0.04913]],
                      [[0.17705, 0.23736, 0.26554, 0.25779]]], tol=1e-4)


def test_encoder_layer_activation_relu_or_gelu() -> None:
    acts = ["relu", nn.functional.relu, nn.ReLU(), "gelu", nn.functional.gelu, nn.GELU(),
            lambda x: x, pg.relu]
    got = [nn.TransformerEncoderLayer(8, 2, 16, activation=a).activation_relu_or_gelu
           for a in acts]
    assert got == [1, 1, 1, 2, 2, 2, 0, 0]
    with pytest.raises(RuntimeError, match="^activation should be relu/gelu, not tanh$"):
        nn.TransformerEncoderLayer(8, 2, 16, activation="tanh")


def test_transformer_encoder_nested_tensor_flags() -> None:
    reasons = [
        ({}, "encoder_layer.self_attn.batch_first was not True(use batch_first for better "
             "inference performance)"),
        ({"batch_first": True, "norm_first": True, "bias": False},
         "encoder_layer.norm_first was True"),
        ({"batch_first": True, "bias": False, "activation": lambda x: x},
         "encoder_layer.self_attn was passed bias=False"),
        ({"batch_first": True, "activation": lambda x: x, "nhead": 1},
         "encoder_layer.activation_relu_or_gelu was not True"),
        ({"batch_first": True, "nhead": 1}, "encoder_layer.self_attn.num_heads is odd"),
        ({"batch_first": True, "activation": "gelu"}, None),
    ]
    for kw, why in reasons:
        nhead = kw.pop("nhead", 2)
        layer = nn.TransformerEncoderLayer(8, nhead, 16, **kw)
        for enable in (True, False):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=enable)
            assert enc.enable_nested_tensor is enable and enc.mask_check is True
            assert enc.use_nested_tensor is (enable and why is None)
            assert [str(x.message) for x in w] == (
                [f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                 f"{why}"] if enable and why else [])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nn.TransformerEncoder(nn.Linear(3, 3), 2)  # type: ignore[arg-type]
        t = nn.Transformer(8, 2, 1, 1, 16, batch_first=True)
    assert [str(x.message) for x in w] == ["enable_nested_tensor is True, but "
                                           "self.use_nested_tensor is False because "
                                           "encoder_layer was not TransformerEncoderLayer"]
    assert t.encoder.use_nested_tensor is True
