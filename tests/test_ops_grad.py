"""Gradients of every differentiable op-table row on every device: ``gradcheck`` in float64 against
central finite differences, and ``gradgradcheck`` for a representative subset (elementwise,
reductions, matmul, indexing, views). Samples are small (gradcheck costs O(numel) forwards)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck

from op_table import F64, OP_TABLE, OpInfo, Sample, small, to_device

GRAD_ROWS = [r for r in OP_TABLE if r.grad and F64 in r.dtypes]
GRADGRAD_ROWS = [r for r in GRAD_ROWS if r.gradgrad]


def _leaves_and_fn(row: OpInfo, sample: Sample, device: str) -> tuple[Callable, tuple]:
    """The sample's floating tensors become the gradcheck inputs; ``fn(*leaves)`` puts them back
    into the argument structure and calls the op (on a clone for in-place rows)."""
    args = to_device(sample.args, device, sample.nc)
    leaves: list[pg.Tensor] = []

    def collect(obj: Any) -> Any:
        if isinstance(obj, pg.Tensor) and obj.dtype.is_floating_point:
            leaves.append(obj.detach().requires_grad_())
            return ("leaf", len(leaves) - 1)
        if isinstance(obj, list):
            return [collect(o) for o in obj]
        if isinstance(obj, tuple):
            return tuple(collect(o) for o in obj)
        return obj

    skeleton = collect(args)

    def rebuild(obj: Any, vals: tuple) -> Any:
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "leaf":
            return vals[obj[1]]
        if isinstance(obj, list):
            return [rebuild(o, vals) for o in obj]
        if isinstance(obj, tuple):
            return tuple(rebuild(o, vals) for o in obj)
        return obj

    def fn(*vals: pg.Tensor) -> Any:
        a = list(rebuild(skeleton, vals))
        if row.inplace:
            a[0] = a[0].clone()  # in place on a non-leaf, as users do
        return row.op(*a, **sample.kwargs)

    return fn, tuple(leaves)


def _samples(row: OpInfo, count: int) -> list[Sample]:
    rng = np.random.default_rng(7)
    gen = row.grad_samples or small(row.samples, limit=40, count=count)
    return gen(F64, rng)


@pytest.mark.parametrize("row", GRAD_ROWS, ids=lambda r: r.name)
def test_gradcheck(row: OpInfo, device: str) -> None:
    samples = _samples(row, 4)
    assert samples, f"{row.name}: no sample small enough for gradcheck"
    for sample in samples:
        fn, leaves = _leaves_and_fn(row, sample, device)
        assert gradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3), f"{row.name} {sample!r}"


@pytest.mark.parametrize("row", GRADGRAD_ROWS, ids=lambda r: r.name)
def test_gradgradcheck(row: OpInfo, device: str) -> None:
    for sample in _samples(row, 1):
        fn, leaves = _leaves_and_fn(row, sample, device)
        assert gradgradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3), \
            f"{row.name} {sample!r}"


def test_grad_lands_on_input_device_and_dtype(device: str) -> None:
    x = pg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64, device=device, requires_grad=True)
    y = pg.tensor([0.5, -1.0], device=device, requires_grad=True)  # float32, broadcast
    (x * y).sum().backward()
    assert x.grad.device == pg.device(device) and x.grad.dtype is F64
    assert y.grad.device == pg.device(device) and y.grad.dtype is pg.float32
    np.testing.assert_allclose(y.grad.cpu().numpy(), [4.0, 6.0])
    assert x.grad.shape == x.shape and y.grad.shape == y.shape
