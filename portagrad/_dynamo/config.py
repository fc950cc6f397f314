"""``torch._dynamo.config``: the settings of PyTorch's graph capturer, as module attributes.

portagrad's :func:`portagrad.compile` runs eagerly, so none of these changes a computation; they
hold what a script sets, with PyTorch's defaults, so that code tuning them (raising
``cache_size_limit``, turning on ``suppress_errors``) runs. :func:`patch` sets some of them for a
block or a function, as PyTorch's config modules do.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["cache_size_limit", "accumulated_cache_size_limit", "recompile_limit",
           "accumulated_recompile_limit", "suppress_errors", "verbose", "optimize_ddp",
           "capture_scalar_outputs", "capture_dynamic_output_shape_ops",
           "automatic_dynamic_shapes", "assume_static_by_default", "inline_inbuilt_nn_modules",
           "patch"]

recompile_limit = 8
accumulated_recompile_limit = 256
cache_size_limit = 8  # the older names of the two limits above
accumulated_cache_size_limit = 256
suppress_errors = False
verbose = False
optimize_ddp: bool | str = True
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
inline_inbuilt_nn_modules = True


@contextlib.contextmanager
def patch(arg: dict[str, Any] | str | None = None, value: Any = None, /,
          **changes: Any) -> Iterator[None]:
    """Set settings for a ``with`` block (or, as a decorator, a function call) and restore them:
    ``patch(suppress_errors=True)``, ``patch("verbose", True)``, ``patch({"verbose": True})``.
    An unknown name raises ``AttributeError``."""
    if isinstance(arg, str):
        changes[arg] = value
    elif isinstance(arg, dict):
        changes.update(arg)
    elif arg is not None:
        raise TypeError(f"patch(): expected a name, a dict or keywords, got {type(arg).__name__}")
    module = sys.modules[__name__]
    for name in changes:
        if name not in __all__ or name == "patch":
            raise AttributeError(f"torch._dynamo.config has no setting {name!r}")
    saved = {name: getattr(module, name) for name in changes}
    for name, v in changes.items():
        setattr(module, name, v)
    try:
        yield
    finally:
        for name, v in saved.items():
            setattr(module, name, v)
