"""The package's import graph has no cycles and few function-local imports.

Every module of ``portagrad/`` is parsed with ``ast``; an edge ``a -> b`` is an import of package
module ``b`` anywhere in ``a`` (module level or inside a function), except under
``if TYPE_CHECKING:``, which never runs. ``from . import x`` counts as importing submodule ``x``
when ``x`` is one, else as importing the package itself.

The layers, bottom first: ``_shape``, ``_dtype``, ``_storage`` -> ``_tensor`` (with
``_tensor_api``, its methods) -> ``autograd`` -> ``_raw`` -> ``_ops`` -> ``nn``, ``optim``,
``utils``, ``serialization``, ``multiprocessing``. ``Tensor``'s methods reach the op layer through
names bound once by ``portagrad/__init__.py`` (``_tensor_api._bind``), which is no import. What
remains of the knot is the ``DEFERRED`` imports below: imports of a higher layer made at call
time, each for a stated reason. Without them the graph must have no cycle, and each must still
exist, so the list can only shrink.

Function-local imports of package modules are counted too: once the layers allow it they belong at
module level, and the bound keeps them from creeping back (lazy imports of optional or heavy
third-party modules such as pyopencl or torch are not package modules and are not counted).
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG_ROOT = Path(__file__).resolve().parent.parent / "portagrad"

_TENSOR_NODE = ("Tensor and autograd's Node know each other: Function.apply wraps outputs in "
                "Tensor, and checks and zero-fills gradients with ops (autograd/function.py)")
DEFERRED: dict[tuple[str, str], str] = {
    ("portagrad.autograd.function", "portagrad._tensor"): _TENSOR_NODE,
    ("portagrad.autograd.function", "portagrad._creation"): _TENSOR_NODE,
    ("portagrad.autograd.function", "portagrad._ops.shape"): _TENSOR_NODE,
    ("portagrad.autograd.function", "portagrad._raw"):
        "AccumulateGrad adds into leaf.grad through the one door to the backend (_raw), and _raw "
        "makes Tensors, which hold autograd nodes",
    ("portagrad._tensor", "portagrad.multiprocessing.reductions"):
        "pickling a tensor loads Python's multiprocessing machinery only when it is needed",
    ("portagrad._tensor_api", "portagrad.multiprocessing.reductions"):
        "share_memory_ loads Python's multiprocessing machinery only when it is needed",
}

# Function-local imports of package modules, at most (226 before the layers were drawn). Most left
# are the deferred imports above, autograd's entry points (autograd is loaded by _tensor, before
# Tensor exists), the in-place rule's call-time access to _raw and the op layer, and plugins and CLI
# subcommands loaded on demand.
MAX_LOCAL_IMPORTS = 29


def _module_names() -> dict[str, Path]:
    mods = {}
    for path in sorted(PKG_ROOT.rglob("*.py")):
        parts = list(path.relative_to(PKG_ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, module: str, is_pkg: bool, mods: dict[str, Path]
             ) -> list[tuple[str, bool, int]]:
    """``(imported package module, inside a function, line)`` for each import in ``tree``."""
    found: list[tuple[str, bool, int]] = []
    package = module if is_pkg else module.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        out = []
        for a in node.names:
            sub = f"{prefix}.{a.name}"
            out.append(sub if sub in mods else prefix)
        return out

    def visit(node: ast.AST, in_func: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, in_func)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for t in dict.fromkeys(targets(node)):  # one per imported module
                if t in mods:
                    found.append((t, in_func, node.lineno))
            return
        inner = in_func or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """The module graph, and the function-local package imports as ``(module, target, line)``."""
    mods = _module_names()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    local: list[tuple[str, str, int]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        for target, in_func, line in _imports(tree, name, path.name == "__init__.py", mods):
            if target != name:
                graph[name].add(target)
            if in_func:
                local.append((name, target, line))
    return graph, local


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is deep enough to matter for recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    sccs: list[list[str]] = []
    counter = 0
    for root, children in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(children)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    sccs.append(sorted(comp))
    return sccs


def test_no_import_cycles() -> None:
    graph, _ = import_graph()
    for src, dst in DEFERRED:
        graph[src].discard(dst)
    knots = [c for c in strongly_connected(graph) if len(c) > 1]
    assert not knots, "import cycles:\n" + "\n".join(
        f"  {len(c)} modules: {', '.join(c)}" for c in knots)


def test_deferred_imports_are_function_local_and_still_there() -> None:
    _, local = import_graph()
    edges = {(m, t) for m, t, _ in local}
    stale = [edge for edge in DEFERRED if edge not in edges]
    assert not stale, f"no longer imported inside a function: drop them from DEFERRED: {stale}"


def test_few_function_local_imports() -> None:
    _, local = import_graph()
    assert len(local) <= MAX_LOCAL_IMPORTS, (
        f"{len(local)} function-local imports of package modules (at most {MAX_LOCAL_IMPORTS}); "
        "import at module level instead:\n" + "\n".join(f"  {m}:{line} -> {t}"
                                                        for m, t, line in local))


def test_graph_sees_known_edges() -> None:
    """The parser resolves relative imports (a guard against a vacuous graph)."""
    graph, _ = import_graph()
    assert "portagrad._tensor" in graph["portagrad._ops.elementwise"]
    assert "portagrad._dtype" in graph["portagrad._tensor"]


if __name__ == "__main__":  # the numbers, for a report
    g, loc = import_graph()
    comps = sorted((c for c in strongly_connected(g) if len(c) > 1), key=len, reverse=True)
    for c in comps:
        print(len(c), c)
    print("function-local package imports:", len(loc))
    between_ops = [x for x in loc if x[0].startswith("portagrad._ops.")
                   and x[1].startswith("portagrad._ops.")]
    print("  of which between _ops modules:", len(between_ops))
