"""Optimizers (``torch.optim``): :class:`SGD`, :class:`Adam`, :class:`AdamW`, :class:`RMSprop`,
:class:`Adagrad`, :class:`Adadelta`, and learning-rate schedules in :mod:`.lr_scheduler`.

Updates follow PyTorch's formulas step for step (same state names and ``state_dict`` format) and run
as in-place backend primitives without autograd, so they work on every device.
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler"]
