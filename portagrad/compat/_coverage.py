"""``python -m portagrad.compat --coverage``: which public PyTorch names portagrad provides.

Each namespace of the installed PyTorch is compared with the portagrad module ``torch`` maps to
(``torch.Tensor`` with ``portagrad.Tensor``). The names of a torch namespace are counted the same
way every run:

* a module's names are its ``__all__`` when it has one, else ``dir(module)``; names that are
  modules (counted as namespaces of their own) and names imported from outside ``torch`` (typing
  helpers, ``math``) are dropped; a class's names are ``dir(cls)``;
* names beginning with ``_`` (private and dunder) are dropped;
* the ``not-portable`` filter drops names of quantization, sparse layouts and CUDA- or other
  vendor-specific features, which a portable library does not aim at (:data:`NOT_PORTABLE`).
"""
from __future__ import annotations

import importlib
import re
import types
from typing import Any

from ._alias import _package_spec, torch_to_portagrad

__all__ = ["NAMESPACES", "NOT_PORTABLE", "torch_names", "coverage", "main"]

NAMESPACES = ("torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.nn.init",
              "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data", "torch.autograd",
              "torch.distributions", "torch.linalg", "torch.fft", "torch.special",
              "torch.testing")

# quantization | sparse layouts | CUDA and other vendor- or accelerator-specific features
NOT_PORTABLE = re.compile(
    r"quant|qint|quint|q_scale|q_zero|q_per_channel|int_repr|fake_|fbgemm"
    r"|sparse|_coo|coo_|_csr|csr_|_csc|csc_|_bsr|bsr_|_bsc|bsc_|crow_|ccol_|coalesce|nnz"
    r"|^(indices|values|col_indices|row_indices|dense_dim)$"
    r"|cuda|cudnn|cufft|cublas|miopen|mkldnn|mkl|mps|xpu|hip|mtia|ipu|xla|vulkan|hpu|nnpack"
    r"|nested|privateuse")


def _module_of(obj: Any) -> str | None:
    mod = getattr(obj, "__module__", None)
    return mod if isinstance(mod, str) else None


def torch_names(ns: Any) -> list[str]:
    """The counted public names of torch namespace ``ns`` (a module or a class), sorted."""
    if isinstance(ns, types.ModuleType):
        raw = getattr(ns, "__all__", None)
        names = list(raw) if raw is not None else dir(ns)
        kept = []
        for name in names:
            obj = getattr(ns, name, None)
            if isinstance(obj, types.ModuleType):
                continue
            if type(obj).__module__ in ("typing", "typing_extensions"):
                origin: str | None = "typing"  # Optional, Callable ... and typing aliases
            elif isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
                origin = _module_of(obj)
            else:
                origin = None  # constants, dtypes: torch's own whatever their type
            if origin is not None and not origin.startswith("torch"):
                continue  # typing.Optional, math.inf ... re-exported, not torch's API
            kept.append(name)
    else:
        kept = dir(ns)
    return sorted({n for n in kept if not n.startswith("_") and not NOT_PORTABLE.search(n)})


def _resolve(name: str, root: str) -> Any:
    mod_name, obj = name, None
    if name.endswith(".Tensor"):
        mod_name, obj = name.rpartition(".")[0], "Tensor"
    if mod_name != "torch":
        mod_name = root + mod_name[len("torch"):]
    elif root != "torch":
        mod_name = root
    if root != "torch" and _package_spec(mod_name) is None:
        raise ImportError(f"no module {mod_name} in this portagrad")
    mod = importlib.import_module(mod_name)
    return getattr(mod, obj) if obj else mod


def coverage(torch: Any) -> list[tuple[str, list[str], list[str]]]:
    """``(namespace, present names, missing names)`` per namespace of :data:`NAMESPACES`."""
    rows = []
    for ns in NAMESPACES:
        try:
            names = torch_names(_resolve(ns, "torch"))
        except (ImportError, AttributeError):
            continue  # a namespace this PyTorch does not have
        target = torch_to_portagrad(ns.removesuffix(".Tensor")) or ""
        try:
            pg_ns = _resolve(ns, "portagrad") if target else None
        except (ImportError, AttributeError):
            pg_ns = None
        present = [n for n in names if pg_ns is not None and hasattr(pg_ns, n)]
        rows.append((ns, present, [n for n in names if n not in set(present)]))
    return rows


def main(missing: bool = False) -> int:
    """Print the coverage table (and the missing names with ``missing``); 0 on success."""
    try:
        import torch
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        print("portagrad.compat --coverage compares portagrad with an installed PyTorch, and "
              "PyTorch (the 'torch' package) is not installed here: nothing to compare.")
        return 0
    rows = coverage(torch)
    print(f"portagrad coverage of the public PyTorch {torch.__version__} API")
    print("counted: __all__ (else dir()) of each namespace, minus private names, submodules, "
          "re-exported non-torch names, and the not-portable filter (quantization, sparse "
          "layouts, CUDA/vendor-specific)")
    width = max(len(ns) for ns, _, _ in rows)
    total_p = total_n = 0
    for ns, present, absent in rows:
        n = len(present) + len(absent)
        total_p, total_n = total_p + len(present), total_n + n
        pct = 100.0 * len(present) / n if n else 100.0
        print(f"  {ns:<{width}}  {len(present):5d} / {n:5d}  {pct:5.1f}%")
    print(f"  {'total':<{width}}  {total_p:5d} / {total_n:5d}  {100.0 * total_p / total_n:5.1f}%")
    if missing:
        for ns, _, absent in rows:
            if absent:
                print(f"\nmissing in {ns} ({len(absent)}):")
                print("  " + " ".join(absent))
    return 0
