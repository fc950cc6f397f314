"""pg.distributions: values against literals computed with PyTorch 2.13 for the same parameters,
argument validation, sampling statistics and reproducibility, gradients, KL divergences."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad import distributions as D
from portagrad.distributions import constraints


def t(x, device, dtype=pg.float32, **kw):
    return pg.tensor(x, dtype=dtype, device=device, **kw)


def close(a, expected, tol=1e-5):
    if isinstance(expected, pg.Tensor):
        expected = expected.detach().numpy(force=True)
    np.testing.assert_allclose(a.detach().numpy(force=True), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


# --------------------------------------------------------------------------- values vs torch
def test_normal_values(device):
    n = D.Normal(t([0., 1., -2.], device), t([1., 2., 0.5], device))
    v = t([0.5, -1., -2.2], device)
    close(n.log_prob(v), [-1.0439385, -2.1120858, -0.3057914])
    close(n.entropy(), [1.4189385, 2.1120858, 0.7257913])
    close(n.cdf(v), [0.6914625, 0.1586553, 0.3445782])
    close(n.icdf(t([0.3, 0.9, 0.5], device)), [-0.5244005, 3.5631030, -2.0])
    close(D.HalfNormal(t([2.0], device)).icdf(t([0.3, 0.9], device)), [0.7706408, 3.2897072])
    close(n.mean, [0., 1., -2.])
    close(n.mode, [0., 1., -2.])
    close(n.variance, [1., 4., 0.25])
    close(n.stddev, [1., 2., 0.5])
    assert n.batch_shape == (3,) and n.event_shape == ()
    assert n.has_rsample and n.support is constraints.real
    assert repr(D.Normal(0., 1.)) == "Normal(loc: 0.0, scale: 1.0)"


def test_bernoulli_values(device):
    b = D.Bernoulli(probs=t([0.3, 0.5, 0.9], device))
    close(b.log_prob(t([1., 0., 0.], device)), [-1.2039728, -0.6931472, -2.3025849])
    close(b.entropy(), [0.6108643, 0.6931472, 0.325083])
    close(b.variance, [0.21, 0.25, 0.09])
    m = b.mode.numpy(force=True)
    assert m[0] == 0 and math.isnan(m[1]) and m[2] == 1
    bl = D.Bernoulli(logits=t([-1., 0., 2.], device))
    close(bl.log_prob(t([1., 0., 1.], device)), [-1.3132617, -0.6931472, -0.126928])
    close(bl.entropy(), [0.5822031, 0.6931472, 0.365334])
    close(bl.probs, [0.2689414, 0.5, 0.880797])
    close(bl.enumerate_support(), [[0., 0., 0.], [1., 1., 1.]])


def test_categorical_values(device):
    c = D.Categorical(probs=t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], device))
    assert c.batch_shape == (2,) and c.event_shape == ()
    close(c.log_prob(pg.tensor([2, 0], device=device)), [-0.6931472, -2.3025851])
    close(c.entropy(), [1.0296531, 0.6390318])
    close(c.logits, [[-1.6094379, -1.2039728, -0.6931472], [-2.3025851, -2.3025851, -0.2231435]])
    assert c.mode.tolist() == [2, 2]
    assert np.isnan(c.mean.numpy(force=True)).all() and c.mean.shape == (2,)
    c2 = D.Categorical(logits=t([1., 2., 3., 0.5], device))
    close(c2.log_prob(pg.tensor([0, 3, 2], device=device)), [-2.4607735, -2.9607735, -0.4607735])
    close(c2.entropy(), 0.9930151)
    close(c2.probs, [0.0853689, 0.2320567, 0.6307955, 0.0517788])
    assert c2.enumerate_support().tolist() == [0, 1, 2, 3]
    assert repr(c2.support) == "IntegerInterval(lower_bound=0, upper_bound=3)"



def test_categorical_with_no_categories_gives_an_empty_log_prob(device):
    # PyTorch gathers value[..., :1] of the broadcast value: nothing to read, an empty last dim
    for shape in [(0,), (0, 0), (2, 0), (0, 3, 0)]:
        c = D.Categorical(logits=pg.zeros(shape, device=device), validate_args=False)
        lp = c.log_prob(pg.zeros(shape[:-1], dtype=pg.int64, device=device))
        assert lp.shape == shape and lp.dtype == pg.float32


@pytest.mark.parametrize("dtype, logit", [("float16", 6.9296875), ("bfloat16", 4.84375),
                                          ("float32", 15.942384719848633),
                                          ("float64", 36.04365338911715)])
def test_probs_of_zero_and_one_clamped_by_their_dtypes_eps(device, dtype, logit):
    """A 16-bit float's probabilities clamp to its own eps (PyTorch's finfo(dtype).eps): with a
    float64 eps 1 - eps rounds to 1 and the logits were infinite."""
    dt = getattr(pg, dtype)
    try:
        p = pg.tensor([0.0, 1.0], device=device).to(dt)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines {dtype}")
    b = D.Bernoulli(probs=p)
    close(b.logits.float(), [-logit, logit], tol=1e-6)
    close(b.log_prob(pg.tensor([1.0, 0.0], device=device).to(dt)).float(), [-logit, -logit],
          tol=1e-6)
    assert math.isfinite(D.Categorical(probs=p).logits[0].item())


def test_integer_probs_raise_finfos_type_error(device):
    b = D.Bernoulli(probs=pg.tensor([1, 0], device=device), validate_args=False)
    with pytest.raises(TypeError, match="finfo"):
        b.log_prob(pg.tensor([1, 0], device=device))

def test_other_distributions_values(device):
    u = D.Uniform(t([0., -1.], device), t([2., 3.], device))
    close(u.log_prob(t([1., 2.5], device)), [-0.6931472, -1.3862944])
    close(u.entropy(), [0.6931472, 1.3862944])
    close(u.variance, [0.3333333, 1.3333334])
    close(u.cdf(t([1., 0.], device)), [0.5, 0.25])
    uv = D.Uniform(t([0., -1.], device), t([2., 3.], device), validate_args=False)
    close(uv.log_prob(t([1., 4.], device)), [-0.6931472, -np.inf])
    e = D.Exponential(t([0.5, 2.], device))
    close(e.log_prob(t([1., 3.], device)), [-1.1931472, -5.3068528])
    close(e.entropy(), [1.6931472, 0.3068528])
    close(e.cdf(t([1., 3.], device)), [0.3934693, 0.9975212])
    lp = D.Laplace(t([0., 1.], device), t([1., 3.], device))
    close(lp.log_prob(t([1., -2.], device)), [-1.6931472, -2.7917595])
    close(lp.entropy(), [1.6931472, 2.7917595])
    close(lp.cdf(t([1., -2.], device)), [0.8160603, 0.1839397])
    close(lp.icdf(t([0.3, 0.9], device)), [-0.5108256, 5.8283129])
    oh = D.OneHotCategorical(probs=t([0.2, 0.3, 0.5], device))
    close(oh.log_prob(t([[0., 1., 0.], [0., 0., 1.]], device)), [-1.2039728, -0.6931472])
    close(oh.entropy(), 1.0296531)
    assert oh.event_shape == (3,) and oh.sample((4,)).shape == (4, 3)
    close(oh.sample((5,)).sum(-1), [1.] * 5)
    ind = D.Independent(D.Normal(pg.zeros(2, 3, device=device), pg.ones(2, 3, device=device)), 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (3,)
    close(ind.log_prob(pg.full((2, 3), 0.5, device=device)), [-3.1318154, -3.1318154])


def test_kl_divergence(device):
    n = D.Normal(t([0., 1., -2.], device), t([1., 2., 0.5], device))
    close(D.kl_divergence(n, D.Normal(t([1., 0., 0.], device), t([2., 1., 1.], device))),
          [0.4431472, 1.3068528, 2.3181472])
    b = D.Bernoulli(t([0.3, 0.5, 0.9], device))
    close(D.kl_divergence(b, D.Bernoulli(t([0.5, 0.2, 0.9], device))),
          [0.0822829, 0.2231436, 0.0])
    c = D.Categorical(t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], device))
    q = D.Categorical(t([[0.3, 0.3, 0.4], [0.5, 0.25, 0.25]], device))
    close(D.kl_divergence(c, q), [0.0304787, 0.6779478])
    u = D.Uniform(t([0., -1.], device), t([2., 3.], device))
    close(D.kl_divergence(u, D.Uniform(t([-1., -1.], device), t([3., 2.], device))),
          [0.6931472, np.inf])
    e = D.Exponential(t([0.5, 2.], device))
    close(D.kl_divergence(e, D.Exponential(t([1., 1.], device))), [0.3068528, 0.1931472])
    lp = D.Laplace(t([0., 1.], device), t([1., 3.], device))
    close(D.kl_divergence(lp, D.Laplace(t([1., 0.], device), t([2., 1.], device))),
          [0.3770869, 1.0509815])
    close(D.kl_divergence(D.Poisson(t([2., 0.5], device)), D.Poisson(t([3., 1.], device))),
          [0.1890697, 0.1534264])
    close(D.kl_divergence(D.Binomial(5, t([0.3, 0.9], device)),
                          D.Binomial(5, t([0.6, 0.5], device))), [0.9189346, 1.8403208])
    with pytest.raises(NotImplementedError, match="Normal.*Bernoulli"):
        D.kl_divergence(n, b)


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return pg.tensor(42.0)

    p = MyNormal(0.0, 1.0)
    assert D.kl_divergence(p, D.Normal(0.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 0.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_poisson_and_binomial_values(device):
    p = D.Poisson(t([0.5, 3.0, 10.], device))
    close(p.log_prob(t([0., 2., 12.], device)), [-0.5, -1.4959226, -2.3561935])
    close(p.mode, [0., 3., 10.])
    close(D.Poisson(t([0.0], device)).log_prob(t([0.0], device)), [0.0])
    with pytest.raises(ValueError, match=r"IntegerGreaterThan\(lower_bound=0\)"):
        p.log_prob(t([0.5, 1., 1.], device))
    with pytest.raises(ValueError, match=r"GreaterThanEq\(lower_bound=0.0\)"):
        D.Poisson(t([-1.], device))
    b = D.Binomial(total_count=t([5., 10.], device), probs=t([0.3, 0.8], device))
    close(b.log_prob(t([2., 10.], device)), [-1.1753855, -2.2314358])
    close(b.mean, [1.5, 8.0])
    close(b.variance, [1.05, 1.6])
    close(b.mode, [1.0, 8.0])
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        b.entropy()
    b2 = D.Binomial(4, logits=t([-1., 0.5], device))
    close(b2.log_prob(t([0., 3.], device)), [-1.2530468, -1.0100136])
    close(b2.entropy(), [1.2516997, 1.367018])
    close(b2.enumerate_support(), [[0., 0.], [1., 1.], [2., 2.], [3., 3.], [4., 4.]])
    with pytest.raises(ValueError, match="within the support"):
        b2.log_prob(t([5., 0.], device))
    s = b.sample((7,))
    assert s.shape == (7, 2) and str(s.device) == str(pg.device(device))
    assert (s.numpy(force=True) <= np.array([5., 10.])).all()


def test_transformed_and_derived_distributions_values(device):
    ln = D.LogNormal(t([0., 1.], device), t([1., 0.5], device))
    v = t([0.5, 3.0], device)
    close(ln.log_prob(v), [-0.4660178, -1.3438524])
    close(ln.entropy(), [1.4189385, 1.7257913])
    close(ln.mean, [1.6487212, 3.0802169])
    close(ln.variance, [4.6707745, 2.6947582], tol=1e-4)
    close(ln.mode, [0.3678795, 2.1170001])
    close(ln.cdf(v), [0.2441086, 0.5781741])
    assert isinstance(ln, D.TransformedDistribution) and ln.support is constraints.positive
    hn = D.HalfNormal(t([1., 2.], device))
    hv = t([0.5, 3.], device)
    close(hn.log_prob(hv), [-0.3507913, -2.0439386])
    close(hn.entropy(), [0.7257913, 1.4189386])
    close(hn.mean, [0.7978846, 1.5957692])
    close(hn.variance, [0.3633802, 1.4535209])
    close(hn.cdf(hv), [0.3829249, 0.8663857])
    g = D.Gumbel(t([0., 1.], device), t([1., 2.], device))
    gv = t([0.5, -1.], device)
    close(g.log_prob(gv), [-1.1065307, -2.4114289])
    close(g.entropy(), [1.5772157, 2.2703629])
    close(g.mean, [0.5772157, 2.1544313])
    close(g.variance, [1.6449342, 6.5797367])
    close(g.cdf(gv), [0.5452393, 0.0659881])
    c = D.Cauchy(t([0., 1.], device), t([1., 2.], device))
    close(c.log_prob(gv), [-1.3678734, -2.5310242])
    close(c.entropy(), [2.5310242, 3.2241714])
    close(c.cdf(gv), [0.6475836, 0.25])
    close(c.icdf(t([0.3, 0.9], device)), [-0.7265425, 7.1553655], tol=1e-4)
    ge = D.Geometric(t([0.3, 0.8], device))
    close(ge.log_prob(t([2., 0.], device)), [-1.9173228, -0.2231435])
    close(ge.entropy(), [2.0362144, 0.625503])
    close(ge.mean, [2.3333333, 0.25])
    close(ge.variance, [7.7777772, 0.3125], tol=1e-4)
    gl = D.Geometric(logits=t([-1., 2.], device))
    close(gl.log_prob(t([1., 3.], device)), [-1.6265233, -6.5077109])
    close(gl.entropy(), [2.1647954, 0.4147766])
    rb = D.RelaxedBernoulli(t(0.5, device), probs=t([0.3, 0.8], device))
    close(rb.log_prob(t([0.2, 0.9], device)), [-0.2527947, 0.3078845])
    lrb = D.LogitRelaxedBernoulli(t(0.7, device), logits=t([-1., 2.], device))
    close(lrb.log_prob(t([0.2, -0.9], device)), [-2.0516644, -3.1258733])
    ro = D.RelaxedOneHotCategorical(t(0.5, device), probs=t([0.2, 0.3, 0.5], device))
    close(ro.log_prob(t([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], device)), [0.2763753, -0.7838178],
          tol=1e-4)
    s = ro.rsample((4,))
    assert s.shape == (4, 3)
    close(s.sum(-1), [1.0] * 4)
    T = D.transforms
    td = D.TransformedDistribution(D.Normal(t([0., 1.], device), t([1., 2.], device)),
                                   [T.AffineTransform(1., 2.), T.TanhTransform()])
    close(td.log_prob(t([0.3, -0.5], device)), [-1.5773704, -2.4112248])
    assert td.batch_shape == (2,) and td.event_shape == ()
    assert repr(td.support) == "Interval(lower_bound=-1.0, upper_bound=1.0)"
    td2 = D.TransformedDistribution(
        D.Normal(pg.zeros(2, 3, device=device), pg.ones(2, 3, device=device)),
        [T.AffineTransform(pg.zeros(3, device=device), t([1., 2., 3.], device), event_dim=1)])
    assert td2.batch_shape == (2,) and td2.event_shape == (3,)
    close(td2.log_prob(pg.full((2, 3), 0.5, device=device)), [-4.7187138, -4.7187138])
    logistic = D.TransformedDistribution(D.Uniform(t([0.], device), t([1.], device)),
                                         [T.SigmoidTransform().inv])
    close(logistic.log_prob(t([0.3], device)), [-1.4087105])
    close(logistic.cdf(t([0.3], device)), [0.5744425])
    neg = D.TransformedDistribution(D.Exponential(t([1.], device)), [T.AffineTransform(0., -1.)])
    close(neg.cdf(t([-0.5], device)), [0.6065307])
    x = t([0.3, -1.2], device)
    for tr in (T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(),
               T.AffineTransform(2.0, -3.0), T.ComposeTransform([T.ExpTransform(),
                                                                T.AffineTransform(1.0, 2.0)])):
        close(tr.inv(tr(x)), x, tol=1e-4)
    for dist in (ln, hn, g, c, rb, td):
        assert dist.rsample((3,)).shape == (3, 2) and dist.sample().shape == (2,)
        assert dist.expand((4, 2)).sample().shape == (4, 2)
    assert ge.sample((5,)).shape == (5, 2)


# --------------------------------------------------------------------------- validation
def test_validation_errors(device):
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        D.Normal(t([0.], device), t([-1.], device))
    with pytest.raises(ValueError, match=r"Expected parameter probs .*Interval"):
        D.Bernoulli(probs=t([1.5], device))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        D.Bernoulli()
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Categorical(probs=t([0.5, 0.5], device), logits=t([0., 0.], device))
    with pytest.raises(ValueError, match="within the support \\(Boolean\\(\\)\\)"):
        D.Bernoulli(probs=t([0.3], device)).log_prob(t([2.], device))
    c = D.Categorical(probs=t([0.2, 0.3, 0.5], device))
    with pytest.raises(ValueError, match=r"IntegerInterval\(lower_bound=0, upper_bound=2\)"):
        c.log_prob(pg.tensor(3, device=device))
    with pytest.raises(ValueError, match="must be a Tensor"):
        c.log_prob(1)
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(t([1.], device), t([0.], device))
    # validate_args=False: no check, the value goes through
    D.Normal(t([0.], device), t([-1.], device), validate_args=False)


def test_set_default_validate_args():
    try:
        D.Distribution.set_default_validate_args(False)
        n = D.Normal(0.0, -1.0)  # accepted without validation
        assert n.scale.item() == -1.0
        assert not D.Bernoulli(0.3)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(2)


def test_constraints():
    x = pg.tensor([-1.0, 0.0, 0.5, 1.0, float("nan")])
    assert constraints.real.check(x).tolist() == [True, True, True, True, False]
    assert constraints.positive.check(x).tolist() == [False, False, True, True, False]
    assert constraints.unit_interval.check(x).tolist() == [False, True, True, True, False]
    assert constraints.simplex.check(pg.tensor([[0.2, 0.8], [0.5, 0.6]])).tolist() == [True, False]
    assert constraints.boolean.check(x).tolist() == [False, True, False, True, False]
    assert constraints.is_dependent(constraints.dependent)
    assert not constraints.is_dependent(constraints.real)
    assert D.Categorical(pg.tensor([0.5, 0.5])).support.is_discrete


# --------------------------------------------------------------------------- shapes, expand
def test_shapes_and_expand(device):
    n = D.Normal(t([0., 1.], device), t([1., 2.], device))
    assert n.sample().shape == (2,) and n.rsample((4, 3)).shape == (4, 3, 2)
    e = n.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.sample().shape == (5, 2)
    close(e.log_prob(pg.zeros(5, 2, device=device))[3], n.log_prob(pg.zeros(2, device=device)))
    c = D.Categorical(logits=pg.zeros(2, 4, device=device))
    assert c.sample().shape == (2,) and c.sample((3,)).shape == (3, 2)
    assert c.sample().dtype == pg.int64
    ce = c.expand((3, 2))
    assert ce.batch_shape == (3, 2) and ce.sample((5,)).shape == (5, 3, 2)
    b = D.Bernoulli(logits=t([0., 1.], device)).expand((3, 2))
    assert b.batch_shape == (3, 2) and b.sample().shape == (3, 2)
    assert D.Normal(0.0, 1.0).batch_shape == ()
    for dist in (D.Uniform(t([0.], device), t([1.], device)),
                 D.Exponential(t([1.], device)), D.Laplace(t([0.], device), t([1.], device))):
        assert dist.expand((4, 1)).sample((2,)).shape == (2, 4, 1)


# --------------------------------------------------------------------------- sampling
def test_sample_moments(device):
    pg.manual_seed(0)
    n = 20000
    cases = [
        (D.Normal(t([1.0], device), t([2.0], device)), 1.0, 4.0),
        (D.Bernoulli(probs=t([0.3], device)), 0.3, 0.21),
        (D.Uniform(t([-1.0], device), t([3.0], device)), 1.0, 16 / 12),
        (D.Exponential(t([2.0], device)), 0.5, 0.25),
        (D.Laplace(t([1.0], device), t([0.5], device)), 1.0, 0.5),
        (D.Gumbel(t([1.0], device), t([2.0], device)), 1.0 + 2.0 * 0.5772157, 6.5797367),
        (D.Geometric(t([0.4], device)), 1.5, 3.75),
        (D.HalfNormal(t([1.0], device)), 0.7978846, 0.3633802),
        (D.LogNormal(t([0.0], device), t([0.5], device)), math.exp(0.125),
         math.expm1(0.25) * math.exp(0.25)),
        (D.Poisson(t([4.0], device)), 4.0, 4.0),
        (D.Binomial(10, t([0.3], device)), 3.0, 2.1),
    ]
    for dist, mean, var in cases:
        s = dist.sample((n,)).numpy(force=True).astype(np.float64)
        assert s.shape == (n, 1)
        assert abs(s.mean() - mean) < 5 * math.sqrt(var / n), type(dist).__name__
        assert abs(s.var() - var) < 0.1 * var, type(dist).__name__
        assert str(dist.sample().device) == str(pg.device(device))
    c = D.Categorical(probs=t([0.1, 0.2, 0.7], device))
    counts = np.bincount(c.sample((n,)).numpy(force=True), minlength=3) / n
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.02)


def test_sampling_is_reproducible_with_manual_seed(device):
    dists = [D.Normal(t([0., 1.], device), t([1., 2.], device)),
             D.Categorical(logits=t([0., 1., 2.], device)), D.Bernoulli(t([0.4], device))]
    pg.manual_seed(123)
    first = [d.sample((6,)).numpy(force=True) for d in dists]
    pg.manual_seed(123)
    second = [d.sample((6,)).numpy(force=True) for d in dists]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- gradients
def test_gradcheck_log_prob_and_rsample(device):
    f64 = dict(dtype=pg.float64, device=device, requires_grad=True)
    loc, scale = pg.tensor([0.3, -1.0], **f64), pg.tensor([0.7, 2.0], **f64)
    v = pg.tensor([0.1, 0.5], dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda a, b: D.Normal(a, b).log_prob(v), (loc, scale))
    assert pg.autograd.gradcheck(lambda a, b: D.Normal(a, b).entropy(), (loc, scale))

    def rs(a, b):
        pg.manual_seed(5)  # the same noise at every evaluation
        return D.Normal(a, b).rsample((3,))

    assert pg.autograd.gradcheck(rs, (loc, scale))
    logits = pg.tensor([[0.1, -0.4, 1.2], [0.0, 0.3, -0.2]], **f64)
    idx = pg.tensor([2, 0], device=device)
    assert pg.autograd.gradcheck(lambda lg: D.Categorical(logits=lg).log_prob(idx), (logits,))
    assert pg.autograd.gradcheck(lambda lg: D.Categorical(logits=lg).entropy(), (logits,))
    probs = pg.tensor([0.3, 0.6], **f64)
    bv = pg.tensor([1.0, 0.0], dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda p: D.Bernoulli(probs=p).log_prob(bv), (probs,))
    low, high = pg.tensor([0.0], **f64), pg.tensor([2.0], **f64)

    def urs(a, b):
        pg.manual_seed(7)
        return D.Uniform(a, b).rsample((4,))

    assert pg.autograd.gradcheck(urs, (low, high))
    rate = pg.tensor([0.5, 2.0], **f64)
    assert pg.autograd.gradcheck(lambda r: D.Exponential(r).log_prob(bv + 0.5), (rate,))
    counts = pg.tensor([0.0, 3.0], dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda r: D.Poisson(r).log_prob(counts), (rate,))
    assert pg.autograd.gradcheck(lambda p: D.Binomial(4, probs=p).log_prob(counts), (probs,))
    pos = pg.tensor([0.4, 2.5], dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda a, b: D.LogNormal(a, b).log_prob(pos), (loc, scale))

    def lnrs(a, b):
        pg.manual_seed(3)
        return D.LogNormal(a, b).rsample((2,))

    assert pg.autograd.gradcheck(lnrs, (loc, scale))
    temp = pg.tensor(0.7, **f64)

    def relaxed(tp, lg):
        pg.manual_seed(11)
        return D.RelaxedOneHotCategorical(tp, logits=lg).rsample((2,))

    assert pg.autograd.gradcheck(relaxed, (temp, logits))


def test_reinforce_through_categorical_log_prob(device):
    # the policy-gradient step of a REINFORCE script: grad of -R * log pi(a) w.r.t. the logits
    logits = pg.tensor([0.5, 1.0, -0.5], device=device, requires_grad=True)
    dist = D.Categorical(logits=logits)
    action = pg.tensor(1, device=device)
    loss = -(dist.log_prob(action) * 2.0)
    loss.backward()
    p = np.exp([0.5, 1.0, -0.5]) / np.exp([0.5, 1.0, -0.5]).sum()
    expected = -2.0 * (np.eye(3)[1] - p)
    close(logits.grad, expected)
    assert dist.sample().requires_grad is False


@pytest.mark.parametrize("dtype, expected", [
    ("bfloat16", [0.3984375, 0.474609375, 3.046875, 5.0, 1.015625]),
    ("float16", [0.40185546875, 0.47412109375, 3.048828125, 5.0078125, 1.017578125]),
])
def test_16_bit_bernoulli_log_prob_and_bce_with_logits_as_torch(device, dtype, expected):
    """Literals from PyTorch 2.13: its loss is (1 - t) x - log_sigmoid(x), the log-sigmoid of a
    16-bit input computed in float32 and rounded once (rounded at every step, bfloat16's first
    value was 0.40625)."""
    dt = getattr(pg, dtype)
    try:
        x = pg.tensor([-0.7025383114814758, 0.5, 3.0, -5.0, 1.7], device=device).to(dt)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines {dtype}")
    t = pg.tensor([0.0, 1.0, 0.0, 1.0, 0.5], device=device).to(dt)
    loss = pg.nn.functional.binary_cross_entropy_with_logits(x, t, reduction="none")
    assert loss.dtype == dt and loss.float().tolist() == expected
    lp = D.Bernoulli(logits=x, validate_args=False).log_prob(t)
    assert lp.float().tolist() == [-v for v in expected]
