"""One random stream for PyTorch and portagrad, to compare a script's numbers across them.

PyTorch's generator and portagrad's Philox generator give different numbers for the same seed,
so the same script starts from different weights and data in each. :func:`patch` replaces the
random entry points of a torch-like module (the real ``torch`` or portagrad) with draws from one
numpy ``PCG64`` stream, in float64 and then cast, so both frameworks see the same values as long
as the script draws in the same order, which the same script does:

* factories ``rand``, ``randn``, ``randint``, ``randperm``, ``rand_like``, ``randn_like``,
  ``normal``, ``bernoulli`` and ``multinomial``;
* the in-place ``Tensor.uniform_`` / ``normal_`` / ``bernoulli_`` (through which ``nn.init``,
  hence every layer's default initialisation, draws);
* ``nn.functional.dropout`` (masks ``rng.random(shape) >= p``, scaled by ``1 / (1 - p)``);
* ``manual_seed(s)`` restarts the stream at ``s``; ``generator=`` arguments are ignored.

Seed draws (``Tensor.random_``, and ``randint`` with a bound above ``2**31``), which the two
libraries make at different places (DataLoader and sampler seeds), come from a side stream so that
they do not shift the main one. Randomness inside PyTorch's fused kernels (the inter-layer
dropout of ``nn.LSTM``/``nn.GRU``, the attention dropout of ``scaled_dot_product_attention``) is
not reached: compare such models with that dropout off.

Used by ``python -m portagrad.compat`` when ``PORTAGRAD_COMPAT_SHARED_RNG=<seed>`` is set, and by
the corpus tests on the PyTorch side; see ``docs/compat.md``.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ENV_VAR", "SharedStream", "patch"]

ENV_VAR = "PORTAGRAD_COMPAT_SHARED_RNG"
_SEED_BOUND = 2 ** 31


class SharedStream:
    """The numpy streams (main and seed side stream) behind a patched module."""

    def __init__(self, seed: int) -> None:
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Restart both streams from ``seed``."""
        self.rng = np.random.Generator(np.random.PCG64(int(seed)))
        self.side = np.random.Generator(np.random.PCG64(int(seed) + 1))


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (
            len(size) == 1 and type(size[0]).__name__ == "Size"):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def patch(m: Any, seed: int) -> SharedStream:
    """Make the random entry points of torch-like module ``m`` draw from one numpy stream."""
    stream = SharedStream(seed)
    float_default: Callable[[], Any] = m.get_default_dtype
    originals = {name: getattr(m, name) for name in ("manual_seed", "randperm")}

    def make(arr: np.ndarray, dtype: Any, device: Any, requires_grad: bool = False) -> Any:
        out = m.tensor(arr, dtype=dtype if dtype is not None else float_default(), device=device)
        return out.requires_grad_(True) if requires_grad else out

    def manual_seed(seed: int) -> Any:
        stream.seed(seed)
        return originals["manual_seed"](seed)

    def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kw: Any) -> Any:
        return make(stream.rng.random(_size(size)), dtype, device, requires_grad)

    def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, **kw: Any) -> Any:
        return make(stream.rng.standard_normal(_size(size)), dtype, device, requires_grad)

    def randint(low: Any, high: Any = None, size: Any = None, *, generator: Any = None,
                dtype: Any = None, device: Any = None, **kw: Any) -> Any:
        if size is None:  # randint(high, size)
            low, high, size = 0, low, high
        src = stream.side if high > _SEED_BOUND else stream.rng
        arr = src.integers(int(low), int(high), size=_size((size,)))
        return make(arr, dtype if dtype is not None else m.int64, device)

    def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
                 **kw: Any) -> Any:
        return make(stream.rng.permutation(int(n)), dtype if dtype is not None else m.int64, device)

    def rand_like(input: Any, *, dtype: Any = None, device: Any = None, **kw: Any) -> Any:
        return make(stream.rng.random(tuple(input.shape)), dtype or input.dtype,
                    device or input.device)

    def randn_like(input: Any, *, dtype: Any = None, device: Any = None, **kw: Any) -> Any:
        return make(stream.rng.standard_normal(tuple(input.shape)), dtype or input.dtype,
                    device or input.device)

    def bernoulli(input: Any, p: Any = None, *, generator: Any = None, **kw: Any) -> Any:
        probs = input.detach().cpu().double().numpy() if p is None else p
        draw = stream.rng.random(tuple(input.shape)) < probs
        return make(draw.astype(np.float64), input.dtype, input.device)

    def multinomial(input: Any, num_samples: int, replacement: bool = False, *,
                    generator: Any = None, **kw: Any) -> Any:
        probs = np.atleast_2d(input.detach().cpu().double().numpy())
        rows = []
        for row in probs:
            row = row / row.sum()
            rows.append(stream.rng.choice(len(row), size=num_samples, replace=replacement, p=row))
        out = np.stack(rows) if input.dim() == 2 else rows[0]
        return make(out, m.int64, input.device)

    def fill(t: Any, arr: np.ndarray) -> Any:
        with m.no_grad():
            t.copy_(m.tensor(arr, dtype=t.dtype, device=t.device))
        return t

    def uniform_(self: Any, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Any:
        return fill(self, a + (b - a) * stream.rng.random(tuple(self.shape)))

    def normal_(self: Any, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        return fill(self, mean + std * stream.rng.standard_normal(tuple(self.shape)))

    def bernoulli_(self: Any, p: float = 0.5, *, generator: Any = None) -> Any:
        return fill(self, (stream.rng.random(tuple(self.shape)) < p).astype(np.float64))

    def random_(self: Any, *args: Any, generator: Any = None) -> Any:
        return fill(self, stream.side.integers(0, 2 ** 53, size=tuple(self.shape)))

    F = m.nn.functional
    original_dropout = F.dropout

    @functools.wraps(original_dropout)
    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
        if not training or p == 0.0:
            return original_dropout(input, p, training, inplace)
        keep = (stream.rng.random(tuple(input.shape)) >= p).astype(np.float64)
        mask = m.tensor(keep / (1.0 - p) if p < 1.0 else keep * 0.0, dtype=input.dtype,
                        device=input.device)
        return input.mul_(mask) if inplace else input * mask

    for name, fn in {"manual_seed": manual_seed, "rand": rand, "randn": randn,
                     "randint": randint, "randperm": randperm, "rand_like": rand_like,
                     "randn_like": randn_like, "bernoulli": bernoulli,
                     "multinomial": multinomial}.items():
        setattr(m, name, fn)
        internal = getattr(m, "_random", None)  # portagrad's samplers call its _random module
        if internal is not None and hasattr(internal, name):
            setattr(internal, name, fn)
    # DistributedSampler keeps its seeded order: PyTorch's exact permutation for its seed, which
    # portagrad's sampler reproduces without drawing, so both runs shard the data alike
    sampler_module = sys.modules.get(f"{m.__name__}.utils.data.distributed")
    sampler = getattr(sampler_module, "DistributedSampler", None)
    if sampler is not None and not getattr(sampler.__iter__, "_keeps_order", False):
        original_randperm, original_iter = originals["randperm"], sampler.__iter__

        def sampler_iter(self: Any) -> Any:
            shared, m.randperm = m.randperm, original_randperm
            try:
                return original_iter(self)
            finally:
                m.randperm = shared

        sampler_iter._keeps_order = True  # type: ignore[attr-defined]
        sampler.__iter__ = sampler_iter
    # torch's random_split calls the randperm its module imported by name, not torch.randperm
    dataset_module = sys.modules.get(f"{m.__name__}.utils.data.dataset")
    if dataset_module is not None and hasattr(dataset_module, "randperm"):
        vars(dataset_module)["randperm"] = randperm
    for name, fn in {"uniform_": uniform_, "normal_": normal_, "bernoulli_": bernoulli_,
                     "random_": random_}.items():
        setattr(m.Tensor, name, fn)
    F.dropout = dropout
    return stream
