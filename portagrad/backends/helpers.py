"""Public helpers for backend authors: what every backend needs besides its own kernels.

Import them from here (the one public, documented place)::

    from portagrad.backends.helpers import visible_indices, philox_uniform, DTYPES

* **Visible devices** -- :func:`visible_indices` applies ``PORTAGRAD_VISIBLE_DEVICES`` (as
  ``CUDA_VISIBLE_DEVICES``) to a backend's physical devices: ``device_count()`` returns
  ``len(visible_indices(device_type, n_physical))`` and logical index ``i`` is physical device
  ``visible_indices(...)[i]``.
* **Random numbers** -- :func:`philox4x32`, :func:`philox_words`, :func:`philox_uniform` and
  :func:`philox_normal` are the numpy reference of the Philox stream that :meth:`Backend.random
  <portagrad.backends.interface.Backend.random>` must reproduce (see "Random numbers" in
  :mod:`portagrad.backends.interface`). A backend can fill its output from them on the host, or
  test its kernel against them; :func:`philox_slots` is how many of the stream's words one element
  of a draw takes.
* **Dtypes** -- :data:`DTYPES` (every portagrad dtype, by name), :data:`NUMPY_DTYPES` (name ->
  numpy dtype; bfloat16 is ml_dtypes'), :data:`FLOATING_DTYPES` / :data:`INTEGER_DTYPES`, and
  :func:`from_numpy_dtype`. ``View.dtype`` is one of these objects; compare with ``is``.
* **Strides and errors** -- :func:`contiguous_strides` (element strides of a C-order shape),
  :func:`unknown_op` (the typed error for an op name outside the contract) and
  :data:`BINARY_UFUNCS` (the numpy ufunc that defines each binary/comparison op) with
  :func:`fit_scalar` (PyTorch's checked conversion of a Python scalar stored into a narrow
  integer tensor, for ``fill`` and ``where``), and :func:`half_scalar_operands` (how PyTorch takes a
  Python scalar operand of a float16/bfloat16 binary op: at float32 as the second operand of
  ``mul``/``div``/``floordiv``, else rounded to the 16-bit type first).
* **Memory statistics** -- :class:`MemoryCounter`: per-device byte counts that go down as buffers
  are freed. Every :class:`~portagrad.backends.interface.Backend` has one
  (``self.memory_counter``); calling ``self.memory_counter.track(index, buffer, nbytes)`` in
  ``allocate`` is all a backend does to get real ``memory_stats``.

The older paths ``portagrad.backends._visible`` and ``portagrad.backends.philox`` keep working.
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from .. import _dtype
from .._dtype import dtype, from_numpy_dtype
from .._shape import contiguous_strides
from ._memory_counter import MemoryCounter
from ._visible import visible_indices
from .interface import unknown_op
from .philox import normal as philox_normal
from .philox import philox4x32
from .philox import slots as philox_slots
from .philox import uniform as philox_uniform
from .philox import words as philox_words
from .ufuncs import BINARY_UFUNCS, fit_scalar, half_scalar_operands

__all__ = [
    "visible_indices", "philox4x32", "philox_words", "philox_slots", "philox_uniform", "philox_normal",
    "DTYPES", "NUMPY_DTYPES",
    "FLOATING_DTYPES", "INTEGER_DTYPES", "from_numpy_dtype", "contiguous_strides", "unknown_op",
    "BINARY_UFUNCS", "fit_scalar", "half_scalar_operands", "MemoryCounter",
]

DTYPES: MappingProxyType[str, dtype] = MappingProxyType({d.name: d for d in _dtype.ALL_DTYPES})
"""Every portagrad dtype by name: ``bool``, ``uint8``, ``int8``, ``int16``, ``int32``,
``int64``, ``float16``, ``bfloat16``, ``float32``, ``float64``."""

NUMPY_DTYPES: MappingProxyType[str, np.dtype] = MappingProxyType(
    {d.name: d.numpy for d in _dtype.ALL_DTYPES})
"""Dtype name -> the numpy dtype of its host arrays (``to_host``/``from_host``); ``bfloat16`` is
``ml_dtypes.bfloat16``."""

FLOATING_DTYPES: frozenset[dtype] = frozenset(d for d in _dtype.ALL_DTYPES if d.is_floating_point)
"""``float16``, ``bfloat16``, ``float32``, ``float64``."""

INTEGER_DTYPES: frozenset[dtype] = frozenset(
    d for d in _dtype.ALL_DTYPES if not d.is_floating_point and d is not _dtype.bool)
"""``uint8``, ``int8``, ``int16``, ``int32``, ``int64`` (``bool`` is neither)."""
