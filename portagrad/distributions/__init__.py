"""Probability distributions with sampling, reparameterised sampling and differentiable
``log_prob`` (``torch.distributions``).

Samples are drawn with portagrad's generator (``pg.manual_seed`` makes them reproducible) on the
device of the parameters."""
from __future__ import annotations

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exponential import Exponential
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Exponential", "Independent", "Laplace",
           "Normal", "OneHotCategorical", "Uniform", "constraints", "kl_divergence",
           "register_kl"]
