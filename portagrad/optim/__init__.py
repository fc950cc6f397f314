"""Optimizers (``torch.optim``): :class:`SGD`, :class:`Adam`, :class:`AdamW`, :class:`Adamax`,
:class:`NAdam`, :class:`RAdam`, :class:`RMSprop`, :class:`Adagrad`, :class:`Adadelta`,
:class:`Adafactor`, :class:`ASGD`, :class:`Rprop`, :class:`LBFGS`, :class:`Muon`,
:class:`SparseAdam`, learning-rate schedules in :mod:`.lr_scheduler` and weight averaging in
:mod:`.swa_utils`.

Updates follow PyTorch's formulas step for step (same state names and ``state_dict`` format) and run
as in-place backend primitives without autograd, so they work on every device.

PyTorch's implementation switches ``foreach``, ``fused`` and ``capturable`` are accepted and
ignored: they select how PyTorch computes the same values, and portagrad has one implementation per
optimizer on every device (``fused=True`` with ``foreach=True`` or ``differentiable=True`` raises as
in PyTorch). ``differentiable=True`` raises ``NotImplementedError``: steps run without autograd.
"""
from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler",
           "Adafactor", "Adamax", "ASGD", "LBFGS", "Muon", "NAdam", "RAdam", "Rprop",
           "SparseAdam", "swa_utils", "swap_in_optimizer_params_and_state"]
