"""The Wishart distribution over positive-definite matrices."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from .._creation import arange, eye
from .._creation import tensor as _tensor
from .._ops.linalg import cholesky, cholesky_solve, inv, slogdet
from .._ops.diagonal import diag_embed, diagonal
from .._ops.elementwise import clamp, log, where
from .._ops.gammafn import digamma, mvlgamma
from .._ops.joining import tril
from .._random import randn
from .._storage import Size
from .._tensor import Tensor
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .utils import _broadcast, lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma: ``sum_i digamma(x - i / 2)`` for ``i < p``."""
    half = arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - half).sum(-1)  # type: ignore[no-any-return]


class Wishart(ExponentialFamily):
    """Wishart distribution of ``df`` degrees of freedom and scale given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``. ``rsample`` uses the Bartlett
    decomposition (chi-squared diagonal, normal lower triangle), differentiable in every
    parameter; PyTorch's retries of singular samples are not done (a sample is singular with
    probability 0 when ``df > ndim - 1``)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Any, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                             "may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = _tensor(float(df), dtype=param.dtype, device=param.device)  # type: ignore
        else:
            batch_shape = _broadcast(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any().item()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        name = ("scale_tril" if scale_tril is not None else "covariance_matrix"
                if covariance_matrix is not None else "precision_matrix")
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        if bool((self.df < p).any().item()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        self._event_shape = Size(event_shape)  # arg_constraints reads it during validation
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = cholesky(inv(precision_matrix))
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape: Any) -> Chi2:
        p = self._event_shape[-1]
        steps = arange(p, dtype=self._unbroadcasted_scale_tril.dtype,
                       device=self._unbroadcasted_scale_tril.device)
        return Chi2(self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)),
                    validate_args=False)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(tuple(batch_shape))
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._event_shape = self.event_shape
        new._dist_chi2 = new._chi2(batch_shape)
        ExponentialFamily.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple[int, ...]:
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:  # type: ignore[override]
        """The lower Cholesky factor of the scale matrix."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:  # type: ignore[override]
        """The scale matrix."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:  # type: ignore[override]
        """The inverse of the scale matrix."""
        L = self._unbroadcasted_scale_tril
        identity = eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return cholesky_solve(identity, L).expand(self._matrix_shape())

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        diag_v = diagonal(V, 0, -2, -1)
        return self._df_matrix() * (V.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        eps = 1.1920928955078125e-07 if chi.dtype.itemsize == 4 else 2.220446049250313e-16
        shape = tuple(chi.shape[:-1]) + (p, p)
        below = tril(randn(shape, dtype=chi.dtype, device=chi.device), -1)
        noise = diag_embed(clamp(chi, min=eps)) + below
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT  # type: ignore[no-any-return]

    def _log_det_scale_half(self) -> Tensor:
        return log(diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)).sum(-1)  # type: ignore

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        trace = diagonal(cholesky_solve(value, self._unbroadcasted_scale_tril), 0, -2,
                         -1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + self._log_det_scale_half())  # type: ignore
                - mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * slogdet(value).logabsdet
                - trace / 2)

    def entropy(self) -> Tensor:
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._log_det_scale_half())  # type: ignore
                + mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, *natural_params: Any) -> Tensor:
        x, y = natural_params
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + _LOG_2 * p)  # type: ignore
                + mvlgamma(y + (p + 1) / 2, p))
