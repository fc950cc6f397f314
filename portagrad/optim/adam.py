"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._tensor import Tensor
from . import _inplace as inplace
from .optimizer import Optimizer, _inc, _step_counter, check_betas, check_lr, check_nonneg

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), with PyTorch's update order::

        g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay when decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  (vmax = max(vmax, v))
        p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", isinstance(self, AdamW))

    _sparse_error = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = (float(b) for b in group["betas"])
            eps = float(group["eps"])
            wd = float(group["weight_decay"])
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            capturable = group.get("capturable", False)
            if capturable:
                self._capturable_group(group["params"], lr, beta1, beta2, eps, wd, amsgrad,
                                       maximize, decoupled)
                continue
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                st = self.state[p]
                if not st:
                    self._init_state(p, st, False, amsgrad)
                step = _inc(st["step"])
                if wd != 0 and decoupled:
                    inplace.scale_(p, 1 - lr * wd)
                g = inplace.update_grad(p, maximize, 0.0 if decoupled else wd)
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                inplace.lerp_(exp_avg, g, 1 - beta1)
                inplace.scale_(exp_avg_sq, beta2)
                inplace.addcmul_(exp_avg_sq, g, g, 1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bc2_sqrt = bias_correction2 ** 0.5
                if amsgrad:
                    vmax = st["max_exp_avg_sq"]
                    inplace.maximum_(vmax, exp_avg_sq)
                    denom = inplace.sqrt(vmax)
                else:
                    denom = inplace.sqrt(exp_avg_sq)
                inplace.div_scalar_(denom, bc2_sqrt)
                inplace.add_scalar_(denom, eps)
                inplace.addcdiv_(p, exp_avg, denom, -step_size)
        return loss

    def _init_state(self, p: Tensor, st: dict[str, Any], capturable: bool,
                    amsgrad: bool) -> None:
        st["step"] = _device_step_counter(p) if capturable else _step_counter()
        st["exp_avg"] = inplace.zeros_like(p)
        st["exp_avg_sq"] = inplace.zeros_like(p)
        if amsgrad:
            st["max_exp_avg_sq"] = inplace.zeros_like(p)

    def _capturable_group(self, params: Iterable[Tensor], lr: float, beta1: float, beta2: float,
                          eps: float, wd: float, amsgrad: bool, maximize: bool,
                          decoupled: bool) -> None:
        """The updates of a ``capturable`` group, in two passes: first every parameter's step
        count and bias-correction terms (one-element tensors), then the parameters' own updates.
        Interleaved, each parameter's one-element work would split the elementwise chain of its
        update into several fused kernels (each storing what the chain would keep in registers);
        the values are those of one pass, parameter by parameter."""
        terms = []
        for p in params:
            if p._grad is None:
                continue
            st = self.state[p]
            if not st:
                self._init_state(p, st, True, amsgrad)
            step_t = st["step"]
            inplace.add_scalar_(step_t, 1.0)
            terms.append((p, st, inplace.adam_denominator_terms(
                step_t, p._v.dtype, lr, beta1, beta2, eps)))
        for p, st, (scale, shift) in terms:
            _capturable_update(p, st, lr, beta1, beta2, wd, amsgrad, maximize, decoupled,
                               scale, shift)


def _device_step_counter(p: Tensor) -> Tensor:
    """``state["step"]`` of a ``capturable`` step: a float32 zero on the parameter's device (as
    PyTorch keeps it), so that counting steps never reads the host."""
    return inplace.device_zero(p)


def _capturable_update(p: Tensor, st: dict[str, Any], lr: float, beta1: float, beta2: float,
                       wd: float, amsgrad: bool, maximize: bool, decoupled: bool, scale: Tensor,
                       shift: Tensor) -> None:
    """One Adam update with the step count kept on the device (``capturable=True``): the bias
    corrections (``scale``, ``shift``: see :func:`~._inplace.adam_denominator_terms`) were
    computed by the device from ``state["step"]``, following PyTorch's capturable formula, so a
    step has the same launches and scalars every time and a captured step
    (:mod:`portagrad.capture`) can replay it. Values agree with the default path up to the
    rounding of the bias corrections (float32 here, Python floats there)."""
    if wd != 0 and decoupled:
        inplace.scale_(p, 1 - lr * wd)
    g = inplace.update_grad(p, maximize, 0.0 if decoupled else wd)
    exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
    inplace.lerp_(exp_avg, g, 1 - beta1)
    inplace.scale_(exp_avg_sq, beta2)
    inplace.addcmul_(exp_avg_sq, g, g, 1 - beta2)
    if amsgrad:
        vmax = st["max_exp_avg_sq"]
        inplace.maximum_(vmax, exp_avg_sq)
        denom = inplace.sqrt(vmax)
    else:
        denom = inplace.sqrt(exp_avg_sq)
    inplace.scale_shift_(denom, scale, shift)
    inplace.addcdiv_(p, exp_avg, denom, 1.0)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam update; ``weight_decay`` defaults to ``1e-2``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
