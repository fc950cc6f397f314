"""PyTorch's behaviour of the loss functions and their modules where portagrad differed: weighted
means, gradients at the corners and where every target is ignored, argument checks (exception
types and messages), result dtypes and shapes; expected values are PyTorch 2.13's, written
out."""
from __future__ import annotations

import math
import warnings

import pytest

import portagrad as pg
import portagrad.nn.functional as F

NAN = math.nan


def t(device: str, data, dtype=None, requires_grad: bool = False):
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def close(a, b, tol: float = 1e-5) -> bool:
    """Nested lists equal within ``tol`` (NaN equal to NaN)."""
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= tol * max(1.0, abs(b))


# ------------------------------------------------------------------ reductions and weights
def test_legacy_reduction_warning_names_the_reduction(device: str) -> None:
    x, y = t(device, [1., 2.]), t(device, [0., 0.])
    for kw, name, want in (({"reduce": False}, "none", [1., 4.]),
                           ({"size_average": True, "reduce": False}, "none", [1., 4.]),
                           ({"size_average": False}, "sum", 5.),
                           ({"reduce": True}, "mean", 2.5)):
        with pytest.warns(UserWarning, match=f"please use reduction='{name}' instead"):
            out = F.mse_loss(x, y, **kw)
        assert out.tolist() == want
    with pytest.warns(UserWarning, match="reduction='none'"):
        m = pg.nn.L1Loss(reduce=False)
    assert m.reduction == "none"


def test_mse_l1_huber_weighted_mean(device: str) -> None:
    y, w = t(device, [0., 0., 1.]), t(device, [1., 2., 4.])
    # mse and l1: sum(w * l) / sum(w); huber: the plain mean of w * l
    for fn, mean, grad, total in (
            (F.mse_loss, 3.5714285, [0.2857143, 1.1428572, 2.2857144], 25.0),
            (F.l1_loss, 1.8571428, [0.1428571, 0.2857143, 0.5714286], 13.0),
            (F.huber_loss, 3.1666667, [0.3333333, 0.6666667, 1.3333334], 9.5)):
        x = t(device, [1., 2., 3.], requires_grad=True)
        out = fn(x, y, weight=w)
        out.backward()
        assert close(out.item(), mean) and close(x.grad.tolist(), grad)
        assert close(fn(x, y, weight=w, reduction="sum").item(), total)
        with pytest.raises(ValueError, match="^Weights and input must have the same size.$"):
            fn(x, y, weight=t(device, [[1., 2., 4.]]))
    out = F.mse_loss(t(device, [1., 2., 3.]), y, weight=w.to(pg.float64))
    assert out.dtype is pg.float64 and close(out.item(), 3.5714285)


def test_huber_delta_must_be_positive(device: str) -> None:
    z = pg.zeros(2, device=device)
    for delta in (0.0, -1.0):
        with pytest.raises(RuntimeError, match="^huber_loss does not support non-positive values "
                           "for delta.$"):
            F.huber_loss(z, z, delta=delta)


def test_smooth_l1_and_huber_nan_gradient(device: str) -> None:
    for fn in (lambda a, b: F.smooth_l1_loss(a, b, reduction="none"),
               lambda a, b: F.huber_loss(a, b, reduction="none")):
        x = t(device, [NAN, math.inf, -math.inf, 1.], requires_grad=True)
        fn(x, t(device, [0., 1., math.inf, math.inf])).sum().backward()
        assert close(x.grad.tolist(), [NAN, 1., -1., -1.])


def test_soft_margin_loss_dtype_target_and_shape(device: str) -> None:
    x = t(device, [1., -2.])
    out = F.soft_margin_loss(x, t(device, [1., -1.], pg.float64), reduction="none")
    assert out.dtype is pg.float32 and close(out.tolist(), [0.3132617, 0.1269280])
    with pytest.raises(RuntimeError, match="^The function 'soft_margin_loss' is not "
                       "differentiable with respect to argument 'target'. This input cannot have "
                       "requires_grad True.$"):
        F.soft_margin_loss(x, t(device, [1., -1.], requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^output with shape \[2\] doesn't match the "
                       r"broadcast shape \[2, 2\]$"):
        F.soft_margin_loss(x, t(device, [[1., -1.], [1., 1.]]))


# ------------------------------------------------------------------ gradients at corners
def test_hinge_corners_pass_the_gradient(device: str) -> None:
    a = t(device, [0.5, -1.0, 2.0, 0.0], requires_grad=True)
    b = t(device, [0.0, 1.0, 2.0, 0.5], requires_grad=True)
    F.margin_ranking_loss(a, b, t(device, [1., -1., 1., -1.]), margin=0.5,
                          reduction="sum").backward()
    assert a.grad.tolist() == [-1., 0., -1., 1.] and b.grad.tolist() == [1., 0., 1., -1.]
    h = t(device, [0.5, -1.0, 0.5, 0.0, 1.0], requires_grad=True)
    F.hinge_embedding_loss(h, t(device, [1., -1., -1., -1., 0.]), margin=0.5,
                           reduction="sum").backward()
    assert h.grad.tolist() == [1., -1., -1., -1., 1.]
    an = t(device, [[1., 0.], [0.5, 0.5]], requires_grad=True)
    ne = t(device, [[0., 1.], [0.5, 0.4]], requires_grad=True)
    out = F.triplet_margin_loss(an, t(device, [[1., 1.], [-0.5, -0.5]]), ne, p=1,
                                reduction="none")
    out.sum().backward()
    assert close(out.tolist(), [0.0, 2.9])
    assert ne.grad.tolist() == [[1., -1.], [1., 1.]] and an.grad.tolist() == [[0., 0.], [0., 0.]]


def test_margin_ranking_and_triplet_checks(device: str) -> None:
    a = t(device, [[0.5, 0.2]])
    with pytest.raises(RuntimeError, match=r"^margin_ranking_loss : All input tensors should have "
                       r"same dimension but got sizes: input1: .*Size\(\[1, 2\]\), input2: "
                       r".*Size\(\[2\]\), target: .*Size\(\[2\]\) $"):
        F.margin_ranking_loss(a, a[0], a[0])
    for fn in (F.triplet_margin_loss, F.triplet_margin_with_distance_loss):
        with pytest.raises(ValueError, match="^margin must be greater than 0, got 0.0$"):
            fn(a, a, a, margin=0.0)
        with pytest.raises(ValueError, match="^foo is not a valid value for reduction$"):
            fn(a, a[0], a, margin=0.0, reduction="foo")  # the reduction is checked first
        with pytest.raises(RuntimeError, match="^The anchor, positive, and negative tensors are "
                           "expected to have the same number of dimensions, but got: anchor 2D, "
                           "positive 1D, and negative 2D inputs$"):
            fn(a, a[0], a)


# ------------------------------------------------------------------ nll_loss / cross_entropy
def test_class_target_dtypes(device: str) -> None:
    x = t(device, [[1., 2., 3.], [0., 1., 0.]])
    for fn in (F.nll_loss, F.cross_entropy):
        for dt, name in ((pg.int32, "Int"), (pg.int16, "Short"), (pg.bool, "Bool"),
                         (pg.float32, "Float")):
            with pytest.raises(RuntimeError, match=f"^expected target dtype to be Long or Byte, "
                               f"but got {name}$"):
                fn(x, t(device, [1, 0], dt))
    assert close(F.cross_entropy(x, t(device, [2, 0], pg.uint8)).item(), 0.9795253)
    assert F.nll_loss(x, t(device, [2, 0], pg.uint8)).item() == -1.5
    with pytest.raises(RuntimeError, match="^expected scalar type Long but found Byte$"):
        F.nll_loss(pg.zeros(2, 3, 2, device=device), pg.zeros(2, 2, dtype=pg.uint8, device=device))
    # a target of the input's shape holds class probabilities: it must be floating
    with pytest.raises(RuntimeError, match="^Expected floating point type for target with class "
                       "probabilities, got Int$"):
        F.cross_entropy(x, pg.zeros(2, 3, dtype=pg.int32, device=device))
    with pytest.raises(RuntimeError, match="got Long$"):
        F.cross_entropy(x.long(), x.long())


def test_class_weight_checks(device: str) -> None:
    x = t(device, [[1., 2., 3.], [0., 1., 0.]])
    tg = t(device, [2, 0])
    for fn in (F.nll_loss, F.cross_entropy):
        with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
            fn(x, tg, weight=t(device, [1., 2., 3.], pg.float64))
        with pytest.raises(RuntimeError, match="^expected scalar type Float but found Long$"):
            fn(x, tg, weight=t(device, [1, 2, 3]))
        with pytest.raises(RuntimeError, match=r"^weight tensor should be defined either for all 3 "
                           r"classes or no classes but got weight tensor of shape: \[1, 3\]$"):
            fn(x, tg, weight=t(device, [[1., 2., 3.]]))
        with pytest.raises(RuntimeError, match="^The function 'nll_loss_forward' is not "
                           "differentiable with respect to argument 'weight'"):
            fn(x, tg, weight=t(device, [1., 2., 3.], requires_grad=True))
    with pytest.raises(RuntimeError, match="^weight tensor should be defined either for all or no "
                       "classes$"):
        F.nll_loss(pg.zeros(2, 3, 2, device=device), pg.zeros(2, 2, dtype=pg.int64, device=device),
                   weight=pg.ones(2, device=device))
    with pytest.raises(RuntimeError, match="nll_loss2d_forward' is not differentiable"):
        F.nll_loss(pg.zeros(2, 3, 2, device=device), pg.zeros(2, 2, dtype=pg.int64, device=device),
                   weight=pg.ones(3, device=device, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^cross_entropy: weight tensor should be defined "
                       r"either for all 3 classes or no classes but got weight tensor of shape: "
                       r"\[4\]$"):
        F.cross_entropy(x, pg.ones(2, 3, device=device), weight=pg.ones(4, device=device))
    # with class probabilities the weight promotes instead
    out = F.cross_entropy(x, pg.ones(2, 3, device=device), weight=pg.ones(3, dtype=pg.float64,
                                                                          device=device))
    assert out.dtype is pg.float64


def test_class_target_shape_messages(device: str) -> None:
    z = pg.zeros
    i64 = pg.int64
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target not "
                       "supported$"):
        F.nll_loss(z(2, 3, device=device), z(2, 3, dtype=i64, device=device))
    with pytest.raises(RuntimeError, match=r"^size mismatch \(got input: \[2, 3, 2, 2\] , target: "
                       r"\[2, 2, 3\]$"):
        F.nll_loss(z(2, 3, 2, 2, device=device), z(2, 2, 3, dtype=i64, device=device))
    with pytest.raises(RuntimeError, match="^only batches of spatial targets supported \\(3D "
                       "tensors\\) but got targets of dimension: 2$"):
        F.nll_loss(z(3, 4, 1, 1, device=device), z(3, 1, dtype=i64, device=device))
    with pytest.raises(RuntimeError, match=r"^Expected target size \[3, 1, 1, 1\], got "
                       r"\[3, 1, 1\]$"):
        F.nll_loss(z(3, 4, 1, 1, 1, device=device), z(3, 1, 1, dtype=i64, device=device))
    with pytest.raises(ValueError, match=r"^Expected input batch_size \(2\) to match target "
                       r"batch_size \(0\).$"):
        F.nll_loss(z(2, 3, device=device), z((), dtype=i64, device=device))
    with pytest.raises(ValueError, match=r"^Expected input batch_size \(3\) to match target "
                       r"batch_size \(2\).$"):
        F.cross_entropy(z(3, 4, device=device), z(2, 4, device=device))


@pytest.mark.parametrize("kw", [{}, {"weight": [1., 2., 3.]}, {"label_smoothing": 0.2}])
def test_every_target_ignored_mean_has_zero_gradient(device: str, kw: dict) -> None:
    if "weight" in kw:
        kw = {"weight": t(device, kw["weight"])}
    for fn in (F.cross_entropy, lambda a, b, **k: F.nll_loss(a.log_softmax(1), b, **k)):
        if "label_smoothing" in kw and fn is not F.cross_entropy:
            continue
        x = t(device, [[1., 2., 3.], [0., 1., 0.]], requires_grad=True)
        out = fn(x, t(device, [1, 1]), ignore_index=1, **kw)
        out.backward()
        assert math.isnan(out.item()) and x.grad.tolist() == [[0.] * 3] * 2
        x = t(device, [[1., 2., 3.], [0., 1., 0.]], requires_grad=True)
        out = fn(x, t(device, [1, 1]), ignore_index=1, reduction="sum", **kw)
        out.backward()
        assert out.item() == 0 and x.grad.tolist() == [[0.] * 3] * 2
    x = t(device, [[1., 2., 3.], [0., 1., 0.]], requires_grad=True)
    out = F.nll_loss(x, t(device, [1, 0]), ignore_index=1)
    out.backward()
    assert out.item() == 0 and x.grad.tolist() == [[0., 0., 0.], [-1., 0., 0.]]
    x4 = pg.linspace(-2, 2, 12, device=device).reshape(1, 3, 2, 2).requires_grad_()
    out = F.cross_entropy(x4, pg.ones(1, 2, 2, dtype=pg.int64, device=device), ignore_index=1)
    out.backward()
    assert math.isnan(out.item()) and x4.grad.abs().sum().item() == 0


def test_ignored_entries_lose_plus_zero(device: str) -> None:
    x = t(device, [[1., 2., 3.], [0., 1., 0.]])
    for fn in (F.nll_loss, F.cross_entropy):
        for kw in ({}, {"weight": t(device, [1., 2., 3.])}):
            out = fn(x, t(device, [1, 0]), ignore_index=1, reduction="none", **kw)
            assert math.copysign(1, out.tolist()[0]) == 1.0  # +0.0, not -0.0
    out = F.nll_loss(x, t(device, [1, 0]), ignore_index=1, reduction="sum")
    assert math.copysign(1, out.item()) == 1.0  # +0.0 + -0.0


def test_cross_entropy_label_smoothing_range_and_empty(device: str) -> None:
    x = t(device, [[1., 2., 3.], [0., 1., 0.]])
    tg = t(device, [2, 0])
    # a negative smoothing smooths nothing (no error); above 1 is refused
    assert close(F.cross_entropy(x, tg, label_smoothing=-0.5).item(), 0.9795253)
    with pytest.raises(RuntimeError, match="^label_smoothing must be between 0.0 and 1.0. Got: "
                       "1.5$"):
        F.cross_entropy(x, tg, label_smoothing=1.5)
    assert math.isnan(F.cross_entropy(pg.zeros(0, 3, device=device),
                                      pg.zeros(0, 3, device=device)).item())


# ------------------------------------------------------------------ kl_div / bce
def test_kl_div_warning_and_target_gradient(device: str) -> None:
    x, q = t(device, [-1., -2., -0.5]), t(device, [0.5, 0.0, 0.5])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        F.kl_div(x, q, size_average=True)  # the legacy arguments: no "mean" warning
    assert [str(r.message)[:21] for r in rec] == ["size_average and redu"]
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss"):
        F.kl_div(x, q)
    q = t(device, [0.5, 0.0, 0.5], requires_grad=True)
    F.kl_div(x, q, reduction="sum").backward()
    assert close(q.grad.tolist(), [1.3068528, NAN, 0.8068528])


def test_binary_cross_entropy_small_probabilities_and_zeros(device: str) -> None:
    p = t(device, [0., 0., 1., 1., 1e-8, 0.3], requires_grad=True)
    out = F.binary_cross_entropy(p, t(device, [0., 1., 0., 1., 0., 0.7]), reduction="none")
    # log1p(-p): the loss of a tiny p against 0 is p, not 0; PyTorch's signed zeros
    assert close(out.tolist(), [0., 100., 100., 0., 1e-8, 0.9497834], 1e-6)
    assert out.tolist()[4] == pytest.approx(1e-8, rel=1e-5)
    assert [math.copysign(1, v) for v in out.tolist()[:4]] == [1., 1., 1., -1.]
    out.sum().backward()
    assert close(p.grad.tolist(), [0., -1e12, 1e12, 0., 1., -1.9047617])


def test_binary_cross_entropy_weight(device: str) -> None:
    p = t(device, [[0.2, 0.7, 0.5], [0.9, 0.1, 0.4]])
    y = t(device, [[0., 1., 1.], [1., 0., 0.]])
    out = F.binary_cross_entropy(p, y, weight=t(device, [1., 2., 3.], pg.float64))
    assert out.dtype is pg.float32 and close(out.item(), 0.8107489)
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match the broadcast "
                       r"shape \[2, 3\]$"):
        F.binary_cross_entropy(p[0], y[0], weight=pg.ones(2, 1, device=device))
    with pytest.raises(RuntimeError, match=r"^Attempting to broadcast a dimension of length 2 at "
                       r"-1! Mismatching argument at index 1 had .*Size\(\[2\]\); but expected "
                       r"shape should be broadcastable to \[2, 3\]$"):
        F.binary_cross_entropy(p, y, weight=pg.ones(2, device=device))
    with pytest.raises(RuntimeError, match="^The function 'binary_cross_entropy' is not "
                       "differentiable with respect to argument 'weight'"):
        F.binary_cross_entropy(p, y, weight=pg.ones(3, device=device, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match"):
        F.binary_cross_entropy_with_logits(p[0], y[0], weight=pg.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"^output with shape \[3\] doesn't match"):
        F.binary_cross_entropy_with_logits(p[0], y[0], pos_weight=pg.ones(2, 3, device=device))
    for arg in ("weight", "pos_weight"):
        with pytest.raises(RuntimeError, match=f"^The function 'binary_cross_entropy_with_logits' "
                           f"is not differentiable with respect to argument '{arg}'"):
            F.binary_cross_entropy_with_logits(
                p, y, **{arg: pg.ones(3, device=device, requires_grad=True)})
    with pg.no_grad():  # no gradient recorded: no error
        F.binary_cross_entropy(p, y, weight=pg.ones(3, device=device, requires_grad=True))


# ------------------------------------------------------------------ margin losses
def test_multilabel_soft_margin_loss_reduces_the_input_dim(device: str) -> None:
    out = F.multilabel_soft_margin_loss(t(device, [0.5, -1.0, 2.0]),
                                        t(device, [[1., 0., 1.], [0., 1., 1.]]), reduction="none")
    assert close(out.tolist(), [0.4827180, 0.5421745, 0.0846187])
    with pytest.raises(IndexError, match="^Dimension specified as -1 but tensor has no "
                       "dimensions$"):
        F.multilabel_soft_margin_loss(t(device, 0.5), t(device, 1.0))
    with pytest.raises(ValueError, match="^foo is not valid$"):
        F.multilabel_soft_margin_loss(pg.zeros(2, 3, device=device), pg.zeros(2, 3, device=device),
                                      reduction="foo")


def test_multi_margin_loss_unbatched_shape_and_weight(device: str) -> None:
    x = t(device, [0.5, -1.0, 2.0])
    out = F.multi_margin_loss(x, t(device, [1]), reduction="none")
    assert tuple(out.shape) == (1,) and close(out.tolist(), [2.1666667])
    assert tuple(F.multi_margin_loss(x, t(device, 1), reduction="none").shape) == ()
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        F.multi_margin_loss(x[None], t(device, [1]), weight=pg.ones(3, dtype=pg.float64,
                                                                    device=device))
    with pytest.raises(RuntimeError, match="'multi_margin_loss' is not differentiable with "
                       "respect to argument 'weight'"):
        F.multi_margin_loss(x[None], t(device, [1]), weight=pg.ones(3, device=device,
                                                                    requires_grad=True))


# ------------------------------------------------------------------ ctc_loss
_LP = [[[-0.5374516, -1.9013467, -1.3227659], [-0.5472324, -0.9205675, -3.7654035]],
       [[-0.5194914, -1.6209371, -1.5727987], [-1.5272832, -1.7938381, -0.4836083]],
       [[-0.8135189, -1.4528816, -1.1306934], [-1.5633215, -0.4029167, -2.1021540]],
       [[-0.3134751, -1.4806386, -3.1795325], [-0.9091961, -0.6983784, -2.3049798]]]


def test_ctc_loss_empty_input_and_blank_labels(device: str) -> None:
    lp = t(device, _LP)
    # a sequence of no input: loss 0 for the empty target (not -log p(blank) at t=0)
    out = F.ctc_loss(lp, t(device, [[1, 0], [2, 2]]), t(device, [0, 4]), t(device, [0, 2]),
                     reduction="none")
    assert close(out.tolist(), [0.0, 4.8078766])
    out = F.ctc_loss(lp, t(device, [[1, 0], [2, 2]]), t(device, [0, 4]), t(device, [1, 2]),
                     reduction="none")
    assert out.tolist()[0] == math.inf
    # a label equal to the blank is still a label: it may follow the label before it directly
    out = F.ctc_loss(lp, t(device, [[1, 0], [0, 2]]), t(device, [4, 4]), t(device, [2, 2]),
                     reduction="none")
    assert close(out.tolist(), [0.9215257, 2.3980439])


def test_ctc_loss_length_checks(device: str) -> None:
    lp, tg = t(device, _LP), t(device, [[1, 0], [2, 2]])
    with pytest.raises(RuntimeError, match="^input_lengths must be integral$"):
        F.ctc_loss(lp, tg, t(device, [4., 4.]), t(device, [2, 2]))
    with pytest.raises(RuntimeError, match="^target_lengths must be integral$"):
        F.ctc_loss(lp, tg, t(device, [4, 4]), t(device, [2., 2.]))
    with pytest.raises(RuntimeError, match=r"^Expected input_lengths to have value at least 0, but "
                       r"got value -4 \(while checking arguments for ctc_loss_allocate_outputs\)$"):
        F.ctc_loss(lp, tg, t(device, [4, -4]), t(device, [2, 2]))
    with pytest.raises(RuntimeError, match="^Expected target_lengths to have value at least 0, "
                       "but got value -1"):
        F.ctc_loss(lp, tg, t(device, [4, 4]), t(device, [2, -1]))


# ------------------------------------------------------------------ modules
def test_loss_modules(device: str) -> None:
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated. Please use `NLLLoss` "
                      "instead"):
        m = pg.nn.NLLLoss2d()
    assert isinstance(m, pg.nn.NLLLoss)
    m = pg.nn.TripletMarginWithDistanceLoss()
    assert [n for n, _ in m.named_modules()] == ["", "distance_function"]
    assert isinstance(m.distance_function, pg.nn.PairwiseDistance)
    a = t(device, [[1., 0.], [0.5, 0.5]])
    assert close(m(a, a, a.flip(0)).item(), 0.2928932, 1e-4)
