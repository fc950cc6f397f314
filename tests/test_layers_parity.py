"""Convolution, normalisation and embedding layers (modules and ``nn.functional``) against
PyTorch 2.13: argument checks (exception types and messages), empty inputs, result dtypes and the
gradients PyTorch's legacy kernels give; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import pytest

import portagrad as pg
import portagrad.nn as nn
import portagrad.nn.functional as F


def t(device: str, data, dtype=None, requires_grad: bool = False):
    return pg.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def close(a, b, tol: float = 1e-5) -> bool:
    return all(abs(x - y) <= tol * (1 + abs(y)) for x, y in zip(a, b)) and len(a) == len(b)


# ------------------------------------------------------------------------------- convolution
def test_conv_bias_checks(device: str) -> None:
    x, w = pg.ones(2, 4, 6, 5, device=device), pg.ones(3, 4, 2, 2, device=device)
    # a bias of another size was read past (forward) or broke the backward
    with pytest.raises(RuntimeError, match=r"^Given weight of size \[3, 4, 2, 2\], expected bias "
                       r"to be 1-dimensional with 3 elements, but got bias of size \[4\] instead$"):
        F.conv2d(x, w, pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match=r"but got bias of size \[3, 1\] instead"):
        F.conv2d(x, w, pg.ones(3, 1, device=device))
    with pytest.raises(RuntimeError, match=r"^Input type \(float\) and bias type \(double\) should "
                       r"be the same$"):
        F.conv2d(x, w, pg.ones(3, dtype=pg.float64, device=device))
    with pytest.raises(RuntimeError, match=r"^Given weight of size \[3, 4, 2\], expected bias"):
        F.conv1d(pg.ones(2, 4, 6, device=device), pg.ones(3, 4, 2, device=device),
                 pg.ones(2, device=device))
    w2 = pg.ones(4, 2, 2, 2, device=device)
    with pytest.raises(RuntimeError, match=r"^Given transposed=1, weight of size \[4, 2, 2, 2\], "
                       r"expected bias to be 1-dimensional with 2 elements, but got bias of size "
                       r"\[3\] instead$"):
        F.conv_transpose2d(x, w2, pg.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"^Input type \(float\) and bias type \(double\)"):
        F.conv_transpose2d(x, w2, pg.ones(2, dtype=pg.float64, device=device))


def test_conv_argument_checks(device: str) -> None:
    x, w = pg.ones(2, 4, 6, 5, device=device), pg.ones(3, 4, 2, 2, device=device)
    with pytest.raises(RuntimeError, match="^padding='same' is not supported for strided "
                       "convolutions$"):
        F.conv2d(x, w, None, 2, "same")
    with pytest.raises(RuntimeError, match=r"^Invalid padding string: 'full'$"):
        F.conv2d(x, w, None, 1, "full")
    with pytest.raises(RuntimeError, match=r"^expected stride to be a single integer value or a "
                       r"list of 2 values to match the convolution dimensions, but got "
                       r"stride=\[1, 1, 1\]$"):
        F.conv2d(x, w, None, (1, 1, 1))
    with pytest.raises(RuntimeError, match=r"but got padding=\[1, 1, 1\]$"):
        F.conv2d(x, w, None, 1, (1, 1, 1))
    with pytest.raises(RuntimeError, match=r"^dilation should be greater than zero$"):
        F.conv2d(x, w, None, 1, "same", -1)  # before 'same' sizes a padding with it
    with pytest.raises(RuntimeError, match=r"^expected stride to be a single integer value or a "
                       r"list of 1 values to match the convolution dimensions, but got "
                       r"stride=\[1, 1\]$"):
        F.conv2d(x, pg.ones(3, 4, 2, device=device))
    with pytest.raises(RuntimeError, match=r"^Expected 4-dimensional input for 4-dimensional "
                       r"weight \[3, 4, 2, 2\], but got 3-dimensional input of size \[2, 4, 5\] "
                       r"instead$"):
        F.conv1d(pg.ones(2, 4, 5, device=device), w)
    with pytest.raises(RuntimeError, match=r"^Given groups=2, expected weight to be divisible by "
                       r"2 at dimension 0, but got weight of size \[\[3, 4, 2, 2\]\] instead$"):
        F.conv2d(x, w, groups=2)
    with pytest.raises(RuntimeError, match=r"^Given groups=1, expected weight to be at least 1 at "
                       r"dimension 0, but got weight of size \[0, 4, 2, 2\] instead$"):
        F.conv2d(x, pg.ones(0, 4, 2, 2, device=device))
    # an asymmetric 'same' pads the odd pixel first: the message shows the padded input
    with pytest.raises(RuntimeError, match=r"expected input\[2, 4, 7, 6\] to have 12 channels"):
        F.conv2d(x, w, None, 1, "same", 1, 3)


def test_conv_transpose_checks(device: str) -> None:
    x, w = pg.ones(2, 4, 6, 5, device=device), pg.ones(4, 2, 2, 2, device=device)
    with pytest.raises(RuntimeError, match=r"^Expected 3D \(unbatched\) or 4D \(batched\) input to "
                       r"conv_transpose2d, but got input of size: \[2, 4, 1, 6, 5\]$"):
        F.conv_transpose2d(pg.ones(2, 4, 1, 6, 5, device=device), w)
    with pytest.raises(RuntimeError, match=r"^Expected 2D \(unbatched\) or 3D \(batched\) input to "
                       r"conv_transpose1d, but got input of size: \[5\]$"):
        F.conv_transpose1d(pg.ones(5, device=device), pg.ones(4, 2, 2, device=device))
    with pytest.raises(RuntimeError, match="^weight should have at least three dimensions$"):
        F.conv_transpose2d(x, pg.ones(4, 2, device=device))
    with pytest.raises(RuntimeError, match=r"list of 1 values to match the convolution "
                       r"dimensions, but got stride=\[2, 2\]$"):
        F.conv_transpose2d(x, pg.ones(4, 2, 2, device=device), stride=2)
    with pytest.raises(RuntimeError, match=r"^Given groups=3, expected weight to be divisible by "
                       r"3 at dimension 0, but got weight of size \[\[4, 2, 2, 2\]\] instead$"):
        F.conv_transpose2d(x, w, groups=3)
    for g in (0, -1):
        with pytest.raises(RuntimeError, match="^non-positive groups is not supported$"):
            F.conv_transpose2d(x, w, groups=g)
    with pytest.raises(TypeError, match=r"argument 'padding' \(position 5\) must be tuple of ints, "
                       r"not str"):
        F.conv_transpose2d(x, w, None, 1, "same")
    with pytest.raises(NotImplementedError, match="\"slow_conv_transpose2d_out_cpu\" not "
                       "implemented for 'Int'"):
        F.conv_transpose1d(pg.ones(2, 4, 5, dtype=pg.int32, device=device),
                           pg.ones(4, 2, 2, dtype=pg.int32, device=device))
    # the messages count 1-D as 2-D of height 1, and 3-D with a depth
    with pytest.raises(RuntimeError, match=r"^output padding must be smaller than either stride or "
                       r"dilation, but got output_padding_height: 0 output_padding_width: 1 "
                       r"stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1$"):
        F.conv_transpose1d(pg.ones(2, 4, 5, device=device), pg.ones(4, 2, 2, device=device),
                           None, 1, 0, 1)
    with pytest.raises(RuntimeError, match=r"but got output_padding_depth: 0 output_padding_height: "
                       r"0 output_padding_width: 1 stride_depth: 1 stride_height: 1 stride_width: 1 "
                       r"dilation_depth: 1 dilation_height: 1 dilation_width: 1$"):
        F.conv_transpose3d(pg.ones(2, 4, 5, 5, 5, device=device),
                           pg.ones(4, 2, 2, 2, 2, device=device), None, 1, 0, (0, 0, 1))


def test_conv_transpose_empty_output(device: str) -> None:
    # an output size of 0 is an empty result, not an error
    y = F.conv_transpose2d(pg.ones(2, 4, 1, 1, device=device), pg.ones(4, 2, 2, 2, device=device),
                           None, 1, 1)
    assert tuple(y.shape) == (2, 2, 0, 0)
    y = F.conv_transpose1d(pg.ones(2, 4, 1, device=device), pg.ones(4, 2, 2, device=device),
                           None, 1, 1)
    assert tuple(y.shape) == (2, 2, 0)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose2d(pg.ones(2, 4, 1, 1, device=device), pg.ones(4, 2, 2, 2, device=device),
                           None, 1, 2)


def test_conv_same_values(device: str) -> None:
    x = pg.arange(12., device=device).reshape(1, 2, 6) / 4
    w = t(device, [[[1., -1., 0.5], [0.25, 2., -1.]]])
    y = F.conv1d(x, w, padding="same")
    assert close(y.flatten().tolist(), [1.375, 1.875, 2.3125, 2.75, 3.1875, 5.875])


def test_conv_module_padding_and_output_size(device: str) -> None:
    assert nn.Conv2d(4, 6, 3, padding=(1, 2))._reversed_padding_repeated_twice == (2, 2, 1, 1)
    assert nn.Conv1d(4, 6, 4, padding="same")._reversed_padding_repeated_twice == [1, 2]
    m = nn.ConvTranspose2d(4, 6, 3, stride=2).to(device)
    x = pg.ones(2, 4, 5, 5, device=device)
    assert tuple(m(x, output_size=(2, 6, 12, 12)).shape) == (2, 6, 12, 12)
    with pytest.raises(ValueError, match=r"^requested an output size of \(13, 12\), but valid "
                       r"sizes range from \[11, 11\] to \[12, 12\]"):
        m(x, output_size=(13, 12))
    with pytest.raises(ValueError, match=r"^requested an output size of \[13, 12\]"):
        m(x, output_size=[2, 6, 13, 12])
    with pytest.raises(ValueError, match=r"^ConvTranspose2D: for 4D input, output_size must have 2 "
                       r"or 4 elements \(got 1\)$"):
        m(x, output_size=(12,))
    with pytest.raises(ValueError, match=r"^ConvTranspose2D: for 3D input, output_size must have 2 "
                       r"or 3 elements \(got 4\)$"):
        m(pg.ones(4, 5, 5, device=device), output_size=(2, 2, 12, 11))
    m1 = nn.ConvTranspose1d(4, 6, 3, stride=2).to(device)
    # an unbatched input: one leading size is dropped
    assert tuple(m1(pg.ones(4, 5, device=device), output_size=[13, 12]).shape) == (6, 12)
    with pytest.raises(RuntimeError, match=r"^Expected 3D \(unbatched\) or 4D \(batched\) input to "
                       r"conv_transpose2d, but got input of size: \[5, 5\]$"):
        m(pg.ones(5, 5, device=device))


# ------------------------------------------------------------------------------- normalisation
def test_batch_norm_checks(device: str) -> None:
    x = pg.ones(4, 3, 5, device=device)
    rm, rv = pg.zeros(3, device=device), pg.ones(3, device=device)
    with pytest.raises(ValueError, match="^running_mean and running_var must either both be None "
                       "or neither be None$"):
        F.batch_norm(x, rm, None, training=True)
    with pytest.raises(RuntimeError, match="^running_var must be defined in evaluation mode$"):
        F.batch_norm(x, rm, None)
    with pytest.raises(RuntimeError, match="^running_mean should contain 3 elements not 4$"):
        F.batch_norm(x, pg.zeros(4, device=device), rv)
    with pytest.raises(RuntimeError, match="^weight should contain 3 elements not 4$"):
        F.batch_norm(x, rm, rv, pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match="^bias should contain 3 elements not 4$"):
        F.batch_norm(x, None, None, None, pg.ones(4, device=device), True)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of "
                       r"\[-1, 0\], but got 1\)$"):
        F.batch_norm(pg.ones(3, device=device), None, None, training=True)
    with pytest.raises(NotImplementedError, match="\"batch_norm\" not implemented for 'Long'"):
        F.batch_norm(x.long(), rm, rv)
    with pytest.raises(RuntimeError, match="^running_mean should contain 4 elements not 3$"):
        nn.BatchNorm1d(3, affine=False).to(device)(pg.ones(2, 4, device=device))
    # a (1, C) weight holds C elements: taken
    y = F.batch_norm(x, rm, rv, pg.full((1, 3), 2., device=device), eps=0.)
    assert y.flatten().tolist()[:3] == [2., 2., 2.]


def test_batch_norm_empty_batch(device: str) -> None:
    rm, rv = t(device, [1., 2., 3.]), t(device, [2., 3., 4.])
    y = F.batch_norm(pg.ones(0, 3, 2, device=device), rm, rv, training=True)
    assert tuple(y.shape) == (0, 3, 2)
    assert rm.tolist() == [1., 2., 3.] and rv.tolist() == [2., 3., 4.]
    m = nn.BatchNorm2d(3).to(device)
    assert tuple(m(pg.ones(0, 3, 2, 2, device=device)).shape) == (0, 3, 2, 2)
    assert m.num_batches_tracked.item() == 1 and m.running_var.tolist() == [1., 1., 1.]


def test_instance_norm_checks(device: str) -> None:
    with pytest.raises(ValueError, match=r"^Expected more than 1 spatial element when training, "
                       r"got input size portagrad.Size\(\[2, 3, 1\]\)$"):
        F.instance_norm(pg.ones(2, 3, 1, device=device))
    with pytest.raises(ValueError, match=r"got input size portagrad.Size\(\[1, 3, 1\]\)$"):
        nn.InstanceNorm1d(3).to(device)(pg.ones(3, 1, device=device))
    # without input statistics one spatial element is fine
    y = F.instance_norm(pg.ones(2, 3, 1, device=device), pg.zeros(3, device=device),
                        pg.ones(3, device=device), use_input_stats=False)
    assert tuple(y.shape) == (2, 3, 1)
    x = pg.ones(4, 3, 5, device=device)
    with pytest.raises(ValueError, match="must either both be None or neither be None"):
        F.instance_norm(x, pg.zeros(3, device=device))
    with pytest.raises(RuntimeError, match="^Expected running_mean and running_var to be defined "
                       "when use_input_stats is false$"):
        F.instance_norm(x, use_input_stats=False)
    with pytest.raises(RuntimeError, match="^weight should contain 12 elements not 16$"):
        F.instance_norm(x, weight=pg.ones(4, device=device))
    with pytest.raises(ValueError, match=r"^expected input's size at dim=1 to match num_features "
                       r"\(4\), but got: 3.$"):
        nn.InstanceNorm2d(4, affine=True).to(device)(pg.ones(2, 3, 4, 5, device=device))
    with pytest.raises(ValueError, match=r"size at dim=0 to match num_features \(4\), but got: 3"):
        nn.InstanceNorm1d(4, affine=True).to(device)(pg.ones(3, 5, device=device))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        y = nn.InstanceNorm2d(4).to(device)(pg.randn(2, 3, 4, 5, device=device))
    assert tuple(y.shape) == (2, 3, 4, 5)


def test_group_norm_checks(device: str) -> None:
    x = pg.ones(4, 3, 5, device=device)
    with pytest.raises(RuntimeError, match=r"^Expected weight to be a vector of size equal to the "
                       r"number of channels in input, but got weight of shape \[6\] and input of "
                       r"shape \[2, 4, 3\]$"):
        nn.GroupNorm(2, 6).to(device)(pg.ones(2, 4, 3, device=device))
    # (PyTorch's bias message shows the weight's shape)
    with pytest.raises(RuntimeError, match=r"^Expected bias to be a vector of size equal to the "
                       r"number of channels in input, but got bias of shape \[3\] and input of "
                       r"shape \[4, 3, 5\]$"):
        F.group_norm(x, 3, pg.ones(3, device=device), pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match=r"but got bias of shape \[0\]"):
        F.group_norm(x, 3, None, pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match=r"^Expected num groups to be greater than 0, got -1$"):
        F.group_norm(x, -1)
    with pytest.raises(ZeroDivisionError, match="^integer division or modulo by zero$"):
        F.group_norm(x, 0)
    with pytest.raises(NotImplementedError, match="\"GroupNormKernelImpl\" not implemented for "
                       "'Long'"):
        F.group_norm(x.long(), 3)
    assert tuple(F.group_norm(pg.ones(0, 6, 3, device=device), 2).shape) == (0, 6, 3)
    assert tuple(nn.GroupNorm(2, 6).to(device)(pg.ones(0, 6, device=device)).shape) == (0, 6)


def test_layer_and_rms_norm_checks(device: str) -> None:
    x = pg.ones(4, 3, 5, device=device)
    with pytest.raises(RuntimeError, match=r"^Expected weight to be of same shape as "
                       r"normalized_shape, but got weight of shape \[1, 5\] and normalized_shape = "
                       r"\[5\]$"):
        F.layer_norm(x, (5,), pg.ones(1, 5, device=device))
    with pytest.raises(RuntimeError, match=r"^Expected bias to be of same shape as "
                       r"normalized_shape, but got bias of shape \[4\]"):
        F.layer_norm(x, (5,), None, pg.ones(4, device=device))
    for fn in (F.layer_norm, F.rms_norm):
        with pytest.raises(RuntimeError, match=r"^Expected normalized_shape to be at least "
                           r"1-dimensional, i.e., containing at least one element, but got "
                           r"normalized_shape = \[\]$"):
            fn(x, ())
    with pytest.raises(NotImplementedError, match="\"LayerNormKernelImpl\" not implemented"):
        F.layer_norm(x.long(), (5,))
    # rms_norm once normalised over the wrong dims silently
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[6\], expected input with "
                       r"shape \[\*6\], but got input of size\[4, 3, 5\]$"):
        F.rms_norm(x, (6,))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*2, 3, 5\]"):
        F.rms_norm(x, (2, 3, 5))
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[4\], expected input with "
                       r"shape \[\*4\]"):
        nn.RMSNorm(4).to(device)(pg.ones(2, 5, device=device))
    with pytest.raises(ValueError, match="^Input tensor must have at least 4 dimensions, but got 3$"):
        F.rms_norm(x, (4, 3, 5, 1))
    with pytest.raises(RuntimeError, match=r"^Expected weight to be of same shape as "
                       r"normalized_shape, but got weight of shape \[4\] and normalized_shape = "
                       r"\[5\]$"):
        F.rms_norm(x, (5,), pg.ones(4, device=device))
    with pytest.raises(NotImplementedError, match="\"rms_norm\" not implemented for 'Long'"):
        F.rms_norm(x.long(), (5,))


def test_rms_norm_keeps_input_dtype(device: str) -> None:
    x = pg.arange(8., device=device).reshape(2, 4)
    try:
        w = t(device, [1., 2., 3., 4.], pg.float64)
    except pg.errors.DTypeError:
        pytest.skip("no float64 on this backend")
    y = F.rms_norm(x, (4,), w)
    assert y.dtype == pg.float32
    assert close(y.flatten().tolist(), [0., 1.0690449, 3.2071347, 6.4142694,
                                        0.7126967, 1.7817416, 3.2071352, 4.9888768])


def test_local_response_norm_checks(device: str) -> None:
    with pytest.raises(ValueError, match=r"^Expected 3D or higher dimensionality {26}input \(got 2 "
                       r"dimensions\)$"):
        F.local_response_norm(pg.ones(2, 5, device=device), 2)
    with pytest.raises(ValueError, match=r"input \(got 1 dimensions\)$"):
        nn.LocalResponseNorm(2)(pg.ones(5, device=device))
    for shape in ((0, 3, 2), (2, 0, 2), (2, 3, 0)):
        assert tuple(F.local_response_norm(pg.ones(*shape, device=device), 2).shape) == shape


def test_cross_map_lrn2d_forward(device: str) -> None:
    # PyTorch's values; its legacy backward sums over channel windows shifted from the forward's
    # (not the derivative of its forward), which portagrad does not copy: its gradient is the
    # exact one (gradcheck in test_nn_parity.py)
    m = nn.CrossMapLRN2d(3, alpha=0.1, beta=0.6, k=2.)
    x = (pg.arange(5., device=device) - 2).reshape(1, 5, 1, 1)
    y = m(x)
    assert close(y.flatten().tolist(), [-1.2576354, -0.6288177, 0., 0.6066850, 1.2133701])


# ------------------------------------------------------------------------------- embedding_bag
def test_embedding_bag_offsets_dtype(device: str) -> None:
    w = pg.ones(10, 3, device=device)
    with pytest.raises(RuntimeError, match=r"^Expected tensor for argument #1 'indices' to have one "
                       r"of the following scalar types: Long, Int; but got portagrad.FloatTensor "
                       r"instead \(while checking arguments for embedding_bag\)$"):
        F.embedding_bag(t(device, [1, 2, 3]), w, t(device, [0., 2.]))
    out = F.embedding_bag(t(device, [1, 2, 3]), w, t(device, [0, 2], pg.int32), mode="sum")
    assert out.tolist() == [[2., 2., 2.], [1., 1., 1.]]
