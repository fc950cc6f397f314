"""``torch.nn.utils.weight_norm``, the hook form of weight normalisation (deprecated in favour of
:func:`.parametrizations.weight_norm`).

The parameter ``<name>`` is split into a magnitude ``<name>_g`` and a direction ``<name>_v``,
both parameters; a :class:`WeightNorm` forward pre-hook rebuilds ``<name> = g * v / ||v||`` as
a plain attribute before each call, so that gradients reach ``g`` and ``v``."""
from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..._tensor import Tensor
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

T_module = TypeVar("T_module", bound=Module)

_DEPRECATION = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                "`torch.nn.utils.parametrizations.weight_norm`.")


def magnitude(weight: Tensor, dim: int) -> Tensor:
    """The Euclidean norm of ``weight`` taken over all dimensions except ``dim``, which keeps
    its size while the others become 1; ``dim == -1`` means the norm of the whole tensor (0-d).
    This is the ``g`` of weight normalisation."""
    if dim == -1:
        return weight.norm(2)
    rank = weight.dim()
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {dim})")
    reduced = tuple(d for d in range(rank) if d != dim % rank)
    if not reduced:
        return weight.abs()
    return weight.norm(2, dim=reduced, keepdim=True)


def rescale(direction: Tensor, magnitude_: Tensor, dim: int) -> Tensor:
    """``direction`` rescaled so that its norm over every dimension but ``dim`` is
    ``magnitude_``: ``g * v / ||v||``."""
    return direction * (magnitude_ / magnitude(direction, dim))


class WeightNorm:
    """The forward pre-hook that recomputes one weight-normalised tensor.

    ``name`` is the tensor's attribute name, ``dim`` the dimension the norm keeps (``-1`` for
    the norm of the whole tensor)."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def _parts(self, module: Module) -> tuple[Tensor, Tensor]:
        return getattr(module, f"{self.name}_g"), getattr(module, f"{self.name}_v")

    def compute_weight(self, module: Module) -> Tensor:
        """The weight ``g * v / ||v||`` from the module's current ``g`` and ``v``."""
        g, v = self._parts(module)
        return rescale(v, g, self.dim)

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Set up weight normalisation of ``module.<name>``; returns the registered hook."""
        warnings.warn(_DEPRECATION, FutureWarning, stacklevel=3)
        if any(isinstance(h, WeightNorm) and h.name == name
               for h in module._forward_pre_hooks.values()):
            raise RuntimeError("Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
        hook = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `WeightNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(f"{name}_g", Parameter(magnitude(weight, hook.dim).data))
        module.register_parameter(f"{name}_v", Parameter(weight.data))
        hook(module, ())  # the weight exists before the first call too
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module: Module) -> None:
        """Turn ``module.<name>`` back into one parameter holding the current weight."""
        final = self.compute_weight(module)
        delattr(module, self.name)
        for suffix in ("_g", "_v"):
            del module._parameters[self.name + suffix]
        setattr(module, self.name, Parameter(final.data))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` with the parameters ``<name>_g``
    (its norm over every dimension but ``dim``; ``None``: over the whole tensor) and
    ``<name>_v`` (its direction); the weight is rebuilt before each forward call. Deprecated:
    see :func:`.parametrizations.weight_norm`. Returns ``module``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm` on ``module.<name>``, which becomes a parameter again holding
    the current weight. Returns ``module``."""
    hooks = module._forward_pre_hooks
    key = next((k for k, h in hooks.items() if isinstance(h, WeightNorm) and h.name == name),
               None)
    if key is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hooks[key].remove(module)
    del hooks[key]
    return module
