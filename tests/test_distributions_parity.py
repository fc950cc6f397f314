"""Parity of ``pg.distributions`` with ``torch.distributions``: log-probabilities and their
gradients at edge parameters and outside the support, ``SigmoidTransform``'s clamping, transform
equality and ``with_cache``, the ``kl_divergence`` pairs across families, constraint masks and
the triangular-matrix helpers of ``utils``; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad import distributions as D

INF = math.inf
F64 = pg.float64


def t(device: str, data, dtype=F64, grad: bool = False) -> pg.Tensor:
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=grad)


def close(actual: pg.Tensor, expected, rtol: float = 1e-9, atol: float = 1e-9) -> None:
    np.testing.assert_allclose(actual.detach().numpy(force=True), np.asarray(expected, np.float64),
                               rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------- Binomial
def test_binomial_log_prob_grad_at_even_odds(device: str) -> None:
    # logits == 0 (probs 0.5): the gradient of k log p + (n - k) log(1 - p) is k/p - (n-k)/(1-p)
    probs = t(device, [0.2, 0.5, 0.9], grad=True)
    lp = D.Binomial(t(device, [5., 10., 3.]), probs=probs).log_prob(t(device, [0., 5., 3.]))
    lp.sum().backward()
    close(lp, [-1.1157177565710485, -1.402042718088028, -0.31608154697347857])
    close(probs.grad, [-6.25, 0.0, 3.3333333333333317])

    logits = t(device, [-1., 0., 2.], grad=True)
    lp = D.Binomial(t(device, [5., 10., 3.]), logits=logits).log_prob(t(device, [0., 5., 3.]))
    lp.sum().backward()
    close(lp, [-1.5663084375911143, -1.402042718088028, -0.38078403312891673])
    close(logits.grad, [-1.3447071068499756, 0.0, 0.3576087660663525])


def test_binomial_log_prob_extreme_logits(device: str) -> None:
    logits = t(device, [0., 50., -50., 0.], grad=True)
    lp = D.Binomial(t(device, [4., 10., 10., 3.]), logits=logits).log_prob(
        t(device, [4., 10., 0., 0.]))
    lp.sum().backward()
    close(lp, [-2.772588722239781, 0.0, 0.0, -2.0794415416798357])
    close(logits.grad, [2.0, 0.0, 0.0, -1.5])


# ------------------------------------------------------------------------------------- Gamma
def test_gamma_log_prob_concentration_one_outside_support(device: str) -> None:
    # xlogy(concentration - 1, value) is 0 wherever concentration is 1, even at value < 0
    conc = t(device, [1., 1., 2., 1.], grad=True)
    lp = D.Gamma(conc, 0.5, validate_args=False).log_prob(t(device, [0., -1., 0., 2.]))
    lp.sum().backward()
    close(lp, [-0.6931471805599453, -0.1931471805599453, -INF, -1.6931471805599454])
    close(conc.grad, [-0.11593151565841253, -0.11593151565841253, -INF, 0.5772156649015329])
    close(D.Chi2(t(device, [2., 2.]), validate_args=False).log_prob(t(device, [-1., 3.])),
          [-0.1931471805599453, -2.1931471805599454])


# ---------------------------------------------------------------------------- transforms
@pytest.mark.parametrize("dtype, forward, inverse", [
    (pg.float32, [1.1754943508222875e-38, 1.1754943508222875e-38, 9.357623589846195e-14, 0.5,
                  0.9999998807907104], [-87.3365478515625, -46.051700592041016, 0.0,
                                        15.942384719848633]),
    (pg.float64, [2.2250738585072014e-308, 3.7200759760208356e-44, 9.357622968839299e-14, 0.5,
                  0.9999999999999065], [-708.3964185322641, -46.051701859880914, 0.0,
                                        36.04365338911715]),
])
def test_sigmoid_transform_clamps_to_tiny(device: str, dtype, forward, inverse) -> None:
    # clamped to [tiny, 1 - eps]: sigmoid(-30) keeps its value instead of becoming eps
    tr = D.transforms.SigmoidTransform()
    y = tr(t(device, [-800., -100., -30., 0., 30.], dtype))
    assert y.dtype == dtype
    close(y, forward, rtol=1e-6, atol=0)
    close(tr.inv(t(device, [0., 1e-20, 0.5, 1.], dtype)), inverse, rtol=1e-6, atol=0)


def test_relaxed_bernoulli_log_prob_at_zero(device: str) -> None:
    d = D.RelaxedBernoulli(t(device, 0.5), t(device, [0.3, 0.3]))
    close(d.log_prob(t(device, [0., 1e-30])), [354.3523599459593, 34.69292707473794], rtol=1e-7)


def test_transform_equality() -> None:
    tr = D.transforms
    assert tr.ExpTransform() == tr.ExpTransform()
    assert not tr.ExpTransform() != tr.ExpTransform()
    assert tr.ExpTransform() != tr.SigmoidTransform()
    assert tr.ExpTransform() != 3
    assert tr.ExpTransform().inv == tr.ExpTransform().inv
    assert tr.ExpTransform().inv != tr.ExpTransform()
    assert tr.AffineTransform(0., 1.) == tr.AffineTransform(0., 1.)
    assert tr.AffineTransform(0., 1.) != tr.AffineTransform(0., 2.)
    assert tr.AffineTransform(0., 1., event_dim=1) == tr.AffineTransform(0., 1.)
    assert tr.AffineTransform(pg.tensor(0.), 1.) == tr.AffineTransform(0., 1.)
    assert tr.AffineTransform(pg.tensor([0., 1.]), 1.) == tr.AffineTransform(pg.tensor([0., 1.]), 1.)
    assert tr.AffineTransform(pg.tensor([0., 1.]), 1.) != tr.AffineTransform(pg.tensor([0., 2.]), 1.)
    assert tr.PowerTransform(2.) == tr.PowerTransform(pg.tensor(2.))
    assert tr.PowerTransform(pg.tensor([2., 3.])) == tr.PowerTransform(pg.tensor([2., 3.]))
    assert tr.ComposeTransform([tr.ExpTransform()]) == tr.ComposeTransform([tr.ExpTransform()])
    assert tr.ComposeTransform([]) == tr.identity_transform
    for cls in (tr.AbsTransform, tr.StickBreakingTransform, tr.SoftmaxTransform, tr.TanhTransform,
                tr.SoftplusTransform, tr.LowerCholeskyTransform, tr.PositiveDefiniteTransform):
        assert cls() == cls()
    # transforms PyTorch compares by identity
    assert tr.CorrCholeskyTransform() != tr.CorrCholeskyTransform()
    assert tr.IndependentTransform(tr.ExpTransform(), 1) != tr.IndependentTransform(tr.ExpTransform(), 1)
    assert tr.ReshapeTransform((2,), (2,)) != tr.ReshapeTransform((2,), (2,))
    assert tr.CatTransform([tr.ExpTransform()]) != tr.CatTransform([tr.ExpTransform()])


# ------------------------------------------------------------------- KL: same-family pairs
def test_kl_transformed_distributions(device: str) -> None:
    kl = D.kl_divergence
    close(kl(D.LogNormal(t(device, [0., 1.]), t(device, [1., 2.])),
             D.LogNormal(t(device, [0.5, -1.]), t(device, [3., 0.5]))),
          [0.6680567331125542, 14.11370563888011])
    close(kl(D.HalfNormal(t(device, [1., 2.])), D.HalfNormal(t(device, [3., 0.5]))),
          [0.6541678442236654, 6.113705638880109])
    close(kl(D.HalfCauchy(t(device, [1., 2.])), D.HalfCauchy(t(device, [3., 0.5]))),
          [0.2876820724517808, 0.44628710262841964])
    close(kl(D.InverseGamma(t(device, [2., 3.]), t(device, [1., 2.])),
             D.InverseGamma(t(device, [1.5, 4.]), t(device, [2., 1.]))),
          [1.0508891590740705, 1.4484166758094235])
    # the event dimension added by the transform is summed
    sb = D.transforms.StickBreakingTransform()
    result = kl(D.TransformedDistribution(D.Normal(t(device, [0., 0.]), 1.), [sb]),
                D.TransformedDistribution(D.Normal(t(device, [0., 1.]), 2.), [sb]))
    assert tuple(result.shape) == ()
    close(result, 0.7612943611198906)


def test_kl_transformed_distributions_unsupported(device: str) -> None:
    with pytest.raises(NotImplementedError):  # different transforms
        D.kl_divergence(D.LogNormal(t(device, [0.]), t(device, [1.])),
                        D.HalfNormal(t(device, [1.])))
    with pytest.raises(NotImplementedError):  # transforms depending on the parameters
        D.kl_divergence(D.Weibull(t(device, [2.]), t(device, [1.])),
                        D.Weibull(t(device, [3.]), t(device, [1.])))
    with pytest.raises(NotImplementedError, match="LogitRelaxedBernoulli"):  # no base pair
        D.kl_divergence(D.RelaxedBernoulli(t(device, 0.5), t(device, [0.3])),
                        D.RelaxedBernoulli(t(device, 0.5), t(device, [0.3])))


def test_kl_cauchy_gumbel_geometric(device: str) -> None:
    loc, scale = t(device, [0., 1.], grad=True), t(device, [1., 2.], grad=True)
    kl = D.kl_divergence(D.Cauchy(loc, scale), D.Cauchy(t(device, [0.5, -1.]), t(device, [3., .5])))
    kl.sum().backward()
    close(kl, [0.3031862589877461, 0.9409833444645266])
    close(loc.grad, [-0.06153846153846154, 0.3902439024390244])
    close(scale.grad, [-0.5076923076923077, -0.012195121951219523])

    loc, scale = t(device, [0., 1.], grad=True), t(device, [1., 2.], grad=True)
    kl = D.kl_divergence(D.Gumbel(loc, scale), D.Gumbel(t(device, [0.5, -1.]), t(device, [3., .5])))
    kl.sum().backward()
    close(kl, [0.6020658232017659, 3.784927966914328])
    close(loc.grad, [-0.018310214822670368, 1.1208493333407592])
    close(scale.grad, [-0.8540236052491216, 1.9785356820721445])

    probs = t(device, [0.2, 0.5, 1.], grad=True)
    kl = D.kl_divergence(D.Geometric(probs), D.Geometric(t(device, [0.7, 0.1, 0.3])))
    kl.sum().backward()
    close(kl, [2.6705540435515367, 1.0216512475319812, 1.203972804325936])
    close(probs.grad, [-24.520731325293156, 2.351146659608476, 35.68697844517842], rtol=1e-8)


def test_kl_low_rank_multivariate_normal(device: str) -> None:
    cov = t(device, [[2., 0.5], [0.5, 1.]])
    mvn = D.MultivariateNormal(t(device, [[0., 1.], [2., -1.]]), cov)
    lr_p = D.LowRankMultivariateNormal(t(device, [[0., 1.], [2., -1.]]), t(device, [[1.], [0.5]]),
                                       t(device, [1., 0.5]))
    lr_q = D.LowRankMultivariateNormal(t(device, [[1., 0.], [0., 0.]]), t(device, [[0.2], [0.3]]),
                                       t(device, [2., 1.]))
    close(D.kl_divergence(mvn, lr_q), [0.7878646228933015, 1.5513781364068153])
    close(D.kl_divergence(lr_p, mvn), [0.02537897545346346, 0.02537897545346346])
    close(D.kl_divergence(lr_p, lr_q), [0.8412358763390431, 1.6047493898525564])
    factor = t(device, [[1.], [0.5]], grad=True)
    kl = D.kl_divergence(D.LowRankMultivariateNormal(t(device, [0., 1.]), factor,
                                                     t(device, [1., 0.5])),
                         D.MultivariateNormal(t(device, [1., 0.]), cov))
    kl.backward()
    close(kl, 1.168236118310606)
    close(factor.grad, [[0.028571428571428525], [-0.11428571428571416]])
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(lr_p, D.MultivariateNormal(t(device, [0., 1., 2.]),
                                                   t(device, np.eye(3).tolist())))


# --------------------------------------------------------------- KL: pairs across families
def _dists(device: str) -> dict:
    def T(*values):
        return t(device, list(values))
    return {
        "Normal": lambda: D.Normal(T(0., 1.5), T(1., 0.5)),
        "Beta": lambda: D.Beta(T(0.5, 2.), T(0.5, 3.)),
        "Gamma": lambda: D.Gamma(T(0.5, 2.), T(1., 3.)),
        "Laplace": lambda: D.Laplace(T(0., 1.), T(1., 2.)),
        "Exponential": lambda: D.Exponential(T(0.5, 1.)),
        "Uniform": lambda: D.Uniform(T(0., -1.), T(1., 3.)),
        "Gumbel": lambda: D.Gumbel(T(0., 1.), T(1., 2.)),
        "Pareto": lambda: D.Pareto(T(1., 2.), T(3., 2.)),
        "ContinuousBernoulli": lambda: D.ContinuousBernoulli(T(0.2, 0.7)),
        "Chi2": lambda: D.Chi2(T(1., 3.)),
        "Bernoulli": lambda: D.Bernoulli(T(0.2, 0.5)),
        "Poisson": lambda: D.Poisson(T(0.5, 3.)),
        "Binomial": lambda: D.Binomial(T(5., 10.), T(0.2, 0.5)),
    }


CROSS = [
    ("Normal", "Laplace", [0.07209320815813802, 0.9521607437690064]),
    ("Normal", "Gumbel", [0.22978273749545552, 1.020878401604279]),
    ("Normal", "Beta", [INF, INF]),
    ("Bernoulli", "Poisson", [0.1382270125738012, 1.7575466751059996]),
    ("Beta", "Normal", [1.3480030084751626, 2.960698002432727]),
    ("Beta", "Gamma", [0.620782237635245, 0.321015405785114]),
    ("Beta", "Exponential", [1.1847116558304354, 0.6349066497880004]),
    ("Beta", "Uniform", [0.24156447527048996, 1.621201010907891]),
    ("Beta", "ContinuousBernoulli", [0.32039532340037336, 0.3493725590785961]),
    ("Beta", "Chi2", [0.7173558279152176, 1.8955118496593395]),
    ("Beta", "Pareto", [INF, INF]),
    ("Gamma", "Normal", [1.203328603290684, 1.5805213097446371]),
    ("Gamma", "Gumbel", [1.1164968512725588, 1.259182561031378]),
    ("Gamma", "Uniform", [INF, INF]),
    ("Poisson", "Binomial", [INF, INF]),
    ("Laplace", "Normal", [0.2257913526447275, 14.339496991524836]),
    ("Laplace", "Exponential", [INF, INF]),
    ("Exponential", "Normal", [3.2257913526447273, 1.7257913526447273]),
    ("Exponential", "Gumbel", [0.6401861527733879, 0.7922946943600307]),
    ("Exponential", "Uniform", [INF, INF]),
    ("Uniform", "Normal", [1.0856051998713394, 2.006163658191503]),
    ("Uniform", "Beta", [0.14472988584940016, INF]),
    ("Uniform", "Gamma", [0.5723649429247001, INF]),
    ("Uniform", "Exponential", [0.9431471805599453, INF]),
    ("Uniform", "Gumbel", [1.1321205588285577, 0.4820540130838561]),
    ("Uniform", "Pareto", [INF, INF]),
    ("Uniform", "ContinuousBernoulli", [INF, INF]),
    ("Uniform", "Chi2", [0.6689385332046727, INF]),
    ("Gumbel", "Normal", [0.33077886363111264, 11.971461772824679]),
    ("Gumbel", "Gamma", [INF, INF]),
    ("Pareto", "Normal", [2.184217488539449, INF]),
    ("Pareto", "Gamma", [2.0043105649261435, 7.109628242103835]),
    ("Pareto", "Exponential", [1.2084261358947215, 2.5]),
    ("Pareto", "Chi2", [1.6008841552061162, 0.8223649429247]),
    ("Pareto", "Uniform", [INF, INF]),
    ("ContinuousBernoulli", "Normal", [1.108579391111273, 2.1466556625578055]),
    ("ContinuousBernoulli", "Exponential", [0.9635687269188784, 0.5991637010883002]),
    ("ContinuousBernoulli", "Uniform", [INF, 1.4156805633520195]),
    ("ContinuousBernoulli", "Pareto", [INF, INF]),
    ("Chi2", "Normal", [1.6351814227307386, 14.671671396709316]),
    ("Chi2", "Gumbel", [0.7935931587156918, 0.22193822002381436]),
    ("Chi2", "Uniform", [INF, INF]),
]


@pytest.mark.parametrize("p_name, q_name, expected", CROSS, ids=[f"{p}-{q}" for p, q, _ in CROSS])
def test_kl_across_families(device: str, p_name: str, q_name: str, expected) -> None:
    dists = _dists(device)
    result = D.kl_divergence(dists[p_name](), dists[q_name]())
    assert result.dtype == F64
    close(result, expected, rtol=1e-8)


def test_kl_support_boundaries(device: str) -> None:
    def U(low, high):
        return D.Uniform(t(device, low), t(device, high))
    # a bound of the uniform on the edge of [0, 1] counts as outside, as in PyTorch
    close(D.kl_divergence(U([0., 0.1, 0., 0.2], [1., 0.9, 0.5, 1.]),
                          D.ContinuousBernoulli(t(device, [0.3]))),
          [INF, 0.25287967456608507, INF, INF])
    close(D.kl_divergence(D.ContinuousBernoulli(t(device, [0.3])),
                          U([0., -1., -1., -0.1], [2., 1., 3., 0.9])),
          [INF, INF, 1.4156805633520197, INF])
    close(D.kl_divergence(U([0., 0.2, -0.1], [1., 1., 0.5]),
                          D.Beta(t(device, [2.]), t(device, [3.]))),
          [0.5150933502119996, 0.7821645260461036, INF])
    close(D.kl_divergence(U([0.2, 0.1], [1., 1.]), D.Pareto(t(device, [0.2]), t(device, [3.]))),
          [1.5622829123825013, INF])
    close(D.kl_divergence(D.Bernoulli(t(device, [0., 1., 0.3])),
                          D.Poisson(t(device, [2., 2., 0.]))),
          [2.0, 1.3068528194400544, INF])


def test_kl_infinite_shape_dtype_and_no_grad(device: str) -> None:
    loc = t(device, [0., 1.], grad=True)
    result = D.kl_divergence(D.Normal(loc, 1.), D.Beta(t(device, [2.]), t(device, [3.])))
    assert tuple(result.shape) == (2,) and not result.requires_grad
    # p's batch shape and dtype, whatever q's
    result = D.kl_divergence(D.Normal(0., 1.), D.Beta(t(device, [2., 3.]), t(device, [3., 1.])))
    assert tuple(result.shape) == () and result.dtype == pg.float32
    result = D.kl_divergence(D.Normal(t(device, [0., 1.]), 1.).expand((3, 2)),
                             D.Beta(t(device, [2.]), t(device, [3.])))
    assert tuple(result.shape) == (3, 2)
    close(result, np.full((3, 2), INF))


def test_kl_cross_family_gradients(device: str) -> None:
    low, high = t(device, [0.2, -1.], grad=True), t(device, [1., 2.], grad=True)
    loc, scale = t(device, [0.3, -1.], grad=True), t(device, [1., 2.], grad=True)
    kl = D.kl_divergence(D.Uniform(low, high), D.Gumbel(loc, scale))
    kl.sum().backward()
    close(kl, [1.2838755691695072, 0.8624481184595489])
    close(low.grad, [1.3194513747245624, 0.42263774218923783])
    close(high.grad, [-1.08018339257986, -0.18159435547309455])
    close(loc.grad, [-0.23926798214470235, -0.24104338671614328])
    close(scale.grad, [0.8880735122783585, 0.27239153320964177])

    loc, scale = t(device, [0., 1.], grad=True), t(device, [1., 2.], grad=True)
    q_loc, q_scale = t(device, [0.5, -1.], grad=True), t(device, [3., 0.5], grad=True)
    kl = D.kl_divergence(D.Normal(loc, scale), D.Laplace(q_loc, q_scale))
    kl.sum().backward()
    close(kl, [0.6713519742909199, 2.554438050936873])
    close(loc.grad, [-0.12764164084934207, 1.3653789842741717])
    close(scale.grad, [-0.7652897821571336, 0.4678828980765737])
    close(q_loc.grad, [0.12764164084934207, -1.3653789842741717])
    close(q_scale.grad, [0.23382298724415418, -7.333047529402982])


# ------------------------------------------------------------------------------ constraints
def test_positive_definite_check_shape(device: str) -> None:
    c = D.constraints
    eye = pg.eye(2, dtype=F64, device=device)
    for constraint in (c.positive_definite, c.positive_semidefinite):
        assert tuple(constraint.check(eye).shape) == ()  # one matrix: a 0-d mask
        assert bool(constraint.check(eye).item())
        assert not bool(constraint.check(t(device, [[1., 2.], [2., 1.]])).item())
        assert tuple(constraint.check(eye.expand(2, 3, 2, 2)).shape) == (2, 3)


# ------------------------------------------------------------------------ Transform caches
def test_transform_with_cache(device: str) -> None:
    tr = D.transforms
    exp = tr.ExpTransform()
    cached = exp.with_cache()
    assert cached is not exp and cached._cache_size == 1 and exp._cache_size == 0
    assert exp.with_cache(0) is exp and cached.with_cache(1) is cached
    x = t(device, [1., 2.])
    y = cached(x)
    assert cached.inv(y) is x and cached(x) is y
    affine = tr.AffineTransform(1., 2., event_dim=1).with_cache(1)
    assert (affine.loc, affine.scale, affine.event_dim, affine._cache_size) == (1., 2., 1, 1)
    inverse = tr.ExpTransform().inv.with_cache(1)
    assert type(inverse).__name__ == "_InverseTransform"
    assert inverse._cache_size == 1 and inverse.inv._cache_size == 1
    compose = tr.ComposeTransform([tr.ExpTransform(), tr.AffineTransform(0., 2.)]).with_cache(1)
    assert compose._cache_size == 1 and [p._cache_size for p in compose.parts] == [1, 1]
    y = compose(x)
    assert compose.inv(y) is x
    assert tr.ComposeTransform([tr.ExpTransform()], cache_size=1).parts[0]._cache_size == 1
    independent = tr.IndependentTransform(tr.ExpTransform(), 1).with_cache(1)
    assert independent.base_transform._cache_size == 1
    assert independent.reinterpreted_batch_ndims == 1
    cat = tr.CatTransform([tr.ExpTransform()], lengths=[2]).with_cache(1)
    assert [p._cache_size for p in cat.transforms] == [1] and cat.lengths == [2]
    stack = tr.StackTransform([tr.ExpTransform()], dim=1).with_cache(1)
    assert [p._cache_size for p in stack.transforms] == [1] and stack.dim == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        tr.ExpTransform().with_cache(2)


# ------------------------------------------------------------------------------------ utils
def test_tril_matrix_vec_round_trip(device: str) -> None:
    U = D.utils
    assert U.euler_constant == 0.5772156649015329
    mat = pg.arange(1., 10., dtype=F64, device=device).reshape(3, 3)
    cases = {0: ([1., 4., 5., 7., 8., 9.], [[1., 0., 0.], [4., 5., 0.], [7., 8., 9.]]),
             -1: ([4., 7., 8.], [[0., 0., 0.], [4., 0., 0.], [7., 8., 0.]]),
             1: ([1., 2., 4., 5., 6., 7., 8., 9.], [[1., 2., 0.], [4., 5., 6.], [7., 8., 9.]]),
             -2: ([7.], [[0., 0., 0.], [0., 0., 0.], [7., 0., 0.]])}
    for diag, (vec, back) in cases.items():
        v = U.tril_matrix_to_vec(mat, diag)
        close(v, vec)
        close(U.vec_to_tril_matrix(v, diag), back)
    batched = pg.arange(1., 19., dtype=F64, device=device).reshape(2, 3, 3)
    close(U.tril_matrix_to_vec(batched), [[1., 4., 5., 7., 8., 9.], [10., 13., 14., 16., 17., 18.]])
    vec = t(device, [1., 2., 3.], grad=True)
    U.vec_to_tril_matrix(vec).sum().backward()
    close(vec.grad, [1., 1., 1.])


def test_tril_matrix_vec_errors(device: str) -> None:
    U = D.utils
    with pytest.raises(ValueError, match=r"The size of last dimension is 2 which cannot be "
                       r"expressed as the lower triangular part of a square D x D matrix."):
        U.vec_to_tril_matrix(pg.arange(1., 3., device=device))
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[4\] cannot "
                       r"be broadcast to indexing result of shape \[3\]"):
        U.vec_to_tril_matrix(pg.arange(1., 5., device=device))
    with pytest.raises(ValueError, match=r"diag \(2\) provided is outside \[-2, 1\]."):
        U.tril_matrix_to_vec(pg.ones(2, 2, device=device), 2)
    with pytest.raises(IndexError, match="The shape of the mask"):
        U.tril_matrix_to_vec(pg.ones(2, 3, device=device))
    # PyTorch's sizes for a diagonal above the main one, and a single value broadcast
    assert tuple(U.vec_to_tril_matrix(pg.arange(1., 9., device=device), 1).shape) == (3, 3)
    assert tuple(U.vec_to_tril_matrix(pg.arange(1., 2., device=device), -2).shape) == (3, 3)
    close(U.vec_to_tril_matrix(pg.ones(1, dtype=F64, device=device), 4), [[1., 1.], [1., 1.]])


def test_pytorch_module_names() -> None:
    from portagrad.distributions.fishersnedecor import FisherSnedecor
    from portagrad.distributions.studentT import StudentT
    assert StudentT is D.StudentT and FisherSnedecor is D.FisherSnedecor
    assert D.studentT.StudentT is D.StudentT


# ------------------------------------------------------- values outside the support, unvalidated
def test_log_prob_outside_support_concentration_one(device: str) -> None:
    # a concentration of 1 drops its log term entirely (xlogy), as in PyTorch
    beta = D.Beta(t(device, [0.5, 2., 5.]), t(device, [0.5, 3., 1.]), validate_args=False)
    close(beta.log_prob(t(device, [1.5, 100., 1.5])), [math.nan, math.nan, 3.2312983448667576])
    close(D.Chi2(t(device, [1., 2., 5.]), validate_args=False).log_prob(
        t(device, [INF, INF, INF])), [-INF, -INF, math.nan])
    dirichlet = D.Dirichlet(t(device, [[1., 2.], [1., 1.]]), validate_args=False)
    close(dirichlet.log_prob(t(device, [[-1., 2.], [INF, 0.]])), [1.3862943611198906, 0.0])


def test_cauchy_cdf_at_infinity(device: str) -> None:
    cauchy = D.Cauchy(t(device, [0.]), t(device, [1.]), validate_args=False)
    close(cauchy.cdf(t(device, [-INF, INF, math.nan, 0.3])),
          [0.0, 1.0, math.nan, 0.5927735790777423])
    half = D.HalfCauchy(t(device, [1., 2.]), validate_args=False)
    close(half.cdf(t(device, [INF, -INF])), [1.0, -1.0])
    x = t(device, [0.3, -2.], grad=True)
    D.Cauchy(0., 2.).cdf(x).sum().backward()
    close(x.grad, [0.15565275608009324, 0.07957747154594767])
