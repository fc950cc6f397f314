"""Which array library the ``xp`` device computes with, and how to move its arrays to the host.

``PORTAGRAD_XP_NAMESPACE`` names the library: ``array_api_strict`` (the standard and nothing more;
the default when installed), ``numpy`` (the default otherwise), ``torch``, ``jax.numpy``,
``cupy``, or any importable module whose ``asarray`` returns arrays that
``array_api_compat.array_namespace`` knows. ``PORTAGRAD_XP_DEVICE`` optionally names the library's
device for new arrays (``"cuda"`` for torch, say); by default the library's default device.

Everything the backend computes goes through the standard namespace returned by
``array_namespace``. The few things the standard leaves out are looked up here, once, as
*capabilities* with a portable fallback in the backend: whether arrays accept slice assignment
(JAX's do not) or integer-array assignment (not in the standard; numpy, torch and CuPy have it),
and a native ``erf``/``fmod`` when the library has one.
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Namespace", "load_namespace", "namespace_name"]

_KNOWN = ("array_api_strict", "numpy", "torch", "jax.numpy", "cupy")


def namespace_name() -> str:
    """The configured library: ``PORTAGRAD_XP_NAMESPACE``, else array_api_strict if importable,
    else numpy."""
    name = os.environ.get("PORTAGRAD_XP_NAMESPACE", "").strip()
    if name:
        return name
    try:
        importlib.import_module("array_api_strict")
    except ImportError:
        return "numpy"
    return "array_api_strict"


@dataclass
class Namespace:
    """The array library of the ``xp`` device and what the backend needs to know about it."""

    name: str  # as configured ("torch", "jax.numpy" ...)
    lib: Any  # the imported module
    xp: Any  # its standard namespace (array_api_compat's wrapper where the library needs one)
    device: Any  # device for new arrays (None: the library's default)
    version: str  # the library's version
    api_version: str  # the Array API version the namespace implements
    slice_assign: bool  # ``a[i:j] = v`` works in place
    int_assign: bool  # ``a[int_array] = v`` works in place (not in the standard)
    erf: Any  # a native elementwise erf, or None (the backend then computes it from the standard)
    fmod: Any  # a native C-style fmod, or None

    def dtype(self, name: str) -> Any:
        """The namespace's dtype called ``name`` (``"float32"``...), or None when it has none."""
        return getattr(self.xp, name, None)

    def to_numpy(self, a: Any) -> np.ndarray:
        """A numpy array with the contents of ``a`` (may share memory with it)."""
        if self.name == "cupy":
            return a.get()
        if self.name == "torch":
            return a.detach().cpu().numpy()
        try:
            return np.asarray(a)
        except (TypeError, RuntimeError, ValueError):  # a library without __array__
            return np.from_dlpack(a)

    def from_numpy(self, a: np.ndarray, dtype: Any) -> Any:
        """A new array of the namespace with the contents of the numpy array ``a``."""
        return self.xp.asarray(a, dtype=dtype, device=self.device, copy=True)


def _torch_is_portagrad() -> bool:
    """Whether ``import torch`` resolves to portagrad here (``python -m portagrad.compat``)."""
    try:
        from portagrad import compat
    except ImportError:  # pragma: no cover - a portagrad without the compat layer
        return False
    return bool(compat.is_installed()) or bool(
        getattr(sys.modules.get("torch"), "__portagrad_compat_shim__", False))


def load_namespace(name: str | None = None) -> Namespace:
    """Import the configured array library and describe it. Raises ``ImportError`` naming the
    library and the choices when it cannot be imported or is not an Array API library."""
    name = name or namespace_name()
    try:
        from array_api_compat import array_namespace
    except ImportError as exc:
        raise ImportError("the xp backend needs array-api-compat (pip install array-api-compat)"
                          ) from exc
    root = name.split(".")[0]
    if root == "torch" and _torch_is_portagrad():
        raise ImportError(
            "PORTAGRAD_XP_NAMESPACE=torch cannot be used under portagrad.compat: in this process "
            "`import torch` gives portagrad itself, so PyTorch cannot be the array library of "
            "the xp device; choose another namespace (array_api_strict, numpy, jax.numpy)")
    try:
        lib = importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"PORTAGRAD_XP_NAMESPACE={name!r}: cannot import {name!r} ({exc}); "
                          f"choose one of {', '.join(_KNOWN)}") from exc
    device = os.environ.get("PORTAGRAD_XP_DEVICE") or None
    try:
        xp = array_namespace(lib.asarray(0))
    except (TypeError, AttributeError) as exc:
        raise ImportError(f"PORTAGRAD_XP_NAMESPACE={name!r} is not an Array API library "
                          f"array_api_compat knows ({exc})") from exc
    version = str(getattr(importlib.import_module(root), "__version__", "?"))
    api_version = str(getattr(xp, "__array_api_version__", "?"))
    erf: Any = None
    fmod: Any = getattr(xp, "fmod", None)  # numpy, torch, CuPy and JAX have C's fmod
    if root == "torch":
        erf = lib.special.erf
    elif root == "jax":
        erf = importlib.import_module("jax.scipy.special").erf
    elif root == "cupy":
        erf = importlib.import_module("cupyx.scipy.special").erf
    elif root == "numpy":
        try:  # what the built-in cpu backend uses, so xp on numpy matches it bit for bit
            erf = importlib.import_module("scipy.special").erf
        except ImportError:
            erf = None
    return Namespace(name=name, lib=lib, xp=xp, device=device, version=version,
                     api_version=api_version, slice_assign=root != "jax",
                     int_assign=root in ("numpy", "torch", "cupy"), erf=erf, fmod=fmod)
