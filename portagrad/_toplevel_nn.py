"""The ``nn.functional`` operations that ``torch`` also exposes at top level (``torch.conv2d``,
``torch.batch_norm``, ``torch.kl_div`` ...), with the top-level signatures, which are ATen's and
differ from ``nn.functional``'s: losses take ``reduction`` as an int (0 none, 1 mean, 2 sum),
``batch_norm`` / ``instance_norm`` take every argument positionally (with ``cudnn_enabled``),
``embedding`` takes ``(weight, indices)``, ``dropout_`` / ``alpha_dropout`` take ``train``.
Each maps onto the implementation in :mod:`portagrad.nn.functional`; the recurrent cells are
written with its ``linear``. The activations and distances PyTorch also has at top level
(``portagrad.softmax`` with ``dim`` required, ``portagrad.dropout(input, p, train)`` ...) are here
too.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._autocast import SKIP as _SKIP
from ._autocast import STATE as _AUTOCAST
from ._autocast import autocast_call as _autocast_call
from ._dtype import bool as bool_
from ._ops.elementwise import where
from ._tensor import Tensor
from .autograd.grad_mode import no_grad
from .nn import functional as F
from .nn.modules.rnn import rnn_stack
from .nn.utils.rnn import _packed_to_padded, _padded_to_packed

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
    "embedding", "embedding_bag", "max_pool1d", "max_pool2d", "max_pool3d",
    "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss", "ctc_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss", "triplet_margin_loss",
    "bilinear", "rrelu", "rrelu_", "celu_", "selu_", "threshold_", "dropout_", "alpha_dropout",
    "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
    "feature_dropout_", "constant_pad_nd", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "embedding_renorm_", "lstm", "gru", "rnn_tanh", "rnn_relu",
    # the activations and distances whose top-level signatures equal nn.functional's but for a
    # required dim (softmax) or a positional train flag (dropout)
    "softmax", "log_softmax", "dropout", "hardshrink", "prelu", "threshold", "selu", "celu",
    "cosine_similarity", "pairwise_distance",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(fn: str, reduction: Any) -> str:
    """ATen's int reduction as ``nn.functional``'s string."""
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{fn}(): argument 'reduction' must be int (0: none, 1: mean, 2: sum), "
                        f"not {type(reduction).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}(): {reduction} is not a valid value for reduction "
                         f"(0: none, 1: mean, 2: sum)")
    return _REDUCTIONS[reduction]


# --- convolution and pooling: the same signatures as nn.functional's
conv1d = F.conv1d
conv2d = F.conv2d
conv3d = F.conv3d
conv_transpose1d = F.conv_transpose1d
conv_transpose2d = F.conv_transpose2d
conv_transpose3d = F.conv_transpose3d
avg_pool1d = F.avg_pool1d
adaptive_avg_pool1d = F.adaptive_avg_pool1d
pixel_shuffle = F.pixel_shuffle
pixel_unshuffle = F.pixel_unshuffle
channel_shuffle = F.channel_shuffle
native_channel_shuffle = F.native_channel_shuffle
bilinear = F.bilinear


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int], groups: int) -> Tensor:
    """The general convolution (``torch.convolution``): 1-, 2- or 3-d by ``weight``'s rank,
    transposed or not."""
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-, 4- or 5-dimensional weight, got "
                           f"{weight.dim()} dimensions")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding),
                  groups, tuple(dilation))
    conv = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return conv(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def _pool_stride(stride: Any) -> Any:
    # ATen's default stride is the empty list, meaning "the kernel size"
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """1-d max pooling (values only)."""
    return F.max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """2-d max pooling (values only)."""
    return F.max_pool2d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """3-d max pooling (values only)."""
    return F.max_pool3d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """1-d max pooling: ``(values, indices)``."""
    return F.max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode,
                        return_indices=True)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """Adaptive 1-d max pooling: always ``(values, indices)``, as ``torch.adaptive_max_pool1d``."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


# --- normalisation
def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """Batch normalisation with ATen's argument order (``cudnn_enabled`` is accepted and has no
    effect)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """Instance normalisation with ATen's argument order (``cudnn_enabled`` has no effect)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05, cudnn_enable: bool = True
               ) -> Tensor:
    """Layer normalisation (``cudnn_enable`` has no effect)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-05, cudnn_enabled: bool = True
               ) -> Tensor:
    """Group normalisation (``cudnn_enabled`` has no effect)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """RMS normalisation."""
    return F.rms_norm(input, normalized_shape, weight, eps)


# --- embeddings
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[indices]`` (ATen's order: weight first; ``padding_idx=-1`` means none)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float
                      ) -> Tensor:
    """Rescale, in place and without recording gradients, the rows of ``weight`` that
    ``indices`` reference whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm``
    (what ``embedding(..., max_norm=...)`` does before its lookup). Returns ``weight``."""
    if weight.dim() != 2:
        raise RuntimeError(f"embedding_renorm_: expected weight to be 2-D, got {weight.dim()}-D")
    if indices.is_floating_point() or indices.dtype == bool_:
        raise RuntimeError(f"embedding_renorm_: expected indices of an integer dtype, got "
                           f"{indices.dtype}")
    with no_grad():
        flat = indices.reshape(-1).unique()
        rows = weight.index_select(0, flat)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, flat, rows * scale)
    return weight


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple[Any, ...]:
    """Bags of embeddings (``mode`` 0 sum, 1 mean, 2 max). ATen returns four tensors; the last
    three are its backward's workspace, which portagrad does not expose: asking for them raises."""
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag(): mode must be 0 (sum), 1 (mean) or 2 (max), got "
                         f"{mode!r}")
    out = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                          mode=_BAG_MODES[mode], sparse=sparse,
                          per_sample_weights=per_sample_weights,
                          include_last_offset=include_last_offset, padding_idx=padding_idx)
    return (out, *(_Workspace() for _ in range(3)))


class _Workspace:
    """Stands for ATen's internal ``embedding_bag`` buffers (offset2bag, bag_size, max_indices),
    which portagrad does not compute."""

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(
            "embedding_bag: portagrad returns only the first output (the bags); the other three "
            "are ATen's internal workspace and are not computed")


# --- losses: ATen's int reduction
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int = 1
                                     ) -> Tensor:
    """Binary cross-entropy on logits."""
    red = _reduction("binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=red,
                                              pos_weight=pos_weight)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *, log_target: bool = False
           ) -> Tensor:
    """Kullback-Leibler divergence; ``reduction=1`` is the plain mean over elements."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "kl_div", kl_div, input, target=target, reduction=reduction, log_target=log_target)) is not _SKIP:
        return _ac_out
    red = _reduction("kl_div", reduction)
    loss = F.kl_div(input, target, reduction="none", log_target=log_target)
    return loss.mean() if red == "mean" else loss.sum() if red == "sum" else loss


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    """Cosine embedding loss."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1
                         ) -> Tensor:
    """Hinge embedding loss."""
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    """Margin ranking loss."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """Poisson negative log-likelihood (every argument required, as ATen)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: bool = False,
                        reduction: int = 1) -> Tensor:
    """Triplet margin loss."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


# --- activations and dropout: ATen's `train` and in-place forms
def rrelu(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
          generator: Any = None) -> Tensor:
    """Randomised leaky ReLU."""
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False,
           generator: Any = None) -> Tensor:
    """Randomised leaky ReLU, in place."""
    _no_generator("rrelu_", generator)
    return F.rrelu(input, lower, upper, training, inplace=True)


def _no_generator(fn: str, generator: Any) -> None:
    if generator is not None:
        raise NotImplementedError(f"{fn}: a generator argument is not supported; it draws from "
                                  f"the default generator (seed it with manual_seed)")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """CELU, in place."""
    return F.celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """SELU, in place."""
    return F.selu(input, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``input`` where it is greater than ``threshold``, else ``value``, in place."""
    return F.threshold(input, threshold, value, inplace=True)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout, in place."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout (keeps SELU's self-normalisation)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout, in place."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels, in place."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels of an ``(N, C, *)`` input (one draw per ``(N, C)`` pair)."""
    _check_p(p)
    return F._feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels, in place."""
    _check_p(p)
    return F._feature_dropout(input, p, train, True)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """Pad with a constant (``pad`` as ``nn.functional.pad``: last dimension first)."""
    return F.pad(input, list(pad), "constant", value)


# --- recurrent cells (ATen's one-step functions, written with linear)
def _gates(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
           b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    return F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step: ``hx = (h, c)`` -> ``(h', c')`` (gate order i, f, g, o)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "lstm_cell", lstm_cell, input, hx, w_ih, w_hh, b_ih, b_hh)) is not _SKIP:
        return _ac_out  # type: ignore[no-any-return]
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: expected hx to hold two tensors (h, c), got {len(hx)}")
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c1 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c1.tanh(), c1


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gate order r, z, n)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "gru_cell", gru_cell, input, hx, w_ih, w_hh, b_ih, b_hh)) is not _SKIP:
        return _ac_out  # type: ignore[no-any-return]
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with tanh."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "rnn_tanh_cell", rnn_tanh_cell, input, hx, w_ih, w_hh, b_ih, b_hh)) is not _SKIP:
        return _ac_out  # type: ignore[no-any-return]
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with ReLU."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "rnn_relu_cell", rnn_relu_cell, input, hx, w_ih, w_hh, b_ih, b_hh)) is not _SKIP:
        return _ac_out  # type: ignore[no-any-return]
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


# --- whole recurrent stacks (ATen's lstm / gru / rnn_tanh / rnn_relu, what nn.LSTM ... run)
def _rnn_stack(fn: str, mode: str, input: Tensor, hx: Any, params: Sequence[Tensor],
               has_biases: bool, num_layers: int, dropout: float, train: bool,
               bidirectional: bool, batch_first: bool) -> tuple[Tensor, ...]:
    packed = isinstance(hx, Tensor) if mode == "LSTM" else not isinstance(params, (list, tuple))
    batch_sizes: list[int] | None = None
    if packed:
        # ATen's other overload, (data, batch_sizes, hx, params, has_biases, num_layers, dropout,
        # train, bidirectional): the same nine places, so the names shift by one. The states
        # are in the packed (sorted) order, as ATen's
        batch_sizes = [int(n) for n in hx.tolist()]
        shifted: tuple[Any, ...] = (params, has_biases, num_layers, dropout, train,
                                    bidirectional, batch_first, False)
        hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = shifted
        if input.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {input.dim()}")
        input = _packed_to_padded(input, batch_sizes, len(batch_sizes), 0.0)
    elif input.dim() != 3:
        raise RuntimeError(f"{fn}: expected a 3-D input ((seq, batch, feature), or (batch, seq, "
                           f"feature) with batch_first), got {input.dim()}-D")
    per_dir = 4 if has_biases else 2
    D = 2 if bidirectional else 1
    if len(params) != num_layers * D * per_dir:
        raise RuntimeError("got an incorrect number of RNN parameters")
    if mode == "LSTM":
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        h0, c0 = hx
    else:
        h0, c0 = hx, None
    if h0.shape[0] < num_layers * D:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    x = input.transpose(0, 1) if batch_first else input
    out, hn, cn = rnn_stack(mode, x, h0, c0, list(params), has_biases, num_layers, dropout,
                            train, bidirectional, batch_sizes=batch_sizes)
    if batch_sizes is not None:
        out = _padded_to_packed(out, batch_sizes)
    if batch_first:
        out = out.transpose(0, 1)
    return (out, hn) if cn is None else (out, hn, cn)


def _stack_entry(fn: str, mode: str, input: Tensor, hx: Any, params: Sequence[Tensor],
                 *args: Any) -> tuple[Tensor, ...]:
    # under autocast the whole stack is one op, cast once as nn.LSTM ... are
    packed = isinstance(hx, Tensor) if mode == "LSTM" else not isinstance(params, (list, tuple))
    if packed and _AUTOCAST.on:
        # packed form: (data, batch_sizes, hx, params, ...); cast data, hx and the weights
        batch_sizes, hx, params, *rest = hx, params, *args
        if (_ac_out := _autocast_call(
                fn, lambda i, h, p: _rnn_stack(fn, mode, i, batch_sizes, h, p, *rest), input, hx,
                list(params))) is not _SKIP:
            return _ac_out  # type: ignore[no-any-return]
    elif _AUTOCAST.on and (_ac_out := _autocast_call(
            fn, lambda i, h, p: _rnn_stack(fn, mode, i, h, p, *args), input, hx,
            list(params) if isinstance(params, (list, tuple)) else params)) is not _SKIP:
        return _ac_out  # type: ignore[no-any-return]
    return _rnn_stack(fn, mode, input, hx, params, *args)


def lstm(input: Tensor, hx: Sequence[Tensor], params: Sequence[Tensor], has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool
         ) -> tuple[Tensor, Tensor, Tensor]:
    """A stack of LSTM layers: ``hx = (h0, c0)``, each ``(num_layers * directions, N, H)``;
    ``params`` per layer and direction ``w_ih, w_hh[, b_ih, b_hh]`` (``nn.LSTM``'s flat weights).
    Returns ``(output, h_n, c_n)``."""
    return _stack_entry("lstm", "LSTM", input, hx, params, has_biases,  # type: ignore[return-value]
                        num_layers, dropout, train, bidirectional, batch_first)


def gru(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool, num_layers: int,
        dropout: float, train: bool, bidirectional: bool, batch_first: bool
        ) -> tuple[Tensor, Tensor]:
    """A stack of GRU layers (arguments as :func:`lstm`, one hidden state): ``(output, h_n)``."""
    return _stack_entry("gru", "GRU", input, hx, params, has_biases,  # type: ignore[return-value]
                        num_layers, dropout, train, bidirectional, batch_first)


def rnn_tanh(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool,
             batch_first: bool) -> tuple[Tensor, Tensor]:
    """A stack of Elman layers with tanh (arguments as :func:`gru`): ``(output, h_n)``."""
    return _stack_entry("rnn_tanh", "RNN_TANH", input, hx, params,  # type: ignore[return-value]
                        has_biases, num_layers, dropout, train, bidirectional, batch_first)


def rnn_relu(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool,
             batch_first: bool) -> tuple[Tensor, Tensor]:
    """A stack of Elman layers with ReLU (arguments as :func:`gru`): ``(output, h_n)``."""
    return _stack_entry("rnn_relu", "RNN_RELU", input, hx, params,  # type: ignore[return-value]
                        has_biases, num_layers, dropout, train, bidirectional, batch_first)


# ----------------------------------------------------------------------------- activations
def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (computed in ``dtype`` when given)."""
    return F.log_softmax(input, dim, dtype=dtype)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero each element with probability ``p`` (scaling the rest by ``1/(1-p)``) when
    ``train``."""
    return F.dropout(input, p, train)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    return F.hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)`` (``weight`` per channel, dimension 1)."""
    return F.prelu(input, weight)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    return F.threshold(input, threshold, value)


def selu(input: Tensor) -> Tensor:
    return F.selu(input)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return F.celu(input, alpha)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dimension."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)
