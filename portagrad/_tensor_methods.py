"""Attach the op layer to :class:`Tensor` as methods and operators (``x.sum()``, ``x + y``, ``x.add_``)."""
from __future__ import annotations

from typing import Any

from . import _dtype, _random
from ._ops import conversion as C
from ._ops import elementwise as E
from ._ops import indexing as I
from ._ops import joining as J
from ._ops import linalg as L
from ._ops import reduction as R
from ._ops import shape as S
from ._tensor import Tensor

__all__: list[str] = []


def _method(fn: Any) -> Any:
    def m(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    return m


_PLAIN = {
    # elementwise
    "add": E.add, "sub": E.sub, "subtract": E.sub, "mul": E.mul, "multiply": E.mul, "div": E.div,
    "divide": E.div, "true_divide": E.div, "floor_divide": E.floor_divide,
    "remainder": E.remainder, "fmod": E.fmod, "pow": E.pow, "maximum": E.maximum,
    "minimum": E.minimum, "atan2": E.atan2, "neg": E.neg, "negative": E.neg, "abs": E.abs,
    "absolute": E.abs, "sign": E.sign, "sgn": E.sign, "exp": E.exp, "expm1": E.expm1,
    "log": E.log, "log2": E.log2, "log10": E.log10, "log1p": E.log1p, "sqrt": E.sqrt,
    "rsqrt": E.rsqrt, "square": E.square, "sin": E.sin, "cos": E.cos, "tan": E.tan,
    "tanh": E.tanh, "sigmoid": E.sigmoid, "relu": E.relu, "erf": E.erf, "floor": E.floor,
    "ceil": E.ceil, "round": E.round, "trunc": E.trunc, "frac": E.frac,
    "reciprocal": E.reciprocal, "clamp": E.clamp, "clip": E.clamp, "lerp": E.lerp,
    "eq": E.eq, "ne": E.ne, "lt": E.lt, "le": E.le, "gt": E.gt, "ge": E.ge,
    "greater": E.gt, "less": E.lt, "greater_equal": E.ge, "less_equal": E.le, "not_equal": E.ne,
    "logical_not": E.logical_not, "logical_and": E.logical_and, "logical_or": E.logical_or,
    "logical_xor": E.logical_xor, "bitwise_and": E.bitwise_and, "bitwise_or": E.bitwise_or,
    "bitwise_xor": E.bitwise_xor, "bitwise_not": E.bitwise_not, "isnan": E.isnan,
    "isinf": E.isinf, "isfinite": E.isfinite, "nan_to_num": E.nan_to_num, "exp2": E.exp2,
    "logaddexp": E.logaddexp, "hypot": E.hypot, "signbit": E.signbit, "positive": E.positive,
    # reductions
    "sum": R.sum, "nansum": R.nansum, "mean": R.mean, "prod": R.prod, "max": R.max, "min": R.min,
    "amax": R.amax, "amin": R.amin, "aminmax": R.aminmax, "argmax": R.argmax, "argmin": R.argmin,
    "var": R.var, "std": R.std, "logsumexp": R.logsumexp, "norm": R.norm, "any": R.any,
    "all": R.all, "cumsum": R.cumsum, "count_nonzero": R.count_nonzero,
    # linear algebra
    "matmul": L.matmul, "mm": L.mm, "bmm": L.bmm, "dot": L.dot, "vdot": L.vdot, "inner": L.inner,
    "outer": L.outer, "ger": L.outer, "mv": L.mv, "addmm": L.addmm, "baddbmm": L.baddbmm,
    # views and shapes
    "view": S.view, "reshape": S.reshape, "view_as": S.view_as, "reshape_as": S.reshape_as,
    "expand": S.expand, "expand_as": S.expand_as, "broadcast_to": S.broadcast_to,
    "transpose": S.transpose, "swapaxes": S.transpose, "swapdims": S.transpose, "t": S.t,
    "permute": S.permute, "movedim": S.movedim, "moveaxis": S.movedim, "squeeze": S.squeeze,
    "unsqueeze": S.unsqueeze, "flatten": S.flatten, "unflatten": S.unflatten,
    "narrow": S.narrow, "select": S.select, "unbind": S.unbind, "as_strided": S.as_strided,
    # indexing
    "gather": I.gather, "scatter": I.scatter, "scatter_add": I.scatter_add,
    "index_select": I.index_select, "masked_fill": I.masked_fill,
    "masked_select": I.masked_select, "nonzero": I.nonzero, "flip": I.flip,
    "take_along_dim": I.take_along_dim, "index_add": I.index_add, "index_fill": I.index_fill,
    "index_copy": I.index_copy,
    # joining and order
    "split": J.split, "chunk": J.chunk, "tensor_split": J.tensor_split, "sort": J.sort,
    "argsort": J.argsort, "msort": J.msort, "topk": J.topk, "kthvalue": J.kthvalue,
    "median": J.median, "repeat": J.repeat, "tile": J.tile,
    "repeat_interleave": J.repeat_interleave, "roll": J.roll, "tril": J.tril, "triu": J.triu,
    # conversion
    "to": C.to, "clone": C.clone, "contiguous": C.contiguous, "type_as": C.type_as, "cpu": C.cpu,
}
for _name, _fn in _PLAIN.items():
    setattr(Tensor, _name, _method(_fn))

# in-place variants: computed by the out-of-place op, written into self (see conversion.inplace)
_BINARY_INPLACE = {
    "add_": E.add, "sub_": E.sub, "subtract_": E.sub, "mul_": E.mul, "multiply_": E.mul,
    "div_": E.div, "divide_": E.div, "true_divide_": E.div, "pow_": E.pow,
    "remainder_": E.remainder, "fmod_": E.fmod, "floor_divide_": E.floor_divide,
    "maximum_": E.maximum, "minimum_": E.minimum, "lerp_": E.lerp, "atan2_": E.atan2,
    "eq_": E.eq, "ne_": E.ne, "lt_": E.lt, "le_": E.le, "gt_": E.gt, "ge_": E.ge,
    "logical_and_": E.logical_and, "logical_or_": E.logical_or, "logical_xor_": E.logical_xor,
    "bitwise_and_": E.bitwise_and, "bitwise_or_": E.bitwise_or, "bitwise_xor_": E.bitwise_xor,
}
for _name, _fn in _BINARY_INPLACE.items():
    def _make_bin(fn: Any, name: str) -> Any:
        def m(self: Tensor, other: Any, *args: Any, **kwargs: Any) -> Tensor:
            if args:
                return E.unary_inplace(lambda t: fn(t, other, *args, **kwargs), self)
            if name in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_", "logical_and_", "logical_or_",
                        "logical_xor_"):
                return E.unary_inplace(lambda t: fn(t, other).to(t.dtype), self)
            return E.binary_inplace(fn, self, other, **kwargs)

        m.__name__ = name
        m.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
        return m

    setattr(Tensor, _name, _make_bin(_fn, _name))

_UNARY_INPLACE = {
    "neg_": E.neg, "negative_": E.neg, "abs_": E.abs, "sign_": E.sign, "exp_": E.exp,
    "expm1_": E.expm1, "log_": E.log, "log1p_": E.log1p, "log2_": E.log2, "log10_": E.log10,
    "sqrt_": E.sqrt, "rsqrt_": E.rsqrt, "square_": E.square, "sin_": E.sin, "cos_": E.cos,
    "tan_": E.tan, "tanh_": E.tanh, "sigmoid_": E.sigmoid, "relu_": E.relu, "erf_": E.erf,
    "floor_": E.floor, "ceil_": E.ceil, "round_": E.round, "trunc_": E.trunc, "frac_": E.frac,
    "reciprocal_": E.reciprocal, "clamp_": E.clamp, "clip_": E.clamp, "logical_not_": E.logical_not,
    "nan_to_num_": E.nan_to_num, "masked_fill_": I.masked_fill, "scatter_": I.scatter,
    "scatter_add_": I.scatter_add, "index_add_": I.index_add, "index_fill_": I.index_fill,
    "index_copy_": I.index_copy, "tril_": J.tril, "triu_": J.triu, "bitwise_not_": E.bitwise_not,
}
for _name, _fn in _UNARY_INPLACE.items():
    def _make_un(fn: Any, name: str) -> Any:
        def m(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
            if name == "logical_not_":
                return E.unary_inplace(lambda t: fn(t).to(t.dtype), self)
            return E.unary_inplace(fn, self, *args, **kwargs)

        m.__name__ = name
        m.__doc__ = f"In-place version of :meth:`{name[:-1]}`."
        return m

    setattr(Tensor, _name, _make_un(_fn, _name))


def _zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return _fill_(self, 0)


def _fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with ``value`` in place."""
    from . import _raw

    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        if value._requires_grad:
            return C.copy_(self, value.expand(self.shape))
        value = value.item()

    def raw_into(t: Tensor) -> None:
        from ._ops._common import to_scalar

        _raw.fill(t, to_scalar(value, t.dtype))

    def compute(old: Tensor) -> Tensor:
        from . import _creation

        return _creation.full(old.shape, value, dtype=old.dtype, device=old.device)

    return C.inplace(self, compute, raw_into)


Tensor.zero_ = _zero_
Tensor.fill_ = _fill_
Tensor.copy_ = lambda self, src, non_blocking=False: C.copy_(self, src, non_blocking)
Tensor.copy_.__doc__ = C.copy_.__doc__
Tensor.uniform_ = lambda self, a=0.0, b=1.0, *, generator=None: _random.uniform_(self, a, b,
                                                                                  generator=generator)
Tensor.normal_ = lambda self, mean=0.0, std=1.0, *, generator=None: _random.normal_(
    self, mean, std, generator=generator)


def _random_int_(self: Tensor, low: int = 0, high: int | None = None, *, generator: Any = None
                 ) -> Tensor:
    vals = _random.randint(low, high if high is not None else 2 ** 31, self.shape,
                           generator=generator, device=self.device)
    return C.copy_(self, vals)


Tensor.random_ = _random_int_


def _bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    u = _random.rand(self.shape, dtype=self.dtype if self.dtype.is_floating_point else None,
                     device=self.device, generator=generator)
    return C.copy_(self, E.lt(u, p).to(self.dtype))


Tensor.bernoulli_ = _bernoulli_
Tensor.bernoulli = lambda self, *, generator=None: _random.bernoulli(self, generator=generator)


def _exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    u = _random.rand(self.shape, dtype=self.dtype, device=self.device, generator=generator)
    return C.copy_(self, E.div(E.neg(E.log1p(E.neg(u))), lambd))


Tensor.exponential_ = _exponential_

# dtype shortcuts
for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("int", _dtype.int32), ("long", _dtype.int64), ("bool", _dtype.bool)):
    def _make_cast(dt: Any, name: str) -> Any:
        def m(self: Tensor, memory_format: Any = None) -> Tensor:
            return C.to(self, dtype=dt)

        m.__name__ = name
        m.__doc__ = f"``self.to({dt})``."
        return m

    setattr(Tensor, _name, _make_cast(_dt, _name))


def _new_factory(kind: str) -> Any:
    def m(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, **kw: Any) -> Tensor:
        from . import _creation

        dt = self.dtype if dtype is None else dtype
        dev = self.device if device is None else device
        if kind == "tensor":
            return _creation.tensor(size[0], dtype=dt, device=dev, requires_grad=requires_grad)
        if kind == "full":
            return _creation.full(size[0], size[1], dtype=dt, device=dev,
                                  requires_grad=requires_grad)
        return getattr(_creation, kind)(*size, dtype=dt, device=dev, requires_grad=requires_grad)

    m.__name__ = f"new_{kind}"
    return m


for _kind in ("zeros", "ones", "empty", "full", "tensor"):
    setattr(Tensor, f"new_{_kind}", _new_factory(_kind))


def _pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """A copy in page-locked host memory (for fast, asynchronous copies to devices)."""
    from . import _creation, _raw

    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if self.is_pinned():
        return self
    out = _creation.empty(self.shape, dtype=self.dtype, pin_memory=True)
    _raw.copy_into(out, self)
    return out


Tensor.pin_memory = _pin_memory


def _share_memory_(self: Tensor) -> Tensor:
    """Move the storage to shared memory: through ``portagrad.multiprocessing`` other processes
    then map the same memory (a no-op if already shared). Its ``.grad``, if any, is shared too."""
    from .multiprocessing.reductions import init_reductions, share_storage

    init_reductions()
    share_storage(self)
    if self._grad is not None:
        share_storage(self._grad)
    return self


Tensor.share_memory_ = _share_memory_


# ------------------------------------------------------------------ operators
def _binop(fn: Any, reflected: bool = False) -> Any:
    def op(self: Tensor, other: Any) -> Any:
        from ._ops._common import is_scalar

        if not isinstance(other, Tensor) and not is_scalar(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return op


def _fast_binop(fn: Any, prim: str, float_only: bool = False, reflected: bool = False) -> Any:
    """Operator with a fast path for the common cases, nothing to record: two tensors of one shape,
    dtype and device, or a tensor and a Python number that keeps the tensor's dtype (a float with
    a floating tensor, an int with an integer tensor). It goes straight to the backend primitive
    (a few microseconds per op); everything else takes the general path."""
    from . import _raw
    from ._ops._common import broadcast_shapes
    from ._ops.elementwise import _expanded_view as expanded_view
    from .autograd.grad_mode import _flags

    new_on = _raw.new_on
    slow = _binop(fn, reflected)

    def op(self: Tensor, other: Any) -> Any:
        cls = other.__class__
        sv = self._v
        if cls is Tensor:
            ov = other._v
            st = self._storage
            if (not reflected and sv.dtype is ov.dtype and st.device is other._storage.device
                    and not (_flags.grad and (self._requires_grad or other._requires_grad))
                    and (not float_only or sv.dtype.is_floating_point)
                    and not (prim == "sub" and sv.dtype is _dtype.bool)):  # sub raises on bools
                if sv.shape == ov.shape:
                    out = new_on(st, sv.shape, sv.dtype)
                    st.backend.binary(prim, sv, ov, out._v)
                    return out
                # broadcasting: stride-0 views straight to the primitive (no recorded expand)
                shape = broadcast_shapes(sv.shape, ov.shape)
                out = new_on(st, shape, sv.dtype)
                a = sv if sv.shape == shape else expanded_view(self, shape)
                b = ov if ov.shape == shape else expanded_view(other, shape)
                st.backend.binary(prim, a, b, out._v)
                return out
        elif ((cls is float and sv.dtype.is_floating_point)
              or (cls is int and sv.dtype._kind == 1 and not float_only)) \
                and not (_flags.grad and self._requires_grad):
            st = self._storage
            out = new_on(st, sv.shape, sv.dtype)
            if reflected:
                st.backend.binary(prim, other, sv, out._v)
            else:
                st.backend.binary(prim, sv, other, out._v)
            return out
        return slow(self, other)

    op.__name__ = f"__{'r' if reflected else ''}{prim}__"
    return op


Tensor.__add__ = _fast_binop(E.add, "add")
Tensor.__radd__ = _fast_binop(E.add, "add", reflected=True)
Tensor.__sub__ = _fast_binop(E.sub, "sub")
Tensor.__rsub__ = _fast_binop(E.sub, "sub", reflected=True)
Tensor.__mul__ = _fast_binop(E.mul, "mul")
Tensor.__rmul__ = _fast_binop(E.mul, "mul", reflected=True)
Tensor.__truediv__ = _fast_binop(E.div, "div", float_only=True)
Tensor.__rtruediv__ = _binop(E.div, True)
Tensor.__floordiv__ = _binop(E.floor_divide)
Tensor.__rfloordiv__ = _binop(E.floor_divide, True)
Tensor.__mod__ = _binop(E.remainder)
Tensor.__rmod__ = _binop(E.remainder, True)
Tensor.__pow__ = _binop(E.pow)
Tensor.__rpow__ = _binop(E.pow, True)
Tensor.__matmul__ = lambda self, other: L.matmul(self, other)
Tensor.__rmatmul__ = lambda self, other: L.matmul(other, self)
Tensor.__and__ = _binop(E.bitwise_and)
Tensor.__rand__ = _binop(E.bitwise_and, True)
Tensor.__or__ = _binop(E.bitwise_or)
Tensor.__ror__ = _binop(E.bitwise_or, True)
Tensor.__xor__ = _binop(E.bitwise_xor)
Tensor.__rxor__ = _binop(E.bitwise_xor, True)
Tensor.__eq__ = _binop(E.eq)
Tensor.__ne__ = _binop(E.ne)
Tensor.__lt__ = _binop(E.lt)
Tensor.__le__ = _binop(E.le)
Tensor.__gt__ = _binop(E.gt)
Tensor.__ge__ = _binop(E.ge)
Tensor.__neg__ = lambda self: E.neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: E.abs(self)
Tensor.__invert__ = lambda self: E.bitwise_not(self)
Tensor.__getitem__ = lambda self, key: I.getitem(self, key)
Tensor.__setitem__ = lambda self, key, value: I.setitem(self, key, value)
Tensor.__hash__ = lambda self: id(self)


def _iop(name: str) -> Any:
    def op(self: Tensor, other: Any) -> Any:
        return getattr(self, name)(other)

    return op


Tensor.__iadd__ = _iop("add_")
Tensor.__isub__ = _iop("sub_")
Tensor.__imul__ = _iop("mul_")
Tensor.__itruediv__ = _iop("div_")
Tensor.__ipow__ = _iop("pow_")
Tensor.__imod__ = _iop("remainder_")
Tensor.__ifloordiv__ = _iop("floor_divide_")
Tensor.__iand__ = _iop("bitwise_and_")
Tensor.__ior__ = _iop("bitwise_or_")
Tensor.__ixor__ = _iop("bitwise_xor_")

Tensor.T = property(lambda self: self.permute(*reversed(range(self.dim()))),
                    doc="All dimensions reversed.")
Tensor.mT = property(lambda self: self.transpose(-2, -1), doc="Last two dimensions swapped.")
Tensor.H = Tensor.T
