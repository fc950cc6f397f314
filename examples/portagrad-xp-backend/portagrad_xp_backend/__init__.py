"""A portagrad backend on the Python Array API standard (device type ``xp``).

The array library is chosen with ``PORTAGRAD_XP_NAMESPACE`` (``array_api_strict``, ``numpy``,
``torch``, ``jax.numpy``, ``cupy``; by default ``array_api_strict`` when it is installed, else
``numpy``); see :mod:`portagrad_xp_backend.namespace`.
"""
from .backend import XpBackend
from .namespace import Namespace, load_namespace

__all__ = ["XpBackend", "Namespace", "load_namespace"]
