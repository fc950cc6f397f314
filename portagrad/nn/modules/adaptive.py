"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. for large vocabularies."""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from ..._ops.joining import cat
from ..._tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of ``n_classes`` classes split at ``cutoffs``: the head scores the
    ``cutoffs[0]`` most frequent classes and one entry per tail cluster; each cluster's classes
    are scored by a two-layer projection ``in_features -> in_features // div_value**(i+1) ->
    cluster size``. ``forward(input, target)`` returns ``(output, loss)``: each target's
    log-probability and the mean negative log-likelihood."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                             "an increasing order, where each value is between 1 and "
                             "n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for proj in self.tail:
            for layer in proj.children():
                layer.reset_parameters()

    def _full_log_prob(self, input: Tensor) -> Tensor:
        head = F.log_softmax(self.head(input), 1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), 1)
            parts.append(cluster + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return cat(parts, 1)

    def forward(self, input_: Tensor, target_: Tensor) -> Any:
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel():
            lo, hi = int(target.min().item()), int(target.max().item())
            if lo < 0 or hi > self.n_classes - 1:
                raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                                   f"values in range [{lo}, {hi}] were found. ")
        # every class's log-probability, then each target's (the same values as scoring only the
        # clusters the targets fall in)
        output = self._full_log_prob(input).gather(1, target.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class, (N, n_classes) (or (n_classes,) unbatched)."""
        batched = input.dim() > 1
        out = self._full_log_prob(input if batched else input.unsqueeze(0))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row."""
        return self.log_prob(input).argmax(-1)
