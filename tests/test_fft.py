"""``portagrad.fft`` (PyTorch's ``torch.fft``): every transform against ``numpy.fft`` (and
PyTorch where it is installed) for every norm, ``n``/``s`` padding and trimming, ``dim``, and the
output dtypes; the argument errors as PyTorch raises them; ``gradcheck`` of every transform; the
frequency grids and shifts on every device; and the host primitives' conventions.

The transforms need complex tensors: on a device (or a build) that declines them, the transform
tests skip and :func:`test_transforms_decline_without_complex` checks the decline instead.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck
from portagrad.backends import _host_fft
from portagrad.errors import DTypeError

from complex_support import complex_ok, need_complex

NORMS = (None, "backward", "ortho", "forward")
C2C = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn")
R2C = ("rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn")
C2R = ("irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn")
TRANSFORMS = C2C + R2C + C2R
ONE_D = ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft")
SHAPE = (4, 5, 6)

# the sizes each family is called with: 1-D (n, dim), 2-D and n-D (s, dim)
ARGS_1D = ({}, {"n": 3}, {"n": 9}, {"dim": 0}, {"n": 7, "dim": 1}, {"n": 1})
ARGS_2D = ({}, {"s": (3, 8)}, {"dim": (0, 2)}, {"s": (2, -1), "dim": (2, 0)})
ARGS_ND = ARGS_2D + ({"dim": 1}, {"s": (5,)}, {"s": (3, 4, 5)}, {"dim": (-1, 0, 1)})


def _args(name: str) -> tuple[dict, ...]:
    if name in ONE_D:
        return ARGS_1D
    return ARGS_2D if name.endswith("2") else ARGS_ND


# ------------------------------------------------------------------- the numpy reference
def _canonical(name: str, shape: tuple[int, ...], kw: dict) -> tuple[list[int], list[int]]:
    """PyTorch's (sizes, axes) for a call: the transformed axes, and the sizes the input is
    trimmed or padded to (for the complex-to-real ones, the output's sizes)."""
    nd = len(shape)
    if name in ONE_D:
        axis = kw.get("dim", -1) % nd
        n = kw.get("n")
        if n is None:
            n = 2 * (shape[axis] - 1) if name in C2R else shape[axis]
        return [n], [axis]
    s = kw.get("s")
    dim = kw.get("dim", (-2, -1) if name.endswith("2") else None)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        axes = list(range(nd - len(s), nd)) if s is not None else list(range(nd))
    else:
        axes = [d % nd for d in dim]
    sizes = [shape[a] for a in axes] if s is None else [shape[a] if v == -1 else v
                                                         for v, a in zip(s, axes)]
    if name in C2R and (s is None or s[-1] == -1):
        sizes[-1] = 2 * (shape[axes[-1]] - 1)
    return sizes, axes


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def np_ref(name: str, x: np.ndarray, kw: dict) -> np.ndarray:
    """``numpy.fft``'s result for ``torch.fft.<name>(x, **kw)`` (complex128 or float64).
    The Hermitian transforms are numpy's identities: ``hfftn(x) = irfftn(conj(x))`` and
    ``ihfftn(x) = conj(rfftn(x))`` with the normalisation's direction swapped."""
    sizes, axes = _canonical(name, x.shape, kw)
    norm = kw.get("norm")
    base = name.rstrip("2n") if name not in ONE_D else name
    fn = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn,
          "irfft": np.fft.irfftn}.get(base)
    if fn is not None:
        return fn(x, s=sizes, axes=axes, norm=norm or "backward")  # type: ignore[no-any-return]
    if base == "hfft":
        return np.fft.irfftn(np.conj(x), s=sizes, axes=axes, norm=_SWAP[norm])
    return np.conj(np.fft.rfftn(x, s=sizes, axes=axes, norm=_SWAP[norm]))


def _input(name: str, real: bool, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(SHAPE)
    if real or name in R2C:
        return x
    return x + 1j * rng.standard_normal(SHAPE)


def _np(t: pg.Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _close(got: np.ndarray, ref: np.ndarray, single: bool) -> None:
    tol = 2e-5 if single else 1e-12
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)


def _expected_dtype(name: str, dtype: Any) -> Any:
    real = {pg.complex64: pg.float32, pg.complex128: pg.float64}.get(dtype, dtype)
    if not real.is_floating_point:
        real = pg.get_default_dtype()
    return real if name in C2R else real.to_complex()


# ------------------------------------------------------------------------ the transforms
@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("norm", NORMS)
def test_transform_matches_numpy(name: str, norm: str | None, device: str) -> None:
    """Every call form of every transform (sizes, dims, norms) against ``numpy.fft``, from
    complex and real input, in single and double precision, with PyTorch's result dtype."""
    need_complex(device)
    for kw in _args(name):
        kw = {**kw, "norm": norm}
        for real in (False, True) if name not in R2C else (True,):
            x = _input(name, real)
            ref = np_ref(name, x, kw)
            dtypes = (pg.float32, pg.float64) if real else (pg.complex64, pg.complex128)
            for dt in dtypes:
                got = getattr(pg.fft, name)(pg.tensor(x, dtype=dt, device=device), **kw)
                assert got.dtype == _expected_dtype(name, dt), (name, kw, dt)
                assert tuple(got.shape) == ref.shape, (name, kw)
                _close(_np(got), ref, dt in (pg.float32, pg.complex64))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_integer_input_computes_in_default_float(name: str, device: str) -> None:
    need_complex(device)
    x = np.arange(24).reshape(2, 3, 4) % 5
    got = getattr(pg.fft, name)(pg.tensor(x, device=device))
    assert got.dtype == _expected_dtype(name, pg.float32)
    _close(_np(got), np_ref(name, x.astype(np.float64), {}), True)


# (transform, its inverse, real input, the inverse's size arguments)
ROUND_TRIPS = (("fft", "ifft", False, {}), ("fftn", "ifftn", False, {}),
               ("rfft", "irfft", True, {"n": SHAPE[-1]}), ("ihfft", "hfft", True, {"n": SHAPE[-1]}),
               ("rfft2", "irfft2", True, {"s": SHAPE[-2:]}),
               ("ihfftn", "hfftn", True, {"s": SHAPE}))


@pytest.mark.parametrize("pair", ROUND_TRIPS, ids=lambda p: p[0])
def test_inverse_round_trip(pair: tuple, device: str) -> None:
    """Each transform followed by its inverse gives the signal back, for every norm (the pair
    applies ``1/n`` once between them), odd last sizes included."""
    need_complex(device)
    name, inverse, real, kw = pair
    x = _input(name, real)
    for norm in NORMS:
        y = getattr(pg.fft, name)(pg.tensor(x, device=device), norm=norm)
        back = getattr(pg.fft, inverse)(y, norm=norm, **kw)
        _close(_np(back), x, False)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_matches_torch(name: str, device: str) -> None:
    torch = pytest.importorskip("torch")
    need_complex(device)
    for kw in _args(name):
        for norm in NORMS:
            x = _input(name, False)
            got = getattr(pg.fft, name)(pg.tensor(x, device=device), **kw, norm=norm)
            want = getattr(torch.fft, name)(torch.tensor(x), **kw, norm=norm).resolve_conj()
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            _close(_np(got), want.numpy(), False)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_out(name: str, device: str) -> None:
    need_complex(device)
    x = pg.tensor(_input(name, False), device=device)
    want = getattr(pg.fft, name)(x)
    out = pg.empty(0, dtype=want.dtype, device=device)
    assert getattr(pg.fft, name)(x, out=out) is out
    np.testing.assert_array_equal(_np(out), _np(want))
    wrong = pg.empty(0, dtype=pg.int64, device=device)
    kind = "floating point" if name in C2R else "complex"
    with pytest.raises(RuntimeError, match=f"expects a {kind} output tensor, but got Long"):
        getattr(pg.fft, name)(x, out=wrong)


# --------------------------------------------------------------------------- gradients
def _grad_inputs(name: str, device: str) -> pg.Tensor:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    if name not in R2C:
        x = x + 1j * rng.standard_normal((3, 4))
    return pg.tensor(x, device=device, requires_grad=True)


_GRAD_ARGS = {1: ({}, {"n": 3, "norm": "ortho"}, {"n": 7, "dim": 0, "norm": "forward"}),
              2: ({}, {"s": (2, 5), "norm": "ortho"}, {"s": (4, -1), "dim": (1, 0)}),
              3: ({"dim": 0, "norm": "forward"}, {"s": (5,)}, {"s": (2, 3), "dim": (1, 0)})}


@pytest.mark.parametrize("name", TRANSFORMS)
def test_gradcheck(name: str, device: str) -> None:
    """Every transform is differentiable (float64 / complex128): sizes, dims and norms."""
    need_complex(device)
    group = 1 if name in ONE_D else 2 if name.endswith("2") else 3
    fn = getattr(pg.fft, name)
    for kw in _GRAD_ARGS[group]:
        assert gradcheck(lambda t, kw=kw: fn(t, **kw), (_grad_inputs(name, device),))


def _loss_np(name: str, kw: dict, x: np.ndarray, g: np.ndarray) -> float:
    y = np_ref(name, x, kw)
    return float(np.sum(y.real * g.real + y.imag * g.imag))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_grad_matches_finite_differences_of_numpy(name: str, device: str) -> None:
    """The gradient of ``L = Re(sum(conj(g) * f(x)))``, PyTorch's convention for complex
    inputs (``dL/dRe(x) + i dL/dIm(x)``), against central differences of ``numpy.fft``
    (the reference, independent of portagrad's autograd)."""
    need_complex(device)
    group = 1 if name in ONE_D else 2 if name.endswith("2") else 3
    rng = np.random.default_rng(5)
    for kw in _GRAD_ARGS[group]:
        t = _grad_inputs(name, device)
        x = _np(t)
        y = getattr(pg.fft, name)(t, **kw)
        g = rng.standard_normal(tuple(y.shape))
        if y.dtype.is_complex:
            g = g + 1j * rng.standard_normal(g.shape)
        gt = pg.tensor(g, dtype=y.dtype, device=device)
        loss = (y.real * gt.real + y.imag * gt.imag).sum() if y.dtype.is_complex \
            else (y * gt).sum()
        loss.backward()
        assert t.grad is not None and t.grad.dtype == t.dtype
        eps, want = 1e-6, np.zeros(x.shape, x.dtype)
        for idx in np.ndindex(x.shape):
            for unit in ((1.0, 1j) if np.iscomplexobj(x) else (1.0,)):
                d = np.zeros(x.shape, x.dtype)
                d[idx] = unit * eps
                slope = (_loss_np(name, kw, x + d, g) - _loss_np(name, kw, x - d, g)) / (2 * eps)
                want[idx] += unit * slope
        np.testing.assert_allclose(_np(t.grad), want, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", TRANSFORMS)
def test_grad_matches_torch(name: str, device: str) -> None:
    torch = pytest.importorskip("torch")
    need_complex(device)
    group = 1 if name in ONE_D else 2 if name.endswith("2") else 3
    rng = np.random.default_rng(6)
    for kw in _GRAD_ARGS[group]:
        t = _grad_inputs(name, device)
        tt = torch.tensor(_np(t), requires_grad=True)
        y, yt = getattr(pg.fft, name)(t, **kw), getattr(torch.fft, name)(tt, **kw)
        g = rng.standard_normal(tuple(y.shape)) + (1j * rng.standard_normal(tuple(y.shape))
                                                   if y.dtype.is_complex else 0)
        got = pg.autograd.grad(y, t, pg.tensor(g, dtype=y.dtype, device=device))[0]
        want = torch.autograd.grad(yt, tt, torch.tensor(g))[0]
        _close(_np(got), want.resolve_conj().numpy(), False)


@pytest.mark.parametrize("name", ("fft", "rfft", "irfft", "hfft", "fftn", "irfftn"))
def test_grad_of_real_input_is_real(name: str, device: str) -> None:
    """A real input's gradient is real, as PyTorch's (the real part of the complex one)."""
    need_complex(device)
    x = pg.tensor(np.random.default_rng(2).standard_normal((3, 4)), device=device,
                  requires_grad=True)
    y = getattr(pg.fft, name)(x)
    (y.real.sum() if y.dtype.is_complex else y.sum()).backward()
    assert x.grad is not None and x.grad.dtype == pg.float64


def test_autocast_computes_in_float32(device: str) -> None:
    """Under CPU autocast the transforms run in float32 (PyTorch's CPU fp32 list): a bfloat16
    input gives complex64 (float32 for the complex-to-real ones). The GPU lists, which every
    other device type follows, leave the transforms out: bfloat16 raises there, as on CUDA."""
    need_complex(device)
    try:
        x = pg.ones((4, 8), dtype=pg.bfloat16, device=device)
    except DTypeError:
        pytest.skip(f"{device} declines bfloat16 (DTypeError)")
    dev_type = pg.device(device).type
    if dev_type != "cpu":
        with pg.autocast(dev_type, dtype=pg.bfloat16):
            with pytest.raises(RuntimeError, match="Unsupported dtype BFloat16"):
                pg.fft.rfft(x)
        return
    with pg.autocast(dev_type, dtype=pg.bfloat16):
        assert pg.fft.rfft(x).dtype == pg.complex64
        assert pg.fft.fft2(x).dtype == pg.complex64
        assert pg.fft.irfft(x).dtype == pg.float32
    with pytest.raises(RuntimeError, match="Unsupported dtype BFloat16"):
        pg.fft.rfft(x)


# ------------------------------------------------------------------------------ errors
def _real(lib: Any, shape: tuple = (4, 6)) -> Any:
    return lib.ones(shape, dtype=lib.float64)


# (call on a library module, exception type, message): PyTorch's, for real input, raised
# before any complex tensor is made (so these run everywhere)
ERRORS: list[tuple[str, Callable[[Any], Any], type, str]] = [
    ("n=0", lambda m: m.fft.fft(_real(m), n=0), RuntimeError,
     "Invalid number of data points (0) specified"),
    ("n<0", lambda m: m.fft.rfft(_real(m), n=-1), RuntimeError,
     "Invalid number of data points (-1) specified"),
    ("irfft n=0", lambda m: m.fft.irfft(_real(m), n=0), RuntimeError,
     "Invalid number of data points (0) specified"),
    ("irfft of one entry", lambda m: m.fft.irfft(_real(m, (4, 1))), RuntimeError,
     "Invalid number of data points (0) specified"),
    ("dim out of range", lambda m: m.fft.fft(_real(m), dim=2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("0-d", lambda m: m.fft.hfft(m.tensor(3.0)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    ("norm", lambda m: m.fft.ifft(_real(m), norm="bad"), RuntimeError,
     'Invalid normalization mode: "bad"'),
    ("s and dim lengths", lambda m: m.fft.fftn(_real(m), s=(3,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    ("2-D s of one", lambda m: m.fft.fft2(_real(m), s=(3,)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    ("s too long", lambda m: m.fft.rfftn(_real(m), s=(3, 4, 5)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    ("repeated dims", lambda m: m.fft.ifftn(_real(m), dim=(0, 0)), RuntimeError,
     "FFT dims must be unique"),
    ("s=0", lambda m: m.fft.fftn(_real(m), s=(3, 0)), RuntimeError,
     "Invalid number of data points (0) specified"),
    ("rfftn no axis", lambda m: m.fft.rfftn(_real(m), dim=()), RuntimeError,
     "rfftn must transform at least one axis"),
    ("irfftn no axis", lambda m: m.fft.irfftn(_real(m), dim=()), RuntimeError,
     "irfftn must transform at least one axis"),
    ("hfft2 no axis", lambda m: m.fft.hfft2(_real(m), dim=()), RuntimeError,
     "hfftn must transform at least one axis"),
    ("ihfftn no axis", lambda m: m.fft.ihfftn(_real(m), dim=()), RuntimeError,
     "ihfftn must transform at least one axis"),
    ("half", lambda m: m.fft.fft(m.ones(4, dtype=m.float16)), RuntimeError,
     "Unsupported dtype Half"),
    ("bfloat16", lambda m: m.fft.rfft(m.ones(4, dtype=m.bfloat16)), RuntimeError,
     "Unsupported dtype BFloat16"),
    ("tuple dim", lambda m: m.fft.fft(_real(m), dim=(0,)), TypeError,
     "fft_fft(): argument 'dim' must be int, not tuple"),
    ("float n", lambda m: m.fft.irfft(_real(m), n=3.0), TypeError,
     "fft_irfft(): argument 'n' must be int, not float"),
    ("norm int", lambda m: m.fft.fft(_real(m), norm=1), TypeError,
     "fft_fft(): argument 'norm' must be str, not int"),
    ("fftn norm int", lambda m: m.fft.fftn(_real(m), norm=1), TypeError,
     "fft_fftn(): argument 'norm' must be str, not int"),
    ("float in s", lambda m: m.fft.fftn(_real(m), s=(3.0, 4)), TypeError,
     "fft_fftn(): argument 's' must be tuple of ints, not tuple"),
    ("tensor s", lambda m: m.fft.fftn(_real(m), s=m.tensor([3, 4])), TypeError,
     "fft_fftn(): argument 's' must be tuple of ints, not Tensor"),
    ("float tensor n", lambda m: m.fft.fft(_real(m), n=m.tensor(5.0)), TypeError,
     "fft_fft(): argument 'n' must be int, not Tensor"),
    ("bool n", lambda m: m.fft.fft(_real(m), n=True), TypeError,
     "fft_fft(): argument 'n' must be int, not bool"),
    ("list input", lambda m: m.fft.fft([1.0, 2.0]), TypeError,
     "fft_fft(): argument 'input' (position 1) must be Tensor, not list"),
    ("fftfreq int dtype", lambda m: m.fft.fftfreq(4, dtype=m.int64), RuntimeError,
     "fftfreq requires a floating point or complex dtype"),
    ("fftfreq float n", lambda m: m.fft.fftfreq(3.0), TypeError,
     "fft_fftfreq(): argument 'n' (position 1) must be int, not float"),
    ("fftfreq n<0", lambda m: m.fft.fftfreq(-2), RuntimeError,
     "Trying to create tensor with negative dimension -2: [-2]"),
    ("rfftfreq n<0", lambda m: m.fft.rfftfreq(-5), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("fftshift 0-d", lambda m: m.fft.fftshift(m.tensor(3.0)), RuntimeError, "`shifts` required"),
    ("fftshift dim", lambda m: m.fft.ifftshift(_real(m), dim=5), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
]


class _OnDevice:
    """``portagrad`` with its factories placed on ``device`` (so that ``ERRORS`` runs there)."""

    def __init__(self, device: str) -> None:
        self.fft, self.float16, self.bfloat16 = pg.fft, pg.float16, pg.bfloat16
        self.float64, self.int64, self._device = pg.float64, pg.int64, device

    def ones(self, shape: Any, dtype: Any) -> pg.Tensor:
        return pg.ones(shape, dtype=dtype, device=self._device)

    def tensor(self, v: float) -> pg.Tensor:
        return pg.tensor(v, device=self._device)


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: tuple, device: str) -> None:
    ident, call, exc, msg = case
    if ident in ("half", "bfloat16"):
        try:
            pg.ones(1, dtype=getattr(pg, "float16" if ident == "half" else ident), device=device)
        except DTypeError:
            pytest.skip(f"{device} declines {ident} (DTypeError)")
    with pytest.raises(exc) as info:
        call(_OnDevice(device))
    assert str(info.value) == msg


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_are_torchs(case: tuple) -> None:
    """The expected errors above are PyTorch's own (type and message)."""
    torch = pytest.importorskip("torch")
    _, call, exc, msg = case
    with pytest.raises(exc) as info:
        call(torch)
    assert str(info.value) == msg


def test_complex_input_errors(device: str) -> None:
    need_complex(device)
    z = pg.ones((3, 3), dtype=pg.complex64, device=device)
    for fn, msg in ((pg.fft.rfft, "rfft expects a real input tensor, but got ComplexFloat"),
                    (pg.fft.ihfft, "ihfft expects a real input tensor, but got ComplexFloat"),
                    (pg.fft.rfft2, "rfftn expects a real-valued input tensor, but got "
                                   "ComplexFloat"),
                    (pg.fft.ihfftn, "Only supports floating-point dtypes, but found: "
                                    "ComplexFloat")):
        with pytest.raises(RuntimeError) as info:
            fn(z)
        assert str(info.value) == msg


def test_integer_arguments_as_pytorch_parses_them(device: str) -> None:
    """``n``, ``dim`` and the entries of ``s``/``dim`` may be numpy integers or one-element
    integer tensors, as PyTorch's argument parser reads an int (shapes are PyTorch 2.13's)."""
    need_complex(device)  # (every transform here has a complex result)
    x = pg.ones((4, 4), device=device)
    one = pg.tensor(5, device=device)
    assert pg.fft.fft(x, n=np.int64(5)).shape == (4, 5)
    assert pg.fft.fft(x, n=one).shape == (4, 5)
    assert pg.fft.fft(x, n=pg.tensor([5], device=device)).shape == (4, 5)
    assert pg.fft.rfft(x, dim=np.int64(0)).shape == (3, 4)
    assert pg.fft.irfft(x, n=np.int32(6), dim=pg.tensor(0)).shape == (6, 4)
    assert pg.fft.fftn(x, s=(np.int64(3), 5)).shape == (3, 5)
    assert pg.fft.fftn(x, s=[pg.tensor(3), 5]).shape == (3, 5)
    assert pg.fft.irfftn(x, s=(3, np.int64(6))).shape == (3, 6)
    assert pg.fft.fftfreq(np.int64(4), device=device).tolist() == [0.0, 0.25, -0.5, -0.25]
    assert pg.fft.rfftfreq(pg.tensor(4), device=device).tolist() == [0.0, 0.25, 0.5]


def test_dims_checked_before_dtype_where_pytorch_does(device: str) -> None:
    """PyTorch's ihfftn checks the dims before the dtype (rfftn the other way round), and the
    argument types before either."""
    need_complex(device)
    z = pg.ones((4, 4), dtype=pg.complex64, device=device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.fft.ihfftn(z, dim=(3,))
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.fft.ihfft2(z[0])
    with pytest.raises(RuntimeError, match="rfftn expects a real-valued input"):
        pg.fft.rfftn(z, dim=(3,))
    with pytest.raises(TypeError, match="argument 'dim' must be tuple of ints, not float"):
        pg.fft.rfftn(z, dim=0.0)
    with pytest.raises(TypeError, match="argument 's' must be tuple of ints"):
        pg.fft.rfft2(z, s=(3.0, 4))


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_decline_without_complex(name: str, device: str) -> None:
    """Where complex tensors are declined, every transform (whose input or result is complex)
    raises the same ``DTypeError``, before computing anything."""
    if complex_ok(device):
        pytest.skip(f"{device} has complex tensors: the transforms run")
    with pytest.raises(DTypeError, match="complex"):
        getattr(pg.fft, name)(pg.ones((4, 6), device=device))


# -------------------------------------------------------------- frequencies and shifts
@pytest.mark.parametrize("dtype", (pg.float32, pg.float64))
def test_fftfreq_rfftfreq(dtype: Any, device: str) -> None:
    for n in range(0, 9):
        for d in (1.0, 0.5, 3.0):
            for name in ("fftfreq", "rfftfreq"):
                got = getattr(pg.fft, name)(n, d, dtype=dtype, device=device)
                assert got.dtype == dtype and got.device.type == pg.device(device).type
                # n = 0: no fftfreq, and rfftfreq's one entry is 0 / 0 (PyTorch's NaN)
                ref = getattr(np.fft, name)(n, d) if n else np.full(int(name[0] == "r"), np.nan)
                np.testing.assert_allclose(_np(got), ref, rtol=1e-6, atol=0)


def test_fftfreq_default_dtype_and_grad(device: str) -> None:
    f = pg.fft.fftfreq(5, device=device, requires_grad=True)
    assert f.dtype == pg.get_default_dtype() and f.requires_grad and f.is_leaf
    out = pg.empty(0, dtype=pg.float64, device=device)
    assert pg.fft.rfftfreq(6, 2.0, out=out) is out
    np.testing.assert_allclose(_np(out), np.fft.rfftfreq(6, 2.0), rtol=1e-15)


def test_fftfreq_matches_torch() -> None:
    """PyTorch's grid, bit for bit: the integers in the dtype times ``1 / (n * d)``."""
    torch = pytest.importorskip("torch")
    for dt in ("float32", "float64"):
        for n in (0, 1, 5, 8, 13):
            for d in (1.0, 0.1, 7.0, 0.0, -2.0):
                for name in ("fftfreq", "rfftfreq"):
                    got = getattr(pg.fft, name)(n, d, dtype=getattr(pg, dt))
                    want = getattr(torch.fft, name)(n, d, dtype=getattr(torch, dt))
                    np.testing.assert_array_equal(_np(got), want.numpy())


_SHIFT_DIMS = (None, 0, -1, (0, 1), [1], (-1, 0))


@pytest.mark.parametrize("dtype", (pg.float32, pg.int64))
def test_fftshift_ifftshift(dtype: Any, device: str) -> None:
    for shape in ((5,), (4, 6), (3, 4, 5), (0, 3)):
        x = np.arange(int(np.prod(shape))).reshape(shape)
        t = pg.tensor(x, dtype=dtype, device=device)
        for dim in _SHIFT_DIMS:
            if dim is not None and len(shape) < 2 and dim not in (0, -1):
                continue
            ax = tuple(dim) if isinstance(dim, list) else dim
            for name in ("fftshift", "ifftshift"):
                got = getattr(pg.fft, name)(t, dim=dim)
                assert got.dtype == dtype
                np.testing.assert_array_equal(_np(got), getattr(np.fft, name)(x, axes=ax))
            # the two are inverses, also for odd sizes
            back = pg.fft.ifftshift(pg.fft.fftshift(t, dim=dim), dim=dim)
            np.testing.assert_array_equal(_np(back), x)


def test_fftshift_gradcheck(device: str) -> None:
    x = pg.tensor(np.random.default_rng(3).standard_normal((3, 4)), device=device,
                  requires_grad=True)
    for dim in (None, 0, (1, 0)):
        assert gradcheck(lambda t, dim=dim: pg.fft.fftshift(t, dim=dim), (x,))
        assert gradcheck(lambda t, dim=dim: pg.fft.ifftshift(t, dim=dim), (x,))


# -------------------------------------------------------------------- host primitives
def _dft_matrix(n: int, sign: int) -> np.ndarray:
    j = np.arange(n)
    return np.exp(sign * 2j * np.pi * np.outer(j, j) / n)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_host_primitives_are_unnormalised_dfts(dtype: Any) -> None:
    """The backend default's conventions, from the definition (a DFT matrix): forward
    ``exp(-2 pi i jk/n)``, backward ``exp(+...)`` without ``1/n``, one-sided r2c, and c2r
    ignoring the imaginary parts of the zero and Nyquist frequencies; results keep the
    input's precision."""
    rng = np.random.default_rng(4)
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    x = (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))).astype(cdt)
    for forward, sign in ((True, -1), (False, 1)):
        got = _host_fft.fft_c2c(x, (1,), forward)
        assert got.dtype == cdt
        np.testing.assert_allclose(got, x @ _dft_matrix(6, sign), **tol)
    r = rng.standard_normal((3, 7)).astype(dtype)
    full = r @ _dft_matrix(7, -1)
    np.testing.assert_allclose(_host_fft.fft_r2c(r, (1,), False), full, **tol)
    half = _host_fft.fft_r2c(r, (1,), True)
    assert half.shape == (3, 4) and half.dtype == cdt
    np.testing.assert_allclose(half, full[:, :4], **tol)
    for n in (6, 7):
        h = x[:, : n // 2 + 1].copy()
        herm = np.concatenate([h, np.conj(h[:, 1:(n + 1) // 2][:, ::-1])], axis=1)
        herm[:, 0] = herm[:, 0].real
        if n % 2 == 0:
            herm[:, n // 2] = herm[:, n // 2].real
        got = _host_fft.fft_c2r(h, (1,), n)
        assert got.shape == (3, n) and got.dtype == dtype
        np.testing.assert_allclose(got, (herm @ _dft_matrix(n, 1)).real, **tol)
    out = np.empty((6, 3), cdt).T  # a strided out is written in place
    assert _host_fft.fft_c2c(x, (0, 1), True, out=out) is out
    np.testing.assert_allclose(out, np.fft.fft2(x), **tol)
