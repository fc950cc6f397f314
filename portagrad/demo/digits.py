"""The handwritten digits the demo trains on, shipped with portagrad (no download needed)."""
from __future__ import annotations

from importlib import resources
from typing import Any

from .. import _creation, _dtype

__all__ = ["load_digits"]


def load_digits(as_tensors: bool = True) -> tuple[Any, Any]:
    """The UCI handwritten digits: 1797 images of 8x8 pixels (values 0..16) and their labels 0..9.

    Returns ``(images, labels)``: by default a ``uint8``-valued float32 tensor of shape
    ``(1797, 8, 8)`` and an int64 tensor of shape ``(1797,)``; numpy arrays with
    ``as_tensors=False`` (``uint8`` images). See ``portagrad/demo/digits.md`` for the origin and
    licence (CC BY 4.0).
    """
    import numpy as np

    with resources.files(__package__).joinpath("digits.npz").open("rb") as fh:
        with np.load(fh) as z:
            images, labels = z["images"], z["labels"]
    if not as_tensors:
        return images, labels
    return (_creation.from_host(images.astype(np.float32)),
            _creation.from_host(labels.astype(np.int64), dtype=_dtype.int64))
