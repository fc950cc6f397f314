"""PyTorch's argument checks (exception types and messages) and result dtypes for ``index_add``,
``masked_select``, ``put_``, ``histc``, ``histogram``, ``bincount``, ``searchsorted`` and
``diff``; expected values are PyTorch 2.13's, written out."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

NAN, INF = math.nan, math.inf


def t(device: str, data, dtype=None):
    return pg.tensor(data, dtype=dtype, device=device)


# ------------------------------------------------------------------------------- index_add
def test_index_add_source_shape(device: str) -> None:
    z = pg.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"source tensor shape must match self tensor shape, "
                       r"excluding the specified dimension. Got self.shape = \[3, 4\] "
                       r"source.shape = \[2, 3\]"):
        pg.index_add(z, 0, t(device, [0, 1]), pg.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"source.shape = \[2, 4, 1\]"):
        pg.index_add(z, 0, t(device, [0, 1]), pg.ones(2, 4, 1, device=device))
    with pytest.raises(RuntimeError, match=r"source.shape = \[4\]"):
        pg.index_add(z, 0, t(device, [0, 1, 2, 0]), pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match=r"Got self.shape = \[3\] source.shape = \[\]"):
        pg.index_add(pg.zeros(3, device=device), 0, t(device, [0]), pg.ones((), device=device))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Number of indices \(1\) should be "
                       r"equal to source.size\(dim\): \(2\), for dim: 0"):
        pg.index_add(z, 0, t(device, [0]), pg.ones(2, 4, device=device))
    with pytest.raises(RuntimeError, match=r"Number of indices \(1\)"):  # before the shape
        pg.index_add(z, 0, t(device, [0]), pg.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="source tensor shape must match"):  # before the range
        pg.index_add(z, 0, t(device, [5, 1]), pg.ones(2, 3, device=device))


def test_index_add_dtypes(device: str) -> None:
    z = pg.zeros(2, 2, dtype=pg.int64, device=device)
    src = pg.ones(1, 2, device=device)
    msg = r"index_add_\(\): self \(Long\) and source \(Float\) must have the same scalar type"
    with pytest.raises(RuntimeError, match=msg):
        pg.index_add(z, 0, t(device, [0]), src)
    with pytest.raises(RuntimeError, match=msg):
        z.index_add_(0, t(device, [0]), src)
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Double\)"):
        pg.index_add(pg.zeros((), device=device), 0, t(device, [0]),
                     pg.ones((), dtype=pg.float64, device=device))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Expected dtype int32/int64 for "
                       r"index but got: Float"):
        pg.index_add(pg.zeros(3, 2, device=device), 0, t(device, [0.]), src)
    with pytest.raises(IndexError, match=r"index_add_\(\): Index is supposed to be a vector, but "
                       r"got dim: 2 with type: Long and size: \[1, 1\]"):
        pg.index_add(pg.zeros(3, 2, device=device), 0, t(device, [[0]]), src)
    out = pg.index_add(pg.zeros(3, 2, device=device), 0, t(device, [0], pg.int32), src)
    assert out.tolist() == [[1., 1.], [0., 0.], [0., 0.]]


def test_index_add_out_of_range(device: str) -> None:
    src = pg.ones(1, 2, device=device)
    z = pg.zeros(3, 2, device=device)
    for idx, alpha in (([3], 2), ([-1], 2), ([3], True)):
        with pytest.raises(IndexError, match="^index out of range in self$"):
            pg.index_add(z, 0, t(device, idx), src, alpha=alpha)
    with pytest.raises(IndexError, match="^index out of range in self$"):  # 1-D: any alpha
        pg.index_add(pg.zeros(3, device=device), 0, t(device, [3]), pg.ones(1, device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        pg.index_add(pg.zeros(3, device=device), 0, t(device, [-1]), pg.ones(1, device=device))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        pg.index_add(z, 0, t(device, [3]), src)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        pg.index_add(z, 0, t(device, [3]), src, alpha=1.0)


def test_index_add_values(device: str) -> None:
    out = pg.index_add(pg.zeros(3, 2, device=device), 0, t(device, [0, 2, 0]),
                       t(device, [[1., 2.], [3., 4.], [5., 6.]]), alpha=2)
    assert out.tolist() == [[12., 16.], [0., 0.], [6., 8.]]
    out = pg.index_add(pg.zeros(2, 3, device=device), 1, t(device, [2, 0]),
                       t(device, [[1., 2.], [3., 4.]]))
    assert out.tolist() == [[2., 0., 1.], [4., 0., 3.]]
    out = pg.index_add(pg.zeros((), device=device), 0, t(device, [0]), pg.ones((), device=device))
    assert out.tolist() == 1.0


# ------------------------------------------------------------------------------- masked_select
@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32"])
def test_masked_select_needs_bool_mask(device: str, dtype: str) -> None:
    x = t(device, [1., 2., 3.])
    mask = t(device, [1, 0, 1], getattr(pg, dtype))
    with pytest.raises(RuntimeError, match="^masked_select: expected BoolTensor for mask$"):
        pg.masked_select(x, mask)
    with pytest.raises(RuntimeError, match="^masked_select: expected BoolTensor for mask$"):
        x.masked_select(mask)
    out = pg.masked_select(t(device, [[1., 2., 3.]]), t(device, [[True], [False]]))
    assert out.tolist() == [1., 2., 3.]


# ------------------------------------------------------------------------------- put_
def test_put_checks(device: str) -> None:
    z = pg.zeros(3, device=device)
    f64 = t(device, [5.5], pg.float64)
    msg = (r"put_\(\): self and source expected to have the same dtype, but got self.dtype = "
           r"Float and source.dtype = Double")
    with pytest.raises(RuntimeError, match=msg):
        z.put_(t(device, [0]), f64)
    with pytest.raises(RuntimeError, match=msg):
        z.put_(t(device, [0]), f64, accumulate=True)
    with pytest.raises(RuntimeError, match=msg):
        pg.put(z, t(device, [0]), f64)
    with pytest.raises(RuntimeError, match=r"self.dtype = Float and source.dtype = Long"):
        z.put_(t(device, [0, 1]), t(device, [1]))  # before the count
    with pytest.raises(IndexError, match=r"put_\(\): Expected source and index to have the same "
                       r"number of elements, but got source.numel\(\) = 3, index.numel\(\) = 2"):
        z.put_(t(device, [0, 1]), t(device, [1., 2., 3.]))
    with pytest.raises(RuntimeError, match=r"put_\(\): Expected a long tensor for index, but got "
                       r"Float"):
        z.put_(t(device, [0.]), f64)
    assert z.tolist() == [0., 0., 0.]
    out = pg.zeros(2, 2, device=device).put_(t(device, [[0, 3], [0, -1]]),
                                             t(device, [1., 2., 3., 4.]), accumulate=True)
    assert out.tolist() == [[4., 0.], [0., 6.]]


# ------------------------------------------------------------------------------- histc
@pytest.mark.parametrize("data, lo, hi, shown", [
    ([1., NAN, 2.], 0, 0, r"\[-?nan, -?nan\]"),
    ([1., INF, 2.], 0, 0, r"\[1, inf\]"),
    ([1., -INF, 2.], 0, 0, r"\[-inf, 2\]"),
    ([1., 2.], 0, INF, r"\[0, inf\]"),
    ([1., 2.], NAN, 3, r"\[nan, 3\]"),
    ([1., 2.], INF, 0., r"\[inf, 0\]"),
])
def test_histc_range_not_finite(device: str, data, lo, hi, shown) -> None:
    with pytest.raises(RuntimeError, match=r"torch.histc: range of " + shown + " is not finite"):
        pg.histc(t(device, data), bins=3, min=lo, max=hi)


def test_histc_values(device: str) -> None:
    with pytest.raises(RuntimeError, match="^torch.histc: max must be larger than min$"):
        pg.histc(t(device, [1., 2.]), 4, min=2.5, max=0.25)
    assert pg.histc(t(device, [1., NAN, 2.]), bins=3, min=0, max=3).tolist() == [0., 1., 1.]
    assert pg.histc(t(device, [1., 2., 1., 4.]), 4).tolist() == [2., 1., 0., 1.]
    assert pg.histc(t(device, [1., 1.]), 4).tolist() == [0., 0., 2., 0.]


# ------------------------------------------------------------------------------- histogram
def test_histogram_range_checks(device: str) -> None:
    x = t(device, [1., 2.])
    with pytest.raises(RuntimeError, match=r"torch.histogramdd: min should not exceed max, but "
                       r"got min 3 max 0 for dimension 0"):
        pg.histogram(x, 4, range=(3., 0.))
    with pytest.raises(RuntimeError, match=r"min 2.5 max 0.25 for dimension 0"):
        pg.histogram(x, 4, range=(2.5, 0.25))
    with pytest.raises(RuntimeError, match=r"torch.histogramdd: dimension 0's range \[nan, nan\] "
                       r"is not finite"):
        pg.histogram(t(device, [1., NAN]), 3)
    with pytest.raises(RuntimeError, match=r"dimension 0's range \[1, inf\] is not finite"):
        pg.histogram(t(device, [1., INF]), 3)
    with pytest.raises(RuntimeError, match=r"dimension 0's range \[nan, 0\] is not finite"):
        pg.histogram(x, 4, range=(NAN, 0.))
    with pytest.raises(RuntimeError, match=r"dimension 1's range \[nan, nan\] is not finite"):
        pg.histogramdd(t(device, [[1., NAN]]), 3)
    hist, edges = pg.histogram(t(device, [1., NAN]), 3, range=(0., 2.))
    assert hist.tolist() == [0., 1., 0.]


def test_histogram_dtype_checks(device: str) -> None:
    x = t(device, [1., 2.])
    with pytest.raises(RuntimeError, match=r"torch.histogramdd: input tensor and bins tensors "
                       r"should have the same dtype, but got input with dtype float and bins for "
                       r"dimension 0 with dtype double"):
        pg.histogram(x, t(device, [0., 1., 4.], pg.float64))
    with pytest.raises(RuntimeError, match=r"bins for dimension 0 with dtype long int"):
        pg.histogram(x, t(device, [0, 1, 4]))
    with pytest.raises(RuntimeError, match=r"torch.histogramdd: if weight tensor is provided, "
                       r"input tensor and weight tensor should have the same dtype, but got "
                       r"input\(float\), and weight\(double\)"):
        pg.histogram(x, 3, weight=t(device, [1., 1.], pg.float64))
    with pytest.raises(NotImplementedError, match="\"histogramdd\" not implemented for 'Long'"):
        pg.histogram(t(device, [1, 2, 3]), 3)
    hist, edges = pg.histogram(t(device, [1., 2., 2.5]), 3, weight=t(device, [1., 2., 3.]))
    assert hist.tolist() == [1., 0., 5.] and edges.tolist() == [1., 1.5, 2., 2.5]
    hist, edges = pg.histogram(t(device, [1., NAN, 2.]), t(device, [0., 1., 4.]))
    assert hist.tolist() == [0., 2.]


# ------------------------------------------------------------------------------- bincount
@pytest.mark.parametrize("wdtype, expect", [
    ("float16", "float64"), ("bfloat16", "float64"), ("float32", "float32"),
    ("float64", "float64"), ("int64", "float64"), ("bool", "float64"),
])
def test_bincount_weights_dtype(device: str, wdtype: str, expect: str) -> None:
    try:
        w = t(device, [1, 1, 1]).to(getattr(pg, wdtype))
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no 16-bit floats)
        pytest.skip(f"{device} declines {wdtype} (DTypeError)")
    out = pg.bincount(t(device, [0, 1, 1]), weights=w)
    assert out.dtype is getattr(pg, expect)
    assert out.tolist() == [1., 2.]


def test_bincount_checks(device: str) -> None:
    for data, dtype, name in (([0., 1.], None, "Float"), ([0., 1.], pg.float16, "Half"),
                              ([True, False], None, "Bool"), ([[0., 1.]], None, "Float")):
        try:
            x = t(device, data, dtype)
        except pg.errors.DTypeError:  # (a backend over array-api-strict has no float16)
            continue
        with pytest.raises(NotImplementedError,
                           match=f"^\"bincount_cpu\" not implemented for '{name}'$"):
            pg.bincount(x)
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral"):
        pg.bincount(t(device, [[0, 1]]))
    out = pg.bincount(t(device, [], pg.int64), weights=t(device, [], pg.float32))
    assert out.dtype is pg.int64 and out.tolist() == []
    assert pg.bincount(t(device, [2, 0]), minlength=4).tolist() == [1, 0, 1, 0]


# ------------------------------------------------------------------------------- searchsorted
def test_searchsorted_sorter_checks(device: str) -> None:
    seq, v = t(device, [3., 1., 2.]), t(device, [1.5])
    with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): sorter must be a tensor of "
                       r"long dtype but got dtype Int"):
        pg.searchsorted(seq, v, sorter=t(device, [1, 2, 0], pg.int32))
    with pytest.raises(RuntimeError, match=r"dtype Float"):
        pg.searchsorted(seq, v, sorter=t(device, [1., 2., 0.]))
    with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): boundary and sorter must "
                       r"have the same size, but got boundary tensor \[3\]and got sorter tensor "
                       r"\[2\]"):
        pg.searchsorted(seq, v, sorter=t(device, [1, 2], pg.int32))  # size first
    with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): sorter index out of range"):
        pg.searchsorted(seq, v, sorter=t(device, [1, 2, 3]))
    with pytest.raises(RuntimeError, match=r"sorter index out of range"):
        pg.searchsorted(seq, v, sorter=t(device, [1, 2, -1]))
    out = pg.searchsorted(seq, t(device, [1.5, 3., 0.]), sorter=t(device, [1, 2, 0]), right=True)
    assert out.tolist() == [1, 3, 0]


def test_searchsorted_boundaries_dims(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"torch.searchsorted\(\): boundaries tensor should "
                       r"have positive dimension, but got 0 dimension"):
        pg.searchsorted(t(device, 1.), t(device, [0., 2.]))
    msg = (r"torch.searchsorted\(\): input value can be a scalar only when boundaries tensor "
           r"dimension is 1, but we got boundaries tensor dim\({}\) and input value's dim\(0\) "
           r"numel\(1\)")
    with pytest.raises(RuntimeError, match=msg.format(0)):
        pg.searchsorted(t(device, 1.), 2.)
    with pytest.raises(RuntimeError, match=msg.format(0)):
        pg.searchsorted(t(device, 1.), t(device, 2.))
    with pytest.raises(RuntimeError, match=msg.format(2)):
        pg.searchsorted(t(device, [[1., 2.]]), 2.)
    assert pg.searchsorted(t(device, [1., 2., 3.]), t(device, 2.5)).tolist() == 2
    assert pg.searchsorted(t(device, [[1., 2., 3.], [0., 5., 6.]]), t(device, [[2.5], [5.]]),
                           side="right").tolist() == [[2], [2]]


# ------------------------------------------------------------------------------- diff
def test_diff_prepend_append_checks(device: str) -> None:
    z = pg.zeros(2, 3, device=device)
    msg = "^diff expects prepend or append to be the same dimension as input$"
    with pytest.raises(RuntimeError, match=msg):
        pg.diff(z, prepend=t(device, [1., 2., 3.]))
    with pytest.raises(RuntimeError, match=msg):
        pg.diff(z, append=t(device, [1., 2., 3.]))
    with pytest.raises(RuntimeError, match=msg):
        pg.diff(t(device, [1., 2.]), prepend=t(device, 1.))
    with pytest.raises(RuntimeError, match=r"diff expects the shape of tensor to prepend or append "
                       r"to match that of input except along the differencing dimension; "
                       r"input.size\(0\) = 2, but got tensor.size\(0\) = 3"):
        pg.diff(z, prepend=pg.zeros(3, 3, device=device))
    x = t(device, [1., 2.])
    for kw, shown in (({"prepend": 5.}, "'prepend' must be Tensor, not float"),
                      ({"append": 5.}, "'append' must be Tensor, not float"),
                      ({"prepend": [5.]}, "'prepend' must be Tensor, not list"),
                      ({"prepend": 1}, "'prepend' must be Tensor, not int")):
        with pytest.raises(TypeError, match=r"diff\(\): argument " + shown):
            pg.diff(x, **kw)
    with pytest.raises(TypeError, match=r"'prepend' must be Tensor, not float"):
        x.diff(prepend=5.)
    with pytest.raises(TypeError, match=r"'prepend' must be Tensor"):  # before the 0-d check
        pg.diff(t(device, 1.), prepend=5.)
    out = pg.diff(t(device, [[1., 2., 4.], [0., 0., 1.]]), n=2, dim=1,
                  prepend=t(device, [[1.], [2.]]), append=t(device, [[0.], [0.]]))
    assert out.tolist() == [[1., 1., -6.], [2., 1., -2.]]
    assert pg.diff(t(device, [1., 4.]), prepend=t(device, [1])).tolist() == [0., 3.]


# --------------------------------------------------------- scatter/gather family messages
def test_scatter_family_messages(device: str) -> None:
    """PyTorch 2.13's words for the scatter/gather family's shape errors, and its 'max'/'min'
    aliases of scatter_reduce's amax/amin."""
    z = pg.zeros(2, 2, device=device)
    bad = pg.zeros(3, 1, dtype=pg.int64, device=device)
    with pytest.raises(RuntimeError, match=r"^Size does not match at dimension 0 expected index "
                       r"\[3, 1\] to be no larger than self \[2, 2\] apart from dimension 1$"):
        z.gather(1, bad)
    with pytest.raises(RuntimeError, match=r"^Expected index \[3, 1\] to be no larger than self "
                       r"\[2, 2\] apart from dimension 1 and to be no larger size than src "
                       r"\[3, 1\]$"):
        z.scatter_reduce(1, bad, pg.ones(3, 1, device=device), "sum")
    with pytest.raises(RuntimeError, match=r"^Number of elements of source < number of ones in "
                       r"mask$"):
        pg.zeros(4, device=device).masked_scatter(t(device, [True, True, True, False]),
                                                  t(device, [7.0, 8.0]))
    with pytest.raises(RuntimeError, match=r"^expected src to have a size equal to the slice of "
                       r"self\. src size = \[3\], slice size = \[2\]$"):
        pg.zeros(4, device=device).slice_scatter(pg.ones(3, device=device), start=1, step=2)
    idx = t(device, [0, 1, 0, 1, 2, 1])
    src = t(device, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert pg.zeros(4, device=device).scatter_reduce(0, idx, src, "max").tolist() == \
        [3.0, 6.0, 5.0, 0.0]
    assert pg.zeros(4, device=device).scatter_reduce(0, t(device, [0, 1]), t(device, [-1.0, 2.0]),
                                                     "min").tolist() == [-1.0, 0.0, 0.0, 0.0]


def test_scatter_index_larger_than_self(device: str) -> None:
    """An index larger than self off the scatter dimension was read out of bounds (numpy's
    IndexError); PyTorch names both shapes."""
    z = pg.zeros(2, 2, device=device)
    bad = pg.zeros(3, 1, dtype=pg.int64, device=device)
    msg = r"^Expected index \[3, 1\] to be no larger than self \[2, 2\] apart from dimension 1"
    with pytest.raises(RuntimeError, match=msg + r" and to be no larger size than src \[3, 1\]$"):
        z.scatter_add(1, bad, pg.ones(3, 1, device=device))
    with pytest.raises(RuntimeError, match=msg + "$"):
        z.scatter(1, bad, 1.0)
    with pytest.raises(RuntimeError, match=r"to be no larger size than src \[2, 2\]$"):
        z.scatter(1, pg.zeros(2, 3, dtype=pg.int64, device=device), pg.ones(2, 2, device=device))
