"""Reverse-mode automatic differentiation (``torch.autograd``)."""
from __future__ import annotations

from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx, Node, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import graph, profiler
from . import functional as functional  # torch.autograd.functional (not in torch's __all__)
from .anomaly import is_anomaly_check_nan_enabled, set_anomaly_enabled
from .variable import Variable, variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "Node", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "profiler", "graph"]
__all__ += ["Variable", "variable", "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]
__all__ += ["set_multithreading_enabled"]
