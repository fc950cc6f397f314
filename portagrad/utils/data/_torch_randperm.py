"""PyTorch's CPU ``randperm`` order for a ``torch.Generator`` seeded with ``manual_seed(seed)``.

``DistributedSampler(shuffle=True)`` permutes the dataset with
``torch.randperm(n, generator=g)`` after ``g.manual_seed(seed + epoch)``. Reproducing that order
makes a portagrad job visit the same samples, in the same order and on the same ranks, as the
PyTorch script it was ported from (so a run can be compared step by step, and a job resumed
across the two libraries sees no repeated or skipped samples).

PyTorch's CPU generator is a 32-bit Mersenne Twister (mt19937) initialised from the low 32 bits of
the seed by the standard ``init_genrand``; for ``n`` below ``2**32 / 20`` its ``randperm`` is a
Fisher-Yates shuffle run front to back: for ``i`` in ``0 .. n-2`` it draws one 32-bit number ``r``
and swaps positions ``i`` and ``i + r % (n - i)``. numpy's legacy ``RandomState`` seeds the same
mt19937 the same way, so its raw 32-bit stream is PyTorch's.
"""
from __future__ import annotations

import numpy as np

__all__ = ["torch_randperm", "TORCH_SMALL_N"]

#: Up to this ``n`` (exclusive) PyTorch uses the 32-bit Fisher-Yates above; larger ``n`` takes
#: another path (64-bit draws) that is not reproduced here.
TORCH_SMALL_N = (2 ** 32 - 1) // 20


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``, computed
    on the host without torch (``n < TORCH_SMALL_N``)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got {n}")
    if n >= TORCH_SMALL_N:
        raise ValueError(f"torch_randperm reproduces PyTorch's order for n < {TORCH_SMALL_N}, "
                         f"got n={n}")
    # manual_seed keeps the seed as a uint64 (a negative seed wraps); mt19937 takes its low 32 bits
    legacy = np.random.RandomState(int(seed) & 0xFFFFFFFF).get_state(legacy=False)
    bits = np.random.MT19937()
    bits.state = legacy  # type: ignore[assignment]  # (numpy types it as a TypedDict)
    out = list(range(n))
    if n > 1:
        draws = bits.random_raw(n - 1).astype(np.uint64)
        offsets = (draws % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
        for i, z in enumerate(offsets):  # the swaps depend on each other: a plain loop
            j = i + z
            out[i], out[j] = out[j], out[i]
    return out
