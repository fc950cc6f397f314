"""Top-level ``pg.*`` names: constants, the in-place function forms, ``nn.functional``'s top-level
aliases with ATen's signatures, the view-copy functions and helpers (``fill``, ``frombuffer``,
``empty_permuted``, ``typename``)."""
from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad import _toplevel


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().numpy(force=True)


def test_constants() -> None:
    assert pg.pi == math.pi and pg.e == math.e
    assert pg.inf == math.inf and math.isnan(pg.nan)
    assert pg.newaxis is None
    assert pg.zeros(2, 3)[:, pg.newaxis].shape == (2, 1, 3)


# --- in-place function forms
def test_every_inplace_name_is_the_method(device: str) -> None:
    assert len(_toplevel.INPLACE_METHOD_NAMES) >= 60
    for name in _toplevel.INPLACE_METHOD_NAMES:
        fn = getattr(pg, name)
        assert name in pg.__all__, name
        assert fn.__name__ == name
        assert fn.__wrapped__ is getattr(pg.Tensor, name), name  # the very method


@pytest.mark.parametrize("name, args, ref", [
    ("abs_", (), np.abs), ("exp_", (), np.exp), ("sigmoid_", (), lambda a: 1 / (1 + np.exp(-a))),
    ("relu_", (), lambda a: np.maximum(a, 0)), ("tanh_", (), np.tanh), ("neg_", (), np.negative),
    ("clamp_", (-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)), ("floor_", (), np.floor),
    ("zero_", (), np.zeros_like), ("fill_", (2.5,), lambda a: np.full_like(a, 2.5)),
    ("square_", (), np.square), ("round_", (), np.round),
])
def test_inplace_sample(device: str, name: str, args: tuple, ref: Callable) -> None:
    a = np.array([[-1.5, -0.25, 0.0], [0.4, 1.0, 2.75]], np.float32)
    x = pg.tensor(a, device=device)
    version = x._version
    out = getattr(pg, name)(x, *args)
    assert out is x  # in place, returns its input
    assert x._version > version
    np.testing.assert_allclose(_np(x), ref(a), rtol=1e-6, atol=1e-6)


def test_inplace_on_a_leaf_that_requires_grad_raises(device: str) -> None:
    x = pg.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        pg.exp_(x)


def test_inplace_rejects_a_non_tensor() -> None:
    with pytest.raises(TypeError, match=r"abs_\(\): argument 'input' .* must be Tensor, not int"):
        pg.abs_(3)


def test_inplace_nn_forms(device: str) -> None:
    a = np.array([-2.0, -0.5, 0.5, 2.0], np.float32)
    x = pg.tensor(a, device=device)
    assert pg.threshold_(x, 0.6, 9.0) is x
    np.testing.assert_allclose(_np(x), np.where(a > 0.6, a, 9.0))
    x = pg.tensor(a, device=device)
    pg.celu_(x, 2.0)
    np.testing.assert_allclose(_np(x), np.where(a > 0, a, 2.0 * np.expm1(a / 2.0)), rtol=1e-6)
    x = pg.tensor(a, device=device)
    pg.selu_(x)
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    np.testing.assert_allclose(_np(x), scale * np.where(a > 0, a, alpha * np.expm1(a)),
                               rtol=1e-6)
    x = pg.tensor(a, device=device)
    pg.rrelu_(x)  # eval: the mean slope
    np.testing.assert_allclose(_np(x), np.where(a > 0, a, a * (1 / 8 + 1 / 3) / 2), rtol=1e-6)
    x = pg.tensor(a, device=device)
    assert pg.dropout_(x, 0.5, False) is x  # not training: unchanged
    np.testing.assert_array_equal(_np(x), a)
    pg.manual_seed(0)
    x = pg.ones(400, device=device)
    pg.dropout_(x, 0.5, True)
    values = set(np.unique(_np(x)).tolist())
    assert values == {0.0, 2.0}


def test_feature_dropout_drops_whole_channels(device: str) -> None:
    pg.manual_seed(1)
    x = pg.ones(8, 16, 5, device=device)
    y = pg.feature_dropout(x, 0.5, True)
    per_channel = _np(y).reshape(8, 16, 5)
    assert np.all(per_channel == per_channel[..., :1])  # one draw per (N, C)
    assert set(np.unique(per_channel).tolist()) == {0.0, 2.0}
    np.testing.assert_array_equal(_np(pg.feature_dropout(x, 0.5, False)), _np(x))
    with pytest.raises(ValueError, match="dropout probability"):
        pg.feature_dropout(x, 1.5, True)


# --- functional aliases (ATen signatures)
def test_batch_norm_aten_order(device: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3, 2)).astype(np.float32)
    w, b = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, 1.0, -1.0], np.float32)
    rm, rv = pg.zeros(3, device=device), pg.ones(3, device=device)
    out = pg.batch_norm(pg.tensor(a, device=device), pg.tensor(w, device=device),
                        pg.tensor(b, device=device), rm, rv, True, 0.1, 1e-5, False)
    mean, var = a.mean(axis=(0, 2)), a.var(axis=(0, 2))
    ref = (a - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(_np(out), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(rm), 0.1 * mean, rtol=1e-4, atol=1e-6)


def test_layer_norm_group_norm_rms_norm(device: str) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 4, 3)).astype(np.float32)
    x = pg.tensor(a, device=device)
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(pg.layer_norm(x, [3], None, None, 1e-5, True)), ref,
                               rtol=1e-4, atol=1e-5)
    g = a.reshape(2, 2, 6)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(_np(pg.group_norm(x, 2)), ref.reshape(a.shape), rtol=1e-4,
                               atol=1e-5)
    ref = a / np.sqrt((a * a).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    np.testing.assert_allclose(_np(pg.rms_norm(x, [3])), ref, rtol=1e-4, atol=1e-5)


def test_embedding_weight_first(device: str) -> None:
    weight = pg.arange(12.0, device=device).reshape(4, 3)
    idx = pg.tensor([[0, 3], [2, 2]], device=device)
    np.testing.assert_array_equal(_np(pg.embedding(weight, idx)),
                                  np.arange(12.0).reshape(4, 3)[[[0, 3], [2, 2]]])
    bags = pg.embedding_bag(weight, pg.tensor([0, 1, 3], device=device),
                            pg.tensor([0, 2], device=device), False, 0)
    assert len(bags) == 4
    np.testing.assert_array_equal(_np(bags[0]), [[3.0, 5.0, 7.0], [9.0, 10.0, 11.0]])
    with pytest.raises(NotImplementedError, match="workspace"):
        _ = bags[1].shape
    with pytest.raises(ValueError, match="mode"):
        pg.embedding_bag(weight, idx.flatten(), pg.tensor([0], device=device), False, 7)


def test_pooling_aten_defaults(device: str) -> None:
    a = np.arange(12.0, dtype=np.float32).reshape(1, 2, 6)
    x = pg.tensor(a, device=device)
    ref = a.reshape(1, 2, 3, 2).max(-1)
    np.testing.assert_array_equal(_np(pg.max_pool1d(x, 2)), ref)  # stride [] = kernel
    values, indices = pg.max_pool1d_with_indices(x, [2], [])
    np.testing.assert_array_equal(_np(values), ref)
    np.testing.assert_array_equal(_np(indices), [[[1, 3, 5], [1, 3, 5]]])
    np.testing.assert_array_equal(_np(pg.avg_pool1d(x, 3)), a.reshape(1, 2, 2, 3).mean(-1))
    vals, idx = pg.adaptive_max_pool1d(x, 2)
    np.testing.assert_array_equal(_np(vals), a.reshape(1, 2, 2, 3).max(-1))
    np.testing.assert_array_equal(_np(idx), [[[2, 5], [2, 5]]])
    x4 = pg.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4), device=device)
    np.testing.assert_array_equal(_np(pg.max_pool2d(x4, 2)), [[[[5.0, 7.0], [13.0, 15.0]]]])


def test_convolution_dispatches_by_rank(device: str) -> None:
    x = pg.ones(1, 1, 5, device=device)
    w = pg.ones(1, 1, 3, device=device)
    np.testing.assert_array_equal(_np(pg.convolution(x, w, None, [1], [0], [1], False, [0], 1)),
                                  [[[3.0, 3.0, 3.0]]])
    np.testing.assert_array_equal(_np(pg.conv1d(x, w, None, 1, 1)), [[[2.0, 3.0, 3.0, 3.0, 2.0]]])
    out = pg.convolution(x, w, None, [1], [0], [1], True, [0], 1)
    np.testing.assert_array_equal(_np(out), [[[1.0, 2.0, 3.0, 3.0, 3.0, 2.0, 1.0]]])
    with pytest.raises(RuntimeError, match="weight"):
        pg.convolution(x, pg.ones(3, device=device), None, [1], [0], [1], False, [0], 1)


def test_losses_take_int_reduction(device: str) -> None:
    a = np.array([0.5, -1.0, 2.0], np.float32)
    t = np.array([1.0, 0.0, 1.0], np.float32)
    x, y = pg.tensor(a, device=device), pg.tensor(t, device=device)
    per = np.maximum(a, 0) - a * t + np.log1p(np.exp(-np.abs(a)))
    for red, ref in ((0, per), (1, per.mean()), (2, per.sum())):
        np.testing.assert_allclose(_np(pg.binary_cross_entropy_with_logits(x, y, None, None, red)),
                                   ref, rtol=1e-5)
    kl = t * (np.log(np.where(t > 0, t, 1.0)) - a)
    np.testing.assert_allclose(_np(pg.kl_div(x, y)), kl.mean(), rtol=1e-5)
    np.testing.assert_allclose(_np(pg.kl_div(x, y, 2)), kl.sum(), rtol=1e-5)
    sign = pg.tensor([1.0, -1.0, 1.0], device=device)
    hinge = np.where(np.array([1, -1, 1]) > 0, a, np.maximum(0.0, 1.0 - a))
    np.testing.assert_allclose(_np(pg.hinge_embedding_loss(x, sign, 1.0, 0)), hinge, rtol=1e-6)
    np.testing.assert_allclose(_np(pg.margin_ranking_loss(x, y, sign)),
                               np.maximum(0, -np.array([1, -1, 1]) * (a - t)).mean(), rtol=1e-6)
    np.testing.assert_allclose(_np(pg.poisson_nll_loss(x, y, True, False, 1e-8, 2)),
                               (np.exp(a) - t * a).sum(), rtol=1e-5)
    with pytest.raises(TypeError, match="reduction.* must be int"):
        pg.kl_div(x, y, reduction="mean")
    with pytest.raises(ValueError, match="reduction"):
        pg.triplet_margin_loss(x[None], y[None], y[None], reduction=5)


def test_recurrent_cells(device: str) -> None:
    rng = np.random.default_rng(2)
    a, h, c = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    w_ih, w_hh = (rng.standard_normal((12, 3)).astype(np.float32) for _ in range(2))
    b = rng.standard_normal(12).astype(np.float32)
    P = lambda v: pg.tensor(v, device=device)  # noqa: E731
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    gates = a @ w_ih.T + b + h @ w_hh.T + b
    i, f, g, o = np.split(gates, 4, axis=1)
    c1 = sig(f) * c + sig(i) * np.tanh(g)
    h1, c1p = pg.lstm_cell(P(a), (P(h), P(c)), P(w_ih), P(w_hh), P(b), P(b))
    np.testing.assert_allclose(_np(c1p), c1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(h1), sig(o) * np.tanh(c1), rtol=1e-5, atol=1e-6)
    gi, gh = a @ w_ih[:9].T, h @ w_hh[:9].T
    r, z = sig(gi[:, :3] + gh[:, :3]), sig(gi[:, 3:6] + gh[:, 3:6])
    n = np.tanh(gi[:, 6:] + r * gh[:, 6:])
    np.testing.assert_allclose(_np(pg.gru_cell(P(a), P(h), P(w_ih[:9]), P(w_hh[:9]))),
                               (1 - z) * n + z * h, rtol=1e-5, atol=1e-6)
    pre = a @ w_ih[:3].T + h @ w_hh[:3].T
    np.testing.assert_allclose(_np(pg.rnn_tanh_cell(P(a), P(h), P(w_ih[:3]), P(w_hh[:3]))),
                               np.tanh(pre), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(pg.rnn_relu_cell(P(a), P(h), P(w_ih[:3]), P(w_hh[:3]))),
                               np.maximum(pre, 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="two tensors"):
        pg.lstm_cell(P(a), (P(h),), P(w_ih), P(w_hh))


def test_cell_gradients_reach_weights(device: str) -> None:
    x = pg.randn(2, 3, device=device, dtype=pg.float64)
    h = pg.randn(2, 2, device=device, dtype=pg.float64)
    w_ih = pg.randn(6, 3, device=device, dtype=pg.float64, requires_grad=True)
    w_hh = pg.randn(6, 2, device=device, dtype=pg.float64, requires_grad=True)
    assert pg.autograd.gradcheck(lambda a, b: pg.gru_cell(x, h, a, b), (w_ih, w_hh))


def test_constant_pad_and_shuffles(device: str) -> None:
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = pg.constant_pad_nd(pg.tensor(a, device=device), [1, 0, 0, 1], 7.0)
    np.testing.assert_array_equal(_np(out), np.pad(a, ((0, 1), (1, 0)), constant_values=7.0))
    x = pg.arange(4.0, device=device).reshape(1, 4, 1, 1)
    np.testing.assert_array_equal(_np(pg.channel_shuffle(x, 2)).ravel(), [0.0, 2.0, 1.0, 3.0])
    np.testing.assert_array_equal(_np(pg.pixel_shuffle(x, 2)), [[[[0.0, 1.0], [2.0, 3.0]]]])


# --- view copies
@pytest.mark.parametrize("name, args, view", [
    ("view_copy", ([6, 4],), lambda t: t.reshape(6, 4)),
    ("permute_copy", ([2, 0, 1],), lambda t: t.transpose(2, 0, 1)),
    ("transpose_copy", (0, 2), lambda t: t.swapaxes(0, 2)),
    ("t_copy", (), None),
    ("squeeze_copy", (), lambda t: t),
    ("unsqueeze_copy", (1,), lambda t: t[:, None]),
    ("diagonal_copy", (0, 1, 2), lambda t: np.diagonal(t, 0, 1, 2)),
    ("select_copy", (2, 1), lambda t: t[:, :, 1]),
    ("slice_copy", (1, 0, 3, 2), lambda t: t[:, 0:3:2]),
    ("unfold_copy", (1, 2, 1), None),
    ("alias_copy", (), lambda t: t),
    ("detach_copy", (), lambda t: t),
    ("as_strided_copy", ([2, 2], [1, 2], 1), None),
])
def test_view_copies_are_contiguous_copies(device: str, name: str, args: tuple,
                                           view: Callable | None) -> None:
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x = pg.tensor(a, device=device)
    if name == "t_copy":
        x, a = x[0], a[0]
        view = lambda t: t.T  # noqa: E731
    out = getattr(pg, name)(x, *args)
    if view is None:  # compare with the view op itself
        expected = _np(getattr(x, name[:-len("_copy")])(*args))
    else:
        expected = view(a)
    np.testing.assert_array_equal(_np(out), expected)
    assert out.is_contiguous()
    out.fill_(-1.0)  # a copy: the source is untouched
    np.testing.assert_array_equal(_np(x), a)


def test_expand_split_unbind_copies(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    e = pg.expand_copy(x[:1], [4, 3])
    assert e.shape == (4, 3) and e.is_contiguous()
    e[0, 0] = 100.0
    assert _np(e)[1, 0] == 0.0  # really copied, not a broadcast view
    assert [p.shape for p in pg.split_copy(x, 2, 1)] == [(2, 2), (2, 1)]
    assert [p.shape for p in pg.split_with_sizes_copy(x, [1, 2], 1)] == [(2, 1), (2, 2)]
    rows = pg.unbind_copy(x)
    np.testing.assert_array_equal(_np(rows[1]), [3.0, 4.0, 5.0])
    with pytest.raises(RuntimeError, match="step"):
        pg.slice_copy(x, 0, 0, 2, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.slice_copy(x, 5)


def test_view_copy_gradient(device: str) -> None:
    x = pg.arange(6.0, device=device, requires_grad=True)
    (pg.view_copy(x, [2, 3]) * pg.arange(6.0, device=device).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.arange(6.0))


# --- helpers
def test_fill(device: str) -> None:
    x = pg.zeros(2, 3, dtype=pg.int64, device=device)
    out = pg.fill(x, 4)
    assert out.dtype == pg.int64 and out is not x
    np.testing.assert_array_equal(_np(out), np.full((2, 3), 4))
    v = pg.tensor(2.0, requires_grad=True, device=device)
    pg.fill(pg.zeros(2, 2, device=device), v).sum().backward()
    assert v.grad.item() == 4.0
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        pg.fill(x, pg.ones(2, device=device))


def test_frombuffer_shares_memory() -> None:
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    t = pg.frombuffer(buf, dtype=pg.float32, count=3, offset=4)
    np.testing.assert_array_equal(_np(t), [1.0, 2.0, 3.0])
    t[0] = 10.0
    assert np.frombuffer(buf, np.float32)[1] == 10.0
    assert pg.frombuffer(buf, dtype=pg.int16).shape == (12,)
    with pytest.warns(UserWarning, match="not writable"):
        pg.frombuffer(b"\x00" * 8, dtype=pg.float32)
    with pytest.raises(ValueError, match="offset"):
        pg.frombuffer(buf, dtype=pg.float32, offset=24)
    with pytest.raises(ValueError, match="must not be greater"):
        pg.frombuffer(buf, dtype=pg.float32, count=7)
    with pytest.raises(ValueError, match="multiple of element size"):
        pg.frombuffer(bytearray(7), dtype=pg.float32)
    with pytest.raises(ValueError, match="must not be 0"):
        pg.frombuffer(bytearray(0), dtype=pg.float32)


def test_empty_permuted(device: str) -> None:
    t = pg.empty_permuted((2, 3, 4), (2, 0, 1), device=device)
    assert t.shape == (2, 3, 4)
    assert t.stride() == (3, 1, 6)  # dim 2 outermost, then 0, then 1
    assert pg.empty_permuted((2, 3), (0, 1), requires_grad=True, device=device).requires_grad
    with pytest.raises(RuntimeError, match="permutation"):
        pg.empty_permuted((2, 3), (0, 0))


def test_typename_and_is_storage() -> None:
    assert pg.typename(pg.ones(1)) == "portagrad.FloatTensor"
    assert pg.typename(pg.ones(1, dtype=pg.float64)) == "portagrad.DoubleTensor"
    assert pg.typename(3) == "int"
    assert pg.typename(collections.OrderedDict) == "collections.OrderedDict"
    assert pg.typename(pg.nn.Linear) == "portagrad.nn.modules.linear.Linear"
    assert pg.is_storage(pg.ones(1)) is False
    assert pg.is_storage(pg.ones(1).untyped_storage()) is True
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert pg.is_storage(pg.ones(1).storage()) is True


def test_torch_parity_of_aliases() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 6)).astype(np.float32)
    b = rng.random((2, 3, 6)).astype(np.float32)
    cases: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
        ("conv1d", lambda m, x, y: m.conv1d(x, y[:, :, :3].contiguous(), None, 1, 1)),
        ("max_pool1d", lambda m, x, y: m.max_pool1d(x, 3, 2, 1)),
        ("kl_div", lambda m, x, y: m.kl_div(x, y, 2, log_target=False)),
        ("bce", lambda m, x, y: m.binary_cross_entropy_with_logits(x, y, None, y + 1, 1)),
        ("instance_norm", lambda m, x, y: m.instance_norm(x, None, None, None, None, True, 0.1,
                                                          1e-5, False)),
        ("poisson_nll", lambda m, x, y: m.poisson_nll_loss(x, y, False, True, 1e-8, 0)),
        ("rrelu", lambda m, x, y: m.rrelu(x)),
        ("alpha_dropout", lambda m, x, y: m.alpha_dropout(x, 0.3, False)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in cases:
            expected = fn(torch, torch.tensor(a), torch.tensor(b)).numpy()
            got = _np(fn(pg, pg.tensor(a), pg.tensor(b)))
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_poisson_and_binomial(device: str) -> None:
    pg.manual_seed(0)
    rates = pg.full((4000,), 3.0, device=device)
    a = pg.poisson(rates)
    assert a.dtype == pg.float32 and a.device == rates.device
    values = _np(a)
    assert np.all(values == np.round(values)) and values.min() >= 0
    assert abs(values.mean() - 3.0) < 0.2 and abs(values.var() - 3.0) < 0.4
    pg.manual_seed(0)
    np.testing.assert_array_equal(_np(pg.poisson(rates)), values)  # the seeded generator
    b = _np(pg.binomial(pg.full((4000,), 10.0, device=device), pg.tensor(0.3, device=device)))
    assert b.min() >= 0 and b.max() <= 10
    assert abs(b.mean() - 3.0) < 0.2 and abs(b.var() - 2.1) < 0.4
    with pytest.raises(RuntimeError, match="non-negative"):
        pg.poisson(pg.tensor([-1.0], device=device))
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        pg.binomial(pg.tensor([5], device=device), pg.tensor([0.5], device=device))


def test_range_is_inclusive_and_deprecated(device: str) -> None:
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = pg.range(1, 4, device=device)
    assert r.dtype == pg.float32
    np.testing.assert_array_equal(_np(r), [1.0, 2.0, 3.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(_np(pg.range(0, 1, 0.25)), [0.0, 0.25, 0.5, 0.75, 1.0])
        assert pg.range(1, 4, dtype=pg.int64).dtype == pg.int64
        np.testing.assert_array_equal(_np(pg.range(3, 1, -1)), [3.0, 2.0, 1.0])
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            pg.range(1, 4, 0)
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            pg.range(4, 1)


def test_small_toplevel_helpers(device: str) -> None:
    x = pg.arange(5, device=device)
    assert pg.unsafe_chunk is pg.chunk and pg.unsafe_split is pg.split
    assert pg.unsafe_split_with_sizes is pg.split_with_sizes
    assert [p.shape for p in pg.unsafe_split(x, 2)] == [(2,), (2,), (1,)]
    cp = pg.conj_physical(x)  # a real tensor's conjugate: a copy (tests/test_complex.py: complex)
    assert cp._storage is not x._storage and pg.equal(cp, x)
    assert pg.is_distributed(x) is False
    assert pg.set_flush_denormal(True) is False
    assert pg.init_num_threads() is None
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        n = pg.frobenius_norm(pg.ones(2, 3, device=device), [0, 1], True)
    assert n.shape == (1, 1)
    np.testing.assert_allclose(_np(n), [[math.sqrt(6.0)]], rtol=1e-6)
    ops = (pg.ones(1, device=device),)
    assert pg.cond(pg.tensor(True, device=device), lambda t: t + 1, lambda t: t - 1,
                   ops).item() == 2.0
    assert pg.cond(False, lambda t: t + 1, lambda t: t - 1, ops).item() == 0.0
    with pytest.raises(RuntimeError, match="single-element tensor"):
        pg.cond(pg.ones(2, device=device), lambda: 0, lambda: 1)


def test_vmap(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    v = pg.tensor([10.0, 20.0, 30.0], device=device)
    np.testing.assert_array_equal(_np(pg.vmap(lambda a, b: a + b, in_dims=(0, None))(x, v)),
                                  _np(x) + _np(v))
    np.testing.assert_array_equal(_np(pg.vmap(pg.dot, in_dims=(1, None))(x, pg.ones(2, device=device))),
                                  _np(x).sum(0))
    a, s = pg.vmap(lambda r: (r, r.sum()), out_dims=(1, 0))(x)
    np.testing.assert_array_equal(_np(a), _np(x).T)
    np.testing.assert_array_equal(_np(s), [3.0, 12.0])
    w = pg.ones(3, device=device, requires_grad=True)
    pg.vmap(lambda r: (r * w).sum())(x).sum().backward()
    np.testing.assert_array_equal(_np(w.grad), [3.0, 5.0, 7.0])
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        pg.vmap(lambda a, b: a + b)(x, pg.ones(3, 3, device=device))
    with pytest.raises(ValueError, match="at least one Tensor"):
        pg.vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="cannot vmap over non-Tensor"):
        pg.vmap(lambda a: a)(3)
    with pytest.raises(ValueError, match="must only return Tensors"):
        pg.vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="expected in_dim to satisfy"):
        pg.vmap(lambda a: a, in_dims=5)(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        pg.vmap(lambda a: a, randomness="foo")


def test_embedding_renorm_(device: str) -> None:
    w = pg.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], device=device)
    assert pg.embedding_renorm_(w, pg.tensor([0, 1, 0], device=device), 1.0, 2.0) is w
    # row 0 (norm 5) is scaled to norm 1, row 1 is within it, row 2 is not referenced
    np.testing.assert_allclose(_np(w), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-5)
    with pytest.raises(RuntimeError, match="2-D"):
        pg.embedding_renorm_(pg.ones(3, device=device), pg.tensor([0], device=device), 1.0, 2.0)


def test_get_device_module(device: str) -> None:
    kind = pg.device(device).type
    assert pg.get_device_module(device) is getattr(pg, kind)
    assert pg.get_device_module(pg.device(device)) is getattr(pg, kind)
    assert pg.get_device_module("cuda") is pg.cuda
    acc = pg.accelerator.current_accelerator()
    assert pg.get_device_module() is getattr(pg, acc.type if acc is not None else "cpu")
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        pg.get_device_module(3)
