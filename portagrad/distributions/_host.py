"""Host-side numerics for the discrete distributions: exact sampling by inversion of a discrete
CDF (the pmf is tabulated with the host's ``lgamma``)."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._creation import from_host
from .._dtype import float64
from .._random import rand
from .._tensor import Tensor

__all__ = ["sample_by_inversion"]

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def sample_by_inversion(shape: tuple[int, ...], params: list[np.ndarray],
                        support_max: Callable[..., int],
                        log_pmf: Callable[..., np.ndarray], like: Tensor) -> Tensor:
    """Exact samples of a discrete distribution on ``0, 1, ...`` by inverting its CDF with
    uniforms from portagrad's generator: for each distinct parameter tuple the pmf is tabulated
    on ``0 .. support_max(*params)`` (past which the remaining mass is negligible), summed, and
    the uniforms are located in it. Runs on the host; the result goes to ``like``'s device with
    its dtype."""
    u = rand(shape, dtype=float64).numpy()
    flat = [np.broadcast_to(p, shape).reshape(-1) for p in params]
    out = np.zeros(u.size, np.float64)
    uf = u.reshape(-1)
    keys = np.stack(flat, axis=1) if flat else np.zeros((u.size, 0))
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for i, row in enumerate(uniq):
        sel = inverse == i
        kmax = int(support_max(*row))
        ks = np.arange(kmax + 1, dtype=np.float64)
        cdf = np.cumsum(np.exp(log_pmf(ks, *row)))
        cdf[-1] = max(cdf[-1], 1.0)  # the tail past kmax is below double precision
        out[sel] = np.minimum(np.searchsorted(cdf, uf[sel], side="right"), kmax)
    return from_host(out.reshape(shape).astype(like.dtype.numpy), device=like.device)
