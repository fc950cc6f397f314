"""pg.distributions: VonMises, MixtureSameFamily, ContinuousBernoulli and GeneralizedPareto
against literals computed with PyTorch 2.13 for the same parameters; sampling statistics,
validation and gradients on every backend."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad import distributions as D


def t(x, device, dtype=pg.float32, **kw):
    return pg.tensor(x, dtype=dtype, device=device, **kw)


def close(a, expected, tol=2e-5):
    np.testing.assert_allclose(a.detach().numpy(force=True), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


def test_von_mises(device):
    vm = D.VonMises(t([0.5, -1., 2.], device), t([0.5, 2., 8.], device))
    close(vm.log_prob(t([0.3, 2., -3.], device)), [-1.4093934, -4.6418557, -5.6266842])
    close(vm.variance, [0.75750035, 0.30222529, 0.064764559], 1e-4)
    close(vm.mean, [0.5, -1., 2.])
    assert not vm.has_rsample
    pg.manual_seed(0)
    s = vm.sample((20000,)).numpy(force=True).astype(np.float64)
    assert s.shape == (20000, 3) and (np.abs(s) <= np.pi + 1e-6).all()
    resultant = np.exp(1j * s).mean(0)
    np.testing.assert_allclose(np.angle(resultant), [0.5, -1., 2.], atol=0.05)
    np.testing.assert_allclose(1 - np.abs(resultant), [0.7575, 0.3022, 0.0648], atol=0.02)
    assert vm.expand((2, 3)).sample().shape == (2, 3)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.VonMises(t([0.], device), t([-1.], device))


def test_mixture_same_family(device):
    w = t([[0.3, 0.7], [0.5, 0.5]], device)
    m = D.MixtureSameFamily(D.Categorical(w), D.Normal(t([[-1., 2.], [0., 3.]], device),
                                                        t([[1., 0.5], [2., 1.]], device)))
    assert m.batch_shape == (2,) and m.event_shape == ()
    v = t([0.5, 1.], device)
    close(m.log_prob(v), [-3.0997634, -2.1627204])
    close(m.mean, [1.1, 1.5])
    close(m.variance, [2.365, 4.75])
    close(m.cdf(v), [0.2809028, 0.3571063])
    pg.manual_seed(0)
    s = m.sample((20000,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), [1.1, 1.5], atol=0.08)
    np.testing.assert_allclose(s.var(0), [2.365, 4.75], rtol=0.08)
    mv = D.MixtureSameFamily(D.Categorical(t([0.3, 0.7], device)), D.Independent(
        D.Normal(t([[0., 1.], [2., 3.]], device), pg.ones(2, 2, device=device)), 1))
    assert mv.batch_shape == () and mv.event_shape == (2,)
    close(mv.log_prob(t([[0.5, 1.], [1., 2.]], device)), [-3.0569468, -2.837877])
    close(mv.mean, [1.4, 2.4])
    close(mv.variance, [1.84, 1.84])
    assert mv.sample((3,)).shape == (3, 2)
    assert m.expand((4, 2)).sample().shape == (4, 2)
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(t([0.5, 0.5], device)),
                            D.Normal(pg.zeros(3, device=device), pg.ones(3, device=device)))
    with pytest.raises(ValueError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(0., 1.), D.Normal(0., 1.))


def test_continuous_bernoulli(device):
    cb = D.ContinuousBernoulli(t([0.2, 0.5, 0.9], device))
    v = t([0.3, 0.6, 0.95], device)
    close(cb.log_prob(v), [0.19842803, 0.0, 0.79511678])
    close(cb.mean, [0.3880142, 0.5, 0.66988039])
    close(cb.variance, [0.075897783, 0.083333336, 0.066508859])
    close(cb.entropy(), [-0.076414481, 0.0, -0.17963123])
    close(cb.cdf(v), [0.45366147, 0.6, 0.88295317])
    close(cb.icdf(v), [0.18386588, 0.6, 0.9793092])
    cbl = D.ContinuousBernoulli(logits=t([-1., 0., 2.], device))
    close(cbl.log_prob(v), [0.15867507, 0.0, 0.7385605], 1e-4)
    close(cbl.entropy(), [-0.040651828, 0.0, -0.15159583], 1e-4)
    pg.manual_seed(0)
    s = cb.sample((20000,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), [0.388, 0.5, 0.6699], atol=0.01)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli()
    with pytest.raises(ValueError, match="within the support"):
        cb.log_prob(t([1.5, 0.5, 0.5], device))


def test_generalized_pareto(device):
    g = D.GeneralizedPareto(t([0., 1., -1.], device), t([1., 2., 0.5], device),
                            t([0.3, 0., -0.2], device))
    v = t([0.5, 2., -0.8], device)
    close(g.log_prob(v), [-0.60563511, -1.1931472, 0.35962075])
    close(g.cdf(v), [0.3724131, 0.39346933, 0.34091848])
    close(g.icdf(t([0.3, 0.5, 0.9], device)), [0.37645677, 2.3862944, -0.077393413])
    close(g.mean, [1.4285715, 3.0, -0.58333337])
    close(g.variance, [5.1020412, 4.0, 0.12400793])
    close(g.entropy(), [1.3, 1.6931472, 0.10685283])
    pg.manual_seed(0)
    s = g.sample((20000,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(np.median(s, 0), g.icdf(t([0.5] * 3, device)).numpy(force=True),
                               atol=0.05)
    assert s[:, 2].max() <= -1 + 0.5 / 0.2 + 1e-5  # bounded support for a negative shape
    with pytest.raises(ValueError, match="within the support"):
        g.log_prob(t([-0.5, 2., 0.], device))


def test_gradcheck(device):
    f64 = dict(dtype=pg.float64, device=device, requires_grad=True)
    gc = pg.autograd.gradcheck
    loc, conc = pg.tensor([0.5, -1.0], **f64), pg.tensor([0.7, 5.0], **f64)
    v = pg.tensor([0.3, 2.0], dtype=pg.float64, device=device)
    assert gc(lambda a, b: D.VonMises(a, b).log_prob(v), (loc, conc))
    logits = pg.tensor([[0.2, -0.4]], **f64)
    locs = pg.tensor([[-1.0, 2.0]], **f64)
    assert gc(lambda lg, m: D.MixtureSameFamily(
        D.Categorical(logits=lg), D.Normal(m, pg.ones_like(m))).log_prob(v.unsqueeze(-1)),
        (logits, locs))
    probs = pg.tensor([0.2, 0.8], **f64)
    unit = pg.tensor([0.3, 0.6], dtype=pg.float64, device=device)
    assert gc(lambda p: D.ContinuousBernoulli(p).log_prob(unit), (probs,))
    scale, shape = pg.tensor([1.0, 2.0], **f64), pg.tensor([0.3, -0.2], **f64)
    assert gc(lambda s, c: D.GeneralizedPareto(0.0, s, c).log_prob(unit), (scale, shape))

    def gp_rs(s, c):
        pg.manual_seed(3)
        return D.GeneralizedPareto(0.0, s, c).rsample((2,))

    assert gc(gp_rs, (scale, shape))


def test_mixture_support_checks_every_component(device):
    m = D.MixtureSameFamily(D.Categorical(t([0.5, 0.5], device)),
                            D.Uniform(t([0., 1.], device), t([2., 3.], device)))
    assert isinstance(m.support, D.constraints.MixtureSameFamilyConstraint)
    assert m.support.check(t([1.5, 2.5, 0.5], device)).tolist() == [True, False, False]
    close(m.log_prob(t([1.5], device)), [-0.6931472])
    with pytest.raises(ValueError, match="within the support"):
        m.log_prob(t([2.5], device))
