"""Neural-network modules (``torch.nn``): ``Module`` and ``Parameter``, layers, losses, containers,
``functional``, ``init``, ``utils`` and ``DataParallel``."""
from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter
from .parameter import UninitializedBuffer, UninitializedParameter
from . import common_types, grad
from . import attention
from ._factory import factory_kwargs

__all__ = ["Parameter", "Buffer", "DataParallel", "functional", "init", "utils", "parallel",
           *_modules_all]

from . import parallel

__all__ += ["UninitializedParameter", "UninitializedBuffer", "common_types", "grad",
            "factory_kwargs", "attention"]
