"""``portagrad.special``: PyTorch's ``torch.special`` functions (the same implementations as the
``portagrad.*`` functions of the same meaning)."""
from __future__ import annotations

import functools
import math
from typing import Any

from ._ops import elementwise
from . import _dtype
from ._ops._common import type_name
from ._ops.elementwise import _float_input
from ._ops.gammafn import digamma, mvlgamma, polygamma, zeta
from ._ops.gammafn import igamma as gammainc
from ._ops.gammafn import igammac as gammaincc
from ._ops.gammafn import lgamma as gammaln
from ._ops.indexing import where as _where
from ._ops.airyfn import airy_ai
from ._ops.besselfn import (bessel_j0, bessel_j1, bessel_y0, bessel_y1, modified_bessel_i0,
                            modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
                            scaled_modified_bessel_k0, scaled_modified_bessel_k1,
                            spherical_bessel_j0)
from ._ops.scaledfn import erfcx, i0e, i1e, log_ndtr
from ._ops.orthopoly import (chebyshev_polynomial_t, chebyshev_polynomial_u,
                              chebyshev_polynomial_v, chebyshev_polynomial_w,
                              hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l,
                              legendre_polynomial_p, shifted_chebyshev_polynomial_t,
                              shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
                              shifted_chebyshev_polynomial_w)
from ._ops.conversion import write_out
from ._ops.reduction import logsumexp as _logsumexp
from ._ops import special as _special_ops
from ._ops.special import erfc, erfinv, i0, i1, logit, sinc, xlogy
from ._toplevel_nn import log_softmax, softmax
from ._tensor import Tensor
from .autograd.grad_mode import no_grad

__all__ = ["erf", "expit", "logit", "xlogy", "xlog1py", "gammaln", "digamma",
           "psi", "polygamma", "multigammaln", "sinc", "entr", "logsumexp", "log_softmax",
           "softmax", "i0", "i1", "ndtr", "ndtri", "log1p", "expm1", "exp2", "round", "gammainc",
           "gammaincc", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
           "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p", "erfcx", "log_ndtr", "i0e", "i1e",
           "spherical_bessel_j0", "zeta", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "airy_ai"]

erf = elementwise.erf
expit = elementwise.sigmoid
psi = digamma
log1p = elementwise.log1p
expm1 = elementwise.expm1
exp2 = elementwise.exp2
round = elementwise.round


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma of dimension ``p`` (``portagrad.mvlgamma``)."""
    return mvlgamma(input, p)


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    return _special_ops.xlog1py(input, other)


def _entr_fwd(x: Tensor) -> Tensor:
    safe = _where(x > 0, x, 1.0)
    out = _where(elementwise.eq(x, 0), 0.0, -(x * elementwise.log(safe)))
    return _where(x < 0, -math.inf, out)


# entr's derivative -(log x + 1) everywhere, as PyTorch: inf at 0 and NaN below it (the
# composition through where gave 0 there)
entr = _special_ops._unary("special_entr", "SpecialEntrBackward0", _entr_fwd,
                           lambda g, x, y: g * -(elementwise.log(x) + 1.0),
                           "Elementwise entropy ``-x log x`` (0 at 0, ``-inf`` below 0).")


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF."""
    return erfc(input * (-1.0 / math.sqrt(2.0))) * 0.5


# Below this probability (and above 1 minus it) ndtri refines by Newton on log_ndtr: erfinv of
# 2p - 1 loses the tail there (2p - 1 rounds to -1: ndtri(1e-300) came out -inf, not -37.05)
_NDTRI_TAIL = 1e-3


def ndtri(input: Tensor) -> Tensor:
    """The inverse of the standard normal CDF: ``sqrt(2) erfinv(2p - 1)`` in the middle; in the
    tails, Newton steps on ``log_ndtr(x) = log(p)`` (by symmetry for the upper tail), the last
    one recorded, whose derivative at convergence is ``1 / pdf(x)``, the inverse's."""
    _special_ops._check_tensor("special_ndtri", input)
    if input.dtype in (_dtype.float16, _dtype.bfloat16):  # PyTorch has no 16-bit kernel
        raise NotImplementedError(f'"ndtri_cpu" not implemented for \'{type_name(input.dtype)}\'')
    input = _float_input(input)  # (bools too: 2p - 1 on a bool tensor is refused)
    central = erfinv(input * 2.0 - 1.0) * math.sqrt(2.0)
    # outside [0, 1] NaN (the tail's Newton steps gave -inf below 0)
    central = _where(elementwise.logical_or(input < 0.0, input > 1.0), math.nan, central)
    p = input.detach()
    upper = p > 0.5
    q = _where(upper, 1.0 - p, p)  # (exact: Sterbenz)
    tail = (q < _NDTRI_TAIL) & (q > 0)
    if not bool(tail.any().item()):
        return central
    qs = _where(tail, q, 0.5)  # the other entries take a harmless value through the steps
    log_q = qs.log()

    def step(x: Tensor, log_target: Tensor) -> Tensor:
        lx = log_ndtr(x)
        # d/dx log_ndtr(x) = pdf(x) / ndtr(x) = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi)
        slope = (-(x * x) * 0.5 - lx).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        return x - (lx - log_target) / slope

    with no_grad():
        x = -(-2.0 * log_q).sqrt()  # the tail's leading term
        for _ in range(6):
            x = step(x, log_q)
    # the last step recorded, on the probability itself (its gradient: 1 / pdf(x))
    q_in = _where(upper, 1.0 - input, input)
    x = step(x.detach(), _where(tail, q_in, 0.5).log())
    x = _where(upper, -x, x)
    return _where(tail, x, central)


def _with_out(fn: Any, name: str) -> Any:
    """``fn`` with PyTorch's keyword-only ``out=``: the result written into ``out`` (resized,
    cast, refused while an argument requires grad) and ``out`` returned."""

    @functools.wraps(fn)
    def wrapped(*args: Any, out: Tensor | None = None, **kwargs: Any) -> Tensor:
        res = fn(*args, **kwargs)
        return res if out is None else write_out(f"special_{name}", res, out, args)

    return wrapped


# the torch.special functions whose implementations take no out= of their own (the
# others are the top-level functions themselves, out= included)
_OUT_FORMS = ("logit", "xlog1py", "multigammaln", "sinc", "ndtr", "ndtri",
              "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w",
              "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
              "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
              "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
              "legendre_polynomial_p", "erfcx", "log_ndtr", "i0e", "i1e", "spherical_bessel_j0",
              "zeta", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
              "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
              "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai")
for _name in _OUT_FORMS:
    globals()[_name] = _with_out(globals()[_name], _name)
del _name


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False, *,
              out: Tensor | None = None) -> Tensor:
    """``log(sum(exp(input), dim))``, computed stably (``portagrad.logsumexp``)."""
    res = _logsumexp(input, dim, keepdim)
    return res if out is None else write_out("special_logsumexp", res, out, (input,))
