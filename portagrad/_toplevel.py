"""Top-level ``torch.*`` names that are not ops of their own: the math constants, the function
forms of the in-place methods (``pg.abs_(x)`` is ``x.abs_()``), the ``*_copy`` forms of the view
ops (a fresh contiguous tensor instead of a view), and a few helpers (``typename``,
``is_storage``, ``fill``, ``frombuffer``, ``from_file``, ``empty_permuted``).
"""
from __future__ import annotations

import builtins
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._creation import arange, empty, from_numpy, full_like
from ._dtype import dtype as _dtype_cls
from ._dtype import float64, get_default_dtype
from ._layout import strided
from ._memory_format import contiguous_format
from ._ops.stacking import split_with_sizes
from ._ops import complexnum as _complexnum
from ._ops.joining import chunk, split
from ._tensor import Tensor
from .storage import TypedStorage, UntypedStorage

__all__ = ["pi", "e", "inf", "nan", "newaxis", "INPLACE_METHOD_NAMES", "inplace_functions",
           "typename", "is_storage", "fill", "frombuffer", "from_file", "empty_permuted", "alias_copy",
           "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
           "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy",
           "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy",
           "view_copy", "range", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
           "is_distributed", "set_flush_denormal", "init_num_threads", "frobenius_norm", "cond",
           "conj_physical", "get_device_module"]

pi: float = math.pi
e: float = math.e
inf: float = math.inf
nan: float = math.nan
newaxis: None = None

# torch's top-level in-place functions that are exactly the Tensor method of the same name
# (torch.abs_(x) is x.abs_()); each is bound by `inplace_functions` below.
INPLACE_METHOD_NAMES: tuple[str, ...] = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
    "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_",
    "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "resize_as_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_",
)


def _inplace_function(name: str) -> Callable[..., Tensor]:
    method = getattr(Tensor, name)

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            # a sparse tensor carries its own version (the hook, looked up on this path only)
            hook = getattr(type(input), "_sparse_op", None)
            if hook is not None:
                return hook(name, method, input, *args, **kwargs)
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__wrapped__ = method  # type: ignore[attr-defined]  # one implementation: the method
    fn.__doc__ = f"``{name}(input, ...)``: the in-place method ``input.{name}(...)``."
    return fn


def inplace_functions() -> dict[str, Callable[..., Tensor]]:
    """``name -> function`` for every name of :data:`INPLACE_METHOD_NAMES` (the package exports
    them at top level)."""
    return {name: _inplace_function(name) for name in INPLACE_METHOD_NAMES}


def typename(obj: Any) -> str:
    """The type of ``obj`` as a string: ``x.type()`` for a tensor (``'portagrad.FloatTensor'``),
    else the qualified name (``'int'``, ``'collections.OrderedDict'``), as ``torch.typename``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage: what ``untyped_storage()`` or ``storage()`` return."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor shaped and typed like ``input`` holding ``value`` (a number or a 0-dim
    tensor, through which the gradient flows)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return value.to(device=input.device, dtype=input.dtype).expand(input.shape).clone(
            memory_format=contiguous_format)
    return full_like(input, value)


def frombuffer(buffer: Any, *, dtype: _dtype_cls, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D cpu tensor sharing memory with ``buffer`` (any object with the buffer protocol),
    read from ``offset`` bytes on, ``count`` elements (-1: all that follow)."""
    if not isinstance(dtype, _dtype_cls):
        raise TypeError(f"frombuffer(): argument 'dtype' must be portagrad.dtype, not "
                        f"{type(dtype).__name__}")
    view = memoryview(buffer)
    nbytes, item = view.nbytes, dtype.itemsize
    if nbytes <= 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if count == 0 or count < -1:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if count == -1:
        if (nbytes - offset) % item != 0:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (nbytes - offset) // item
    elif offset + count * item > nbytes:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({nbytes} bytes)")
    arr = np.frombuffer(view, dtype=dtype.numpy, count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reworded below for a buffer
        out = from_numpy(arr)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable; writing to the tensor is undefined "
                      "behaviour.", UserWarning, stacklevel=2)
    return out.requires_grad_(requires_grad) if requires_grad else out


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype: Any = None,
              layout: Any = None, device: Any = None, pin_memory: bool = False) -> Tensor:
    """A 1-D tensor of the first ``size`` elements of ``dtype`` (default: the default dtype)
    stored in the file. ``shared=True`` maps the file, so that writes to the (cpu) tensor change
    the file; otherwise the elements are read into a tensor of its own (on ``device``)."""
    dt = get_default_dtype() if dtype is None else dtype
    if not isinstance(dt, _dtype_cls):
        raise TypeError(f"from_file(): argument 'dtype' must be portagrad.dtype, not "
                        f"{type(dt).__name__}")
    if layout not in (None, strided):
        raise NotImplementedError(f"from_file(): layout={layout} is not supported")
    nbytes = int(size) * dt.itemsize
    if nbytes < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: size must "
                           f"not be negative")
    mode = "read-write" if shared else "read-only"
    try:
        have = os.path.getsize(filename)
    except OSError as exc:
        raise RuntimeError(f"unable to open file <{filename}> in {mode} mode: "
                           f"{exc.strerror} ({exc.errno})") from None
    if have < nbytes:
        raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required "
                           f"mapping size <{nbytes}>")
    if shared:
        target = "cpu" if device is None else str(device)
        if target != "cpu":
            raise RuntimeError(f"from_file(): shared=True maps the file into host memory; it "
                               f"cannot back a tensor on {target} (read it with shared=False)")
        if size == 0:
            return empty(0, dtype=dt)
        # a writable mapping: the tensor's memory is the file's pages
        return from_numpy(np.memmap(filename, dtype=dt.numpy, mode="r+", shape=(int(size),)))
    arr = np.fromfile(filename, dtype=dt.numpy, count=int(size))
    return from_numpy(arr).to(device=device) if device is not None else from_numpy(arr)


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   layout: Any = None, device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of logical shape ``size`` whose dimensions are laid out in memory
    in the order ``physical_layout`` (outermost first)."""
    size, perm = tuple(size), tuple(physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout {list(perm)} is not a "
                           f"permutation of 0..{len(size) - 1}")
    if layout is not None and layout is not strided:
        raise NotImplementedError(f"empty_permuted: only the strided layout is supported, got "
                                  f"{layout}")
    phys = empty([size[p] for p in perm], dtype=dtype, device=device, pin_memory=pin_memory)
    inverse = [perm.index(d) for d in builtins.range(len(size))]
    out = phys.permute(*inverse)
    return out.requires_grad_(True) if requires_grad else out


# --- the view-copy forms: the view op, then a contiguous copy (gradients flow through both)
def _copy(view: Tensor) -> Tensor:
    return view.clone(memory_format=contiguous_format)


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (the copy form of an alias)."""
    return _copy(input)


def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: int | None = None) -> Tensor:
    """``input.as_strided(size, stride, storage_offset)``, copied."""
    return _copy(input.as_strided(size, stride, storage_offset))


def detach_copy(input: Tensor) -> Tensor:
    """``input.detach()``, copied."""
    return _copy(input.detach())


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input.diagonal(offset, dim1, dim2)``, copied."""
    return _copy(input.diagonal(offset, dim1, dim2))


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """``input.expand(size)``, copied."""
    return _copy(input.expand(*size))


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input.permute(dims)``, copied."""
    return _copy(input.permute(*dims))


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)``, copied."""
    return _copy(input.select(dim, index))


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Tensor:
    """``input`` sliced ``start:end:step`` along ``dim``, copied."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    if input.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = dim + input.dim() if dim < 0 else dim
    if not 0 <= d < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.dim()}, {input.dim() - 1}], but got {dim})")
    index = (slice(None),) * d + (slice(start, end, step),)
    return _copy(input[index])


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> list[Tensor]:
    """``input.split(split_size, dim)``, each piece copied."""
    return [_copy(p) for p in input.split(split_size, dim)]


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                          ) -> list[Tensor]:
    """``input.split(split_sizes, dim)``, each piece copied."""
    return [_copy(p) for p in input.split(list(split_sizes), dim)]


def squeeze_copy(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """``input.squeeze(dim)``, copied."""
    return _copy(input.squeeze() if dim is None else input.squeeze(dim))


def t_copy(input: Tensor) -> Tensor:
    """``input.t()``, copied."""
    return _copy(input.t())


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input.transpose(dim0, dim1)``, copied."""
    return _copy(input.transpose(dim0, dim1))


def unbind_copy(input: Tensor, dim: int = 0) -> list[Tensor]:
    """``input.unbind(dim)``, each piece copied."""
    return [_copy(p) for p in input.unbind(dim)]


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``input.unfold(dimension, size, step)``, copied."""
    return _copy(input.unfold(dimension, size, step))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """``input.unsqueeze(dim)``, copied."""
    return _copy(input.unsqueeze(dim))


def view_copy(input: Tensor, size: Sequence[int] | _dtype_cls) -> Tensor:
    """``input.view(size)`` (or ``input.view(dtype)``), copied."""
    if isinstance(size, _dtype_cls):
        return _copy(input.view(size))
    return _copy(input.view(*size))


def range(start: float = 0, end: float | None = None, step: float = 1, *, dtype: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    """Deprecated: ``start, start + step, ...`` up to and including ``end`` (default dtype
    float, unlike :func:`arange`)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    out = arange(n, dtype=float64, device=device).mul_(step).add_(start)
    out = out.to(dtype if dtype is not None else get_default_dtype())
    return out.requires_grad_(True) if requires_grad else out


# PyTorch's unsafe forms skip a version check that portagrad's views keep: the same functions
# (as Tensor.unsafe_chunk ... are the same methods)
unsafe_chunk = chunk
unsafe_split = split
unsafe_split_with_sizes = split_with_sizes


def is_distributed(input: Tensor) -> bool:
    """``False``: tensors are never distributed objects (``pg.distributed`` moves copies)."""
    return False


def set_flush_denormal(mode: bool) -> bool:
    """Flushing denormals to zero is not supported (numpy has no switch for it): returns
    ``False``, as PyTorch does on a CPU without the feature."""
    return False


def init_num_threads() -> None:
    """Nothing to initialise: the thread pools are the BLAS's own (see ``set_num_threads``)."""


def frobenius_norm(input: Tensor, dim: Sequence[int] | int = (), keepdim: bool = False
                   ) -> Tensor:
    """Deprecated: the 2-norm over ``dim`` (all dimensions when empty)."""
    warnings.warn("frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    sq = input * input
    total = sq.sum(dims, keepdim=keepdim) if dims else sq.sum()
    return total.sqrt()


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
         operands: Sequence[Any] = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` (a bool or a one-element tensor) else
    ``false_fn(*operands)``, evaluated eagerly."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"a tensor of shape {tuple(pred.shape)}")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {type(pred).__name__}")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple or list, got {type(operands).__name__}")
    return true_fn(*operands) if pred else false_fn(*operands)


# the complex conjugate, materialised (a copy for real dtypes)
conj_physical = _complexnum.conj_physical


def get_device_module(device: Any = None) -> Any:
    """The device-type module of ``device`` (``pg.cpu``, ``pg.opencl``, ``pg.cuda`` ...); with
    ``None`` the current accelerator's, else ``pg.cpu``."""
    package = sys.modules["portagrad"]  # the modules are attributes of the loaded package
    if device is None:
        acc = package.accelerator.current_accelerator()
        kind = acc.type if acc is not None else "cpu"
    elif isinstance(device, (str, package.device)):
        kind = package.device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect portagrad.device, str, "
                           "or None")
    module = getattr(package, kind, None)
    if module is None:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'portagrad.{kind}'.")
    return module
