"""``torch.autograd.graph``: hooks on the tensors autograd saves for backward, and the graph's
node and edge types.

:class:`saved_tensors_hooks` calls ``pack_hook`` on every tensor a differentiable op saves while
the block is open (at save time, as PyTorch does) and keeps what it returns instead of the tensor;
backward calls ``unpack_hook`` on it to get the tensor back. :class:`save_on_cpu` is the pair that
keeps saved tensors in host memory. The hooks are per thread and nest (the innermost pair is used).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _saved_hooks
from .function import GradientEdge, Node, _edge

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node",
           "GradientEdge", "get_gradient_edge"]


class saved_tensors_hooks:
    """Use ``pack_hook(tensor) -> anything`` and ``unpack_hook(anything) -> tensor`` for the
    tensors saved for backward inside the block (a context manager)."""

    def __init__(self, pack_hook: Callable[[Tensor], Any],
                 unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        msgs = _saved_hooks.disabled_message()
        if msgs:
            raise RuntimeError(msgs[-1])
        _saved_hooks.stack().append((self.pack_hook, self.unpack_hook))
        _saved_hooks.ACTIVE[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        _saved_hooks.stack().pop()
        _saved_hooks.ACTIVE[0] -= 1


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward in host memory (``pin_memory=True``: page-locked, so
    that copying them back is asynchronous) and move them back to their device in backward."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Tensor) -> tuple[Any, Tensor]:
            if t.device.type == "cpu" and not pin_memory:
                return (t.device, t)
            host = t.detach().to("cpu", copy=True)
            if pin_memory:
                host = host.pin_memory()
            return (t.device, host)

        def unpack(packed: tuple[Any, Tensor]) -> Tensor:
            device, t = packed
            return t.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside the block, opening a :class:`saved_tensors_hooks` raises ``RuntimeError`` with
    ``error_message`` (libraries use it to declare they cannot work with them)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        _saved_hooks.disabled_message().append(self.error_message)

    def __exit__(self, *exc: object) -> None:
        _saved_hooks.disabled_message().pop()


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge through which ``tensor``'s gradient flows: its ``grad_fn`` and output number, or
    a leaf's ``AccumulateGrad`` node (``autograd.grad`` accepts it in place of the tensor)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = _edge(tensor)
    return GradientEdge(node, nr)
