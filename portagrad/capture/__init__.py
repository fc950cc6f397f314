"""Captured training steps: record a step's backend launches once, replay them afterwards.

The role of CUDA graphs in PyTorch (``torch.cuda.graphs``, ``torch.compile(mode=
"reduce-overhead")``) and of tinygrad's TinyJit: ``step = capture(train_step)`` returns a
:class:`CapturedStep`; its first call runs eagerly (warm-up), the next two record every backend
launch (primitive, Views, scalars) and compare the two recordings, and later calls copy the new
input data into the recorded input buffers and replay the launches, skipping Python dispatch,
autograd graph building and allocation. Results are bit-identical to eager execution; whatever
would make a replay differ makes the step run eagerly, with a warning naming the reason once.
``pg.compile(fn, mode="reduce-overhead")`` returns the same object.

Adam and AdamW need ``capturable=True`` (the step count on the device): their default path reads
the step count on the host each step, which a replay cannot repeat.
"""
from __future__ import annotations

from ._step import CapturedStep, capture

__all__ = ["CapturedStep", "capture"]
