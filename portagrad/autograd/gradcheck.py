"""``gradcheck``/``gradgradcheck``: compare analytical gradients with central finite differences.

Loaded with ``portagrad.autograd``, before ``Tensor`` exists (see :mod:`.engine`): ``Tensor`` and
the factories are imported where they are used.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .engine import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


def _late() -> tuple[Any, Any, Any]:
    """``Tensor`` and the factory modules, imported on first use (this module loads before
    they exist)."""
    from .. import _creation, _random
    from .._tensor import Tensor

    return Tensor, _creation, _random


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients differ (the message shows both Jacobians)."""


def _tensors(inputs: Any) -> tuple:
    Tensor = _late()[0]

    return (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)


def _outputs(fn: Callable[..., Any], inputs: tuple) -> tuple:
    Tensor = _late()[0]

    out = fn(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def _components(arr: np.ndarray) -> np.ndarray:
    """``arr`` flattened into float64 real components: a complex element gives two, its real and
    imaginary parts, side by side (the layout of ``view_as_real``)."""
    if arr.dtype.kind == "c":
        return np.ascontiguousarray(arr, dtype=np.complex128).reshape(-1).view(np.float64)
    return arr.astype(np.float64).reshape(-1)


def _ncomp(x: Any) -> int:
    return x.numel() * (2 if x.dtype.is_complex else 1)


def _numerical_jacobian(fn: Callable[..., Any], inputs: tuple, eps: float) -> list[list[np.ndarray]]:
    """J[i][j] = d out_j / d in_i as (in_components, out_components) arrays, by central
    differences; a complex input or output counts as its real and imaginary parts (each input
    part is perturbed on its own, as PyTorch's gradcheck does)."""
    Tensor = _late()[0]

    outs = _outputs(fn, inputs)
    jac: list[Any] = [[np.zeros((_ncomp(x), _ncomp(o))) for o in outs] if isinstance(x, Tensor) and
                      x.requires_grad else None for x in inputs]
    for i, x in enumerate(inputs):
        if jac[i] is None:
            continue
        host = x.detach().numpy(force=True)
        flat = _components(host).copy()
        for k in range(flat.size):
            vals = []
            for delta in (eps, -eps):
                pert = flat.copy()
                pert[k] += delta
                values = pert.view(np.complex128) if host.dtype.kind == "c" else pert
                xp = _replace(x, values.reshape(host.shape))
                args = list(inputs)
                args[i] = xp
                # not under no_grad: gradgradcheck's function differentiates inside
                vals.append([_components(o.detach().numpy(force=True))
                             for o in _outputs(fn, tuple(args))])
            for j in range(len(outs)):
                jac[i][j][k] = (vals[0][j] - vals[1][j]) / (2 * eps)
    return jac


def _replace(x: Any, values: np.ndarray) -> Any:
    _creation = _late()[1]

    t = _creation.from_host(values.astype(x.dtype.numpy), device=x.device)
    return t.requires_grad_(x.requires_grad)


def _analytical_jacobian(fn: Callable[..., Any], inputs: tuple) -> tuple[list, tuple]:
    """The Jacobians from backward passes. For a complex output element, a gradient of 1 gives
    the derivatives of its real part and a gradient of ``1j`` those of its imaginary part; the
    gradient of a complex input is ``dL/dRe + i dL/dIm`` (PyTorch's convention), so its two
    parts are the rows of the input's real and imaginary components."""
    Tensor, _creation, _ = _late()

    outs = _outputs(fn, inputs)
    diff_in = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jac: list[Any] = [[np.zeros((_ncomp(x), _ncomp(o))) for o in outs] if isinstance(x, Tensor) and
                      x.requires_grad else None for x in inputs]
    for j, o in enumerate(outs):
        if not o.requires_grad:
            continue
        parts = (1, 1j) if o.dtype.is_complex else (1,)
        for k in range(o.numel()):
            for p, unit in enumerate(parts):
                seed = np.zeros(o.numel(), dtype=o.dtype.numpy)
                seed[k] = unit
                g = _creation.from_host(seed.reshape(tuple(o.shape)), device=o.device)
                grads = grad((o,), diff_in, (g,), retain_graph=True, allow_unused=True)
                it = iter(grads)
                for i, x in enumerate(inputs):
                    if jac[i] is None:
                        continue
                    gi = next(it)
                    if gi is not None:
                        if gi.shape != x.shape:
                            raise GradcheckError(f"Gradient of input {i} has shape "
                                                 f"{tuple(gi.shape)}, expected {tuple(x.shape)}")
                        jac[i][j][:, len(parts) * k + p] = _components(
                            gi.detach().numpy(force=True))
    return jac, outs


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, fast_mode: bool = False, **kwargs: Any) -> bool:
    """Check gradients of ``func`` at ``inputs`` (use float64 or complex128 inputs with
    ``requires_grad``). Complex inputs and outputs are checked part by part: the real Jacobian of
    the outputs' real and imaginary parts with respect to the inputs' (PyTorch's convention for
    the gradient of a complex input, ``dL/dRe + i dL/dIm``)."""
    Tensor = _late()[0]

    inputs = _tensors(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype.name not in ("float64",
                                                                               "complex128"):
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point.", UserWarning, stacklevel=2)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    numerical = _numerical_jacobian(func, inputs, eps)
    analytical, _ = _analytical_jacobian(func, inputs)
    for i, (num_i, ana_i) in enumerate(zip(numerical, analytical)):
        if num_i is None:
            continue
        for j, (n, a) in enumerate(zip(num_i, ana_i)):
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=False):
                msg = (f"Jacobian mismatch for output {j} with respect to input {i},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  **kwargs: Any) -> bool:
    """Check second derivatives: gradcheck of the function ``(inputs, v) -> J^T v``."""
    Tensor, _creation, _random = _late()

    inputs = _tensors(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        gen = _random.Generator().manual_seed(0)
        grad_outputs = tuple(
            _random.randn(o.shape, dtype=o.dtype, device=o.device, generator=gen).requires_grad_()
            for o in outs)
    else:
        grad_outputs = _tensors(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_order(*args: Any) -> tuple:
        ins, gos = args[:n_in], args[n_in:]
        o = _outputs(func, ins)
        diff = [ins[i] for i in diff_idx]
        grads = grad(o, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else _creation.zeros_like(d) for g, d in zip(grads, diff))

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
