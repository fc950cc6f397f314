"""Recurrent layers and cells under ``pg.autocast``: the dtypes of outputs and hidden states
follow PyTorch's policy of the device type (its CPU lists on ``cpu``, its GPU lists on the
others), the values stay within bfloat16 rounding of the float32 run and of PyTorch's, and the
gradients reach the float32 parameters."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.errors import DTypeError

BF, F32 = "bfloat16", "float32"
_RNG = np.random.default_rng(3)
_SEQ = _RNG.standard_normal((5, 2, 4)).astype(np.float32)  # (T, N, input_size)
_STEP = _RNG.standard_normal((2, 4)).astype(np.float32)  # (N, input_size)
_H = 6

# (name, build(lib) -> module, input, hidden state given to the second call (shapes), cell?)
Case = tuple[str, Callable[[Any], Any], np.ndarray, bool]
CASES: list[Case] = [
    ("LSTM", lambda lib: lib.nn.LSTM(4, _H, num_layers=2), _SEQ, False),
    ("LSTM_bidir_batch_first", lambda lib: lib.nn.LSTM(4, _H, bidirectional=True,
                                                        batch_first=True), _SEQ, False),
    ("GRU", lambda lib: lib.nn.GRU(4, _H, num_layers=2), _SEQ, False),
    ("RNN_tanh", lambda lib: lib.nn.RNN(4, _H, num_layers=2), _SEQ, False),
    ("RNN_relu", lambda lib: lib.nn.RNN(4, _H, nonlinearity="relu"), _SEQ, False),
    ("LSTMCell", lambda lib: lib.nn.LSTMCell(4, _H), _STEP, True),
    ("GRUCell", lambda lib: lib.nn.GRUCell(4, _H), _STEP, True),
    ("RNNCell", lambda lib: lib.nn.RNNCell(4, _H), _STEP, True),
]
#: PyTorch 2.13's CPU autocast: its LSTM runs as oneDNN's mkldnn_rnn_layer (lower-precision list);
#: the GRU, the RNN and the cells are composites whose linears are cast, so the RNN's tanh/relu
#: keep bfloat16 and the LSTM/GRU cells' blend with the float32 state gives float32
EXPECTED_CPU = {"LSTM": BF, "LSTM_bidir_batch_first": BF, "GRU": F32, "RNN_tanh": BF,
                "RNN_relu": BF, "LSTMCell": F32, "GRUCell": F32, "RNNCell": BF}
#: PyTorch's GPU lists: the cuDNN RNN and the four cells run in the lower type
EXPECTED_GPU = dict.fromkeys(EXPECTED_CPU, BF)
# Two bfloat16 epsilons (2**-7 each) absolute plus relative: the values are tanh/sigmoid products
# in [-1, 1] (the relu RNN's reach ~3), and 5 steps x 2 layers of gates rounded to 8 significant
# bits stay within that (measured: at most 1e-2 from the float32 run, one bfloat16 ulp from
# PyTorch's; PyTorch's own autocast outputs are up to 6e-3 from its float32 ones here).
TOL = 2 * 2.0 ** -7


@pytest.fixture(autouse=True)
def _skip_where_bfloat16_is_declined(device: str) -> None:
    try:
        (pg.zeros(1, dtype=pg.bfloat16, device=device) + 1).cpu()
    except DTypeError:
        pytest.skip(f"{device} declines bfloat16 (DTypeError)")


def _flat(out: Any) -> list[Any]:
    """The output tensors in order: ``output, h_n[, c_n]`` or a cell's ``h[, c]``."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _name(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().float().cpu().tolist(), dtype=np.float32)


def _models(build: Callable[[Any], Any], device: str) -> tuple[Any, Any]:
    """The portagrad model on ``device`` and, when torch is installed, PyTorch's with the same
    weights (else None)."""
    pg.manual_seed(0)
    model = build(pg).to(device)
    try:
        import torch
    except ImportError:
        return model, None
    tmodel = build(torch)
    tmodel.load_state_dict({k: torch.tensor(_np(v)) for k, v in model.state_dict().items()})
    return model, tmodel


def _hidden(out: Any, cell: bool, half: bool = False) -> Any:
    """The state the first call returned, detached, as the second call's ``hx``: float32 (or
    bfloat16 with ``half``, for a model run wholly in bfloat16 outside autocast)."""
    state = out if cell else out[1]
    if isinstance(state, tuple):
        return tuple(_hidden(s, True, half) for s in state)
    return state.detach().bfloat16() if half else state.detach().float()


def _twice(model: Any, x: Any, cell: bool, region: Any,
           half: bool = False) -> tuple[list[Any], list[Any]]:
    """Run without and then with a hidden state (float32 unless ``half``), inside ``region``."""
    with region:
        first = model(x)
    hx = _hidden(first, cell, half)
    with region:
        second = model(x, hx)
    return _flat(first), _flat(second)


@pytest.mark.parametrize("name,build,data,cell", CASES, ids=[c[0] for c in CASES])
def test_rnn_dtypes_values_and_gradients(device: str, name: str, build: Callable[[Any], Any],
                                         data: np.ndarray, cell: bool) -> None:
    dev_type = device.split(":")[0]
    expected = (EXPECTED_CPU if dev_type == "cpu" else EXPECTED_GPU)[name]
    model, _ = _models(build, device)
    x = pg.tensor(data, device=device)
    ref_first, ref_second = _twice(model, x, cell, pg.autocast(dev_type, enabled=False))
    first, second = _twice(model, x, cell, pg.autocast(dev_type, dtype=pg.bfloat16))
    for got, ref in zip(first + second, ref_first + ref_second):
        assert _name(got) == expected
        assert _name(ref) == F32  # outside the region: float32 as the weights
        np.testing.assert_allclose(_np(got), _np(ref), rtol=TOL, atol=TOL)
    # the cast weights are parents of the outputs: gradients reach the float32 parameters
    loss = sum(t.float().sum() for t in second)
    loss.backward()
    with pg.no_grad():
        ref_loss = sum(t.float().sum() for t in ref_second)
    assert abs(float(loss.item()) - float(ref_loss.item())) <= TOL * sum(t.numel() for t in second)
    for p in model.parameters():
        assert p.grad is not None and _name(p.grad) == F32
        assert np.isfinite(_np(p.grad)).all()


@pytest.mark.parametrize("name,build,data,cell", CASES, ids=[c[0] for c in CASES])
def test_rnn_matches_torch(device: str, name: str, build: Callable[[Any], Any],
                           data: np.ndarray, cell: bool) -> None:
    """Against PyTorch: on ``cpu`` its CPU autocast; on other device types what its GPU lists
    do, the whole layer run in bfloat16 (PyTorch's model and input cast to bfloat16, on its
    CPU), as no CUDA PyTorch is at hand."""
    torch = pytest.importorskip("torch")
    dev_type = device.split(":")[0]
    model, tmodel = _models(build, device)
    if dev_type == "cpu":
        t_first, t_second = _twice(tmodel, torch.tensor(data), cell,
                                   torch.autocast("cpu", dtype=torch.bfloat16))
    else:  # the hidden state cast by hand too, as GPU autocast would cast it
        t_first, t_second = _twice(tmodel.to(torch.bfloat16), torch.tensor(data).bfloat16(),
                                   cell, torch.autocast("cpu", enabled=False), half=True)
    first, second = _twice(model, pg.tensor(data, device=device), cell,
                           pg.autocast(dev_type, dtype=pg.bfloat16))
    for got, want in zip(first + second, t_first + t_second):
        assert _name(got) == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(got), _np(want), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("op,gates", [("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1),
                                      ("rnn_relu_cell", 1)])
def test_functional_cells(device: str, op: str, gates: int) -> None:
    """``pg.lstm_cell`` and the others are ops of their own: lower precision in the GPU lists;
    on cpu their linears are cast (the LSTM/GRU cells' float32 state then wins, as in PyTorch)."""
    dev_type = device.split(":")[0]
    rng = np.random.default_rng(4)

    def t(*shape: int) -> Any:
        return pg.tensor(rng.standard_normal(shape).astype(np.float32) / 2, device=device)

    x, h = t(2, 4), t(2, _H)
    hx = (h, t(2, _H)) if op == "lstm_cell" else h
    weights = (t(gates * _H, 4), t(gates * _H, _H), t(gates * _H), t(gates * _H))
    fn = getattr(pg, op)
    with pg.autocast(dev_type, dtype=pg.bfloat16):
        out = _flat(fn(x, hx, *weights))
    ref = _flat(fn(x, hx, *weights))
    on_cpu = BF if op.startswith("rnn_") else F32
    for got, want in zip(out, ref):
        assert _name(got) == (on_cpu if dev_type == "cpu" else BF)
        np.testing.assert_allclose(_np(got), _np(want), rtol=TOL, atol=TOL)
    torch = pytest.importorskip("torch") if dev_type == "cpu" else None
    if torch is not None:  # the cpu dtypes are PyTorch's
        targs = [torch.tensor(_np(w)) for w in (x, *weights)]
        thx = tuple(torch.tensor(_np(s)) for s in hx) if isinstance(hx, tuple) \
            else torch.tensor(_np(hx))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            tout = _flat(getattr(torch, op)(targs[0], thx, *targs[1:]))
        assert [_name(o) for o in tout] == [_name(o) for o in out]
