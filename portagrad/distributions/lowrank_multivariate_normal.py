"""The multivariate normal with a low-rank-plus-diagonal covariance."""
from __future__ import annotations

import math
from typing import Any

from .._creation import eye
from .._ops.linalg import cholesky, triangular_solve
from .._ops.diagonal import diag_embed, diagonal
from .._ops.elementwise import log
from .._random import randn
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis
from .utils import _broadcast, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)  # type: ignore[no-any-return]


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W^T D^-1 W`` (the capacitance of the Woodbury identity)."""
    m = W.shape[-1]
    k = (W.mT / D.unsqueeze(-2)) @ W
    return cholesky(k + eye(m, dtype=W.dtype, device=W.device))


def _batch_lowrank_logdet(D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log det(W W^T + D)`` by the matrix determinant lemma."""
    return (2 * log(diagonal(capacitance_tril, 0, -2, -1)).sum(-1)  # type: ignore
            + log(D).sum(-1))


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor,
                               capacitance_tril: Tensor) -> Tensor:
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    wt_dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)  # type: ignore


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal of mean ``loc`` and covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``; log-densities cost ``O(n m^2)`` for an ``n x m`` factor."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            shape = _broadcast(tuple(loc.shape) + (1,), tuple(cov_factor.shape),
                               tuple(cov_diag.shape) + (1,))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.cov_factor = cov_factor.expand(shape)
        self.loc = loc.unsqueeze(-1).expand(shape[:-1] + (1,))[..., 0]
        self.cov_diag = cov_diag.unsqueeze(-1).expand(shape[:-1] + (1,))[..., 0]
        batch_shape = tuple(self.loc.shape[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LowRankMultivariateNormal:
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(tuple(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        """The diagonal of the covariance."""
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(tuple(self._batch_shape)
                                                      + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        w = self._unbroadcasted_cov_factor / d_sqrt
        k = w @ w.mT + eye(n, dtype=w.dtype, device=w.device)
        return (d_sqrt * cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``cov_factor @ cov_factor.mT + diag(cov_diag)``."""
        W = self._unbroadcasted_cov_factor
        return (W @ W.mT + diag_embed(self._unbroadcasted_cov_diag)).expand(
            self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance, by the Woodbury identity."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = triangular_solve(W.mT / D.unsqueeze(-2), self._capacitance_tril,
                             upper=False).solution
        return (diag_embed(D.reciprocal()) - a.mT @ a).expand(self._matrix_shape())

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_w = randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + m)

    def entropy(self) -> Tensor:
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if tuple(h.shape) == tuple(self._batch_shape):
            return h
        return h.expand(tuple(self._batch_shape))
