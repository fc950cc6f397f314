"""The decompositions: ``eigh``, ``svd`` and ``eig``, called directly on views of the backend under test.

Both have a host default on ``Backend`` (LAPACK through numpy); a backend that overrides them
with a solver of its own is checked here. Eigenvectors and singular vectors are unique only up
to sign, so the vectors are not compared with the reference's: the values are (within a
tolerance scaled by the matrix's norm), and the vectors must be orthonormal and reproduce the
matrix (``A V = V diag(w)``, ``A = U diag(S) Vh``). Inputs sit at an offset, transposed and
batched; ``eigh`` reads only the ``uplo`` triangle (the other holds numbers that must be
ignored); values-only calls pass ``None`` for the vectors; a matrix with NaN gives NaN
eigenvalues (and only that matrix of the batch), a non-finite SVD input raises
:class:`~portagrad.errors.LinAlgError`. ``eig`` (complex results) runs on a backend that stores
complex64/complex128: its values are compared as sets (their order is the backend's), its unit
eigenvectors must satisfy ``A V = V diag(w)``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.errors import LinAlgError

from ._util import Pair, contiguous, reversed_axes, supported_dtypes

_DTYPES = [pg.float32, pg.float64]
_TOL = {"float32": 2e-4, "float64": 1e-10}  # relative to the matrix's largest singular value
_RNG = np.random.default_rng(20241204)


def _need(be: Any, dtype: Any) -> None:
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _out(be: Any, shape: tuple[int, ...], dtype: Any) -> Pair:
    return contiguous(be, np.full(shape, 7.5, dtype.numpy), dtype)


def _host(be: Any, p: Pair | None) -> np.ndarray:
    assert p is not None
    return be.to_host(p.dev).astype(np.float64)


def _orthonormal(q: np.ndarray, axis: int, tol: float, what: str) -> None:
    """The columns (``axis=-2``: ``Q^T Q``) or rows (``-1``: ``Q Q^T``) of ``q`` are orthonormal."""
    g = np.swapaxes(q, -1, -2) @ q if axis == -2 else q @ np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(g, np.broadcast_to(np.eye(g.shape[-1]), g.shape), atol=tol,
                               err_msg=f"{what}: the vectors are not orthonormal")


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", _DTYPES, ids=[d.name for d in _DTYPES])
def test_eigh(conformance_backend: Any, dtype: Any, uplo: str) -> None:
    be = conformance_backend
    _need(be, dtype)
    for name, shape, layout in (("offset", (5, 5), "offset"), ("batched", (3, 4, 4), "offset"),
                                ("transposed", (6, 6), "transposed"), ("1x1", (1, 1), "offset"),
                                ("2x2", (2, 2), "transposed")):
        a = _RNG.standard_normal(shape)
        # the triangle that is not read holds other numbers: they must not matter
        tri = np.tril(a) if uplo == "L" else np.triu(a)
        sym = tri + np.swapaxes(tri, -1, -2) - tri * np.eye(shape[-1])
        x = contiguous(be, a, dtype, offset=3) if layout == "offset" else reversed_axes(be, a, dtype)
        n = shape[-1]
        w, v = _out(be, shape[:-1], dtype), _out(be, shape, dtype)
        be.eigh(x.dev, uplo, w.dev, v.dev)
        ref = np.linalg.eigh(sym.astype(dtype.numpy).astype(np.float64))[0]
        scale = max(float(np.abs(ref).max()), 1.0)
        tol = _TOL[dtype.name] * scale
        what = f"eigh {dtype.name} {uplo} {name}"
        gw, gv = _host(be, w), _host(be, v)
        np.testing.assert_allclose(gw, ref, atol=tol, err_msg=f"{what}: eigenvalues")
        assert np.all(np.diff(gw, axis=-1) >= -tol), f"{what}: eigenvalues not ascending"
        _orthonormal(gv, -2, _TOL[dtype.name] * 10 * n, what)
        np.testing.assert_allclose(sym @ gv, gv * gw[..., None, :], atol=tol * 10,
                                   err_msg=f"{what}: A V != V diag(w)")
        # values only
        w2 = _out(be, shape[:-1], dtype)
        be.eigh(x.dev, uplo, w2.dev, None)
        np.testing.assert_allclose(_host(be, w2), ref, atol=tol, err_msg=f"{what} (values only)")


def test_eigh_nan_and_empty(conformance_backend: Any) -> None:
    be = conformance_backend
    a = np.stack([np.eye(3) * 2.0, np.full((3, 3), np.nan)]).astype(np.float32)
    x = contiguous(be, a, pg.float32, offset=1)
    w, v = _out(be, (2, 3), pg.float32), _out(be, (2, 3, 3), pg.float32)
    be.eigh(x.dev, "L", w.dev, v.dev)
    gw, gv = _host(be, w), _host(be, v)
    np.testing.assert_allclose(gw[0], [2.0, 2.0, 2.0], rtol=1e-6,
                               err_msg="eigh: a finite matrix beside a NaN one")
    assert np.isnan(gw[1]).all() and np.isnan(gv[1]).all(), "eigh: a NaN matrix gives NaN"
    # an empty batch: nothing to write (and nothing may be read)
    e = contiguous(be, np.zeros((0, 3, 3), np.float32), pg.float32)
    be.eigh(e.dev, "L", _out(be, (0, 3), pg.float32).dev, _out(be, (0, 3, 3), pg.float32).dev)


@pytest.mark.parametrize("full", [False, True], ids=["reduced", "full"])
@pytest.mark.parametrize("dtype", _DTYPES, ids=[d.name for d in _DTYPES])
def test_svd(conformance_backend: Any, dtype: Any, full: bool) -> None:
    be = conformance_backend
    _need(be, dtype)
    for name, shape, layout in (("tall", (6, 4), "offset"), ("wide", (3, 5), "transposed"),
                                ("batched", (2, 4, 4), "offset"), ("1x1", (1, 1), "offset"),
                                ("row", (1, 5), "offset"), ("column", (5, 1), "transposed")):
        a = _RNG.standard_normal(shape)
        x = contiguous(be, a, dtype, offset=2) if layout == "offset" else \
            reversed_axes(be, a, dtype)
        *batch, m, n = shape
        k = min(m, n)
        bt = tuple(batch)
        u = _out(be, bt + ((m, m) if full else (m, k)), dtype)
        s = _out(be, bt + (k,), dtype)
        vh = _out(be, bt + ((n, n) if full else (k, n)), dtype)
        be.svd(x.dev, full, u.dev, s.dev, vh.dev)
        exact = a.astype(dtype.numpy).astype(np.float64)
        ref = np.linalg.svd(exact, compute_uv=False)
        tol = _TOL[dtype.name] * max(float(ref.max()), 1.0)
        what = f"svd {dtype.name} full={full} {name}"
        gu, gs, gvh = _host(be, u), _host(be, s), _host(be, vh)
        np.testing.assert_allclose(gs, ref, atol=tol, err_msg=f"{what}: singular values")
        assert np.all(np.diff(gs, axis=-1) <= tol), f"{what}: not descending"
        otol = _TOL[dtype.name] * 10 * max(m, n)
        _orthonormal(gu, -2, otol, what + " U")
        _orthonormal(gvh, -1, otol, what + " Vh")
        rebuilt = (gu[..., :, :k] * gs[..., None, :]) @ gvh[..., :k, :]
        np.testing.assert_allclose(rebuilt, exact, atol=tol * 10,
                                   err_msg=f"{what}: U diag(S) Vh != A")
        s2 = _out(be, bt + (k,), dtype)
        be.svd(x.dev, full, None, s2.dev, None)
        np.testing.assert_allclose(_host(be, s2), ref, atol=tol, err_msg=f"{what} (values only)")


@pytest.mark.parametrize("dtype", _DTYPES + [pg.complex64, pg.complex128],
                         ids=["float32", "float64", "complex64", "complex128"])
def test_eig(conformance_backend: Any, dtype: Any) -> None:
    be = conformance_backend
    _need(be, dtype)
    cdt = dtype.to_complex()
    _need(be, cdt)
    tol = _TOL[cdt.to_real().name]
    for name, shape, layout in (("offset", (5, 5), "offset"), ("batched", (3, 4, 4), "offset"),
                                ("transposed", (6, 6), "transposed"), ("1x1", (1, 1), "offset")):
        a = _RNG.standard_normal(shape)
        if dtype.is_complex:
            a = a + 1j * _RNG.standard_normal(shape)
        x = contiguous(be, a, dtype, offset=3) if layout == "offset" else \
            reversed_axes(be, a, dtype)
        w, v = _out(be, shape[:-1], cdt), _out(be, shape, cdt)
        be.eig(x.dev, w.dev, v.dev)
        exact = a.astype(dtype.numpy).astype(np.complex128)
        ref = np.linalg.eigvals(exact)
        scale = max(float(np.abs(ref).max()), 1.0)
        what = f"eig {dtype.name} {name}"
        gw = be.to_host(w.dev).astype(np.complex128)
        gv = be.to_host(v.dev).astype(np.complex128)
        assert np.abs(ref[..., :, None] - gw[..., None, :]).min(-1).max() < tol * scale * 10, \
            f"{what}: eigenvalues"
        np.testing.assert_allclose(np.linalg.norm(gv, axis=-2), 1.0, atol=tol * 10,
                                   err_msg=f"{what}: eigenvectors not of unit norm")
        np.testing.assert_allclose(exact @ gv, gv * gw[..., None, :], atol=tol * scale * 10,
                                   err_msg=f"{what}: A V != V diag(w)")
        w2 = _out(be, shape[:-1], cdt)
        be.eig(x.dev, w2.dev, None)
        np.testing.assert_allclose(be.to_host(w2.dev), gw, atol=tol * scale,
                                   err_msg=f"{what} (values only)")


def test_svd_non_finite_raises(conformance_backend: Any) -> None:
    be = conformance_backend
    a = np.array([[1.0, np.inf], [0.0, 1.0]], np.float32)
    x = contiguous(be, a, pg.float32)
    with pytest.raises(LinAlgError):
        be.svd(x.dev, False, _out(be, (2, 2), pg.float32).dev, _out(be, (2,), pg.float32).dev,
               _out(be, (2, 2), pg.float32).dev)
        be.synchronize(0)


def test_through_the_api(conformance_device: str) -> None:
    """``linalg.eigh``/``svd`` and a gradient through them on the device, against the cpu."""
    dev = conformance_device
    a = _RNG.standard_normal((3, 3)).astype(np.float32)
    got = pg.linalg.svdvals(pg.tensor(a, device=dev))
    np.testing.assert_allclose(got.cpu().numpy(), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-4, atol=1e-5)
    x = pg.tensor(a, device=dev, requires_grad=True)
    w = pg.linalg.eigvalsh(x + x.mT)
    (w * pg.tensor([1.0, 2.0, 3.0], device=dev)).sum().backward()
    xc = pg.tensor(a, requires_grad=True)
    wc = pg.linalg.eigvalsh(xc + xc.mT)
    (wc * pg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad is not None and xc.grad is not None
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-4, atol=1e-5)
