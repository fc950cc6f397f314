"""Probability distributions with sampling, reparameterised sampling and differentiable
``log_prob`` (``torch.distributions``).

Samples are drawn with portagrad's generator (``pg.manual_seed`` makes them reproducible) on the
device of the parameters."""
from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .distribution import Distribution
from .exponential import Exponential
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform,
                         SigmoidTransform, TanhTransform, Transform)
from .uniform import Uniform

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Binomial", "Categorical", "Cauchy",
           "ComposeTransform", "Distribution", "ExpRelaxedCategorical", "ExpTransform",
           "Exponential", "Geometric", "Gumbel", "HalfNormal", "Independent", "Laplace",
           "LogNormal", "LogitRelaxedBernoulli", "Normal", "OneHotCategorical", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "transforms"]
