"""``torch._dynamo.exc``: the exception classes libraries catch around ``torch.compile``.
Nothing raises them here (nothing is traced); they exist so that ``except`` clauses load."""
from __future__ import annotations

__all__ = ["TorchDynamoException", "Unsupported", "InternalTorchDynamoError", "BackendCompilerFailed"]


class TorchDynamoException(RuntimeError):
    """The base class of the capturer's errors."""


class Unsupported(TorchDynamoException):
    """The capturer met code it cannot put into a graph."""


class InternalTorchDynamoError(TorchDynamoException):
    """A bug inside the capturer."""


class BackendCompilerFailed(TorchDynamoException):
    """The compiler backend failed on a captured graph."""
