"""``torch.compiler``: the public face of ``torch.compile``'s machinery, for an eager library.

:func:`compile` is :func:`portagrad.compile` (returns the model to run eagerly). Nothing runs
while compiling or exporting, so :func:`is_compiling`, :func:`is_dynamo_compiling` and
:func:`is_exporting` are ``False``; :func:`disable`, :func:`allow_in_graph`,
:func:`assume_constant_result` and :func:`reset` are :mod:`portagrad._dynamo`'s.
"""
from __future__ import annotations

from .._compile import compile, list_backends
from .._dynamo import allow_in_graph, assume_constant_result, disable, is_compiling, reset

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "disable", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "list_backends", "reset"]


def is_dynamo_compiling() -> bool:
    """``False``: no code is captured by a graph capturer in portagrad."""
    return False


def is_exporting() -> bool:
    """``False``: portagrad has no ``torch.export`` tracer."""
    return False
