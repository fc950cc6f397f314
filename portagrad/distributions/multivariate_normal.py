"""The multivariate normal distribution."""
from __future__ import annotations

import math
from typing import Any

from .._ops.linalg import cholesky, cholesky_inverse, inv, triangular_solve
from .._ops.diagonal import diagonal
from .._ops.elementwise import log
from .._random import randn
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import _broadcast, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """``x^T (L L^T)^{-1} x`` for each of a batch: ``|L^{-1} x|^2`` by a triangular solve."""
    y = triangular_solve(bx.unsqueeze(-1), bL, upper=False).solution.squeeze(-1)
    return y.pow(2).sum(-1)  # type: ignore[no-any-return]


class MultivariateNormal(Distribution):
    """Normal distribution of mean vector ``loc`` and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (the lower Cholesky factor of the covariance). The
    matrix is factored with ``linalg.cholesky``; everything is differentiable."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        matrix = given[0]
        name = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                if covariance_matrix is not None else "precision_matrix")
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = _broadcast(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = cholesky(inv(precision_matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(tuple(batch_shape))
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:  # type: ignore[override]
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> Tensor:  # type: ignore[override]
        """The covariance matrix."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self) -> Tensor:  # type: ignore[override]
        """The inverse of the covariance matrix."""
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return log(diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)).sum(-1)  # type: ignore

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if tuple(h.shape) != tuple(self._batch_shape) \
            else h
