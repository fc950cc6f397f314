"""portagrad: PyTorch-style tensors, autograd and ``nn`` on pluggable array backends.

``import portagrad as pg`` gives the PyTorch API (``pg.tensor``, ``requires_grad``, ``backward``,
``pg.nn``, ``pg.optim``, ``pg.utils.data``, ``pg.save``/``pg.load``); devices are ``"cpu"`` (numpy)
and ``"opencl:N"`` (pyopencl), or any device type a plugin registers.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _dtype
from ._dtype import (bool, dtype, double, float, float16, float32, float64, get_default_dtype,  # noqa: A004
                     half, int, int32, int64, long, promote_types, result_type, set_default_dtype)
from ._device import device, get_default_device, set_default_device
from ._storage import Size
from ._tensor import Tensor
from . import _tensor_methods  # noqa: F401  (attaches methods to Tensor)
from ._creation import (arange, as_tensor, asarray, empty, empty_like, empty_strided, eye,
                        from_numpy, full, full_like, linspace, logspace, ones, ones_like,
                        scalar_tensor, tensor, zeros, zeros_like)
from ._random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed,
                      manual_seed, multinomial, normal, rand, rand_like, randint, randint_like,
                      randn, randn_like, randperm, seed, set_rng_state)
from ._ops import elementwise as _E, reduction as _R, linalg as _L, shape as _S, indexing as _I
from ._ops import joining as _J, conversion as _C
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .errors import OutOfMemoryError
from ._format import set_printoptions
from ._accel import DeviceModule as _DeviceModule

# the functional namespace: pg.add, pg.sum, pg.matmul ...
_FUNCS = {
    **{n: getattr(_E, n) for n in _E.__all__ if n not in ("unary_inplace", "binary_inplace",
                                                           "softplus_raw", "gelu_erf")},
    "absolute": _E.abs, "negative": _E.neg, "multiply": _E.mul, "divide": _E.div,
    "subtract": _E.sub, "greater": _E.gt, "less": _E.lt, "greater_equal": _E.ge,
    "less_equal": _E.le, "not_equal": _E.ne,
    **{n: getattr(_R, n) for n in _R.__all__},
    **{n: getattr(_L, n) for n in _L.__all__},
    **{n: getattr(_S, n) for n in ("reshape", "transpose", "swapaxes", "t", "permute", "movedim",
                                   "squeeze", "unsqueeze", "flatten", "unflatten", "narrow",
                                   "select", "unbind", "as_strided", "broadcast_to")},
    "swapdims": _S.transpose, "moveaxis": _S.movedim,
    **{n: getattr(_I, n) for n in ("gather", "scatter", "scatter_add", "index_select",
                                   "masked_fill", "masked_select", "nonzero", "flip",
                                   "take_along_dim", "index_add", "index_fill", "index_copy")},
    **{n: getattr(_J, n) for n in _J.__all__},
    "clone": _C.clone,
}
globals().update(_FUNCS)


def broadcast_shapes(*shapes: "tuple[int, ...]") -> Size:
    """The shape that ``shapes`` broadcast to."""
    from ._ops._common import broadcast_shapes as _bs

    return Size(_bs(*(tuple(s) for s in shapes)))


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """Views of ``tensors`` broadcast to one shape."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def is_tensor(obj: object) -> "bool":
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> "int":
    return input.numel()


def is_floating_point(input: Tensor) -> "bool":
    return input.is_floating_point()


def allclose(input: Tensor, other: Tensor, rtol: "float" = 1e-05, atol: "float" = 1e-08,
             equal_nan: "bool" = False) -> "bool":
    """Whether all elements are close (``|a - b| <= atol + rtol * |b|``)."""
    import numpy as _np

    return _builtins.bool(_np.allclose(input.detach().numpy(force=True),
                                       other.detach().numpy(force=True), rtol=rtol, atol=atol,
                                       equal_nan=equal_nan))


def isclose(input: Tensor, other: Tensor, rtol: "float" = 1e-05, atol: "float" = 1e-08,
            equal_nan: "bool" = False) -> Tensor:
    d = _E.abs(_E.sub(input, other))
    ok = _E.le(d, _E.add(_E.mul(_E.abs(other), rtol), atol))
    if equal_nan:
        ok = _E.logical_or(ok, _E.logical_and(_E.isnan(input), _E.isnan(other)))
    return ok


def equal(input: Tensor, other: Tensor) -> "bool":
    """Same shape and same values."""
    return input.shape == other.shape and _builtins.bool(_R.all(_E.eq(input, other)).item())


def is_nonzero(input: Tensor) -> "bool":
    return _builtins.bool(input.item())


def detach(input: Tensor) -> Tensor:
    return input.detach()


import builtins as _builtins  # noqa: E402

opencl = _DeviceModule("opencl")
cpu = _DeviceModule("cpu")

from . import autograd, backends, plugins  # noqa: E402,F401
from . import nn, optim, utils  # noqa: E402,F401
from .serialization import load, save  # noqa: E402


def __getattr__(name: str) -> object:
    # `pg.<device type>` for plugin device types (pg.mydev.device_count() ...)
    from .plugins.manager import device_types

    if not name.startswith("_") and name in device_types():
        mod = _DeviceModule(name)
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'portagrad' has no attribute '{name}'")


__all__ = sorted(n for n in list(globals()) if not n.startswith("_") and n not in (
    "annotations",))
