"""``torch._custom_ops``: the older custom-operator module; libraries import it for
:func:`get_ctx`, which a fake (meta) implementation calls to allocate data-dependent sizes.

portagrad has no fake tensors, so fake implementations are recorded and never run
(:mod:`portagrad.library`); :func:`get_ctx` is only ever reached from one called by hand, and
raises saying so.
"""
from __future__ import annotations

from typing import NoReturn

from .library import custom_op, impl, register_fake

__all__ = ["get_ctx", "custom_op", "impl", "impl_abstract"]

impl_abstract = register_fake


def get_ctx() -> NoReturn:
    """The fake-implementation context; raises, since no fake implementation runs here."""
    raise RuntimeError("torch._custom_ops.get_ctx(): portagrad has no fake tensors, so fake "
                       "implementations never run and have no context")
