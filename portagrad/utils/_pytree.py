"""``torch.utils._pytree``: nested containers ("pytrees") flattened to a list of leaves and a
:class:`TreeSpec` that rebuilds them.

It follows PyTorch's Python implementation, which libraries rely on for the order of the leaves
and the shape of specs: the containers are ``tuple``, ``list``, ``dict`` (keys in insertion order,
not sorted), named tuples (all of them, as one node type ``namedtuple``), ``OrderedDict``,
``defaultdict`` and ``deque``, matched by exact type (a ``dict`` subclass that is not registered
is a leaf); ``None`` is a leaf. More container types join with :func:`register_pytree_node`.
"""
from __future__ import annotations

import dataclasses
import threading
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

__all__ = ["PyTree", "Context", "FlattenFunc", "UnflattenFunc", "NodeDef", "SUPPORTED_NODES",
           "TreeSpec", "LeafSpec", "register_pytree_node", "_register_pytree_node",
           "tree_flatten", "tree_unflatten", "tree_iter", "tree_leaves", "tree_structure",
           "tree_map", "tree_map_", "tree_map_only", "tree_all", "tree_any", "tree_is_leaf",
           "is_namedtuple", "is_namedtuple_instance", "treespec_pprint", "KeyEntry", "KeyPath",
           "MappingKey", "SequenceKey", "GetAttrKey", "keystr", "key_get",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path"]

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], tuple[list[Any], Context]]
UnflattenFunc = Callable[[Iterable[Any], Context], PyTree]


class NodeDef(NamedTuple):
    """How one container type is taken apart and rebuilt."""

    type: type[Any]
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc
    flatten_with_keys_fn: Callable[..., Any] | None = None


SUPPORTED_NODES: dict[type[Any], NodeDef] = {}
_LOCK = threading.RLock()


def register_pytree_node(cls: type[Any], flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc,
                         *, serialized_type_name: str | None = None,
                         to_dumpable_context: Callable[..., Any] | None = None,
                         from_dumpable_context: Callable[..., Any] | None = None,
                         flatten_with_keys_fn: Callable[..., Any] | None = None) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``. Registering a type twice raises ``ValueError``."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node(): expected a class, got {type(cls).__name__}")
    with _LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def _register_pytree_node(cls: type[Any], flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc,
                          to_str_fn: Any = None, maybe_from_str_fn: Any = None, *,
                          serialized_type_name: str | None = None,
                          to_dumpable_context: Callable[..., Any] | None = None,
                          from_dumpable_context: Callable[..., Any] | None = None,
                          flatten_with_keys_fn: Callable[..., Any] | None = None) -> None:
    """The older name of :func:`register_pytree_node` (deprecated in PyTorch, which warns)."""
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use "
                  "torch.utils._pytree.register_pytree_node instead.", FutureWarning,
                  stacklevel=2)
    if to_str_fn is not None or maybe_from_str_fn is not None:
        raise ValueError("to_str_fn and maybe_from_str_fn is deprecated. Please use "
                         "to_dumpable_context and from_dumpable_context instead.")
    register_pytree_node(cls, flatten_fn, unflatten_fn,
                         serialized_type_name=serialized_type_name,
                         to_dumpable_context=to_dumpable_context,
                         from_dumpable_context=from_dumpable_context,
                         flatten_with_keys_fn=flatten_with_keys_fn)


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` is a named tuple class or instance."""
    cls = obj if isinstance(obj, type) else type(obj)
    fields = getattr(cls, "_fields", None)
    return (issubclass(cls, tuple) and isinstance(fields, tuple)
            and all(isinstance(f, str) for f in fields))


def is_namedtuple_instance(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a named tuple class."""
    return not isinstance(obj, type) and is_namedtuple(obj)


def _node_type(tree: Any) -> Any:
    # every named tuple class is one node type, as in PyTorch
    return namedtuple if is_namedtuple_instance(tree) else type(tree)


_get_node_type = _node_type  # PyTorch's private name, which libraries (Lightning) import


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``tree`` is a leaf: not a registered container, or picked by ``is_leaf``."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


_is_leaf = tree_is_leaf  # the private name libraries (Lightning) wrap


class TreeSpec:
    """The structure of a pytree: the root's node type, its context (dict keys, the named tuple
    class ...) and one spec per child. A leaf's spec has type ``None``."""

    def __init__(self, type: Any, context: Context, children_specs: list[TreeSpec]) -> None:
        self.type = type
        self._context = context
        self._children = list(children_specs)
        if type is None:
            if context is not None or children_specs:
                raise ValueError("a leaf TreeSpec has no context and no children")
            self.num_nodes, self.num_leaves, self.num_children = 1, 1, 0
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
            self.num_leaves = sum(c.num_leaves for c in self._children)
            self.num_children = len(self._children)

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list[TreeSpec]:
        return self._children

    def children(self) -> list[TreeSpec]:
        """The children's specs (a copy of the list)."""
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        """The spec of child ``index``."""
        return self._children[index]

    def is_leaf(self) -> bool:
        """Whether this spec stands for a single leaf."""
        return self.num_nodes == 1 and self.num_leaves == 1

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        inner = ""
        if self._children:
            indent += 2
            inner = self._children[0].__repr__(indent)
            inner += "," if len(self._children) > 1 else ""
            inner += ",".join("\n" + " " * indent + c.__repr__(indent)
                              for c in self._children[1:])
        return f"TreeSpec({self.type.__name__}, {self._context}, [{inner}])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        ctx = self._context
        if self.type is defaultdict:
            ctx = (ctx[0], tuple(ctx[1]))
        elif isinstance(ctx, list):
            ctx = tuple(ctx)
        try:
            hash(ctx)
        except TypeError:
            ctx = None  # a user context need not be hashable; equal specs still hash equal
        return hash((self.type, ctx, tuple(self._children)))

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """The subtrees of ``tree`` at this spec's leaves; ``tree`` must have this structure
        down to them (ValueError otherwise)."""
        out: list[PyTree] = []

        def walk(spec: TreeSpec, node: PyTree) -> None:
            if spec.is_leaf():
                out.append(node)
                return
            kind = _node_type(node)
            if kind != spec.type:
                raise ValueError(f"Type mismatch; expected {spec.type!r}, but got {kind!r}.")
            children, context = SUPPORTED_NODES[kind].flatten_fn(node)
            if len(children) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                                 f"{len(children)}.")
            if kind in (dict, OrderedDict, defaultdict):
                keys = context[1] if kind is defaultdict else context
                want = spec._context[1] if kind is defaultdict else spec._context
                if set(keys) != set(want):
                    raise ValueError(f"Node keys mismatch; expected {want!r}, but got {keys!r}.")
                children = [node[k] for k in want]
            elif context != spec._context:
                raise ValueError(f"Node context mismatch; expected {spec._context!r}, but got "
                                 f"{context!r}.")
            for c, s in zip(children, spec._children):
                walk(s, c)
        walk(self, tree)
        return out

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild the pytree from ``leaves`` (as many as :attr:`num_leaves`)."""
        leaves = leaves if isinstance(leaves, (list, tuple)) else list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                             f"the spec refers to a pytree that holds {self.num_leaves} items "
                             f"({self}).")
        if self.is_leaf():
            return leaves[0]
        children, start = [], 0
        for spec in self._children:
            children.append(spec.unflatten(leaves[start:start + spec.num_leaves]))
            start += spec.num_leaves
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf (``TreeSpec(None, None, [])``), printed ``*``."""

    def __init__(self) -> None:
        super().__init__(None, None, [])


_LEAF = LeafSpec()


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                 ) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in order (depth first, children in container order) and its
    spec."""
    leaves: list[Any] = []

    def walk(node: PyTree) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF
        kind = _node_type(node)
        children, context = SUPPORTED_NODES[kind].flatten_fn(node)
        return TreeSpec(kind, context, [walk(c) for c in children])
    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The pytree of structure ``treespec`` holding ``leaves`` (inverse of
    :func:`tree_flatten`)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of "
                        f"type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> Iterator[Any]:
    """The leaves of ``tree``, lazily, in :func:`tree_flatten`'s order."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_node_type(tree)].flatten_fn(tree)
    for c in children:
        yield from tree_iter(c, is_leaf)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` as a list."""
    return list(tree_iter(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The spec of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A pytree of ``tree``'s structure holding ``func(leaf, *matching subtrees of rests)``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(list(map(func, *flat)))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call ``func`` on each leaf (for its effect) and return ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for args in zip(*flat):
        func(*args)
    return tree


def _only(types: Any, func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    if isinstance(types, type) or (isinstance(types, tuple)
                                   and all(isinstance(t, type) for t in types)):
        def pred(x: Any) -> bool:
            return isinstance(x, types)
    elif callable(types):
        pred = types
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")
    return lambda x: func(x) if pred(x) else x


def tree_map_only(type_or_types_or_pred: Any, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map` applying ``func`` only to the leaves of the given type(s) (or passing
    the predicate); other leaves are kept."""
    return tree_map(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def treespec_pprint(treespec: TreeSpec) -> str:
    """A one-line picture of ``treespec`` with ``*`` for each leaf (``([*, *], {'a': *})``)."""
    dummy = tree_unflatten([_Star()] * treespec.num_leaves, treespec)
    return repr(dummy)


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """The key of a child in a mapping (printed ``[key]``)."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The index of a child in a sequence (printed ``[idx]``)."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute name of a child (printed ``.name``)."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


KeyEntry = Any
KeyPath = tuple[Any, ...]


def keystr(kp: KeyPath) -> str:
    """A key path as the Python accessor it stands for (``[0]['a'].b``)."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The subtree of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


def _dict_flatten(d: dict[Any, Any]) -> tuple[list[Any], Context]:
    return list(d.values()), list(d.keys())


def _dict_unflatten(values: Iterable[Any], context: Context) -> dict[Any, Any]:
    return dict(zip(context, values))


def _dict_flatten_with_keys(d: dict[Any, Any]) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


def _seq_flatten_with_keys(flatten: FlattenFunc) -> Callable[[Any], Any]:
    def with_keys(node: Any) -> tuple[list[tuple[KeyEntry, Any]], Context]:
        children, context = flatten(node)
        return [(SequenceKey(i), c) for i, c in enumerate(children)], context
    return with_keys


def _namedtuple_flatten_with_keys(t: Any) -> tuple[list[tuple[KeyEntry, Any]], Context]:
    return [(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)


def _children_with_keys(node: Any) -> list[tuple[KeyEntry, Any]]:
    kind = _node_type(node)
    nd = SUPPORTED_NODES[kind]
    if nd.flatten_with_keys_fn is not None:
        return list(nd.flatten_with_keys_fn(node)[0])
    if kind in (dict, OrderedDict):
        return _dict_flatten_with_keys(node)[0]
    if kind is defaultdict:
        return [(MappingKey(k), v) for k, v in node.items()]
    if kind is namedtuple:
        return _namedtuple_flatten_with_keys(node)[0]
    if kind in (tuple, list, deque):
        return _seq_flatten_with_keys(nd.flatten_fn)(node)[0]
    raise ValueError(f"Did not find a flatten_with_keys_fn for type: {kind}. Please pass a "
                     f"flatten_with_keys_fn argument to register_pytree_node.")


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                           ) -> tuple[list[tuple[KeyPath, Any]], TreeSpec]:
    """:func:`tree_flatten` with each leaf's key path: ``([(path, leaf), ...], spec)``."""
    out: list[tuple[KeyPath, Any]] = []

    def walk(node: PyTree, path: KeyPath) -> None:
        if tree_is_leaf(node, is_leaf):
            out.append((path, node))
            return
        for k, c in _children_with_keys(node):
            walk(c, path + (k,))
    walk(tree, ())
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None
                          ) -> list[tuple[KeyPath, Any]]:
    """The ``(key path, leaf)`` pairs of ``tree`` in :func:`tree_flatten`'s order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
                       is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """:func:`tree_map` whose ``func`` takes each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    flat = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(kp, leaf, *others)
                           for (kp, leaf), *others in zip(pairs, *flat)])


class _Star:
    def __repr__(self) -> str:
        return "*"


def _builtin(cls: Any, flatten: FlattenFunc, unflatten: UnflattenFunc) -> None:
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten, unflatten)


_builtin(tuple, lambda t: (list(t), None), lambda v, c: tuple(v))
_builtin(list, lambda t: (list(t), None), lambda v, c: list(v))
_builtin(dict, lambda d: (list(d.values()), list(d.keys())), lambda v, c: dict(zip(c, v)))
_builtin(namedtuple, lambda t: (list(t), type(t)), lambda v, c: c(*v))
_builtin(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
         lambda v, c: OrderedDict(zip(c, v)))
_builtin(defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
         lambda v, c: defaultdict(c[0], zip(c[1], v)))
_builtin(deque, lambda d: (list(d), d.maxlen), lambda v, c: deque(v, maxlen=c))
