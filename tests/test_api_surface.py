"""``pg.X`` and ``Tensor.X`` are one implementation: each method declared in
:class:`portagrad._tensor_api.TensorOps` that delegates to an op function delegates to the very
function ``pg`` exports under the same name, and aliases are the same objects on both sides."""
from __future__ import annotations

import ast
import inspect
import types

import portagrad as pg
from portagrad import _ops, _tensor_api


def _dotted(node: ast.expr) -> str | None:
    """``"_ops.elementwise"`` for the expression ``_ops.elementwise`` (names and attributes)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


#: The module paths methods delegate through: the package, the factories, random, autograd and
#: each op module (``_ops.<module>``).
_MODULE_PATHS = {"_portagrad", "_creation", "_random", "_autograd"} | {
    f"_ops.{m}" for m in _ops.__all__}


def _resolve(path: str) -> object:
    """The object the module global path ``path`` names in ``_tensor_api`` (bound by _bind)."""
    head, *rest = path.split(".")
    obj = getattr(_tensor_api, head)
    for part in rest:
        obj = getattr(obj, part)
    return obj


def _delegations() -> dict[str, tuple[str, str]]:
    """``method -> (module path, function)`` for methods whose body is
    ``return _ops.m.f(self, ...)`` (or ``_creation.f(self, ...)``...), aliases (``subtract =
    sub``) resolved."""
    tree = ast.parse(inspect.getsource(_tensor_api))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TensorOps")
    out: dict[str, tuple[str, str]] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            body = [s for s in node.body if not (isinstance(s, ast.Expr)
                                                 and isinstance(s.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return):
                continue
            call = body[0].value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and _dotted(call.func.value) in _MODULE_PATHS and call.args
                    and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"):
                out[node.name] = (str(_dotted(call.func.value)), call.func.attr)
        elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
              and node.value.id in out):
            for target in node.targets:
                    assert isinstance(target, ast.Name)
                    out[target.id] = out[node.value.id]
    return out


def test_methods_and_pg_functions_share_one_implementation() -> None:
    delegations = _delegations()
    checked = []
    for name in pg.__all__:
        fn = getattr(pg, name)
        if not isinstance(fn, types.FunctionType) or name not in delegations:
            continue
        alias, attr = delegations[name]
        if getattr(fn, "__wrapped__", None) is getattr(pg.Tensor, name, None):
            continue  # the function form of an in-place method calls that very method
        assert getattr(_resolve(alias), attr) is fn, (
            f"Tensor.{name} calls {alias}.{attr}, which is not pg.{name}")
        checked.append(name)
    assert len(checked) >= 150, checked  # a guard against a vacuous check


def test_aliases_are_the_same_method() -> None:
    for alias, name in [("subtract", "sub"), ("multiply", "mul"), ("divide", "div"),
                        ("true_divide", "div"), ("clip", "clamp"), ("swapaxes", "transpose"),
                        ("swapdims", "transpose"), ("moveaxis", "movedim"), ("absolute", "abs"),
                        ("negative", "neg"), ("greater", "gt"), ("not_equal", "ne"),
                        ("subtract_", "sub_"), ("clip_", "clamp_")]:
        assert getattr(pg.Tensor, alias) is getattr(pg.Tensor, name), alias
        if not alias.endswith("_"):
            assert getattr(pg, alias) is getattr(pg, name), alias


def test_nn_modules_all_lists_every_submodule_export_in_order():
    # nn.modules.__all__ is written out for type checkers: it must stay the submodules' lists
    import importlib

    import portagrad.nn.modules as M

    subs = ["activation", "batchnorm", "container", "conv", "dropout", "flatten", "linear", "loss",
            "misc", "normalization", "pooling", "rnn", "sparse", "transformer",
            "pixelshuffle", "adaptive", "linear_cross_entropy"]
    expected = ["Module"]
    for name in subs:
        expected += importlib.import_module(f"portagrad.nn.modules.{name}").__all__
    assert M.__all__ == expected
    assert all(hasattr(M, n) for n in M.__all__)
