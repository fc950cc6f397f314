"""L-BFGS (``torch.optim.LBFGS``): limited-memory BFGS with an optional strong-Wolfe line search.

A port of PyTorch's implementation (itself after minFunc): the same two-loop recursion, the same
line search, stopping rules and ``state`` entries. Scalars that PyTorch keeps as 0-dim tensors of
the parameters' dtype (``ro``, ``H_diag``, the step ``t`` ...) are Python floats here, rounded to
that dtype where PyTorch's arithmetic rounds them, so float32 trajectories follow PyTorch's closely.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


from .._ops import joining
from .._tensor import Tensor
from ..autograd import grad_mode
from . import _inplace as inplace
from .optimizer import Optimizer, check_lr, to_scalar

__all__ = ["LBFGS"]


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple[float, float] | None = None) -> float:
    """Minimizer of the cubic interpolating ``(x1, f1, g1)`` and ``(x2, f2, g2)``, clamped to
    ``bounds`` (default: the interval between the points); the midpoint when it has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square ** 0.5
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _dot(a: Tensor, b: Tensor) -> float:
    return float(a.dot(b).item())


def _strong_wolfe(obj_func: Callable[[list[Tensor], float, Tensor], tuple[float, Tensor]],
                  x: list[Tensor], t: float, d: Tensor, f: float, g: Tensor, gtd: float,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, Tensor, float, int]:
    """Line search along ``d`` for a step satisfying the strong Wolfe conditions (bracketing,
    then zoom by cubic interpolation), as PyTorch implements it. Returns ``(f, g, t, evals)``."""
    d_norm = float(d.abs().max().item())
    g = inplace.copy(g)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[Tensor] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, inplace.copy(g_new)], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, inplace.copy(g_new)], [gtd_prev, gtd_new]
            break
        # interpolate (extrapolate) within [t + 0.01 (t - t_prev), 10 t]
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, inplace.copy(g_new), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:  # reached the maximum number of evaluations
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # too close to a boundary without progress: move away from it (PyTorch's safeguard)
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = inplace.copy(g_new), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = inplace.copy(g_new), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS. ``step(closure)`` needs a closure that clears the gradients, computes the loss,
    calls ``backward()`` and returns the loss; it runs up to ``max_iter`` iterations (``max_eval``
    closure calls, default ``max_iter * 5 // 4``) and returns the first loss.

    Only one parameter group is supported (as in PyTorch). ``line_search_fn``: ``None`` (fixed step
    ``lr``) or ``"strong_wolfe"``. Memory: ``history_size`` pairs of flat parameter-sized vectors.
    """

    _complex_as_real = False  # (its closure sets the gradients mid-step; it flattens them itself)

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]
        self._numel_cache: int | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _round(self, x: float) -> float:
        # PyTorch computes these scalars as 0-dim tensors of the parameters' dtype
        return float(self._params[0].dtype.numpy.type(x))

    def _gather_flat_grad(self) -> Tensor:
        views = [inplace.zeros_like(p).reshape(-1) if p._grad is None else p._grad.reshape(-1)
                 for p in self._params]
        return joining.cat(views, 0)

    def _add_grad(self, step_size: float, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            inplace.axpy_(p, step_size, update[offset:offset + n].view(p.shape))
            offset += n

    def _clone_param(self) -> list[Tensor]:
        return [inplace.copy(p) for p in self._params]

    def _set_param(self, params_data: list[Tensor]) -> None:
        for p, pdata in zip(self._params, params_data):
            inplace.assign_(p, pdata)

    def _directional_evaluate(self, closure: Callable[[], Any], x: list[Tensor], t: float,
                              d: Tensor) -> tuple[float, Tensor]:
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; ``closure`` re-evaluates the model and
        returns the loss (with gradients computed)."""
        group = self.param_groups[0]
        lr = float(to_scalar(group["lr"]))
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        def evaluate() -> Any:
            with grad_mode.enable_grad():
                return closure()

        # the state of the first parameter holds everything (PyTorch's layout)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(flat_grad.abs().max().item()) <= tolerance_grad:
            return orig_loss

        # resumed from the previous call (None on the first: n_iter == 1 then sets them)
        d: Any = state.get("d")
        t: Any = state.get("t")
        old_dirs: Any = state.get("old_dirs")
        old_stps: Any = state.get("old_stps")
        ro: Any = state.get("ro")
        H_diag: Any = state.get("H_diag")
        prev_flat_grad: Any = state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        rnd = self._round

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # ------------------------------------------------ the descent direction
            if state["n_iter"] == 1:
                d = inplace.scale_(inplace.copy(flat_grad), -1.0)
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                y = inplace.axpy_(inplace.copy(flat_grad), -1.0, prev_flat_grad)
                s = inplace.scale_(inplace.copy(d), float(to_scalar(t)))
                ys = _dot(y, s)
                if ys > 1e-10:  # update the memory
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(rnd(1.0 / ys))
                    H_diag = rnd(ys / _dot(y, y))
                # the two-loop recursion: d = -H g with the implicit inverse Hessian H
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = inplace.scale_(inplace.copy(flat_grad), -1.0)
                for i in range(num_old - 1, -1, -1):
                    al[i] = rnd(_dot(old_stps[i], q) * float(to_scalar(ro[i])))
                    inplace.axpy_(q, -al[i], old_dirs[i])
                d = r = inplace.scale_(q, float(to_scalar(H_diag)))
                for i in range(num_old):
                    be_i = rnd(_dot(old_dirs[i], r) * float(to_scalar(ro[i])))
                    inplace.axpy_(r, rnd(float(to_scalar(al[i])) - be_i), old_stps[i])

            if prev_flat_grad is None:
                prev_flat_grad = inplace.copy(flat_grad)
            else:
                inplace.assign_(prev_flat_grad, flat_grad)
            prev_loss = loss

            # ------------------------------------------------------- the step size
            if state["n_iter"] == 1:
                t = rnd(min(1.0, rnd(1.0 / float(flat_grad.abs().sum().item()))) * lr)
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x: list[Tensor], t: float, d: Tensor) -> tuple[float, Tensor]:
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(flat_grad.abs().max().item()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # re-evaluate unless this is the last iteration
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(flat_grad.abs().max().item()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # ------------------------------------------------------ stopping rules
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(d.abs().max().item()) * abs(t) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss
