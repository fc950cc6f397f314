"""Layers and ``nn.functional``: forward against numpy references, float64 gradchecks on small
sizes, train/eval behaviour, default initialisations. Every test runs on each test device."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
from portagrad.autograd import gradcheck
import portagrad.nn.functional as F

RNG = np.random.default_rng(0)


def T(a, device, grad=False):
    return pg.tensor(np.asarray(a), device=device, requires_grad=grad)


def H(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ numpy references
def np_conv2d(x, w, b=None, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """pad = (top, bottom, left, right)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    N, C, H_, W_ = x.shape
    O, Cg, kh, kw = w.shape
    oh = (H_ - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (W_ - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((N, O, oh, ow))
    og = O // groups
    for o in range(O):
        g = o // og
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * Cg:(g + 1) * Cg,
                          i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                          j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    if b is not None:
        out += b[None, :, None, None]
    return out


def np_pool(x, k, s, p, op, fill):
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    N, C, H_, W_ = x.shape
    oh, ow = (H_ - k) // s + 1, (W_ - k) // s + 1
    out = np.zeros((N, C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = op(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ------------------------------------------------------------------ linear / conv
def test_linear_forward_backward(device):
    m = nn.Linear(4, 3).to(device)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    out = m(T(x, device))
    ref = x @ H(m.weight).T + H(m.bias)
    np.testing.assert_allclose(H(out), ref, rtol=1e-5, atol=1e-5)
    assert m(T(RNG.standard_normal((2, 6, 4)), device).float()).shape == (2, 6, 3)
    w = T(RNG.standard_normal((3, 4)), device, True)
    b = T(RNG.standard_normal(3), device, True)
    xx = T(RNG.standard_normal((2, 4)), device, True)
    assert gradcheck(F.linear, (xx, w, b))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(5x3 and 4x3\)"):
        m(T(np.zeros((5, 3), np.float32), device))


def test_default_init_bounds():
    pg.manual_seed(0)
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)  # kaiming_uniform_(a=sqrt(5)) gives exactly 1/sqrt(fan_in)
    assert float(lin.weight.abs().max()) <= bound and float(lin.weight.abs().max()) > 0.9 * bound
    assert float(lin.bias.abs().max()) <= bound
    conv = nn.Conv2d(4, 8, 3)
    b = 1 / math.sqrt(4 * 9)
    assert float(conv.weight.abs().max()) <= b and float(conv.bias.abs().max()) <= b
    emb = nn.Embedding(100, 20, padding_idx=3)
    assert float(emb.weight[3].abs().sum()) == 0.0
    assert 0.8 < float(emb.weight.std()) < 1.2
    bn = nn.BatchNorm2d(3)
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3


@pytest.mark.parametrize("cfg", [
    dict(stride=1, padding=1, dilation=1, groups=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2), groups=1),
    dict(stride=1, padding="same", dilation=1, groups=2),
])
def test_conv2d_forward(device, cfg):
    x = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)
    m = nn.Conv2d(4, 6, (3, 2), **cfg).to(device)
    out = m(T(x, device))
    p = cfg["padding"]
    if p == "same":
        pads = (1, 1, 0, 1)  # total (2, 1): extra on the bottom/right, as PyTorch
    else:
        p = p if isinstance(p, tuple) else (p, p)
        pads = (p[0], p[0], p[1], p[1])
    s = cfg["stride"] if isinstance(cfg["stride"], tuple) else (cfg["stride"],) * 2
    d = cfg["dilation"] if isinstance(cfg["dilation"], tuple) else (cfg["dilation"],) * 2
    ref = np_conv2d(x, H(m.weight), H(m.bias), s, pads, d, cfg["groups"])
    np.testing.assert_allclose(H(out), ref, rtol=1e-4, atol=1e-4)


def test_conv_gradcheck(device):
    x = T(RNG.standard_normal((1, 2, 4, 3)), device, True)
    w = T(RNG.standard_normal((4, 1, 2, 2)), device, True)
    b = T(RNG.standard_normal(4), device, True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
                     (x, w, b))
    x1 = T(RNG.standard_normal((1, 2, 5)), device, True)
    w1 = T(RNG.standard_normal((3, 2, 2)), device, True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2), (x1, w1))
    wt = T(RNG.standard_normal((2, 2, 2, 2)), device, True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                     (x, wt))


def test_conv1d_and_transpose_forward(device):
    x = RNG.standard_normal((2, 3, 9)).astype(np.float32)
    m = nn.Conv1d(3, 5, 3, stride=2, padding=1).to(device)
    ref = np_conv2d(x[:, :, None, :], H(m.weight)[:, :, None, :], H(m.bias), (1, 2), (0, 0, 1, 1))
    np.testing.assert_allclose(H(m(T(x, device))), ref[:, :, 0], rtol=1e-4, atol=1e-4)
    # conv_transpose2d is the adjoint of conv2d: <conv(x), y> == <x, convT(y)>
    xt = RNG.standard_normal((1, 3, 5, 5))
    y = RNG.standard_normal((1, 4, 3, 3))
    w = RNG.standard_normal((4, 3, 3, 3))
    cx = F.conv2d(T(xt, device), T(w, device), stride=2, padding=1)
    cty = F.conv_transpose2d(T(y, device), T(w, device), stride=2, padding=1)
    assert cty.shape == (1, 3, 5, 5)
    np.testing.assert_allclose((H(cx) * y).sum(), (xt * H(cty)).sum(), rtol=1e-8)
    mt = nn.ConvTranspose2d(3, 2, 3, stride=2).to(device)
    assert mt(T(xt, device).float()).shape == (1, 2, 11, 11)
    assert mt(T(xt, device).float(), output_size=(12, 12)).shape == (1, 2, 12, 12)


def test_conv_errors(device):
    m = nn.Conv2d(3, 4, 3).to(device)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 2, 5, 5\] to have 3 channels, but "
                                           r"got 2 channels instead"):
        m(pg.zeros(1, 2, 5, 5, device=device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        m(pg.zeros(1, 3, 2, 2, device=device))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_unfold_fold(device):
    x = RNG.standard_normal((2, 3, 5, 4))
    cols = F.unfold(T(x, device), (2, 3), padding=1, stride=2)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = []
    for i in range(0, 7 - 2 + 1, 2):
        for j in range(0, 6 - 3 + 1, 2):
            ref.append(xp[:, :, i:i + 2, j:j + 3].reshape(2, -1))
    np.testing.assert_allclose(H(cols), np.stack(ref, -1))
    # fold is unfold's adjoint
    c = RNG.standard_normal(tuple(cols.shape))
    fx = F.fold(T(c, device), (5, 4), (2, 3), padding=1, stride=2)
    np.testing.assert_allclose((H(cols) * c).sum(), (x * H(fx)).sum(), rtol=1e-8)
    xs = T(RNG.standard_normal((1, 1, 3, 3)), device, True)
    assert gradcheck(lambda t: F.unfold(t, 2, dilation=1, padding=1), (xs,))


# ------------------------------------------------------------------ pooling
def test_max_avg_pool(device):
    x = RNG.standard_normal((2, 3, 7, 7))
    np.testing.assert_allclose(H(nn.MaxPool2d(3, 2, 1)(T(x, device))),
                               np_pool(x, 3, 2, 1, np.max, -np.inf))
    np.testing.assert_allclose(H(nn.AvgPool2d(3, 2, 1)(T(x, device))),
                               np_pool(x, 3, 2, 1, np.sum, 0.0) / 9)
    np.testing.assert_allclose(H(nn.MaxPool2d(2)(T(x, device))), np_pool(x, 2, 2, 0, np.max, 0))
    out, idx = F.max_pool2d(T(x, device), 2, return_indices=True)
    flat = x.reshape(2, 3, -1)
    np.testing.assert_allclose(np.take_along_axis(flat, H(idx).reshape(2, 3, -1), 2),
                               H(out).reshape(2, 3, -1))
    assert nn.MaxPool2d(2, ceil_mode=True)(T(x, device)).shape == (2, 3, 4, 4)
    ap = nn.AdaptiveAvgPool2d((3, 2))(T(x, device))
    np.testing.assert_allclose(H(ap)[:, :, 0, 0], x[:, :, 0:3, 0:4].mean(axis=(2, 3)))
    np.testing.assert_allclose(H(ap)[:, :, 1, 1], x[:, :, 2:5, 3:7].mean(axis=(2, 3)))
    assert nn.AdaptiveAvgPool2d(1)(T(x, device)).shape == (2, 3, 1, 1)


def test_pool_gradcheck(device):
    x = T(RNG.standard_normal((1, 2, 4, 5)), device, True)
    assert gradcheck(lambda t: F.max_pool2d(t, 2, 1, 1), (x,))
    assert gradcheck(lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False), (x,))
    assert gradcheck(lambda t: F.adaptive_avg_pool2d(t, (3, 2)), (x,))


def test_maxpool_gradient_goes_to_first_max(device):
    x = T(np.ones((1, 1, 2, 2)), device, True)
    F.max_pool2d(x, 2).sum().backward()
    assert H(x.grad).reshape(-1).tolist() == [1.0, 0.0, 0.0, 0.0]


# ------------------------------------------------------------------ activations
ACTS = {
    "relu": (nn.ReLU(), lambda x: np.maximum(x, 0)),
    "leaky": (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (nn.ELU(), lambda x: np.where(x > 0, x, np.expm1(x))),
    "gelu": (nn.GELU(), None),
    "gelu_tanh": (nn.GELU(approximate="tanh"), lambda x: 0.5 * x * (1 + np.tanh(
        np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    "silu": (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    "sigmoid": (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (nn.Tanh(), np.tanh),
    "softplus": (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    "mish": (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "hardshrink": (nn.Hardshrink(), lambda x: np.where(np.abs(x) > 0.5, x, 0.0)),
    "softshrink": (nn.Softshrink(), lambda x: np.where(x > 0.5, x - 0.5,
                                                        np.where(x < -0.5, x + 0.5, 0.0))),
    "softmax": (nn.Softmax(dim=1), lambda x: np.exp(np_log_softmax(x, 1))),
    "logsoftmax": (nn.LogSoftmax(dim=1), lambda x: np_log_softmax(x, 1)),
}


@pytest.mark.parametrize("name", list(ACTS))
def test_activations(device, name):
    mod, ref = ACTS[name]
    x = RNG.standard_normal((3, 4)) * 3
    out = H(mod(T(x, device)))
    if name == "gelu":
        from math import erf

        ref = lambda v: v * 0.5 * (1 + np.vectorize(erf)(v / np.sqrt(2)))  # noqa: E731
    np.testing.assert_allclose(out, ref(x), rtol=1e-6, atol=1e-7)
    xt = T(RNG.standard_normal((2, 3)), device, True)
    assert gradcheck(mod, (xt,))


def test_softmax_is_stable(device):
    x = T(np.array([[1000.0, 0.0, -1000.0]]), device)
    np.testing.assert_allclose(H(F.softmax(x, 1)), [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(H(F.log_softmax(x, 1)), [[0.0, -1000.0, -2000.0]])


def test_inplace_relu(device):
    x = T(np.array([-1.0, 2.0]), device)
    y = nn.ReLU(inplace=True)(x)
    assert y is x and H(x).tolist() == [0.0, 2.0]


# ------------------------------------------------------------------ norms, dropout, embedding
def test_batch_norm_in_evaluation_needs_running_stats(device):
    # PyTorch: RuntimeError "running_mean must be defined in evaluation mode" (an AttributeError
    # on None before)
    x = pg.randn(4, 3, device=device)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)


def test_batchnorm_train_eval(device):
    bn = nn.BatchNorm2d(3, momentum=0.5).to(device).double()
    x = RNG.standard_normal((4, 3, 2, 2)) * 2 + 1
    out = H(bn(T(x, device)))
    mu = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(out, (x - mu[None, :, None, None]) /
                               np.sqrt(var[None, :, None, None] + 1e-5), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H(bn.running_mean), 0.5 * mu)
    np.testing.assert_allclose(H(bn.running_var), 0.5 + 0.5 * x.var(axis=(0, 2, 3), ddof=1))
    assert int(bn.num_batches_tracked) == 1
    bn.eval()
    out2 = H(bn(T(x, device)))
    rm, rv = H(bn.running_mean), H(bn.running_var)
    np.testing.assert_allclose(out2, (x - rm[None, :, None, None]) /
                               np.sqrt(rv[None, :, None, None] + 1e-5), rtol=1e-6)
    assert int(bn.num_batches_tracked) == 1
    bn1 = nn.BatchNorm1d(2, momentum=None).to(device)
    bn1(T(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32), device))
    bn1(T(np.array([[5.0, 2.0], [7.0, 6.0]], np.float32), device))
    np.testing.assert_allclose(H(bn1.running_mean), [4.0, 4.0])  # cumulative average
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(T(np.zeros((2, 3)), device))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(2).to(device)(T(np.zeros((1, 2), np.float32), device))
    xg = T(RNG.standard_normal((3, 2)), device, True)
    w = T(RNG.random(2), device, True)
    b = T(RNG.random(2), device, True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), (xg, w, b))


def test_layer_group_norm(device):
    x = RNG.standard_normal((2, 4, 3))
    ln = nn.LayerNorm(3).to(device).double()
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(H(ln(T(x, device))), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-6,
                               atol=1e-8)
    gn = nn.GroupNorm(2, 4).to(device).double()
    xg = x.reshape(2, 2, 6)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(H(gn(T(x, device))), ref.reshape(x.shape), rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                                           r"shape \[\*, 5\], but got input of size\[2, 4, 3\]"):
        F.layer_norm(T(x, device), (5,))
    xt = T(RNG.standard_normal((2, 4)), device, True)
    wt = T(RNG.random(4), device, True)
    bt = T(RNG.random(4), device, True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (xt, wt, bt))
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (xt, wt, bt))


def test_dropout_train_eval(device):
    pg.manual_seed(0)
    d = nn.Dropout(0.5)
    x = pg.ones(2000, device=device)
    y = H(d(x))
    assert set(np.unique(y).tolist()) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    assert H(F.dropout(x, 1.0)).sum() == 0


def test_embedding(device):
    emb = nn.Embedding(5, 3, padding_idx=0).to(device)
    idx = T(np.array([[0, 2], [4, 2]]), device)
    out = emb(idx)
    np.testing.assert_allclose(H(out), H(emb.weight)[np.array([[0, 2], [4, 2]])])
    out.sum().backward()
    g = H(emb.weight.grad)
    assert g[0].sum() == 0 and g[2].tolist() == [2.0, 2.0, 2.0] and g[4].tolist() == [1.0] * 3
    # raised in the call on cpu (PyTorch's message), at the next read on a device that checks
    # late (OpenCL, the gather's message)
    with pytest.raises(IndexError, match="^index out of range in self$|index 5 is out of bounds "
                                         "for dimension 0 with size 5"):
        H(emb(T(np.array([5]), device)))


# ------------------------------------------------------------------ functional misc
def test_pad_modes(device):
    x = RNG.standard_normal((1, 2, 3, 4))
    for mode, npmode in (("constant", "constant"), ("reflect", "reflect"),
                         ("replicate", "edge"), ("circular", "wrap")):
        out = F.pad(T(x, device), (1, 2, 2, 1), mode=mode)
        np.testing.assert_allclose(H(out), np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), npmode))
    np.testing.assert_allclose(H(F.pad(T(x, device), (1, 1), value=7.0))[..., 0], 7.0)
    np.testing.assert_allclose(H(F.pad(T(x, device), (-1, 0))), x[..., 1:])
    xs = T(RNG.standard_normal((1, 3, 3)), device, True)
    assert gradcheck(lambda t: F.pad(t, (2, 1, 1, 2), mode="reflect"), (xs,))


def test_interpolate(device):
    x = RNG.standard_normal((1, 2, 3, 4))
    out = F.interpolate(T(x, device), scale_factor=2, mode="nearest")
    np.testing.assert_allclose(H(out), x.repeat(2, 2).repeat(2, 3))
    ac = F.interpolate(T(x, device), size=(5, 7), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(H(ac)[..., 0, 0], x[..., 0, 0])
    np.testing.assert_allclose(H(ac)[..., -1, -1], x[..., -1, -1])
    np.testing.assert_allclose(H(ac)[..., 1, 0], (x[..., 0, 0] + x[..., 1, 0]) / 2)
    half = F.interpolate(T(x, device), scale_factor=2, mode="bilinear")
    # align_corners=False: output (1, 1) samples the input at (0.25, 0.25)
    ref = (0.75 * 0.75 * x[..., 0, 0] + 0.75 * 0.25 * (x[..., 0, 1] + x[..., 1, 0]) +
           0.0625 * x[..., 1, 1])
    np.testing.assert_allclose(H(half)[..., 1, 1], ref)
    xs = T(RNG.standard_normal((1, 1, 2, 3)), device, True)
    assert gradcheck(lambda t: F.interpolate(t, size=(3, 4), mode="bilinear"), (xs,))


def test_one_hot_normalize(device):
    t = T(np.array([0, 2, 1]), device)
    assert H(F.one_hot(t)).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(t, 5).shape == (3, 5) and F.one_hot(t).dtype is pg.int64
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(t, 2)
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(H(F.normalize(T(x, device), dim=1)),
                               x / np.linalg.norm(x, axis=1, keepdims=True))
    np.testing.assert_allclose(H(F.normalize(T(np.zeros((1, 2)), device))), [[0.0, 0.0]])


def test_scaled_dot_product_attention(device):
    q = RNG.standard_normal((2, 3, 4))
    k = RNG.standard_normal((2, 5, 4))
    v = RNG.standard_normal((2, 5, 2))
    s = q @ k.transpose(0, 2, 1) / 2.0
    ref = np.exp(np_log_softmax(s, -1)) @ v
    np.testing.assert_allclose(H(F.scaled_dot_product_attention(T(q, device), T(k, device),
                                                                 T(v, device))), ref, rtol=1e-6)
    causal = H(F.scaled_dot_product_attention(T(q, device), T(k, device)[:, :3], T(v, device)[:, :3],
                                              is_causal=True))
    np.testing.assert_allclose(causal[:, 0], v[:, 0], rtol=1e-6)
    qt, kt, vt = (T(a[:1, :2, :2], device, True) for a in (q, k, v))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (qt, kt, vt))


# ------------------------------------------------------------------ sequence models
def _np_lstm(x, w_ih, w_hh, b_ih, b_hh, H_):
    h = np.zeros((x.shape[1], H_))
    c = np.zeros((x.shape[1], H_))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    outs = []
    for t in range(x.shape[0]):
        g = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, gg, o = np.split(g, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(gg)
        h = sig(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs), h, c


def test_lstm_against_numpy(device):
    lstm = nn.LSTM(3, 4).to(device).double()
    x = RNG.standard_normal((5, 2, 3))
    out, (h, c) = lstm(T(x, device))
    ref, rh, rc = _np_lstm(x, *(H(p) for p in (lstm.weight_ih_l0, lstm.weight_hh_l0,
                                               lstm.bias_ih_l0, lstm.bias_hh_l0)), 4)
    np.testing.assert_allclose(H(out), ref, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H(h)[0], rh, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H(c)[0], rc, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_rnn_shapes_and_grad(device, cls):
    m = getattr(nn, cls)(3, 2, num_layers=2, batch_first=True, bidirectional=True).to(device)
    out, hn = m(pg.randn(4, 5, 3, device=device))
    assert out.shape == (4, 5, 4)
    h = hn[0] if cls == "LSTM" else hn
    assert h.shape == (4, 4, 2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_ih_l1_reverse" in names
    small = getattr(nn, cls)(2, 2).to(device).double()
    x = T(RNG.standard_normal((3, 1, 2)), device, True)
    assert gradcheck(lambda t: small(t)[0], (x,))
    unb, _ = small(T(RNG.standard_normal((3, 2)), device))
    assert unb.shape == (3, 2)


def test_multihead_attention_and_encoder(device):
    pg.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).to(device)
    x = pg.randn(2, 5, 8, device=device)
    out, w = mha(x, x, x)
    assert out.shape == (2, 5, 8) and w.shape == (2, 5, 5)
    np.testing.assert_allclose(H(w).sum(-1), np.ones((2, 5)), rtol=1e-5)
    kpm = pg.tensor([[False] * 5, [False, False, False, True, True]], device=device)
    _, w2 = mha(x, x, x, key_padding_mask=kpm)
    assert np.allclose(H(w2)[1, :, 3:], 0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).to(device)
    enc = nn.TransformerEncoder(layer, 2).to(device)
    y = enc(x)
    assert y.shape == (2, 5, 8)
    np.testing.assert_allclose(H(y).mean(-1), 0, atol=1e-5)  # post-norm output
    y.sum().backward()
    assert enc.layers[0].self_attn.in_proj_weight.grad is not None


def test_flatten_unflatten_identity_bilinear(device):
    x = pg.randn(2, 3, 4, device=device)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Unflatten(1, (3, 1))(nn.Flatten()(x)[:, :3]).shape == (2, 3, 1)
    assert nn.Identity(5, foo=1)(x) is x
    bl = nn.Bilinear(3, 4, 2).to(device).double()
    a = RNG.standard_normal((5, 3))
    b = RNG.standard_normal((5, 4))
    ref = np.einsum("ni,kij,nj->nk", a, H(bl.weight), b) + H(bl.bias)
    np.testing.assert_allclose(H(bl(T(a, device), T(b, device))), ref, rtol=1e-6)


# ------------------------------------------------------------------ init and utils
def test_init_functions():
    w = pg.empty(30, 20)
    nn.init.xavier_uniform_(w)
    assert float(w.abs().max()) <= math.sqrt(6 / 50)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert 0.7 < float(w.std()) / math.sqrt(2 / 30) < 1.3
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(H(w).T @ H(w), np.eye(20), atol=1e-5)
    nn.init.constant_(w, 0.5)
    assert float(w.min()) == 0.5
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init._calculate_fan_in_and_fan_out(pg.empty(4, 3, 2, 2)) == (12, 16)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        nn.init.xavier_uniform_(pg.empty(3))


def test_clip_grad_and_vectors(device):
    m = nn.Linear(3, 2).to(device)
    for p in m.parameters():
        p.grad = pg.full(tuple(p.shape), 2.0, device=device)
    total = nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    assert abs(float(total) - math.sqrt(8 * 4)) < 1e-5
    norm_after = math.sqrt(sum(float((p.grad ** 2).sum()) for p in m.parameters()))
    assert abs(norm_after - 1.0) < 1e-4
    nn.utils.clip_grad_value_(m.parameters(), 0.1)
    assert float(m.weight.grad.abs().max()) <= 0.1 + 1e-7
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    src = pg.arange(8.0, device=device)
    nn.utils.vector_to_parameters(src, m.parameters())
    assert H(m.bias).tolist() == [6.0, 7.0]
    # the parameters' data now views the vector, as PyTorch's param.data = slice
    src.add_(10)
    assert H(m.bias).tolist() == [16.0, 17.0]
    assert isinstance(m.bias, nn.Parameter) and m.bias.requires_grad


def test_pad_sequence(device):
    a, b = pg.ones(3, 2, device=device), pg.full((1, 2), 2.0, device=device)
    out = nn.utils.rnn.pad_sequence([a, b])
    assert out.shape == (3, 2, 2) and H(out)[1:, 1].sum() == 0
    bf = nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0,
                                   padding_side="left")
    assert bf.shape == (2, 3, 2)
    assert H(bf)[1, :, 0].tolist() == [-1.0, -1.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda: pg.nn.Conv1d(3, 4, 3), lambda: pg.nn.Conv2d(3, 4, 3, stride=2),
    lambda: pg.nn.AdaptiveAvgPool2d((2, 3)), lambda: pg.nn.AdaptiveMaxPool2d((2, 3)),
    lambda: pg.nn.AvgPool2d(2), lambda: pg.nn.MaxPool2d(2), lambda: pg.nn.AdaptiveAvgPool1d(2),
    lambda: pg.nn.Upsample(scale_factor=2, mode="bilinear"),
], ids=["conv1d", "conv2d", "adaptive_avg", "adaptive_max", "avg_pool", "max_pool",
        "adaptive_avg1d", "upsample"])
def test_conv_and_pool_outputs_are_contiguous_as_in_pytorch(device, make):
    # scripts call .view() on what these return (the Siamese example flattens after
    # AdaptiveAvgPool2d); PyTorch's outputs are contiguous for a contiguous input
    m = make().to(device)
    x = pg.randn(2, 3, 6, 6, device=device)
    if "1d" in type(m).__name__:
        x = x[:, :, 0].contiguous()
    y = m(x)
    assert y.is_contiguous()
    assert y.view(-1).shape == (y.numel(),)


def test_init_sparse_zeros_each_column_repeatably(device):
    """``sparse_`` zeroes ``ceil(sparsity * rows)`` entries of each column, chosen with the global
    generator as PyTorch, so ``manual_seed`` repeats it (the rows came from an unseeded rng)."""
    w = pg.empty(6, 4, device=device)
    pg.manual_seed(0)
    nn.init.sparse_(w, 0.5)
    first = (w == 0).tolist()
    pg.manual_seed(0)
    nn.init.sparse_(w, 0.5)
    assert (w == 0).tolist() == first
    assert (w == 0).sum(0).tolist() == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.sparse_(pg.empty(3, device=device), 0.5)
