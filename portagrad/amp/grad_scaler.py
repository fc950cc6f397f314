"""``GradScaler``: dynamic loss scaling (``torch.amp.GradScaler``).

``scale(loss)`` multiplies by the scale; ``step(optimizer)`` divides the gradients by it
(``unscale_``), skips the step when any gradient is inf or NaN, and ``update()`` halves the scale
after an overflow or doubles it after ``growth_interval`` clean steps. The inf/NaN check of all
gradients is reduced on the device and read back once per step (once per device holding
gradients), not once per parameter. On ``cuda`` (which portagrad does not have) it warns and runs
disabled, as PyTorch does without CUDA.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._creation import tensor as _tensor
from .._dtype import float16, float32
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .._ops.elementwise import isfinite, logical_not
from .._ops.joining import stack
from ..plugins.manager import device_types

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _f32(x: float) -> float:
    """``x`` rounded to float32: PyTorch keeps the scale in a float32 tensor."""
    return float(np.float32(x))


class GradScaler:
    """Loss scaling for low-precision training, with PyTorch's arguments and state."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device.split(":")[0] not in device_types():
            warnings.warn(f"torch.amp.GradScaler is enabled, but {device} is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        # (made on the first scale(), as PyTorch's lazily created scale tensor: update() before
        # it is an error)
        self._scale: float | None = None
        self._scale_tensors: dict[str, tuple[float, Tensor]] = {}  # (see _scale_on)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._states: dict[int, dict[str, Any]] = {}

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._states.setdefault(id(optimizer), {"stage": _READY, "found_inf": None,
                                                       "found_inf_per_device": {}})

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested sequences of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._scale = _f32(self._init_scale)
            # times a 0-d float32 tensor, as PyTorch: a 0-d float16 loss is scaled in float32
            # (as a float16 number, 5 * 65536 overflows to inf and every step is skipped)
            return outputs * self._scale_on(outputs.device)
        if isinstance(outputs, Iterable) and not isinstance(outputs, (str, bytes)):
            scaled = [self.scale(o) for o in outputs]
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _scale_on(self, device: Any) -> Tensor:
        """The scale as a 0-d float32 tensor on ``device``, made again only when the scale
        changed (one upload per change, not one per step)."""
        scale = self._scale
        assert scale is not None  # (set by scale() before it asks)
        key = str(device)
        held = self._scale_tensors.get(key)
        if held is None or held[0] != scale:
            held = (scale, _tensor(scale, dtype=float32, device=device))
            self._scale_tensors[key] = held
        return held[1]

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and record, on each device,
        whether any of them is inf or NaN (nothing is read back here). At most once per optimizer
        between two :meth:`update` calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise AssertionError("Attempted unscale_ but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in the "
                                 "iteration.")
        inv = _f32(1.0 / self._scale)
        # one 0-d "all finite" flag per gradient, reduced per device below: the check stays on
        # the device and step() reads one flag per device instead of one per parameter
        flags: dict[str, list[Tensor]] = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    g.mul_(inv)
                    flags.setdefault(str(g.device), []).append(isfinite(g).all())
            state["found_inf_per_device"] = {
                dev: logical_not(f[0] if len(f) == 1 else stack(f).all()).float()
                for dev, f in flags.items()}
        state["stage"] = _UNSCALED

    def _found_inf(self, state: dict[str, Any]) -> bool:
        # the one host read of a step (one per device the gradients live on); update() reuses it
        if state["found_inf"] is None:
            state["found_inf"] = any(bool(v.item()) for v in
                                     state["found_inf_per_device"].values())
        return bool(state["found_inf"])

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless :meth:`unscale_` did) and call ``optimizer.step`` unless a gradient
        is inf or NaN; returns what ``step`` returned (``None`` when skipped). The inf/NaN check
        of all gradients costs one host read (per device holding gradients).

        portagrad's optimizers do not take PyTorch's fused-path ``grad_scale``/``found_inf``
        (``_step_supports_amp_scaling``): the gradients are unscaled here, on the device, and
        the skip is decided from that one read, so every optimizer works unchanged."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        if self._scale is None:
            raise AssertionError("Attempted step but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in the "
                                 "iteration.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None if self._found_inf(state) else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale to ``new_scale``, or adapt it: times ``backoff_factor`` if a step of
        this iteration found inf/NaN, times ``growth_factor`` after ``growth_interval`` clean
        iterations."""
        if not self._enabled:
            return
        if self._scale is None:
            raise AssertionError("Attempted update but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in the "
                                 "iteration.")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element "
                                         "torch.cuda.FloatTensor or torch.FloatTensor with "
                                         "requires_grad=False.")
                new_scale = float(new_scale.item())
            self._scale = _f32(new_scale)
        else:
            checked = [s for s in self._states.values() if s["found_inf_per_device"]]
            if not checked:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any([self._found_inf(s) for s in checked]):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale = _f32(self._scale * self._growth_factor)
                    self._growth_tracker = 0
        self._states = {}

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after an overflow."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """Clean iterations between two growths."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """The scaler's state (empty when disabled), as PyTorch's keys."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = _f32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
