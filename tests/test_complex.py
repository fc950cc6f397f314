"""complex64/complex128 tensors: dtypes and promotion, creation, printing, the real/complex views,
elementwise math, reductions, products, autograd (PyTorch's Wirtinger convention) and gradcheck,
compared with numpy's complex results (and PyTorch's where installed). On a device whose backend
declines complex dtypes, the decline itself is tested: a typed error naming the dtype and backend.
"""
from __future__ import annotations

import cmath
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck
from portagrad.errors import DTypeError


def _stores_complex(device: str) -> bool:
    return bool(getattr(pg.empty(1, device=device)._storage.backend, "supports_complex", False))


@pytest.fixture
def cdevice(device: str) -> str:
    """The device, for tests of complex computation (skipped where the backend declines)."""
    if not _stores_complex(device):
        pytest.skip(f"{device}'s backend declines complex dtypes (test_declining_backend)")
    return device


def _z(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


# ------------------------------------------------------------------------ the decline
def test_declining_backend(device: str) -> None:
    if _stores_complex(device):
        pytest.skip(f"{device}'s backend stores complex tensors")
    backend = pg.empty(1, device=device)._storage.backend.device_type
    for make in (lambda: pg.zeros(2, dtype=pg.complex64, device=device),
                 lambda: pg.tensor([1j], device=device),
                 lambda: pg.ones(2, device=device) + 1j,
                 lambda: pg.ones(2, device=device).to(pg.complex128),
                 lambda: pg.tensor([1 + 2j]).to(device),
                 lambda: pg.randn(3, dtype=pg.complex64, device=device),
                 lambda: pg.view_as_complex(pg.ones(3, 2, device=device))):
        with pytest.raises(DTypeError, match=rf"complex(64|128).*{backend}"):
            make()


# ------------------------------------------------------------------- dtypes, promotion
def test_dtypes_and_promotion() -> None:
    c64, c128 = pg.complex64, pg.complex128
    assert c64.is_complex and not c64.is_floating_point and c64.itemsize == 8
    assert c64 not in pg._dtype.DECLARED_ONLY and pg._dtype.as_dtype(c128) is c128
    for d in (pg.bool, pg.uint8, pg.int64, pg.float16, pg.bfloat16, pg.float32, c64):
        assert pg.promote_types(d, c64) is c64 and pg.promote_types(c64, d) is c64
        assert pg.promote_types(d, c128) is c128
    assert pg.promote_types(pg.float64, c64) is c128
    assert pg.finfo(c64).eps == pg.finfo(pg.float32).eps
    assert pg.finfo(c128).eps == pg.finfo(pg.float64).eps


def test_result_types_with_scalars(cdevice: str) -> None:
    d = cdevice
    assert (pg.ones(2, device=d) + 1j).dtype is pg.complex64
    assert (pg.ones(2, dtype=pg.float64, device=d) + 1j).dtype is pg.complex128
    assert (pg.ones(2, dtype=pg.int32, device=d) + 1j).dtype is pg.complex64
    # a zero-dim complex tensor keeps the width of a dimensioned float tensor (PyTorch's rule)
    assert (pg.ones(2, dtype=pg.float64, device=d) + pg.tensor(1j, device=d)).dtype is pg.complex128
    assert (pg.ones(2, device=d) + pg.tensor(1j, dtype=pg.complex128, device=d)).dtype is pg.complex64
    assert pg.tensor([1 + 2j], device=d).dtype is pg.complex64
    pg.set_default_dtype(pg.float64)
    try:
        assert pg.tensor([1 + 2j], device=d).dtype is pg.complex128
    finally:
        pg.set_default_dtype(pg.float32)


def test_result_types_match_torch() -> None:
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128"]
    for a in names:
        for b in names:
            got = pg.promote_types(getattr(pg, a), getattr(pg, b)).name
            assert got == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:], (a, b)


# --------------------------------------------------------------------- creation, host
def test_creation_and_host_round_trips(cdevice: str) -> None:
    d = cdevice
    z = _z((2, 3))
    for dt in (pg.complex64, pg.complex128):
        t = pg.tensor(z, dtype=dt, device=d)
        assert t.dtype is dt and t.is_complex() and pg.is_complex(t)
        np.testing.assert_array_equal(t.cpu().numpy(), z.astype(dt.numpy))
        assert t[1, 2].item() == complex(z.astype(dt.numpy)[1, 2])
        assert isinstance(t[0, 0].item(), complex)
        assert complex(t[0, 1]) == t[0, 1].item()
        with pytest.raises(RuntimeError, match="cannot be converted to type double"):
            float(t[0, 1])
        assert float(pg.tensor(2.5 + 0j, dtype=dt, device=d)) == 2.5
        assert int(pg.tensor(-3 + 0j, dtype=dt, device=d)) == -3
        assert t.tolist() == z.astype(dt.numpy).tolist()
    assert pg.from_numpy(z).dtype is pg.complex128
    np.testing.assert_array_equal(pg.zeros(2, dtype=pg.complex64, device=d).cpu().numpy(),
                                  np.zeros(2, np.complex64))
    assert pg.full((2,), 1 + 2j, device=d).dtype is pg.complex64
    np.testing.assert_array_equal(pg.full((2,), 1 + 2j, device=d).cpu().numpy(), [1 + 2j] * 2)
    np.testing.assert_array_equal(pg.ones(2, dtype=pg.complex128, device=d).cpu().numpy(), [1, 1])
    np.testing.assert_array_equal(pg.tensor([1, 2], device=d).to(pg.complex64).cpu().numpy(),
                                  [1, 2])


def test_randn_parts_have_variance_one_half(cdevice: str) -> None:
    pg.manual_seed(0)
    z = pg.randn(20000, dtype=pg.complex128, device=cdevice).cpu().numpy()
    assert z.dtype == np.complex128
    # E|z|^2 = 1, each part N(0, 1/2): 20000 draws put the sample variances within 0.03
    assert abs(np.var(z.real) - 0.5) < 0.03 and abs(np.var(z.imag) - 0.5) < 0.03
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05


def test_cast_to_real_warns_and_keeps_the_real_part(cdevice: str) -> None:
    t = pg.tensor([1.5 + 2j, -3 - 1j, 0 + 1j], device=cdevice)
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary"):
        r = t.to(pg.float32)
    np.testing.assert_array_equal(r.cpu().numpy(), [1.5, -3, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(t.to(pg.int64).cpu().numpy(), [1, -3, 0])
        np.testing.assert_array_equal(t.to(pg.bool).cpu().numpy(), [True, True, True])
        dst = pg.zeros(3, device=cdevice)
        dst.copy_(t)
    np.testing.assert_array_equal(dst.cpu().numpy(), [1.5, -3, 0])


def test_printing_as_torch() -> None:
    assert repr(pg.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(pg.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(pg.tensor([1 + 2j], dtype=pg.complex128)) == \
        "tensor([1.+2.j], dtype=portagrad.complex128)"
    assert repr(pg.tensor([1 + 2j, -3.5 + 0j, 1e-5j])) == \
        "tensor([ 1.0000+2.0000e+00j, -3.5000+0.0000e+00j,  0.0000+1.0000e-05j])"
    torch = pytest.importorskip("torch")
    z = _z((3,), 5).astype(np.complex64)
    assert repr(pg.tensor(z)) == repr(torch.tensor(z))


# ------------------------------------------------------------------------------ views
def test_view_as_real_and_complex_share_storage(cdevice: str) -> None:
    z = _z((2, 3))
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    r = pg.view_as_real(t)
    assert r.shape == (2, 3, 2) and r.dtype is pg.float64 and r.stride() == (6, 2, 1)
    np.testing.assert_array_equal(r.cpu().numpy(), np.stack([z.real, z.imag], -1))
    r[0, 0, 1] = 7.0  # writes through to t
    assert t[0, 0].item() == complex(z[0, 0].real, 7.0)
    back = pg.view_as_complex(r)
    assert back.dtype is pg.complex128 and back.shape == (2, 3)
    back[1, 1] = 5 - 5j
    assert t[1, 1].item() == 5 - 5j
    # views of views: a column of the complex tensor as real pairs (strides doubled)
    col = pg.view_as_real(t[:, 1])
    assert col.stride() == (6, 1) and col[1, 0].item() == 5.0


def test_real_imag_are_writable_views(cdevice: str) -> None:
    z = _z((4,), 1)
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    np.testing.assert_array_equal(t.real.cpu().numpy(), z.real)
    np.testing.assert_array_equal(t.imag.cpu().numpy(), z.imag)
    t.real.mul_(2)
    t.imag[0] = 9.0
    want = z.real * 2 + 1j * z.imag
    want[0] = want[0].real + 9j
    np.testing.assert_array_equal(t.cpu().numpy(), want)
    t.imag = pg.zeros(4, dtype=pg.float64, device=cdevice)
    np.testing.assert_array_equal(t.cpu().numpy(), want.real + 0j)
    x = pg.ones(2, device=cdevice)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        _ = x.imag


def test_recorded_inplace_on_a_part_raises(cdevice: str) -> None:
    """Autograd does not rebase a complex tensor's history when its parts change in place (the
    documented limit in _ops/complexnum): where it would record, the change raises instead of
    leaving a wrong gradient; unrecorded changes go through."""
    leaf = pg.tensor([1 + 1j, 2 - 1j], dtype=pg.complex128, device=cdevice, requires_grad=True)
    z = leaf * 1
    for change in (lambda: z.real.mul_(2), lambda: z.imag.__setitem__(0, 5.0),
                   lambda: pg.view_as_real(z).add_(1)):
        with pytest.raises(RuntimeError, match="in-place change of a view_as_real"):
            change()
    with pg.no_grad():
        z.imag.zero_()
    np.testing.assert_array_equal(z.detach().cpu().numpy(), [1, 2])
    # the complex tensor itself changes in place with its history (PyTorch's gradient)
    w = leaf * 1
    w.mul_(1j)
    w.real.sum().backward()
    assert leaf.grad is not None
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), [-1j, -1j])


def test_view_errors_as_torch(cdevice: str) -> None:
    d = cdevice
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: pg.view_as_complex(pg.ones(3, 3, device=d)), "last dimension of size 2"),
        (lambda: pg.view_as_complex(pg.ones(2, 3, device=d).t()), "last dimension with stride 1"),
        (lambda: pg.view_as_complex(pg.ones(3, 2, dtype=pg.int64, device=d)),
         "only supported for half, float and double tensors, but got a tensor of scalar type: "
         "Long"),
        (lambda: pg.view_as_complex(pg.ones(5, device=d)[1:].reshape(2, 2)[:1]),
         "storage_offset divisible by 2"),
        (lambda: pg.view_as_complex(pg.ones(3, 3, device=d)[:, :2]),
         "stride divisible by 2 for all but last dimension"),
        (lambda: pg.view_as_real(pg.ones(3, device=d)), "only supported for complex tensors"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()


def test_view_errors_match_torch() -> None:
    torch = pytest.importorskip("torch")
    for mk in (lambda m: m.view_as_complex(m.ones(3, 3)),
               lambda m: m.view_as_complex(m.ones(2, 3).t()),
               lambda m: m.view_as_complex(m.ones(5)[1:].reshape(2, 2)[:1]),
               lambda m: m.view_as_real(m.ones(3))):
        with pytest.raises(RuntimeError) as ref:
            mk(torch)
        with pytest.raises(RuntimeError) as got:
            mk(pg)
        assert str(got.value) == str(ref.value)


def test_conj_is_materialised(cdevice: str) -> None:
    z = np.array([1 + 2j, -3 - 0j, complex(math.inf, -math.inf), complex(math.nan, 1)])
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    c = t.conj()
    np.testing.assert_array_equal(c.cpu().numpy(), np.conj(z))
    # the choice documented in _ops/complexnum: a copy, so no conjugate bit
    assert not c.is_conj() and not pg.is_conj(c) and c.resolve_conj() is c
    c[0] = 0
    assert t[0].item() == 1 + 2j
    np.testing.assert_array_equal(t.conj_physical().cpu().numpy(), np.conj(z))
    np.testing.assert_array_equal(pg.conj_physical(t).cpu().numpy(), np.conj(z))
    x = pg.ones(2, device=cdevice)
    assert x.conj() is x and pg.conj(x) is x
    m = pg.tensor(_z((2, 3)), device=cdevice)
    np.testing.assert_array_equal(m.mH.cpu().numpy(), m.cpu().numpy().conj().T)
    np.testing.assert_array_equal(pg.adjoint(m).cpu().numpy(), m.cpu().numpy().conj().T)
    np.testing.assert_array_equal(pg.imag(m).cpu().numpy(), m.cpu().numpy().imag)
    cp = pg.view_as_real_copy(m)
    assert cp._storage is not m._storage
    np.testing.assert_array_equal(pg.view_as_complex_copy(cp).cpu().numpy(), m.cpu().numpy())
    assert x.cfloat().dtype is pg.complex64 and x.cdouble().dtype is pg.complex128


def test_abs_angle_sgn_complex_polar(cdevice: str) -> None:
    z = np.array([3 + 4j, -1 + 0j, 0j, -2 - 2j, 1e-3j])
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    a = t.abs()
    assert a.dtype is pg.float64
    np.testing.assert_allclose(a.cpu().numpy(), np.abs(z), rtol=1e-15)
    np.testing.assert_allclose(t.angle().cpu().numpy(), np.angle(z), rtol=1e-15)
    sgn = np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))
    np.testing.assert_allclose(t.sgn().cpu().numpy(), sgn, rtol=1e-15)
    with pytest.raises(RuntimeError, match="Please use torch.sgn instead"):
        t.sign()
    re = pg.tensor([1.0, 2.0], dtype=pg.float64, device=cdevice)
    im = pg.tensor([-1.0, 0.5], dtype=pg.float64, device=cdevice)
    c = pg.complex(re, im)
    assert c.dtype is pg.complex128
    np.testing.assert_array_equal(c.cpu().numpy(), [1 - 1j, 2 + 0.5j])
    p = pg.polar(re, im).cpu().numpy()
    np.testing.assert_allclose(p, [cmath.rect(1, -1), cmath.rect(2, 0.5)], rtol=1e-15)
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        pg.complex(re, im.float())


# ------------------------------------------------------------------ elementwise math
UNARY = ["neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal"]


def _np_unary(name: str, z: np.ndarray) -> np.ndarray:
    if name == "sigmoid":
        return 1 / (1 + np.exp(-z))
    if name == "neg":
        return -z
    return getattr(np, name)(z)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_unary_against_numpy(cdevice: str, name: str, dt: str) -> None:
    z = _z((3, 4), 2).astype(getattr(np, dt))
    got = getattr(pg.tensor(z, device=cdevice), name)()
    assert got.dtype is getattr(pg, dt)
    tol = 1e-5 if dt == "complex64" else 1e-13
    np.testing.assert_allclose(got.cpu().numpy(), _np_unary(name, z), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary_against_numpy(cdevice: str, op: str) -> None:
    a, b = _z((3, 4), 3), _z((4,), 4)  # broadcasting
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "pow": np.power}[op]
    ta, tb = pg.tensor(a, dtype=pg.complex128, device=cdevice), pg.tensor(b, device=cdevice)
    got = getattr(pg, op)(ta, tb)  # complex128 with complex64: complex128
    assert got.dtype is pg.complex128
    np.testing.assert_allclose(got.cpu().numpy(), f(a, b.astype(np.complex64)), rtol=1e-6)
    # with Python scalars and a real tensor
    np.testing.assert_allclose(getattr(pg, op)(ta, 2 - 1j).cpu().numpy(), f(a, 2 - 1j),
                               rtol=1e-13)
    r = pg.tensor(a.real, dtype=pg.float64, device=cdevice)
    np.testing.assert_allclose(getattr(pg, op)(r, 1j + 0.5).cpu().numpy(), f(a.real, 1j + 0.5),
                               rtol=1e-13)


def test_comparisons_and_predicates(cdevice: str) -> None:
    z = np.array([1 + 2j, complex(math.nan, 0), complex(math.inf, 1), 3j])
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    np.testing.assert_array_equal((t == t).cpu().numpy(), z == z)
    np.testing.assert_array_equal((t != 3j).cpu().numpy(), z != 3j)
    np.testing.assert_array_equal(t.isnan().cpu().numpy(), np.isnan(z))
    np.testing.assert_array_equal(t.isinf().cpu().numpy(), np.isinf(z))
    np.testing.assert_array_equal(t.isfinite().cpu().numpy(), np.isfinite(z))
    for fn, msg in ((lambda: t < t, '"lt_cpu" not implemented for \'ComplexDouble\''),
                    (lambda: t >= 1, '"ge_cpu" not implemented'),
                    (lambda: t.max(), '"max_all" not implemented'),
                    (lambda: t.argmin(), "not implemented"),
                    (lambda: pg.maximum(t, t), "not implemented")):
        with pytest.raises(NotImplementedError, match=msg):
            fn()
    for fn, exc, msg in ((lambda: t.clamp(0, 1), NotImplementedError, "clamp is not supported"),
                         (lambda: t.floor(), NotImplementedError, "floor is not supported"),
                         (lambda: t.round(), NotImplementedError, "round is not supported"),
                         (lambda: pg.relu(t), NotImplementedError, "clamp is not supported"),
                         (lambda: t.sort(), RuntimeError, "Sort does not support complex"),
                         (lambda: t.clone().abs_(), RuntimeError, "In-place abs is not supported")):
        with pytest.raises(exc, match=msg):
            fn()
    w = pg.where(t.real > 1, t, 0.5)
    np.testing.assert_array_equal(w.cpu().numpy(), np.where(z.real > 1, z, 0.5))
    u = pg.tensor(_z((5,), 6), device=cdevice)
    assert pg.allclose(u, u + 1e-9) and not pg.allclose(u, u + 1e-3j)
    np.testing.assert_array_equal(pg.isclose(t, t).cpu().numpy(), [True, False, True, True])


# --------------------------------------------------------------- reductions, products
def test_reductions_against_numpy(cdevice: str) -> None:
    z = _z((3, 5), 7)
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    np.testing.assert_allclose(t.sum().item(), z.sum(), rtol=1e-14)
    np.testing.assert_allclose(t.sum(0).cpu().numpy(), z.sum(0), rtol=1e-14)
    np.testing.assert_allclose(t.mean(1).cpu().numpy(), z.mean(1), rtol=1e-14)
    np.testing.assert_allclose(t.prod(1).cpu().numpy(), z.prod(1), rtol=1e-13)
    np.testing.assert_allclose(t.cumsum(1).cpu().numpy(), z.cumsum(1), rtol=1e-14)
    assert t.sum().dtype is pg.complex128 and t.mean().dtype is pg.complex128


def test_products_against_numpy(cdevice: str) -> None:
    a, b, v = _z((3, 4), 8), _z((4, 2), 9), _z((4,), 10)
    ta, tb, tv = (pg.tensor(x, dtype=pg.complex128, device=cdevice) for x in (a, b, v))
    np.testing.assert_allclose((ta @ tb).cpu().numpy(), a @ b, rtol=1e-13)
    np.testing.assert_allclose(pg.mm(ta, tb).cpu().numpy(), a @ b, rtol=1e-13)
    np.testing.assert_allclose(pg.bmm(ta[None], tb[None]).cpu().numpy(), (a @ b)[None],
                               rtol=1e-13)
    np.testing.assert_allclose((ta @ tv).cpu().numpy(), a @ v, rtol=1e-13)
    np.testing.assert_allclose(pg.vdot(tv, tv).item(), np.vdot(v, v), rtol=1e-13)
    np.testing.assert_allclose(pg.dot(tv, tv).item(), np.dot(v, v), rtol=1e-13)
    bias = _z((3,), 11)
    lin = pg.nn.functional.linear(tb.t(), ta, pg.tensor(bias, device=cdevice))
    np.testing.assert_allclose(lin.cpu().numpy(), b.T @ a.T + bias, rtol=1e-13)


def test_storage_generic_ops(cdevice: str) -> None:
    z = _z((3, 4), 12)
    t = pg.tensor(z, dtype=pg.complex128, device=cdevice)
    np.testing.assert_array_equal(t[1:, ::2].cpu().numpy(), z[1:, ::2])
    np.testing.assert_array_equal(t[pg.tensor([2, 0], device=cdevice)].cpu().numpy(), z[[2, 0]])
    np.testing.assert_array_equal(t[t.real > 0].cpu().numpy(), z[z.real > 0])
    np.testing.assert_array_equal(pg.cat([t, t], 1).cpu().numpy(), np.concatenate([z, z], 1))
    np.testing.assert_array_equal(pg.stack([t, t]).cpu().numpy(), np.stack([z, z]))
    np.testing.assert_array_equal(t.reshape(2, 6).cpu().numpy(), z.reshape(2, 6))
    np.testing.assert_array_equal(t.permute(1, 0).contiguous().cpu().numpy(), z.T)
    np.testing.assert_array_equal(t.flip(0).cpu().numpy(), z[::-1])
    c = t.clone()
    c[0, 0] = 1j
    assert t[0, 0].item() == z[0, 0]
    dst = pg.zeros(3, 4, dtype=pg.complex128, device=cdevice)
    dst[:, 1:3] = t[:, :2]
    want = np.zeros((3, 4), complex)
    want[:, 1:3] = z[:, :2]
    np.testing.assert_array_equal(dst.cpu().numpy(), want)
    np.testing.assert_array_equal(pg.zeros(2, dtype=pg.complex64, device=cdevice).fill_(2j)
                                  .cpu().numpy(), [2j, 2j])


# ------------------------------------------------------------------------- autograd
def test_backward_of_a_complex_scalar_raises(cdevice: str) -> None:
    z = pg.tensor([1 + 1j], dtype=pg.complex128, device=cdevice, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar "
                                           "outputs"):
        (z * 2).sum().backward()


def test_gradient_convention_closed_forms(cdevice: str) -> None:
    """PyTorch's convention: the gradient is dL/dRe z + i dL/dIm z. For L = |z|^2 it is 2z; for
    L = Re(w z) it is conj(w); for L = |exp(z)| = exp(Re z) it is exp(Re z)."""
    z0, w0 = 1.5 - 0.5j, 0.25 + 2j
    z = pg.tensor([z0], dtype=pg.complex128, device=cdevice, requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), [2 * z0], rtol=1e-14)
    z.grad = None
    (z * w0).real.sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), [np.conj(w0)], rtol=1e-14)
    z.grad = None
    z.exp().abs().sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), [math.exp(z0.real)], rtol=1e-14)
    # a real leaf that meets complex numbers gets a real gradient (the real part)
    r = pg.tensor([2.0], dtype=pg.float64, device=cdevice, requires_grad=True)
    (r * (1 + 3j)).imag.sum().backward()
    assert r.grad.dtype is pg.float64 and r.grad.item() == 3.0


_C = pg.complex128

# name -> (input shapes and whether complex, function): each checked by gradcheck
GRAD_CASES: dict[str, tuple[list[tuple[tuple[int, ...], bool]], Callable[..., Any]]] = {
    "add": ([((3,), True), ((3,), True)], lambda a, b: a + b),
    "sub": ([((3,), True), ((3,), False)], lambda a, b: a - b),
    "mul": ([((3,), True), ((3,), True)], lambda a, b: a * b),
    "mul_real": ([((3,), True), ((3,), False)], lambda a, b: a * b),
    "div": ([((3,), True), ((3,), True)], lambda a, b: a / b),
    "rdiv": ([((3,), True)], lambda a: (2 - 1j) / a),
    "pow": ([((3,), True), ((3,), True)], lambda a, b: a ** b),
    "pow_scalar": ([((3,), True)], lambda a: a ** 2.5),
    "neg": ([((3,), True)], lambda a: -a),
    "exp": ([((3,), True)], lambda a: a.exp()),
    "log": ([((3,), True)], lambda a: a.log()),
    "sqrt": ([((3,), True)], lambda a: a.sqrt()),
    "sin": ([((3,), True)], lambda a: a.sin()),
    "cos": ([((3,), True)], lambda a: a.cos()),
    "tanh": ([((3,), True)], lambda a: a.tanh()),
    "sigmoid": ([((3,), True)], lambda a: a.sigmoid()),
    "reciprocal": ([((3,), True)], lambda a: a.reciprocal()),
    "abs": ([((3,), True)], lambda a: a.abs()),
    "angle": ([((3,), True)], lambda a: a.angle()),
    "sgn": ([((3,), True)], lambda a: a.sgn()),
    "conj": ([((3,), True)], lambda a: a.conj()),
    "real_imag": ([((3,), True)], lambda a: a.real * 2 - a.imag),
    "view_as_real": ([((3,), True)], lambda a: pg.view_as_real(a)),
    "view_as_complex": ([((3, 2), False)], lambda a: pg.view_as_complex(a)),
    "complex": ([((3,), False), ((3,), False)], lambda a, b: pg.complex(a, b)),
    "polar": ([((3,), False), ((3,), False)], lambda a, b: pg.polar(a, b)),
    "sum": ([((2, 3), True)], lambda a: a.sum(1)),
    "mean": ([((2, 3), True)], lambda a: a.mean()),
    "prod": ([((2, 3), True)], lambda a: a.prod(1)),
    "cumsum": ([((2, 3), True)], lambda a: a.cumsum(1)),
    "matmul": ([((2, 3), True), ((3, 2), True)], lambda a, b: a @ b),
    "bmm": ([((1, 2, 3), True), ((1, 3, 2), True)], lambda a, b: pg.bmm(a, b)),
    "linear": ([((2, 3), True), ((4, 3), True), ((4,), True)],
               lambda x, w, b: pg.nn.functional.linear(x, w, b)),
    "where": ([((3,), True), ((3,), True)], lambda a, b: pg.where(a.real > 0, a, b)),
    "index_cat": ([((3,), True)], lambda a: pg.cat([a[1:], a[:2]]).reshape(2, 2).permute(1, 0)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradcheck(cdevice: str, name: str) -> None:
    shapes, fn = GRAD_CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    inputs = []
    for shape, is_c in shapes:
        v = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
        if is_c:
            v = v + 1j * rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
        inputs.append(pg.tensor(v, dtype=_C if is_c else pg.float64, device=cdevice,
                                requires_grad=True))
    assert gradcheck(fn, tuple(inputs))


def test_gradcheck_catches_a_missing_conjugate(cdevice: str) -> None:
    class WrongSquare(pg.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * 2 * x  # PyTorch's convention needs g * conj(2x)

    z = pg.tensor(_z((3,), 13), dtype=_C, device=cdevice, requires_grad=True)
    assert not gradcheck(WrongSquare.apply, (z,), raise_exception=False)
    assert gradcheck(lambda x: x * x, (z,))


def test_gradgradcheck_complex(cdevice: str) -> None:
    a = pg.tensor(_z((3,), 14), dtype=_C, device=cdevice, requires_grad=True)
    b = pg.tensor(_z((3,), 15), dtype=_C, device=cdevice, requires_grad=True)
    assert gradgradcheck(lambda x, y: x * y.exp(), (a, b))


def test_gradients_match_torch(cdevice: str) -> None:
    torch = pytest.importorskip("torch")
    z0, w0 = _z((4,), 16), _z((4,), 17)
    fns: list[Callable[[Any, Any, Any], Any]] = [
        lambda m, z, w: (z * w).abs().sum(),
        lambda m, z, w: (z / w).real.sum() + 2 * (z / w).imag.sum(),
        lambda m, z, w: (z.exp() * w.log()).abs().sum(),
        lambda m, z, w: (z ** w).abs().sum(),
        lambda m, z, w: (z.sgn() * w.tanh()).angle().sum(),
        lambda m, z, w: (z.reshape(2, 2) @ w.reshape(2, 2).conj()).abs().sum(),
        lambda m, z, w: m.view_as_real(z.sqrt() * w.sigmoid()).pow(2).sum(),
    ]
    for i, f in enumerate(fns):
        zt = torch.tensor(z0, requires_grad=True)
        wt = torch.tensor(w0, requires_grad=True)
        f(torch, zt, wt).backward()
        zp = pg.tensor(z0, device=cdevice, requires_grad=True)
        wp = pg.tensor(w0, device=cdevice, requires_grad=True)
        f(pg, zp, wp).backward()
        np.testing.assert_allclose(zp.grad.cpu().numpy(), zt.grad.resolve_conj().numpy(),
                                   rtol=1e-10, err_msg=str(i))
        np.testing.assert_allclose(wp.grad.cpu().numpy(), wt.grad.resolve_conj().numpy(),
                                   rtol=1e-10, err_msg=str(i))


def test_linalg_norm_of_complex_vectors(cdevice: str) -> None:
    z0 = np.array([3 + 4j, 1j, -2 + 0.5j])
    z = pg.tensor(z0, dtype=pg.complex128, device=cdevice, requires_grad=True)
    n = pg.linalg.vector_norm(z)
    assert n.dtype is pg.float64
    np.testing.assert_allclose(n.item(), np.linalg.norm(z0), rtol=1e-15)
    n.backward()
    assert z.grad is not None  # d||z||: z / ||z|| in PyTorch's convention
    np.testing.assert_allclose(z.grad.cpu().numpy(), z0 / np.linalg.norm(z0), rtol=1e-14)
    # (the decompositions on complex matrices: tests/test_linalg_complex.py)


# -------------------------------------------------------------------- serialization
def test_save_load_round_trip(cdevice: str, tmp_path: Any) -> None:
    x = pg.tensor(_z((2, 3), 18), dtype=pg.complex128, device=cdevice)
    y = pg.tensor(_z((3,), 19), dtype=pg.complex64, device=cdevice)
    for fmt in ("portagrad", "pytorch"):
        p = tmp_path / f"c.{fmt}"
        pg.save({"x": x, "y": y}, p, format=fmt)
        r = pg.load(p, map_location="cpu")
        assert r["x"].dtype is pg.complex128 and r["y"].dtype is pg.complex64
        np.testing.assert_array_equal(r["x"].numpy(), x.cpu().numpy())
        np.testing.assert_array_equal(r["y"].numpy(), y.cpu().numpy())
    # the native format stores a view of another dtype as a tensor of its own
    pg.save({"y": y, "v": pg.view_as_real(y)}, tmp_path / "v.pg")
    r = pg.load(tmp_path / "v.pg", map_location="cpu")
    np.testing.assert_array_equal(r["v"].numpy(), pg.view_as_real(y).cpu().numpy())
    # torch.save refuses one storage under two dtypes, and so does the PyTorch format
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        pg.save({"y": y, "v": pg.view_as_real(y)}, tmp_path / "v.pt", format="pytorch")


# ------------------------------------------------------------------------ testing helpers
def test_assert_close_and_make_tensor(cdevice: str) -> None:
    a = pg.testing.make_tensor((4,), dtype=pg.complex64, device=cdevice, low=-1, high=1)
    assert a.dtype is pg.complex64 and a.shape == (4,)
    parts = pg.view_as_real(a).cpu().numpy()
    assert parts.min() >= -1 and parts.max() < 1 and np.any(parts[:, 1] != 0)
    pg.testing.assert_close(a, a.clone())
    with pytest.raises(AssertionError, match="not close"):
        pg.testing.assert_close(a, a + 1e-3j)
    pg.testing.assert_close(1 + 2j, 1 + 2j + 1e-9)
    with pytest.raises(AssertionError):
        pg.testing.assert_close(1 + 2j, 1 + 3j)
    nan = pg.tensor([complex(math.nan, 0)], device=cdevice)
    pg.testing.assert_close(nan, nan, equal_nan=True)

