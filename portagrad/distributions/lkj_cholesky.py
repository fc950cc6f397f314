"""The LKJ distribution over Cholesky factors of correlation matrices."""
from __future__ import annotations

import math
from typing import Any

from .._creation import arange
from .._ops.diagonal import diag_embed, diagonal
from .._ops.elementwise import clamp, log, where
from .._ops.gammafn import lgamma, mvlgamma
from .._ops.joining import cat, tril
from .._random import randn
from .._storage import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution of concentration ``concentration`` over the lower Cholesky factors of
    ``dim x dim`` correlation matrices; samples by the onion method (Beta-distributed radii,
    uniform directions)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype,
                        device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = tril(randn(shape, dtype=y.dtype, device=y.device), -1)
            norm = (u_normal ** 2).sum(-1, keepdim=True).sqrt()
            # row 0 has no entries below the diagonal: its direction is 0
            u_hypersphere = where(norm > 0, u_normal / where(norm > 0, norm, 1.0), 0.0)
            w = y.sqrt() * u_hypersphere
            tiny = 1.1754943508222875e-38 if w.dtype.itemsize == 4 else 2.2250738585072014e-308
            diag_elems = clamp(1 - (w ** 2).sum(-1), min=tiny).sqrt()
            return w + diag_embed(diag_elems)  # type: ignore[no-any-return]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = diagonal(value, 0, -1, -2)[..., 1:]
        order = arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * log(diag_elems)).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term  # type: ignore[no-any-return]
