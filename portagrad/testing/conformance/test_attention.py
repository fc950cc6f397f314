"""The optional fused attention primitives ``attention`` and ``attention_backward``, called
directly on twin views against the numpy backend.

The core calls them for q/k/v of one dtype with contiguous views; here the inputs sit at an
offset in their buffers and the outputs hold a sentinel first, so a primitive must read from the
view's offset and overwrite every element of its outputs. Cases: query and key lengths that are
not multiples of a block (longer and shorter than one), zero to two batch dimensions, head sizes
of queries and values that differ, no mask, causal, a bool mask broadcast over the batch (zero
strides), an additive mask, and rows that attend to nothing (output 0, ``lse`` -inf, zero
gradients).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg

from ._util import REF, SENTINEL, Pair, check, contiguous, sample, supported_dtypes

__all__: list[str] = []

# float32: the gradients subtract rowsum(g * out) from g v^T (cancellation), summed in another order
_TOL = {"float64": (1e-10, 1e-11), "float32": (1e-4, 2e-5), "float16": (1e-2, 4e-3),
        "bfloat16": (5e-2, 3e-2)}

# (batch dims, L, S, D, DV)
_SHAPES = [((), 5, 7, 4, 3), ((2,), 70, 33, 8, 8), ((2, 3), 9, 130, 16, 5)]


def _skip_unless(be: Any, dtype: Any) -> None:
    if getattr(be, "attention", None) is None or getattr(be, "attention_backward", None) is None:
        pytest.skip("the backend has no attention/attention_backward (optional; the core "
                    "composes it)")
    if dtype not in supported_dtypes(be):
        pytest.skip(f"the backend does not store {dtype.name}")


def _in(be: Any, arr: Any, dtype: Any) -> Pair:
    return contiguous(be, np.asarray(arr), dtype, offset=3)


def _out(be: Any, shape: tuple, dtype: Any) -> Pair:
    return contiguous(be, np.full(shape, SENTINEL[dtype.name], dtype.numpy), dtype, offset=2)


def _close(be: Any, p: Pair, what: str) -> None:
    rtol, atol = _TOL[p.dtype.name]
    ref = np.asarray(REF.to_host(p.ref), np.float64)
    finite = np.abs(ref[np.isfinite(ref)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    check(be, p, exact=False, tol=(rtol, atol * scale), what=what)


def _mask(be: Any, kind: str, lead: tuple, L: int, S: int, dtype: Any) -> Pair | None:
    """None, or the mask as a (*lead, L, S) view: bool broadcast over the batch (stride 0),
    or additive and whole; row 1 attends to nothing."""
    if kind == "none" or kind == "causal":
        return None
    rng = np.random.default_rng(L * S)
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[min(1, L - 1)] = False
        p = contiguous(be, m, pg.bool, offset=1)
        strides = (0,) * len(lead) + p.dev.strides
        return p.twin.view(1, lead + (L, S), strides)
    a = rng.standard_normal(lead + (L, S))
    a[..., min(1, L - 1), :] = -np.inf
    return _in(be, a, dtype)


@pytest.mark.parametrize("kind", ["none", "causal", "bool", "float"])
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64, pg.float16, pg.bfloat16], ids=str)
def test_attention_and_backward(conformance_backend: Any, dtype: Any, shape: tuple,
                                kind: str) -> None:
    """``out``/``lse`` of the forward and ``dq``/``dk``/``dv`` of the backward, against the
    reference, for every mask kind."""
    be = conformance_backend
    _skip_unless(be, dtype)
    lead, L, S, D, DV = shape
    q = _in(be, sample(dtype, lead + (L, D), "finite"), dtype)
    k = _in(be, sample(dtype, lead + (S, D), "finite"), dtype)
    v = _in(be, sample(dtype, lead + (S, DV), "finite"), dtype)
    g = _in(be, sample(dtype, lead + (L, DV), "finite"), dtype)
    mask = _mask(be, kind, lead, L, S, dtype)
    causal, scale = kind == "causal", 1 / np.sqrt(D)
    ldt = pg.float32 if dtype in (pg.float16, pg.bfloat16) else dtype
    out, lse = _out(be, lead + (L, DV), dtype), _out(be, lead + (L,), ldt)
    with np.errstate(all="ignore"):
        REF.attention(q.ref, k.ref, v.ref, None if mask is None else mask.ref, causal, scale,
                      out.ref, lse.ref)
        be.attention(q.dev, k.dev, v.dev, None if mask is None else mask.dev, causal, scale,
                     out.dev, lse.dev)
    _close(be, out, f"attention out {shape} {kind}")
    _close(be, lse, f"attention lse {shape} {kind}")
    dq, dk, dv = (_out(be, s, dtype) for s in (lead + (L, D), lead + (S, D), lead + (S, DV)))
    with np.errstate(all="ignore"):
        REF.attention_backward(g.ref, q.ref, k.ref, v.ref, out.ref, lse.ref,
                               None if mask is None else mask.ref, causal, scale, dq.ref,
                               dk.ref, dv.ref)
        be.attention_backward(g.dev, q.dev, k.dev, v.dev, out.dev, lse.dev,
                              None if mask is None else mask.dev, causal, scale, dq.dev, dk.dev,
                              dv.dev)
    for p, what in ((dq, "dq"), (dk, "dk"), (dv, "dv")):
        _close(be, p, f"attention_backward {what} {shape} {kind}")


def test_fused_attention_preference(conformance_backend: Any) -> None:
    """``fused_attention(index, scores)``, where a backend defines it, answers a bool for every
    device (False: the core composes attention there)."""
    be = conformance_backend
    pref = getattr(be, "fused_attention", None)
    if pref is None:
        pytest.skip("the backend has no fused_attention (optional: fused wherever it has the "
                    "primitives)")
    if getattr(be, "attention", None) is None:
        pytest.fail("fused_attention without the attention primitives", pytrace=False)
    for i in range(be.device_count()):
        for scores in (1, 1 << 20, 1 << 40):
            assert isinstance(pref(i, scores), bool), f"fused_attention({i}, {scores}): not a bool"
