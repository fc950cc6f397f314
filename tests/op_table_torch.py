"""Run op-table rows (``tests/op_table.py``) on PyTorch, to check what the table says PyTorch does.

A row's ``op`` is written against portagrad (``pg.roll``, ``F.pixel_shuffle``, ``x.repeat(2)``).
:func:`torch_op` rebuilds it against torch: the function's globals, defaults and closure cells
get torch's objects for portagrad's (the ``pg`` module, its submodules, its functions found by
name, its dtypes); tensor methods need nothing, torch has the same. A row that does not translate,
or a sample torch refuses, is reported as such rather than guessed.

As a script it prints every row and sample whose ``aliases`` field disagrees with torch (the rows
to fix when adding ops), and the rows it could not run::

    python tests/op_table_torch.py
"""
from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import portagrad as pg

from op_table import OP_TABLE, OpInfo, Sample, expected_alias

try:
    import torch
except ImportError:  # optional: only the check against torch needs it
    torch = None

__all__ = ["torch", "torch_op", "torch_args", "torch_shares", "torch_alias", "Untranslatable"]


class Untranslatable(Exception):
    """A row's op has no torch counterpart under the same name."""


_PG_TORCH_MODULES = ("", ".nn.functional", ".linalg", ".special", ".fft")


def _by_name(fn: Any) -> Any:
    """torch's function of the same public name as portagrad's ``fn``."""
    for sub in _PG_TORCH_MODULES:
        try:
            pmod = importlib.import_module("portagrad" + sub)
            tmod = importlib.import_module("torch" + sub)
        except ImportError:
            continue
        for name, value in vars(pmod).items():
            if value is fn and not name.startswith("_") and hasattr(tmod, name):
                return getattr(tmod, name)
    raise Untranslatable(getattr(fn, "__qualname__", repr(fn)))


def _convert(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, pg.dtype):
        return getattr(torch, str(value).rsplit(".", 1)[-1])
    if isinstance(value, types.ModuleType) and value.__name__.startswith("portagrad"):
        return importlib.import_module("torch" + value.__name__[len("portagrad"):])
    if isinstance(value, pg.Tensor):
        return torch.from_numpy(value.numpy(force=True).copy())
    if isinstance(value, types.FunctionType):
        return torch_op(value, memo)
    if callable(value) and str(getattr(value, "__module__", "")).startswith("portagrad"):
        return _by_name(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, memo) for k, v in value.items()}
    return value


def torch_op(fn: Callable, memo: dict[int, Any] | None = None) -> Callable:
    """``fn`` (an op-table row's op) with torch in place of portagrad."""
    memo = {} if memo is None else memo
    if id(fn) in memo:
        return memo[id(fn)]
    if str(getattr(fn, "__module__", "")).startswith("portagrad"):
        out = _by_name(fn)
    elif isinstance(fn, types.FunctionType) and fn.__module__ == "op_table":
        memo[id(fn)] = fn  # (a function naming itself keeps its own name)
        glob = {k: _convert(fn.__globals__[k], memo) for k in fn.__code__.co_names
                if k in fn.__globals__}
        glob["__builtins__"] = fn.__globals__.get("__builtins__", __builtins__)
        cells = tuple(types.CellType(_convert(c.cell_contents, memo))
                      for c in fn.__closure__ or ())
        out = types.FunctionType(fn.__code__, glob, fn.__name__,
                                 _convert(fn.__defaults__, memo) if fn.__defaults__ else None,
                                 cells or None)
        if fn.__kwdefaults__:
            out.__kwdefaults__ = _convert(fn.__kwdefaults__, memo)
    else:
        out = fn
    memo[id(fn)] = out
    return out


def _tensor(arr: np.ndarray, nc: str | None) -> Any:
    """``op_table.make_tensor`` on torch: the same layouts (transposed, every other element)."""
    if nc and arr.ndim >= 1 and arr.size:
        if nc == "T" and arr.ndim >= 2:
            return torch.tensor(np.ascontiguousarray(np.swapaxes(arr, -1, -2))).transpose(-1, -2)
        big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        big[..., ::2] = arr
        return torch.tensor(big)[..., ::2]
    return torch.tensor(arr)


def torch_args(obj: Any, nc: str | None) -> Any:
    """A sample's arguments as torch tensors (and torch dtypes)."""
    if isinstance(obj, np.ndarray):
        return _tensor(obj, nc)
    if isinstance(obj, list):
        return [torch_args(o, nc) for o in obj]
    if isinstance(obj, tuple):
        return tuple(torch_args(o, nc) for o in obj)
    return _convert(obj, {})


def _flat(obj: Any) -> list:
    if isinstance(obj, (list, tuple)):
        return [y for x in obj for y in _flat(x)]
    return [obj]


def torch_shares(a: Any, b: Any) -> bool:
    """Whether torch tensors ``a`` and ``b`` share storage (the data pointer of their storages;
    for empty storages, whose pointers say nothing, whether they are views of one base)."""
    if a is b:
        return True
    pa, pb = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    if pa and pa == pb:
        return True
    return (a._base if a._is_view() else a) is (b._base if b._is_view() else b)


def torch_alias(row: OpInfo, dtype: Any, sample: Sample) -> list[bool] | None:
    """Whether each tensor torch returns for ``row`` on ``sample`` shares storage with one of
    its tensor inputs; ``None`` if torch refuses the call."""
    op = torch_op(row.op)
    args = torch_args(sample.args, sample.nc)
    kwargs = torch_args(sample.kwargs, None)
    try:
        with torch.no_grad():
            out = op(*args, **kwargs)
    except Exception:  # torch refuses this sample: nothing to compare
        return None
    inputs = [t for t in _flat(args) if isinstance(t, torch.Tensor)]
    outs = [out] if isinstance(out, torch.Tensor) else [
        t for t in _flat(tuple(out)) if isinstance(t, torch.Tensor)]
    return [any(torch_shares(o, i) for i in inputs) for o in outs]


def disagreements() -> tuple[list[str], list[str], int]:
    """``(samples whose table answer is not torch's, rows not run on torch, samples compared)``:
    a row is not run if its op does not translate or torch refuses all its samples."""
    wrong: list[str] = []
    skipped: list[str] = []
    compared = 0
    for row in OP_TABLE:
        if row.factory:
            continue
        try:
            torch_op(row.op)
        except Untranslatable as e:
            skipped.append(f"{row.name}: no torch function {e}")
            continue
        ran = 0
        for dtype in row.dtypes:
            for sample in row.samples(dtype, np.random.default_rng(1234)):
                got = torch_alias(row, dtype, sample)
                if got is None:
                    continue
                ran += 1
                want = expected_alias(row, dtype, sample)
                if any(g != want for g in got):
                    wrong.append(f"{row.name} {dtype} {sample!r}: torch {got}, table {want}")
        if not ran:
            skipped.append(f"{row.name}: torch refuses every sample")
        compared += ran
    return wrong, skipped, compared


if __name__ == "__main__":
    if torch is None:
        raise SystemExit("torch is not installed")
    bad, untranslated, n = disagreements()
    print("\n".join(bad) or f"every row's `aliases` agrees with torch ({n} samples)")
    if untranslated:
        print("not run on torch:\n  " + "\n  ".join(untranslated))
