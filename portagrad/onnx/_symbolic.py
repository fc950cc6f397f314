"""The module ``__getattr__`` of the ``symbolic_opset*`` modules: every name a function that
raises, since portagrad has no ONNX exporter to add an operator to."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["missing_symbolics"]


def missing_symbolics(module: str) -> Callable[[str], Callable[..., NoReturn]]:
    """A module ``__getattr__`` for ``module``: each public name is a function raising
    ``NotImplementedError`` that names it."""

    def getattr_(name: str) -> Callable[..., NoReturn]:
        if name.startswith("__"):
            raise AttributeError(name)

        def symbolic(*args: Any, **kwargs: Any) -> NoReturn:
            raise NotImplementedError(f"{module}.{name}: portagrad has no ONNX exporter, so "
                                      "there is no graph to add the operator to")
        symbolic.__name__ = name
        return symbolic

    return getattr_
