"""Random numbers: a counter-based (Philox) generator that gives the same values on every backend.

A :class:`Generator` is just ``(seed, offset)``, the offset counting the 32-bit words of the Philox
stream. Drawing ``n`` numbers that take ``w`` words each (1 for ``uniform`` in 32 or 16 bits, 2 in
float64, 4 for ``normal``) uses the words ``offset .. offset+w*n-1`` and advances the offset by
``w*n``; every backend computes Philox4x32-10 for those words (see
:mod:`portagrad.backends.interface`), so ``pg.manual_seed(s)`` gives the same
``rand``/``randn``/``dropout`` values on the CPU and on any OpenCL device.
"""
from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from . import _creation, _device, _dtype, _raw
from ._memory_format import check_memory_format
from ._ops._common import broadcast_shapes
from ._ops.complexnum import _as_real, view_as_real
from ._ops.conversion import bump, check_no_overlap, copy_
from ._ops.elementwise import add, div, floor, log1p, lt, mul, neg
from ._tensor import Tensor
from .backends.philox import slots as _philox_slots

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "default_generator", "rand", "randn",
           "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
           "multinomial", "get_rng_state", "set_rng_state", "uniform_", "normal_", "random_",
           "bernoulli_", "exponential_"]


class Generator:
    """A Philox stream: ``manual_seed``, ``seed``, ``initial_seed``, ``get_state``/``set_state``."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device
        self._seed = 67280421310721
        self._offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``."""
        if not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        self._seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self._offset = 0
        return self

    def seed(self) -> int:
        """Seed from the OS's entropy and return the seed."""
        s = int.from_bytes(os.urandom(8), "little") & 0x7FFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8-compatible int64 tensor ``[seed, offset]``."""
        return _creation.tensor([self._seed & 0x7FFFFFFFFFFFFFFF, self._offset], dtype=_dtype.int64,
                                device="cpu")  # a CPU tensor whatever the default device, as PyTorch

    def set_state(self, state: Tensor) -> None:
        seed_, offset = (int(v) for v in state.tolist())
        self._seed, self._offset = seed_, offset

    def _take(self, n: int) -> tuple[int, int]:
        with self._lock:
            start = self._offset
            self._offset += n
        return self._seed, start


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (all devices share it, so results match across devices)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator.set_state(state)


def _fill_random(t: Tensor, kind: str, a: float, b: float, generator: Generator | None) -> Tensor:
    check_no_overlap(t)  # (before drawing: an in-place fill outside the in-place rule)
    gen = generator or default_generator
    s, off = gen._take(t.numel() * _philox_slots(kind, t.dtype.numpy))
    if t._v.is_contiguous():
        return _raw.random(kind, t, s, off, a, b)
    tmp = _raw.random(kind, _raw.new_like(t), s, off, a, b)
    _raw.copy_into(t, tmp)
    return t


def _float_dtype(dtype: Any) -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{dt.name}'")
    return dt


def rand(*args: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None,
         device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform numbers in ``[0, 1)`` (``rand(2, 3)``, ``rand((2, 3))``, ``rand(size=(2, 3))``)."""
    t = _creation.empty(_creation.size_arg(args, size, "rand"), dtype=_float_dtype(dtype),
                        device=device, pin_memory=pin_memory)
    _fill_random(t, "uniform", 0.0, 1.0, generator)
    return t.requires_grad_(requires_grad) if requires_grad else t


def randn(*args: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal numbers (``randn(2, 3)``, ``randn((2, 3))``, ``randn(size=(2, 3))``); for
    a complex dtype, real and imaginary parts each normal with variance 1/2 (as PyTorch), so
    that ``E|z|^2 = 1``."""
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    t = _creation.empty(_creation.size_arg(args, size, "randn"),
                        dtype=dt if dt.is_complex else _float_dtype(dtype),
                        device=device, pin_memory=pin_memory)
    if dt.is_complex:
        _fill_random(view_as_real(t), "normal", 0.0, math.sqrt(0.5), generator)
        return t.requires_grad_(requires_grad) if requires_grad else t
    _fill_random(t, "normal", 0.0, 1.0, generator)
    return t.requires_grad_(requires_grad) if requires_grad else t


def randint(*args: Any, size: Any = None, low: Any = None, high: Any = None,
            generator: Generator | None = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Integers uniform in ``[low, high)``: ``randint(high, size)``, ``randint(low, high, size)``,
    and the keyword forms (``randint(0, 10, size=(3,))``, ``randint(high=10, size=(3,))``)."""
    low, high, size = _randint_args(args, low, high, size)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    shape = _creation.parse_size((size,), "randint")
    u = _creation.empty(shape, dtype=_dtype.float64, device=device) if _fp64(device) else \
        _creation.empty(shape, dtype=_dtype.float32, device=device)
    _fill_random(u, "uniform", 0.0, 1.0, generator)

    vals = add(floor(mul(u, float(high - low))), float(low))
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    out = _raw.cast(vals, dt)
    # rounding at the top edge of float32 could give `high`: clamp it back
    out = _raw.binary("minimum", out, high - 1, dt)
    if requires_grad:  # (an integer dtype refuses it, as PyTorch's does)
        out.requires_grad_(True)
    return out


def _randint_args(args: tuple, low: Any, high: Any, size: Any) -> tuple[int, int, Any]:
    """``(low, high, size)`` from PyTorch's call forms of ``randint``."""
    pos = list(args)
    if size is None and pos and not isinstance(pos[-1], (int, np.integer, Tensor)):
        size = pos.pop()  # the size is the last positional argument
    if len(pos) > 2 or (len(pos) == 2 and (low is not None or high is not None)) or \
            (len(pos) == 1 and high is not None and low is not None):
        raise TypeError("randint() received an invalid combination of arguments: expected "
                        "(high, size) or (low, high, size)")
    if len(pos) == 2:
        low, high = pos
    elif len(pos) == 1:
        if high is None:
            high = pos[0]
        else:
            low = pos[0]
    if high is None or size is None:
        missing = [n for n, v in (("high", high), ("size", size)) if v is None]
        raise TypeError(f"randint() missing required argument(s): {', '.join(missing)}")
    low = 0 if low is None else low
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, Tensor) and v.dim() == 0:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"randint(): argument '{name}' must be int, not {type(v).__name__}")
    if isinstance(size, (int, np.integer)):
        raise TypeError("randint(): argument 'size' must be a tuple of ints, not int")
    return int(low), int(high), size


def _fp64(device: Any) -> bool:
    _, backend, index = _device.resolve(_device.as_device(device))
    return backend.get_device_properties(index).fp64


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0..n-1`` (argsort of uniform keys)."""
    keys = rand(n, generator=generator, dtype=_dtype.float64 if _fp64(device) else None,
                device=device)
    _, idx = _raw.sort(keys, 0, False)
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    return idx if dt is _dtype.int64 else _raw.cast(idx, dt)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = None, generator: Generator | None = None) -> Tensor:
    """Uniform numbers in ``[0, 1)`` with ``input``'s shape, dtype and device."""
    check_memory_format(memory_format, "rand_like")
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad, generator=generator)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None,
               generator: Generator | None = None) -> Tensor:
    """Standard normal numbers with ``input``'s shape, dtype and device."""
    check_memory_format(memory_format, "randn_like")
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad, generator=generator)


def randint_like(input: Tensor, low: Any = None, high: Any = None, *, dtype: Any = None,
                 device: Any = None, requires_grad: bool = False, memory_format: Any = None,
                 generator: Generator | None = None) -> Tensor:
    """Integers in ``[low, high)`` with ``input``'s shape, dtype and device
    (``randint_like(x, high)``, ``randint_like(x, low, high)`` or keywords)."""
    check_memory_format(memory_format, "randint_like")
    if high is None:  # randint_like(x, high)
        low, high = None, low
    if high is None:
        raise TypeError("randint_like() missing required argument: 'high'")
    return randint(0 if low is None else low, high, input.shape, dtype=dtype or input.dtype,
                   device=device or input.device, generator=generator,
                   requires_grad=requires_grad)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, device: Any = None) -> Tensor:
    """Normal numbers with the given mean and std (tensors broadcast, or floats with ``size``)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std

        shape = broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        z = randn(shape, generator=generator, dtype=like.dtype, device=like.device)
        return add(mul(z, std), mean)
    t = _creation.empty(size, dtype=_float_dtype(dtype), device=device)
    return _fill_random(t, "normal", float(mean), float(std), generator)


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None
             ) -> Tensor:
    """Fill ``t`` in place with uniform numbers in ``[a, b)`` (a complex ``t``: its real and
    imaginary parts each, as PyTorch, drawn as the real numbers of its (real, imag) view)."""
    _fill_random(_as_real(t) if t.dtype.is_complex else t, "uniform", float(a), float(b),
                 generator)
    bump(t)
    return t


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
            ) -> Tensor:
    """Fill ``t`` in place with normal numbers; for a complex ``t``, real and imaginary parts
    each with mean ``mean`` and std ``std / sqrt(2)`` (as PyTorch: ``E|z - mean|^2 = std^2``),
    drawn as the real numbers of its (real, imag) view (the backends draw real dtypes only)."""
    if isinstance(mean, (complex, np.complexfloating)) or \
            isinstance(std, (complex, np.complexfloating)):
        name, pos = ("mean", 1) if isinstance(mean, (complex, np.complexfloating)) else ("std", 2)
        raise TypeError(f"normal_(): argument '{name}' (position {pos}) must be float, not complex")
    if t.dtype.is_complex:
        _fill_random(_as_real(t), "normal", float(mean), float(std) / math.sqrt(2.0), generator)
    else:
        _fill_random(t, "normal", float(mean), float(std), generator)
    bump(t)
    return t


def random_(t: Tensor, low: int = 0, high: int | None = None, *,
            generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with integers in ``[low, high)`` (``[0, 2**31)`` by default)."""
    vals = randint(low, high if high is not None else 2 ** 31, t.shape, generator=generator,
                   device=t.device)
    return copy_(t, vals)


def bernoulli_(t: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with 0/1 draws of probability ``p``."""
    u = rand(t.shape, dtype=t.dtype if t.dtype.is_floating_point else None, device=t.device,
             generator=generator)
    return copy_(t, lt(u, p).to(t.dtype))


def exponential_(t: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with exponentially distributed numbers of rate ``lambd``."""
    u = rand(t.shape, dtype=t.dtype, device=t.device, generator=generator)
    return copy_(t, div(neg(log1p(neg(u))), lambd))


def bernoulli(input: Tensor, p: Any = None, *, generator: Generator | None = None) -> Tensor:
    """0/1 draws with probabilities ``input`` (or the scalar ``p``)."""
    prob = input if p is None else p
    u = rand(input.shape, generator=generator, dtype=input.dtype if input.dtype.is_floating_point
             else None, device=input.device)
    return lt(u, prob.detach() if isinstance(prob, Tensor) else prob).to(input.dtype)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Sample indices from (unnormalised) probabilities, row-wise (done on the host)."""
    probs = input.detach().to("cpu").numpy().astype(np.float64)
    two_d = probs.ndim == 2
    probs = probs if two_d else probs[None]
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = []
    for row in probs:
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(row):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        # drawn on the host, where the sampling runs (not on the default device)
        u = rand(num_samples if replacement else len(row), dtype=_dtype.float64,
                 generator=generator, device="cpu").numpy()
        if replacement:
            rows.append(np.searchsorted(np.cumsum(row / total), u, side="right"))
        else:
            # Gumbel-top-k with the uniform stream: exact sampling without replacement
            with np.errstate(divide="ignore"):
                keys = np.log(np.maximum(u, 1e-300)) / row
            rows.append(np.argsort(-keys, kind="stable")[:num_samples])
    out = np.stack(rows).astype(np.int64)
    out = np.minimum(out, probs.shape[1] - 1)
    return _creation.from_host(out if two_d else out[0], device=input.device)
