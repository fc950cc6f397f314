"""Neural-network modules (``torch.nn``): ``Module`` and ``Parameter``, layers, losses, containers,
``functional``, ``init``, ``utils`` and ``DataParallel``."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter

__all__ = ["Parameter", "Buffer", "DataParallel", "functional", "init", "utils", "parallel",
           *_modules_all]

from . import parallel  # noqa: E402,F401
