"""The dtypes of image data and checkpoints: uint8, int8, int16 and bfloat16, on every backend.

Expected values are numpy references (bfloat16 through ml_dtypes, whose casts round to nearest
even as PyTorch's do) or literals computed with PyTorch 2.13; torch itself is only used, optionally,
to read and write safetensors files.
"""
from __future__ import annotations

import io
import json
import pickle
import struct
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import portagrad as pg

NEW = (pg.uint8, pg.int8, pg.int16, pg.bfloat16)
ALL = (pg.bool, pg.uint8, pg.int8, pg.int16, pg.int32, pg.int64, pg.float16, pg.bfloat16,
       pg.float32, pg.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)

# torch.promote_types over ALL (row, column), computed with torch 2.13
_PROMOTE = """
bool     uint8    int8     int16    int32 int64 float16 bfloat16 float32 float64
uint8    uint8    int16    int16    int32 int64 float16 bfloat16 float32 float64
int8     int16    int8     int16    int32 int64 float16 bfloat16 float32 float64
int16    int16    int16    int16    int32 int64 float16 bfloat16 float32 float64
int32    int32    int32    int32    int32 int64 float16 bfloat16 float32 float64
int64    int64    int64    int64    int64 int64 float16 bfloat16 float32 float64
float16  float16  float16  float16  float16 float16 float16 float32 float32 float64
bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 bfloat16 float32 bfloat16 float32 float64
float32  float32  float32  float32  float32 float32 float32 float32 float32 float64
float64  float64  float64  float64  float64 float64 float64 float64 float64 float64
"""
PROMOTE = {(a, b): getattr(pg, name)
           for a, row in zip(ALL, _PROMOTE.split("\n")[1:])
           for b, name in zip(ALL, row.split())}


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, BF16).view(np.uint16)


# ------------------------------------------------------------------------------ the dtype objects
def test_promotion_table_is_pytorchs_over_all_pairs() -> None:
    assert len(PROMOTE) == 100
    for (a, b), want in PROMOTE.items():
        assert pg.promote_types(a, b) is want, (a, b)


def test_promotion_examples_and_result_type() -> None:
    assert pg.promote_types(pg.uint8, pg.int8) is pg.int16
    assert pg.promote_types(pg.bfloat16, pg.float16) is pg.float32
    assert pg.promote_types(pg.int64, pg.bfloat16) is pg.bfloat16
    assert pg.promote_types(pg.bool, pg.uint8) is pg.uint8
    u8 = pg.tensor([1, 2], dtype=pg.uint8)
    bf = pg.tensor([1.0], dtype=pg.bfloat16)
    assert pg.result_type(u8, 5) is pg.uint8  # a Python int does not widen a tensor's int dtype
    assert pg.result_type(u8, 5.0) is pg.float32
    assert pg.result_type(bf, 2) is pg.bfloat16 and pg.result_type(bf, 2.5) is pg.bfloat16
    assert pg.result_type(u8, pg.tensor(3)) is pg.uint8  # a 0-dim tensor of the same category
    assert pg.result_type(u8, pg.tensor(3.0, dtype=pg.float64)) is pg.float64
    assert pg.result_type(pg.tensor([True]), u8) is pg.uint8
    assert pg.result_type(pg.tensor([1], dtype=pg.int8), u8) is pg.int16


def test_can_cast_is_by_category() -> None:
    kind = {d: 0 if d is pg.bool else 2 if d.is_floating_point else 1 for d in ALL}
    for a in ALL:
        for b in ALL:
            assert pg.can_cast(a, b) is (kind[a] <= kind[b]), (a, b)
    assert not pg.can_cast(pg.bfloat16, pg.uint8) and pg.can_cast(pg.uint8, pg.int8)


def test_dtype_attributes() -> None:
    assert [d.itemsize for d in NEW] == [1, 1, 2, 2]
    assert [d.is_floating_point for d in NEW] == [False, False, False, True]
    assert [d.is_signed for d in NEW] == [False, True, True, True]
    assert not pg.bool.is_signed
    assert pg.short is pg.int16
    assert repr(pg.bfloat16) == "portagrad.bfloat16"
    for d in NEW:
        assert pickle.loads(pickle.dumps(d)) is d
        assert pg.tensor([1], dtype=d).element_size() == d.itemsize


def test_iinfo_finfo() -> None:
    assert (pg.iinfo(pg.uint8).min, pg.iinfo(pg.uint8).max, pg.iinfo(pg.uint8).bits) == (0, 255, 8)
    assert (pg.iinfo(pg.int8).min, pg.iinfo(pg.int8).max) == (-128, 127)
    assert (pg.iinfo(pg.int16).min, pg.iinfo(pg.int16).max, pg.iinfo(pg.int16).dtype) == \
        (-32768, 32767, "int16")
    assert pg.iinfo(pg.int64).max == 2 ** 63 - 1
    f = pg.finfo(pg.bfloat16)
    assert (f.bits, f.eps, f.max, f.tiny, f.resolution, f.dtype) == \
        (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01, "bfloat16")
    assert pg.finfo(pg.float16).resolution == 0.001 and pg.finfo(pg.float16).max == 65504.0
    assert pg.finfo().dtype == "float32" and pg.finfo(pg.float32).eps == 2.0 ** -23
    assert repr(pg.iinfo(pg.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    with pytest.raises(TypeError, match="bool is not supported by iinfo"):
        pg.iinfo(pg.bool)
    with pytest.raises(TypeError, match="requires an integer input type"):
        pg.iinfo(pg.bfloat16)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        pg.finfo(pg.uint8)


# ------------------------------------------------------------------------------ creation, host
@pytest.mark.parametrize("np_dtype", [np.uint8, np.int8, np.int16, BF16],
                         ids=["uint8", "int8", "int16", "bfloat16"])
def test_numpy_round_trip_keeps_dtype(device: str, np_dtype: Any) -> None:
    if np.dtype(np_dtype) == BF16:
        _need(device, pg.bfloat16)
    a = np.array([[0, 1, 7], [100, 3, 2]]).astype(np_dtype)
    t = pg.tensor(a, device=device)
    assert t.dtype.numpy == np.dtype(np_dtype)
    back = t.cpu().numpy()
    assert back.dtype == np.dtype(np_dtype) and np.array_equal(back, a)
    assert pg.as_tensor(a, device=device).dtype is t.dtype
    assert pg.from_numpy(a).dtype is t.dtype


def test_tolist_and_item_give_python_numbers(device: str) -> None:
    u = pg.tensor([255, 0], dtype=pg.uint8, device=device)
    assert u.tolist() == [255, 0] and type(u.tolist()[0]) is int and type(u[0].item()) is int
    _need(device, pg.bfloat16)
    b = pg.tensor([1.5, -0.25], dtype=pg.bfloat16, device=device)
    assert b.tolist() == [1.5, -0.25] and type(b.tolist()[0]) is float
    assert b[1].item() == -0.25 and type(b[1].item()) is float


def test_factories_and_methods(device: str) -> None:
    for d in _supported(device, NEW):
        z = pg.zeros(2, 3, dtype=d, device=device)
        assert z.dtype is d and _np(z).sum() == 0
        assert pg.ones(3, dtype=d, device=device).tolist() == [1, 1, 1]
        assert pg.full((2,), 7, dtype=d, device=device).tolist() == [7, 7]
        assert pg.arange(4, dtype=d, device=device).tolist() == [0, 1, 2, 3]
    x = pg.tensor([1.7, 2.0, 3.5], device=device)
    assert x.byte().dtype is pg.uint8 and x.byte().tolist() == [1, 2, 3]
    assert x.char().dtype is pg.int8 and x.short().dtype is pg.int16
    if _has(device, pg.bfloat16):
        assert x.bfloat16().dtype is pg.bfloat16 and x.bfloat16().tolist() == [1.703125, 2.0, 3.5]
        assert x.bfloat16().is_floating_point() is True
    assert x.to(pg.uint8).dtype is pg.uint8 and x.type(pg.int16).dtype is pg.int16
    assert x.byte().is_floating_point() is False
    assert x.byte().is_signed() is False and x.char().is_signed() is True


def test_repr_of_new_dtypes() -> None:
    assert repr(pg.tensor([3, 250], dtype=pg.uint8)) == "tensor([  3, 250], dtype=portagrad.uint8)"
    assert repr(pg.tensor([1.5, -2.0], dtype=pg.bfloat16)) == \
        "tensor([ 1.5000, -2.0000], dtype=portagrad.bfloat16)"
    assert pg.tensor([1], dtype=pg.int8).type() == "portagrad.CharTensor"


def test_index_tensor_dtypes(device: str) -> None:
    x = pg.arange(4, device=device) * 10
    with pytest.warns(UserWarning, match="indexing with dtype portagrad.uint8 is now deprecated"):
        got = x[pg.tensor([1, 0, 1, 1], dtype=pg.uint8, device=device)]
    assert got.tolist() == [0, 20, 30]  # a uint8 index is a mask, as in PyTorch
    with pytest.warns(UserWarning, match="deprecated"):
        x[pg.tensor([0, 1, 0, 0], dtype=pg.uint8, device=device)] = 7
    assert x.tolist() == [0, 7, 20, 30]
    for d in (pg.int8, pg.int16):
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            x[pg.tensor([1], dtype=d, device=device)]
    for d in (pg.uint8, pg.int8, pg.int16):  # index ops take int64 (or int32) indices only
        i = pg.tensor([1], dtype=d, device=device)
        one = pg.ones(1, device=device)
        for name, args in (("index_add", (0, i, one)), ("index_copy", (0, i, one)),
                           ("scatter", (0, i, 1)), ("gather", (0, i)), ("index_select", (0, i))):
            with pytest.raises(RuntimeError, match="int32.*int64|int32/int64"):
                getattr(x, name)(*args)


# ------------------------------------------------------------------------------ casts
_CAST_SRC = {  # in range of every destination (out-of-range float -> int casts are undefined)
    "bool": [True, False, True, True],
    "int": [0, 1, 7, 100],
    "neg": [-3, 0, 5, -128],  # signed -> uint8 wraps (defined for integers)
    "float": [0.0, 1.75, 2.5, 99.9],
}


def _reference_cast(a: np.ndarray, dst: Any) -> np.ndarray:
    if a.dtype.kind == "f" or a.dtype == BF16:
        f = a.astype(np.float64)
        if dst is pg.bool:
            return f != 0
        if not dst.is_floating_point:
            return np.trunc(f).astype(dst.numpy)
        if dst is pg.bfloat16 and a.dtype == np.float64:
            return f.astype(np.float32).astype(BF16)  # through float32, as PyTorch
        return a.astype(dst.numpy)
    return a.astype(dst.numpy)


def _has_fp16(device: str) -> bool:
    try:
        pg.zeros(1, dtype=pg.float16, device=device)
    except pg.errors.DTypeError:  # a backend without float16 (array-api-strict)
        return False
    return True


def _has(device: str, d: Any) -> bool:
    """Whether ``device`` stores dtype ``d``: the xp backend has only the dtypes of its array
    library (array_api_strict has no bfloat16 or float16), and says so with a DTypeError."""
    try:
        pg.zeros(1, dtype=d, device=device)
    except pg.errors.DTypeError:
        return False
    return True


def _need(device: str, d: Any) -> None:
    if not _has(device, d):
        pytest.skip(f"{device} has no {d.name} (its array library lacks the dtype)")


def _supported(device: str, dtypes: Any) -> list[Any]:
    return [d for d in dtypes if _has(device, d)]


@pytest.mark.parametrize("src", NEW, ids=lambda d: d.name)
def test_casts_from_and_to_every_dtype(device: str, src: Any) -> None:
    """src -> every dtype and every dtype -> src, against numpy."""
    _need(device, src)
    for other in _supported(device, ALL):
        for a, b in ((src, other), (other, src)):
            if a.is_floating_point:
                vals = _CAST_SRC["float"]
            elif a is pg.bool:
                vals = _CAST_SRC["bool"]
            elif a.is_signed and b is pg.uint8:
                vals = _CAST_SRC["neg"]
            else:
                vals = _CAST_SRC["int"]
            host = np.array(vals).astype(a.numpy)
            got = _np(pg.tensor(host, device=device).to(b))
            want = _reference_cast(host, b)
            assert got.dtype == want.dtype, (a, b)
            assert np.array_equal(got.astype(np.float64), want.astype(np.float64)), (a, b, got, want)


def test_bfloat16_rounds_to_nearest_even(device: str) -> None:
    _need(device, pg.bfloat16)
    # torch 2.13: 1 + 2**-8 is a tie (-> 1.0), 1 + 3 * 2**-8 rounds up, 3e38 stays finite
    x = pg.tensor([1.00390625, 1.01171875, 3.14159, -2.5e-3, 3e38, float("inf"), float("nan")],
                  device=device)
    b = x.bfloat16()
    got = b.float().tolist()
    assert got[:6] == [1.0, 1.015625, 3.140625, -0.00250244140625, 3.00405527047391e+38,
                       float("inf")]
    assert np.isnan(got[6])
    assert _np(x.double().bfloat16()).view(np.uint16)[:5].tolist() == \
        _bits(np.array([1.0, 1.015625, 3.140625, -0.00250244140625, 3.00405527047391e+38])).tolist()


# ------------------------------------------------------------------------------ arithmetic
def test_integer_arithmetic_wraps(device: str) -> None:
    u = pg.tensor([250, 0, 7], dtype=pg.uint8, device=device)
    assert (u + 10).tolist() == [4, 10, 17] and (u + 10).dtype is pg.uint8
    assert (u - 1).tolist() == [249, 255, 6]
    assert (-u).tolist() == [6, 0, 249]
    assert (u * u).tolist() == [36, 0, 49]
    assert (u + 1000).tolist() == [226, 232, 239]  # the Python int wraps into uint8 (1000 -> 232)
    assert (u // pg.tensor([7, 3, 2], dtype=pg.uint8, device=device)).tolist() == [35, 0, 3]
    i8 = pg.tensor([100, -128, 127], dtype=pg.int8, device=device)
    assert (i8 + i8).tolist() == [-56, 0, -2]
    assert i8.abs().tolist() == [100, -128, 127]
    assert (i8 * 3).tolist() == [44, -128, 125]
    i16 = pg.tensor([30000, -32768, 5], dtype=pg.int16, device=device)
    assert (i16 + i16).tolist() == [-5536, 0, 10]
    assert (i16 * i16).tolist() == [-5888, 0, 25]
    assert (i16 % 7).tolist() == [5, 6, 5] and (i16 // -7).tolist() == [-4286, 4681, -1]
    assert (u & 0x0F).tolist() == [10, 0, 7] and (~u).tolist() == [5, 255, 248]


def test_stored_scalars_are_checked_as_pytorch(device: str) -> None:
    """fill_/full/where/masked_fill check a Python int against the narrow dtype (arithmetic
    operands wrap instead); a negative one that fits in magnitude wraps into uint8."""
    u = pg.zeros(2, dtype=pg.uint8, device=device)
    assert u.fill_(-1).tolist() == [255, 255]
    assert pg.full((2,), -2, dtype=pg.uint8, device=device).tolist() == [254, 254]
    for call in (lambda: u.fill_(300), lambda: pg.full((1,), 256, dtype=pg.uint8, device=device),
                 lambda: pg.where(u > 0, u, 1000), lambda: u.masked_fill(u == 255, -256)):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t"):
            call()
    with pytest.raises(RuntimeError, match="type int8_t without overflow"):
        pg.zeros(1, dtype=pg.int8, device=device).fill_(-129)
    with pytest.raises(RuntimeError, match="type int16_t without overflow"):
        pg.full((1,), 32768, dtype=pg.int16, device=device)
    assert pg.full((1,), -32768, dtype=pg.int16, device=device).tolist() == [-32768]
    assert pg.tensor([-1, -200], dtype=pg.uint8, device=device).tolist() == [255, 56]
    v = pg.tensor([250, 3], dtype=pg.uint8, device=device)
    with pytest.raises(RuntimeError, match="type uint8_t without overflow"):
        v.clamp(0, 1000)  # would clamp to the wrapped 232 otherwise
    with pytest.raises(RuntimeError, match="type uint8_t without overflow"):
        v ** 300
    assert v.clamp(1, 100).tolist() == [100, 3] and v.clamp(-1, 5).tolist() == [5, 5]
    assert pg.tensor(np.array([300]), dtype=pg.uint8, device=device).tolist() == [44]
    for data, d in (([300], pg.uint8), ([-256], pg.uint8), ([128], pg.int8), ([2.5, 300.7], pg.uint8),
                    (40000, pg.int16)):
        with pytest.raises(RuntimeError, match=f"type {d.name} without overflow"):
            pg.tensor(data, dtype=d, device=device)


def test_mixed_integer_promotion_computes(device: str) -> None:
    u = pg.tensor([200, 1], dtype=pg.uint8, device=device)
    i = pg.tensor([-1, 100], dtype=pg.int8, device=device)
    s = u + i
    assert s.dtype is pg.int16 and s.tolist() == [199, 101]
    assert (u > i).tolist() == [True, False]  # compared as int16: 200 > -1
    assert (u / i).dtype is pg.float32 and (u / 2).tolist() == [100.0, 0.5]
    assert (pg.tensor([True, False], device=device) + u).dtype is pg.uint8
    _need(device, pg.bfloat16)
    bf = pg.tensor([1.5, 2.0], dtype=pg.bfloat16, device=device)
    assert (bf + u).dtype is pg.bfloat16 and (bf + u).tolist() == [202.0, 3.0]  # 201.5: a tie
    if _has_fp16(device):
        assert (bf + pg.tensor([1.0, 1.0], dtype=pg.float16, device=device)).dtype is pg.float32


def test_bfloat16_computes_in_float32_rounding_once(device: str) -> None:
    _need(device, pg.bfloat16)
    a = pg.tensor([3.14159, 1.0, 0.5, -2.0], dtype=pg.bfloat16, device=device)
    b = pg.tensor([2.71828, 0.00390625, 1.5, 3.0], dtype=pg.bfloat16, device=device)
    # literals from torch 2.13
    assert (a * b).tolist() == [8.5625, 0.00390625, 0.75, -6.0]
    assert (a + b).tolist() == [5.875, 1.0, 2.0, 1.0]
    assert (a[1:2] / 3).tolist() == [0.333984375]
    assert a[1:].exp().tolist() == [2.71875, 1.6484375, 0.1357421875]
    # sigmoid rounded once from float32 (bfloat16 intermediates would differ)
    x = np.linspace(-4, 4, 33).astype(np.float32).astype(BF16)
    want = (1 / (1 + np.exp(-x.astype(np.float32)))).astype(BF16)
    got = _np(pg.tensor(x, device=device).sigmoid())
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_comparisons_and_where(device: str) -> None:
    for d in _supported(device, NEW):
        x = pg.tensor([3, 1, 2, 0], dtype=d, device=device)
        assert (x > 1).tolist() == [True, False, True, False]
        assert (x == pg.tensor([3, 0, 2, 1], dtype=d, device=device)).tolist() == \
            [True, False, True, False]
        w = pg.where(x > 1, x, pg.zeros_like(x))
        assert w.dtype is d and w.tolist() == [3, 0, 2, 0]
        assert pg.where(x > 1, x, 5).tolist() == [3, 5, 2, 5]


# ------------------------------------------------------------------------------ reductions
def test_reductions(device: str) -> None:
    u = pg.full((4,), 255, dtype=pg.uint8, device=device)
    assert u.sum().dtype is pg.int64 and u.sum().item() == 1020  # no wrap: summed in int64
    assert u.sum(dtype=pg.uint8).item() == 252 and u.sum(dtype=pg.uint8).dtype is pg.uint8
    i8 = pg.tensor([[100, -128], [50, 3]], dtype=pg.int8, device=device)
    assert i8.sum(0).tolist() == [150, -125] and i8.sum(0).dtype is pg.int64
    assert i8.prod().item() == -1920000 and i8.cumsum(1).dtype is pg.int64
    assert i8.max().item() == 100 and i8.min().dtype is pg.int8 and i8.min().item() == -128
    assert i8.amax(1).tolist() == [100, 50] and i8.argmax(1).tolist() == [0, 0]
    assert pg.tensor([5, 250, 7], dtype=pg.uint8, device=device).max().item() == 250
    s16 = pg.tensor([-32768, 32767, 1], dtype=pg.int16, device=device)
    assert s16.min().item() == -32768 and s16.max().item() == 32767 and s16.sum().item() == 0
    assert u.any().dtype is pg.uint8 and u.all().item() == 1  # PyTorch keeps uint8 here
    assert pg.tensor([1, 0], dtype=pg.int8, device=device).all().dtype is pg.bool
    with pytest.raises(RuntimeError, match="mean.*Got: Byte"):
        u.mean()


def test_bfloat16_reductions_accumulate_in_float32(device: str) -> None:
    _need(device, pg.bfloat16)
    ones = pg.ones(1000, dtype=pg.bfloat16, device=device)
    s = ones.sum()
    assert s.dtype is pg.bfloat16 and s.item() == 1000.0  # a bfloat16 accumulator stops at 256
    assert ones.cumsum(0)[-1].item() == 1000.0 and ones.mean().item() == 1.0
    big = pg.ones(40000, dtype=pg.bfloat16, device=device)  # reduced in chunks on OpenCL
    assert big.sum().item() == 39936.0  # 40000 rounded once (torch 2.13)
    assert pg.ones(3, 40000, dtype=pg.bfloat16, device=device).sum(1).tolist() == [39936.0] * 3
    x = pg.tensor([1.0, 2.0, 4.0], dtype=pg.bfloat16, device=device)
    assert x.mean().item() == 2.328125  # torch 2.13
    # mean, var and std round once from float32 (rounding the sum first would give 330.0)
    y = pg.tensor([[0.1, -7.0, 1e3], [3.3, 2.2, 1.1]], dtype=pg.bfloat16, device=device)
    assert y.mean(1).tolist() == [332.0, 2.203125] and y.mean(1).dtype is pg.bfloat16
    assert y.var(1).tolist() == [335872.0, 1.203125] and y.std(1).tolist() == [580.0, 1.1015625]
    assert y.std(0, unbiased=False).tolist() == [1.6015625, 4.59375, 500.0]
    assert y.norm(dim=1).tolist() == [1000.0, 4.125]  # torch 2.13
    assert x.max().item() == 4.0 and x.argmin().item() == 0


def test_bfloat16_matmul_accumulates_in_float32(device: str) -> None:
    _need(device, pg.bfloat16)
    a = pg.ones(2, 300, dtype=pg.bfloat16, device=device)
    b = pg.ones(300, 3, dtype=pg.bfloat16, device=device)
    c = a @ b
    assert c.dtype is pg.bfloat16 and c.tolist() == [[300.0] * 3] * 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 16)).astype(BF16)
    y = rng.standard_normal((16, 5)).astype(BF16)
    want = (x.astype(np.float32) @ y.astype(np.float32)).astype(BF16)
    got = _np(pg.tensor(x, device=device) @ pg.tensor(y, device=device))
    # float32 accumulation orders may differ in the last float32 bit, so at most one bfloat16 ulp
    assert np.all(np.abs(got.view(np.uint16).astype(int) - want.view(np.uint16).astype(int)) <= 1)
    with pytest.raises(RuntimeError):
        pg.ones(2, 2, dtype=pg.bfloat16, device=device) @ pg.ones(2, 2, device=device)


# ------------------------------------------------------------------------------ index ops, sort
def test_indexing_cat_gather_scatter(device: str) -> None:
    for d in _supported(device, NEW):
        x = pg.tensor([[1, 2, 3], [4, 5, 6]], dtype=d, device=device)
        assert x[1].tolist() == [4, 5, 6] and x[:, 1:].tolist() == [[2, 3], [5, 6]]
        assert x.t()[2].tolist() == [3, 6]  # strided
        assert x[x > 3].tolist() == [4, 5, 6]
        assert x[pg.tensor([1, 0], device=device)].tolist() == [[4, 5, 6], [1, 2, 3]]
        y = x.clone()
        y[0, 1:] = 9
        assert y.tolist() == [[1, 9, 9], [4, 5, 6]] and y.dtype is d
        assert pg.cat([x, x[:1]]).dtype is d and pg.cat([x, x[:1]]).shape == (3, 3)
        assert x.gather(1, pg.tensor([[2, 0], [1, 1]], device=device)).tolist() == [[3, 1], [5, 5]]
        z = pg.zeros(2, 3, dtype=d, device=device)
        z.scatter_add_(1, pg.tensor([[0, 0, 2]], device=device), x[:1])
        assert z.tolist() == [[3, 0, 3], [0, 0, 0]]
    u = pg.tensor([1, 2], dtype=pg.uint8, device=device)
    i = pg.tensor([-1], dtype=pg.int8, device=device)
    c = pg.cat([u, i])
    assert c.dtype is pg.int16 and c.tolist() == [1, 2, -1]


def test_bfloat16_scatter_add_rounds_once_index_add_each_sum(device: str) -> None:
    _need(device, pg.bfloat16)
    z = pg.full((1,), 256.0, dtype=pg.bfloat16, device=device)
    idx = pg.zeros(4, dtype=pg.int64, device=device)
    ones = pg.ones(4, dtype=pg.bfloat16, device=device)
    # as PyTorch: scatter_add sums in float32 and rounds once (260); index_add into a 1-D tensor
    # adds one element at a time, and 256 + 1 rounds back to 256 each time
    assert z.clone().scatter_add_(0, idx, ones).item() == 260.0
    assert z.clone().index_add_(0, idx, ones).item() == 256.0


@pytest.mark.parametrize("d", NEW, ids=lambda d: d.name)
def test_sort_argmax_topk(device: str, d: Any) -> None:
    _need(device, d)
    vals = [5, 1, 7, 1, 0, 7]
    x = pg.tensor(vals, dtype=d, device=device)
    s = x.sort()
    assert s.values.tolist() == [0, 1, 1, 5, 7, 7] and s.indices.tolist() == [4, 1, 3, 0, 2, 5]
    sd = x.sort(descending=True)
    assert sd.values.tolist() == [7, 7, 5, 1, 1, 0] and sd.indices.tolist() == [2, 5, 0, 1, 3, 4]
    assert x.argmax().item() == 2 and x.argmin().item() == 4
    assert x.topk(2).values.tolist() == [7, 7] and x.max().dtype is d
    if d is pg.bfloat16:  # NaN sorts last and is the maximum
        y = pg.tensor([1.0, float("nan"), -2.0], dtype=d, device=device)
        assert y.sort().indices.tolist() == [2, 0, 1] and y.argmax().item() == 1


# ------------------------------------------------------------------------------ autograd
def test_autograd_through_bfloat16(device: str) -> None:
    _need(device, pg.bfloat16)
    x = pg.tensor([0.5, -1.25, 2.0], dtype=pg.bfloat16, device=device, requires_grad=True)
    y = (x * x).sum() + x.exp().sum()
    y.backward()
    assert x.grad is not None and x.grad.dtype is pg.bfloat16
    assert x.grad.tolist() == [2.65625, -2.21875, 11.375]  # torch 2.13
    w = pg.ones(3, 2, dtype=pg.bfloat16, device=device, requires_grad=True)
    (x.detach().unsqueeze(0) @ w).sum().backward()
    assert w.grad is not None and w.grad.dtype is pg.bfloat16
    assert w.grad.tolist() == [[0.5, 0.5], [-1.25, -1.25], [2.0, 2.0]]
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        pg.tensor([1], dtype=pg.uint8, device=device).requires_grad_()


def test_ops_pytorch_refuses(device: str) -> None:
    _need(device, pg.bfloat16)
    bf = pg.tensor([1.0], dtype=pg.bfloat16, device=device)
    with pytest.raises(RuntimeError, match="not implemented for 'BFloat16'"):
        bf & bf
    u = pg.tensor([1], dtype=pg.uint8, device=device)
    with pytest.raises(RuntimeError, match="Got: Byte"):
        u.mean()
    with pytest.raises(RuntimeError, match="Got: Char"):
        u.char().mean()


# ------------------------------------------------------------------------------ safetensors
def _state(device: str) -> dict[str, pg.Tensor]:
    return {"img": pg.tensor([[0, 255], [17, 128]], dtype=pg.uint8, device=device),
            "q": pg.tensor([-128, 0, 127], dtype=pg.int8, device=device),
            "s": pg.tensor([-32768, 7, 32767], dtype=pg.int16, device=device),
            "w": pg.tensor([1.5, -2.25e10, 0.1], dtype=pg.bfloat16, device=device)}


def _header(data: bytes) -> dict[str, Any]:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])


def test_save_load_round_trip(device: str) -> None:
    _need(device, pg.bfloat16)
    sd = _state(device)
    buf = io.BytesIO()
    pg.save(sd, buf)
    back = pg.load(io.BytesIO(buf.getvalue()))
    for k, t in sd.items():
        assert back[k].dtype is t.dtype
        assert np.array_equal(_np(back[k]).view(np.uint8), _np(t).view(np.uint8))
    head = _header(buf.getvalue())
    assert {k: head[k]["dtype"] for k in sd} == {"img": "U8", "q": "I8", "s": "I16", "w": "BF16"}


def test_safetensors_numpy_reads_and_writes_them(device: str) -> None:
    _need(device, pg.bfloat16)
    stnp = pytest.importorskip("safetensors.numpy")
    sd = _state(device)
    buf = io.BytesIO()
    pg.save(sd, buf)
    data = buf.getvalue()
    head = _header(data)
    start = 8 + struct.unpack("<Q", data[:8])[0]
    for k, t in sd.items():  # the raw little-endian bytes of every entry
        b, e = head[k]["data_offsets"]
        assert data[start + b:start + e] == _np(t).tobytes()
    # safetensors.numpy has no BF16 reader; the integer entries it loads directly
    only_int = {k: v for k, v in sd.items() if k != "w"}
    buf = io.BytesIO()
    pg.save(only_int, buf)
    arrays = stnp.load(buf.getvalue())
    for k, t in only_int.items():
        assert arrays[k].dtype == t.dtype.numpy and np.array_equal(arrays[k], _np(t))
    # the reverse: files written by safetensors.numpy (its bfloat16 is ml_dtypes')
    src = {"a": np.array([1, 200], np.uint8), "b": np.array([-5], np.int8),
           "c": np.array([1000], np.int16), "d": np.array([0.5, 3.0], BF16)}
    got = pg.load(io.BytesIO(stnp.save(src)), map_location=device)
    for k, a in src.items():
        assert got[k].dtype.numpy == a.dtype and np.array_equal(_np(got[k]), a)


def test_safetensors_torch_round_trip(device: str) -> None:
    _need(device, pg.bfloat16)
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    sd = _state(device)
    buf = io.BytesIO()
    pg.save(sd, buf)
    loaded = st.load(buf.getvalue())
    assert loaded["w"].dtype is torch.bfloat16 and loaded["img"].dtype is torch.uint8
    for k, t in sd.items():
        assert loaded[k].view(torch.uint8).numpy().tobytes() == _np(t).tobytes()
    data = st.save({"x": torch.tensor([1.0, 3.5, -0.1], dtype=torch.bfloat16),
                    "y": torch.tensor([200, 3], dtype=torch.uint8),
                    "z": torch.tensor([-7], dtype=torch.int8),
                    "v": torch.tensor([-300], dtype=torch.int16)})
    back = pg.load(io.BytesIO(data), map_location=device)
    assert back["x"].dtype is pg.bfloat16 and back["x"].tolist() == [1.0, 3.5, -0.10009765625]
    assert back["y"].tolist() == [200, 3] and back["z"].dtype is pg.int8
    assert back["v"].dtype is pg.int16 and back["v"].tolist() == [-300]


def test_op_table_promotion_entries_agree() -> None:
    from op_table import promote

    for (a, b), want in PROMOTE.items():
        if a in NEW or b in NEW:  # the entries the op table has for the new dtypes
            assert promote(a, b) is want, (a, b)


def test_bfloat16_softmax_and_layer_norm_round_once(device: str) -> None:
    _need(device, pg.bfloat16)
    F = pg.nn.functional
    x = pg.tensor([[1.0, 2.0, 3.5], [0.3, -1.0, 2.0]], dtype=pg.bfloat16, device=device)
    w = pg.tensor([1.5, 0.5, 2.0], dtype=pg.bfloat16, device=device)
    s = F.softmax(x, 1)
    n = F.layer_norm(x, (3,), w, w)
    assert s.dtype is pg.bfloat16 and n.dtype is pg.bfloat16
    # torch 2.13 (its kernels compute in float32 and round once)
    assert s.tolist() == [[0.06298828125, 0.1708984375, 0.765625],
                          [0.1484375, 0.040283203125, 0.8125]]
    assert n.tolist() == [[-0.203125, 0.41796875, 4.59375], [1.3359375, -0.08349609375, 4.5625]]


def test_bfloat16_elementwise_chain_rounds_every_op(device: str) -> None:
    """A chain of elementwise ops (fused on OpenCL) rounds each result to bfloat16, as the eager
    ops and PyTorch do: the same bits as a numpy reference rounding after every op. As in
    PyTorch's CPU kernels, a scalar multiplier stays float32 while a scalar added or subtracted
    is rounded to bfloat16 first (1.7 is 1.703125 there)."""
    _need(device, pg.bfloat16)
    xs = np.linspace(-3, 3, 3000).astype(np.float32).astype(BF16)
    x = pg.tensor(xs, device=device)
    y = ((x * 0.3 + 1.7).sigmoid() * x - 0.1).exp()

    def r(a: np.ndarray) -> np.ndarray:
        return a.astype(np.float32).astype(BF16).astype(np.float32)

    xf = xs.astype(np.float32)
    c17, c01 = (np.float32(v).astype(BF16).astype(np.float32) for v in (1.7, 0.1))
    s = r(1 / (1 + np.exp(-r(r(xf * np.float32(0.3)) + c17))))
    want = r(np.exp(r(r(s * xf) - c01)))
    assert np.array_equal(_np(y).astype(np.float32), want)


def test_bfloat16_activations_round_once(device: str) -> None:
    """PyTorch's activation kernels compute bfloat16 in float32 and round once: the same bits as
    the float32 result rounded (chaining bfloat16 ops would round every intermediate)."""
    _need(device, pg.bfloat16)
    F = pg.nn.functional
    xs = np.linspace(-6, 6, 97).astype(np.float32).astype(BF16)
    x = pg.tensor(xs, device=device)
    xf = pg.tensor(xs.astype(np.float32), device=device)
    for fn in (F.gelu, F.silu, F.softplus, F.mish, F.elu, F.hardswish, F.logsigmoid,
               lambda t: F.gelu(t, approximate="tanh")):
        got = _np(fn(x))
        want = _np(fn(xf)).astype(BF16)
        assert got.dtype == BF16 and np.array_equal(got.view(np.uint16), want.view(np.uint16))
    y = pg.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=pg.bfloat16,
                  device=device)
    assert pg.nan_to_num(y).tolist() == [0.0, 3.3895313892515355e+38, -3.3895313892515355e+38, 1.5]


def test_module_bfloat16_casts_floating_parameters(device: str) -> None:
    _need(device, pg.bfloat16)
    m = pg.nn.BatchNorm1d(3).to(device).bfloat16()
    assert m.weight.dtype is pg.bfloat16 and m.running_var.dtype is pg.bfloat16
    assert m.num_batches_tracked.dtype is pg.int64
    lin = pg.nn.Linear(4, 2).to(device).bfloat16()
    y = lin(pg.ones(3, 4, dtype=pg.bfloat16, device=device))
    assert y.dtype is pg.bfloat16 and y.shape == (3, 2)
    y.sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype is pg.bfloat16
    assert lin.weight.grad.tolist() == [[3.0] * 4] * 2


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_16bit_scalar_operands_as_pytorch(device: str, dt: str) -> None:
    """PyTorch's CPU kernels take the second operand of mul and div at float32 when it is a
    scalar and round every other scalar operand to the 16-bit type first: ``2.5 * x`` is
    ``x.mul(2.5)``, ``torch.mul(2.5, x)`` rounds. The same bits as PyTorch on every device."""
    torch = pytest.importorskip("torch")
    _need(device, getattr(pg, dt))
    vals = np.random.default_rng(5).standard_normal(3000).astype(np.float32) * 100
    x = pg.tensor(vals, device=device).to(getattr(pg, dt))
    tx = torch.tensor(vals).to(getattr(torch, dt))
    for s in (0.1, 19945, 2.5):
        for name, f in (("x+s", lambda m, t, s: t + s), ("s-x", lambda m, t, s: s - t),
                        ("mul(s,x)", lambda m, t, s: m.mul(s, t)),
                        ("x*s", lambda m, t, s: t * s), ("s*x", lambda m, t, s: s * t),
                        ("x/s", lambda m, t, s: t / s), ("div(s,x)", lambda m, t, s: m.div(s, t)),
                        ("x//s", lambda m, t, s: t // s), ("s//x", lambda m, t, s: s // t),
                        ("x<=s", lambda m, t, s: t <= s)):
            got = f(pg, x, s).float().cpu().numpy()
            want = f(torch, tx, s).float().numpy()
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            assert same.all(), (name, s, int((~same).sum()))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_16bit_floor_divide_as_pytorch(device: str, dt: str) -> None:
    """16-bit floor division of two tensors rounds every step of PyTorch's ``div_floor`` to the
    type (80.5 // -0.0489 is -1648 in float16, where the float32 quotient rounded once gives
    -1647), with its signed zeros, infinities and NaNs."""
    torch = pytest.importorskip("torch")
    _need(device, getattr(pg, dt))
    rng = np.random.default_rng(6)
    a = (rng.standard_normal(4000) * 100).astype(np.float32)
    b = (rng.standard_normal(4000) * 10).astype(np.float32)
    a[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 5.0, -5.0, 1.0]
    b[:8] = [3.0, -3.0, 2.0, 2.0, 1.0, 0.0, 0.0, -np.inf]
    x = pg.tensor(a, device=device).to(getattr(pg, dt))
    y = pg.tensor(b, device=device).to(getattr(pg, dt))
    got = pg.floor_divide(x, y).float().cpu().numpy()
    want = torch.floor_divide(torch.tensor(a).to(getattr(torch, dt)),
                              torch.tensor(b).to(getattr(torch, dt))).float().numpy()
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    assert same.all(), int((~same).sum())


def test_half_scalar_operands_helper() -> None:
    """The public helper backends share for PyTorch's 16-bit scalar rule: float32 for the second
    operand of mul/div/floordiv, else rounded to the type (bfloat16 through float32)."""
    from portagrad.backends.helpers import half_scalar_operands

    v = object()  # stands for a view: left as it is
    a, b = half_scalar_operands("mul", v, 0.1, "bfloat16")
    assert a is v and isinstance(b, np.float32) and b == np.float32(0.1)
    assert half_scalar_operands("mul", 0.1, v, "bfloat16")[0] == 0.10009765625
    assert half_scalar_operands("add", v, 0.1, "float16")[1] == float(np.float16(0.1))
    assert half_scalar_operands("floordiv", v, 0.1, "float16")[1] == np.float32(0.1)
    assert half_scalar_operands("add", v, 0.1, "float32") == (v, 0.1)
    assert half_scalar_operands("add", v, 1 + 2j, "bfloat16") == (v, 1 + 2j)
