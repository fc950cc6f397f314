"""``repr`` of tensors in PyTorch's style."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _dtype

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["format_tensor", "set_printoptions"]

_DEFAULTS: dict[str, Any] = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80}
_PROFILES: dict[str, dict[str, Any]] = {
    "default": dict(_DEFAULTS),
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
_opts: dict[str, Any] = {**_DEFAULTS, "sci_mode": None}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     sci_mode: bool | None = None, profile: str | None = None) -> None:
    """Options for printing tensors (as ``torch.set_printoptions``).

    ``profile`` (``'default'``, ``'short'`` or ``'full'``) first sets precision, threshold,
    edgeitems and linewidth; the other arguments given then override it. ``sci_mode`` is set on
    every call (``None``, automatic, when not given), as in PyTorch.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}, expected one of "
                             f"{sorted(_PROFILES)}")
        _opts.update(_PROFILES[profile])
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _opts[k] = v
    _opts["sci_mode"] = sci_mode


class _Formatter:
    """Formats the elements of one real array (or the real/imaginary parts of a complex one) at
    one common width, chosen from the array's values as PyTorch does."""

    def __init__(self, arr: np.ndarray) -> None:
        self.kind = "f" if arr.dtype.kind == "f" else ("b" if arr.dtype.kind == "b" else "i")
        self.int_mode = True
        self.sci = False
        self.width = 1
        if self.kind == "b":
            self.width = max((len(str(bool(v))) for v in arr.reshape(-1)), default=1)
            return
        if self.kind == "i":
            self.width = max((len(str(int(v))) for v in arr.reshape(-1)), default=1)
            return
        prec = _opts["precision"]
        vals = arr.reshape(-1).astype(np.float64)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:  # nothing to size the column by: nan, inf and zeros print as they are
            return
        absv = np.abs(nz)
        amax, amin = float(absv.max()), float(absv.min())
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        sci = amax / amin > 1000.0 or amax > 1.0e8
        if not self.int_mode:
            sci = sci or amin < 1.0e-4
        if _opts["sci_mode"] is not None:
            sci = bool(_opts["sci_mode"])
        self.sci = sci
        uniq = np.unique(nz)
        if sci:
            self.width = max(len(f"{v:.{prec}e}") for v in uniq)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in uniq)
        else:
            self.width = max(len(f"{v:.{prec}f}") for v in uniq)

    def format(self, v: Any) -> str:
        if self.kind == "b":
            s = str(bool(v))
        elif self.kind == "i":
            s = str(int(v))
        else:
            v = float(v)
            prec = _opts["precision"]
            if self.sci:
                s = f"{v:.{prec}e}"
            elif self.int_mode:
                s = f"{v:.0f}" + ("." if math.isfinite(v) else "")
            else:
                s = f"{v:.{prec}f}"
        return s.rjust(self.width)


class _ComplexFormatter:
    """The real parts right-aligned together; the imaginary parts formatted together, stripped,
    with their sign always shown, then ``j``."""

    def __init__(self, arr: np.ndarray) -> None:
        self.real = _Formatter(arr.real)
        self.imag = _Formatter(arr.imag)
        self.width = self.real.width + self.imag.width + 1  # as PyTorch sizes its lines

    def format(self, v: Any) -> str:
        im = self.imag.format(v.imag).lstrip()
        return self.real.format(v.real) + (im if im[0] in "+-" else "+" + im) + "j"


def _summarized(arr: np.ndarray, edge: int) -> np.ndarray:
    """Only the values that a summarized print shows (used to size the columns)."""
    for d in range(arr.ndim):
        if arr.shape[d] > 2 * edge:
            idx = np.r_[0:edge, arr.shape[d] - edge:arr.shape[d]]
            arr = np.take(arr, idx, axis=d)
    return arr


def _vector(arr: np.ndarray, indent: int, summarize: bool, fmt: Any) -> str:
    edge = _opts["edgeitems"]
    element_length = fmt.width + 2
    per_line = max(1, int(math.floor((_opts["linewidth"] - indent) / element_length)))
    if summarize and arr.shape[0] > 2 * edge:
        data = ([fmt.format(v) for v in arr[:edge]] + [" ..."]
                + [fmt.format(v) for v in arr[arr.shape[0] - edge:]])
    else:
        data = [fmt.format(v) for v in arr]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr: np.ndarray, indent: int, summarize: bool, fmt: Any) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    edge = _opts["edgeitems"]
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        slices = ([_nested(arr[i], indent + 1, summarize, fmt) for i in range(edge)] + ["..."]
                  + [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n - edge, n)])
    else:
        slices = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _host_values(t: Tensor) -> np.ndarray:
    arr = t.detach()._host()
    if arr.dtype.kind not in "biufc":  # bfloat16 and other types numpy knows only as opaque
        arr = arr.astype(np.float32)
    return np.asarray(arr)


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items, starting a new line (indented like the data) for one that
    would run past the line width. Lengths are measured as PyTorch spells the suffix
    (``torch.float64``), so lines break where PyTorch's do."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    linewidth = _opts["linewidth"]
    for suffix in suffixes:
        n = len(suffix.replace("portagrad.", "torch."))
        if last_line_len + n + 2 > linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + n
        else:
            parts.append(", " + suffix)
            last_line_len += n + 2
    return "".join(parts) + ")"


def format_tensor(t: Tensor) -> str:
    """``tensor([...], device='opencl:0', dtype=..., requires_grad=True)``."""
    prefix = "tensor("
    indent = len(prefix)
    try:
        arr = _host_values(t)
    except Exception as exc:  # a repr must never raise
        return f"tensor(<unavailable: {exc}>, device='{t.device}', dtype={t.dtype})"
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if arr.size == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not _dtype.get_default_dtype():
            suffixes.append(f"dtype={t.dtype!r}")
    else:
        summarize = arr.size > _opts["threshold"]
        shown = _summarized(arr, _opts["edgeitems"]) if summarize else arr
        fmt: _Formatter | _ComplexFormatter = (
            _ComplexFormatter(shown) if arr.dtype.kind == "c" else _Formatter(shown))
        body = _nested(arr, indent, summarize, fmt)
        default_for_data = (t.dtype is _dtype.get_default_dtype() or t.dtype is _dtype.int64
                            or t.dtype is _dtype.bool or t.dtype is _dtype.default_complex())
        if not default_for_data:
            suffixes.append(f"dtype={t.dtype!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
