"""``repr`` of tensors in PyTorch's style."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import _dtype

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["format_tensor", "set_printoptions"]

_opts = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision: int | None = None, threshold: int | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     sci_mode: bool | None = None, profile: str | None = None) -> None:
    """Options for printing tensors (as ``torch.set_printoptions``)."""
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _opts[k] = v
    _opts["sci_mode"] = sci_mode


def _float_formatter(arr: np.ndarray) -> dict:
    finite = arr[np.isfinite(arr)] if arr.size else arr
    prec = _opts["precision"]
    if finite.size == 0:
        return {"float_kind": lambda v: f"{v:.{prec}f}".replace("nan", "nan")}
    amax = float(np.abs(finite).max())
    amin = float(np.abs(finite[finite != 0]).min()) if np.any(finite != 0) else 0.0
    ints = bool(np.all(finite == np.round(finite)))
    sci = _opts["sci_mode"]
    if sci is None:
        sci = amax >= 1e8 or (amin != 0 and amin < 1e-4) or (amin != 0 and amax / amin > 1e3
                                                            and not ints and amax >= 1e4)
    if sci:
        return {"float_kind": lambda v: f"{v:.{prec}e}"}
    if ints:
        return {"float_kind": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
    return {"float_kind": lambda v: f"{v:.{prec}f}"}


def _padded(formatter: dict, kind: str, arr: np.ndarray) -> dict:
    """Right-align every element to the widest one, as PyTorch does (``[ 1.5000, -2.0000]``)."""
    f = formatter[kind]
    width = max((len(f(v)) for v in np.unique(arr.reshape(-1))), default=0)
    return {kind: lambda v: f(v).rjust(width)}


def _complex_formatter(arr: np.ndarray) -> dict:
    """PyTorch's complex elements: the real parts formatted (and right-aligned) together, the
    imaginary parts formatted together with a sign always shown, then ``j``."""
    real = _padded(_float_formatter(arr.real), "float_kind", arr.real)["float_kind"]
    imag = _float_formatter(arr.imag)["float_kind"]

    def fmt(v: complex) -> str:
        im = imag(v.imag).strip()
        return real(v.real) + (im if im[0] in "+-" else "+" + im) + "j"

    return {"complex_kind": fmt}


def format_tensor(t: Tensor) -> str:
    """``tensor([...], device='opencl:0', dtype=..., requires_grad=True)``."""
    try:
        arr = t.detach()._host()
    except Exception as exc:  # a repr must never raise
        return f"tensor(<unavailable: {exc}>, device='{t.device}', dtype={t.dtype})"
    kw: dict = {}
    if arr.dtype == _dtype.bfloat16.numpy:  # numpy formats it as an opaque type (kind "V")
        arr = arr.astype(np.float32)
    if arr.dtype.kind == "f":
        kw["formatter"] = _padded(_float_formatter(arr), "float_kind", arr)
    elif arr.dtype.kind == "c":
        kw["formatter"] = _complex_formatter(arr)
    elif arr.dtype == np.bool_:
        kw["formatter"] = _padded({"bool": lambda v: "True" if v else "False"}, "bool", arr)
    body = np.array2string(arr, separator=", ", prefix="tensor(", threshold=_opts["threshold"],
                           edgeitems=_opts["edgeitems"], max_line_width=_opts["linewidth"], **kw)
    suffix = []
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    default_for_data = (t.dtype is _dtype.get_default_dtype() or t.dtype is _dtype.int64
                        or t.dtype is _dtype.bool or t.dtype is _dtype.default_complex())
    if not default_for_data or (t.numel() == 0 and t.dtype is not _dtype.get_default_dtype()):
        suffix.append(f"dtype={t.dtype!r}".replace("portagrad.", "portagrad."))
    if t.numel() == 0 and t.dim() != 1:
        suffix.append(f"size={tuple(t.shape)}")
    if t._grad_fn is not None:
        suffix.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
