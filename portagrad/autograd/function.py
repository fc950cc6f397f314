"""Graph nodes and ``Function``: how an op records itself for backward.

Every differentiable op, built-in or user-defined, is a :class:`Function` subclass with static
``forward(ctx, ...)`` and ``backward(ctx, *grads)``. ``apply`` runs ``forward`` without recording and,
when an input requires grad, makes the ``ctx`` the output's ``grad_fn``: a :class:`Node` whose
``next_functions`` point at the inputs' nodes. Backward formulas are written with portagrad ops, so
they run on every backend and can themselves be differentiated (``create_graph=True``).
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NamedTuple
from collections.abc import Callable

from . import grad_mode
from ._profiling import STATE as _PROF
from ._profiling import op_name
from ._profiling import record as _prof_record
from .anomaly import _record_trace, _state as _anomaly_state
from . import _saved_hooks
from .grad_mode import _flags

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["Node", "Function", "FunctionCtx", "AccumulateGrad", "RemovableHandle", "once_differentiable",
           "GradientEdge"]

_seq = itertools.count()
_new = object.__new__
_ACCUMULATE_SEQ = 1 << 62  # above every op's sequence number
_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks: OrderedDict[int, Any]) -> None:
        self._hooks_ref = weakref.ref(hooks) if _weakrefable(hooks) else (lambda h=hooks: h)
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


class _HookDict(OrderedDict):
    """An OrderedDict that can be weakly referenced by handles."""


class GradientEdge(NamedTuple):
    """An edge of the backward graph: the node that receives a gradient and which of its inputs
    (``torch.autograd.graph.GradientEdge``; defined here, below the engine, which takes it)."""

    node: Any
    output_nr: int


class Node:
    """A node of the backward graph (what ``tensor.grad_fn`` returns)."""

    _name: str = "Node"

    # defaults live on the class so that making a node (once per recorded op) costs one attribute
    _next: tuple[tuple[Node | None, int], ...] = ()
    _tensor_hooks: dict[int, _HookDict] | None = None  # output_nr -> tensor hooks
    _retained: dict[int, Any] | None = None  # output_nr -> weakref(tensor) of retain_grad()
    _hooks: _HookDict | None = None  # node hooks: fn(grad_inputs, grad_outputs)
    _pre_hooks: _HookDict | None = None  # node pre-hooks: fn(grad_outputs)
    _anomaly: str | None = None  # forward traceback, recorded under detect_anomaly
    _out_meta: list | None = None  # per output: (shape, dtype, device), where known
    # whether backward is built-in code the engine trusts with its gradients (see _TRUSTED)
    _trusted = False

    def __init__(self) -> None:
        self._seq = next(_seq)

    def name(self) -> str:
        """The node's name, e.g. ``MulBackward0``."""
        return self._name

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """``((node, output_nr), ...)``, one per input of the forward op."""
        return self._next

    @property
    def metadata(self) -> dict:
        md = self.__dict__.get("_metadata")
        if md is None:
            md = self.__dict__["_metadata"] = {}
        return md

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node computed its gradients; a returned
        tuple replaces ``grad_inputs``."""
        if self._hooks is None:
            self._hooks = _HookDict()
        h = RemovableHandle(self._hooks)
        self._hooks[h.id] = fn
        return h

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; a returned tuple replaces ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = _HookDict()
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _add_tensor_hook(self, output_nr: int, fn: Callable[..., Any]) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.setdefault(output_nr, _HookDict())
        h = RemovableHandle(hooks)
        hooks[h.id] = fn
        return h

    def _num_outputs(self) -> int:
        return 1

    def _apply(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        raise NotImplementedError

    def _release(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def __call__(self, *grads: Any) -> Any:
        out = self._apply(grads)
        return out[0] if len(out) == 1 else out


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient into ``leaf.grad``."""

    _name = "AccumulateGrad"
    # Tensor.register_post_accumulate_grad_hook: fn(leaf) after each accumulation into .grad
    _post_hooks: _HookDict | None = None

    def __init__(self, leaf: Tensor) -> None:
        super().__init__()
        # the highest priority in the engine's ready queue (PyTorch gives AccumulateGrad the
        # largest sequence number too): a leaf's .grad is final as soon as its gradient is
        # summed, so its post-accumulate hooks (DDP launching a bucket's all-reduce) fire while
        # the rest of backward still computes, not after every other node
        self._seq = _ACCUMULATE_SEQ
        self._leaf_ref = weakref.ref(leaf)
        self._meta = (leaf._v.shape, leaf._v.dtype, leaf._storage.device)

    @property
    def variable(self) -> Tensor | None:
        return self._leaf_ref()

    def _leaf_meta(self) -> tuple | None:
        leaf = self._leaf_ref()
        return self._meta if leaf is None else (leaf._v.shape, leaf._v.dtype, leaf._storage.device)

    def _accumulate(self, grad: Tensor, create_graph: bool, epoch: int | None = None) -> None:
        """Add ``grad`` into the leaf's ``.grad``. ``epoch``: the allocation epoch of the engine's
        backward run, when ``grad`` is a gradient the engine owns (see :func:`_adoptable`); None
        when it must never be adopted."""
        leaf = self._leaf_ref()
        if leaf is None or grad is None:
            return
        if grad.__class__.is_sparse is True:
            _accumulate_sparse(leaf, grad)
            return
        # the leaf's grad_dtype: its dtype unless set (None: keep the gradient's own dtype)
        target = leaf.__dict__.get("_grad_dtype", leaf._v.dtype)
        if target is not None and grad._v.dtype is not target:
            grad = grad.to(target)
        old = leaf._grad
        if old is not None and old.__class__.is_sparse is True:
            # a dense gradient into a sparse .grad (Embedding(sparse=True) before): dense + sparse
            # is dense, as PyTorch's .grad becomes
            if create_graph:
                leaf._grad = grad + old
            else:
                with grad_mode._no_grad():
                    leaf._grad = grad + old
            return
        if create_graph:
            leaf._grad = grad.clone() if old is None else old + grad
        else:
            with grad_mode._no_grad():
                if old is None:
                    if epoch is not None and _adoptable(grad, leaf, epoch):
                        # nothing else can see this memory: it becomes .grad without a copy,
                        # and from now on the user can reach it
                        _raw().disown(grad)
                        v = grad._v
                        leaf._grad = (_Tensor or _tensor_cls())._make(grad._storage, 0, v.shape, v.strides,
                                                        v.dtype)
                        return
                    new = grad.detach().clone(memory_format="contiguous")
                    leaf._grad = new
                elif old._grad_fn is not None or old._requires_grad:
                    leaf._grad = (old + grad).detach()
                elif (old._v.shape == grad._v.shape and old._v.dtype is grad._v.dtype
                      and old._storage.device == grad._storage.device and not old._inference):
                    # the usual case: one backend call, in place (identical in/out views)
                    _raw().binary_("add", old, grad)
                else:
                    old.add_(grad)


def _accumulate_sparse(leaf: Tensor, grad: Any) -> None:
    """A sparse COO gradient into ``leaf.grad``: it becomes ``.grad`` (values in the leaf's dtype)
    when there is none, is appended to a sparse ``.grad`` (entries concatenated, uncoalesced, as
    PyTorch's sparse sum), and is added into a dense one."""
    if grad.dtype is not leaf._v.dtype:
        grad = grad.to(leaf.dtype)
    old = leaf._grad
    with grad_mode._no_grad():
        if old is None:
            leaf._grad = grad.detach()
        elif old.__class__.is_sparse is True:
            leaf._grad = old + grad.detach()
        else:
            old.add_(grad.to_dense())


def _adoptable(grad: Tensor, leaf: Tensor, epoch: int) -> bool:
    """Whether ``grad`` may become ``leaf.grad`` as it is (PyTorch steals such a gradient too).

    It must be a plain, contiguous, offset-0 tensor without autograd state, the same shape and
    device as the leaf, filling all of its storage -- and memory nothing but the engine can reach.
    That is tracked explicitly by the storage's ownership stamp (``_raw.owned``): ``_raw.new_on``
    set it during this backward run, so this is no tensor that existed before (saved, cached or
    held by the user); it is cleared when a second tensor is made over the storage
    (``Tensor._make``), its memory is handed out (``numpy()``), or the engine gives the gradient to
    code it does not trust (hooks, user-defined Functions) or delivers it twice.
    """
    st = grad._storage
    v = grad._v
    if (not _raw().owned(grad, epoch) or grad._base is not None
            or grad._grad_fn is not None or grad._requires_grad or grad._hooks or st.pinned
            or st.shared or v.offset != 0 or v.shape != leaf._v.shape
            or st.device != leaf._storage.device):
        return False
    nbytes = v.dtype.itemsize
    for n in v.shape:
        nbytes *= n
    return st.nbytes == nbytes and v.is_contiguous()


# The modules whose Functions the engine trusts with its gradients: their backward formulas run no
# user code and keep no reference to a gradient they receive or return (no caching of results),
# so what they return is fresh memory, the incoming gradients' own memory, or memory that existed
# before the backward run. A formula module that cannot promise this must not be listed.
# A Function defined anywhere else (a user's, nn's full-backward-hook function that calls the
# module hooks) is not trusted: the engine disowns its inputs and outputs.
_TRUSTED = ("portagrad._ops.", "portagrad.autograd.inplace")


class FunctionCtx:
    """What ``forward``/``backward`` receive as ``ctx``: save tensors and flags for backward."""

    needs_input_grad: tuple[bool, ...] = ()
    _name: str  # the node's name, from Node (BackwardFunction derives from both)
    _saved: list | None = None
    _released = False
    _materialize = True
    _dirty: tuple = ()
    _non_diff: tuple = ()

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Save tensors for ``backward``; their versions are checked when they are read back."""
        saved: list[tuple[Tensor, int, bool, int] | None] = []
        for i, t in enumerate(tensors):
            if t is None:
                saved.append(None)
                continue
            try:
                inference = t._inference
            except AttributeError:
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is "
                                f"of type {type(t).__name__}") from None
            if inference and not _flags.inference:
                raise RuntimeError(
                    "Inference tensors cannot be saved for backward. Please do not use Tensors "
                    "created in inference mode in computation tracked by autograd. To work around "
                    "this, you can make a clone to get a normal tensor and use it in autograd, or "
                    "use `portagrad.no_grad()` instead of `portagrad.inference_mode()`.")
            saved.append((t, t._vc[0], False, 0))
        self._saved = saved

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors given to ``save_for_backward``; raises if one was modified in place since."""
        if self._released:
            raise RuntimeError(_FREED)
        saved = self._saved
        if not saved:
            return ()
        out: list[Tensor | None] = []
        for entry in saved:
            if entry is None:
                out.append(None)
                continue
            if entry[1] is _saved_hooks.UNPACK:  # packed by a saved_tensors_hooks pack hook
                t = entry[4](entry[0])
                if entry[2]:
                    t = t._alias_with_grad_fn(self, entry[3])
                out.append(t)
                continue
            t, version, is_output, nr = entry
            if t._vc[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{t._type_description()}], which is output {nr} of "
                    f"{self._name if is_output else _producer(t)}, is at version {t._vc[0]}; "
                    f"expected version {version} instead. " + (
                        "Hint: the backtrace further above shows the operation that failed to "
                        "compute its gradient. The variable in question was changed in there or "
                        "anywhere later. Good luck!" if _anomaly_state.enabled else
                        "Hint: enable anomaly detection to find the operation that failed to "
                        "compute its gradient, with portagrad.autograd.set_detect_anomaly(True)."))
            if is_output:
                t = t._alias_with_grad_fn(self, nr)
            out.append(t)
        return tuple(out)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that ``forward`` modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that have no gradient (e.g. indices)."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With ``False``, ``backward`` receives ``None`` instead of zeros for unused outputs."""
        self._materialize = bool(value)


def _producer(t: Tensor) -> str:
    fn = t._grad_fn
    return fn.name() if fn is not None else "a leaf tensor"


class BackwardFunction(FunctionCtx, Node):
    """A node made by ``Function.apply``; it is also the ``ctx`` of forward and backward."""

    _fn_cls: type[Function]
    _nout = 1

    def __init__(self) -> None:  # (Function.apply makes nodes without calling this: keep in step)
        self._seq = next(_seq)

    def _num_outputs(self) -> int:
        return self._nout

    def _apply(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        if self._materialize:
            for g in grads:  # (not ``None in grads``: that would call Tensor.__eq__)
                if g is None:
                    grads = tuple(g if g is not None else self._zeros_for(i)
                                  for i, g in enumerate(grads))
                    break
        result = self._fn_cls.backward(self, *grads)
        if result.__class__ is not tuple:
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        nxt = self._next
        n_in = len(nxt)
        if len(result) != n_in:
            if len(result) > n_in and all(r is None for r in result[n_in:]):
                result = result[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_in}, got {len(result)})")
        i = 0
        for r in result:
            # (a sparse gradient, ``Embedding(sparse=True)``'s, goes to its leaf unchecked: it
            # is made for the table it indexes)
            if r is not None and r.__class__.is_sparse is not True:
                node, nr = nxt[i]
                if node is not None:
                    if node.__class__ is AccumulateGrad:
                        leaf = node._leaf_ref()  # (the leaf's own view: it may be re-set)
                        m = node._meta if leaf is None else (leaf._v.shape, leaf._v.dtype)
                        if r._v.shape != m[0] or r._v.dtype is not m[1]:
                            return self._fix_grads(result, i)
                    else:
                        meta = node._out_meta
                        om = meta[nr] if meta else None
                        if om is not None and (r._v.shape != om[0] or r._v.dtype is not om[1]):
                            return self._fix_grads(result, i)
            i += 1
        return result

    def _fix_grads(self, result: tuple, start: int) -> tuple:
        """Validate gradients against their inputs (as PyTorch's ``validate_outputs``): a
        gradient of another shape is summed to the input's shape when it broadcasts to it, a
        gradient of another dtype is cast; anything else is an error naming the function."""
        out = list(result)
        for i in range(start, len(out)):
            r = out[i]
            meta = _input_meta(self._next[i])
            if r is None or meta is None:
                continue
            shape, dtype, device = meta
            if r._v.shape != shape:
                if not _expandable(shape, r._v.shape):
                    raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                       f"index {i} - got {list(r._v.shape)} but expected shape "
                                       f"compatible with {list(shape)}")
                from .._ops.shape import sum_to_shape

                r = sum_to_shape(r, shape)
            if r._v.dtype is not dtype:
                r = r.to(dtype)
            if r._storage.device != device:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                                   f"{i} - expected device {device} but got {r.device}")
            out[i] = r
        return tuple(out)

    def _zeros_for(self, i: int) -> Any:
        from .. import _creation

        assert self._out_meta is not None  # set by Function.apply for nodes that zero-fill
        meta = self._out_meta[i]
        if meta is None:  # an output that is not a tensor (an int...): it has no gradient
            return None
        shape, dtype, device = meta
        return _creation.zeros(shape, dtype=dtype, device=device)

    def _release(self) -> None:
        # saved tensors go; reading them later raises the "backward a second time" error
        if self._saved is not None:
            self._saved = None
            self._released = True


def _input_meta(edge: tuple[Node | None, int]) -> tuple | None:
    """(shape, dtype, device) of the tensor an edge leads to, when known."""
    node = edge[0]
    if node is None:
        return None
    if isinstance(node, AccumulateGrad):
        return node._leaf_meta()
    meta = node._out_meta
    return meta[edge[1]] if meta else None


def _expandable(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    for a, b in zip(reversed(shape), reversed(to)):
        if a != b and a != 1:
            return False
    return True


class _FunctionMeta(type):
    def __init__(cls, name: str, bases: tuple, ns: dict) -> None:
        super().__init__(name, bases, ns)
        node_name = ns.get("_backward_name") or f"{name}Backward"
        cls._backward_cls = type(node_name, (BackwardFunction,), {
            "_fn_cls": cls, "_name": node_name,
            "_trusted": (cls.__module__ or "").startswith(_TRUSTED)})
        # a new-style Function: ``forward(*args)`` without ctx, then ``setup_context``
        sc = getattr(cls, "setup_context", None)
        cls._setup_ctx = sc is not None and not getattr(sc, "_pg_default", False)


_Tensor: Any = None  # portagrad.Tensor, bound on first use (it imports this module)
_RAW: Any = None  # portagrad._raw, likewise (it imports this module through _tensor)


def _raw() -> Any:
    """The :mod:`portagrad._raw` module: the autograd core's door to the backend."""
    global _RAW
    if _RAW is None:
        from .. import _raw as raw

        _RAW = raw
    return _RAW


def _tensor_cls() -> Any:
    global _Tensor
    from .._tensor import Tensor

    _Tensor = Tensor
    return Tensor


class Function(metaclass=_FunctionMeta):
    """Base class of differentiable operations (``torch.autograd.Function``).

    Subclasses define ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grad_outputs)`` as
    static methods and are called through ``MyFunction.apply(*args)``. ``backward`` returns one
    gradient (or ``None``) per ``forward`` argument.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple[Any, ...], output: Any) -> Any:
        """Overridden by a new-style Function: ``forward(*args)`` then takes no ``ctx`` and this
        saves what backward needs (``inputs``: forward's arguments, defaults included)."""
        raise NotImplementedError("setup_context is not implemented.")

    setup_context.__func__._pg_default = True  # type: ignore[attr-defined]
    _setup_ctx = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if cls._setup_ctx:
            return _apply_setup_context(cls, args, kwargs)
        T = _Tensor or _tensor_cls()
        ctx: BackwardFunction = _new(cls._backward_cls)  # (no __init__ call through type())
        ctx._seq = next(_seq)
        flags = _flags
        if flags.grad:
            record = False
            needs_l = []  # (a loop: a comprehension is a function call of its own in 3.11)
            for a in args:
                if a.__class__ is T or isinstance(a, T):
                    if a._requires_grad:
                        record = True
                        needs_l.append(True)
                        continue
                needs_l.append(False)
            needs = tuple(needs_l)
            ctx.needs_input_grad = needs
            flags.grad = False
            try:
                if _PROF.on:  # a profiler is recording
                    outputs = _prof_record(op_name(cls), args, cls.forward, ctx, *args,
                                           **kwargs)
                else:
                    outputs = cls.forward(ctx, *args, **kwargs)
            finally:
                flags.grad = True
        else:
            needs = (False,) * len(args)
            record = False
            ctx.needs_input_grad = needs
            if _PROF.on:
                outputs = _prof_record(op_name(cls), args, cls.forward, ctx, *args, **kwargs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if not record:
            return outputs
        return _wrap_outputs(ctx, args, outputs, T)


def _apply_setup_context(cls: type[Function], args: tuple, kwargs: dict) -> Any:
    """``Function.apply`` of a new-style Function (one that overrides ``setup_context``): as
    PyTorch, ``forward(*args, **kwargs)`` runs without ``ctx`` (and without recording), then
    ``setup_context(ctx, inputs, output)`` (``inputs`` with forward's defaults filled in)."""
    import inspect

    bound = inspect.signature(cls.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    args, kwargs = bound.args, bound.kwargs
    T = _Tensor or _tensor_cls()
    ctx: BackwardFunction = _new(cls._backward_cls)
    ctx._seq = next(_seq)
    needs = tuple(isinstance(a, T) and a._requires_grad for a in args)
    record = _flags.grad and any(needs)
    ctx.needs_input_grad = needs if _flags.grad else (False,) * len(args)

    def run(ctx: Any, *a: Any, **k: Any) -> Any:
        out = cls.forward(*a, **k)
        cls.setup_context(ctx, a, out)
        return out

    with grad_mode._no_grad():
        if _PROF.on:
            outputs = _prof_record(op_name(cls), args, run, ctx, *args, **kwargs)
        else:
            outputs = run(ctx, *args, **kwargs)
    if not record:
        return outputs
    return _wrap_outputs(ctx, args, outputs, T)


def _wrap_outputs(ctx: BackwardFunction, args: tuple, outputs: Any, T: Any) -> Any:
    """Make ``ctx`` the ``grad_fn`` of the outputs of a recorded ``forward``."""
    single = outputs.__class__ is not tuple
    outs = (outputs,) if single else outputs
    nxt = []
    for a in args:
        if isinstance(a, T):
            fn = a._grad_fn
            if a._base is not None:
                nxt.append(_edge(a))
            elif fn is not None:
                nxt.append((fn, a._output_nr))
            elif a._requires_grad:
                nxt.append((a._accumulate_node(), 0))
            else:
                nxt.append(_NO_EDGE)
        else:
            nxt.append(_NO_EDGE)
    ctx._next = tuple(nxt)
    ctx._nout = len(outs)
    if single and isinstance(outputs, T):
        v = outputs._v
        ctx._out_meta = [(v.shape, v.dtype, outputs._storage.device)]
    else:
        ctx._out_meta = [(o._v.shape, o._v.dtype, o._storage.device) if isinstance(o, T)
                         else None for o in outs]
    if single and not (ctx._dirty or ctx._non_diff) and isinstance(outputs, T) \
            and outputs._grad_fn is None and not _is_input(outputs, args):
        # the common case: one fresh output
        saved = ctx._saved
        if saved:
            for k, entry in enumerate(saved):
                if entry is not None and entry[0] is outputs:
                    saved[k] = (outputs._alias(), entry[1], True, 0)  # no tensor<->node cycle
        outputs._grad_fn = ctx
        outputs._requires_grad = True
        if outputs._base is not None:
            outputs._view_ver = outputs._vc[0]
        if _anomaly_state.enabled:
            ctx._anomaly = _record_trace()
        if _saved_hooks.ACTIVE[0] and saved:
            ctx._saved = _saved_hooks.pack_saved(saved)
        return outputs
    dirty_ids = {id(t) for t in ctx._dirty}
    non_diff_ids = {id(t) for t in ctx._non_diff}
    new_outs = []
    for i, o in enumerate(outs):
        if not isinstance(o, T):
            new_outs.append(o)
            continue
        if id(o) in non_diff_ids:
            if _is_input(o, args) and id(o) not in dirty_ids:
                o = o._alias()
            o._requires_grad = False
            new_outs.append(o)
            continue
        if id(o) in dirty_ids:
            if o._grad_fn is None and o._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                                   "operation.")
            if o._retains_grad:
                _move_retained(o, ctx, i)
        elif _is_input(o, args) or o._grad_fn is not None:
            o = o._alias()  # returning an input unchanged makes a new tensor (a view) as torch does
        o._grad_fn = ctx
        o._output_nr = i
        o._requires_grad = True
        _mark_view(o, args)
        new_outs.append(o)
    if ctx._saved:
        # a saved output would make a reference cycle tensor -> grad_fn -> tensor: keep a detached
        # alias (same storage and version counter) and rebuild the link when it is read back
        out_index = {id(o): i for i, o in enumerate(new_outs) if isinstance(o, T)}
        orig_index = {id(o): i for i, o in enumerate(outs) if isinstance(o, T)}
        fixed = []
        for entry in ctx._saved:
            if entry is not None:
                t = entry[0]
                nr = out_index.get(id(t), orig_index.get(id(t)))
                if nr is not None:
                    # a dirty input's version is the one after forward modified it
                    entry = (t._alias(), t._vc[0], True, nr)
            fixed.append(entry)
        ctx._saved = fixed
        if _saved_hooks.ACTIVE[0]:
            ctx._saved = _saved_hooks.pack_saved(fixed)
    if _anomaly_state.enabled:
        ctx._anomaly = _record_trace()
    return new_outs[0] if single else tuple(new_outs)


_NO_EDGE = (None, 0)


def _is_input(o: Any, args: tuple) -> bool:
    for a in args:
        if a is o:
            return True
    return False


def _mark_view(o: Tensor, args: tuple) -> None:
    """Remember the version at which a differentiable view was made (see ``Tensor.grad_fn``)."""
    if o._base is not None:
        o._view_ver = o._vc[0]


def _move_retained(t: Tensor, node: Node, nr: int) -> None:
    """``retain_grad`` follows a tensor to its new ``grad_fn`` after an in-place change."""
    old = t._grad_fn
    if old is not None and old._retained:
        old._retained.pop(t._output_nr, None)
    if node._retained is None:
        node._retained = {}
    node._retained[nr] = weakref.ref(t)


def _edge(t: Tensor) -> tuple[Node | None, int]:
    """The (node, output_nr) a gradient for ``t`` flows into."""
    fn = t._grad_fn
    if t._base is not None and t._view_ver is not None and t._view_ver != t._vc[0]:
        fn = t._refresh_view_grad_fn()
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (t._accumulate_node(), 0)
    return (None, 0)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for ``backward``: run it without recording (its result is not differentiable)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with grad_mode._no_grad():
            return fn(ctx, *args)

    return wrapper
