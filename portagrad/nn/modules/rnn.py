"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (multi-layer, bidirectional, ``batch_first``) and
their cells. The input projection of a whole sequence is one matmul; the recurrence loops in time."""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any

from ... import _creation, _dtype
from ..._autocast import SKIP as _SKIP
from ..._autocast import STATE as _AUTOCAST
from ..._autocast import autocast_call as _autocast_call
from ..._ops.joining import cat, stack
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _packed_to_padded, _padded_to_packed
from .module import Module

# rnn_stack (the recurrence itself, also torch.lstm ...) is imported by name, not exported with
# the layers
__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
# the ATen ops a whole layer stack and one cell step stand for, as the autocast policy names them
_SEQUENCE_OPS = {"RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}
_CELL_OPS = {"RNN_TANH": "rnn_tanh_cell", "RNN_RELU": "rnn_relu_cell", "LSTM": "lstm_cell",
             "GRU": "gru_cell"}


def _cell_step(mode: str, xg: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor,
               b_hh: Tensor | None, w_hr: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """One time step given the input projection ``xg`` (N, G*H) (input bias included);
    ``w_hr`` (an LSTM with ``proj_size``) projects the new hidden state to ``proj_size``."""
    hg = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (xg + hg).chunk(4, -1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        return (h2 if w_hr is None else F.linear(h2, w_hr)), c2
    if mode == "GRU":
        xr, xz, xn = xg.chunk(3, -1)
        hr, hz, hn = hg.chunk(3, -1)
        r = (xr + hr).sigmoid()
        z = (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        return (1.0 - z) * n + z * h, None
    pre = xg + hg
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def rnn_stack(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: list[Tensor],
              has_biases: bool, num_layers: int, dropout: float, train: bool,
              bidirectional: bool, has_proj: bool = False,
              batch_sizes: list[int] | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
    """A whole stack of recurrent layers over a time-major ``(T, N, F)`` input from the initial
    states ``h0`` (and ``c0`` for an LSTM), each ``(num_layers * directions, N, H)``:
    ``(output, h_n, c_n)`` (``c_n`` ``None`` but for an LSTM). ``weights`` are flat, per layer
    and direction ``w_ih, w_hh[, b_ih, b_hh]`` (then ``w_hr`` with ``has_proj``: an LSTM
    whose hidden state is projected, ``h0`` then ``(..., proj_size)``); ``dropout`` applies
    between layers when ``train``. The computation of ``nn.RNN``/``LSTM``/``GRU`` and of
    ``torch.rnn_tanh`` ....

    ``batch_sizes`` (a packed batch, ``x`` then padded in sorted order: decreasing lengths) says
    how many sequences run at each step: the others keep their state (``where``), so that
    ``h_n``/``c_n`` hold each sequence's state at its own last step and the reverse direction
    starts each sequence at its own last step (from ``h0``). Outputs past a sequence's end are
    left unspecified (the caller packs only the valid ones)."""
    D = 2 if bidirectional else 1
    per_dir = (4 if has_biases else 2) + (1 if has_proj else 0)
    T = x.shape[0]
    h_n: list[Tensor] = []
    c_n: list[Any] = []  # the LSTM's cell states (its steps return them, typed optional)
    N = x.shape[1]
    # one (N, 1) mask per distinct partial batch size: the first n (sorted) sequences run
    masks: dict[int, Tensor] = {}
    for n in set(batch_sizes or ()):
        if n < N:
            masks[n] = _creation.tensor([[b < n] for b in range(N)], device=x.device)
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for direction in range(D):
            ws = weights[(layer * D + direction) * per_dir:][:per_dir]
            w_ih, w_hh = ws[0], ws[1]
            b_ih = ws[2] if has_biases else None
            b_hh = ws[3] if has_biases else None
            w_hr = ws[-1] if has_proj else None
            xg = F.linear(layer_in, w_ih, b_ih)  # (T, N, G): one matmul for the sequence
            k = layer * D + direction
            h = h0[k]
            c = c0[k] if c0 is not None else None  # c0 is set exactly for LSTMs
            steps = range(T - 1, -1, -1) if direction == 1 else range(T)
            seq: list[Tensor | None] = [None] * T
            for t in steps:
                h2, c2 = _cell_step(mode, xg[t], h, c, w_hh, b_hh, w_hr)
                mask = masks.get(batch_sizes[t]) if batch_sizes is not None else None
                if mask is not None:
                    # finished (or, reversed, not yet started) sequences keep their state
                    h2 = h2.where(mask, h)
                    c2 = c2.where(mask, c) if c2 is not None else None  # type: ignore[arg-type]
                h, c = h2, c2
                seq[t] = h
            outs.append(stack(seq, 0))  # type: ignore[arg-type]
            h_n.append(h)
            if mode == "LSTM":
                c_n.append(c)
        layer_in = outs[0] if D == 1 else cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            layer_in = F.dropout(layer_in, dropout, True)
    return layer_in, stack(h_n, 0), (stack(c_n, 0) if mode == "LSTM" else None)


def _check_sizes(dropout: Any, num_layers: int, input_size: Any, hidden_size: Any) -> None:
    """PyTorch's constructor checks of a recurrent layer, in its order (the dropout first,
    warning when there is no layer boundary to apply it at)."""
    if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or \
            isinstance(dropout, bool):
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
    for name, size in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(size, int):
            raise TypeError(f"{name} should be of type int, got: {type(size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")


def _mm_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    """The error of PyTorch's matmul of ``a`` by a weight ``b`` of another dtype, which is what
    a hidden state (or a cell's input) of the wrong dtype meets first."""
    names = _dtype.SCALAR_TYPE_NAMES
    return RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                        f"{names.get(a.dtype.name, a.dtype.name)} and "
                        f"{names.get(b.dtype.name, b.dtype.name)}")


class RNNBase(Module):
    """Shared machinery of RNN/LSTM/GRU (parameter names and shapes as PyTorch)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_sizes(dropout, num_layers, input_size, hidden_size)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        num_directions = 2 if bidirectional else 1
        G = _GATES[mode] * hidden_size
        # with proj_size the hidden state (the output, h_n, the recurrent input) has that size;
        # the cell state keeps hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                setattr(self, names[0], Parameter(_creation.empty((G, layer_input), **kw)))
                setattr(self, names[1], Parameter(_creation.empty((G, real_hidden), **kw)))
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    setattr(self, names[2], Parameter(_creation.empty(G, **kw)))
                    setattr(self, names[3], Parameter(_creation.empty(G, **kw)))
                if proj_size > 0:  # after the biases, as PyTorch's names and flat order
                    names.append(f"weight_hr_l{layer}{suffix}")
                    setattr(self, names[-1],
                            Parameter(_creation.empty((proj_size, hidden_size), **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Nothing to do: as PyTorch's on CPU (cuDNN's packed weight buffer does not exist
        here); kept so that scripts calling it run unchanged."""
        return None

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, w) for w in ws] for ws in self._all_weights]

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _run(self, input: Tensor, hx: Any, weights: list[Tensor],
             packed: PackedSequence | None = None) -> tuple[Any, Any]:
        """The forward pass with the flat weights passed in (``self._flat_weights_names``
        order), so that autocast can cast them with the input and hidden state. With
        ``packed`` (a packed batch), ``input`` is its ``data`` (perhaps cast by autocast) and
        the output is packed alike; ``hx`` and the returned states are in the original batch
        order, as PyTorch's."""
        is_lstm = self.mode == "LSTM"
        batch_sizes: list[int] | None = None
        if packed is not None:
            if input.dim() != 2:
                raise RuntimeError(f"input must have 2 dimensions, got {input.dim()}")
            batch_sizes = [int(n) for n in packed.batch_sizes.tolist()]
            # padded in sorted order (batch_first does not apply to a packed batch)
            x = _packed_to_padded(input, batch_sizes, len(batch_sizes), 0.0)
            batched = True
            if hx is not None and packed.sorted_indices is not None:
                # the states given in the original order, run in the sorted one
                idx = packed.sorted_indices
                hx = ((hx[0].index_select(1, idx), hx[1].index_select(1, idx)) if is_lstm
                      else hx.index_select(1, idx))
        else:
            batched = input.dim() == 3
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1)
        N = x.shape[1]
        if x.shape[2] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[2]}")
        if hx is not None and is_lstm and len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        D = 2 if self.bidirectional else 1
        H = self.hidden_size
        H_out = self.proj_size if self.proj_size > 0 else H  # h's size; the cell state's is H
        if hx is None:
            h0 = _creation.zeros((self.num_layers * D, N, H_out), dtype=x.dtype, device=x.device)
            c0 = (_creation.zeros((self.num_layers * D, N, H), dtype=x.dtype, device=x.device)
                  if is_lstm else None)
        else:
            if is_lstm:
                h0, c0 = hx
                if not batched:
                    h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            else:
                h0 = hx if batched else hx.unsqueeze(1)
                c0 = None
            if tuple(h0.shape) != (self.num_layers * D, N, H_out):
                msg = "Expected hidden[0] size {}, got {}" if is_lstm else \
                    "Expected hidden size {}, got {}"
                raise RuntimeError(msg.format((self.num_layers * D, N, H_out), list(h0.shape)))
            if c0 is not None and tuple(c0.shape) != (self.num_layers * D, N, H):
                raise RuntimeError(f"Expected hidden[1] size {(self.num_layers * D, N, H)}, got "
                                   f"{list(c0.shape)}")
        if x.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if hx is not None and not _AUTOCAST.on:
            # the first step's recurrent matmul is where PyTorch meets a state of another dtype
            for state in (h0, c0):
                if state is not None and state.dtype != weights[1].dtype:
                    raise _mm_dtype_error(state, weights[1])
        out, hn, cn = rnn_stack(self.mode, x, h0, c0, weights, self.bias, self.num_layers,
                                self.dropout, self.training, self.bidirectional,
                                has_proj=self.proj_size > 0, batch_sizes=batch_sizes)
        if packed is not None and batch_sizes is not None:
            out_packed = PackedSequence(_padded_to_packed(out, batch_sizes), packed.batch_sizes,
                                        packed.sorted_indices, packed.unsorted_indices)
            if packed.unsorted_indices is not None:
                hn = hn.index_select(1, packed.unsorted_indices)
                cn = cn.index_select(1, packed.unsorted_indices) if cn is not None else None
            return out_packed, ((hn, cn) if is_lstm else hn)
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if cn is not None else None
        return out, ((hn, cn) if is_lstm else hn)

    def _check_input_dims(self, input: Tensor, hx: Any) -> None:
        """PyTorch's checks of a padded input's and its initial state's dimensions, made before
        any other (2-D input: one unbatched sequence, whose states are then 2-D too)."""
        if input.dim() not in (2, 3):
            # (PyTorch's RNN says "tensor" where its LSTM and GRU do not)
            what = " tensor" if self.mode in ("RNN_TANH", "RNN_RELU") else ""
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D{what} instead")
        if hx is None:
            return
        want, how = (3, "batched 3-D") if input.dim() == 3 else (2, "unbatched 2-D")
        if self.mode == "LSTM":
            h, c = hx[0], hx[1]  # (a 1-tuple fails here, with PyTorch's IndexError)
            if h.dim() != want or c.dim() != want:
                raise RuntimeError(f"For {how} input, hx and cx should also be {want}-D but got "
                                   f"({h.dim()}-D, {c.dim()}-D) tensors")
        elif hx.dim() != want:
            raise RuntimeError(f"For {how} input, hx should also be {want}-D but got "
                               f"{hx.dim()}-D tensor")

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, Any]:
        """``(output, h_n)`` (an LSTM's ``(output, (h_n, c_n))``) for a ``(T, N, F)`` input
        (``(N, T, F)`` with ``batch_first``, ``(T, F)`` unbatched) or a :class:`PackedSequence`
        (whose output is then packed too)."""
        weights = [getattr(self, n) for n in self._flat_weights_names]
        if not isinstance(input, PackedSequence):
            self._check_input_dims(input, hx)
        data = input.data if isinstance(input, PackedSequence) else input
        if not _AUTOCAST.on and data.dtype != weights[0].dtype:
            # (autocast casts the input and the weights alike: no check there, as PyTorch's)
            raise ValueError(f"RNN input dtype ({data.dtype}) does not match weight dtype "
                             f"({weights[0].dtype}). Convert input: input.to({weights[0].dtype}), "
                             f"or convert model: model.to({data.dtype})")
        if isinstance(input, PackedSequence):
            # the packed data goes through autocast as a tensor; the layout rides along
            run = functools.partial(self._run, packed=input)
            if _AUTOCAST.on and (_ac_out := _autocast_call(
                    _SEQUENCE_OPS[self.mode], run, input.data, hx, weights)) is not _SKIP:
                return _ac_out  # type: ignore[no-any-return]
            return run(input.data, hx, weights)
        # under autocast the whole stack is one op (PyTorch's lstm/gru/rnn_tanh/rnn_relu): where
        # its policy lists it, input, hidden state and weights are cast once and every step runs
        # in that type; elsewhere the steps' own ops (linear) are cast one by one
        if _AUTOCAST.on and (_ac_out := _autocast_call(
                _SEQUENCE_OPS[self.mode], self._run, input, hx, weights)) is not _SKIP:
            return _ac_out  # type: ignore[no-any-return]
        return self._run(input, hx, weights)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """LSTM (gates i, f, g, o); returns ``output, (h_n, c_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """GRU (gates r, z, n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


class RNNCellBase(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _step(self, input: Tensor, h: Tensor, c: Tensor | None) -> tuple[Tensor, Tensor | None]:
        # one cell step is one op (PyTorch's lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell),
        # lower precision in the GPU lists; not listed on cpu, where its linears are cast instead
        if _AUTOCAST.on and (_ac_out := _autocast_call(
                _CELL_OPS[self._mode], self._step_impl, input, h, c, self.weight_ih,
                self.weight_hh, self.bias_ih, self.bias_hh)) is not _SKIP:
            return _ac_out  # type: ignore[no-any-return]
        return self._step_impl(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih,
                               self.bias_hh)

    def _step_impl(self, input: Tensor, h: Tensor, c: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                   b_ih: Tensor | None, b_hh: Tensor | None) -> tuple[Tensor, Tensor | None]:
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        h = h if batched else h.unsqueeze(0)
        if c is not None and not batched:
            c = c.unsqueeze(0)
        xg = F.linear(x, w_ih, b_ih)
        h2, c2 = _cell_step(self._mode, xg, h, c, w_hh, b_hh)
        if not batched:
            h2 = h2.squeeze(0)
            c2 = c2.squeeze(0) if c2 is not None else None
        return h2, c2

    def _check_dims(self, input: Tensor, hidden: dict[str, Tensor | None]) -> None:
        """PyTorch's checks: a cell takes one step of a batch (2-D) or of one sequence (1-D)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        for label, h in hidden.items():
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D "
                                 f"instead")

    def _check_step(self, input: Tensor, hidden: list[Tensor]) -> None:
        """PyTorch's checks of a step's input and given states (after the dimension checks), in
        its order: input size, then each state's batch size and hidden size, then the dtypes
        of the input and the first state against the weights (the matmuls' own error)."""
        batched = input.dim() == 2
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        n = input.shape[0] if batched else 1
        for k, h in enumerate(hidden):
            # a 1-D input's states are taken as one row; a batched input's must be 2-D
            shape = tuple(h.shape) if batched else (1,) + tuple(h.shape)
            if shape[0] != n:
                raise RuntimeError(f"Input batch size {n} doesn't match hidden{k} batch size "
                                   f"{shape[0]}")
            if len(shape) < 2:  # PyTorch reads the missing hidden size: an index error
                raise IndexError("Dimension out of range (expected to be in range of [-1, 0], "
                                 "but got 1)")
            if shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {shape[1]}, "
                                   f"expected {self.hidden_size}")
        if _AUTOCAST.on:  # the step's matmuls cast their operands
            return
        if input.dtype != self.weight_ih.dtype:
            raise _mm_dtype_error(input, self.weight_ih)
        if hidden and hidden[0].dtype != self.weight_hh.dtype:
            raise _mm_dtype_error(hidden[0], self.weight_hh)

    def _zeros(self, input: Tensor) -> Tensor:
        shape = (input.shape[0], self.hidden_size) if input.dim() == 2 else (self.hidden_size,)
        return _creation.zeros(shape, dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        # as PyTorch, an unknown nonlinearity is accepted here and refused at forward (which
        # reads the attribute again: it may be changed after construction)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_RELU" if nonlinearity == "relu" else "RNN_TANH"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step: the new hidden state ``(N, H)`` (``(H,)`` for a 1-D input)."""
        self._check_dims(input, {"hidden": hx})
        if self.nonlinearity == "tanh":
            self._mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            self._mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_step(input, [] if hx is None else [hx])
        h = self._zeros(input) if hx is None else hx
        return self._step(input, h, None)[0]


class LSTMCell(RNNCellBase):
    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Tensor]:
        """One step: the new ``(h, c)``."""
        if isinstance(hx, Tensor):
            raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, "
                            "not Tensor")
        self._check_dims(input, {})  # the input's first, then the number of states
        if hx is not None and len(hx) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        self._check_dims(input, {} if hx is None else {"hx[0]": hx[0], "hx[1]": hx[1]})
        self._check_step(input, [] if hx is None else list(hx))
        if hx is None:
            hx = (self._zeros(input), self._zeros(input))
        h, c = self._step(input, hx[0], hx[1])
        return h, c  # type: ignore[return-value]


class GRUCell(RNNCellBase):
    _mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step: the new hidden state."""
        self._check_dims(input, {"hidden": hx})
        self._check_step(input, [] if hx is None else [hx])
        h = self._zeros(input) if hx is None else hx
        return self._step(input, h, None)[0]
