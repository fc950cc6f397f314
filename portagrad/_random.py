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
        """Restart the stream from ``seed`` (an int from -2**63 to 2**64 - 1; a negative one
        is taken modulo 2**64, as PyTorch takes it)."""
        if not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
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
        """The state as a CPU byte tensor (uint8, as PyTorch's): the seed and the offset, 8
        little-endian bytes each."""
        raw = np.array([self._seed, self._offset & 0xFFFFFFFFFFFFFFFF], dtype="<u8")
        return _creation.tensor(raw.view(np.uint8), dtype=_dtype.uint8, device="cpu")

    def set_state(self, state: Tensor) -> None:
        """Restore a state :meth:`get_state` returned."""
        if not isinstance(state, Tensor) or state.dtype is not _dtype.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a Philox generator state of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {state.numel()}")
        seed_, offset = (int(v) for v in
                         state.detach().cpu().numpy().reshape(-1).view("<u8"))
        with self._lock:
            self._seed, self._offset = seed_, offset

    def _take(self, n: int) -> tuple[int, int]:
        if VMAP_RANDOMNESS.mode is not None:  # inside vmap(randomness="error" or "same")
            _vmap_draw(self)
        with self._lock:
            start = self._offset
            self._offset += n
        return self._seed, start


_STATE_BYTES = 16  # a state's bytes: the seed and the offset, 8 each


class _VmapRandomness(threading.local):
    """What random draws do inside ``vmap`` in this thread: ``mode`` None (outside vmap, or
    ``randomness="different"``: every batch element draws anew), ``"error"`` (they raise) or
    ``"same"``: every element draws the numbers the first drew. ``starts`` holds, for each
    enclosing ``"same"`` vmap, each generator's offset before its first draw there, which that
    vmap restores before each of its elements."""
    mode: str | None = None
    starts: tuple[dict[Generator, int], ...] = ()


VMAP_RANDOMNESS = _VmapRandomness()


def _vmap_draw(gen: Generator) -> None:
    if VMAP_RANDOMNESS.mode == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please "
                           "either use the 'same' or 'different' randomness flags on vmap or "
                           "perform the randomness operation out of vmap")
    for starts in VMAP_RANDOMNESS.starts:
        if gen not in starts:
            starts[gen] = gen._offset

default_generator = Generator()


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator (all devices share it, so results match across devices);
    ``seed`` is taken through ``int()``, as PyTorch takes it (``1.5``, ``"3"``, a 0-d tensor)."""
    return default_generator.manual_seed(int(seed))


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


def _float_dtype(dtype: Any, kernel: str = "check_uniform_bounds") -> Any:
    """``dtype`` (the default dtype for None) if floating, else PyTorch's error naming the CPU
    kernel that has no version for it."""
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dt)}'")
    return dt


def _type_name(dt: Any) -> str:
    return _dtype.SCALAR_TYPE_NAMES.get(dt.name, dt.name)


def _g(v: float) -> str:
    """A number as PyTorch's messages print it (``2``, ``-1``, ``0.5``)."""
    return f"{float(v):g}"


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
                        dtype=dt if dt.is_complex else _float_dtype(dtype, "normal_kernel_cpu"),
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
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    if dt is _dtype.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    limits = _dtype.INT_LIMITS.get(dt.name)
    if limits is not None and n - 1 > limits[1]:  # (the indices would wrap)
        raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
    if dt.is_floating_point and n > 0:
        exact = {"float16": 2049, "bfloat16": 257}.get(dt.name)
        if exact is not None and n > exact:
            raise RuntimeError(f"n cannot be greater than {exact} for {_type_name(dt)} type.")
    keys = rand(n, generator=generator, dtype=_dtype.float64 if _fp64(device) else None,
                device=device)
    _, idx = _raw.sort(keys, 0, False)
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
    if isinstance(std, Tensor):
        if std.numel() and std.detach().min().item() < 0:  # (a host read, as PyTorch's)
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif float(std) < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
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
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for "
                                  f"'{_type_name(t.dtype)}'")
    if float(a) > float(b):
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_g(a)} > to={_g(b)}")
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
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{_type_name(t.dtype)}'")
    if float(std) < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    if t.dtype.is_complex:
        _fill_random(_as_real(t), "normal", float(mean), float(std) / math.sqrt(2.0), generator)
    else:
        _fill_random(t, "normal", float(mean), float(std), generator)
    bump(t)
    return t


# the default range of random_() on floating dtypes: [0, 2**digits], every integer exact
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
# PyTorch's C names of the integer types in random_'s range errors
_C_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
            "int64": "long", "bool": "bool"}


def random_(t: Tensor, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Tensor:
    """Fill ``t`` in place with integers drawn uniformly: ``random_()`` over ``[0, 2**m]`` for a
    float dtype of ``m`` mantissa bits (every integer exact) or ``[0, max]`` of an integer dtype;
    ``random_(to)`` over ``[0, to)``; ``random_(from, to)`` (``to=None``: to the default top)."""
    low, high = _random_args(args, kwargs)
    dt = t.dtype
    if low is None:
        low = 0
    if high is None:
        if dt.is_floating_point:
            top = (1 << _FLOAT_DIGITS.get(dt.name, 24)) + 1
        elif dt is _dtype.bool:
            top = 2
        else:
            top = _dtype.INT_LIMITS[dt.name][1] + 1
        high = max(top, low + 1)
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    limits: tuple[int, int] | None = None
    if dt is _dtype.bool:
        limits = (0, 1)
    elif not dt.is_floating_point and dt.name in _dtype.INT_LIMITS:
        limits = _dtype.INT_LIMITS[dt.name][:2]
    if limits is not None:
        lo, hi = limits
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {_C_NAMES.get(dt.name, dt.name)}")
        if not lo <= high - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES.get(dt.name, dt.name)}")
    vals = randint(low, high, t.shape, generator=generator, device=t.device)
    return copy_(t, vals)


def _random_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``(from, to)`` of PyTorch's ``random_()``, ``random_(to)``, ``random_(from, to)`` and
    their keywords."""
    unknown = set(kwargs) - {"from", "to"}
    if unknown or len(args) > 2:
        raise TypeError("random_() received an invalid combination of arguments: expected (), "
                        "(to), or (from, to)")
    if len(args) == 2:
        return args[0], args[1]
    if len(args) == 1:
        if "to" in kwargs:
            return args[0], kwargs["to"]
        return (kwargs.get("from"), args[0]) if "from" not in kwargs else (kwargs["from"], args[0])
    return kwargs.get("from"), kwargs.get("to")


def _check_probabilities(p: Tensor) -> None:
    """PyTorch's check that tensor probabilities lie in [0, 1] (NaN refused too)."""
    if not p.numel():
        return
    d = p.detach()
    if not bool(((d >= 0) & (d <= 1)).all().item()):  # (a host read; NaN fails both tests)
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


def _check_p(p: Any) -> None:
    if isinstance(p, Tensor):
        _check_probabilities(p)
    elif not 0 <= float(p) <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")


def bernoulli_(t: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with 0/1 draws of probability ``p`` (a number or a tensor)."""
    _check_p(p)
    u = rand(t.shape, dtype=t.dtype if t.dtype.is_floating_point else None, device=t.device,
             generator=generator)
    return copy_(t, lt(u, p).to(t.dtype))


def exponential_(t: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill ``t`` in place with exponentially distributed numbers of rate ``lambd``."""
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_type_name(t.dtype)}")
    if not float(lambd) > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    u = rand(t.shape, dtype=t.dtype, device=t.device, generator=generator)
    return copy_(t, div(neg(log1p(neg(u))), lambd))


def bernoulli(input: Tensor, p: Any = None, *, generator: Generator | None = None) -> Tensor:
    """0/1 draws with probabilities ``input`` (or the scalar ``p``)."""
    if p is None and not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    prob = input if p is None else p
    _check_p(prob)
    u = rand(input.shape, generator=generator, dtype=input.dtype if input.dtype.is_floating_point
             else None, device=input.device)
    return lt(u, prob.detach() if isinstance(prob, Tensor) else prob).to(input.dtype)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Sample indices from (unnormalised) probabilities, row-wise (done on the host)."""
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_type_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
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
