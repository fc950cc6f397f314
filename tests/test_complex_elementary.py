"""Complex inverse trigonometric and hyperbolic functions (composed in ``_ops/special.py``):
values against numpy's principal branches, and PyTorch's conjugate Wirtinger gradients by
float64 gradcheck, on every device that stores complex tensors."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck

from complex_support import need_complex

# points in every quadrant, near the branch points +-1 and +-i, and with large parts
Z = np.array([0.3 + 0.4j, -2 + 1j, 1.5 - 3j, -0.1 - 0.2j, 0.7 - 0.6j, -0.9 + 0.05j,
              0.05 + 1.2j, -1.3 - 0.02j, 4 + 7j, -6 - 5j], np.complex128)

FUNCS = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
         "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_values_are_the_principal_branch(device, name):
    need_complex(device)
    for dt, tol in ((pg.complex128, 1e-12), (pg.complex64, 2e-6)):
        out = getattr(pg, name)(pg.tensor(Z, dtype=dt, device=device))
        assert out.dtype is dt
        ref = FUNCS[name](Z)
        np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_gradients_are_conjugate_wirtinger(device, name):
    """The gradient of a holomorphic f is g * conj(f'(z)) (PyTorch's convention): checked by
    finite differences, and once by value against the closed form."""
    need_complex(device)
    fn = getattr(pg, name)
    z = pg.tensor(Z[:6], device=device, requires_grad=True)
    assert gradcheck(fn, (z,))
    assert gradgradcheck(fn, (z,))
    w = np.array([0.5 + 1j, -1 + 0.2j, 0.3 - 0.7j, 1 + 1j, -0.4 - 0.9j, 0.2 + 0.1j])
    (g,) = pg.autograd.grad((fn(z) * pg.tensor(w, device=device)).real.sum(), z)
    h = 1e-7
    slope = (FUNCS[name](Z[:6] + h) - FUNCS[name](Z[:6] - h)) / (2 * h)  # f'(z), holomorphic
    np.testing.assert_allclose(g.cpu().numpy(), np.conj(w * slope), rtol=1e-6, atol=1e-7)


def test_logsumexp_var_std_addcdiv_on_complex(device):
    """Complex ``logsumexp`` (the largest real part subtracted: it used to drop the imaginary
    parts), ``var``/``std`` (real, of |z - mean|^2: they raised) and ``addcdiv`` (it raised the
    integer-division error), by value against numpy and by gradcheck."""
    need_complex(device)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    t = pg.tensor(a, device=device)
    m = a.real.max(1, keepdims=True)
    np.testing.assert_allclose(pg.logsumexp(t, 1).cpu().numpy(),
                               (np.log(np.exp(a - m).sum(1, keepdims=True)) + m)[:, 0], rtol=1e-12)
    v = t.var(1)
    assert v.dtype is pg.float64
    np.testing.assert_allclose(v.cpu().numpy(), np.var(a, 1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(t.std(0, correction=0).cpu().numpy(), np.std(a, 0), rtol=1e-12)
    np.testing.assert_allclose(pg.addcdiv(t, t, t * 2 + 1, value=0.3).cpu().numpy(),
                               a + 0.3 * a / (a * 2 + 1), rtol=1e-12)
    x = pg.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda z: pg.logsumexp(z, 1), (x,))
    assert gradcheck(lambda z: z.var(1), (x,))
    assert gradcheck(lambda z: z.std(), (x,))
    assert gradcheck(lambda z: pg.addcdiv(z, z, z * 2 + 1, value=0.3), (x,))


@pytest.mark.parametrize("dims", [1, 2])
def test_complex_convolution_gradients(device, dims):
    """A complex convolution's gradients correlate with conj(w) and conj(x) (they used the
    unconjugated operands: silently wrong); checked by gradcheck, and once by gradgradcheck."""
    need_complex(device)
    rng = np.random.default_rng(dims)
    sp = (5,) * dims
    x = rng.standard_normal((2, 3) + sp) + 1j * rng.standard_normal((2, 3) + sp)
    w = rng.standard_normal((2, 3) + (2,) * dims) + 1j * rng.standard_normal((2, 3) + (2,) * dims)
    b = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    conv = getattr(pg.nn.functional, f"conv{dims}d")
    X, Wt, B = (pg.tensor(v, device=device, requires_grad=True) for v in (x, w, b))
    assert gradcheck(lambda x, w, b: conv(x, w, b, padding=1, stride=2), (X, Wt, B))
    if dims == 1:
        assert gradgradcheck(lambda x, w: conv(x, w), (X, Wt))


def test_complex_silu_nansum_nanmean_as_torch(device):
    """PyTorch computes silu of a complex tensor but refuses its gradient, and refuses nansum and
    nanmean of complex inputs: the same results and messages here."""
    need_complex(device)
    z = pg.tensor(np.array([1 + 2j, 0.5 - 1j, -2 + 0.1j]), device=device)
    w = np.array([1 + 2j, 0.5 - 1j, -2 + 0.1j])
    ref = w / (1 + np.exp(-w))
    np.testing.assert_allclose(pg.nn.functional.silu(z).cpu().numpy(), ref, rtol=1e-12)
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation for "
                                           "outputs with complex dtype."):
        pg.nn.functional.silu(z.clone().requires_grad_())
    for fn in (pg.nansum, pg.nanmean, lambda t: pg.nansum(t, 0)):
        with pytest.raises(RuntimeError, match="nansum on CPU does not support complex inputs"):
            fn(z)
