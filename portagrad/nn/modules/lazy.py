"""``LazyModuleMixin``: modules whose parameter shapes come from their first input."""
from __future__ import annotations

from itertools import chain
from typing import Any

from ..parameter import UninitializedTensorMixin

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a module class (``class LazyLinear(LazyModuleMixin, Linear)``): its
    parameters start as :class:`~portagrad.nn.UninitializedParameter`; a forward pre-hook calls
    ``initialize_parameters(*input)`` on the first call, which materializes them from the input's
    shape, and the module then becomes a plain ``cls_to_become`` (as in PyTorch)."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._register_lazy_hook()

    def _register_lazy_hook(self) -> None:
        """The forward pre-hook that initializes the parameters (for subclasses whose
        ``__init__`` calls the module class's directly). No handle is kept: the hook finds and
        removes itself, which also works on deep copies and unpickled modules."""
        me: Any = self
        me.register_forward_pre_hook(LazyModuleMixin._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        me: Any = self
        return any(isinstance(t, UninitializedTensorMixin)
                   for t in chain(me._parameters.values(), me._buffers.values()))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        # a checkpoint gives the shapes: placeholders take them before the values are copied
        me: Any = self
        for name, t in chain(me._parameters.items(), me._buffers.items()):
            key = prefix + name
            if isinstance(t, UninitializedTensorMixin) and key in state_dict:
                t.materialize(tuple(state_dict[key].shape))
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    @staticmethod
    def _infer_parameters(module: Any, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module.__class__.__name__} has not been fully initialized")
        hooks = module._forward_pre_hooks
        for hid in [k for k, h in hooks.items() if h is LazyModuleMixin._infer_parameters]:
            del hooks[hid]
            module._forward_pre_hooks_with_kwargs.pop(hid, None)
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
