"""``torch.func``: composable function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian,
vmap) and functional calls of modules.

The transforms run on portagrad's reverse-mode autograd (see :mod:`portagrad.func._transforms`)
and :func:`portagrad.vmap`, which calls the function once per batch element, so
``vmap(grad(f))`` computes per-sample gradients by looping. ``pg.vmap`` stacks tensor outputs (a
tensor or a tuple of tensors): a transform that returns a dict (``grad`` w.r.t. a dict of
parameters) cannot be vmapped; pass the parameters as a tuple instead.
"""
from __future__ import annotations

from .._vmap import vmap
from ._functional_call import functional_call, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp

__all__ = ["grad", "grad_and_value", "vmap", "hessian", "jacfwd", "jacrev", "jvp", "vjp",
           "functional_call", "stack_module_state"]
