"""``pg.poisson`` and ``pg.binomial``: elementwise samples drawn from portagrad's generator
(through :mod:`portagrad.distributions`, so ``manual_seed`` makes them reproducible); and
``thread_safe_generator``, the generator a data-loading worker should draw from."""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor
from .autograd.grad_mode import no_grad
from .distributions.binomial import Binomial
from .distributions.poisson import Poisson

__all__ = ["poisson", "binomial", "thread_safe_generator"]


def _no_generator(fn: str, generator: Any) -> None:
    if generator is not None:
        raise NotImplementedError(f"{fn}: a generator argument is not supported; it draws from "
                                  "the default generator (seed it with manual_seed)")


def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """A sample of Poisson(``input``) per element, with ``input``'s dtype and device. No gradient
    flows to the rates."""
    _no_generator("poisson", generator)
    if not input.is_floating_point():
        raise RuntimeError(f"poisson: expected a floating-point rate tensor, got {input.dtype}")
    with no_grad():
        if input.numel() and bool((input < 0).any()):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        return Poisson(input, validate_args=False).sample().to(input.dtype)


def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """A sample of Binomial(``count``, ``prob``) per element (broadcast), with ``count``'s dtype.
    No gradient flows to the parameters."""
    _no_generator("binomial", generator)
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype}")
    with no_grad():
        return Binomial(count, probs=prob, validate_args=False).sample().to(count.dtype)


def thread_safe_generator() -> Any:
    """The generator random transforms should pass as ``generator=`` in a data-loading worker:
    PyTorch gives thread workers their own and answers ``None`` (the default generator) in the
    main process and in process workers. portagrad's ``DataLoader`` workers are processes, each
    seeded on its own (``worker_init_fn``, ``get_worker_info().seed``), so the answer is always
    ``None``."""
    return None
