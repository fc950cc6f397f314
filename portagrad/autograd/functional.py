"""``torch.autograd.functional``: Jacobian-vector products, Jacobians and Hessians of functions.

Every public function here is a thin recipe over one primitive, :func:`_pull`, which is
:func:`portagrad.autograd.grad` restricted to the outputs that actually carry a graph:

* ``vjp``: one pull of the cotangent ``v`` through ``func``;
* ``jvp``: the transpose trick.  ``u -> J^T u`` is linear in a dummy cotangent ``u``, so pulling
  ``v`` back through *that* map (w.r.t. ``u``) yields ``J v`` without forward-mode AD;
* ``vhp``: pull ``v`` through the gradient; ``hvp``: the transpose trick applied to the gradient;
* ``jacobian``: for each output, one batched pull of the rows of the identity matrix (the engine
  runs one backward per row); ``vectorize`` and ``strategy="forward-mode"`` therefore only
  select the argument checks PyTorch makes, the values are the same;
* ``hessian``: the Jacobian of the gradient map.

The public structures follow PyTorch: a function that took (returned) a single Tensor gets a
single Tensor where PyTorch gives one, tuples otherwise; results are detached unless
``create_graph=True``; ``strict=True`` raises PyTorch's errors where a result would be
identically zero.

Tensor and the factories are imported after autograd (``portagrad._tensor`` imports this
package), so they are reached at call time through :func:`engine._late`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .engine import _late, grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_OUT_NAME = "outputs of the user-provided function"
_STRATEGIES = ("forward-mode", "reverse-mode")

# strict mode: what went missing, per recipe ({i}: the index of the offending tensor)
_MISSING_MSG = {
    "vjp": "The output of the user-provided function is independent of input {i}. This is not "
           "allowed in strict mode.",
    "jvp": "The gradient with respect to the input is independent of entry {i} in the "
           "grad_outputs when using the double backward trick to compute forward mode "
           "gradients. This is not allowed in strict mode.",
    "vhp": "The jacobian of the user-provided function is independent of input {i}. This is not "
           "allowed in strict mode.",
    "hvp": "The hessian of the user-provided function is independent of entry {i} in the "
           "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
           "double backward trick to replace forward mode AD.",
}
_CONSTANT_MSG = {
    "first": "The jacobian of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode when create_graph=True.",
    "second": "The hessian of the user-provided function is independent of input {i}. This is "
              "not allowed in strict mode when create_graph=True.",
}
_NO_GRAPH_MSG = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when running "
               "in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
                   "user-provided function. This is not allowed in strict mode.",
    "gradient": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
}


# ---------------------------------------------------------------------------- argument handling

def _as_tensors(value: Any, label: str, api: str) -> tuple[tuple, bool]:
    """``value`` (a Tensor or a tuple of Tensors) as a tuple, and whether it was a tuple."""
    tensor_cls = _late().Tensor
    if not isinstance(value, tuple):
        if not isinstance(value, tensor_cls):
            raise TypeError(f"The {label} given to {api} must be either a Tensor or a tuple of "
                            f"Tensors but the given {label} has type {type(value)}.")
        return (value,), False
    for k, item in enumerate(value):
        if not isinstance(item, tensor_cls):
            raise TypeError(f"The {label} given to {api} must be either a Tensor or a tuple of "
                            f"Tensors but the value at index {k} has type {type(item)}.")
    return value, True


def _own(ts: tuple, create_graph: bool, differentiable: bool = True) -> tuple:
    """Private handles on ``ts`` for one computation.

    Under ``create_graph`` a tensor that already requires grad is used through a view, so what is
    computed here stays differentiable w.r.t. the caller's tensor; every other tensor is cut off
    from its history (and made a leaf that requires grad when ``differentiable``).
    """
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(differentiable) for t in ts)


def _direction(v: Any, like: tuple, like_is_tuple: bool, api: str, create_graph: bool,
               single: str) -> tuple:
    """The vector ``v`` of a product, checked against ``like``; ``None`` means ones, which is only
    allowed when ``like`` is one single-element tensor (``single`` names it in the error)."""
    if v is None:
        if len(like) != 1 or like[0].nelement() != 1:
            raise RuntimeError(f"The vector v can only be None if the {single} a single Tensor "
                               "with a single element.")
        return (_late().creation.ones_like(like[0]),)
    vs, _ = _as_tensors(v, "v", api)
    vs = _own(vs, create_graph, differentiable=False)
    if len(vs) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got "
                               f"{len(vs)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for k, (a, b) in enumerate(zip(vs, like)):
        if a.size() != b.size():
            where = f"Entry {k} in " if like_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")
    return vs


def _restore(ts: Sequence, was_tuple: bool) -> Any:
    return tuple(ts) if was_tuple else ts[0]


def _release(tree: Any, create_graph: bool) -> Any:
    """Detach every tensor in nested tuples of tensors (kept as is under ``create_graph``)."""
    if create_graph:
        return tree
    if isinstance(tree, tuple):
        return tuple(_release(t, False) for t in tree)
    return tree.detach()


def _demand_graph(ts: Sequence, kind: str) -> None:
    """Strict mode: every tensor of ``ts`` exists and requires grad."""
    for i, t in enumerate(ts):
        if t is None:
            raise RuntimeError(_MISSING_MSG["vjp"].format(i=i))
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAPH_MSG[kind].format(i=i))


def _single_scalar(outs: tuple, was_tuple: bool, api: str) -> None:
    if was_tuple or len(outs) != 1:
        raise RuntimeError(f"The function given to {api} should return a single Tensor")
    if outs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {api} should contain a "
                           "single element")


# ---------------------------------------------------------------------------- the primitive

def _pull(outs: Sequence, wrt: Sequence, cots: Sequence | None = None, *,
          create_graph: bool = False, retain_graph: bool | None = None,
          batched: bool = False) -> list:
    """``grad(outs, wrt, cots)`` over the entries of ``outs`` that carry a graph; ``None`` for an
    input they do not reach (all ``None`` when none of them carries a graph)."""
    live = [k for k, o in enumerate(outs) if o is not None and o.requires_grad]
    if not live:
        return [None] * len(wrt)
    chosen_cots = None if cots is None else [cots[k] for k in live]
    return list(grad([outs[k] for k in live], list(wrt), chosen_cots, allow_unused=True,
                     create_graph=create_graph, retain_graph=retain_graph,
                     is_grads_batched=batched))


def _materialize(grads: Sequence, refs: Sequence, recipe: str, strict: bool,
                 create_graph: bool) -> tuple:
    """``grads`` with zeros (shaped as ``refs``) for the missing entries; in strict mode a missing
    entry, or one that is constant although a graph was asked for, is an error."""
    order = "second" if recipe in ("vhp", "hvp") else "first"
    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING_MSG[recipe].format(i=i))
            g = _late().creation.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_CONSTANT_MSG[order].format(i=i))
        filled.append(g)
    return tuple(filled)


def _trace(func: Callable, inputs: Any, api: str, create_graph: bool, strict: bool,
           v: Any = None, v_against_inputs: bool = False) -> tuple:
    """Run ``func`` on private handles of ``inputs`` with grad mode on.

    Returns ``(xs, xs_tuple, ys, ys_tuple, vs)``: the handles, the outputs (as tuples, with the
    flags telling whether they were tuples) and, when ``v_against_inputs``, the checked vector
    (checked before ``func`` runs, as it is compared with the inputs).
    """
    xs, xs_tuple = _as_tensors(inputs, "inputs", api)
    xs = _own(xs, create_graph)
    vs: tuple = ()
    if v_against_inputs:
        vs = _direction(v, xs, xs_tuple, api, create_graph,
                        "input to the user-provided function is")
    ys, ys_tuple = _as_tensors(func(*xs), _OUT_NAME, api)
    if strict:
        _demand_graph(ys, "outputs")
    return xs, xs_tuple, ys, ys_tuple, vs


def _products_mode(create_graph: bool) -> Any:
    """Grad mode for the last pull: on to build a graph, else whatever the caller has."""
    return set_grad_enabled(create_graph or is_grad_enabled())


# ---------------------------------------------------------------------------- products

def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """Vector-Jacobian product: ``(func(*inputs), v^T J)``.

    ``v`` has the structure of ``func``'s output and may be left out when that is a single
    one-element tensor. The product has the structure of ``inputs``.
    """
    with enable_grad():
        xs, xs_tuple, ys, ys_tuple, _ = _trace(func, inputs, "vjp", create_graph, strict)
        vs = _direction(v, ys, ys_tuple, "vjp", create_graph,
                        "user-provided function returns")
    with _products_mode(create_graph):
        prod = _materialize(_pull(ys, xs, vs, create_graph=create_graph), xs, "vjp", strict,
                            create_graph)
    return (_restore(_release(ys, create_graph), ys_tuple),
            _restore(_release(prod, create_graph), xs_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """Jacobian-vector product: ``(func(*inputs), J v)``.

    ``v`` has the structure of ``inputs`` (optional for a single one-element input); the product
    has the structure of the output. Computed in reverse mode by the transpose trick.
    """
    with enable_grad():
        xs, _, ys, ys_tuple, vs = _trace(func, inputs, "jvp", create_graph, strict, v, True)
        dummies = tuple(_late().creation.zeros_like(y, requires_grad=True) for y in ys)
        transposed = _pull(ys, xs, dummies, create_graph=True)  # J^T u, linear in u
        if strict:
            _demand_graph(transposed, "grad_inputs")
    with _products_mode(create_graph):
        prod = _materialize(_pull(transposed, dummies, vs, create_graph=create_graph), ys, "jvp",
                            strict, create_graph)
    return (_restore(_release(ys, create_graph), ys_tuple),
            _restore(_release(prod, create_graph), ys_tuple))


def _gradient(func: Callable, inputs: Any, api: str, create_graph: bool, strict: bool,
              v: Any) -> tuple:
    """The shared first half of ``vhp``/``hvp``: the differentiable gradient of the scalar
    ``func``. Returns ``(xs, xs_tuple, output, gradient, vs)``."""
    xs, xs_tuple, ys, ys_tuple, vs = _trace(func, inputs, api, create_graph, strict, v, True)
    _single_scalar(ys, ys_tuple, api)
    g = _pull(ys, xs, create_graph=True)
    if strict:
        _demand_graph(g, "gradient")
    return xs, xs_tuple, ys[0], g, vs


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """Vector-Hessian product of a scalar function: ``(func(*inputs), v^T H)``."""
    with enable_grad():
        xs, xs_tuple, out, g, vs = _gradient(func, inputs, "vhp", create_graph, strict, v)
    with _products_mode(create_graph):
        prod = _materialize(_pull(g, xs, vs, create_graph=create_graph), xs, "vhp", strict,
                            create_graph)
    return (_release(out, create_graph), _restore(_release(prod, create_graph), xs_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """Hessian-vector product of a scalar function: ``(func(*inputs), H v)`` (the transpose trick
    on the gradient; equal to :func:`vhp` for twice continuously differentiable functions)."""
    with enable_grad():
        xs, xs_tuple, out, g, vs = _gradient(func, inputs, "hvp", create_graph, strict, v)
        dummies = tuple(_late().creation.zeros_like(x, requires_grad=True) for x in xs)
        h_dummies = _pull(g, xs, dummies, create_graph=True)  # H^T u, linear in u
    with _products_mode(create_graph):
        prod = _materialize(_pull(h_dummies, dummies, vs, create_graph=create_graph), xs, "hvp",
                            strict, create_graph)
    return (_release(out, create_graph), _restore(_release(prod, create_graph), xs_tuple))


# ---------------------------------------------------------------------------- Jacobians

def _identity_rows(y: Any) -> Any:
    """The rows of the ``n x n`` identity (``n = y.numel()``), each shaped like ``y``."""
    n = y.numel()
    eye = _late().creation.eye(n, dtype=y.dtype, device=y.device)
    return eye.view((n,) + tuple(y.shape))


def _jacobian_blocks(ys: tuple, xs: tuple, create_graph: bool, strict: bool) -> tuple:
    """``blocks[i][j]``: d ys[i] / d xs[j], of shape ``ys[i].shape + xs[j].shape``."""
    zeros = _late().creation.zeros
    blocks = []
    for i, y in enumerate(ys):
        per_input: list = [None] * len(xs)
        if y.numel() and y.requires_grad:
            per_input = _pull([y], xs, [_identity_rows(y)], create_graph=create_graph,
                              retain_graph=True, batched=True)
        row = []
        for j, (block, x) in enumerate(zip(per_input, xs)):
            shape = tuple(y.shape) + tuple(x.shape)
            if block is None:
                if strict and y.numel():
                    raise RuntimeError(f"Output {i} of the user-provided function is independent "
                                       f"of input {j}. This is not allowed in strict mode.")
                row.append(zeros(shape, dtype=x.dtype, device=x.device))
                continue
            if strict and create_graph and not block.requires_grad:
                raise RuntimeError(_CONSTANT_MSG["first"].format(i=i))
            row.append(block.view(shape))
        blocks.append(tuple(row))
    return tuple(blocks)


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    Entry ``[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``; the outer level is dropped
    when ``func`` returns a single Tensor, the inner one when ``inputs`` is a single Tensor.
    ``vectorize`` and ``strategy`` are accepted (with PyTorch's argument checks) but do not change
    how the Jacobian is computed: one batched reverse-mode pull per output.
    """
    if strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and `strategy='
                '"forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                'are not supported together (yet). Please either set `strict=False` or '
                '`strategy="reverse-mode"`.')
        _as_tensors(inputs, "inputs", "jacobian")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                      "Hessian isonly implemented for `vectorize=True`.")
    with enable_grad():
        xs, xs_tuple, ys, ys_tuple, _ = _trace(func, inputs, "jacobian", create_graph, strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                "supported together. Please either set `strict=False` or `vectorize=False`.")
        blocks = _release(_jacobian_blocks(ys, xs, create_graph, strict), create_graph)
    return _restore(tuple(_restore(row, xs_tuple) for row in blocks), ys_tuple)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient.

    Entry ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape`` (a single Tensor when
    ``inputs`` is one).
    """
    _, xs_tuple = _as_tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def gradient_map(*xs: Any) -> Any:
        # xs are the outer jacobian's handles: they require grad already
        ys, ys_tuple = _as_tensors(func(*xs), _OUT_NAME, "hessian")
        if strict:
            _demand_graph(ys, "outputs")
        _single_scalar(ys, ys_tuple, "hessian")
        g = _materialize(_pull(ys, xs, create_graph=True), xs, "vjp", False, True)
        if strict:
            _demand_graph(g, "gradient")
        return _restore(g, xs_tuple)

    return jacobian(gradient_map, inputs, create_graph=create_graph, strict=strict,
                    vectorize=vectorize, strategy=outer_jacobian_strategy)
