"""PyTorch's results, argument checks (exception types and messages) and gradients for the
``nn.functional`` helpers that are not convolutions or pooling: ``pad``, ``interpolate``,
``grid_sample``, ``affine_grid``, ``fold``/``unfold``, ``channel_shuffle``, ``one_hot``, ``pdist``,
``cdist`` and ``embedding``; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F

_PAD_RANKS = r"Supported combinations for non-constant padding:"


def t(device: str, data, dtype=None, grad: bool = False):
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=grad)


def close(x, want, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(x.detach().cpu().numpy()).ravel(), np.ravel(want),
                               rtol=tol, atol=tol)


# ------------------------------------------------------------------------------- pad
def test_pad_circular_negative_crops_then_wraps(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(1, 1, 6)
    # the wrap repeats the cropped tensor, not the input
    assert F.pad(x, (-2, 1), mode="circular").flatten().tolist() == [2., 3., 4., 5., 2.]
    assert F.pad(x, (1, -2), mode="circular").flatten().tolist() == [3., 0., 1., 2., 3.]
    assert F.pad(x, (2, -1), mode="circular").flatten().tolist() == [3., 4., 0., 1., 2., 3., 4.]
    y = pg.arange(12.0, device=device).reshape(1, 3, 4)
    assert F.pad(y, (1, -1, -1, 1), mode="circular").tolist() == [
        [[6., 4., 5., 6.], [10., 8., 9., 10.], [6., 4., 5., 6.]]]
    g = t(device, [0., 1., 2., 3., 4., 5.], grad=True)
    F.pad(g.reshape(1, 1, 6), (-2, 3), mode="circular").sum().backward()
    assert g.grad.tolist() == [0., 0., 2., 2., 2., 1.]
    # reflect and replicate index the uncropped input
    assert F.pad(x, (-2, 2), mode="reflect").flatten().tolist() == [2., 3., 4., 5., 4., 3.]
    assert F.pad(x, (-4, 3), mode="replicate").flatten().tolist() == [4., 5., 5., 5., 5.]


def test_pad_nonconstant_ranks(device: str) -> None:
    x3 = pg.ones(2, 3, 4, device=device)
    for mode in ("reflect", "replicate", "circular"):
        with pytest.raises(NotImplementedError, match=r"Padding size 2 is not supported for 1D "
                           r"input tensor.\n" + _PAD_RANKS):
            F.pad(pg.ones(3, device=device), (1, 1), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
            F.pad(pg.ones(1, 2, 3, 4, device=device), (1, 1), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 3D"):
            F.pad(x3, (1, 1, 1, 1, 1, 1), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 0 is not supported for 3D"):
            F.pad(x3, (), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 8 is not supported for 5D"):
            F.pad(pg.ones(1, 2, 3, 3, 3, device=device), (1,) * 8, mode=mode)
    assert F.pad(x3, (1, 1, 1, 1), mode="reflect").shape == (2, 5, 6)  # unbatched 2-D
    assert F.pad(x3, (1, 1, 1, 1, 1, 1)).shape == (4, 5, 6)  # constant: any rank
    # checks that come first
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x3, (1, 1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x3, (1, 1, 1, 1, 1, 1), mode="foo")
    with pytest.raises(RuntimeError, match="Padding mode \"reflect\" doesn't take in value"):
        F.pad(x3, (1,) * 6, mode="reflect", value=1)


def test_pad_nonconstant_checks(device: str) -> None:
    msg = (r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size and other non-zero "
           r"dimensions for input, but got: \[2, 3, 0\]")
    with pytest.raises(RuntimeError, match=msg):
        F.pad(pg.zeros(2, 3, 0, device=device), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=msg):
        F.pad(pg.zeros(2, 3, 0, device=device), (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D .* but got: \[2, 0, 3, 3\]"):
        F.pad(pg.zeros(2, 0, 3, 3, device=device), (1, 1, 1, 1), mode="replicate")
    assert F.pad(pg.zeros(0, 2, 3, device=device), (1, 1), mode="reflect").shape == (0, 2, 5)
    assert F.pad(pg.zeros(2, 3, 0, device=device), (0, 0), mode="circular").shape == (2, 3, 0)
    with pytest.raises(NotImplementedError, match="\"reflection_pad1d\" not implemented for 'Bool'"):
        F.pad(t(device, [[[True, False]]]), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="\"replication_pad1d\" not implemented for 'Bool'"):
        F.pad(t(device, [[True, False]]), (1, 1), mode="replicate")
    assert F.pad(t(device, [[True, False]]), (1, 1), mode="circular").tolist() == [
        [False, True, False, True]]
    with pytest.raises(RuntimeError, match=r"Argument #6: Padding size should be less than the "
                       r"corresponding input dimension, but got: padding \(3, 2\) at dimension 1 "
                       r"of input \[2, 3, 4\]"):
        F.pad(pg.ones(2, 3, 4, device=device), (1, 2, 3, 2), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Argument #8: .* padding \(3, 0\) at dimension 2"):
        F.pad(pg.ones(2, 3, 3, 3, 3, device=device), (0, 0, 0, 0, 3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match=r"input \(W: 3\) is too small. Calculated output W: 0"):
        F.pad(pg.ones(2, 3, 3, device=device), (-2, -1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"input \(W: 3\) is too small. Calculated output W: -1"):
        F.pad(pg.ones(2, 3, 3, device=device), (-3, -1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"^input \(H: 2, W: 2\) is too small. Calculated "
                       r"output H: 0 W: 0$"):
        F.pad(pg.ones(2, 3, 2, 2, device=device), (-1, -1, -1, -1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"^input \(H: 2, W: 2 \) is too small"):
        F.pad(pg.ones(2, 3, 2, 2, device=device), (-1, -1, -1, -1), mode="replicate")
    with pytest.raises(RuntimeError, match=r"^input \(D: 5 H: 3, W: 2\) is too small. Calculated "
                       r"output D: 0 H: 0 W: 0$"):
        F.pad(pg.ones(3, 5, 3, 2, device=device), (-1, -1, -2, -1, -3, -2), mode="reflect")
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension -1: "
                       r"\[2, 3, -1, 5\]$"):
        F.pad(pg.ones(2, 3, 3, 3, device=device), (1, 1, -3, -1), mode="replicate")
    # one empty dimension is allowed
    assert F.pad(pg.ones(2, 3, 3, 3, device=device), (1, 1, -2, -1), mode="reflect").shape == (
        2, 3, 0, 5)
    with pytest.raises(RuntimeError, match="Negative padding value is resulting in an empty dim"):
        F.pad(pg.ones(2, 3, 4, device=device), (-5, 0), mode="circular")
    assert F.pad(pg.ones(2, 3, 3, device=device), (-2, -1), mode="circular").shape == (2, 3, 0)
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(pg.ones(2, 3, 3, device=device), (0, 0, 4, 0), mode="circular")
    with pytest.raises(RuntimeError, match=r"^narrow\(\): length must be non-negative.$"):
        F.pad(pg.ones(2, 3, 4, device=device), (-3, -2))
    with pytest.raises(TypeError, match=r"pad\(\): argument 'pad' \(position 2\) must be tuple "
                       r"of ints, but found element of type float at pos 0"):
        F.pad(pg.ones(2, 3, device=device), (-2.5, 1))
    with pytest.raises(TypeError, match="found element of type bool at pos 0"):
        F.pad(pg.ones(2, 3, device=device), (True, 1))


def test_pad_modules(device: str) -> None:
    with pytest.raises(ValueError, match=r"^expected 3D or 4D input \(got 5D input\)$"):
        pg.nn.CircularPad2d(1)(pg.ones(1, 1, 2, 2, 2, device=device))
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 1D input\)$"):
        pg.nn.CircularPad1d(1)(pg.ones(3, device=device))
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D"):
        pg.nn.ReflectionPad1d(1)(pg.ones(3, device=device))
    with pytest.raises(TypeError, match=r"^ZeroPad2d.__init__\(\) takes 2 positional"):
        pg.nn.ZeroPad2d(1, 2, 3, 4)
    assert pg.nn.CircularPad1d(1)(pg.arange(3.0, device=device).reshape(1, 3)).tolist() == [
        [2., 0., 1., 2., 0.]]


# ------------------------------------------------------------------------------- interpolate
def test_interpolate_argument_checks(device: str) -> None:
    x3 = pg.ones(2, 3, 5, device=device)
    x4 = pg.ones(1, 2, 5, 4, device=device)
    with pytest.raises(ValueError, match="^either size or scale_factor should be defined$"):
        F.interpolate(x4)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(pg.ones(2, 5, device=device), size=3, align_corners=True)  # before the rank
    with pytest.raises(ValueError, match=r"Input and output must have the same number of spatial "
                       r"dimensions, but got input with spatial dimensions of \[5, 4\] and output "
                       r"size of \(3, 3, 3\)\. Please provide"):
        F.interpolate(x4, size=(3, 3, 3))
    with pytest.raises(ValueError, match=r"Input and scale_factor must have the same number of "
                       r"spatial dimensions, but got input with spatial dimensions of \[5, 4\] and "
                       r"scale_factor of shape \(2\.0,\)"):
        F.interpolate(x4, scale_factor=(2.0,))
    with pytest.raises(TypeError, match=r"expected size to be one of int or Tuple\[int\]"):
        F.interpolate(x4, size=(3.0, 4))
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an "
                       "explicit size"):
        F.interpolate(x3, size=3, mode="linear", recompute_scale_factor=True)
    with pytest.raises(NotImplementedError, match=r"Input Error: Only 3D, 4D and 5D input Tensors "
                       r"supported \(got 3D\) for the modes: nearest \| linear \| bilinear \| "
                       r"bicubic \| trilinear \| lanczos \| area \| nearest-exact \(got foo\)"):
        F.interpolate(x3, size=3, mode="foo")
    with pytest.raises(NotImplementedError, match=r"\(got 5D\) .* \(got bicubic\)"):
        F.interpolate(pg.ones(1, 1, 2, 2, 2, device=device), size=3, mode="bicubic")
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic, "
                       "and lanczos modes and requires a 4-D tensor as input"):
        F.interpolate(x3, size=3, mode="bilinear", antialias=True)  # before the rank check
    with pytest.raises(ValueError, match="^Lanczos mode requires antialias=True$"):
        F.interpolate(x4, size=3, mode="lanczos")
    with pytest.raises(ValueError, match="^Lanczos mode does not support align_corners=True$"):
        F.interpolate(x4, size=3, mode="lanczos", antialias=True, align_corners=True)


def test_interpolate_size_checks(device: str) -> None:
    x4 = pg.ones(1, 2, 5, 4, device=device)
    with pytest.raises(RuntimeError, match=r"^Input and output sizes should be greater than 0, but "
                       r"got input \(H: 5, W: 4\) output \(H: 0, W: 0\)$"):
        F.interpolate(x4, scale_factor=0.1)
    with pytest.raises(RuntimeError, match=r"output \(H: -5, W: -4\)"):
        F.interpolate(x4, scale_factor=-1.0, mode="bilinear")
    with pytest.raises(RuntimeError, match=r"got input \(W: 5\) and output \(W: 0\)$"):
        F.interpolate(pg.ones(2, 3, 5, device=device), size=0, mode="linear")
    with pytest.raises(RuntimeError, match=r"input \(D: 3, H: 4, W: 5\) output \(D: 0, H: 1, W: 1\)"):
        F.interpolate(pg.ones(1, 2, 3, 4, 5, device=device), scale_factor=0.3)
    with pytest.raises(RuntimeError, match=r"input \(H: 0, W: 3\) output \(H: 5, W: 5\)"):
        F.interpolate(pg.zeros(1, 2, 0, 3, device=device), size=5)
    with pytest.raises(RuntimeError, match=r"^Non-empty 4D data tensor expected but got a tensor "
                       r"with sizes \[1, 0, 3, 3\]$"):
        F.interpolate(pg.zeros(1, 0, 3, 3, device=device), size=5, mode="bilinear")
    assert F.interpolate(pg.zeros(0, 2, 3, 3, device=device), size=5, mode="bicubic").shape == (
        0, 2, 5, 5)
    # area resamples by adaptive pooling: an empty output is allowed
    assert F.interpolate(pg.ones(1, 2, 3, 4, 5, device=device), scale_factor=0.3,
                         mode="area").shape == (1, 2, 0, 1, 1)


def test_interpolate_dtypes(device: str) -> None:
    xi = pg.ones(2, 3, 5, 4, dtype=pg.int64, device=device)
    for mode, kernel in (("nearest", "upsample_nearest2d_channels_last"),
                         ("bilinear", "upsample_bilinear2d_channels_last"),
                         ("bicubic", "compute_indices_weights_cubic"),
                         ("area", "adaptive_avg_pool2d")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'Long'"):
            F.interpolate(xi, scale_factor=2, mode=mode)
    with pytest.raises(NotImplementedError, match="\"compute_indices_weights_nearest\" not "
                       "implemented for 'Int'"):
        F.interpolate(pg.ones(2, 3, 5, dtype=pg.int32, device=device), size=3)
    with pytest.raises(NotImplementedError, match="\"compute_indices_weights_linear\" not "
                       "implemented for 'Byte'"):
        F.interpolate(pg.ones(2, 3, 5, dtype=pg.uint8, device=device), size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="\"upsample_nearest2d_channels_last\" not "
                       "implemented for 'Bool'"):
        F.interpolate(pg.ones(2, 3, 5, 4, dtype=pg.bool, device=device), size=3)
    u8 = (pg.arange(20, device=device) * 37 % 256).to(pg.uint8).reshape(1, 1, 4, 5)
    near = F.interpolate(u8, size=(2, 3))
    assert near.dtype == pg.uint8 and near.flatten().tolist() == [0, 37, 111, 114, 151, 225]
    # PyTorch's uint8 kernel uses fixed-point weights: within one of its result
    for mode, ac, want in (
            ("bilinear", None, [31, 52, 66, 62, 88, 115, 136, 150, 171, 161, 96, 122, 94, 42, 55,
                                76, 103, 129, 155, 164, 160]),
            ("bicubic", True, [0, 21, 51, 74, 97, 127, 148, 174, 212, 176, 96, 127, 100, 18, 43,
                               64, 94, 117, 140, 170, 191])):
        got = F.interpolate(u8, size=(3, 7), mode=mode, align_corners=ac)
        assert got.dtype == pg.uint8
        assert np.abs(np.array(got.flatten().tolist()) - want).max() <= 1


def test_interpolate_antialias(device: str) -> None:
    x = pg.arange(20.0, device=device).reshape(1, 1, 4, 5)
    close(F.interpolate(x, size=(2, 3), mode="lanczos", antialias=True),
          [3.012235, 4.690636, 6.369037, 12.630963, 14.309365, 15.987765])
    up = F.interpolate(x, size=(6, 7), mode="lanczos", antialias=True)
    close(up.flatten()[:8], [-0.373023, 0.134487, 1.021592, 1.682026, 2.342461, 3.229565,
                             3.737075, 1.803141])
    xd = pg.randn(1, 2, 5, 6, dtype=pg.float64, device=device, requires_grad=True)
    assert pg.autograd.gradcheck(
        lambda v: F.interpolate(v, scale_factor=0.6, mode="lanczos", antialias=True), (xd,))
    try:
        x16 = pg.ones(1, 1, 4, 4, dtype=pg.float16, device=device)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    with pytest.raises(NotImplementedError, match="\"compute_index_ranges_weights\" not "
                       "implemented for 'Half'"):
        F.interpolate(x16, size=3, mode="bilinear", antialias=True)


# ------------------------------------------------------------------------------- grid_sample
_BICUBIC = {  # (padding_mode, align_corners): (output, grid gradient)
    ("zeros", False): ([-0.296634, -0.108621, -1.112004, 1.978132],
                       [4.6143, -0.882611, -0.575331, 0.271552, -1.226477, 13.141863, 1.871622,
                        2.286848]),
    ("zeros", True): ([2.017661, 0.070859, 4.092478, 2.373387],
                      [6.253791, 4.953125, -0.414321, 0.006166, 3.065228, -48.618528, 1.31242,
                       2.006943]),
    ("border", False): ([4.450857, 1.364464, 13.312429, 1.855177],
                        [0.0, 11.134286, -0.15, 0.0, 14.682857, 0.0, 1.263107, 2.279767]),
    ("reflection", True): ([4.272002, 3.217742, 7.785716, 1.991791],
                           [-2.454647, 9.202046, -1.657954, 13.484803, 7.905349, -34.922295,
                            1.170393, 2.614279]),
}


def test_grid_sample_bicubic(device: str) -> None:
    for (pm, ac), (want, want_grad) in _BICUBIC.items():
        x = pg.arange(12.0, dtype=pg.float64, device=device).reshape(1, 1, 3, 4)
        g = t(device, [[[[-1.3, 0.2], [0.9, -1.6], [0.1, 1.7], [0.33, -0.41]]]], pg.float64,
              grad=True)
        out = F.grid_sample(x * x / 7, g, mode="bicubic", padding_mode=pm, align_corners=ac)
        close(out, want)
        w = t(device, [1., -2., 3., 0.5], pg.float64).reshape(1, 1, 1, 4)
        (out * w).sum().backward()
        close(g.grad, want_grad, 1e-4)
    xd = pg.randn(1, 2, 3, 4, dtype=pg.float64, device=device, requires_grad=True)
    gd = pg.tensor(np.random.default_rng(0).uniform(-1.2, 1.2, (1, 2, 3, 2)), device=device)
    assert pg.autograd.gradcheck(
        lambda v: F.grid_sample(v, gd, "bicubic", "border", align_corners=False), (xd,))


def test_grid_sample_checks(device: str) -> None:
    x4 = pg.ones(2, 3, 5, 4, device=device)
    g4 = pg.zeros(2, 3, 6, 2, device=device)
    g = pg.zeros(2, 3, 6, 2, device=device, requires_grad=True)
    F.grid_sample(x4, g, mode="nearest", align_corners=False).sum().backward()
    assert g.grad is not None and g.grad.abs().sum().item() == 0.0  # zeros, not none
    with pytest.raises(RuntimeError, match=r"grid_sampler\(\): expected grid to have size 2 in "
                       r"last dimension, but got grid with sizes \[2, 2, 3, 4, 3\]"):
        F.grid_sample(x4, pg.zeros(2, 2, 3, 4, 3, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match=r"grid_sampler\(\): expected 4D input and grid with "
                       r"same number of dimensions, but got input with sizes \[2, 3, 5, 4\] and "
                       r"grid with sizes \[2, 3, 3, 3, 2\]"):
        F.grid_sample(x4, pg.zeros(2, 3, 3, 3, 2, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match=r"expected 5D input and grid with same number"):
        F.grid_sample(pg.ones(2, 3, 4, device=device), pg.zeros(2, 3, 1, device=device),
                      align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x4, g4[:1], align_corners=False)
    with pytest.raises(NotImplementedError, match="\"grid_sampler_2d_cpu_kernel_impl\" not "
                       "implemented for 'Long'"):
        F.grid_sample(x4.long(), g4, align_corners=False)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Long$"):
        F.grid_sample(x4, g4.long(), align_corners=False)
    with pytest.raises(RuntimeError, match=r"grid_sampler\(\): expected input to have non-empty "
                       r"spatial dimensions, but input has sizes \[2, 3, 4, 0\] with dimension 3 "
                       r"being empty"):
        F.grid_sample(pg.ones(2, 3, 4, 0, device=device), g4, mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(pg.ones(2, 3, 4, 4, 4, device=device), pg.zeros(2, 3, 3, 3, 3, device=device),
                      mode="bicubic", align_corners=False)


def test_affine_grid_messages(device: str) -> None:
    th = pg.zeros(2, 2, 3, device=device)
    with pytest.raises(NotImplementedError, match=r"respectively. Got size \(2, 3, 4\).$"):
        F.affine_grid(th, (2, 3, 4), align_corners=False)
    with pytest.raises(ValueError, match=r"^Expected non-zero, positive output size. Got "
                       r"\(2, 0, 4, 5\)$"):
        F.affine_grid(th, (2, 0, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match=r"Nx2x3 for size \(2, 3, 4, 5\). Got"):
        F.affine_grid(pg.zeros(2, 3, 4, device=device), (2, 3, 4, 5), align_corners=False)


# ------------------------------------------------------------------------------- fold / unfold
def test_unfold_checks(device: str) -> None:
    x = pg.ones(1, 2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"^kernel size should be greater than zero, but got "
                       r"kernel_height: 0 kernel_width: 2$"):
        F.unfold(x, (0, 2), stride=0)
    with pytest.raises(RuntimeError, match=r"^dilation should be greater than zero, but got "
                       r"dilation_height: 0 dilation_width: 0$"):
        F.unfold(x, 2, stride=0, dilation=0, padding=-1)  # dilation before padding and stride
    with pytest.raises(RuntimeError, match=r"^padding should be non-negative, but got "
                       r"pad_height: -1 pad_width: -1$"):
        F.unfold(x, 2, stride=0, padding=-1)
    with pytest.raises(RuntimeError, match=r"^stride should be greater than zero, but got "
                       r"stride_height: 1 stride_width: 0$"):
        F.unfold(x, 2, stride=(1, 0))
    with pytest.raises(RuntimeError, match="^It is expected kernel_size equals to 2, but got size 3$"):
        F.unfold(x, (1, 2, 2))
    with pytest.raises(RuntimeError, match="^It is expected stride equals to 2, but got size 1$"):
        F.unfold(x, 2, stride=(1,))
    with pytest.raises(TypeError, match=r"im2col\(\): argument 'kernel_size' \(position 2\) must "
                       r"be tuple of ints, but found element of type float at pos 0"):
        F.unfold(x, 2.5)
    with pytest.raises(RuntimeError, match=r"Given input with spatial size \(3, 4\), kernel_size="
                       r"\(5, 5\), dilation=\(1, 1\), padding=\(0, 0\), calculated shape of the "
                       r"array of sliding blocks as \(-1, 0\), but its components must be at "
                       r"least one."):
        F.unfold(x.long(), 5)  # before the dtype
    with pytest.raises(RuntimeError, match=r"as \(0, 1\)"):
        F.unfold(x, 2, dilation=3)
    with pytest.raises(RuntimeError, match=r"^Expected 3D or 4D \(batch mode\) tensor with "
                       r"possibly 0 batch size and other non-zero dimensions for input, but got: "
                       r"\[1, 0, 3, 4\]$"):
        F.unfold(pg.zeros(1, 0, 3, 4, device=device), 2)
    with pytest.raises(RuntimeError, match=r"but got: \[1, 2, 3, 4, 5\]$"):
        F.unfold(pg.zeros(1, 2, 3, 4, 5, device=device), 2)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                       r"\[-2, 1\], but got 2\)"):
        F.unfold(pg.zeros(3, 4, device=device), 2)
    with pytest.raises(NotImplementedError, match="\"im2col_out_cpu\" not implemented for 'Long'"):
        F.unfold(x.long(), 2)
    assert F.unfold(pg.zeros(0, 1, 3, 4, device=device), 2).shape == (0, 4, 6)
    b = F.unfold(t(device, [[[[True, False, True], [False, False, True]]]]), 2)
    assert b.dtype == pg.bool and b.tolist() == [[[True, False], [False, True], [False, False],
                                                   [False, True]]]


def test_fold_checks(device: str) -> None:
    y = pg.ones(1, 8, 12, device=device)
    with pytest.raises(RuntimeError, match="^stride should be greater than zero, but got "
                       "stride_height: 0 stride_width: 0$"):
        F.fold(y, (4, 5), 2, stride=0, dilation=0, padding=-1)  # stride first, unlike unfold
    with pytest.raises(RuntimeError, match="^dilation should be greater than zero"):
        F.fold(y, (4, 5), 2, dilation=0, padding=-1)
    with pytest.raises(RuntimeError, match="^It is expected output_size equals to 2, but got size 3$"):
        F.fold(y, (4, 5, 3), (1, 2, 3))
    with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\) tensor for input "
                       r"with possibly 0 batch size and non-zero dimensions for input, but got: "
                       r"\[1, 1, 8, 12\]$"):
        F.fold(pg.ones(1, 1, 8, 12, device=device), (4, 5), 2)
    with pytest.raises(RuntimeError, match=r"but got: \[8\]$"):
        F.fold(pg.ones(8, device=device), (4, 5), 2)
    with pytest.raises(RuntimeError, match=r"but got: \[1, 8, 0\]$"):
        F.fold(pg.ones(1, 8, 0, device=device), (4, 5), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(1\)=7 and kernel_size=\(2, 2\).$"):
        F.fold(pg.ones(1, 7, 12, dtype=pg.int64, device=device), (4, 5), 2)
    with pytest.raises(RuntimeError, match=r"calculated number of sliding blocks -1 \* 4 = -4, "
                       r"but got input.size\(2\)=12."):
        F.fold(y, (0, 5), 2)
    with pytest.raises(NotImplementedError, match="\"col2im_out_cpu\" not implemented for 'Long'"):
        F.fold(y.long(), (4, 5), 2)
    assert F.fold(pg.ones(0, 8, 12, device=device), (4, 5), 2).shape == (0, 2, 4, 5)
    b = F.fold(t(device, [[[True, False], [False, False], [False, False], [False, True]]]),
               (2, 3), 2)
    assert b.dtype == pg.bool and b.tolist() == [[[[True, False, False], [False, False, True]]]]


# ------------------------------------------------------------------------------- misc
def test_channel_shuffle_checks(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^channel_shuffle expects input with > 2 dims, but got "
                       r"input with sizes \[2, 4\]$"):
        F.channel_shuffle(pg.ones(2, 4, device=device), 0)
    with pytest.raises(RuntimeError, match="^Number of groups to divide channels in must be "
                       "positive. Value of groups:-2$"):
        F.channel_shuffle(pg.ones(2, 4, 3, device=device), -2)
    with pytest.raises(RuntimeError, match="^Number of channels must be divisible by groups. Got "
                       "4 channels and 3 groups.$"):
        pg.nn.ChannelShuffle(3)(pg.ones(2, 4, 3, device=device))
    with pytest.raises(TypeError, match=r"channel_shuffle\(\): argument 'groups' \(position 2\) "
                       r"must be int, not float"):
        F.channel_shuffle(pg.ones(2, 4, 3, device=device), 2.0)
    x = pg.arange(4, device=device).reshape(1, 4, 1)
    assert F.channel_shuffle(x, 2).flatten().tolist() == [0, 2, 1, 3]


def test_one_hot_empty_needs_positive_count(device: str) -> None:
    empty = pg.zeros(0, dtype=pg.int64, device=device)
    for n in (0, -2):
        with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty"):
            F.one_hot(empty, n)
    assert F.one_hot(empty, 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(t(device, [1, 2]), 0)


def test_pdist_checks_and_p0_gradient(device: str) -> None:
    with pytest.raises(RuntimeError, match="^pdist only supports floating-point dtypes$"):
        F.pdist(t(device, [[1, 2], [3, 4]]), -1)  # before the p check
    with pytest.raises(RuntimeError, match="^pdist only supports non-negative p values$"):
        F.pdist(pg.ones(3, 2, device=device), -1)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(t(device, [1, 2]), -1)
    x = t(device, [[1., 2.], [1., 5.], [0., 1.]], grad=True)
    out = F.pdist(x, 0)
    assert out.tolist() == [1., 2., 2.]
    out.sum().backward()
    assert x.grad is not None and x.grad.tolist() == [[0., 0.], [0., 0.], [0., 0.]]
    try:
        x16 = pg.ones(3, 2, dtype=pg.float16, device=device)
    except pg.errors.DTypeError:
        pytest.skip("no float16 on this backend")
    if pg.device(device).type != "cpu":  # (PyTorch's CUDA kernels have 16-bit versions)
        assert F.pdist(x16).tolist() == [0.0, 0.0, 0.0]
        assert pg.cdist(x16, x16).shape == (3, 3)
        return
    with pytest.raises(NotImplementedError, match="\"pdist\" not implemented for 'Half'"):
        F.pdist(x16)
    with pytest.raises(NotImplementedError, match="\"cdist\" not implemented for 'Half'"):
        pg.cdist(x16, x16)


def test_cdist_checks(device: str) -> None:
    a, b = pg.ones(3, 2, device=device), pg.ones(4, 2, device=device)
    with pytest.raises(ValueError, match="^foo is not a valid value for compute_mode$"):
        pg.cdist(a, b, -1, "foo")  # first of all
    with pytest.raises(RuntimeError, match="^cdist only supports floating-point dtypes, X1 got: "
                       "Long$"):
        pg.cdist(a.long(), b, -1)
    with pytest.raises(RuntimeError, match="X2 got: Long$"):
        pg.cdist(a, b.long())
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        pg.cdist(a, b.double())
    with pytest.raises(RuntimeError, match="^cdist only supports non-negative p values$"):
        pg.cdist(a, b, -1)
    assert pg.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist").shape == (3, 4)


def test_embedding_checks(device: str) -> None:
    w = pg.arange(12.0, device=device).reshape(6, 2)
    for bad in (6, -7):
        with pytest.raises(AssertionError, match="^Padding_idx must be within num_embeddings$"):
            F.embedding(t(device, [1]), w, padding_idx=bad)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one "
                       "of the following scalar types: Long, Int; but got .*ByteTensor instead "
                       r"\(while checking arguments for embedding\)"):
        F.embedding(t(device, [1, 2], pg.uint8), w)
    wg = pg.arange(12.0, device=device).reshape(6, 2).requires_grad_()
    F.embedding(t(device, [1, 5, 1]), wg, padding_idx=-1).sum().backward()
    assert wg.grad.tolist() == [[0., 0.], [2., 2.], [0., 0.], [0., 0.], [0., 0.], [0., 0.]]


def test_embedding_bag_per_sample_weights_dtype(device: str) -> None:
    w = pg.ones(6, 3, device=device)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'weight' to have the "
                       "same type as tensor for argument #1 'per_sample_weights'; but type "
                       ".*FloatTensor does not equal .*LongTensor"):
        F.embedding_bag(t(device, [0, 2, 5, 1]), w, t(device, [0, 2]), mode="sum",
                        per_sample_weights=t(device, [1, 2, 3, 4]))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):  # first
        F.embedding_bag(t(device, [0, 2, 5, 1]), w, t(device, [0, 2]), mode="max",
                        per_sample_weights=t(device, [1, 2, 3, 4]))
    out = F.embedding_bag(t(device, [0, 2, 5, 1]), w, t(device, [0, 2]), mode="sum",
                          per_sample_weights=t(device, [1., 2., 3., 4.]))
    assert out.tolist() == [[3., 3., 3.], [7., 7., 7.]]


def test_one_hot_num_classes_type(device: str) -> None:
    with pytest.raises(TypeError, match=r"one_hot\(\): argument 'num_classes' \(position 2\) must "
                       r"be int, not float"):
        F.one_hot(t(device, [1, 2]), 3.0)


def test_normalize_out_resizes(device: str) -> None:
    out = pg.zeros(2, 3, device=device)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        got = F.normalize(t(device, [[3., 4.]]), dim=1, out=out)
    assert got is out and out.shape == (1, 2)
    close(out, [0.6, 0.8])


def test_embedding_index_out_of_range(device: str) -> None:
    w = pg.ones(3, 2, device=device)
    # (a device that checks indices when it runs the gather reports its own message later)
    msg = r"^index out of range in self$" if device == "cpu" else "out of"
    for kw in ({}, {"max_norm": 1.0}):
        with pytest.raises(IndexError, match=msg):
            F.embedding(t(device, [7]), w, **kw).tolist()
