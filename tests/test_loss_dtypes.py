"""The losses' dtype rules, as PyTorch 2.13's: which input dtypes each refuses (with its exception
class and message: ``NotImplementedError`` for a kernel without that dtype, the casting error
where PyTorch writes a floating result into an integer tensor), the dtype of the result, and two
values a formula shortcut got wrong (``hinge_embedding_loss`` with targets other than +-1,
``kl_div`` with negative targets: PyTorch gives ``xlogy``'s NaN).

The table is PyTorch's, written out, so it holds where torch is not installed; where it is,
:func:`test_the_table_is_torchs` recomputes it.
"""
from __future__ import annotations

import math

import pytest

import portagrad as pg

from torch_cases import torch

A = [[0.5, 0, 2], [0, -1.5, 1]]
NAN = math.nan

# (loss, input dtype, target dtype (None: class indices [0, 1]), reduction,
#  "ok" and (result dtype, value) | exception class name and the start of its message)
CASES = [
    ("smooth_l1_loss", "int64", "int64", "mean", "NotImplementedError",
     "\"smooth_l1_cpu\" not implemented for 'Long'"),
    ("huber_loss", "int32", "int32", "mean", "NotImplementedError",
     "\"huber_cpu\" not implemented for 'Int'"),
    ("huber_loss", "int32", "float32", "mean", "RuntimeError",
     "result type Float can't be cast to the desired output type Int"),
    ("smooth_l1_loss", "float32", "bool", "mean", "ok", ("float32", 0.4375)),
    ("huber_loss", "float32", "float64", "mean", "ok", ("float32", 0.0)),
    ("huber_loss", "bfloat16", "float64", "mean", "ok", ("bfloat16", 0.0)),
    ("huber_loss", "float32", "bool", "mean", "ok", ("float32", 0.4375)),
    ("soft_margin_loss", "int64", "int64", "mean", "RuntimeError",
     "result type Float can't be cast to the desired output type Long"),
    ("soft_margin_loss", "float32", "bool", "mean", "ok", ("float32", 0.666996)),
    ("soft_margin_loss", "bool", "bool", "mean", "RuntimeError",
     "Negation, the `-` operator, on a bool tensor is not supported"),
    ("binary_cross_entropy_with_logits", "int64", "float32", "mean", "NotImplementedError",
     "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    ("binary_cross_entropy_with_logits", "float32", "int64", "mean", "RuntimeError",
     "result type Float can't be cast to the desired output type Long"),
    ("binary_cross_entropy_with_logits", "float32", "bool", "mean", "RuntimeError",
     "Subtraction, the `-` operator, with two bool tensors is not supported"),
    ("binary_cross_entropy_with_logits", "float64", "float32", "mean", "ok", ("float32", -0.249671)),
    ("multilabel_soft_margin_loss", "int64", "int64", "mean", "NotImplementedError",
     "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    ("kl_div", "int64", "int64", "mean", "RuntimeError", "kl_div: Integral inputs not supported."),
    ("kl_div", "float32", "bool", "mean", "RuntimeError", "kl_div: Integral inputs not supported."),
    ("kl_div", "float32", "float32", "mean", "ok", ("float32", NAN)),
    ("hinge_embedding_loss", "float32", "int64", "mean", "ok", ("float32", 1.416667)),
    ("hinge_embedding_loss", "float64", "float64", "mean", "ok", ("float64", 1.166667)),
    ("hinge_embedding_loss", "int64", "int64", "sum", "ok", ("int64", 8.0)),
    ("mse_loss", "int64", "int64", "mean", "NotImplementedError",
     "\"mse_cpu\" not implemented for 'Long'"),
    ("binary_cross_entropy", "int64", "int64", "mean", "NotImplementedError",
     "\"binary_cross_entropy\" not implemented for 'Long'"),
    ("cross_entropy", "int64", None, "mean", "NotImplementedError",
     "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("nll_loss", "int64", None, "mean", "NotImplementedError",
     "\"nll_loss_out_frame\" not implemented for 'Long'"),
    ("multi_margin_loss", "int32", None, "mean", "NotImplementedError",
     "\"multi_margin_loss_cpu_kernel\" not implemented for 'Int'"),
    ("multilabel_margin_loss", "int64", "int64", "mean", "NotImplementedError",
     "\"multilabel_margin_loss_forward_out_frame\" not implemented for 'Long'"),
    ("gaussian_nll_loss", "float32", "float32", "mean", "RuntimeError",
     "result type Float can't be cast to the desired output type int"),
]


def _args(L, name, a, b, device=None):
    kw = {} if device is None else {"device": device}
    x = L.tensor(A, **kw).to(getattr(L, a))
    if b is None:
        return (x, L.tensor([0, 1], **kw))
    if name == "multilabel_margin_loss":
        return (x, L.tensor([[0, -1, 1], [2, -1, 0]], **kw))
    if name == "gaussian_nll_loss":  # an integer variance
        return (x, x, L.ones(2, 3, dtype=L.int32, **kw))
    return (x, L.tensor(A, **kw).to(getattr(L, b)))


def _ids(case):
    return f"{case[0]}-{case[1]}-{case[2]}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_loss_dtype_rules(device, case):
    name, a, b, reduction, what, expected = case
    try:
        args = _args(pg, name, a, b, device)
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no bfloat16)
        pytest.skip(f"{device} declines a dtype of this case (DTypeError)")
    fn = getattr(pg.nn.functional, name)
    if what == "ok":
        r = fn(*args, reduction=reduction)
        assert r.dtype == getattr(pg, expected[0])
        value = float(r)
        assert (math.isnan(value) and math.isnan(expected[1])) or \
            value == pytest.approx(expected[1], abs=1e-5)
    else:
        with pytest.raises(Exception) as info:
            fn(*args, reduction=reduction)
        assert type(info.value).__name__ == what
        assert str(info.value).startswith(expected)


def test_hinge_embedding_gradient_counts_both_terms_for_other_targets(device):
    x = pg.tensor([0.5, -0.25, 2.0], dtype=pg.float64, device=device, requires_grad=True)
    t = pg.tensor([0.0, 1.0, -1.0], dtype=pg.float64, device=device)
    pg.nn.functional.hinge_embedding_loss(x, t, reduction="sum").backward()
    # target 0: x + relu(1 - x) -> 1 - 1 = 0 for x < 1; target 1: x -> 1; target -1 and
    # x > 1: relu(1 - x) = 0 -> 0
    assert x.grad.cpu().tolist() == [0.0, 1.0, 0.0]


@pytest.mark.skipif(torch is None, reason="compares with torch, which is not installed")
def test_the_table_is_torchs():
    for name, a, b, reduction, what, expected in CASES:
        fn = getattr(torch.nn.functional, name)
        args = _args(torch, name, a, b)
        if what == "ok":
            r = fn(*args, reduction=reduction)
            assert str(r.dtype) == f"torch.{expected[0]}", name
            value = float(r)
            assert (math.isnan(value) and math.isnan(expected[1])) or \
                value == pytest.approx(expected[1], abs=1e-5), name
        else:
            with pytest.raises(Exception) as info:
                fn(*args, reduction=reduction)
            assert type(info.value).__name__ == what, name
            assert str(info.value).startswith(expected), name


def test_nll_loss_checks_the_weight_before_the_dtype(device):
    # PyTorch's nll_loss checks the weight's size first, then refuses an integer input
    x = pg.zeros(2, 3, dtype=pg.int64, device=device)
    t = pg.tensor([1, 1], device=device)
    with pytest.raises(RuntimeError, match="^weight tensor should be defined either for all 3 "
                                           "classes or no classes"):
        pg.nn.functional.nll_loss(x, t, weight=pg.ones(2, device=device))
    with pytest.raises(NotImplementedError, match="\"nll_loss_out_frame\" not implemented for "
                                                  "'Long'"):
        pg.nn.functional.nll_loss(x, t, weight=pg.ones(3, device=device))
