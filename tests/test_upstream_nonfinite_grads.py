"""Every differentiable op-table row, backward with an all-infinite and an all-NaN incoming
gradient, against PyTorch (where torch is installed).

Where PyTorch's derivative selects (ReLU's ``threshold_backward``, ``CopySlices``, the
``*_scatter`` ops, ``zeros_like`` for ``sign``), the gradient is exactly 0 whatever flows in; a
product with a 0/1 mask would give NaN there. Where it forms the slope first and multiplies once
(``mish``, ``lerp``, ``sinc``), an infinite gradient stays infinite; a chain rule adding several
products of it gives ``inf - inf = NaN``. This sweep compares the gradients' values with NaN
positions included, so either kind of difference fails here. ``tests/test_masked_gradients.py``
pins the cases it found with their values written out, on every backend.

Rows in :data:`FORMULA_ORDER` are left out, each with the reason: their derivatives are long
compositions (linear algebra, losses) whose infinite terms PyTorch and portagrad combine in a
different order, so the NaN/inf pattern of an all-infinite gradient differs while every finite
gradient agrees (the op table's gradchecks).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg

from op_table import OP_TABLE, OpInfo
from op_table_torch import Untranslatable, torch, torch_args, torch_op

# row name -> why its all-infinite gradient's NaN pattern is not PyTorch's (finite ones are)
FORMULA_ORDER: dict[str, str] = {
    **{name: "linear algebra: a long composition of products and solves" for name in (
        "det", "inverse", "linalg_solve", "linalg_solve_ex", "linalg_solve_triangular",
        "triangular_solve", "lu_factor", "linalg_lu_factor_ex", "lu_solve", "linalg_lstsq",
        "linalg_eigh", "linalg_cholesky_ex", "linalg_vander", "ormqr", "chain_matmul")},
    **{name: "a loss: PyTorch multiplies the incoming gradient in, portagrad selects first"
       for name in ("nn.functional.cross_entropy", "nn.functional.cross_entropy_weighted",
                    "nn.functional.linear_cross_entropy", "nn.functional.multi_margin_loss",
                    "nn.functional.multilabel_margin_loss", "nn.functional.ctc_loss")},
    "quantile": "interpolation weights: the two neighbours' terms in another order",
    "nanquantile": "interpolation weights: the two neighbours' terms in another order",
    "trapezoid": "PyTorch's formula subtracts neighbouring gradients (inf - inf)",
    "ldexp": "PyTorch's gradient of the exponent multiplies by log(2) * result",
    "native_group_norm_output": "the statistics' gradients combined in another order",
    "grid_sampler": "the grid's gradient: interpolation weights' terms in another order",
    "nn.functional.grid_sample": "the grid's gradient: interpolation weights' terms in another "
                                 "order",
    "logcumsumexp": "PyTorch's backward takes logs of the incoming gradient (NaN in: 0 out)",
}

# (row, sample) -> why portagrad's result needs no gradient where PyTorch's does: degenerate
# samples whose result is a constant, which PyTorch still connects to the input (a zero gradient)
CONSTANT_RESULT: dict[tuple[str, int], str] = {
    ("matrix_power", 0): "the 0th power is the identity",
    ("linalg_householder_product", 2): "no reflectors: the identity's first columns",
    ("combinations", 3): "more elements per combination than inputs: empty",
}

ROWS = [r for r in OP_TABLE if r.grad and r.name not in FORMULA_ORDER]


def _convert(obj: Any, make: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return make(obj)
    if isinstance(obj, list):
        return [_convert(o, make) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_convert(o, make) for o in obj)
    return obj


def _flat(o: Any) -> list:
    if isinstance(o, (list, tuple)):
        return [y for x in o for y in _flat(x)]
    return [o]


def _grads(L: Any, op: Any, sample: Any, fill: float, device: str | None) -> list | None:
    """The leaves' gradients of ``op`` on ``sample`` with every output's incoming gradient
    ``fill``; None when the library refuses the call or no output needs a gradient."""
    leaves: list = []
    kw = {} if device is None else {"device": device}

    def make(a: np.ndarray) -> Any:
        if a.dtype.kind != "f":
            return L.tensor(a, **kw)
        t = L.tensor(a, requires_grad=True, **kw)
        leaves.append(t)
        return t

    args = _convert(sample.args, make)
    kwargs = {k: _convert(v, make) for k, v in sample.kwargs.items()}
    if L is torch:
        args = tuple(a if isinstance(a, (torch.Tensor, list, tuple)) else torch_args(a, None)
                     for a in args)
        kwargs = {k: v if isinstance(v, torch.Tensor) else torch_args(v, None)
                  for k, v in kwargs.items()}
    try:
        out = op(*args, **kwargs)
        outs = [o for o in _flat(out) if getattr(o, "requires_grad", False)]
        if not outs:
            return None
        gs = [L.full(tuple(o.shape), fill, dtype=o.dtype, **kw) for o in outs]
        L.autograd.backward(outs, gs)
    except Exception:  # (torch's scatter backward refuses some of the table's samples)
        return None
    return [None if t.grad is None else np.asarray(t.grad.detach().cpu().numpy())
            for t in leaves]


@pytest.mark.skipif(torch is None, reason="torch is not installed (the reference)")
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_nonfinite_upstream_gradient_is_torchs(row: OpInfo, device: str) -> None:
    try:
        top = torch_op(row.op)
    except Untranslatable:
        pytest.skip(f"{row.name} has no torch counterpart under the same name")
    samples = (row.grad_samples or row.samples)(pg.float64, np.random.default_rng(0))[:4]
    compared = 0
    for i, sample in enumerate(samples):
        for fill in (float("inf"), float("nan")):
            want = _grads(torch, top, sample, fill, None)
            if want is None:
                continue  # torch refuses this sample: nothing to compare
            got = _grads(pg, row.op, sample, fill, device)
            if got is None and (row.name, i) in CONSTANT_RESULT:
                continue
            assert got is not None, f"{row.name} sample {i}: portagrad refused what torch ran"
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                assert (g is None) == (w is None), f"{row.name} sample {i} input {k}"
                if g is not None:
                    np.testing.assert_allclose(
                        g, w, rtol=1e-4, atol=1e-6, equal_nan=True,
                        err_msg=f"{row.name} sample {i} input {k}, incoming gradient {fill}")
            compared += 1
    if not compared:
        pytest.skip(f"torch refuses every sample of {row.name}")


def test_left_out_rows_are_table_rows() -> None:
    """The rows and samples left out above name differentiable op-table rows (a renamed row
    would otherwise drop out of the sweep unnoticed)."""
    grad_rows = {r.name: r for r in OP_TABLE if r.grad}
    assert set(FORMULA_ORDER) <= set(grad_rows)
    for name, i in CONSTANT_RESULT:
        row = grad_rows[name]
        assert i < len((row.grad_samples or row.samples)(pg.float64, np.random.default_rng(0)))
