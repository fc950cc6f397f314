"""Edge cases where portagrad once gave a silently wrong answer, each checked against PyTorch.

Every case is one function of the library (``portagrad`` or ``torch``), its ``nn.functional`` and
a device. ``test_case`` runs it on every test device and compares with the expected answer written
literally (so it means something without torch, which is optional); ``test_expected_is_torch``
checks that literal against torch itself where torch is installed.
"""
from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable

import pytest

import portagrad as pg
import portagrad.nn.functional as pgF

from torch_cases import Raises, check, torch, torchF

INF = math.inf
NAN = math.nan
OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


def _ones(lib: Any, dev: str, *shape: int) -> Any:
    return lib.ones(*shape, device=dev)


def _expanded(lib: Any, dev: str, op: Callable[[Any, Any], Any]) -> Callable:
    """Apply ``op`` in place to a (3, 3) expansion of a (3, 1) tensor; the base's values after."""
    b = lib.zeros(3, 1, device=dev)
    op(lib, b.expand(3, 3))
    return b


# name -> (case(lib, F, dev), expected): expected is (values, dtype name) or Raises
CASES: dict[str, tuple[Callable, Any]] = {
    # 1. a reduction over an empty axis: the sum is 0, plus the bias
    "linear_k0_bias": (lambda m, F, d: F.linear(_ones(m, d, 2, 0), _ones(m, d, 3, 0),
                                                _ones(m, d, 3)), ([[1.] * 3] * 2, "float32")),
    "linear_k0": (lambda m, F, d: F.linear(_ones(m, d, 2, 0), _ones(m, d, 3, 0)),
                  ([[0.] * 3] * 2, "float32")),
    "linear_k0_3d": (lambda m, F, d: F.linear(_ones(m, d, 2, 2, 0), _ones(m, d, 1, 0),
                                              _ones(m, d, 1)), ([[[1.]] * 2] * 2, "float32")),
    "mm_k0": (lambda m, F, d: m.mm(_ones(m, d, 2, 0), _ones(m, d, 0, 3)),
              ([[0.] * 3] * 2, "float32")),
    "matmul_batched_k0": (lambda m, F, d: m.matmul(_ones(m, d, 2, 1, 0), _ones(m, d, 0, 2)),
                          ([[[0., 0.]]] * 2, "float32")),
    "bmm_k0": (lambda m, F, d: m.bmm(_ones(m, d, 2, 1, 0), _ones(m, d, 2, 0, 2)),
               ([[[0., 0.]]] * 2, "float32")),
    "mv_k0": (lambda m, F, d: m.mv(_ones(m, d, 2, 0), _ones(m, d, 0)), ([0., 0.], "float32")),
    "dot_k0": (lambda m, F, d: m.dot(_ones(m, d, 0), _ones(m, d, 0)), (0., "float32")),
    "addmm_k0": (lambda m, F, d: m.addmm(_ones(m, d, 2, 2), _ones(m, d, 2, 0), _ones(m, d, 0, 2),
                                         beta=2), ([[2., 2.]] * 2, "float32")),
    "baddbmm_k0": (lambda m, F, d: m.baddbmm(_ones(m, d, 1, 1, 2), _ones(m, d, 1, 1, 0),
                                             _ones(m, d, 1, 0, 2)), ([[[1., 1.]]], "float32")),
    "sum_empty_axis": (lambda m, F, d: _ones(m, d, 2, 0).sum(1), ([0., 0.], "float32")),
    "prod_empty_axis": (lambda m, F, d: _ones(m, d, 2, 0).prod(1), ([1., 1.], "float32")),
    "logsumexp_empty_axis": (lambda m, F, d: m.logsumexp(_ones(m, d, 2, 0), 1),
                             ([-INF, -INF], "float32")),
    # 2. padding never wins a max, whatever the dtype
    "max_pool2d_int_padding": (
        lambda m, F, d: F.max_pool2d(m.tensor([[[[-1, -2], [-3, -4]]]], device=d), 2, 1, 1),
        ([[[[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]]]], "int64")),
    # 3. IEEE corners of fmod / remainder / sign
    "fmod_inf": (lambda m, F, d: m.fmod(m.tensor([1., -1., 0., 2.5], device=d), INF),
                 ([1., -1., 0., 2.5], "float32")),
    "fmod_tensor_inf": (lambda m, F, d: m.fmod(m.tensor([1., -1.], device=d),
                                               m.tensor([-INF, INF], device=d)),
                        ([1., -1.], "float32")),
    "remainder_inf": (lambda m, F, d: m.remainder(m.tensor([1., -1., 1., -1.], device=d),
                                                  m.tensor([INF, INF, -INF, -INF], device=d)),
                      ([1., INF, -INF, -1.], "float32")),
    "sign_nan": (lambda m, F, d: m.sign(m.tensor([NAN, -2., 0., 3.], device=d)),
                 ([0., -1., 0., 1.], "float32")),
    "sgn_nan": (lambda m, F, d: m.sgn(m.tensor([NAN, -2., 3.], device=d)),
                ([0., -1., 1.], "float32")),
    # 4. kthvalue's k out of range
    "kthvalue_k0": (lambda m, F, d: m.kthvalue(m.tensor([1., 2., 3.], device=d), 0),
                    Raises(RuntimeError, "selected number k out of range")),
    "kthvalue_k_too_big": (lambda m, F, d: m.kthvalue(m.tensor([1., 2., 3.], device=d), 4),
                           Raises(RuntimeError, "selected number k out of range")),
    "kthvalue_k_negative": (lambda m, F, d: m.kthvalue(m.tensor([1., 2., 3.], device=d), -1),
                            Raises(RuntimeError, "selected number k out of range")),
    "kthvalue_k_last": (lambda m, F, d: m.kthvalue(m.tensor([3., 1., 2.], device=d), 3).values,
                        (3., "float32")),
    "kthvalue_0d": (lambda m, F, d: m.kthvalue(m.tensor(5., device=d), 1).values, (5., "float32")),
    "median_empty_dim": (lambda m, F, d: m.median(m.ones(2, 0, device=d), 1),
                         Raises(IndexError, "Expected reduction dim 1 to have non-zero size")),
    # 5. a bias that does not broadcast to the product's shape
    "addmm_bad_bias": (lambda m, F, d: m.addmm(m.arange(5., device=d), _ones(m, d, 1, 1),
                                               _ones(m, d, 1, 1)),
                       Raises(RuntimeError, r"expanded size.*\[1, 1\].*\[5\]")),
    "linear_bad_bias": (lambda m, F, d: F.linear(_ones(m, d, 2, 1), _ones(m, d, 2, 1),
                                                 _ones(m, d, 3)),
                        Raises(RuntimeError, r"expanded size.*\[2, 2\].*\[3\]")),
    "baddbmm_bad_bias": (lambda m, F, d: m.baddbmm(_ones(m, d, 5), _ones(m, d, 2, 1, 1),
                                                   _ones(m, d, 2, 1, 1)),
                         Raises(RuntimeError, r"expanded size.*\[2, 1, 1\].*\[5\]")),
    "addmm_broadcast_bias": (lambda m, F, d: m.addmm(_ones(m, d, 1), _ones(m, d, 2, 1),
                                                     _ones(m, d, 1, 2)),
                             ([[2., 2.]] * 2, "float32")),
    # 6. in-place writes into a tensor whose elements share memory
    "overlap_add_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.add_(1)),
                     Raises(RuntimeError, OVERLAP)),
    "overlap_mul_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.mul_(2)),
                     Raises(RuntimeError, OVERLAP)),
    "overlap_neg_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.neg_()),
                     Raises(RuntimeError, OVERLAP)),
    "overlap_clamp_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.clamp_(0, 1)),
                       Raises(RuntimeError, OVERLAP)),
    "overlap_copy_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.copy_(m.ones(3, 3, device=d))),
                      Raises(RuntimeError, OVERLAP)),
    "overlap_setitem": (lambda m, F, d: _expanded(m, d, lambda m, v: v.__setitem__(0, 5.)),
                        Raises(RuntimeError, OVERLAP)),
    "overlap_index_add_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.index_add_(
        0, m.tensor([0], device=d), m.ones(1, 3, device=d))), Raises(RuntimeError, OVERLAP)),
    "overlap_scatter_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.scatter_(
        0, m.tensor([[0, 0, 0]], device=d), m.ones(1, 3, device=d))),
        Raises(RuntimeError, OVERLAP)),
    "overlap_uniform_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.uniform_()),
                         Raises(RuntimeError, OVERLAP)),
    "overlap_out": (lambda m, F, d: _expanded(m, d, lambda m, v: m.add(m.ones(3, 3, device=d), 1,
                                                                        out=v)),
                    Raises(RuntimeError, OVERLAP)),
    # (torch allows these: every element written gets the same value)
    "overlap_fill_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.fill_(1)),
                      ([[1.]] * 3, "float32")),
    "overlap_zero_": (lambda m, F, d: _expanded(m, d, lambda m, v: v.zero_()),
                      ([[0.]] * 3, "float32")),
    "overlap_size_one": (lambda m, F, d: m.zeros(1, device=d).expand(1).add_(1),
                         ([1.], "float32")),
    # 7. result dtypes
    "nansum_int64": (lambda m, F, d: m.nansum(m.tensor([1, 2], device=d)), (3, "int64")),
    "nansum_int32": (lambda m, F, d: m.nansum(m.tensor([1, 2], dtype=m.int32, device=d)),
                     (3, "int64")),
    "nansum_bool": (lambda m, F, d: m.nansum(m.tensor([True, True], device=d)), (2, "int64")),
    "tril_bool": (lambda m, F, d: m.tril(m.ones(2, 2, dtype=m.bool, device=d)),
                  ([[True, False], [True, True]], "bool")),
    "triu_bool": (lambda m, F, d: m.triu(m.ones(2, 2, dtype=m.bool, device=d)),
                  ([[True, True], [False, True]], "bool")),
    "avg_pool2d_int64": (lambda m, F, d: F.avg_pool2d(m.tensor([[[[1, 2], [3, 4]]]], device=d), 2),
                         ([[[[2]]]], "int64")),
    "avg_pool2d_int_truncates": (
        lambda m, F, d: F.avg_pool2d(m.tensor([[[[-1, -2], [-3, -4]]]], device=d), 2),
        ([[[[-2]]]], "int64")),
    "avg_pool2d_int_divisor": (
        lambda m, F, d: F.avg_pool2d(m.tensor([[[[-1, -2], [-3, -4]]]], device=d), 2,
                                     divisor_override=3), ([[[[-3]]]], "int64")),
    "square_int32": (lambda m, F, d: m.square(m.tensor([3], dtype=m.int32, device=d)),
                     ([9], "int32")),
    "square_bool": (lambda m, F, d: m.square(m.tensor([True, False], device=d)),
                    ([1, 0], "int64")),
    "index_add_int32_float_alpha": (
        lambda m, F, d: m.zeros(3, dtype=m.int32, device=d).index_add(
            0, m.tensor([0, 1], device=d), m.tensor([1, 2], dtype=m.int32, device=d), alpha=1.5),
        ([1, 2, 0], "int32")),
    "split_empty": (lambda m, F, d: [tuple(c.shape) for c in m.split(m.zeros(0, device=d), 1)],
                    [(0,)]),
    "index_select_0d_two_values": (
        lambda m, F, d: m.index_select(m.tensor(5., device=d), 0, m.tensor([0, 0], device=d)),
        Raises(RuntimeError, "Index to scalar can have only 1 value")),
    "split_empty_2d": (lambda m, F, d: [tuple(c.shape) for c in m.split(m.zeros(0, 2, device=d),
                                                                         1)], [(0, 2)]),
    "chunk_empty": (lambda m, F, d: [tuple(c.shape) for c in m.chunk(m.zeros(0, device=d), 2)],
                    [(0,), (0,)]),
    "index_select_0d": (lambda m, F, d: m.index_select(m.tensor(5., device=d), 0,
                                                       m.tensor([0], device=d)), (5., "float32")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(device, name):
    case, want = CASES[name]
    check(case, want, pg, pgF, device)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_expected_is_torch(name):
    case, want = CASES[name]
    check(case, want, torch, torchF, "cpu")
