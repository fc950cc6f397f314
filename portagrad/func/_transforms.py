"""``torch.func``'s differentiation transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian), built on portagrad's reverse-mode engine.

How a transformed call works: the differentiated arguments (any pytree of tensors) are flattened
and each leaf is replaced by a *handle* for the duration of the call: a fresh leaf that requires
grad, or, when the caller's tensor already requires grad, a view of it so that the call stays
part of the caller's graph. ``func`` then runs once with grad mode on (:func:`_record`) and every
result is a :func:`portagrad.autograd.grad` pull through that one recording:

* ``grad`` pulls the scalar output; ``vjp`` hands out a closure that pulls any cotangent;
* ``jvp`` pulls twice (``t -> J t`` is the pullback of ``u -> J^T u`` w.r.t. the dummy ``u``);
* ``jacrev``/``jacfwd`` pull the rows of the identity, one batched pull per output leaf;
* ``hessian`` is ``jacfwd(jacrev(f))``.

Nesting works without transform levels: a pull builds a graph (``create_graph``) only when grad
mode was on at the call and the recording depends on some tensor that requires grad and is not
one of this call's own fresh leaves (an enclosing transform's handle, a captured parameter). Then
``grad(grad(f))`` and backpropagating through ``grad(f)`` into captured parameters work; a plain
call returns detached tensors. Forward mode is never used; its results equal reverse mode's.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._creation import eye, zeros, zeros_like
from .._tensor import Tensor
from ..autograd.engine import grad as _engine_grad
from ..autograd.function import AccumulateGrad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..utils._pytree import TreeSpec, tree_flatten, tree_map, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]

Argnums = int | tuple[int, ...]


# ---------------------------------------------------------------------------- argnums

def _argnums_shape_check(argnums: Any) -> None:
    """What can be checked when the transform is built (before the arguments are known)."""
    if isinstance(argnums, int):
        return
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) < len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")


def _normalized_argnums(argnums: Argnums, count: int) -> Argnums:
    """``argnums`` with negative positions resolved against ``count`` positional arguments."""
    _argnums_shape_check(argnums)

    def one(a: Any) -> int:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -count <= a < count:
            raise RuntimeError(f"Got argnum={a}, but only {count} positional inputs")
        return a % count

    return one(argnums) if isinstance(argnums, int) else tuple(one(a) for a in argnums)


def _chosen(args: tuple, argnums: Argnums | None) -> Any:
    """The differentiated part of ``args``: all of them, one, or a tuple of several."""
    if argnums is None:
        return args
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[k] for k in argnums)


def _with_chosen(args: tuple, argnums: Argnums | None, chosen: Any) -> tuple:
    """``args`` with the differentiated part replaced by ``chosen``."""
    if argnums is None:
        return tuple(chosen)
    replacement = {argnums: chosen} if isinstance(argnums, int) else dict(zip(argnums, chosen))
    return tuple(replacement.get(k, a) for k, a in enumerate(args))


# ---------------------------------------------------------------------------- recording

def _handle(x: Any) -> Tensor:
    """The tensor ``func`` sees in place of the differentiated leaf ``x``."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _depends_on_foreign(tensors: list, own: set[int]) -> bool:
    """Whether any of ``tensors`` requires grad through a leaf outside ``own`` (ids)."""
    pending = []
    for t in tensors:
        if not t.requires_grad:
            continue
        if t.grad_fn is None:
            if id(t) not in own:
                return True
        else:
            pending.append(t.grad_fn)
    visited: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, AccumulateGrad):
            if node.variable is not None and id(node.variable) not in own:
                return True
        else:
            pending.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return False


def _tensor_leaves(tree: Any, api: str) -> list:
    """The leaves of an output pytree, which must all be tensors."""
    leaves, _ = tree_flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(leaf)}")
    return leaves


@dataclass
class _Recording:
    """One run of ``func`` on handles: what the pulls differentiate."""

    handles: list        # the flat differentiated inputs, as ``func`` saw them
    in_spec: TreeSpec    # their structure (the differentiated part of the arguments)
    output: Any          # ``func``'s output (without aux)
    out_leaves: list     # its flat leaves
    out_spec: TreeSpec
    aux: Any
    build_graph: bool    # whether pulls create a graph (see the module docstring)

    def release(self, tree: Any) -> Any:
        """``tree`` as handed to the caller: detached unless a graph is built."""
        if self.build_graph:
            return tree
        return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _record(func: Callable, args: tuple, kwargs: dict, argnums: Argnums | None, has_aux: bool,
            api: str) -> _Recording:
    grad_was_on = is_grad_enabled()
    with enable_grad():
        originals, in_spec = tree_flatten(_chosen(args, argnums))
        handles = [_handle(x) for x in originals]
        result = func(*_with_chosen(args, argnums, tree_unflatten(handles, in_spec)), **kwargs)
        aux = None
        if has_aux:
            if not isinstance(result, tuple) or len(result) != 2:
                raise RuntimeError(f"{api}: output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            result, aux = result
            for leaf in tree_flatten(aux)[0]:
                if not isinstance(leaf, Tensor):
                    raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    out_leaves, out_spec = tree_flatten(result)
    fresh = {id(h) for h in handles if h.grad_fn is None}
    tensors = [t for t in out_leaves + tree_flatten(aux)[0] if isinstance(t, Tensor)]
    build = grad_was_on and _depends_on_foreign(tensors, fresh)
    return _Recording(handles, in_spec, result, out_leaves, out_spec, aux, build)


def _pull(outs: list, wrt: list, cots: list, *, create_graph: bool, retain_graph: bool = True,
          batched: bool = False) -> list:
    """``grad(outs, wrt, cots)`` over the outputs that carry a graph; ``None`` where an input is
    not reached."""
    live = [k for k, o in enumerate(outs) if o.requires_grad]
    if not live:
        return [None] * len(wrt)
    with enable_grad():
        return list(_engine_grad([outs[k] for k in live], wrt, [cots[k] for k in live],
                                 retain_graph=retain_graph, create_graph=create_graph,
                                 allow_unused=True, is_grads_batched=batched))


def _cotangent_pull(rec: _Recording, cots: list, create_graph: bool,
                    retain_graph: bool = True) -> list:
    """The vector-Jacobian products of ``rec`` for flat ``cots``: zeros for unreached inputs,
    detached unless ``create_graph``."""
    pulled = _pull(rec.out_leaves, rec.handles, cots, create_graph=create_graph,
                   retain_graph=retain_graph)
    dense = [zeros_like(h) if g is None else g for g, h in zip(pulled, rec.handles)]
    return dense if create_graph else [g.detach() for g in dense]


# ---------------------------------------------------------------------------- grad

def _gradient_and_value(func: Callable, argnums: Argnums, has_aux: bool, args: tuple,
                        kwargs: dict) -> tuple:
    api = "grad_and_value(f)(*args)"
    rec = _record(func, args, kwargs, _normalized_argnums(argnums, len(args)), has_aux, api)
    value = rec.output
    if not isinstance(value, Tensor):
        raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(value)}")
    if value.dim() != 0:
        raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                           f"{value.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                           "instead?")
    flat = _cotangent_pull(rec, [None], rec.build_graph, retain_graph=rec.build_graph)
    gradient = tree_unflatten(flat, rec.in_spec)
    value = rec.release(value)
    return gradient, ((value, rec.release(rec.aux)) if has_aux else value)


def grad_and_value(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """Transform ``func`` into a function returning ``(gradient, value)``.

    ``value`` is ``func(*args)`` (a scalar tensor), or ``(value, aux)`` when ``has_aux`` and
    ``func`` returns ``(value, aux)``; ``gradient`` has the structure of ``args[argnums]``.
    """
    _argnums_shape_check(argnums)

    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        return _gradient_and_value(func, argnums, has_aux, args, kwargs)

    return transformed


def grad(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """Transform the scalar function ``func`` into its gradient w.r.t. ``args[argnums]`` (a
    pytree of tensors, or a tuple of them for a tuple ``argnums``); ``(gradient, aux)`` when
    ``has_aux``."""
    _argnums_shape_check(argnums)

    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        gradient, value = _gradient_and_value(func, argnums, has_aux, args, kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return transformed


# ---------------------------------------------------------------------------- vjp and jvp

def _nonempty_outputs(rec: _Recording, api: str) -> None:
    if not rec.out_leaves:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got "
                           f"output = {rec.out_leaves})")
    _tensor_leaves(rec.output, api)


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``, plus ``aux`` when ``has_aux``.

    ``vjp_fn(cotangents)`` takes a pytree shaped like the output and returns a tuple with one
    vector-Jacobian product per primal (each shaped like its primal); it may be called repeatedly.
    """
    api = "vjp(f, *primals)"
    rec = _record(func, primals, {}, None, has_aux, api)
    _nonempty_outputs(rec, api)
    for leaf in rec.out_leaves:
        if not (leaf.is_floating_point() or leaf.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex "
                               f"Tensors, got Tensor with dtype {leaf.dtype}")

    def vjp_fn(cotangents: Any, retain_graph: bool = True,
               create_graph: bool | None = None) -> Any:
        flat, spec = tree_flatten(cotangents)
        if spec != rec.out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function. cotangents: "
                               f"{treespec_pprint(spec)}, primal output: "
                               f"{treespec_pprint(rec.out_spec)}")
        if create_graph is None:
            create_graph = rec.build_graph and is_grad_enabled()
        pulled = _cotangent_pull(rec, flat, create_graph, retain_graph=retain_graph)
        return tree_unflatten(pulled, rec.in_spec)

    output = rec.release(rec.output)
    return (output, vjp_fn, rec.release(rec.aux)) if has_aux else (output, vjp_fn)


def _validate_tangents(primals: Any, tangents: Any, api: str) -> list:
    """The flat tangents, after PyTorch's checks of the primals and their agreement."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {p_spec} and tangents with "
                           f"structure {t_spec}")
    for label, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {label} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {label} to only contain Tensors, got "
                                   f"{type(x)}")
    for p, t in zip(flat_p, flat_t):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is of "
                               f"size {list(p.shape)} while the given forward gradient is of size "
                               f"{list(t.shape)}.")
    return flat_t


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)``, plus ``aux`` when ``has_aux``.

    ``tangents`` has the structure of ``primals`` (a tuple); the result has the structure of the
    output. Computed with two reverse-mode pulls (see the module docstring).
    """
    api = "jvp(f, primals, tangents)"
    flat_t = _validate_tangents(primals, tangents, api)
    rec = _record(func, primals, {}, None, has_aux, api)
    _nonempty_outputs(rec, api)
    outs = rec.out_leaves
    dummies = [zeros_like(o, requires_grad=True) for o in outs]
    # u -> J^T u, kept differentiable so that it can be pulled back once more w.r.t. u
    transposed = _pull(outs, rec.handles, dummies, create_graph=True)
    reached = [(g, t) for g, t in zip(transposed, flat_t) if g is not None and g.requires_grad]
    pushed: list = [None] * len(outs)
    if reached:
        live = [k for k, o in enumerate(outs) if o.requires_grad]
        found = _pull([g for g, _ in reached], [dummies[k] for k in live],
                      [t for _, t in reached], create_graph=rec.build_graph)
        for k, r in zip(live, found):
            pushed[k] = r
    if strict and all(p is None for p in pushed):
        raise RuntimeError(f"{api[:-1]}, strict=True): The output of f is independent of the "
                           "inputs. This is not allowed with strict=True.")
    flat_out = [zeros_like(o) if p is None else p for p, o in zip(pushed, outs)]
    output = rec.release(rec.output)
    tangent_out = rec.release(tree_unflatten(flat_out, rec.out_spec))
    if has_aux:
        return output, tangent_out, rec.release(rec.aux)
    return output, tangent_out


# ---------------------------------------------------------------------------- Jacobians

def _reject_complex(api: str, tensors: list, role: str) -> None:
    for idx, t in enumerate(tensors):
        if isinstance(t, Tensor) and t.is_complex():
            raise RuntimeError(f"{api}: Expected all {role} to be real but received complex "
                               f"tensor at flattened input idx: {idx}")


def _full_jacobian(func: Callable, argnums: Argnums, has_aux: bool, args: tuple,
                   api: str) -> Any:
    """``jac[out][in]``: the outputs' pytree outside, the differentiated arguments' inside."""
    _reject_complex(api, tree_flatten(args)[0], "inputs")
    rec = _record(func, args, {}, _normalized_argnums(argnums, len(args)), has_aux,
                  "vjp(f, *primals)")
    _nonempty_outputs(rec, "vjp(f, *primals)")
    _reject_complex(api, rec.out_leaves, "outputs")
    per_output = []
    for out in rec.out_leaves:
        rows = out.numel()
        pulled: list = [None] * len(rec.handles)
        if rows:
            basis = eye(rows, dtype=out.dtype, device=out.device).view((rows,) + tuple(out.shape))
            pulled = _pull([out], rec.handles, [basis], create_graph=rec.build_graph,
                           batched=True)
        blocks = []
        for block, h in zip(pulled, rec.handles):
            shape = tuple(out.shape) + tuple(h.shape)
            if block is None:
                blocks.append(zeros(shape, dtype=h.dtype, device=h.device))
            else:
                block = block.reshape(shape)
                blocks.append(block if rec.build_graph else block.detach())
        per_output.append(tree_unflatten(blocks, rec.in_spec))
    jac = tree_unflatten(per_output, rec.out_spec)
    return (jac, rec.release(rec.aux)) if has_aux else jac


def jacrev(func: Callable, argnums: Argnums = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """Transform ``func`` into its Jacobian w.r.t. ``args[argnums]``, computed row by row in
    reverse mode. The result nests the output's structure (outer) around the differentiated
    arguments' structure (inner); ``(jacobian, aux)`` with ``has_aux``. ``chunk_size`` is
    validated but does not change the result."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    _argnums_shape_check(argnums)

    @functools.wraps(func)
    def transformed(*args: Any) -> Any:
        return _full_jacobian(func, argnums, has_aux, args, "jacrev")

    return transformed


def jacfwd(func: Callable, argnums: Argnums = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """Transform ``func`` into its Jacobian w.r.t. ``args[argnums]``: the same structure and
    values as :func:`jacrev` (portagrad computes it in reverse mode too)."""
    _argnums_shape_check(argnums)

    @functools.wraps(func)
    def transformed(*args: Any) -> Any:
        if randomness not in ("error", "different", "same"):
            raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                               f"'same'. Got {randomness}")
        return _full_jacobian(func, argnums, has_aux, args, "jacfwd")

    return transformed


def hessian(func: Callable, argnums: Argnums = 0) -> Callable:
    """Transform the scalar function ``func`` into its Hessian w.r.t. ``args[argnums]``:
    ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
