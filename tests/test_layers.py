"""The package's import graph: declared layers, imports only downwards, no cycles, and one door to
the backend.

Every module of ``portagrad/`` is parsed with ``ast``; an edge ``a -> b`` is an import of package
module ``b`` anywhere in ``a`` (module level or inside a function), except under
``if TYPE_CHECKING:``, which never runs. ``from . import x`` counts as importing submodule ``x``
when ``x`` is one, else as importing the package itself.

The layers, bottom first, are :data:`LAYERS`; every module belongs to one (the longest declared
prefix of its dotted name), and a module imports only from its own layer or those below it. Within
a layer any import is allowed as long as the graph has no cycle. ``Tensor``'s methods reach the op
layer through names bound once by ``portagrad/__init__.py`` (``_tensor_api._bind``), which is no
import. What remains of the knot is the ``DEFERRED`` imports below: imports of a higher layer made
at call time, each for a stated reason. Without them the graph must have no cycle and no upward
edge, and each must still exist, so the list can only shrink.

``_raw``, the one door to the backend, is imported by the op layer (``portagrad/_ops/``), the
optimizers' door (``optim/_inplace.py``) and the step capture (``capture/``); any other importer is
listed in :data:`RAW_IMPORTERS` with the reason it needs raw buffers.

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
    ("portagrad._ops.indexing", "portagrad._ops.segment"):
        "scatter(reduce='multiply') is PyTorch's deprecated spelling of scatter_reduce('prod'), "
        "which segment builds on indexing's scatter",
    ("portagrad.storage", "portagrad._creation"):
        "a storage's clone (copy.copy, copy.deepcopy) copies its bytes through a tensor made over "
        "them: a storage record cannot allocate",
    ("portagrad._tensor", "portagrad.multiprocessing.reductions"):
        "pickling a tensor loads Python's multiprocessing machinery only when it is needed",
    ("portagrad._tensor_api", "portagrad.multiprocessing.reductions"):
        "share_memory_ loads Python's multiprocessing machinery only when it is needed",
    ("portagrad.nn.modules.module", "portagrad._compile"):
        "Module.compile() is torch.compile of the module, and compile tells a module from a "
        "function (it captures functions, runs modules eagerly)",
}

#: The layers, bottom first: (name, what it holds, module prefixes relative to ``portagrad``).
#: ``"portagrad"`` is the package's ``__init__`` alone, not a prefix of everything.
LAYERS: list[tuple[str, str, list[str]]] = [
    ("base", "dtypes, shapes, storage records, settings, errors, torch.backends-style flags",
     ["_dtype", "_shape", "_storage", "storage", "_file_reader", "_layout", "_memory_format",
      "_settings", "_format", "_dlpack", "_blas_env", "errors", "backend_flags", "futures", "torch_version",
      "_version", "version", "_autocast_policy"]),
    ("backends", "the backend contract, the built-in backends, the plugin manager that finds them",
     ["backends", "plugins"]),
    ("devices", "device objects and memory statistics, through the plugin manager",
     ["_device", "_memory"]),
    ("nodes", "what a Tensor points at: graph nodes, Function, grad mode, anomaly and profiling flags",
     ["autograd.grad_mode", "autograd.anomaly", "autograd._profiling", "autograd.function",
      "autograd.variable", "autograd.profiler", "autograd._saved_hooks"]),
    ("tensor", "Tensor and its declared methods; the autocast state the op entry points test",
     ["_tensor", "_tensor_api", "_autocast"]),
    ("door", "the one door to the backend (_raw) and the factories that allocate through it",
     ["_raw", "_creation"]),
    ("engine", "the backward engine",
     ["autograd.engine"]),
    ("ops", "the op layer: every autograd Function and its derivative (_ops/nn: the layers' "
     "nodes), random numbers, the in-place rule",
     ["_ops", "_random", "autograd.inplace"]),
    ("api", "the surface composed from ops: autograd's functions, top-level functions, devices",
     ["autograd", "autograd.gradcheck", "autograd.graph", "_toplevel", "_toplevel_sym",
      "linalg", "fft", "sparse", "_legacy", "_safe_globals", "accelerator", "cuda", "mps", "amp",
      "profiler", "onnx", "_C", "types", "overrides", "signal"]),
    ("library", "nn, optim, data, distributions, distributed training, files, step capture",
     ["nn", "optim", "utils", "distributions", "distributed", "multiprocessing", "_toplevel_nn",
      "_toplevel_native", "_toplevel_random", "random", "special", "_torch_format", "serialization",
      "capture", "_compile", "jit", "_dynamo", "compiler", "hub", "fx", "library", "ops",
      "_custom_ops", "ao", "func", "_vmap"]),
    ("package", "the namespace and what runs on it: CLI, demo, conformance kit, torch compat",
     ["portagrad", "_info", "demo", "testing", "compat", "__main__"]),
]

#: Where ``_raw`` may be imported without a reason of its own.
RAW_HOMES = ("portagrad._ops", "portagrad.optim._inplace", "portagrad.capture")
#: Every other importer of ``_raw``, and why it needs raw buffers.
RAW_IMPORTERS: dict[str, str] = {
    "portagrad": "binds Tensor's operator fast paths to _raw's primitives once, at import "
                 "(_tensor_api._bind)",
    "portagrad._creation": "the factories allocate and fill new tensors; they record nothing",
    "portagrad._random": "random fills write new tensors through the backend's generator",
    "portagrad.autograd.function": "AccumulateGrad adds into leaf.grad",
    "portagrad.autograd.engine": "seeds the gradient with ones and disowns gradients between nodes",
    "portagrad.autograd.inplace": "the in-place rule writes a result into the target's own memory",
    "portagrad.distributed._collectives": "collectives hand device buffers to MPI and bump the "
                                          "version of what they wrote, outside autograd",
    "portagrad.distributed._staging": "staged copies bump the version of the tensor they fill",
    "portagrad.nn.parallel.distributed": "DDP packs gradients into flat buckets and back outside "
                                         "autograd (as torch's Reducer)",
}


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (``None``: undeclared)."""
    rel = module.split(".")[1:]
    if not rel:
        prefixes = ["portagrad"]
    else:
        prefixes = [".".join(rel[:k]) for k in range(len(rel), 0, -1)]
    for p in prefixes:
        for i, (_, _, mods) in enumerate(LAYERS):
            if p in mods:
                return i
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The edges ``(a, b)`` of ``graph`` where ``b`` lies in a higher layer than ``a``."""
    bad = []
    for a, targets in graph.items():
        la = layer_of(a)
        for b in targets:
            lb = layer_of(b)
            if la is not None and lb is not None and lb > la:
                bad.append((a, b))
    return sorted(bad)


# Function-local imports of package modules, at most (226 before the layers were drawn). Most left
# are the deferred imports above, autograd's entry points (autograd is loaded by _tensor, before
# Tensor exists), the in-place rule's call-time access to _raw and the op layer, and plugins and CLI
# subcommands loaded on demand, and the numpy backend's numba kernels (their module imports numba,
# an optional dependency, so it is loaded on first use).
MAX_LOCAL_IMPORTS = 30


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


def test_every_module_has_a_declared_layer() -> None:
    graph, _ = import_graph()
    undeclared = sorted(m for m in graph if layer_of(m) is None)
    assert not undeclared, f"modules in no layer (add them to LAYERS): {undeclared}"
    declared = {p for _, _, mods in LAYERS for p in mods}
    tops = {m.split(".")[1] for m in graph if m != "portagrad"} | {"portagrad"}
    assert tops <= declared | {p.split(".")[0] for p in declared}
    assert len(declared) == sum(len(mods) for _, _, mods in LAYERS), "a prefix in two layers"


def test_imports_point_down_the_layers() -> None:
    graph, _ = import_graph()
    for src, dst in DEFERRED:
        graph[src].discard(dst)
    bad = upward_imports(graph)
    assert not bad, "imports of a higher layer:\n" + "\n".join(
        f"  {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in bad)


def test_the_layer_check_sees_an_upward_import() -> None:
    """Against a vacuous check: a made-up edge from the bottom to the top is reported, one from
    the top to the bottom is not."""
    graph = {"portagrad._dtype": {"portagrad.nn.functional"},
             "portagrad.nn.functional": {"portagrad._dtype"}, "portagrad._tensor": {"portagrad._raw"}}
    assert upward_imports(graph) == [("portagrad._dtype", "portagrad.nn.functional"),
                                     ("portagrad._tensor", "portagrad._raw")]
    assert layer_of("portagrad") != layer_of("portagrad._dtype")
    assert layer_of("portagrad.autograd.function") < layer_of("portagrad._tensor") \
        < layer_of("portagrad._raw") < layer_of("portagrad.autograd.engine") \
        < layer_of("portagrad._ops.nn.linear") < layer_of("portagrad.nn.functional")


def test_raw_is_imported_only_by_its_homes_and_listed_modules() -> None:
    graph, _ = import_graph()
    importers = {m for m, targets in graph.items() if "portagrad._raw" in targets}
    unlisted = sorted(m for m in importers
                      if not m.startswith(RAW_HOMES) and m not in RAW_IMPORTERS)
    assert not unlisted, (f"modules importing _raw outside {RAW_HOMES}: {unlisted}; go through an "
                          "op (or optim._inplace), or list the module in RAW_IMPORTERS with why")
    stale = sorted(m for m in RAW_IMPORTERS if m not in importers)
    assert not stale, f"no longer import _raw: drop them from RAW_IMPORTERS: {stale}"
    assert "portagrad.nn.functional" not in importers
    assert not any(m.startswith("portagrad.nn.") and m != "portagrad.nn.parallel.distributed"
                   for m in importers)


def test_autograd_functions_live_in_the_op_layer() -> None:
    """Every ``Function`` subclass of the package is defined under ``_ops/`` (or is the engine's
    own machinery in ``autograd/``): one home for every derivative."""
    homes = ("portagrad._ops", "portagrad.autograd")
    hooks = {"portagrad.nn.modules.module._BackwardHookFunction":
             "an identity node whose backward runs a module's full backward hooks (torch's "
             "BackwardHookFunction): it holds no derivative"}
    found = []
    for name, path in _module_names().items():
        if name.startswith(homes):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id == "Function")
                    or (isinstance(b, ast.Attribute) and b.attr == "Function") for b in node.bases):
                found.append(f"{name}.{node.name}")
    assert sorted(set(found) - set(hooks)) == [], f"autograd Functions outside the op layer: {found}"
    assert set(hooks) <= set(found), "a listed exception is gone: drop it"


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
