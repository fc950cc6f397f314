"""``nn`` layers and ``nn.functional`` against values and behaviours of PyTorch (literals computed
with PyTorch and written here, so torch stays optional): BCE at the ends of its domain, the ranks
the feature dropouts accept, the encoder-decoder ``Transformer``, the 3-D layers and the losses and
activations built from existing ops. Every test runs on each test device."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg
from portagrad import nn
import portagrad.nn.functional as F


def T(a, device, grad=False, dtype=None):
    return pg.tensor(np.asarray(a), device=device, requires_grad=grad, dtype=dtype)


def H(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ binary cross entropy
def test_bce_finite_gradient_at_zero_and_one(device):
    x = T([0.0, 1.0, 0.0, 1.0, 0.3], device, True, pg.float64)
    t = T([0.0, 1.0, 1.0, 0.0, 0.6], device, True, pg.float64)
    loss = F.binary_cross_entropy(x, t, reduction="none")
    np.testing.assert_allclose(H(loss), [0.0, 0.0, 100.0, 100.0, 0.8650536601710546], rtol=1e-12)
    loss.sum().backward()
    # PyTorch: (x - t) / max((1 - x) x, eps), eps a float32 1e-12; d/dt = log(1 - x) - log(x)
    np.testing.assert_allclose(H(x.grad), [0.0, 0.0, -1000000003995.8029, 1000000003995.8029,
                                           -1.4285714285714286], rtol=1e-12)
    np.testing.assert_array_equal(H(t.grad)[:4], [np.inf, -np.inf, np.inf, -np.inf])
    np.testing.assert_allclose(H(t.grad)[4], 0.8472978603872036, rtol=1e-12)


def test_bce_loss_module_mean_float32(device):
    x = T([0.0, 1.0, 0.5], device, True)
    loss = nn.BCELoss()(x, T([1.0, 0.0, 0.5], device))
    loss.backward()
    np.testing.assert_allclose(loss.item(), 66.89771270751953, rtol=1e-6)
    np.testing.assert_allclose(H(x.grad), [-333333331968.0, 333333331968.0, 0.0], rtol=1e-6)
    assert np.isfinite(H(x.grad)).all()


def test_bce_gradcheck(device):
    rng = np.random.default_rng(1)
    x = T(rng.uniform(0.1, 0.9, (3, 4)), device, True)
    t = T(rng.uniform(0, 1, (3, 4)), device, True)
    w = T(rng.uniform(0.5, 2, (4,)), device)
    assert pg.autograd.gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w), (x, t))
    assert pg.autograd.gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b), (x, t))


# ------------------------------------------------------------------ feature dropout ranks
def _run(fn, shape, device):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(pg.ones(shape, device=device), 0.5, True)
    return out, [str(w.message) for w in rec]


@pytest.mark.parametrize("fn", [F.dropout2d, F.dropout3d, F.feature_alpha_dropout, F.dropout1d,
                                F.alpha_dropout])
def test_feature_dropout_keeps_shape(fn, device):
    shapes = {F.dropout1d: [(4, 5), (4, 5, 6)]}.get(fn, [(4, 5), (4, 5, 6), (2, 4, 5, 6),
                                                         (2, 3, 4, 5, 6)])
    for shape in shapes:
        out, _ = _run(fn, shape, device)
        assert tuple(out.shape) == shape


def test_dropout2d_warnings_as_pytorch(device):
    _, msgs = _run(F.dropout2d, (4, 5), device)
    assert msgs == ["dropout2d: Received a 2-D input to dropout2d, which is deprecated and will "
                    "result in an error in a future release. To retain the behavior and silence "
                    "this warning, please use dropout instead. Note that dropout2d exists to "
                    "provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
                    "dimension, and an optional batch dimension (i.e. 3D or 4D inputs)."]
    _, msgs = _run(F.dropout2d, (4, 5, 6), device)
    assert len(msgs) == 1 and msgs[0].startswith("dropout2d: Received a 3D input to dropout2d and "
                                                 "assuming that channel-wise 1D dropout")
    _, msgs = _run(F.dropout2d, (2, 4, 5, 6), device)
    assert msgs == []
    _, msgs = _run(F.dropout3d, (4, 5, 6), device)
    assert len(msgs) == 1 and msgs[0].startswith("dropout3d: Received a 3-D input to dropout3d")
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = nn.Dropout2d()(pg.ones(4, 5, device=device))
    assert y.shape == (4, 5)


def test_feature_dropout_rank_errors(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D"):
        F.dropout1d(pg.ones(2, 3, 4, 5, device=device))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(pg.ones(4, device=device), 0.5, True)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.dropout2d(pg.ones(4, device=device))
    # as PyTorch: nothing is checked when nothing is dropped
    x = pg.ones(4, device=device)
    with pytest.warns(UserWarning):
        assert F.dropout2d(x, 0.5, False) is x


def test_feature_dropout_drops_whole_channels(device):
    pg.manual_seed(0)
    y = H(F.dropout2d(pg.ones(8, 16, 3, 3, device=device), 0.5))
    per_channel = y.reshape(8, 16, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    with pytest.warns(UserWarning, match="2-D input"):  # 2-D: single elements
        y = H(F.dropout2d(pg.ones(64, 32, device=device), 0.5))
    assert set(np.unique(y)) == {0.0, 2.0}
    y = H(nn.FeatureAlphaDropout(0.5).train()(pg.zeros(8, 16, 3, device=device)))
    assert (np.ptp(y, axis=-1) == 0).all() and len(np.unique(y)) == 2
    assert nn.FeatureAlphaDropout(0.5).eval()(pg.ones(2, 3, device=device)).sum().item() == 6


def test_alpha_dropout_everything_dropped(device):
    np.testing.assert_array_equal(H(F.alpha_dropout(pg.ones(3, device=device), 1.0, True)), 0)
    np.testing.assert_array_equal(
        H(F.feature_alpha_dropout(pg.ones(2, 4, device=device), 1.0, True)), 0)


# ------------------------------------------------------------------ transformer
def _small_transformer(device, **kw):
    m = nn.Transformer(4, 2, 1, 1, 6, dropout=0.0, batch_first=True, **kw).double().to(device)
    rng = np.random.default_rng(0)
    with pg.no_grad():
        for _, p in sorted(m.named_parameters()):
            p.copy_(T(rng.uniform(-0.5, 0.5, tuple(p.shape)), device))
    return m


def test_transformer_against_torch_literals(device):
    m = _small_transformer(device)
    rng = np.random.default_rng(1)
    src, tgt = T(rng.standard_normal((2, 3, 4)), device), T(rng.standard_normal((2, 2, 4)), device)
    kpm = T([[False, False, False], [False, False, True]], device)
    mask = nn.Transformer.generate_square_subsequent_mask(2, device=device, dtype=pg.float64)
    out = m(src, tgt, tgt_mask=mask, src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    ref = [[[0.101640040654, 0.144750874367, -0.291963001425, -0.065770072071],
            [0.107836402678, 0.099740991543, -0.319527770667, -0.063944801506]],
           [[0.112274977193, 0.080343704825, -0.332022963002, -0.067451354387],
            [0.100893370937, 0.150433280505, -0.288238384737, -0.065888909486]]]
    np.testing.assert_allclose(H(out), ref, rtol=1e-9, atol=1e-11)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_transformer_structure_and_masks(device):
    m = nn.Transformer(8, 2, 2, 3, 16, dropout=0.0)
    names = [n for n, _ in m.named_parameters()]
    assert len(names) == 12 * 2 + 2 + 18 * 3 + 2  # as torch.nn.Transformer(8, 2, 2, 3, 16)
    assert "decoder.layers.2.multihead_attn.out_proj.weight" in names
    assert type(m.encoder.layers[0].self_attn.out_proj).__name__ == \
        "NonDynamicallyQuantizableLinear"
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(H(mask), [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    assert mask.dtype == pg.float32
    # causality: the first target position does not see the later ones
    m = _small_transformer(device, norm_first=True, activation="gelu")
    rng = np.random.default_rng(2)
    src, tgt = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 3, 4))
    tgt2 = tgt.copy()
    tgt2[0, 2] += [1.0, -2.0, 0.5, 3.0]  # not a constant shift (LayerNorm removes those)
    mask = nn.Transformer.generate_square_subsequent_mask(3, device, pg.float64)
    a = H(m(T(src, device), T(tgt, device), tgt_mask=mask))
    b = H(m(T(src, device), T(tgt2, device), tgt_mask=mask))
    np.testing.assert_allclose(a[0, :2], b[0, :2], rtol=1e-12)
    assert not np.allclose(a[0, 2], b[0, 2])
    unb = H(m(T(src[0], device), T(tgt[0], device), tgt_mask=mask))  # unbatched
    np.testing.assert_allclose(unb, a[0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(T(np.zeros((2, 3, 4)), device), T(np.zeros((1, 3, 4)), device))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to"):
        m(T(np.zeros((1, 3, 5)), device), T(np.zeros((1, 3, 4)), device))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(4, 2, activation="tanh")


def test_transformer_decoder_layer_callable_activation(device):
    layer = nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0, activation=F.tanh).to(device)
    assert layer.activation is F.tanh
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(4)).to(device)
    out = dec(pg.randn(3, 2, 4, device=device), pg.randn(5, 2, 4, device=device),
              memory_key_padding_mask=pg.zeros(2, 5, dtype=pg.bool, device=device))
    assert out.shape == (3, 2, 4)
    assert dec.layers[0] is not dec.layers[1] and dec.layers[0] is not layer


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's own
def test_transformer_against_torch(device):
    torch = pytest.importorskip("torch")
    for bf, nf in ((False, False), (True, True)):
        torch.manual_seed(0)
        kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                  dim_feedforward=16, dropout=0.0, batch_first=bf, norm_first=nf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: nested tensors need batch_first
            tm = torch.nn.Transformer(**kw).double()
        pm = nn.Transformer(**kw).double().to(device)
        with pg.no_grad():
            sd = tm.state_dict()
            for k, p in pm.named_parameters():
                p.copy_(T(sd[k].numpy(), device))
        rng = np.random.default_rng(3)
        src = rng.standard_normal((2, 5, 8) if bf else (5, 2, 8))
        tgt = rng.standard_normal((2, 4, 8) if bf else (4, 2, 8))
        kpm = np.array([[False] * 5, [False] * 3 + [True] * 2])
        mm = np.zeros((4, 5))
        mm[0, 4] = -np.inf
        tmask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
        ref = tm(torch.tensor(src), torch.tensor(tgt), tgt_mask=tmask, memory_mask=torch.tensor(mm),
                 src_key_padding_mask=torch.tensor(kpm), memory_key_padding_mask=torch.tensor(kpm))
        out = pm(T(src, device), T(tgt, device), tgt_mask=T(tmask.numpy(), device),
                 memory_mask=T(mm, device), src_key_padding_mask=T(kpm, device),
                 memory_key_padding_mask=T(kpm, device))
        np.testing.assert_allclose(H(out), ref.detach().numpy(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ small names scripts use
def test_rnn_flatten_parameters_is_a_no_op(device):
    for cls in (nn.RNN, nn.LSTM, nn.GRU):
        m = cls(3, 4).to(device)
        before = [H(p).copy() for p in m.parameters()]
        assert m.flatten_parameters() is None
        assert all((a == H(p)).all() for a, p in zip(before, m.parameters()))


def test_pixel_shuffle_module_path_and_errors(device):
    from portagrad.nn.modules.linear import NonDynamicallyQuantizableLinear
    from portagrad.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle

    assert issubclass(NonDynamicallyQuantizableLinear, nn.Linear)
    assert nn.PixelShuffle is PixelShuffle and nn.PixelUnshuffle is PixelUnshuffle
    x = pg.arange(2 * 8 * 2 * 3, device=device).reshape(2, 8, 2, 3)
    y = PixelShuffle(2)(x)
    ref = np.arange(96).reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(H(y), ref)
    np.testing.assert_array_equal(H(PixelUnshuffle(2)(y)), H(x))
    cases = [(lambda: F.pixel_shuffle(pg.ones(4, 4, device=device), 2),
              "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2"),
             (lambda: F.pixel_shuffle(pg.ones(1, 5, 4, 4, device=device), 2),
              r"input.size\(-3\)=5 is not divisible by 4"),
             (lambda: F.pixel_shuffle(pg.ones(1, 4, 4, 4, device=device), 0),
              "pixel_shuffle expects a positive upscale_factor, but got 0"),
             (lambda: F.pixel_unshuffle(pg.ones(1, 4, 5, 4, device=device), 2),
              r"pixel_unshuffle expects height to be divisible by downscale_factor, but "
              r"input.size\(-2\)=5 is not divisible by 2"),
             (lambda: F.pixel_unshuffle(pg.ones(1, 4, 4, 5, device=device), 2),
              r"expects width to be divisible by downscale_factor, but input.size\(-1\)=5")]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(TypeError, match="must be int, not float"):
        F.pixel_shuffle(x, 2.0)


# ------------------------------------------------------------------ 3-D layers
def test_3d_modules_shapes_and_gradients(device):
    pg.manual_seed(0)
    x = pg.randn(2, 4, 5, 6, 7, device=device, requires_grad=True)
    conv = nn.Conv3d(4, 6, (2, 3, 2), stride=(1, 2, 1), padding=1, groups=2).to(device)
    assert conv.weight.shape == (6, 2, 2, 3, 2)
    y = conv(x)
    assert y.shape == (2, 6, 6, 3, 8)
    np.testing.assert_allclose(H(y), H(F.conv3d(x, conv.weight, conv.bias, (1, 2, 1), 1, 1, 2)),
                               rtol=1e-6)
    convt = nn.ConvTranspose3d(6, 4, 2, stride=2).to(device)
    assert convt.weight.shape == (6, 4, 2, 2, 2)
    assert convt(y).shape == (2, 4, 12, 6, 16)
    assert convt(y, output_size=(13, 7, 17)).shape == (2, 4, 13, 7, 17)
    assert nn.Conv3d(4, 2, 3, padding="same", padding_mode="circular").to(device)(x).shape == \
        (2, 2, 5, 6, 7)
    out, idx = nn.MaxPool3d(2, return_indices=True)(x)
    assert out.shape == idx.shape == (2, 4, 2, 3, 3) and idx.dtype == pg.int64
    assert nn.AvgPool3d(2, stride=1)(x).shape == (2, 4, 4, 5, 6)
    assert nn.AdaptiveAvgPool3d((1, None, 2))(x).shape == (2, 4, 1, 6, 2)
    assert nn.AdaptiveMaxPool3d(2)(x[0]).shape == (4, 2, 2, 2)
    assert nn.LPPool3d(2, 2)(x.abs()).shape == (2, 4, 2, 3, 3)
    assert nn.LPPool1d(2, 3, 2)(x[0, 0].abs()).shape == (5, 6, 3)
    (convt(y).sum() + out.sum()).backward()
    assert x.grad is not None and x.grad.shape == x.shape
    n = nn.InstanceNorm3d(4, affine=True).to(device)
    z = H(n(x))
    np.testing.assert_allclose(z.mean((2, 3, 4)), 0, atol=1e-5)
    assert n(x[0]).shape == (4, 5, 6, 7)
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        n(x[0, 0])


def test_3d_padding_and_trilinear_against_torch_literals(device):
    x = pg.arange(8.0, device=device).reshape(1, 1, 2, 2, 2)
    np.testing.assert_allclose(
        H(F.interpolate(x, size=(3, 2, 3), mode="trilinear")).ravel(),
        [0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 2.0, 2.5, 3.0, 4.0, 4.5, 5.0, 4.0, 4.5, 5.0, 6.0, 6.5, 7.0])
    np.testing.assert_allclose(
        H(F.interpolate(x, scale_factor=1.5, mode="trilinear", align_corners=True)).ravel()[:10],
        [0.0, 0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 2.0])
    np.testing.assert_allclose(
        H(nn.Upsample(size=3)(x)).ravel(),
        [0, 0, 1, 0, 0, 1, 2, 2, 3, 0, 0, 1, 0, 0, 1, 2, 2, 3, 4, 4, 5, 4, 4, 5, 6, 6, 7])
    np.testing.assert_allclose(
        H(nn.ReflectionPad3d((1, 0, 0, 1, 1, 0))(x)).ravel(),
        [5, 4, 5, 7, 6, 7, 5, 4, 5, 1, 0, 1, 3, 2, 3, 1, 0, 1, 5, 4, 5, 7, 6, 7, 5, 4, 5])
    np.testing.assert_allclose(
        H(nn.ReplicationPad3d((1, 1, 0, 0, 2, 0))(x)).ravel(),
        [0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
         7, 7])
    assert nn.CircularPad3d(1)(x).shape == (1, 1, 4, 4, 4)
    assert H(nn.ConstantPad3d(1, 3.5)(x))[0, 0, 0, 0, 0] == 3.5
    assert nn.ZeroPad3d((1, 1, 1, 1, 0, 0))(x).shape == (1, 1, 2, 4, 4)
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D"):
        F.interpolate(x[0], size=3, mode="trilinear")


# ------------------------------------------------------------------ activations and losses
def test_rrelu_softmax2d_gumbel(device):
    pg.manual_seed(0)
    x = pg.randn(64, 8, device=device)
    m = nn.RReLU(0.1, 0.3)
    ratio = H(m(x)) / H(x)
    neg = H(x) < 0
    assert (ratio[~neg] == 1).all() and 0.1 <= ratio[neg].min() and ratio[neg].max() <= 0.3
    assert len(np.unique(ratio[neg].round(6))) > 10  # one slope per element
    np.testing.assert_allclose(H(m.eval()(x))[neg], H(x)[neg] * 0.2, rtol=1e-6)
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    y = H(nn.Softmax2d()(pg.randn(2, 3, 4, 5, device=device)))
    np.testing.assert_allclose(y.sum(1), 1, rtol=1e-6)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(pg.ones(2, 3, device=device))
    logits = pg.randn(5, 4, device=device, requires_grad=True)
    soft = H(F.gumbel_softmax(logits, tau=0.5))
    np.testing.assert_allclose(soft.sum(-1), 1, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True, dim=0)
    assert set(np.unique(H(hard))) == {0.0, 1.0} and (H(hard).sum(0) == 1).all()
    hard[0].sum().backward()  # straight-through: the soft sample's gradient
    assert np.abs(H(logits.grad)).sum() > 0
    np.testing.assert_allclose(H(logits.grad).sum(0), 0, atol=1e-6)


def test_margin_loss_modules_against_torch_literals(device):
    x = T([[0.1, -0.4, 0.9, 0.3], [1.2, 0.5, -0.7, 0.0]], device, True, pg.float64)
    t = T([2, 0], device)
    w = T([1.0, 2.0, 0.5, 1.5], device, dtype=pg.float64)
    loss = nn.MultiMarginLoss(p=2, margin=0.8, weight=w)(x, t)
    np.testing.assert_allclose(loss.item(), 0.00375, rtol=1e-10)
    loss.backward()
    np.testing.assert_allclose(H(x.grad), [[0.0, 0.0, -0.025, 0.025], [-0.025, 0.025, 0.0, 0.0]],
                               rtol=1e-10, atol=1e-15)
    lt = T([[2, 3, -1, 0], [1, -1, 2, 3]], device)
    np.testing.assert_allclose(nn.MultiLabelMarginLoss()(x, lt).item(), 0.4375, rtol=1e-10)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    a, p_, n = (T(v, device, dtype=pg.float64) for v in ([[0.0, 1.0]], [[1.0, 1.0]], [[0.0, 3.0]]))
    cos = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5)
    np.testing.assert_allclose(cos(a, p_, n).item(), 0.7928932188134524, rtol=1e-10)
    np.testing.assert_allclose(nn.TripletMarginWithDistanceLoss(swap=True)(a, p_, n).item(),
                               0.0, atol=1e-9)
    assert isinstance(nn.NLLLoss2d(), nn.NLLLoss)


def test_sync_batchnorm_is_batchnorm_without_process_group(device):
    pg.manual_seed(0)
    x = pg.randn(5, 3, 4, device=device)
    sb, bn = nn.SyncBatchNorm(3).to(device), nn.BatchNorm1d(3).to(device)
    np.testing.assert_allclose(H(sb(x)), H(bn(x)), rtol=1e-6)
    np.testing.assert_allclose(H(sb.running_var), H(bn.running_var), rtol=1e-6)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        sb(pg.ones(3, device=device))
    with pytest.raises(TypeError, match="process_group must be a ProcessGroup"):
        nn.SyncBatchNorm(3, process_group=object())(x)
    sb.eval()  # eval mode: the running statistics, whatever the group
    np.testing.assert_allclose(H(sb(x)), H(bn.eval()(x)), rtol=1e-6)
    m = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(4)))
    c = nn.SyncBatchNorm.convert_sync_batchnorm(m)
    assert type(c[1]) is nn.SyncBatchNorm and type(c[2][0]) is nn.SyncBatchNorm
    assert c[1].weight is m[1].weight and c[1].running_mean is m[1].running_mean


# ------------------------------------------------------------------ bags, unpooling, containers
def test_embedding_bag_module(device):
    w = pg.arange(30.0).reshape(10, 3)
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum").to(device)
    assert not bag.weight.requires_grad
    out = bag(T([1, 2, 3, 5, 6], device), T([0, 2, 3], device))
    np.testing.assert_allclose(H(out), [[9, 11, 13], [9, 10, 11], [33, 35, 37]])
    out = bag(T([1, 2, 3, 5], device), T([0, 2, 4], device))  # include_last_offset=False: 3 bags
    np.testing.assert_allclose(H(out)[2], 0)
    m = nn.EmbeddingBag(10, 3, mode="max", padding_idx=0).to(device)
    assert (H(m.weight)[0] == 0).all() and repr(m) == "EmbeddingBag(10, 3, mode='max', " \
        "padding_idx=0)"
    x = T([[0, 4, 4], [0, 0, 0]], device)
    out = m(x)
    np.testing.assert_allclose(H(out), [H(m.weight)[4], np.zeros(3)])
    out.sum().backward()
    g = H(m.weight.grad)
    assert (g[4] == 1).all() and (np.delete(g, 4, 0) == 0).all()


def test_max_unpool_modules_invert_pooling(device):
    pg.manual_seed(0)
    x = pg.randn(2, 3, 4, 6, device=device)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    up = nn.MaxUnpool2d(2)(out, idx)
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    kept = H(up) != 0
    assert kept.reshape(2, 3, -1).sum(-1).tolist() == [[6] * 3] * 2
    np.testing.assert_array_equal(H(up)[kept], H(x)[kept])
    assert nn.MaxUnpool2d(2)(out, idx, output_size=(2, 3, 5, 7)).shape == (2, 3, 5, 7)
    x3 = pg.rand(1, 2, 4, 4, 4, device=device) + 0.1  # positive: re-pooling finds the maxima
    o3, i3 = F.max_pool3d(x3, 2, return_indices=True)
    np.testing.assert_allclose(H(F.max_pool3d(nn.MaxUnpool3d(2)(o3, i3), 2)), H(o3))
    x1 = pg.rand(2, 3, 7, device=device) + 0.1
    o1, i1 = F.max_pool1d(x1, 3, 2, 1, return_indices=True)  # overlapping windows
    np.testing.assert_allclose(H(F.max_pool1d(nn.MaxUnpool1d(3, 2, 1)(o1, i1), 3, 2, 1)), H(o1))


def test_container_is_deprecated_module(device):
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        c = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["a", "b"]
    x = pg.randn(4, 12, 5, 5, device=device)
    np.testing.assert_array_equal(H(F.native_channel_shuffle(x, 3)), H(F.channel_shuffle(x, 3)))


def test_ctc_loss_module_against_torch_literals(device):
    x = T(np.linspace(-1, 1, 24).reshape(4, 2, 3) ** 3 * 3, device, True)
    loss = nn.CTCLoss(blank=0)(F.log_softmax(x, 2), T([[1, 2], [2, 2]], device),
                               T([4, 4], device), T([2, 2], device))
    np.testing.assert_allclose(loss.item(), 1.0339841482444692, rtol=1e-10)
    loss.backward()  # through log_softmax: the logits' gradient equals PyTorch's
    ref = [[[-0.015954734184, -0.121164932664, 0.137119666848],
            [0.025058265922, 0.082742201919, -0.107800467841]],
           [[0.008397191282, -0.045485528158, 0.037088336875],
            [-0.074935069657, 0.083820687482, -0.008885617825]],
           [[0.010992139303, 0.035794987728, -0.046787127031],
            [-0.079004916344, 0.081453655918, -0.002448739574]],
           [[-8.5575273e-05, 0.077904210211, -0.077818634937],
            [0.017786578874, 0.069436914462, -0.087223493336]]]
    np.testing.assert_allclose(H(x.grad), ref, rtol=1e-8, atol=1e-11)
    # impossible alignments: inf, or 0 with a zero gradient under zero_infinity
    lp = F.log_softmax(pg.randn(3, 2, 3, device=device, dtype=pg.float64), 2).requires_grad_()
    tg = T([[1, 1, 1], [1, 1, 1]], device)
    assert np.isinf(H(F.ctc_loss(lp, tg, [3, 3], [3, 3], reduction="none"))).all()
    zl = nn.CTCLoss(zero_infinity=True)(lp, tg, [3, 3], [3, 3])
    zl.backward()
    assert zl.item() == 0 and (H(lp.grad) == 0).all()
    # without zero_infinity, PyTorch's gradient of an impossible alignment is NaN for every
    # log-probability of that sequence within its input length (the other sequence's is finite)
    lp.grad = None
    tg2 = T([[1, 1, 1], [1, 2, 1]], device)
    F.ctc_loss(lp, tg2, [2, 3], [3, 3], reduction="sum").backward()
    g = H(lp.grad)
    assert np.isnan(g[:2, 0]).all() and (g[2, 0] == 0).all() and np.isfinite(g[:, 1]).all()


# ------------------------------------------------------------------ lazy modules
def test_lazy_modules_materialize_on_first_call(device):
    m = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                      nn.Flatten(), nn.LazyLinear(5)).double().to(device)
    assert isinstance(m[0].weight, nn.UninitializedParameter)
    assert isinstance(m[1].running_mean, nn.UninitializedBuffer)
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        _ = m[4].weight.shape
    y = m(pg.randn(2, 3, 6, 6, device=device, dtype=pg.float64))
    assert y.shape == (2, 5)
    assert [type(c) for c in m] == [nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.Flatten, nn.Linear]
    assert m[0].weight.shape == (4, 3, 3, 3) and m[0].in_channels == 3
    assert m[4].weight.shape == (5, 144) and m[4].weight.dtype == pg.float64
    assert m[4].weight.device == pg.device(device) and m[1].running_mean.shape == (4,)
    assert type(m[4].weight) is nn.Parameter and m[4].weight.requires_grad
    y.sum().backward()
    assert m[4].weight.grad.shape == (5, 144)
    t = nn.LazyConvTranspose3d(2, 2, stride=2, groups=1).to(device)
    assert t(pg.randn(3, 2, 2, 2, device=device)).shape == (2, 4, 4, 4)  # unbatched: C from dim 0
    assert t.weight.shape == (3, 2, 2, 2, 2)
    inst = nn.LazyInstanceNorm1d().to(device)  # PyTorch 2.13's defaults: affine, statistics
    assert inst.affine is True and inst.track_running_stats is True
    assert inst(pg.randn(2, 3, 5, device=device)).shape == (2, 3, 5)
    assert type(inst) is nn.InstanceNorm1d and inst.weight.shape == (3,)
    assert inst.running_mean.shape == (3,)
    assert repr(inst) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                          "track_running_stats=True)")
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to "
                                           r"LazyConv2d"):
        nn.LazyConv2d(2, 1)(pg.randn(2, 3, device=device))


def test_lazy_modules_load_a_checkpoint(device):
    src = nn.Sequential(nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4), nn.Flatten(), nn.Linear(8, 2))
    src(pg.randn(2, 3, 4))
    dst = nn.Sequential(nn.LazyConv1d(4, 3), nn.LazyBatchNorm1d(), nn.Flatten(), nn.LazyLinear(2))
    dst.load_state_dict(src.state_dict())
    x = pg.randn(2, 3, 4)
    np.testing.assert_allclose(H(dst.eval()(x)), H(src.eval()(x)), rtol=1e-6)
    assert type(dst[3]) is nn.Linear and dst[3].weight.shape == (2, 8)


# ------------------------------------------------------------------ sampling grids
def test_grid_sample_reflection_and_3d_against_torch_literals(device):
    x = pg.arange(12.0, device=device).reshape(1, 1, 3, 4)
    g = T([[[[-1.3, 0.2], [0.9, -1.6], [0.1, 1.7]]]], device, dtype=pg.float32)  # (1, 1, 3, 2)
    out = F.grid_sample(x, g, padding_mode="reflection", align_corners=False)
    np.testing.assert_allclose(H(out).ravel(), [5.3, 4.6, 7.5], rtol=1e-5)
    out = F.grid_sample(x, g, padding_mode="reflection", align_corners=True)
    np.testing.assert_allclose(H(out).ravel(), [5.25, 5.25, 6.85], rtol=1e-5)
    v = pg.arange(8.0, device=device).reshape(1, 1, 2, 2, 2)
    g3 = T([[[[[0.5, -0.5, 0.0]]]]], device, dtype=pg.float32)  # x, y, z
    np.testing.assert_allclose(H(F.grid_sample(v, g3, align_corners=True)).ravel(), [3.25],
                               rtol=1e-6)
    theta = T([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device, dtype=pg.float32)
    ident = F.affine_grid(theta, [1, 1, 3, 4], align_corners=False)
    np.testing.assert_allclose(H(F.grid_sample(x, ident, align_corners=False)), H(x), rtol=1e-6)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.affine_grid(theta, [1, 1, 3, 4])
    # bicubic at the pixel centres reads the pixels
    np.testing.assert_allclose(H(F.grid_sample(x, ident, "bicubic", align_corners=False)), H(x),
                               rtol=1e-6, atol=1e-6)


def test_grid_sample_against_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((2, 3, 3, 4, 5)), rng.uniform(-1.4, 1.4, (2, 3, 2, 6, 3))
    for mode in ("bilinear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (True, False):
                ref = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, pad,
                                                      ac).numpy()
                out = F.grid_sample(T(x, device), T(g, device), mode, pad, ac)
                np.testing.assert_allclose(H(out), ref, rtol=1e-10, atol=1e-12)


def test_adaptive_log_softmax_against_torch_literals(device):
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 7, [2, 4], div_value=2.0).double().to(device)
    rng = np.random.default_rng(0)
    with pg.no_grad():
        for _, p in sorted(m.named_parameters()):
            p.copy_(T(rng.uniform(-1, 1, tuple(p.shape)), device))
    x = T(np.random.default_rng(1).standard_normal((3, 4)), device, True)
    out, loss = m(x, T([0, 3, 6], device))
    np.testing.assert_allclose(H(out), [-2.001225209892, -3.286277068749, -2.855416384942],
                               rtol=1e-10)
    np.testing.assert_allclose(loss.item(), 2.714306221194185, rtol=1e-12)
    assert H(m.predict(x)).tolist() == [2, 1, 1]
    np.testing.assert_allclose(np.exp(H(m.log_prob(x))).sum(1), 1, rtol=1e-12)
    loss.backward()
    assert x.grad is not None and m.tail[1][1].weight.grad is not None
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 6\], but values in "
                                           r"range \[0, 7\] were found."):
        m(x, T([0, 3, 7], device))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 7, [4, 2])


def test_multi_head_attention_forward_against_torch_literals(device):
    rng = np.random.default_rng(0)
    w, b = T(rng.uniform(-1, 1, (12, 4)), device), T(rng.uniform(-1, 1, 12), device)
    ow, ob = T(rng.uniform(-1, 1, (4, 4)), device), T(rng.uniform(-1, 1, 4), device)
    q = T(rng.standard_normal((3, 4)), device)  # unbatched (L, E)
    mask = T([[False, True, True], [False, False, True], [False, False, False]], device)
    out, attn = F.multi_head_attention_forward(q, q, q, 4, 2, w, b, None, None, False, 0.0, ow, ob,
                                               attn_mask=mask)
    np.testing.assert_allclose(H(out), [
        [-0.569274173283, 2.400070010876, -1.260522960985, 2.009636160472],
        [-0.058765495972, 1.364874594314, -0.778408743787, 1.086816888377],
        [1.761034416858, 0.587034264795, 1.501279180233, -1.276268625]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(H(attn), [[1.0, 0.0, 0.0], [0.533174375209, 0.466825624791, 0.0],
                                         [0.0143165527, 0.940501078738, 0.045182368562]],
                               rtol=1e-9, atol=1e-12)
    causal, _ = F.multi_head_attention_forward(q, q, q, 4, 2, w, b, None, None, False, 0.0, ow, ob,
                                               attn_mask=mask, is_causal=True, need_weights=False)
    np.testing.assert_allclose(H(causal), H(out), rtol=1e-12)
    # is_causal is a hint about the mask, not a mask (PyTorch's error without one)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(q, q, q, 4, 2, w, b, None, None, False, 0.0, ow, ob,
                                       is_causal=True, need_weights=False)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        nn.TransformerEncoderLayer(4, 2).to(device)(q, is_causal=True)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 4"):
        F.multi_head_attention_forward(q, q, q, 8, 2, w, b, None, None, False, 0.0, ow, ob)


def test_interpolate_bicubic_against_torch_literals(device):
    x = (pg.arange(12.0, device=device).reshape(1, 1, 3, 4)) ** 1.5
    np.testing.assert_allclose(
        H(F.interpolate(x, size=(2, 5), mode="bicubic")).ravel(),
        [1.2100419998, 2.1057331562, 3.7229876518, 5.904238224, 7.7450566292, 19.3407649994,
         22.1192188263, 25.9428958893, 29.9985523224, 33.1657295227], rtol=1e-5)
    np.testing.assert_allclose(
        H(F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True)).ravel()[:6],
        [0.0, 0.4145298004, 1.3609783649, 2.3033239841, 3.944576025, 5.1961522102],
        rtol=1e-5, atol=1e-6)
    xd = pg.randn(1, 2, 3, 3, device=device, dtype=pg.float64, requires_grad=True)
    assert pg.autograd.gradcheck(lambda t: F.interpolate(t, size=(4, 5), mode="bicubic"), (xd,))
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input .*\(got bicubic\)"):
        F.interpolate(x[0], size=3, mode="bicubic")
    for mode in ("bilinear", "bicubic"):  # antialiased downsampling (torchvision's resize)
        assert pg.autograd.gradcheck(
            lambda t, mode=mode: F.interpolate(t, size=(2, 2), mode=mode, antialias=True), (xd,))
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic, and lanczos"):
        F.interpolate(x, scale_factor=0.5, mode="nearest", antialias=True)


def test_linear_cross_entropy_loss_module(device):
    m = nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True,
                                  options=nn.LinearCrossEntropyOptions()).double().to(device)
    assert m.linear.weight.shape == (6, 4)
    rng = np.random.default_rng(0)
    with pg.no_grad():
        m.linear.weight.copy_(T(rng.uniform(-1, 1, (6, 4)), device))
        m.linear.bias.copy_(T(rng.uniform(-1, 1, 6), device))
    x = T(np.random.default_rng(1).standard_normal((3, 4)), device)
    loss = m(x, T([[0, 1], [2, 2], [1, 0]], device))
    logits = (H(x) @ H(m.linear.weight).T + H(m.linear.bias)).reshape(3, 3, 2)
    lsm = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ref = -np.mean([lsm[0, 0, 0], lsm[0, 1, 1], lsm[1, 2, 0], lsm[1, 2, 1], lsm[2, 1, 0],
                    lsm[2, 0, 1]])
    np.testing.assert_allclose(loss.item(), ref, rtol=1e-12)
    with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
        nn.LinearCrossEntropyOptions(acc_policy="fast")
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(3,\), got \(2,\)"):
        nn.LinearCrossEntropyLoss(4, 3, weight=pg.ones(2))


def test_sdpa_fully_masked_rows_give_zeros(device):
    q = pg.randn(1, 2, 3, device=device, requires_grad=True)
    for mask in (T([[True, False], [False, False]], device),
                 T([[0.0, -np.inf], [-np.inf, -np.inf]], device, dtype=pg.float32)):
        out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        np.testing.assert_array_equal(H(out)[0, 1], 0)
        np.testing.assert_allclose(H(out)[0, 0], H(q)[0, 0], rtol=1e-6)
        out.sum().backward()
        assert np.isfinite(H(q.grad)).all()
        q.grad = None


def test_sdpa_mask_needs_two_dimensions(device):
    """PyTorch reads the mask's size(-2): a 1-d or 0-d mask raises IndexError (torch 2.13's
    messages), rather than broadcasting over the keys."""
    q = pg.randn(1, 2, 4, 8, device=device)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got -2"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pg.ones(4, dtype=pg.bool, device=device))
    with pytest.raises(IndexError, match="Dimension specified as -2 but tensor has no dimensions"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pg.tensor(True, device=device))


def test_cross_map_lrn2d_against_torch_literals(device):
    x = pg.arange(1.0, 7.0, device=device).reshape(1, 6, 1, 1)
    np.testing.assert_allclose(
        H(nn.CrossMapLRN2d(3, 0.5, 0.75, 1)(x)).ravel(),
        [0.63470059633255, 0.8107200860977173, 0.7825422286987305, 0.7392090559005737,
         0.6908344626426697, 0.9713661670684814], rtol=1e-6)
    np.testing.assert_allclose(
        H(nn.CrossMapLRN2d(4, 0.5, 0.75, 1)(x)).ravel(),
        [0.6948002576828003, 0.9365489482879639, 0.9323973655700684, 0.8937961459159851,
         0.8421969413757324, 1.1793568134307861], rtol=1e-6)
    assert repr(nn.CrossMapLRN2d(3, 1e-3, 0.5, 2)) == "CrossMapLRN2d(3, alpha=0.001, beta=0.5, k=2)"
    xd = pg.randn(1, 4, 2, 2, device=device, dtype=pg.float64, requires_grad=True)
    assert pg.autograd.gradcheck(nn.CrossMapLRN2d(3, 0.5, 0.75, 1), (xd,))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead"):
        nn.CrossMapLRN2d(3)(pg.ones(2, 3, 4, device=device))


def test_fractional_max_pool_against_torch_literals(device):
    x = (pg.arange(35.0, device=device).reshape(1, 1, 5, 7) * 7 % 11)
    samples = T([[[0.25, 0.75]]], device, dtype=pg.float32)
    out, idx = F.fractional_max_pool2d(x, 2, output_size=(3, 4), return_indices=True,
                                       _random_samples=samples)
    np.testing.assert_array_equal(H(out)[0, 0], [[7, 10, 10, 9], [10, 9, 9, 8], [9, 8, 10, 7]])
    np.testing.assert_array_equal(H(idx)[0, 0], [[1, 3, 3, 6], [14, 17, 17, 20],
                                                 [28, 31, 25, 34]])
    m = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    o, i = m(pg.randn(2, 3, 9, 8, device=device))
    assert o.shape == i.shape == (2, 3, 4, 4)
    assert nn.FractionalMaxPool3d(2, output_size=(2, 3, 2))(
        pg.randn(3, 4, 5, 4, device=device)).shape == (3, 2, 3, 2)
    xg = pg.randn(1, 2, 5, 5, device=device, dtype=pg.float64, requires_grad=True)
    s = T(np.random.default_rng(0).random((1, 2, 2)), device)
    assert pg.autograd.gradcheck(lambda t: F.fractional_max_pool2d(t, 2, 3, _random_samples=s),
                                 (xg,))
    with pytest.raises(ValueError, match="requires specifying either an output_size or an "
                                         "output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 5"):
        F.fractional_max_pool2d(x, 2, output_size=(6, 6))
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)


# ------------------------------------------------------------------ nn.grad, factory_kwargs
def test_nn_grad_conv_gradients(device):
    rng = np.random.default_rng(0)
    x, w = T(rng.standard_normal((2, 4, 7, 6)), device), T(rng.standard_normal((6, 2, 3, 2)), device)
    go = T(rng.standard_normal((2, 6, 4, 4)), device)
    gi = nn.grad.conv2d_input(x.shape, w, go, stride=2, padding=1, groups=2)
    # the input gradient of a convolution is the transposed convolution of the output gradient
    ref = F.conv_transpose2d(go, w, stride=2, padding=1, groups=2)
    np.testing.assert_allclose(H(gi), H(ref), rtol=1e-10)
    x1, go1 = T(rng.standard_normal((2, 3, 5)), device), T(rng.standard_normal((2, 4, 3)), device)
    gw = nn.grad.conv1d_weight(x1, (4, 3, 3), go1)
    ref = np.einsum("nol,ncl k->ock".replace(" ", ""), H(go1),
                    np.stack([H(x1)[:, :, j:j + 3] for j in range(3)], 2))
    np.testing.assert_allclose(H(gw), ref, rtol=1e-10)
    assert nn.grad.conv3d_input((1, 2, 3, 3, 3), T(np.ones((1, 2, 2, 2, 2)), device),
                                T(np.ones((1, 1, 2, 2, 2)), device)).shape == (1, 2, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"grad_output has shape \[2, 6, 2, 4\]"):
        nn.grad.conv2d_input(x.shape, w, go[:, :, :2], stride=2, padding=1, groups=2)
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": pg.float64}}) == \
        {"device": "cpu", "dtype": pg.float64}
    with pytest.raises(TypeError, match="dtype specified twice"):
        nn.factory_kwargs({"dtype": pg.float32, "factory_kwargs": {"dtype": pg.float64}})


def test_nn_grad_conv_gradients_skip_the_forward(device, monkeypatch):
    """Where nothing records, ``nn.grad``'s 1-D and 2-D gradients are the backend's one call (no
    forward convolution), the same values as the autograd route; a ``grad_output`` that
    requires grad keeps the route through autograd, recorded, so the result is differentiable
    (as PyTorch's ``convolution_backward``)."""
    from portagrad._ops.nn import conv as nconv

    rng = np.random.default_rng(1)
    x, w = T(rng.standard_normal((2, 4, 7, 6)), device), T(rng.standard_normal((6, 2, 3, 2)), device)
    go = T(rng.standard_normal((2, 6, 4, 4)), device)
    geom = dict(stride=2, padding=1, groups=2)
    with pg.enable_grad():  # the route through autograd: the reference
        ref_i = H(nn.grad.conv2d_input(x.shape, w, go.requires_grad_(), **geom))
        ref_w = H(nn.grad.conv2d_weight(x, w.shape, go, **geom))
    go = go.detach()
    forwards = []
    real = nconv._Conv.forward
    monkeypatch.setattr(nconv._Conv, "forward",
                        staticmethod(lambda *a: forwards.append(1) or real(*a)))
    gi = nn.grad.conv2d_input(x.shape, w, go, **geom)
    gw = nn.grad.conv2d_weight(x, w.shape, go, **geom)
    if nconv.conv_fast_path(x):
        assert forwards == []
    np.testing.assert_allclose(H(gi), ref_i, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H(gw), ref_w, rtol=1e-12, atol=1e-12)
    go = go.requires_grad_()
    gi = nn.grad.conv2d_input(x.shape, w, go, **geom)
    assert gi.requires_grad
    gi.sum().backward()  # gi is conv_transpose2d(go, w): d sum / d go = conv2d(ones, w)
    want = F.conv2d(pg.ones(x.shape, dtype=x.dtype, device=device), w, **geom)
    np.testing.assert_allclose(H(go.grad), H(want), rtol=1e-12, atol=1e-12)


def test_sdpa_kernel_selection_runs_the_one_implementation(device):
    from portagrad.nn.attention import SDPBackend, sdpa_kernel

    q = pg.randn(2, 3, 4, device=device)
    ref = H(F.scaled_dot_product_attention(q, q, q, is_causal=True))
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        np.testing.assert_array_equal(H(F.scaled_dot_product_attention(q, q, q, is_causal=True)),
                                      ref)
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert int(SDPBackend.EFFICIENT_ATTENTION) == 2


def test_lazy_modules_copy_and_pickle(device):
    import copy
    import pickle

    m = nn.LazyLinear(3).to(device)
    c = copy.deepcopy(m)
    assert c(pg.randn(2, 4, device=device)).shape == (2, 3)
    assert c(pg.randn(2, 4, device=device)).shape == (2, 3)  # the copy's hook removed itself
    assert m(pg.randn(2, 5, device=device)).shape == (2, 3)  # the original still lazy until now
    assert m.weight.shape == (3, 5) and c.weight.shape == (3, 4)
    p = pickle.loads(pickle.dumps(nn.LazyConv1d(2, 1)))
    assert p(pg.randn(1, 3, 4)).shape == (1, 2, 4) and type(p) is nn.Conv1d


def test_conv_transpose_output_padding_past_the_stride(device):
    """PyTorch allows an output padding at or past the stride when it is under the dilation; the
    window sweep then counted windows past the input (values read out of bounds, a backward of
    the wrong shape). Expected values are PyTorch 2.13's."""
    F = nn.functional
    x = pg.tensor([[[1.0, 2.0, 3.0]]], requires_grad=True, device=device)
    w = pg.tensor([[[1.0, 10.0, 100.0]]], requires_grad=True, device=device)
    y = F.conv_transpose1d(x, w, stride=1, dilation=2, output_padding=1)
    assert y.tolist() == [[[1.0, 2.0, 13.0, 20.0, 130.0, 200.0, 300.0, 0.0]]]
    (y * pg.arange(8.0, device=device)).sum().backward()
    assert x.grad.tolist() == [[[420.0, 531.0, 642.0]]]
    assert w.grad.tolist() == [[[8.0, 20.0, 32.0]]]
    y = F.conv_transpose1d(x.detach(), w.detach(), stride=2, dilation=3, output_padding=2,
                           padding=1)
    assert y.tolist() == [[[0.0, 2.0, 10.0, 3.0, 20.0, 100.0, 30.0, 200.0, 0.0, 300.0, 0.0]]]
    x2 = pg.arange(4.0, device=device).reshape(1, 1, 2, 2)
    y2 = F.conv_transpose2d(x2, pg.ones(1, 1, 2, 2, device=device), stride=1, dilation=2,
                            output_padding=1)
    assert y2.tolist() == [[[[0.0, 1.0, 0.0, 1.0, 0.0], [2.0, 3.0, 2.0, 3.0, 0.0],
                             [0.0, 1.0, 0.0, 1.0, 0.0], [2.0, 3.0, 2.0, 3.0, 0.0],
                             [0.0, 0.0, 0.0, 0.0, 0.0]]]]
