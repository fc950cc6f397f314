"""Gradients through strided views (``diagonal``, ``unfold``, ``as_strided``) of inputs whose
elements share memory: expanded (stride 0) tensors and overlapping windows.

The derivative of such a view must put each gradient element on the element of the input it
was read from (``diagonal`` and ``unfold`` have PyTorch's own derivatives, in the input's logical
layout); ``as_strided``, defined on memory, divides what lands on a memory location among the
input's elements that share it (PyTorch's ``as_strided_backward``). Accumulating into a buffer
laid out like the input's memory and reading it back through the input's strides counted a
location once per element sharing it: ``x.expand(2, 2).diagonal().sum()`` gave ``x.grad`` twice
too large. The expected values are PyTorch's, written out; they are checked against torch
where it is installed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import portagrad as pg
from portagrad.autograd import gradcheck, gradgradcheck

from torch_cases import torch

# name -> (x, view of (library, x), weights of the view's elements or None for a plain sum,
#          x.grad, PyTorch's grad_fn name of the view)
Case = tuple[Any, Callable[[Any, Any], Any], Any, Any, str]

CASES: dict[str, Case] = {
    "diagonal_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(2, 2).diagonal(), None,
                             [1.0, 1.0], "DiagonalBackward0"),
    "diagonal_of_expanded_weighted": ([1.0, 2.0], lambda L, x: x.expand(2, 2).diagonal(),
                                      [3.0, 5.0], [3.0, 5.0], "DiagonalBackward0"),
    "diagonal_offset_of_expanded": ([1.0, 2.0, 3.0],
                                    lambda L, x: x.expand(2, 3, 3).diagonal(1, 1, 2),
                                    [[1.0, 2.0], [3.0, 4.0]], [0.0, 4.0, 6.0],
                                    "DiagonalBackward0"),
    "diagonal_below_of_column_expanded": ([[1.0], [2.0]],
                                          lambda L, x: x.expand(2, 3).diagonal(-1), [7.0],
                                          [[0.0], [7.0]], "DiagonalBackward0"),
    "diagonal_of_repeat": ([1.0, 2.0], lambda L, x: x.repeat(2, 1).diagonal(), [3.0, 5.0],
                           [3.0, 5.0], "DiagonalBackward0"),
    "diagonal_of_diagonal_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(
        2, 2, 2).diagonal(0, 0, 1).diagonal(), [3.0, 5.0], [3.0, 5.0], "DiagonalBackward0"),
    "diagonal_of_unfold": ([1.0, 2.0, 3.0], lambda L, x: x.unfold(0, 2, 1).diagonal(),
                           [3.0, 5.0], [3.0, 0.0, 5.0], "DiagonalBackward0"),
    "diag_of_expanded": ([1.0, 2.0], lambda L, x: L.diag(x.expand(2, 2)), [3.0, 5.0],
                         [3.0, 5.0], ""),
    "trace_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(2, 2).trace(), None, [1.0, 1.0], ""),
    "trace_of_repeat": ([1.0, 2.0], lambda L, x: x.repeat(2, 1).trace(), None, [1.0, 1.0], ""),
    "unfold_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(3, 2).unfold(0, 2, 1), None,
                           [4.0, 4.0], "UnfoldBackward0"),
    "unfold_of_expanded_weighted": ([1.0, 2.0], lambda L, x: x.expand(3, 2).unfold(0, 2, 1),
                                    [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]],
                                    [10.0, 18.0], "UnfoldBackward0"),
    "unfold_along_the_expanded_dim": ([1.0, 2.0], lambda L, x: x.expand(4, 2).unfold(0, 3, 1),
                                      None, [6.0, 6.0], "UnfoldBackward0"),
    "unfold_of_expanded_0d": (3.0, lambda L, x: x.expand(5).unfold(0, 2, 2),
                              [[1.0, 2.0], [3.0, 4.0]], 10.0, "UnfoldBackward0"),
    "unfold_of_unfold": ([1.0, 2.0, 3.0, 4.0], lambda L, x: x.unfold(0, 2, 1).unfold(0, 2, 1),
                         [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
                         [1.0, 10.0, 17.0, 8.0], "UnfoldBackward0"),
    "as_strided_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(2, 2).as_strided((2,), (1,)),
                               [3.0, 5.0], [3.0, 5.0], "AsStridedBackward0"),
    "as_strided_stride0_of_expanded": ([1.0, 2.0], lambda L, x: x.expand(2, 2).as_strided(
        (2, 2), (1, 0)), [[3.0, 5.0], [7.0, 11.0]], [8.0, 18.0], "AsStridedBackward0"),
    "as_strided_of_unfold": ([1.0, 2.0, 3.0], lambda L, x: x.unfold(0, 2, 1).as_strided(
        (2,), (1,), 1), [3.0, 5.0], [0.0, 3.0, 5.0], "AsStridedBackward0"),
}


def _grad(L: Any, case: Case, make: Callable[[Any], Any]) -> tuple[Any, str]:
    data, view, weights, _, _ = case
    x = make(data)
    y = view(L, x)
    out = y.sum() if weights is None else (y * make(weights).detach()).sum()
    out.backward()
    return x.grad.tolist(), y.grad_fn.name()


@pytest.mark.parametrize("name", sorted(CASES))
def test_view_grad_of_shared_memory(name: str, device: str) -> None:
    case = CASES[name]
    grad, fn_name = _grad(pg, case, lambda d: pg.tensor(d, dtype=pg.float64, device=device,
                                                         requires_grad=True))
    assert grad == case[3]
    if case[4]:
        assert fn_name == case[4]


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_view_grad_of_shared_memory_is_torchs(name: str) -> None:
    case = CASES[name]
    grad, fn_name = _grad(torch, case, lambda d: torch.tensor(d, dtype=torch.float64,
                                                               requires_grad=True))
    assert grad == case[3]
    if case[4]:
        assert fn_name == case[4]


# an intermediate's own gradient (retain_grad): what lands on the expanded tensor itself
# name -> (x, intermediate of (library, x), view of the intermediate, weights, its grad)
INTERMEDIATE: dict[str, tuple] = {
    "diagonal": ([1.0, 2.0], lambda L, x: x.expand(2, 2), lambda y: y.diagonal(), [3.0, 5.0],
                 [[3.0, 0.0], [0.0, 5.0]]),
    "unfold": ([1.0, 2.0], lambda L, x: x.expand(3, 2), lambda y: y.unfold(0, 2, 1),
               [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]],
               [[0.0, 2.0], [5.0, 9.0], [5.0, 7.0]]),
    "as_strided": ([1.0, 2.0], lambda L, x: x.expand(2, 2), lambda y: y.as_strided((2,), (1,)),
                   [3.0, 5.0], [[1.5, 2.5], [1.5, 2.5]]),
    "as_strided_of_overlapping": ([1.0, 2.0, 3.0], lambda L, x: x.unfold(0, 2, 1),
                                  lambda y: y.as_strided((2,), (1,), 1), [3.0, 5.0],
                                  [[0.0, 1.5], [1.5, 5.0]]),
}


def _intermediate_grad(L: Any, case: tuple, make: Callable[[Any], Any]) -> Any:
    data, inter, view, weights, _ = case
    x = make(data)
    y = inter(L, x)
    y.retain_grad()
    (view(y) * make(weights).detach()).sum().backward()
    return y.grad.tolist()


@pytest.mark.parametrize("name", sorted(INTERMEDIATE))
def test_grad_of_the_expanded_tensor(name: str, device: str) -> None:
    case = INTERMEDIATE[name]
    assert _intermediate_grad(pg, case, lambda d: pg.tensor(
        d, dtype=pg.float64, device=device, requires_grad=True)) == case[4]


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(INTERMEDIATE))
def test_grad_of_the_expanded_tensor_is_torchs(name: str) -> None:
    case = INTERMEDIATE[name]
    assert _intermediate_grad(torch, case, lambda d: torch.tensor(
        d, dtype=torch.float64, requires_grad=True)) == case[4]


# float64 gradcheck (and gradgradcheck) of the views of shared memory
GRADCHECK: dict[str, tuple[tuple[int, ...], Callable[[pg.Tensor], pg.Tensor]]] = {
    "diagonal_of_expanded": ((3,), lambda x: x.expand(3, 3).diagonal()),
    "diagonal_offset_of_expanded": ((2, 1, 3), lambda x: x.expand(2, 4, 3).diagonal(-1, 1, 2)),
    "diagonal_of_transposed_expanded": ((3,), lambda x: x.expand(2, 3).t().diagonal(1)),
    "diag_of_expanded": ((3,), lambda x: pg.diag(x.expand(3, 3), 1)),
    "trace_of_repeat": ((3,), lambda x: x.repeat(3, 1).trace()),
    "unfold_of_expanded": ((3,), lambda x: x.expand(4, 3).unfold(0, 2, 1)),
    "unfold_of_unfold": ((5,), lambda x: x.unfold(0, 3, 1).unfold(0, 2, 1)),
    "unfold_with_gaps": ((7,), lambda x: x.unfold(0, 2, 3)),
    "as_strided_of_expanded": ((3,), lambda x: x.expand(3, 3).as_strided((2, 2), (1, 1))),
    "as_strided_of_unfold": ((4,), lambda x: x.unfold(0, 2, 1).as_strided((3,), (1,), 1)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck_views_of_shared_memory(name: str, device: str) -> None:
    shape, fn = GRADCHECK[name]
    x = pg.randn(shape, dtype=pg.float64, device=device, requires_grad=True)
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_unfold_of_0d_is_a_stride_1_view(device: str) -> None:
    x = pg.tensor(3.0, dtype=pg.float64, device=device, requires_grad=True)
    y = x.unfold(0, 1, 1)
    assert (y.shape, y.stride(), y._storage is x._storage) == ((1,), (1,), True)
    assert y.grad_fn.name() == "UnfoldBackward0"
    (y * 2.0).sum().backward()
    assert x.grad.item() == 2.0
