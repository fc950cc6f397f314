"""Kullback-Leibler divergence between two distributions, dispatched on their types."""
from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable

from .._creation import full_like
from .._ops.elementwise import erf, exp, log, log1p, where
from .._tensor import Tensor
from ..nn.functional import softplus
from .._ops.gammafn import digamma, lgamma
from .bernoulli import Bernoulli
from .beta import Beta
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .gamma import Gamma
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .exponential import Exponential
from .geometric import Geometric
from .gumbel import Gumbel
from .independent import Independent, _sum_rightmost
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator registering a pairwise ``kl_divergence(p, q)`` implementation::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q): ...
    """
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The registered implementation for the most specific pair of base classes."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    # most specific first: smallest (distance in p's MRO, distance in q's MRO)
    best = min(matches, key=lambda m: (type_p.__mro__.index(m[0]) + type_q.__mro__.index(m[1]),
                                       type_p.__mro__.index(m[0])))
    return _KL_REGISTRY[best]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)``, batched over the batch shape; ``NotImplementedError`` for a pair of types
    without a registered implementation."""
    key = (type(p), type(q))
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _KL_MEMOIZE[key] = _dispatch_kl(type(p), type(q))
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(q.probs == 0, math.inf, t1)
    t1 = where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(q.probs == 1, math.inf, t2)
    t2 = where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = where((q.probs == 0).expand_as(t), math.inf, t)
    t = where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = log((q.high - q.low) / (p.high - p.low))
    outside = (q.low > p.low) | (q.high < p.high)
    return where(outside, math.inf, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - log(rate_ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different "
                                  "reinterpreted_batch_ndims is not implemented")
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (log(p.rate) - log(q.rate)) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    # KL is infinite where p has more trials than q (its support is larger)
    if bool((p.total_count < q.total_count).any().item()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + log1p(-p.probs) - log1p(-q.probs))
    return where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sum_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sum_q - sum_p) * digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    half_term1 = q._half_log_det() - p._half_log_det()
    n = p.event_shape[0]
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|_F^2, column by column through the Mahalanobis helper
    lp = p._unbroadcasted_scale_tril.mT  # rows are the columns of Lp
    term2 = _batch_mahalanobis(q._unbroadcasted_scale_tril.unsqueeze(-3), lp).sum(-1)
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


_EULER_GAMMA = 0.57721566490153286060


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * log(scale_ratio) - log(alpha_ratio) + alpha_ratio - 1
    # p puts mass below q's minimum: infinite
    return where(p.scale < q.scale, math.inf, result)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * log(ratio)
    return (t1 + ratio + lgamma(q.concentration) + q.concentration * _EULER_GAMMA
            - (1 + _EULER_GAMMA))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return _kl_gamma_gamma(p, Gamma(q.rate.new_ones(q.rate.shape), q.rate, validate_args=False))


# ---------------------------------------------------------------------- more pairs of one family
@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    # the same bijection applied to both leaves the divergence unchanged
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, len(p.event_shape) - len(p.base_dist.event_shape))


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return log(num / (4 * p.scale * q.scale))


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    # E_p[exp(-(x - mu_q) / beta_q)] = exp((mu_q - mu_p) / beta_q) Gamma(1 + beta_p / beta_q)
    ratio = p.scale / q.scale
    t1 = log(q.scale / p.scale) + _EULER_GAMMA * (ratio - 1) + (p.loc - q.loc) / q.scale
    return t1 + exp((q.loc - p.loc) / q.scale + lgamma(ratio + 1)) - 1


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # E_p[x] = (1 - p) / p failures before the first success
    return -p.entropy() - log(q.probs) - (1 - p.probs) / p.probs * log1p(-q.probs)


def _as_mvn(d: Any) -> MultivariateNormal:
    """A low-rank multivariate normal as a full one (same mean and covariance)."""
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix, validate_args=False)


def _kl_lowrank(p: Any, q: Any) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    return _kl_mvn_mvn(_as_mvn(p), _as_mvn(q))


register_kl(MultivariateNormal, LowRankMultivariateNormal)(_kl_lowrank)
register_kl(LowRankMultivariateNormal, MultivariateNormal)(_kl_lowrank)
register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)(_kl_lowrank)


# ------------------------------------------------------------------ pairs of different families
# KL(p || q) = -H(p) - E_p[log q(x)]; each q below contributes its own expectation. Where p puts
# mass outside q's support the divergence is infinite (a constant: it has no gradient).
def _infinite(param: Tensor) -> Tensor:
    """``inf`` of the shape and dtype of ``param`` (p's batch shape)."""
    return full_like(param.detach(), math.inf)


def _to_normal(p: Any, q: Normal) -> Tensor:
    """From p's entropy, mean and variance: ``E_p[(x - mu)^2] = var + (mean - mu)^2``."""
    sq = p.variance + (p.mean - q.loc).pow(2)
    return (-p.entropy() + 0.5 * math.log(2 * math.pi) + log(q.scale)
            + sq / (2 * q.scale.pow(2)))


def _to_gamma(p: Any, q: Gamma, mean_log: Tensor) -> Tensor:
    """``mean_log`` is ``E_p[log x]``."""
    return (-p.entropy() - q.concentration * log(q.rate) + lgamma(q.concentration)
            - (q.concentration - 1) * mean_log + q.rate * p.mean)


def _to_exponential(p: Any, q: Exponential) -> Tensor:
    return -p.entropy() - log(q.rate) + q.rate * p.mean


def _to_gumbel(p: Any, q: Gumbel, mean_exp: Tensor) -> Tensor:
    """``mean_exp`` is ``E_p[exp(-x / beta_q)]``."""
    z_mean = (p.mean - q.loc) / q.scale
    return -p.entropy() + log(q.scale) + z_mean + exp(q.loc / q.scale) * mean_exp


def _to_continuous_bernoulli(p: Any, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - (p.mean * q.logits + log1p(-q.probs) + q._cont_bern_log_norm())


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * log(q.rate) - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _to_continuous_bernoulli(p, q)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return _to_exponential(p, q)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    mean_log = digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)
    return _to_gamma(p, q, mean_log)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + log(q.high - q.low)
    return where((q.low > 0) | (q.high < 1), math.inf, result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return _to_exponential(p, q)


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + log(q.high - q.low)
    # PyTorch counts a bound of q on the support's edge as outside it
    return where((q.low >= 0) | (q.high <= 1), math.inf, result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scaled_rate = p.rate * q.scale
    return _to_gumbel(p, q, scaled_rate / (scaled_rate + 1))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    scaled_rate = p.rate * q.scale
    mean_exp = exp(p.concentration * log(scaled_rate / (scaled_rate + 1)))
    return _to_gumbel(p, q, mean_exp)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    # E[exp(-x / beta)] of a normal: its moment generating function at -1 / beta
    mean_exp = exp(-p.loc / q.scale + (p.scale / q.scale).pow(2) / 2)
    return _to_gumbel(p, q, mean_exp)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|x - mu_q| of a normal (the mean of a folded normal)
    diff = p.loc - q.loc
    mean_abs = (p.scale * math.sqrt(2 / math.pi) * exp(-0.5 * (diff / p.scale).pow(2))
                + diff * erf(diff / (p.scale * math.sqrt(2))))
    return -p.entropy() + log(2 * q.scale) + mean_abs / q.scale


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    return where(p.alpha <= 1, math.inf, _to_exponential(p, q))


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    mean_log = log(p.scale) + p.alpha.reciprocal()
    return where(p.alpha <= 1, math.inf, _to_gamma(p, q, mean_log))


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    return where(p.alpha <= 2, math.inf, _to_normal(p, q))


def _uniform_mean_xlogx(lo: Tensor, hi: Tensor) -> Tensor:
    """``E[log x]`` for ``x`` uniform on ``[lo, hi]``, ``0 <= lo``: ``[x log x - x]`` over the
    interval, divided by its width (``0 log 0 = 0``)."""
    def xlogx(x: Tensor) -> Tensor:
        safe = where(x > 0, x, 1.0)
        return safe * log(safe) * (x > 0)
    return (xlogx(hi) - xlogx(lo)) / (hi - lo) - 1


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    mean_log = _uniform_mean_xlogx(p.low, p.high)
    mean_log1m = _uniform_mean_xlogx(1 - p.high, 1 - p.low)
    a, b = q.concentration1, q.concentration0
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    result = -log(width) - (a - 1) * mean_log - (b - 1) * mean_log1m + lbeta
    return where((p.low < 0) | (p.high > 1), math.inf, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = _to_continuous_bernoulli(p, q)
    # PyTorch counts a bound of p on the support's edge as outside it
    return where((p.low <= 0) | (p.high >= 1), math.inf, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    return where(p.low < 0, math.inf, _to_exponential(p, q))


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    result = _to_gamma(p, q, _uniform_mean_xlogx(p.low, p.high))
    return where(p.low < 0, math.inf, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    mean_exp = (q.scale * (exp(-p.low / q.scale) - exp(-p.high / q.scale))
                / (p.high - p.low))
    return _to_gumbel(p, q, mean_exp)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    return _to_normal(p, q)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    mean_log = _uniform_mean_xlogx(p.low, p.high)
    result = (-p.entropy() - log(q.alpha) - q.alpha * log(q.scale)
              + (q.alpha + 1) * mean_log)
    return where(p.low < q.scale, math.inf, result)


def _register_infinite(pairs: list[tuple[type, type, str]]) -> None:
    """Pairs where p's support is never inside q's: ``inf`` of p's batch shape (``attr`` names a
    parameter of p broadcast to it)."""
    for type_p, type_q, attr in pairs:
        def kl(p: Any, q: Any, attr: str = attr) -> Tensor:
            return _infinite(getattr(p, attr))
        register_kl(type_p, type_q)(kl)


_register_infinite(
    [(Beta, Pareto, "concentration0"), (ContinuousBernoulli, Pareto, "probs"),
     (Exponential, Beta, "rate"), (Exponential, ContinuousBernoulli, "rate"),
     (Exponential, Pareto, "rate"), (Exponential, Uniform, "rate"),
     (Gamma, Beta, "concentration"), (Gamma, ContinuousBernoulli, "concentration"),
     (Gamma, Pareto, "concentration"), (Gamma, Uniform, "concentration"),
     (Gumbel, Beta, "loc"), (Gumbel, ContinuousBernoulli, "loc"), (Gumbel, Exponential, "loc"),
     (Gumbel, Gamma, "loc"), (Gumbel, Pareto, "loc"), (Gumbel, Uniform, "loc"),
     (Laplace, Beta, "loc"), (Laplace, ContinuousBernoulli, "loc"),
     (Laplace, Exponential, "loc"), (Laplace, Gamma, "loc"), (Laplace, Pareto, "loc"),
     (Laplace, Uniform, "loc"),
     (Normal, Beta, "loc"), (Normal, ContinuousBernoulli, "loc"), (Normal, Exponential, "loc"),
     (Normal, Gamma, "loc"), (Normal, Pareto, "loc"), (Normal, Uniform, "loc"),
     (Pareto, Beta, "scale"), (Pareto, ContinuousBernoulli, "scale"),
     (Pareto, Uniform, "scale"),
     (Poisson, Bernoulli, "rate"), (Poisson, Binomial, "rate")])
