"""The OpenCL backend's convolution and max-pool fast paths (``portagrad/backends/opencl/conv.py``).

The comparisons with the numpy backend are the conformance kit's (``portagrad.testing.
conformance.conv_checks``, which any backend's authors run); here they run on OpenCL devices only
(the ``device`` fixture's other devices skip) and twice: with the device's own kernel layout and
with the GPU-style one forced (``ew_style = "grid"``: one element per work-item and the
per-element gather kernels), so the GPU kernels are checked on PoCL too."""
from __future__ import annotations

import pytest

import portagrad as pg
from portagrad._ops.nn import conv as conv_node
from portagrad._ops.nn import pool as pool_node
from portagrad.testing.conformance import conv_checks as cc

METHODS = cc.CONV_METHODS + cc.POOL_METHODS


def _backend(device):
    return pg.empty(1, device=device)._storage.backend


@pytest.fixture(params=["native", "grid"])
def ocl(request, device, monkeypatch):
    """An OpenCL device (others skip), with its own kernel style or the GPU ("grid") style."""
    if pg.device(device).type != "opencl":
        pytest.skip("OpenCL-only test")
    if request.param == "grid":
        be = _backend(device)
        monkeypatch.setattr(be.device(pg.device(device).index or 0), "ew_style", "grid")
    return device


@pytest.fixture
def ocl64(ocl):
    """As ``ocl``, skipping a device without float64."""
    try:
        cc.need_fp64(ocl)
    except cc.NoFloat64 as exc:
        pytest.skip(str(exc))
    return ocl


def test_opencl_backend_has_the_fast_paths(ocl):
    from portagrad.backends.opencl.conv import ConvMixin

    be = _backend(ocl)
    for name in METHODS:
        assert getattr(be, name, None) is not None
        assert getattr(type(be), name) is getattr(ConvMixin, name)
    x = pg.randn(1, 1, 4, 4, device=ocl)
    assert conv_node.conv_fast_path(x) and pool_node.max_pool_fast_path(x)


# ------------------------------------------------------------------ convolution
@pytest.mark.parametrize("case", cc.CONV_CASES, ids=[str(i) for i in range(len(cc.CONV_CASES))])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_conv2d_matches_numpy_backend(ocl64, case, dtype):
    cc.check_conv2d_case(ocl64, case, dtype)


@pytest.mark.parametrize("stride,padding,dilation,groups",
                         [(1, 1, 1, 1), (2, 2, 2, 2), (3, 0, 1, 4)])
def test_conv1d_matches_numpy_backend(ocl64, stride, padding, dilation, groups):
    cc.check_conv1d(ocl64, stride, padding, dilation, groups)


def test_conv2d_empty_batch(ocl):
    cc.check_conv2d_empty_batch(ocl)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_gradcheck(ocl64, groups):
    cc.check_conv2d_gradcheck(ocl64, groups)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("case", [cc.CONV_CASES[2], cc.CONV_CASES[5], cc.CONV_CASES[8]],
                         ids=["groups", "depthwise", "dilated"])
def test_conv_methods_on_strided_views(ocl64, case, strided):
    """The contract allows strided inputs (and this backend accepts strided outputs too)."""
    cc.check_conv_methods(ocl64, case, strided)


# ------------------------------------------------------------------ max pooling
@pytest.mark.parametrize("case", cc.POOL_CASES, ids=[str(i) for i in range(len(cc.POOL_CASES))])
@pytest.mark.parametrize("kind", cc.POOL_KINDS)
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_max_pool2d_matches_numpy_backend(ocl64, case, kind, dtype):
    cc.check_max_pool2d_case(ocl64, case, kind, dtype)


def test_max_pool2d_rules(ocl64):
    cc.check_max_pool2d_rules(ocl64)


def test_max_pool1d_and_empty(ocl64):
    cc.check_max_pool1d_and_empty(ocl64)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_max_pool_methods_on_strided_views(ocl64, strided):
    cc.check_max_pool_methods(ocl64, strided)


def test_max_pool2d_gradcheck(ocl64):
    cc.check_max_pool2d_gradcheck(ocl64)
