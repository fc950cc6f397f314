"""The backward engine: iterative, each node runs once after all its incoming gradients are summed.

1. Walk the graph from the roots (iteratively: a 100,000-op chain must not recurse) and count, for
   each node, how many edges point at it.
2. Run ready nodes, newest first (highest sequence number, as PyTorch), summing gradients per
   output in a buffer; a node becomes ready when its count reaches zero.
3. Before a node runs, the tensor hooks of each of its outputs run in registration order (a returned
   tensor replaces the gradient), then ``retain_grad`` stores the result; leaves accumulate into
   ``.grad`` in their :class:`AccumulateGrad` node.

``backward`` and ``grad`` (``portagrad.autograd``'s entry points) live here too. This package is
loaded while ``portagrad._tensor`` is (Tensor needs ``grad_mode`` and ``function``), before
``Tensor`` exists, so ``Tensor`` and the factories are imported where they are used.

Ownership: a leaf's ``.grad`` takes over the memory of a gradient the engine owns instead of
copying it. Each run opens an allocation epoch (``_raw.open_epoch``): memory allocated during the
run carries it. The engine disowns (``_raw.disown``) every gradient that code it does not trust can
reach -- what tensor hooks, node pre- and post-hooks and untrusted Functions (``Node._trusted``)
receive and return, gradients captured for ``autograd.grad`` or ``inputs=``, a ``retain_grad``
value kept as it is -- and a gradient a node hands to two edges at once; a second tensor made over
a storage clears its stamp too (``Tensor._make``). What is left is memory the engine alone holds
(see ``function._adoptable``).
"""
from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import grad_mode
from ._profiling import STATE as _PROF
from ._profiling import record_backward
from .anomaly import _check_nan, _state as _anomaly_state
from .function import AccumulateGrad, GradientEdge, Node, _edge

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["backward", "grad", "run_backward", "queue_callback", "in_restricted_backward"]


def _check_root(i: int, t: Tensor) -> None:
    if not t._requires_grad:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def _make_root_grads(tensors: Sequence[Tensor], grads: Sequence[Any], is_grads_batched: bool = False
                     ) -> list[Tensor]:
    late = _late()
    _creation, Tensor = late.creation, late.Tensor
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.is_floating_point():
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs "
                                   f"but got {t.dtype}")
            g = _raw().fill(_raw().new_like(t), 1)  # (ones_like without its argument parsing)
        elif not isinstance(g, Tensor):
            g = _creation.tensor(g, dtype=t.dtype, device=t.device)
        else:
            if g.shape != t.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} "
                                   f"and output[{i}] has a shape of {t.shape}.")
            if g.device != t.device:
                raise RuntimeError(f"invalid gradient at index {i} - expected device {t.device} "
                                   f"but got {g.device}")
            if g.dtype is not t.dtype:
                g = g.to(t.dtype)
        out.append(g)
    return out


class _Runs(threading.local):
    """Per thread, for each backward run in progress (innermost last): whether it was given
    ``inputs`` (``autograd.grad``, ``backward(inputs=...)``)."""

    restricted: list[bool]

    def __init__(self) -> None:
        self.restricted = []


_runs = _Runs()


def in_restricted_backward() -> bool:
    """Whether the innermost backward run on this thread differentiates toward given inputs
    (``autograd.grad`` or ``backward(inputs=...)``) rather than every leaf: a node whose backward
    runs a backward of its own (the reentrant checkpoint) cannot honour that restriction."""
    r = _runs.restricted
    return bool(r) and r[-1]


def run_backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Any], retain_graph: bool,
                 create_graph: bool, inputs: Sequence[Tensor] | None = None,
                 allow_unused: bool = True, accumulate: bool = True) -> list[Any]:
    """Run backward from ``tensors``. With ``accumulate`` leaves' ``.grad`` are updated (restricted
    to ``inputs`` if given); otherwise the gradients of ``inputs`` are returned (``autograd.grad``)."""
    _runs.restricted.append(inputs is not None)
    try:
        return _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs,
                             allow_unused, accumulate)
    finally:
        _runs.restricted.pop()


def _run_backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Any], retain_graph: bool,
                  create_graph: bool, inputs: Sequence[Tensor] | None,
                  allow_unused: bool, accumulate: bool) -> list[Any]:
    for i, t in enumerate(tensors):
        _check_root(i, t)
    root_grads = _make_root_grads(tensors, grad_tensors)

    roots = [_edge(t) for t in tensors]
    # targets: where to capture gradients (autograd.grad, backward(inputs=...)): the slots of
    # ``captured`` each (node, output_nr) fills (an input listed twice fills two)
    targets: dict[tuple[int, int], list[int]] = {}
    target_ids: set[int] = set()
    if inputs is not None:
        for k, t in enumerate(inputs):
            if t.__class__ is GradientEdge:
                node, nr = t.node, t.output_nr
            else:
                if not t._requires_grad:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
                node, nr = _edge(t)
            targets.setdefault((id(node), nr), []).append(k)
            target_ids.add(id(node))
    captured: list[Any] = [None] * (len(inputs) if inputs is not None else 0)

    # 1. dependency counts over the reachable graph (iterative: no recursion on long chains)
    deps: dict[int, int] = {}
    nodes: dict[int, Node] = {}
    stack = [n for n, _ in roots if n is not None]
    for n in stack:
        nodes[id(n)] = n
    while stack:
        node = stack.pop()
        for nxt, _ in node._next:
            if nxt is None:
                continue
            key = id(nxt)
            deps[key] = deps.get(key, 0) + 1
            if key not in nodes:
                nodes[key] = nxt
                stack.append(nxt)

    # 2. seed the buffers with the roots' gradients
    buffers: dict[int, list[Any]] = {}
    g: Any  # a gradient tensor, None, or the _NOTHING marker
    for (node, nr), g in zip(roots, root_grads):
        if node is None:
            continue
        buf = buffers.get(id(node))
        if buf is None:
            buf = buffers[id(node)] = [None] * node._num_outputs()
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    del root_grads  # the buffers hold them now: once consumed, they are freed
    g = None
    # with ``inputs`` only the nodes on a path to an input run (``needed``; as torch, a node
    # no input can be reached from is never queued: its hooks do not fire); an input's own node
    # that leads to no other input only has its tensor hooks run and its gradient captured
    # (``capture_only``: it is not executed, nor freed)
    needed: set[int] | None = None
    capture_only: set[int] | None = None
    if inputs is not None:
        needed = _nodes_reaching(nodes, target_ids)
        if accumulate:
            needed |= target_ids  # backward(inputs=...) runs the inputs' nodes (accumulates)
            capture_only = set()
        else:
            capture_only = target_ids - needed
    heap: list[tuple[int, int, Node]] = []
    for node, _ in roots:
        if node is not None and deps.get(id(node), 0) == 0 and id(node) in buffers:
            if needed is not None and id(node) not in needed and id(node) not in target_ids:
                continue
            heapq.heappush(heap, (-node._seq, id(node), node))
            deps[id(node)] = -1  # queued
    anomaly = _anomaly_state.enabled
    outer_callbacks = _callbacks.queue
    _callbacks.queue = []  # queue_callback() during this run appends here
    raw = _raw()
    epoch, prev_epoch = raw.open_epoch()
    own = None if create_graph else epoch  # (with create_graph nothing is adopted)
    prev_mode = grad_mode._flags.grad
    grad_mode._flags.grad = create_graph
    try:
        while heap:
            _, key, node = heapq.heappop(heap)
            grads = buffers.pop(key, None) or [None] * node._num_outputs()
            if targets and key in target_ids:
                # autograd.grad captures an input whose node runs (another input lies beyond it)
                # before its tensor hooks, one whose node does not run after them (as torch)
                if accumulate or key in capture_only:  # type: ignore[operator]
                    if node._tensor_hooks or node._retained:
                        grads = _run_tensor_hooks(node, grads, create_graph)
                    _capture(grads, key, targets, captured)
                    if not accumulate:
                        del grads
                        g = None
                        continue
                else:
                    _capture(grads, key, targets, captured)
                    if node._tensor_hooks or node._retained:
                        grads = _run_tensor_hooks(node, grads, create_graph)
            elif node._tensor_hooks or node._retained:
                grads = _run_tensor_hooks(node, grads, create_graph)
            if node._pre_hooks:
                for hook in list(node._pre_hooks.values()):
                    _disown_all(grads)
                    res = hook(tuple(grads))
                    if res is not None:
                        grads = list(res)
                _disown_all(grads)
            if node.__class__ is AccumulateGrad:
                if accumulate and (inputs is None or key in target_ids):
                    node._accumulate(grads[0], create_graph, own)
                    if node._post_hooks:
                        _run_post_accumulate_hooks(node)
                del grads
                g = None
                continue
            for g in grads:  # (a loop, not all(...) on a generator: this runs once per node)
                if g is not None:
                    break
            else:
                g = _NOTHING
            if g is _NOTHING:
                outs: Any = (None,) * len(node._next)  # nothing flows through: just pass on
            else:
                trusted = node._trusted
                if not trusted:  # user code: it may keep what it is given or returns
                    _disown_all(grads)
                try:
                    if _PROF.on:  # a profiler is recording
                        outs = record_backward(node, tuple(grads))
                    else:
                        outs = node._apply(tuple(grads))
                except Exception as exc:
                    if node._anomaly:
                        _annotate(exc, node)
                    raise
                if not trusted:
                    _disown_all(outs)
            if node._hooks:
                _disown_all(grads)
                for hook in list(node._hooks.values()):
                    _disown_all(outs)
                    res = hook(tuple(outs), tuple(grads))
                    if res is not None:
                        outs = tuple(res)
                _disown_all(outs)
            if anomaly:
                try:
                    _check_nan(node, outs)
                except RuntimeError as exc:
                    if node._anomaly:
                        _annotate(exc, node)
                    raise
            if not retain_graph:
                node._release()
            first = more = None  # the gradients this node hands on (see _disown_repeats)
            for (nxt, nr), g in zip(node._next, outs):
                if nxt is None:
                    continue
                nkey = id(nxt)
                if needed is not None and nkey not in needed and nkey not in target_ids:
                    continue  # leads to no input: never runs (its count never reaches zero)
                if g is not None:
                    if first is None:
                        first = g
                    else:
                        more = _disown_repeats(g, first, more)
                    buf = buffers.get(nkey)
                    if buf is None:
                        buf = buffers[nkey] = [None] * nxt._num_outputs()
                    old = buf[nr]
                    if old is None:
                        buf[nr] = g
                    elif old.__class__.is_sparse is not True:
                        buf[nr] = old + g
                    else:  # a sparse gradient first: sparse + sparse, or dense + sparse
                        buf[nr] = g + old
                d = deps[nkey] - 1
                deps[nkey] = d
                if d == 0:
                    heapq.heappush(heap, (-nxt._seq, nkey, nxt))
            # gradients are freed as soon as they are consumed: the node's incoming ones too,
            # before the next node runs
            outs = g = first = more = old = None
            del grads
        # end-of-backward callbacks, in order; one may queue more (they run too)
        queue = _callbacks.queue
        i = 0
        while i < len(queue):
            queue[i]()
            i += 1
    finally:
        _callbacks.queue = outer_callbacks
        grad_mode._flags.grad = prev_mode
        raw.close_epoch(prev_epoch)

    if inputs is not None and accumulate:
        # backward(inputs=[non_leaf]) accumulates into the non-leaf's .grad too
        for t, g in zip(inputs, captured):
            if g is not None and t.__class__ is not GradientEdge and t._grad_fn is not None:
                _store_grad(t, g, create_graph)
    if inputs is not None and not accumulate and not allow_unused:
        for g in captured:
            if g is None:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired behavior.")
    return captured


_NOTHING = object()  # marks a node that received no gradient at all


class _Callbacks(threading.local):
    """The end-of-backward callbacks of the backward run in progress on this thread (None outside
    backward; nested runs, e.g. a hook calling ``autograd.grad``, keep their own list)."""

    queue: list[Callable[[], None]] | None = None


_callbacks = _Callbacks()


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` when the backward pass in progress on this thread has finished running
    every node (``torch.autograd.Variable._execution_engine.queue_callback``): what a gradient
    hook uses to act once per backward, e.g. wait for the communication it started."""
    if _callbacks.queue is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _callbacks.queue.append(callback)


def _run_post_accumulate_hooks(node: AccumulateGrad) -> None:
    leaf = node._leaf_ref()
    if leaf is not None and node._post_hooks:
        for hook in list(node._post_hooks.values()):
            hook(leaf)


class _Late:
    """The modules above autograd the engine calls, bound on first use (autograd is loaded while
    ``portagrad._tensor`` is, before they exist): one lookup instead of an import per call."""

    raw: Any = None  # portagrad._raw
    creation: Any = None  # portagrad._creation
    Tensor: Any = None  # portagrad.Tensor


def _late() -> type[_Late]:
    if _Late.raw is None:
        from .. import _creation, _raw, _tensor

        _Late.creation, _Late.Tensor, _Late.raw = _creation, _tensor.Tensor, _raw
    return _Late


def _raw() -> Any:
    return (_Late.raw or _late().raw)


def _disown_all(grads: Any) -> None:
    """The gradients in ``grads`` become reachable outside the engine (entries that are not
    tensors, e.g. None, are skipped)."""
    Tensor = _late().Tensor
    disown = _raw().disown
    for g in grads:
        if isinstance(g, Tensor):
            disown(g)


def _disown_repeats(g: Any, first: Any, more: list | None) -> list:
    """A node hands on ``g`` after ``first`` (and ``more``): disown it if it is one of them
    (``AddBackward`` returns ``(g, g)``: a leaf adopting it would alias the other edge's
    gradient). Returns the gradients handed on so far after ``first``. Only nodes with two or more
    gradients call this."""
    if g is first or (more is not None and any(m is g for m in more)):
        _raw().disown(g)
    if more is None:
        return [g]
    more.append(g)
    return more


def _store_grad(t: Tensor, g: Any, create_graph: bool) -> None:
    if create_graph:
        if t._grad is None:
            _disown_all((g,))  # the user's .grad now
        t._grad = g if t._grad is None else t._grad + g
    else:
        with grad_mode._no_grad():
            t._grad = g.detach().clone() if t._grad is None else t._grad + g


def _capture(grads: list[Any], key: int, targets: dict[tuple[int, int], list[int]],
             captured: list[Any]) -> None:
    """Store the gradients of a node's outputs that are inputs of ``grad``/``backward``."""
    for nr, g in enumerate(grads):
        slots = targets.get((key, nr))
        if slots is not None:
            for slot in slots:
                captured[slot] = g
            _disown_all((g,))  # returned to the caller or stored as a .grad


def _nodes_reaching(nodes: dict[int, Node], target_ids: set[int]) -> set[int]:
    """Ids of the nodes from which a target can be reached through one edge or more
    (``autograd.grad`` runs only those; a target is in it only if another target lies beyond)."""
    reach: dict[int, bool] = {}
    for start in nodes.values():
        if id(start) in reach:
            continue
        stack = [(start, False)]
        while stack:  # iterative post-order
            n, done = stack.pop()
            key = id(n)
            if done:
                reach[key] = any(
                    nxt is not None and (id(nxt) in target_ids or reach.get(id(nxt), False))
                    for nxt, _ in n._next)
                continue
            if key in reach:
                continue
            stack.append((n, True))
            for nxt, _ in n._next:
                if nxt is not None and id(nxt) not in reach:
                    stack.append((nxt, False))
    return {k for k, v in reach.items() if v}


def _run_tensor_hooks(node: Node, grads: list[Any], create_graph: bool) -> list[Any]:
    hooks_by_output = node._tensor_hooks
    if hooks_by_output:
        for nr, hooks in hooks_by_output.items():
            for hook in list(hooks.values()):
                g = grads[nr]
                if g is None:
                    break
                _disown_all((g,))  # the hook sees it (and may keep it, or return it)
                res = hook(g)
                if res is not None:
                    if not isinstance(res, _Late.Tensor):
                        raise TypeError(f"expected Variable, but hook returned "
                                        f"'{type(res).__name__}'")
                    if res._v.shape != g._v.shape:
                        name = getattr(hook, "__name__", repr(hook))
                        raise RuntimeError(f"hook '{name}' has changed the size of value")
                    if res._v.dtype is not g._v.dtype:
                        name = getattr(hook, "__name__", repr(hook))
                        raise RuntimeError(f"hook '{name}' has changed the type of value (was "
                                           f"{g.type()} got {res.type()})")
                    if res._storage.device != g._storage.device:
                        name = getattr(hook, "__name__", repr(hook))
                        raise RuntimeError(f"hook '{name}' has changed the device of value (was "
                                           f"{g.device} got {res.device})")
                    _disown_all((res,))
                    grads[nr] = res
    retained = node._retained
    if retained:
        # retain_grad() stores the gradient after all of the tensor's hooks (PyTorch 2.x)
        for nr, ref in retained.items():
            t = ref()
            g = grads[nr]
            if t is not None and g is not None:
                _store_grad(t, g, create_graph)
    return grads


def _annotate(exc: Exception, node: Node) -> None:
    import warnings

    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{node._anomaly}", UserWarning, stacklevel=3)


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    if isinstance(x, _Late.Tensor or _late().Tensor) or x.__class__ is GradientEdge:
        return (x,)
    return tuple(x)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves."""
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    ins = _as_tuple(inputs) if inputs is not None else None
    if ins is not None and not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grads, retain_graph, create_graph, inputs=ins, accumulate=True)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Return the gradients of ``outputs`` w.r.t. ``inputs`` (``.grad`` fields are not touched)."""
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(gouts)} for "
                           f"{len(outs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True")
    allow = bool(allow_unused) or materialize_grads
    if is_grads_batched:
        res = _grad_batched(outs, gouts, ins, retain_graph, create_graph, allow)
    else:
        res = run_backward(outs, gouts, retain_graph, create_graph, inputs=ins,
                           allow_unused=allow, accumulate=False)
    if materialize_grads:
        res = [g if g is not None else _zeros_of(i) for g, i in zip(res, ins)]
    return tuple(res)


def _zeros_of(t: Any) -> Any:
    """Zeros like an input of ``grad``: a tensor or a :class:`GradientEdge`."""
    creation = _late().creation
    if t.__class__ is not GradientEdge:
        return creation.zeros_like(t)
    node = t.node
    meta: Any = (node._leaf_meta() if node.__class__ is AccumulateGrad
                 else node._out_meta[t.output_nr])
    shape, dtype, device = meta
    return creation.zeros(tuple(shape), dtype=dtype, device=device)


def _grad_batched(outs: tuple, gouts: tuple, ins: tuple, retain_graph: bool, create_graph: bool,
                  allow_unused: bool) -> list[Any]:
    """``grad(..., is_grads_batched=True)``: the first dimension of each grad_output is a batch;
    one backward per batch entry (the graph is kept until the last), results stacked."""
    Tensor = _late().Tensor
    n = None
    for i, (o, g) in enumerate(zip(outs, gouts)):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            continue
        if not isinstance(g, Tensor) or g.dim() == 0 or g.shape[1:] != o.shape:
            shape = g.shape if isinstance(g, Tensor) else "[]"
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                "as the batch dimension. The sizes of the remaining dimensions are expected to "
                "match the shape of corresponding output, but a mismatch was detected: "
                f"grad_output[{i}] has a shape of {shape} and output[{i}] has a shape of "
                f"{o.shape}. If you only want some tensors in `grad_output` to be considered "
                "batched, consider using vmap.")
        if n is None:
            n = g.shape[0]
    if n is None:  # no batched grad_output: nothing to loop over
        return run_backward(outs, gouts, retain_graph, create_graph, inputs=ins,
                            allow_unused=allow_unused, accumulate=False)
    per: list[list[Any]] = []
    for b in range(n):
        gs = [g if g is None else g[b] for g in gouts]
        per.append(run_backward(outs, gs, retain_graph or b < n - 1, create_graph, inputs=ins,
                                allow_unused=allow_unused, accumulate=False))
    res: list[Any] = []
    for k in range(len(ins)):
        col = [r[k] for r in per]
        if any(c is None for c in col):
            res.append(None)
            continue
        # stacked by assignment (recorded when create_graph made the entries differentiable)
        out = _late().creation.zeros((n,) + tuple(col[0].shape), dtype=col[0].dtype,
                                     device=col[0].device)
        for b, c in enumerate(col):
            out[b] = c
        res.append(out)
    return res
