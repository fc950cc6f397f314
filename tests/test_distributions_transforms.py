"""pg.distributions: Multinomial, NegativeBinomial, Kumaraswamy, FisherSnedecor, LogisticNormal,
the straight-through one-hot categorical, the extra transforms and the biject_to/transform_to
registries, against literals computed with PyTorch 2.13 for the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad import distributions as D
from portagrad.distributions import constraints
from portagrad.distributions import transforms as T


def t(x, device, dtype=pg.float32, **kw):
    return pg.tensor(x, dtype=dtype, device=device, **kw)


def close(a, expected, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(force=True), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


X = [[0.3, -1.2, 0.5], [2., 0.1, -0.4]]


def test_multinomial(device):
    m = D.Multinomial(5, t([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]], device))
    assert m.batch_shape == (2,) and m.event_shape == (3,)
    close(m.log_prob(t([[1., 2., 2.], [0., 5., 0.]], device)), [-2.0024805, -2.5541279], 2e-5)
    close(m.entropy(), [2.5918088, 2.2964745], 2e-5)
    close(m.mean, [[1.0, 1.5, 2.5], [0.5, 3.0, 1.5]])
    close(m.variance, [[0.8, 1.05, 1.25], [0.45, 1.2, 1.05]])
    s = m.sample((6,))
    assert s.shape == (6, 2, 3) and str(s.device) == str(pg.device(device))
    close(s.sum(-1), np.full((6, 2), 5.0))
    assert repr(m.support) == "Multinomial(upper_bound=5)"
    with pytest.raises(ValueError, match="within the support"):
        m.log_prob(t([[1., 2., 3.], [0., 5., 0.]], device))
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(t([2., 3.], device), t([0.5, 0.5], device))
    assert m.expand((4, 2)).sample().shape == (4, 2, 3)


def test_negative_binomial(device):
    nb = D.NegativeBinomial(t([3., 0.5], device), t([0.4, 0.8], device))
    x = t([2., 7.], device)
    close(nb.log_prob(x), [-1.5732989, -3.9298863], 2e-5)
    close(nb.mean, [2.0, 2.0])
    close(nb.variance, [3.3333335, 10.0], 2e-5)
    close(nb.mode, [1.0, 0.0])
    nbl = D.NegativeBinomial(t([2., 1.], device), logits=t([-1., 0.5], device))
    close(nbl.log_prob(x), [-2.1544347, -4.2926159], 2e-5)
    with pytest.raises(ValueError, match=r"Expected parameter probs .*HalfOpenInterval"):
        D.NegativeBinomial(t([3.], device), t([1.0], device))
    pg.manual_seed(0)
    s = nb.sample((20000,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(s.mean(0), [2.0, 2.0], atol=0.15)
    np.testing.assert_allclose(s.var(0), [3.3333, 10.0], rtol=0.15)
    assert (s == np.round(s)).all()
    with pytest.raises(NotImplementedError, match="supports means up to"):
        D.NegativeBinomial(t([10.], device), t([0.9999999], device)).sample()


def test_kumaraswamy_and_fisher_snedecor(device):
    k = D.Kumaraswamy(t([2., 0.5], device), t([3., 5.], device))
    v = t([0.3, 0.8], device)
    close(k.log_prob(v), [0.39916521, -7.9655547], 1e-4)
    close(k.entropy(), [-0.20842624, -2.3996241], 2e-5)
    close(k.mean, [0.45714289, 0.04761903], 2e-5)
    close(k.variance, [0.041020364, 0.0056689363], 2e-5)
    m = k.mode.numpy(force=True)  # ((a - 1) / (a b - 1)) ** (1 / a); undefined for a < 1
    assert abs(m[0] - 0.2 ** 0.5) < 1e-5 and np.isnan(m[1])
    s = k.rsample((5,))
    assert s.shape == (5, 2) and bool(((s >= 0) & (s <= 1)).all().item())
    f = D.FisherSnedecor(t([2., 0.5], device), t([3., 5.], device))
    close(f.log_prob(v), [-0.4558039, -1.7174222], 2e-5)
    close(f.mean, [3.0, 1.6666666])
    close(f.variance, [np.nan, 38.888889], 2e-5)
    f2 = D.FisherSnedecor(t([5., 3.], device), t([6., 10.], device))
    close(f2.mode, [0.45, 0.27777779])
    close(f2.variance, [4.05, 1.9097222], 2e-5)
    pg.manual_seed(1)
    s = f2.sample((20000,)).numpy(force=True).astype(np.float64)
    np.testing.assert_allclose(np.median(s, 0), [0.9, 0.87], rtol=0.1)  # medians (heavy tails)


def test_logistic_normal_and_straight_through(device):
    ln = D.LogisticNormal(t([[0.1, -0.5], [1., 0.]], device), t([[1., 0.5], [2., 1.]], device))
    assert ln.batch_shape == (2,) and ln.event_shape == (3,)
    close(ln.log_prob(t([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], device)), [2.0470524, 0.88166904],
          1e-4)
    s = ln.rsample((4,))
    assert s.shape == (4, 2, 3)
    close(s.sum(-1), np.ones((4, 2)))
    logits = t([0.1, 0.5, -0.3], device, requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(logits=logits)
    assert st.has_rsample
    y = st.rsample()
    assert sorted(y.detach().numpy(force=True).tolist()) == [0.0, 0.0, 1.0]
    (y * t([1., 2., 3.], device)).sum().backward()
    p = np.exp([0.1, 0.5, -0.3]) / np.exp([0.1, 0.5, -0.3]).sum()
    w = np.array([1., 2., 3.])
    close(logits.grad, p * (w - (p * w).sum()))  # d/dlogits of <w, softmax(logits)>


def test_transforms_match_torch(device):
    x = t(X, device)
    cases = [
        (T.SoftplusTransform(), [[0.85435528, 0.26328245, 0.97407699],
                                 [2.1269281, 0.74439669, 0.51301527]],
         [[-0.55435526, -1.4632825, -0.47407699], [-0.126928, -0.64439666, -0.91301525]]),
        (T.StickBreakingTransform(), [[0.31032243, 0.090269178, 0.37310734, 0.22630103],
                                      [0.71123457, 0.10277539, 0.074640103, 0.11134995]],
         [-6.0468807, -7.4061165]),
        (T.CatTransform([T.ExpTransform(), T.SoftplusTransform()], dim=1, lengths=[2, 1]),
         [[1.3498589, 0.30119419, 0.97407699], [7.3890562, 1.105171, 0.51301527]],
         [[0.3, -1.2, -0.47407699], [2.0, 0.1, -0.91301525]]),
        (T.StackTransform([T.ExpTransform(), T.SoftplusTransform(), T.AffineTransform(1., 2.)],
                          dim=1),
         [[1.3498589, 0.26328245, 2.0], [7.3890562, 0.74439669, 0.2]],
         [[0.3, -1.4632825, 0.69314718], [2.0, -0.64439666, 0.69314718]]),
    ]
    for tr, y_expected, ladj in cases:
        y = tr(x)
        close(y, y_expected, 1e-5)
        close(tr.log_abs_det_jacobian(x, y), ladj, 1e-4)
        close(tr.inv(y), X, 1e-4)
        assert tr.bijective and bool(tr.codomain.check(y).all().item())
    sm = T.SoftmaxTransform()
    close(sm(x), [[0.40907609, 0.091277212, 0.49964666], [0.80626535, 0.12059199, 0.07314273]])
    assert not sm.bijective
    close(T.LowerCholeskyTransform()(t([[0.3, -1.2], [0.5, 0.2]], device)),
          [[1.3498589, 0.0], [0.5, 1.2214028]])
    cd = T.CumulativeDistributionTransform(D.Normal(t(0., device), t(2., device)))
    v = t([0.5, -1.], device)
    close(cd(v), [0.59870631, 0.30853754])
    close(cd.log_abs_det_jacobian(v, cd(v)), [-1.6433357, -1.7370857])
    r = T.ReshapeTransform((3,), (3, 1))
    assert r(x).shape == (2, 3, 1) and r.inv(r(x)).shape == (2, 3)
    assert r.log_abs_det_jacobian(x, r(x)).shape == (2,) and r.forward_shape((5, 3)) == (5, 3, 1)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((3,), (2,))
    it = T.IndependentTransform(T.ExpTransform(), 1)
    close(it.log_abs_det_jacobian(x, it(x)), [-0.4, 1.7])
    assert it.event_dim == 1
    with pytest.raises(ValueError, match="expected size 3"):
        T.StackTransform([T.ExpTransform()] * 3, dim=0)(x)
    assert T.StickBreakingTransform().forward_shape((4, 2)) == (4, 3)


@pytest.mark.parametrize("c", [constraints.real, constraints.positive,
                               constraints.greater_than(2.), constraints.interval(-1., 3.),
                               constraints.unit_interval, constraints.simplex,
                               constraints.real_vector, constraints.less_than(1.)])
def test_biject_to(c):
    x = pg.tensor([0.3, -0.2, 0.5])
    tr = D.biject_to(c)
    y = tr(x)
    assert bool(c.check(y).all().item()) and tr.bijective
    close(tr.inv(y), x.numpy(), 1e-5)
    y2 = D.transform_to(c)(x)
    assert bool(c.check(y2).all().item())


def test_transform_registries():
    assert isinstance(D.transform_to(constraints.lower_cholesky), T.LowerCholeskyTransform)
    assert isinstance(D.transform_to(constraints.simplex), T.SoftmaxTransform)
    assert isinstance(D.biject_to(constraints.simplex), T.StickBreakingTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform"):
        D.biject_to(constraints.lower_cholesky)
    with pytest.raises(TypeError):
        D.biject_to.register(int, lambda c: T.ExpTransform())
    c = constraints.cat([constraints.positive, constraints.real], 0, [2, 1])
    y = D.biject_to(c)(pg.tensor([-1.0, 0.5, -3.0]))
    close(y, [np.exp(-1.0), np.exp(0.5), -3.0])
    assert c.check(y).tolist() == [True, True, True]


def test_gradcheck(device):
    f64 = dict(dtype=pg.float64, device=device, requires_grad=True)
    gc = pg.autograd.gradcheck
    a, b = pg.tensor([0.7, 2.5], **f64), pg.tensor([1.3, 0.6], **f64)
    unit = pg.tensor([0.3, 0.8], dtype=pg.float64, device=device)
    counts = pg.tensor([0.0, 3.0], dtype=pg.float64, device=device)
    assert gc(lambda x, y: D.Kumaraswamy(x, y).log_prob(unit), (a, b))
    assert gc(lambda x, y: D.FisherSnedecor(x, y).log_prob(unit), (a, b))
    assert gc(lambda x, p: D.NegativeBinomial(x, logits=p).log_prob(counts), (a, b))
    probs = pg.tensor([[0.2, 0.3, 0.5]], **f64)
    v = pg.tensor([[1.0, 0.0, 2.0]], dtype=pg.float64, device=device)
    assert gc(lambda p: D.Multinomial(3, probs=p).log_prob(v), (probs,))
    x = pg.tensor([[0.3, -0.4]], **f64)
    assert gc(lambda z: T.StickBreakingTransform()(z), (x,))


def test_corr_cholesky_and_positive_definite_transforms(device):
    x = t(X, device)
    cc = T.CorrCholeskyTransform()
    y = cc(x)
    assert y.shape == (2, 3, 3) and cc.forward_shape((2, 3)) == (2, 3, 3)
    assert constraints.corr_cholesky.check(y).tolist() == [True, True]
    close(cc.log_abs_det_jacobian(x, y), [-2.1099775, -2.8208876], 1e-4)
    close(cc.inv(y), X, 1e-4)
    with pytest.raises(ValueError, match="flattend lower-diagonal"):
        cc.forward_shape((2, 4))
    pd = T.PositiveDefiniteTransform()
    m = t([[0.3, -1.2], [0.5, 0.2]], device)
    close(pd(m), [[1.8221188, 0.67492944], [0.67492944, 1.7418247]])
    assert constraints.positive_definite.check(pd(m)).item()
    close(pd.inv(pd(m)), [[0.3, 0.0], [0.5, 0.2]], 1e-4)
    assert isinstance(D.transform_to(constraints.positive_definite), T.PositiveDefiniteTransform)
    assert isinstance(D.biject_to(constraints.corr_cholesky), T.CorrCholeskyTransform)
    assert constraints.positive_semidefinite.check(
        t([[1., 1.], [1., 1.]], device)).item()
    assert not constraints.positive_definite.check(t([[1., 1.], [1., 1.]], device)).item()
