"""The gamma family, heavy-tailed distributions and MultivariateNormal of pg.distributions:
values against literals computed with PyTorch 2.13 for the same parameters, validation,
sampling moments (Marsaglia-Tsang gamma draws), gradients and KL divergences."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad import distributions as D
from portagrad.distributions import constraints
from portagrad._ops.sampling import _standard_gamma_grad


def t(x, device, dtype=pg.float32, **kw):
    return pg.tensor(x, dtype=dtype, device=device, **kw)


def close(a, expected, tol=1e-5):
    if isinstance(expected, pg.Tensor):
        expected = expected.detach().numpy(force=True)
    np.testing.assert_allclose(a.detach().numpy(force=True), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


# name: (class, parameters, value, expected properties) with literals from torch.distributions
CASES = {
    "Gamma": (D.Gamma, ([0.5, 2.0, 5.0], [1.0, 2.0, 0.5]), [0.3, 1.2, 7.0], dict(
        log_prob=[-0.27037853, -0.83138418, -2.3601494], entropy=[0.090609491, 0.88406861, 2.8467298],
        mean=[0.5, 1.0, 10.0], variance=[0.5, 0.5, 20.0], mode=[0.0, 0.5, 8.0],
        cdf=[0.56142205, 0.69155896, 0.27455503],
    )),
    "Beta": (D.Beta, ([0.5, 2.0, 3.0], [1.5, 2.0, 0.7]), [0.3, 0.6, 0.9], dict(
        log_prob=[-0.027933776, 0.3646431, 0.95411241], entropy=[-0.54841769, -0.12509251, -0.70147204],
        mean=[0.25, 0.5, 0.8108108], variance=[0.0625, 0.050000001, 0.032637581], mode=[0.0, 0.5, 1.0],
    )),
    "Chi2": (D.Chi2, ([3.0, 0.8],), [1.5, 4.0], dict(
        log_prob=[-1.466206, -3.9057133], entropy=[2.0541201, 0.3529942],
        mean=[3.0, 0.80000001], variance=[6.0, 1.6], mode=[1.0, 0.0],
        cdf=[0.31772965, 0.96714717],
    )),
    "StudentT": (D.StudentT, ([3.0, 0.8, 2.0], [1.0, 2.0, 0.0], [0.5, 1.0, 2.0]), [1.5, 4.0, -1.0], dict(
        log_prob=[-0.88310587, -2.8036783, -1.9095426], entropy=[1.0803303, 2.8169065, 2.6534266],
        mean=[1.0, np.nan, 0.0], variance=[0.75, np.nan, np.inf], mode=[1.0, 2.0, 0.0],
    )),
    "InverseGamma": (D.InverseGamma, ([3.0, 2.5, 1.5], [1.0, 2.0, 1.0]), [1.5, 4.0, 0.2], dict(
        log_prob=[-2.9816742, -3.9038453, -0.85562277], entropy=[0.0020103455, 1.0167813, 1.287993],
        mean=[0.5, 1.3333334, 2.0], variance=[0.25, 3.5555556, np.inf], mode=[0.25, 0.5714286, 0.40000001],
    )),
    "HalfCauchy": (D.HalfCauchy, ([1.0, 2.0],), [1.5, 4.0], dict(
        log_prob=[-1.6302376, -2.7541678], entropy=[1.837877, 2.5310242],
        mean=[np.inf, np.inf], variance=[np.inf, np.inf], mode=[0.0, 0.0],
        cdf=[0.6256659, 0.70483279],
    )),
    "Pareto": (D.Pareto, ([1.0, 2.0], [3.0, 0.5]), [1.5, 4.0], dict(
        log_prob=[-0.52324808, -2.4260151], entropy=[0.23472106, 4.3862944],
        mean=[1.5, np.inf], variance=[0.75, np.inf], mode=[1.0, 2.0],
        cdf=[0.70370364, 0.29289323],
    )),
    "Weibull": (D.Weibull, ([1.0, 2.0], [3.0, 0.5]), [1.5, 4.0], dict(
        log_prob=[-1.4654576, -3.1470814], entropy=[0.28619814, 1.8090787],
        mean=[0.8929795, 4.0], variance=[0.10533291, 80.0], mode=[0.87358046, 2.0],
        cdf=[0.96578187, 0.75688326],
    )),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(name, device):
    cls, params, value, expected = CASES[name]
    dist = cls(*[t(p, device) for p in params])
    v = t(value, device)
    close(dist.log_prob(v), expected["log_prob"], tol=2e-5)
    close(dist.entropy(), expected["entropy"], tol=2e-5)
    for prop in ("mean", "variance", "mode"):
        close(getattr(dist, prop), expected[prop], tol=2e-5)
    if "cdf" in expected:
        close(dist.cdf(v), expected["cdf"], tol=1e-4)
    assert dist.batch_shape == (len(value),) and dist.event_shape == ()
    assert dist.has_rsample
    s = dist.sample((5,))
    assert s.shape == (5, len(value)) and str(s.device) == str(pg.device(device))
    assert bool(dist.support.check(s).all().item())
    assert dist.expand((4, len(value))).sample().shape == (4, len(value))


def test_dirichlet_values(device):
    d = D.Dirichlet(t([[0.5, 2., 3.], [0.3, 0.2, 0.9]], device))
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.support is constraints.simplex
    close(d.log_prob(t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], device)), [0.90675366, 0.67034125])
    close(d.entropy(), [-1.9146769, -3.854425], tol=2e-5)
    close(d.mean, [[0.090909094, 0.36363637, 0.54545456], [0.21428573, 0.14285715, 0.64285713]])
    close(d.variance, [[0.012714558, 0.035600763, 0.038143676],
                       [0.070153058, 0.051020406, 0.095663264]])
    close(d.mode, [[0.0, 0.33333334, 0.66666669], [1.0, 0.0, 0.0]])
    s = d.sample((4,))
    assert s.shape == (4, 2, 3)
    close(s.sum(-1), np.ones((4, 2)))
    assert d.expand((5, 2)).sample().shape == (5, 2, 3)
    with pytest.raises(ValueError, match="within the support"):
        d.log_prob(t([[0.2, 0.3, 0.6], [0.1, 0.1, 0.8]], device))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(t(1.0, device))


def test_exponential_family_entropy_matches_closed_form(device):
    g = D.Gamma(t([0.5, 2.0, 5.0], device), t([1., 2., 0.5], device))
    close(D.ExponentialFamily.entropy(g), [0.090609491, 0.88406861, 2.8467298], tol=2e-5)
    assert isinstance(g, D.ExponentialFamily) and isinstance(D.Beta(1.0, 2.0), D.ExponentialFamily)
    # the Bregman form agrees with the closed forms of the older exponential families
    for dist in (D.Normal(t([0., 1.], device), t([1., 2.], device)),
                 D.Exponential(t([0.5, 2.], device)), D.Bernoulli(t([0.3, 0.9], device))):
        assert isinstance(dist, D.ExponentialFamily)
        close(D.ExponentialFamily.entropy(dist), dist.entropy().numpy(force=True), tol=1e-5)


def test_multivariate_normal_values(device):
    loc = t([[0., 1., -1.], [0.5, 0., 2.]], device)
    cov = t([[2., 0.5, 0.1], [0.5, 1., 0.3], [0.1, 0.3, 1.5]], device)
    v = t([[0.3, 0.2, -0.5], [1., 1., 1.]], device)
    prec = [[0.57200807, -0.29208919, 0.020283967], [-0.29208919, 1.2129817, -0.2231237],
            [0.020283967, -0.2231237, 0.70993906]]
    for kw in (dict(covariance_matrix=cov), dict(scale_tril=pg.linalg.cholesky(cov)),
               dict(precision_matrix=t(prec, device))):
        m = D.MultivariateNormal(loc, **kw)
        assert m.batch_shape == (2,) and m.event_shape == (3,)
        close(m.log_prob(v), [-3.872942, -4.3078103], tol=1e-4)
        close(m.entropy(), [4.7079115, 4.7079115], tol=1e-4)
        close(m.variance, [[2., 1., 1.5], [2., 1., 1.5]], tol=1e-4)
        close(m.covariance_matrix[1], cov.numpy(force=True), tol=1e-4)
        close(m.precision_matrix[0], prec, tol=1e-4)
        close(m.mean, loc)
    mp = D.MultivariateNormal(loc, precision_matrix=cov)
    close(mp.log_prob(v), [-2.6782198, -3.7057197], tol=1e-4)
    assert m.rsample((4,)).shape == (4, 2, 3)
    assert m.expand((5, 2)).sample().shape == (5, 2, 3)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(loc, cov, scale_tril=cov)
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.MultivariateNormal(t(0.0, device), cov)
    with pytest.raises(ValueError, match="covariance_matrix matrix must be at least two"):
        D.MultivariateNormal(loc, t([1., 2., 3.], device))
    with pytest.raises(ValueError, match="PositiveDefinite"):
        D.MultivariateNormal(loc, t([[1., 2., 0.], [2., 1., 0.], [0., 0., 1.]], device))
    with pytest.raises(ValueError, match="LowerCholesky"):
        D.MultivariateNormal(loc, scale_tril=cov)


def test_validation_errors(device):
    with pytest.raises(ValueError, match=r"Expected parameter concentration .*GreaterThan"):
        D.Gamma(t([-1.], device), t([1.], device))
    with pytest.raises(ValueError, match=r"Expected parameter rate"):
        D.Gamma(t([1.], device), t([0.], device))
    with pytest.raises(ValueError, match=r"Expected parameter df"):
        D.StudentT(t([-1.], device))
    with pytest.raises(ValueError, match=r"Expected parameter rate .*Exponential"):
        D.Pareto(t([1.], device), t([-2.], device))
    with pytest.raises(ValueError, match="within the support"):
        D.Gamma(t([1.], device), t([1.], device)).log_prob(t([-0.5], device))
    with pytest.raises(ValueError, match="within the support"):
        D.Beta(t([1.], device), t([1.], device)).log_prob(t([1.5], device))
    with pytest.raises(ValueError, match="within the support"):
        D.Pareto(t([2.], device), t([1.], device)).log_prob(t([1.5], device))
    # the same values go through without validation
    g = D.Gamma(t([-1.], device), t([1.], device), validate_args=False)
    assert g.concentration.item() == -1.0


def test_sample_moments(device):
    pg.manual_seed(0)
    n = 20000
    cases = [
        (D.Gamma(t([0.4, 3.0], device), t([1.0, 2.0], device)), [0.4, 1.5], [0.4, 0.75]),
        (D.Beta(t([0.5, 2.0], device), t([1.5, 5.0], device)), [0.25, 2 / 7],
         [0.0625, 10 / (49 * 8)]),
        (D.Chi2(t([3.0], device)), [3.0], [6.0]),
        (D.InverseGamma(t([5.0], device), t([2.0], device)), [0.5], [0.25 / 3]),
        (D.StudentT(t([6.0], device), t([1.0], device), t([2.0], device)), [1.0], [6.0]),
        (D.Weibull(t([2.0], device), t([1.5], device)), [1.8054905], [1.5027933]),
        (D.Pareto(t([1.0], device), t([5.0], device)), [1.25], [0.10416667]),
    ]
    for dist, mean, var in cases:
        s = dist.sample((n,)).numpy(force=True).astype(np.float64)
        sd = np.sqrt(np.asarray(var))
        np.testing.assert_array_less(np.abs(s.mean(0) - mean), 5 * sd / math.sqrt(n),
                                     err_msg=type(dist).__name__)
        np.testing.assert_allclose(s.var(0), var, rtol=0.15, err_msg=type(dist).__name__)
    d = D.Dirichlet(t([0.5, 2.0, 3.0], device))
    s = d.sample((n,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), [1 / 11, 4 / 11, 6 / 11], atol=0.01)
    m = D.MultivariateNormal(t([1., -1.], device), t([[2., 0.6], [0.6, 1.]], device))
    s = m.sample((n,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), [1., -1.], atol=0.05)
    np.testing.assert_allclose(np.cov(s.T), [[2., 0.6], [0.6, 1.]], atol=0.08)


def test_sampling_is_reproducible(device):
    g = D.Gamma(t([0.3, 2.0], device), t([1.0, 1.0], device))
    pg.manual_seed(9)
    a = g.sample((50,)).numpy(force=True)
    pg.manual_seed(9)
    b = g.sample((50,)).numpy(force=True)
    np.testing.assert_array_equal(a, b)
    assert (a > 0).all()


def test_gradcheck_log_prob(device):
    f64 = dict(dtype=pg.float64, device=device, requires_grad=True)
    a, b = pg.tensor([0.7, 2.5], **f64), pg.tensor([1.3, 0.6], **f64)
    pos = pg.tensor([0.4, 2.0], dtype=pg.float64, device=device)
    unit = pg.tensor([0.3, 0.8], dtype=pg.float64, device=device)
    gc = pg.autograd.gradcheck
    assert gc(lambda x, y: D.Gamma(x, y).log_prob(pos), (a, b))
    assert gc(lambda x, y: D.Gamma(x, y).entropy(), (a, b))
    assert gc(lambda x, y: D.Beta(x, y).log_prob(unit), (a, b))
    assert gc(lambda x, y: D.InverseGamma(x, y).log_prob(pos), (a, b))
    assert gc(lambda x, y: D.Weibull(x, y).log_prob(pos), (a, b))
    assert gc(lambda x, y: D.Pareto(x * 0.1, y).log_prob(pos), (a, b))
    assert gc(lambda x: D.HalfCauchy(x).log_prob(pos), (a,))
    assert gc(lambda x, y: D.StudentT(x, y, x).log_prob(pos), (a, b))
    conc = pg.tensor([[0.7, 2.0, 1.5]], **f64)
    simplex = pg.tensor([[0.2, 0.3, 0.5]], dtype=pg.float64, device=device)
    assert gc(lambda c: D.Dirichlet(c).log_prob(simplex), (conc,))
    loc = pg.tensor([0.2, -0.3], **f64)
    tril = pg.tensor([[1.2, 0.0], [0.4, 0.8]], **f64)
    v = pg.tensor([[0.5, 0.1], [-1.0, 0.3]], dtype=pg.float64, device=device)
    assert gc(lambda m, L: D.MultivariateNormal(m, scale_tril=L.tril()).log_prob(v), (loc, tril))
    counts = pg.tensor([0.0, 3.0], dtype=pg.float64, device=device)
    assert gc(lambda r: D.Poisson(r).log_prob(counts), (b,))


def test_rsample_gradients(device):
    f64 = dict(dtype=pg.float64, device=device, requires_grad=True)
    conc = pg.tensor([0.7, 2.5], dtype=pg.float64, device=device)
    rate = pg.tensor([1.3, 0.6], **f64)

    def gamma_rs(r):
        pg.manual_seed(4)
        return D.Gamma(conc, r).rsample((3,))

    assert pg.autograd.gradcheck(gamma_rs, (rate,))
    # implicit reparameterisation: dx/dalpha at fixed quantile, against torch's values
    grad = _standard_gamma_grad(t([0.3, 1., 2.5, 20., 0.3], device),
                                t([0.1, 0.5, 2., 25., 1e-4], device))
    close(grad, [0.78940439, 0.80697846, 0.95344394, 1.1250644, 0.0030139678], tol=1e-4)
    # unbiased: d/dalpha E[x] = 1 / rate for Gamma, c0 / (c1 + c0)^2 for Beta's c1
    pg.manual_seed(0)
    alpha = pg.tensor([0.4, 3.0], **f64)
    D.Gamma(alpha, 2.0).rsample((4000,)).mean(0).sum().backward()
    close(alpha.grad, [0.5, 0.5], tol=0.03)
    c1 = pg.tensor([2.0], **f64)
    D.Beta(c1, 3.0).rsample((4000,)).mean().backward()
    close(c1.grad, [0.12], tol=0.01)
    loc = pg.tensor([0.2, -0.3], **f64)
    tril = pg.tensor([[1.2, 0.0], [0.4, 0.8]], **f64)

    def mvn_rs(m, L):
        pg.manual_seed(2)
        return D.MultivariateNormal(m, scale_tril=L.tril()).rsample((2,))

    assert pg.autograd.gradcheck(mvn_rs, (loc, tril))


def test_kl_divergence(device):
    kl = D.kl_divergence
    close(kl(D.Gamma(t([1., 2.], device), t([2., .5], device)),
             D.Gamma(t([3., 1.], device), t([1., 1.], device))), [3.4270205, 1.729637], tol=2e-5)
    close(kl(D.Beta(t([1., 2.], device), t([2., .5], device)),
             D.Beta(t([3., 1.], device), t([1., 1.], device))), [2.0945351, 0.76527917], tol=2e-5)
    close(kl(D.Dirichlet(t([[0.5, 2., 3.], [0.3, 0.2, 0.9]], device)),
             D.Dirichlet(t([[2., 2., 2.], [1., 0.5, 1.]], device))), [2.5784073, 1.5282791],
          tol=2e-5)
    cov = t([[2., 0.5, 0.1], [0.5, 1., 0.3], [0.1, 0.3, 1.5]], device)
    cov2 = t([[1., 0.2, 0.], [0.2, 1., 0.], [0., 0., 0.5]], device)
    p = D.MultivariateNormal(t([[0., 1., -1.], [0.5, 0., 2.]], device), cov)
    q = D.MultivariateNormal(t([0., 0., 0.], device), cov2)
    close(kl(p, q), [2.1610866, 4.7704611], tol=1e-4)
    close(kl(p, p), [0., 0.], tol=1e-4)


def test_lowrank_multivariate_normal(device):
    loc = t([[0., 1., -1.], [0.5, 0., 2.]], device)
    W = t([[1., 0.5], [0.2, -0.3], [0., 0.8]], device)
    d = t([0.5, 1., 2.], device)
    m = D.LowRankMultivariateNormal(loc, W, d)
    assert m.batch_shape == (2,) and m.event_shape == (3,)
    v = t([[0.3, 0.2, -0.5], [1., 1., 1.]], device)
    close(m.log_prob(v), [-3.8817887, -4.2162228], tol=1e-4)
    close(m.entropy(), [5.0537543, 5.0537543], tol=1e-4)
    close(m.variance, [[1.75, 1.13, 2.64]] * 2, tol=1e-5)
    cov = np.array([[1.75, 0.05, 0.4], [0.05, 1.13, -0.24], [0.4, -0.24, 2.64]])
    close(m.covariance_matrix[0], cov)
    close(m.precision_matrix[1], np.linalg.inv(cov), tol=1e-4)
    close(m.scale_tril[0], np.linalg.cholesky(cov), tol=1e-4)
    # the same density as the full-covariance form
    full = D.MultivariateNormal(loc, t(cov.tolist(), device))
    close(m.log_prob(v), full.log_prob(v).numpy(force=True), tol=1e-4)
    assert m.rsample((5,)).shape == (5, 2, 3) and m.expand((4, 2)).sample().shape == (4, 2, 3)
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices"):
        D.LowRankMultivariateNormal(loc, W.mT, d)
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        D.LowRankMultivariateNormal(loc, W, t([1., 2.], device))
    with pytest.raises(ValueError, match="Expected parameter cov_diag"):
        D.LowRankMultivariateNormal(loc, W, t([1., -2., 1.], device))


def test_kl_divergence_mixed_pairs(device):
    kl = D.kl_divergence
    close(kl(D.Pareto(t([1., 2.], device), t([3., 0.5], device)),
             D.Pareto(t([0.5, 3.], device), t([2., 1.], device))), [1.4584262, np.inf], tol=2e-5)
    close(kl(D.ContinuousBernoulli(t([0.2, 0.7], device)),
             D.ContinuousBernoulli(t([0.6, 0.5], device))), [0.1286614, 0.029386342], tol=1e-4)
    close(kl(D.Exponential(t([1., 2.], device)), D.Gamma(t([2., 0.5], device), t([1., 3.], device))),
          [0.57721567, 0.58102465], tol=2e-5)
    close(kl(D.Gamma(t([2., 0.5], device), t([1., 3.], device)), D.Exponential(t([1., 2.], device))),
          [0.42278421, 0.64818895], tol=2e-5)
    close(kl(D.Chi2(t([3.], device)), D.Chi2(t([2.], device))), [0.13902719], tol=2e-5)


def test_lkj_cholesky(device):
    lkj = D.LKJCholesky(3, t([0.5, 2.], device))
    assert lkj.batch_shape == (2,) and lkj.event_shape == (3, 3)
    value = t([[[1.0, 0.0, 0.0], [-0.20728047, 0.97828156, 0.0], [-0.117622, 0.86570704, 0.48653507]],
               [[1.0, 0.0, 0.0], [0.52092141, 0.85360467, 0.0], [0.34242770, -0.27984273, 0.89690095]]],
              device)
    close(lkj.log_prob(value), [-1.8105779, -1.3079643], tol=1e-4)
    pg.manual_seed(0)
    s = lkj.sample((4000,))
    assert s.shape == (4000, 2, 3, 3) and bool(constraints.corr_cholesky.check(s).all().item())
    corr = (s @ s.mT).numpy(force=True)
    # an off-diagonal correlation has variance 1 / (2 eta + dim - 1)
    np.testing.assert_allclose(corr[:, :, 0, 1].var(0), [1 / 3, 1 / 6], atol=0.02)
    assert lkj.expand((4, 2)).sample().shape == (4, 2, 3, 3)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="within the support"):
        lkj.log_prob(pg.eye(3, device=device) * 2)


def test_wishart(device):
    cov = t([[2., 0.5], [0.5, 1.]], device)
    w = D.Wishart(t([3., 5.], device), cov)
    assert w.batch_shape == (2,) and w.event_shape == (2, 2)
    v = t([[1.5, 0.2], [0.2, 0.8]], device)
    close(w.log_prob(v), [-4.1990194, -6.4019752], tol=1e-4)
    close(w.entropy(), [6.3704481, 7.649972], tol=1e-4)
    close(D.ExponentialFamily.entropy(w), [6.3704481, 7.649972], tol=1e-4)
    close(w.mean[1], [[10., 2.5], [2.5, 5.]])
    close(w.variance[0], [[24., 6.75], [6.75, 6.]])
    m = w.mode.numpy(force=True)
    assert np.isnan(m[0]).all()
    np.testing.assert_allclose(m[1], [[4., 1.], [1., 2.]], rtol=1e-5)
    close(D.Wishart(4., precision_matrix=cov).log_prob(v), -4.0307307, tol=1e-4)
    pg.manual_seed(0)
    s = w.sample((4000,))
    assert s.shape == (4000, 2, 2, 2) and bool(constraints.positive_definite.check(s).all().item())
    np.testing.assert_allclose(s.numpy(force=True).mean(0),
                               [[[6., 1.5], [1.5, 3.]], [[10., 2.5], [2.5, 5.]]], rtol=0.08,
                               atol=0.1)
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1"):
        D.Wishart(0.5, cov)
    with pytest.raises(ValueError, match="Exactly one of"):
        D.Wishart(3., cov, scale_tril=cov)


def test_rejection_samplers_do_not_hang_on_invalid_parameters(device):
    bad = t([math.nan, -1., math.inf, 2.], device)
    s = D.Gamma(bad, 1.0, validate_args=False).sample().numpy(force=True)
    assert np.isnan(s[:3]).all() and s[3] > 0
    s = D.VonMises(0., bad, validate_args=False).sample().numpy(force=True)
    assert np.isnan(s[:3]).all() and abs(s[3]) <= np.pi
