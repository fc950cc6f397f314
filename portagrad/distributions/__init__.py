"""Probability distributions with sampling, reparameterised sampling and differentiable
``log_prob`` (``torch.distributions``).

Samples are drawn with portagrad's generator (``pg.manual_seed`` makes them reproducible) on the
device of the parameters.

The package follows the structure of PyTorch's ``torch/distributions`` file by file; PyTorch's
copyright notice and BSD license are in THIRD_PARTY_NOTICES.md at the root of the source tree."""
from __future__ import annotations

from . import constraints, transforms
from . import fishersnedecor, studentT  # noqa: F401  (PyTorch's names of two modules)
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fisher_snedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kumaraswamy import Kumaraswamy
from .lkj_cholesky import LKJCholesky
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform, CumulativeDistributionTransform, ExpTransform,
                         IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                         PowerTransform, ReshapeTransform,
                         SigmoidTransform, SoftmaxTransform, SoftplusTransform, StackTransform,
                         StickBreakingTransform, TanhTransform, Transform, identity_transform)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Binomial", "Categorical", "Cauchy",
           "ComposeTransform", "Distribution", "ExpRelaxedCategorical", "ExpTransform",
           "Exponential", "Geometric", "Gumbel", "HalfNormal", "Independent", "Laplace",
           "LogNormal", "LogitRelaxedBernoulli", "Normal", "OneHotCategorical", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "constraints", "kl_divergence",
           "register_kl", "transforms", "Beta", "Chi2", "Dirichlet", "ExponentialFamily", "Gamma",
           "HalfCauchy", "InverseGamma", "MultivariateNormal", "Pareto", "PowerTransform",
           "StudentT", "Weibull", "FisherSnedecor", "Kumaraswamy", "Multinomial",
           "NegativeBinomial", "OneHotCategoricalStraightThrough", "LogisticNormal", "biject_to",
           "transform_to", "CatTransform", "CumulativeDistributionTransform",
           "IndependentTransform", "LowerCholeskyTransform", "ReshapeTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform",
           "identity_transform", "ContinuousBernoulli", "GeneralizedPareto", "MixtureSameFamily",
           "VonMises", "LowRankMultivariateNormal", "CorrCholeskyTransform",
           "PositiveDefiniteTransform", "LKJCholesky", "Wishart"]
