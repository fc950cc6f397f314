"""``pg.vmap``: map a function over a batch dimension of its inputs.

PyTorch vectorises the function with batching rules; portagrad calls it once per batch element
on the slices (of every tensor in a mapped argument, which may be a dict/list/tuple of tensors)
and stacks the results (leaf by leaf for outputs of the same structure), which gives the same
values and gradients (slower for large batches). Random ops inside the function raise
(``randomness="error"``, the default, as PyTorch), draw independently per element
(``"different"``) or draw the same numbers for every element (``"same"``: each generator is
rewound before each element to where it stood before its first draw). Because the function runs
once per element, an in-place change of a tensor it was not given batched (a captured tensor, a
module's buffer, an unbatched argument) would be made once per element: such a change raises
(PyTorch raises too when the value written is batched; it makes an unbatched change once).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ._ops.joining import stack
from ._random import VMAP_RANDOMNESS
from ._tensor import Tensor
from .utils._pytree import SUPPORTED_NODES, tree_flatten, tree_is_leaf, tree_unflatten

__all__ = ["vmap"]


def _name(func: Callable) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _flat_dims(dims: Any, n: int, what: str, where: str) -> list[Any]:
    if dims is None or isinstance(dims, int):
        return [dims] * n
    if isinstance(dims, (tuple, list)):
        if len(dims) != n:
            raise ValueError(f"{where}: {what} is not compatible with the structure of the "
                             f"{'inputs' if what == 'in_dims' else 'outputs'}: {what} has "
                             f"{len(dims)} entries but there are {n}")
        for d in dims:
            if d is not None and not isinstance(d, int) and what == "out_dims":
                raise NotImplementedError(f"{where}: nested {what} (for nested outputs) are not "
                                          "supported; use an int or None per output")
        return list(dims)
    raise ValueError(f"{where}: expected {what} to be int or a (potentially nested) tuple "
                     f"matching the structure of inputs, got: {type(dims)}.")


def _leaf_dims(d: Any, node: Any, where: str) -> list[Any]:
    """The in_dim of every leaf of the argument ``node`` (in :func:`tree_flatten`'s order), from
    its ``in_dims`` entry ``d``: an int or None for the whole argument, or a container of the
    argument's structure (a prefix of it: an int or None stands for a whole subtree)."""
    if d is None or isinstance(d, int):
        return [d] * len(tree_flatten(node)[0])
    if tree_is_leaf(node) or type(d) is not type(node):
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`: "
                         f"an in_dim {d!r} stands for an input of type {type(node).__name__}")
    children, context = SUPPORTED_NODES[type(node)].flatten_fn(node)
    if isinstance(node, dict):
        if set(d) != set(node):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             f"`inputs`: in_dims has keys {sorted(map(str, d))} but the input "
                             f"has {sorted(map(str, node))}")
        sub = [d[k] for k in context]
    else:
        sub = SUPPORTED_NODES[type(d)].flatten_fn(d)[0]
        if len(sub) != len(children):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             f"`inputs`: in_dims has {len(sub)} entries where the input has "
                             f"{len(children)}")
    return [x for c, dc in zip(children, sub) for x in _leaf_dims(dc, c, where)]


def vmap(func: Callable, in_dims: int | Sequence[int | None] | None = 0,
         out_dims: int | Sequence[int | None] | None = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``vmap(func)(*args)``: ``func`` applied to each slice of the batched arguments along
    ``in_dims`` (an int or ``None`` for all, or one per positional argument), outputs stacked
    along ``out_dims``. Keyword arguments are passed unbatched. ``chunk_size`` does not change
    results and is accepted."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
        dims = _flat_dims(in_dims, len(args), "in_dims", where)
        size = None
        # each mapped argument as a pytree (a tensor, or dicts/lists/tuples of them): every leaf
        # is sliced along the argument's in_dim
        trees: list[Any] = []
        for a, d in zip(args, dims):
            if d is None:
                trees.append(None)
                continue
            leaves, spec = tree_flatten(a)
            # (an int stands for every leaf: no second walk of the argument)
            ldims = [d] * len(leaves) if isinstance(d, int) else _leaf_dims(d, a, where)
            trees.append((leaves, spec, ldims))
            for leaf, d in zip(leaves, ldims):
                if d is None:
                    continue
                if not isinstance(leaf, Tensor):
                    raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of "
                                     f"type {type(leaf)}. We cannot vmap over non-Tensor "
                                     "arguments, please use None as the respective in_dim")
                if not -leaf.dim() <= d < leaf.dim():
                    raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is "
                                     f"a Tensor of dimensionality {leaf.dim()} so expected in_dim "
                                     f"to satisfy {-leaf.dim()} <= in_dim < {leaf.dim()}.")
                n = leaf.shape[d]
                if size is not None and n != size:
                    raise ValueError("vmap: Expected all tensors to have the same size in the "
                                     f"mapped dimension, got sizes {[size, n]} for the mapped "
                                     "dimension")
                size = n
        if size is None:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if size == 0:
            raise NotImplementedError("vmap over an empty batch: portagrad runs the function per "
                                      "element and cannot infer the output shape")
        results = []
        saved = VMAP_RANDOMNESS.mode, VMAP_RANDOMNESS.starts
        starts: dict[Any, int] = {}
        if randomness == "same":
            VMAP_RANDOMNESS.starts = saved[1] + (starts,)
        # "different" draws freely, unless an enclosing "same" vmap has to see the draws
        VMAP_RANDOMNESS.mode = randomness if randomness != "different" else (
            "same" if VMAP_RANDOMNESS.starts else None)
        batched = {id(leaf._vc) for t in trees if t is not None
                   for leaf, ld in zip(t[0], t[2]) if ld is not None}
        watched = [(x, x._vc[0]) for x in _outside_tensors(func, args, dims, kwargs)
                   if id(x._vc) not in batched] if size > 1 else []
        try:
            for i in range(size):
                for gen, offset in starts.items():  # "same": every element draws alike
                    gen._offset = offset
                sliced = [a if t is None else
                          tree_unflatten([leaf if ld is None else leaf.select(ld, i)
                                          for leaf, ld in zip(t[0], t[2])], t[1])
                          for a, t in zip(args, trees)]
                results.append(func(*sliced, **kwargs))
                if any(x._vc[0] != v for x, v in watched):
                    raise RuntimeError(
                        f"vmap: {_name(func)} modified in place a tensor it did not get as a "
                        f"batched input (one it captured, or an unbatched argument); portagrad's "
                        f"vmap calls the function once per batch element, so the change would "
                        f"be made {size} times (PyTorch makes it once, or refuses it when the "
                        f"other operand is batched). Make the update outside vmap, or pass the "
                        f"tensor as a batched input.")
        finally:
            VMAP_RANDOMNESS.mode, VMAP_RANDOMNESS.starts = saved
        return _stack_outputs(results, out_dims, func)

    return wrapped


def _tensors_in(obj: Any, depth: int = 1) -> list[Tensor]:
    """The tensors ``obj`` is or holds: a module's parameters and buffers, the items of a
    list/tuple/dict (``depth`` levels down)."""
    if isinstance(obj, Tensor):
        return [obj]
    params, buffers = getattr(obj, "parameters", None), getattr(obj, "buffers", None)
    if callable(params) and callable(buffers) and hasattr(obj, "_parameters"):  # a Module
        return [*params(), *buffers()]
    if depth and isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors_in(x, depth - 1)]
    if depth and isinstance(obj, dict):
        return [t for x in obj.values() for t in _tensors_in(x, depth - 1)]
    return []


def _outside_tensors(func: Callable, args: Sequence[Any], dims: Sequence[Any],
                     kwargs: dict[str, Any]) -> list[Tensor]:
    """Tensors ``func`` can reach that are not mapped: its closure, its defaults, the globals its
    code names, the module or object it is bound to (a module: its parameters and buffers),
    ``functools.partial``'s arguments, the unbatched arguments. A change made to one in place
    would be made once per batch element (:func:`vmap` checks their versions)."""
    found: list[Tensor] = []
    fn: Any = func
    for _ in range(4):  # through partials and bound methods
        if isinstance(fn, functools.partial):
            found += _tensors_in(list(fn.args)) + _tensors_in(fn.keywords)
            fn = fn.func
            continue
        owner = getattr(fn, "__self__", None)
        if owner is not None:
            found += _tensors_in(owner)
            fn = getattr(fn, "__func__", fn)
        break
    found += _tensors_in(fn)  # a module called as the function
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found += _tensors_in(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    found += _tensors_in(list(getattr(fn, "__defaults__", None) or ()))
    found += _tensors_in(getattr(fn, "__kwdefaults__", None) or {})
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is not None and glob is not None:
        found += [t for name in code.co_names if name in glob for t in _tensors_in(glob[name])]
    found += [t for a, d in zip(args, dims) if d is None for t in _tensors_in(a)]
    found += _tensors_in(kwargs)
    return list({id(t): t for t in found}.values())  # each once, in the order found


def _stack_outputs(results: list[Any], out_dims: Any, func: Callable) -> Any:
    first = results[0]
    single = not isinstance(first, tuple)
    rows = [(r,) if single else r for r in results]
    dims = _flat_dims(out_dims, len(rows[0]), "out_dims", f"vmap({_name(func)}, ...)")
    outs = []
    for j, d in enumerate(dims):
        column = [r[j] for r in rows]
        if d is None:
            outs.append(column[0])  # an unbatched output: the same for every element
            continue
        # an output may be a pytree of tensors (a dict of per-sample gradients): leaf by leaf
        flat = [tree_flatten(c) for c in column]
        leaves0, spec = flat[0]
        for leaves, _ in flat:
            for leaf in leaves:
                if not isinstance(leaf, Tensor):
                    raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only "
                                     f"return Tensors, got type {type(leaf)}. Did you mean to "
                                     "set out_dims= to None for output?")
        outs.append(tree_unflatten([stack([f[0][k] for f in flat], d)
                                    for k in range(len(leaves0))], spec))
    return outs[0] if single else tuple(outs)
