"""``torch.distributions.studentT``: PyTorch's module name for :mod:`.student_t`."""
from __future__ import annotations

from .student_t import StudentT

__all__ = ["StudentT"]
