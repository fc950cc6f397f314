"""Quantiles and histograms: ``quantile``, ``nanquantile``, ``histogram``.

Quantiles sort along the dimension (NaN sorts last) and interpolate between the two neighbouring
order statistics picked with ``gather``, so they are differentiable like ``sort`` and ``lerp``;
the NaN-ignoring variants count each slice's non-NaN elements and index within those.
"""
from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _creation, _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from ..autograd.grad_mode import _no_grad
from . import elementwise
from . import reduction
from .diagonal import diagonal
from .matmul import matmul
from .shape import movedim, narrow, reshape, squeeze, transpose, unsqueeze
from .indexing import gather, scatter_add, where
from .joining import stack
from .sorting import sort
from .search import searchsorted

__all__ = ["quantile", "nanquantile", "histogram", "histogramdd", "cov", "corrcoef", "nanmean"]

histogram_result = namedtuple("histogram_result", ["hist", "bin_edges"])
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    name = "quantile"  # (PyTorch's messages say quantile() for nanquantile too)
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if isinstance(q, Tensor) and q.dtype is not input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    qs = q.tolist() if isinstance(q, Tensor) else q
    scalar_q = not isinstance(qs, list)
    qlist = [qs] if scalar_q else qs
    if isinstance(q, Tensor) and q.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    for v in qlist:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, input.dim())
    if x.dim() == 0:
        x = reshape(x, (1,))
    if not qlist:  # an empty q tensor: no quantiles, of the shape one would have
        one = _quantile(input, 0.5, dim, keepdim, interpolation, ignore_nan)
        return _creation.empty((0,) + tuple(one.shape), dtype=input.dtype, device=input.device)
    s = movedim(sort(x, d)[0], d, -1)  # (..., n), NaN last
    n = s.shape[-1]
    with _no_grad():
        nan = elementwise.isnan(s)
        if ignore_nan:
            cnt = reduction.sum(elementwise.logical_not(nan), -1, keepdim=True).to(s.dtype)
        else:
            cnt = _creation.full(s.shape[:-1] + (1,), float(n), dtype=s.dtype, device=s.device)
        bad = elementwise.eq(cnt, 0) if ignore_nan else reduction.any(nan, -1, keepdim=True)
    outs = []
    for v in qlist:
        with _no_grad():
            pos = elementwise.clamp(cnt - 1.0, 0.0, None) * float(v)
            lo = elementwise.floor(pos)
            hi = elementwise.ceil(pos)
            if interpolation == "nearest":
                lo = hi = elementwise.round(pos)
            elif interpolation == "lower":
                hi = lo
            elif interpolation == "higher":
                lo = hi
            frac = pos - lo
        vlo = gather(s, -1, lo.to(_dtype.int64))
        vhi = gather(s, -1, hi.to(_dtype.int64))
        # lerp, PyTorch's formula: its NaN and infinities (lerp(-inf, -inf, 0) is NaN, lerp(-inf,
        # 1, 0.5) is -inf) are those of PyTorch's quantiles
        if interpolation == "midpoint":
            out = elementwise.lerp(vlo, vhi, 0.5)
        elif interpolation == "linear":
            out = elementwise.lerp(vlo, vhi, frac)
        else:
            out = vlo
        out = where(bad, float("nan"), out)
        out = squeeze(out, -1)
        if keepdim and input.dim():  # (a 0-d input stays 0-d)
            out = unsqueeze(out, d) if dim is not None else \
                reshape(out, (1,) * input.dim())
        outs.append(out)
    return outs[0] if scalar_q else stack(outs, 0)


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-quantiles (a number or a 1-D tensor of them, in ``[0, 1]``) along ``dim`` (of all
    elements if ``None``); NaN where a slice holds NaN."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "quantile", quantile, input, q=q, dim=dim, keepdim=keepdim,
            interpolation=interpolation)) is not _SKIP:
        return _ac_out
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only for a slice that is all NaN)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "nanquantile", nanquantile, input, q=q, dim=dim, keepdim=keepdim,
            interpolation=interpolation)) is not _SKIP:
        return _ac_out
    return _quantile(input, q, dim, keepdim, interpolation, True)


def _even_edges(x: Tensor, bins: int, range: Any, dim: int = 0) -> Tensor:
    """``bins + 1`` equally spaced edges over ``range`` or the range of the 1-d ``x`` (numpy's
    rule: ``[0, 1]`` for no data, one unit wide around a single value); PyTorch's errors for a
    range (given, or the data's) that is not finite or runs backwards (``dim``: the dimension
    its messages name)."""
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    elif x.numel():
        lo, hi = float(x.min().item()), float(x.max().item())
    else:
        lo, hi = 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is not "
                           f"finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                           f"max {hi:g} for dimension {dim}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _creation.linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)


def _bin_index(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """The bin of each value of the 1-d ``x`` among ``edges`` (the last bin closed on the right)
    and whether it falls in any."""
    nb = edges.shape[0] - 1
    k = searchsorted(edges, x, right=True) - 1
    k = where(elementwise.eq(x, narrow(edges, 0, nb, 1)), nb - 1, k)
    return k, elementwise.logical_and(k >= 0, k < nb)


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None, weight: Tensor | None = None,
              density: bool = False) -> Any:
    """``(hist, bin_edges)``: counts (or summed ``weight``) of ``input`` in ``bins`` equal bins
    over ``range`` (the data's range by default), or in the bins whose edges ``bins`` gives; the
    last bin includes its right edge."""
    # PyTorch's checks, in its order: the bins' dtype, a floating input, the range, the weight's
    # dtype
    if isinstance(bins, Tensor) and bins.dtype is not input.dtype:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same "
                           f"dtype, but got input with dtype {_c_type(input.dtype)} and bins for "
                           f"dimension 0 with dtype {_c_type(bins.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{elementwise._type_name(input.dtype)}'")
    with _no_grad():
        x = reshape(input, (-1,))
        if isinstance(bins, Tensor):
            edges = bins
        else:
            if bins <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                                   f"bins")
            edges = _even_edges(x, bins, range)
        if weight is not None and weight.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor "
                               f"and weight tensor should have the same dtype, but got "
                               f"input({_c_type(input.dtype)}), and "
                               f"weight({_c_type(weight.dtype)})")
        nb = edges.shape[0] - 1
        k, valid = _bin_index(x, edges)
        w = _creation.ones_like(x) if weight is None else reshape(weight, (-1,)).to(x.dtype)
        hist = scatter_add(_creation.zeros(nb, dtype=x.dtype, device=x.device), 0,
                           where(valid, k, 0), where(valid, w, 0.0))
        if density:
            widths = narrow(edges, 0, 1, nb) - narrow(edges, 0, 0, nb)
            hist = hist / (reduction.sum(hist) * widths)
    return histogram_result(hist, edges)


def _c_type(d: Any) -> str:
    """The C++ name PyTorch's histogram messages give a dtype (``float``, ``long int``)."""
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(d.name, d.name)


histogramdd_result = namedtuple("histogramdd_result", ["hist", "bin_edges"])


def histogramdd(input: Tensor, bins: Any = 10, *, range: Any = None,
                weight: Tensor | None = None, density: bool = False) -> Any:
    """``(hist, bin_edges)`` of the points in the rows of ``input`` (``(..., D)``, flattened to
    ``(N, D)``) in a ``D``-dimensional grid of bins: ``bins`` is a count for every dimension, one
    count per dimension, or one tensor of edges per dimension; ``range`` gives ``D`` pairs
    ``(lo, hi)`` flattened (default: each dimension's data range). Each dimension's last bin
    includes its right edge; ``density`` divides by the total and the bin volumes."""
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{elementwise._type_name(input.dtype)}'")
    D = input.shape[-1]
    spec = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    if len(spec) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                           f"have {2 * D} elements, but got {len(range)}")
    with _no_grad():
        pts = reshape(input, (-1, D))
        edges: list[Tensor] = []
        for d, b in enumerate(spec):
            if isinstance(b, Tensor):
                if b.dtype is not input.dtype:
                    raise RuntimeError(
                        f"torch.histogramdd: input tensor and bins tensors should have the same "
                        f"dtype, but got input with dtype "
                        f"{elementwise._type_name(input.dtype).lower()} and bins for dimension "
                        f"{d} with dtype {elementwise._type_name(b.dtype).lower()}")
                edges.append(b)
                continue
            if b <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for "
                                   f"dimension {d}")
            col = narrow(pts, 1, d, 1).reshape(-1)
            edges.append(_even_edges(col, int(b),
                                     None if range is None else range[2 * d:2 * d + 2], d))
        sizes = [e.shape[0] - 1 for e in edges]
        flat = _creation.zeros(pts.shape[0], dtype=_dtype.int64, device=input.device)
        valid = _creation.ones(pts.shape[0], dtype=_dtype.bool, device=input.device)
        for d, e in enumerate(edges):
            k, ok = _bin_index(narrow(pts, 1, d, 1).reshape(-1), e)
            flat = flat * sizes[d] + where(ok, k, 0)  # row-major index into the grid
            valid = elementwise.logical_and(valid, ok)
        total = 1
        for n in sizes:
            total *= n
        w = _creation.ones(pts.shape[0], dtype=input.dtype, device=input.device) \
            if weight is None else reshape(weight, (-1,)).to(input.dtype)
        hist = scatter_add(_creation.zeros(total, dtype=input.dtype, device=input.device), 0,
                           flat, where(valid, w, 0.0))
        hist = reshape(hist, tuple(sizes))
        if density:
            volume: Any = 1.0
            for d, e in enumerate(edges):
                width = narrow(e, 0, 1, sizes[d]) - narrow(e, 0, 0, sizes[d])
                volume = volume * reshape(width, tuple(sizes[d] if i == d else 1
                                                       for i in builtins.range(D)))
            hist = hist / (reduction.sum(hist) * volume)
    return histogramdd_result(hist, tuple(edges))


# ------------------------------------------------------------------------------- statistics
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance of the variables in the rows of ``input`` (observations in columns)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else reshape(input, (1, -1))
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    n = x.shape[1]
    w: Tensor | None = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        mean = reduction.mean(x, 1, keepdim=True)
        wsum: Any = float(n)
        norm: Any = float(n - correction)
        xc = x - mean
        c = matmul(xc, transpose(xc, 0, 1))
    else:
        wsum = reduction.sum(w)
        mean = reduction.sum(x * w, 1, keepdim=True) / wsum
        xc = x - mean
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - reduction.sum(w * aweights.to(x.dtype)) * correction / wsum
        c = matmul(xc * w, transpose(xc, 0, 1))
    norm = norm if isinstance(norm, Tensor) else max(norm, 0.0)
    c = c / norm
    return reshape(c, ()) if input.dim() < 2 else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = elementwise.sqrt(diagonal(c))
    c = c / unsqueeze(d, 1) / unsqueeze(d, 0)
    return elementwise.clamp(c, -1.0, 1.0)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
            ) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # (whatever dtype= is)
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {elementwise._type_name(input.dtype)}")
    reduction.refuse_complex_nansum(input, dtype)
    if dtype is not None and not _dtype.as_dtype(dtype).is_floating_point:
        raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: "
                           f"{elementwise._type_name(_dtype.as_dtype(dtype))}")
    x = input if dtype is None else input.to(dtype)
    ok = elementwise.logical_not(elementwise.isnan(x))
    n = reduction.sum(ok, dim, keepdim).to(x.dtype)
    return reduction.nansum(x, dim, keepdim) / n
