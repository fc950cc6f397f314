"""The Tensor class: a strided view of a storage, plus its autograd state.

Math methods and operators (``add``, ``sum``, ``view``, ``+``...) are declared in its base class,
:class:`portagrad._tensor_api.TensorOps`; this module holds the data model, conversion, autograd
entry points and ``repr``.
"""
from __future__ import annotations

import builtins
import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeVar

import numpy as np

from . import _dlpack, _dtype, _memory_format
from ._format import format_tensor
from .storage import LEGACY_STORAGE_CLASSES, TypedStorage, UntypedStorage, buffer_address
from ._storage import AllocatedStorage, Size, Storage
from ._tensor_api import TensorOps
from .autograd import grad_mode
from .autograd.function import AccumulateGrad, RemovableHandle, _HookDict
from .backends.interface import View

if TYPE_CHECKING:
    from ._device import device

__all__ = ["Tensor"]

_new = object.__new__
_flags = grad_mode._flags  # the thread-local grad-mode flags (one object, bound once)
_INFERENCE_ACTIVE = grad_mode._inference_blocks  # empty: no thread is in inference mode

_T = TypeVar("_T", bound="Tensor")


class Tensor(TensorOps):
    """A multi-dimensional array on a device, with autograd (``torch.Tensor``)."""

    __slots__ = ("_storage", "_v", "_vc", "_requires_grad", "_grad", "_grad_fn", "_output_nr",
                 "_base", "_hooks", "_retains_grad", "_accum", "_inference", "_view_ver", "_views",
                 "__weakref__", "__dict__")
    # the slots' types (declarations only: no class attributes, so no clash with __slots__)
    _storage: Storage
    _v: View
    _vc: list[int]  # the version counter, shared by views of one storage
    _requires_grad: bool
    _grad: Tensor | None
    _grad_fn: Any  # the autograd Node that made this tensor, or None for leaves
    _output_nr: int
    _base: Tensor | None
    _hooks: _HookDict | None
    _retains_grad: bool
    _accum: weakref.ref[AccumulateGrad] | None
    _inference: bool
    _view_ver: int | None
    _views: list[weakref.ref[Tensor]] | None

    # NOTE: users build tensors with pg.tensor/pg.zeros...; Tensor(...) mirrors torch.Tensor(sizes)
    # (its __init__ is TensorOps.__init__: it needs the factories)
    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        self = object.__new__(cls)
        return self

    # --------------------------------------------------------------- construction
    @classmethod
    def _make(cls, storage: Storage, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
              dtype: _dtype.dtype, vc: list[int] | None = None, base: Tensor | None = None
              ) -> Tensor:
        self = object.__new__(cls)
        if storage._epoch is not None:
            storage._epoch = None  # a second tensor over owned memory: nobody owns it alone now
        self._storage = storage
        self._v = View(storage.buffer, offset, shape, strides, dtype)
        self._vc = vc if vc is not None else [0]
        self._requires_grad = False
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._base = base
        self._hooks = None
        self._retains_grad = False
        self._accum = None
        self._inference = grad_mode._flags.inference
        self._view_ver = None  # version at which a differentiable view was made (else None)
        self._views = None  # weakrefs to differentiable views of this (constant) base
        return self

    @staticmethod
    def _fresh(buffer: Any, nbytes: int, device: Any, backend: Any, index: int, epoch: int | None,
               shape: tuple[int, ...], strides: tuple[int, ...], dtype: _dtype.dtype,
               cache: Any) -> Tensor:
        """A plain tensor over all of a new buffer (an op's result, for ``_raw.new_on``): its
        :class:`AllocatedStorage` stamped with ``epoch``, its View and the tensor, in one call
        and by setters (a Python ``__init__`` reached through ``type.__call__`` is not inlined
        by the interpreter, and each call here runs for every result). Sets every slot, as
        :meth:`_make` (a test holds them equal; ``_raw.binary_views`` has an inlined copy of
        this body, kept in step by the same test). ``cache``: the View's backend handle where the
        backend's ``allocate_array`` made the buffer (the array itself), else None."""
        st = AllocatedStorage()  # (its pinned and shared are class-level False)
        st.buffer = buffer
        st.nbytes = nbytes
        st.device = device
        st.backend = backend
        st.index = index
        st._epoch = epoch
        self = _new(Tensor)
        self._storage = st
        self._v = v = _new(View)
        v.buffer = buffer
        v.offset = 0
        v.shape = shape
        v.strides = strides
        v.dtype = dtype
        v.cache = cache
        self._vc = [0]
        self._requires_grad = False
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._base = None
        self._hooks = None
        self._retains_grad = False
        self._accum = None
        self._inference = _flags.inference if _INFERENCE_ACTIVE else False
        self._view_ver = None
        self._views = None
        return self

    def _set_from(self, other: Tensor) -> None:
        other._storage._epoch = None  # shared with ``other`` from now on
        self._storage = other._storage
        self._v = other._v
        self._vc = other._vc
        self._requires_grad = False
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._base = None
        self._hooks = None
        self._retains_grad = False
        self._accum = None
        self._inference = other._inference
        self._view_ver = None
        self._views = None

    def _view_of(self, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> Tensor:
        """A raw (unrecorded) view sharing storage and version counter."""
        base = self._base if self._base is not None else self
        t = Tensor._make(self._storage, offset, shape, strides, self._v.dtype, self._vc, base)
        if grad_mode._flags.grad:
            # a differentiable view: if its base changes in place later, its grad_fn is rebuilt
            t._view_ver = self._vc[0]
            if not base._requires_grad:
                views = base._views
                if views is None:
                    views = base._views = []
                elif len(views) >= 64 and len(views) & (len(views) - 1) == 0:
                    views[:] = [r for r in views if r() is not None]
                views.append(weakref.ref(t))
        return t

    def _refresh_view_grad_fn(self) -> Any:
        """The base of this view changed in place since the view was made: point the view's
        ``grad_fn`` at the base's current history (``AsStridedBackward0``), as PyTorch does."""
        base = self._base
        assert base is not None  # only views are refreshed
        self._view_ver = self._vc[0]
        if base._grad_fn is None and not base._requires_grad:
            return self._grad_fn
        with grad_mode.enable_grad():
            v = base.as_strided(self._v.shape, self._v.strides, self._v.offset)
        self._grad_fn, self._output_nr, self._requires_grad = v._grad_fn, 0, True
        return self._grad_fn

    def _alias(self) -> Tensor:
        """A detached alias: same storage, view and version counter, no autograd history."""
        return Tensor._make(self._storage, self._v.offset, self._v.shape, self._v.strides,
                            self._v.dtype, self._vc, self._base)

    def _alias_with_grad_fn(self, node: Any, nr: int) -> Tensor:
        t = self._alias()
        t._grad_fn = node
        t._output_nr = nr
        t._requires_grad = True
        return t

    def _accumulate_node(self) -> AccumulateGrad:
        node = self._accum() if self._accum is not None else None
        if node is None:
            node = AccumulateGrad(self)
            if self._hooks:
                node._tensor_hooks = {0: self._hooks}
            self._accum = weakref.ref(node)
            self.__dict__["_accum_strong"] = node  # the leaf keeps its node alive (as torch)
        return node

    # ----------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        """The size of each dimension."""
        return Size(self._v.shape)

    def size(self, dim: int | None = None) -> Any:
        """``shape``, or the size of one dimension."""
        if dim is None:
            return Size(self._v.shape)
        return self._v.shape[self._wrap_dim(dim)]

    def stride(self, dim: int | None = None) -> Any:
        """Strides in elements (all, or of one dimension)."""
        if dim is None:
            return self._v.strides
        return self._v.strides[self._wrap_dim(dim)]

    def storage_offset(self) -> int:
        """Offset of the first element in the storage, in elements."""
        return self._v.offset

    def data_ptr(self) -> int:
        """A number naming the first element's memory (``torch.Tensor.data_ptr``): the storage's
        :meth:`~portagrad.UntypedStorage.data_ptr` plus the offset in bytes, so tensors and views
        that start at the same element of the same memory give the same number, and others
        different ones. It identifies memory; it is not an address to hand to C code (device
        buffers have none on the host)."""
        return buffer_address(self._storage.buffer, self._storage.nbytes) + \
            self._v.offset * self._v.dtype.itemsize

    def const_data_ptr(self) -> int:
        """:meth:`data_ptr` (PyTorch's read-only form of it; the number is the same)."""
        return self.data_ptr()

    def record_stream(self, stream: Any) -> None:
        """Raises ``NotImplementedError``, as PyTorch does for CPU tensors: portagrad's devices
        have no side streams (each runs its work in order on one queue, so memory is never
        reused while queued work still reads it) and no stream objects to pass here."""
        raise NotImplementedError(f"record_stream: {self.device} tensors have no streams to "
                                  f"record (portagrad devices run in order on one queue)")

    def module_load(self, other: Tensor, assign: bool = False) -> Tensor:
        """How ``Module.load_state_dict`` turns the state dict's ``other`` into this parameter's
        new value when swapping tensors: ``other.detach()`` if ``assign``, else
        ``self.copy_(other).detach()``; a subclass may override it."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    @property
    def dtype(self) -> _dtype.dtype:
        return self._v.dtype

    @property
    def device(self) -> device:
        return self._storage.device

    @property
    def is_cuda(self) -> bool:
        return False

    def cuda(self, device: Any = None, non_blocking: bool = False, memory_format: Any = None
             ) -> Tensor:
        """``self`` on a ``cuda`` device: without a backend for it, the error PyTorch raises
        without CUDA (an ``AssertionError``)."""
        dev = "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
        return self.to(dev, non_blocking=non_blocking)

    @property
    def is_cpu(self) -> bool:
        return self._storage.device.type == "cpu"

    @property
    def ndim(self) -> int:
        return len(self._v.shape)

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._v.shape)

    ndimension = dim

    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for s in self._v.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._v.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._v.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._v.dtype.itemsize

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements are laid out without gaps in C order (``contiguous_format``, the
        default; ``preserve_format`` asks the same), or in the dimension order of
        ``channels_last`` (N, H, W, C: a 4-D tensor's channels innermost) or
        ``channels_last_3d`` (N, D, H, W, C), as PyTorch's: those are never true of a tensor of
        another rank, and dimensions of size 1 are not checked."""
        if memory_format is None or memory_format is _memory_format.contiguous_format \
                or memory_format is _memory_format.preserve_format:
            return self._v.is_contiguous()
        if not isinstance(memory_format, _memory_format.memory_format):
            raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                            f"torch.memory_format, not {type(memory_format).__name__}")
        order = _CHANNELS_LAST_ORDERS.get(memory_format.name)
        shape, strides = self._v.shape, self._v.strides
        if order is None or len(order) != len(shape):
            return False
        expected = 1
        for d in order:  # innermost first
            if shape[d] == 1:
                continue
            if strides[d] != expected:
                return False
            expected *= shape[d]
        return True

    def is_floating_point(self) -> bool:
        return self._v.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._v.dtype.is_complex

    def is_signed(self) -> bool:
        return self._v.dtype.is_signed

    def is_inference(self) -> bool:
        """Whether this tensor was created in ``inference_mode``."""
        return self._inference

    def is_pinned(self) -> bool:
        """Whether this CPU tensor lives in page-locked memory."""
        return self._storage.pinned

    def is_shared(self) -> bool:
        return self._storage.shared

    def untyped_storage(self) -> Any:
        """The memory this tensor is a view of (shared by all its views)."""
        return UntypedStorage._wrap(self._storage)

    def storage(self) -> Any:
        """The memory this tensor is a view of, as elements of its dtype (a
        :class:`~portagrad.TypedStorage`); deprecated in PyTorch, which warns as here."""
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter to "
                      "you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=2)
        return TypedStorage._wrap(self._storage, self.dtype)

    def storage_type(self) -> Any:
        """The legacy storage class of this tensor's dtype (``portagrad.FloatStorage`` for
        float32)."""
        if self.dtype.name not in LEGACY_STORAGE_CLASSES:
            raise TypeError(f"storage_type(): no storage class for {self.dtype}")
        return LEGACY_STORAGE_CLASSES[self.dtype.name]

    @property
    def _version(self) -> int:
        """The version counter, bumped by every in-place change to the storage via any view."""
        return self._vc[0]

    def _wrap_dim(self, dim: int, ndim: int | None = None) -> int:
        n = len(self._v.shape) if ndim is None else ndim
        if not isinstance(dim, int):
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
        lo, hi = (-1, 0) if n == 0 else (-n, n - 1)
        if dim < lo or dim > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {dim})")
        return dim + n if dim < 0 else (0 if n == 0 else dim)

    def _type_description(self) -> str:
        names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor",
                 "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor",
                 "bfloat16": "BFloat16Tensor", "complex64": "ComplexFloatTensor",
                 "complex128": "ComplexDoubleTensor"}
        return f"{self.device} {names[self.dtype.name]} [{', '.join(map(str, self.shape))}]"

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """Without arguments, the type name (``portagrad.FloatTensor``); with a dtype,
        ``to(dtype)``; with a legacy type (``pg.FloatTensor``, ``"torch.FloatTensor"``), the
        tensor as that CPU type, as PyTorch."""
        if dtype is None:
            return "portagrad." + self._type_description().split()[1]
        legacy = getattr(dtype, "_dtype_name", None)  # a pg.<X>Tensor class
        if legacy is not None or isinstance(dtype, str):
            dt = dtype.dtype if legacy is not None else _legacy_type_dtype(dtype)
            return self.to(device="cpu", dtype=dt, non_blocking=non_blocking)
        return self.to(dtype, non_blocking=non_blocking)

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place (freeze or unfreeze parameters)."""
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                                   "you want to use a computed variable in a subgraph that doesn't "
                                   "require differentiation use var_no_grad = var.detach().")
            return self
        if requires_grad and not (self._v.dtype.is_floating_point or self._v.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        if requires_grad and self._inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        """The node that created this tensor (``None`` for leaves)."""
        if self._base is not None and self._view_ver is not None and self._view_ver != self._vc[0]:
            return self._refresh_view_grad_fn()
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True for tensors not created by a recorded op (user-created or ``requires_grad=False``)."""
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        """Accumulated gradient (leaves, and non-leaves after ``retain_grad()``)."""
        if self._grad_fn is not None and not self._retains_grad and self._requires_grad:
            import warnings

            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be populated "
                          "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                          UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            sparse = getattr(value.__class__, "is_sparse", None) is True  # a sparse COO grad
            if sparse:
                # (SparseCooTensor's: the optimizers look for sparse grads from now on)
                value._note_grad()  # type: ignore[attr-defined]
            elif not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' "
                                   f"to a tensor of size '{list(self.shape)}'. Please ensure that "
                                   f"the gradient and the tensor are the same size")
            expected = self.dtype if self._grad_fn is not None else self.grad_dtype
            if expected is not None and value.dtype is not expected:
                names = _dtype.SCALAR_TYPE_NAMES
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype "
                    f"'{names[value.dtype.name].lower()}' to a tensor with grad_dtype "
                    f"'{names[expected.name]}'. The gradient must match the tensor's grad_dtype "
                    f"(defaults to the tensor's dtype). You can set the tensor's grad_dtype "
                    f"attribute with a specific dtype, or None to allow any dtype. Set grad_dtype "
                    f"with caution. Diverging the dtypes of a tensor and its gradient may break "
                    f"downstream systems that assume they match.")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: "
                                   f"{value.device} vs {self.device}")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def grad_dtype(self) -> Any:
        """The dtype gradients accumulated into this leaf's ``.grad`` are cast to (its dtype by
        default; ``None``: kept as they arrive), and that an assigned ``.grad`` must have. Leaves
        only."""
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self.__dict__.get("_grad_dtype", self.dtype)

    @grad_dtype.setter
    def grad_dtype(self, value: Any) -> None:
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, _dtype.dtype):
            raise TypeError(f"grad_dtype must be a torch.dtype or None, but got "
                            f"{type(value).__name__}")
        self.__dict__["_grad_dtype"] = value

    @property
    def data(self) -> Tensor:
        """A detached alias with its own version counter (changes to it are not seen by autograd)."""
        t = Tensor._make(self._storage, self._v.offset, self._v.shape, self._v.strides,
                         self._v.dtype, None, None)
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and not (value.dtype.is_floating_point or value.dtype.is_complex):
            # (an integer tensor that requires grad is a state autograd cannot use)
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        value._storage._epoch = None  # shared with ``value`` from now on
        self._storage = value._storage
        self._v = View(value._storage.buffer, value._v.offset, value._v.shape, value._v.strides,
                       value._v.dtype)

    def detach(self) -> Tensor:
        """A tensor sharing storage and version counter, cut from the graph."""
        t = self._alias()
        t._base = None  # not a differentiable view: autograd never rebases it
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph, in place (it becomes a leaf)."""
        if self._base is not None:  # any view, with or without autograd history (PyTorch's)
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are "
                               "using DistributedDataParallel (DDP) for training, and "
                               "gradient_as_bucket_view is set as True, gradients are views of "
                               "DDP buckets, and hence detach_() cannot be called on these "
                               "gradients. To fix this error, please refer to the "
                               "Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                               "solution.")
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor in backward (after all its hooks)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        node = self._grad_fn
        if node._retained is None:
            node._retained = {}
        node._retained[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Run ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces
        it. Hooks run in registration order; use the returned handle's ``remove()`` to drop it."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = _HookDict()
            node = self._accum() if self._accum is not None else None
            if node is not None:
                node._tensor_hooks = {0: self._hooks}
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = hook
        return h

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Run ``hook(self)`` after backward has accumulated a gradient into this leaf's ``.grad``
        (``torch.Tensor.register_post_accumulate_grad_hook``); its return value is ignored."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        node = self._accumulate_node()
        if node._post_hooks is None:
            node._post_hooks = _HookDict()
        h = RemovableHandle(node._post_hooks)
        node._post_hooks[h.id] = hook
        return h

    # ---------------------------------------------------------------- conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A numpy array sharing memory (CPU tensors); ``force=True`` copies from other devices."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        st = self._storage
        if st.device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {st.device} device type tensor to numpy. Use "
                                f"Tensor.cpu() to copy the tensor to host memory first.")
            return st.backend.to_host(self._v)
        arr = st.backend.host_array(self._v)
        if arr is None:
            arr = st.backend.to_host(self._v)
        else:
            st._epoch = None  # the array shares the memory: it is no longer autograd's alone
        return arr

    def _host(self) -> np.ndarray:
        """The values as a numpy array (a copy from devices, possibly shared on the CPU)."""
        st = self._storage
        arr = st.backend.host_array(self._v)
        return st.backend.to_host(self._v) if arr is None else arr

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self) -> Any:
        """Nested Python lists of the values (a number for a zero-dim tensor)."""
        return self._host().tolist()

    # numpy defers to the tensor's reflected operators: ``np.float32(2) * t`` is a Tensor (with
    # autograd history), not an ndarray made through __array__ (PyTorch's value too)
    __array_priority__ = 1000

    def __array__(self, dtype: Any = None, copy: builtins.bool | None = None) -> np.ndarray:
        """``np.asarray(t)``: a CPU tensor's memory, shared (PyTorch's refusals for tensors that
        require grad or live on another device; numpy 2's ``copy``)."""
        return _dlpack.array(self, dtype, copy)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None,
                   copy: builtins.bool | None = None) -> Any:
        """A DLPack capsule sharing a CPU tensor's memory (the Array API's ``__dlpack__``)."""
        return _dlpack.dlpack(self, stream=stream, max_version=max_version,
                              dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[_dlpack.DLDeviceType, int]:
        """``(DLPack device type, index)``: ``kDLCPU`` or ``kDLOpenCL``."""
        return _dlpack.dlpack_device(self)

    def __float__(self) -> float:
        self._one_element()
        return float(self._real_item("double"))

    def __int__(self) -> int:
        self._one_element()
        return int(self._real_item("int64_t"))

    def __complex__(self) -> complex:
        self._one_element()
        return complex(self.item())

    def _one_element(self) -> None:
        # Python's number protocols raise ValueError in PyTorch (item() a RuntimeError)
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def _real_item(self, ctype: str) -> Any:
        """The element as a real number: a complex one only when its imaginary part is 0
        (PyTorch's checked conversion, whose message names the C type)."""
        v = self.item()
        if isinstance(v, complex):
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
            return v.real
        return v

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous"
                               if self.numel() == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if not self._v.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._v.shape[0]

    def __iter__(self) -> Any:
        if not self._v.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        from .multiprocessing.reductions import reduce_tensor

        return reduce_tensor(self)

    def __copy__(self) -> Tensor:
        """``copy.copy(t)``: a new leaf over the same memory (offset and strides kept, so writes
        through either are seen by both), keeping ``requires_grad`` and the attributes set on
        ``t`` (the same objects), but not ``.grad`` or the history, as PyTorch's."""
        v = self._v
        new = Tensor._make(self._storage, v.offset, v.shape, v.strides, v.dtype)
        if type(self) is not Tensor:
            new = type(self)._from_tensor(new)
        new._requires_grad = self._requires_grad
        for k, val in self.__dict__.items():
            if not k.startswith("_accum"):  # (the leaf's own AccumulateGrad node)
                new.__dict__[k] = val
        return new

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy(t)``: a leaf over a copy of ``t``'s storage, with the same offset and
        strides; tensors copied together that shared a storage share its one copy (the storage's
        own ``__deepcopy__`` keeps one copy per storage in ``memo``), as PyTorch's."""
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        st = UntypedStorage._wrap(self._storage).__deepcopy__(memo)._storage
        v = self._v
        new = Tensor._make(st, v.offset, v.shape, v.strides, v.dtype)
        new = type(self)._from_tensor(new) if type(self) is not Tensor else new
        memo[id(self)] = new
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        for k, val in self.__dict__.items():
            if k not in ("_accum_strong",):
                import copy

                new.__dict__[k] = copy.deepcopy(val, memo)
        return new

    @classmethod
    def _from_tensor(cls: builtins.type[_T], t: Tensor) -> _T:  # `type` is Tensor.type here
        new = object.__new__(cls)
        new._set_from(t)
        return new

    # ---------------------------------------------------------------------- repr
    def __repr__(self) -> str:
        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return format(self.item(), spec)
        if spec:  # PyTorch formats only one-element (0-d) tensors with a spec
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)


# the dimensions of a channels-last layout from innermost to outermost (for is_contiguous)
_CHANNELS_LAST_ORDERS = {"channels_last": (1, 3, 2, 0), "channels_last_3d": (1, 4, 3, 2, 0)}

# PyTorch's legacy tensor type names (``FloatTensor`` ...) -> dtype names; the types themselves are
# in _legacy.py. Some dtypes may be missing from this build: looked up by name when used.
LEGACY_TYPE_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16",
                      "BFloat16": "bfloat16", "Long": "int64", "Int": "int32", "Short": "int16",
                      "Char": "int8", "Byte": "uint8", "Bool": "bool"}


def _legacy_type_dtype(name: str) -> _dtype.dtype:
    """The dtype of the CPU legacy type ``name`` (``"torch.FloatTensor"``,
    ``"portagrad.LongTensor"``); ``ValueError`` for an unknown name, as PyTorch."""
    short = name.split(".", 1)[1] if name.startswith(("torch.", "portagrad.")) else name
    if short.startswith("cuda."):
        raise AssertionError(f"Torch not compiled with CUDA enabled (portagrad has no CUDA "
                             f"backend; cannot convert to {name!r})")
    dt_name = LEGACY_TYPE_DTYPES.get(short[:-len("Tensor")]) if short.endswith("Tensor") else None
    if dt_name is None:
        raise ValueError(f"invalid type: '{name}'")
    dt = getattr(_dtype, dt_name, None)
    if not isinstance(dt, _dtype.dtype):
        raise TypeError(f"{name} needs the dtype pg.{dt_name}, which this version of portagrad "
                        f"does not have")
    return dt
