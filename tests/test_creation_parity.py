"""Creation and conversion as PyTorch 2.13 infers dtypes and shapes: numpy scalars in
arithmetic and in sequences, tensors inside sequences, Python's number protocols. Expected
values are PyTorch's, written out."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import portagrad as pg


def test_numpy_integers_promote_as_python_ints(device: str) -> None:
    """A numpy integer is an int to PyTorch: int64 + np.int64 stays int64 (it gave float32)."""
    a = pg.tensor([1, 2], device=device)
    assert (a + np.int64(1)).dtype is pg.int64 and (a + np.int64(1)).tolist() == [2, 3]
    assert (a * np.int32(2)).dtype is pg.int64
    assert (a + np.float64(1)).dtype is pg.float32
    assert (a + np.bool_(True)).dtype is pg.float32  # (np.bool_ promotes as a float in torch)
    assert (pg.tensor([1], dtype=pg.uint8, device=device) + np.int64(3)).dtype is pg.uint8
    assert pg.full((2,), np.int64(1), device=device).dtype is pg.int64
    assert pg.full((2,), np.float64(1), device=device).dtype is pg.float32


@pytest.mark.parametrize("make, dtype", [
    (lambda d: pg.tensor([np.float64(1.5), 2.0], device=d), "float64"),
    (lambda d: pg.tensor([np.float32(1.5), 2.0], device=d), "float32"),
    (lambda d: pg.tensor([np.int32(1), 2], device=d), "int64"),
    (lambda d: pg.tensor([pg.tensor(1.5, dtype=pg.float64), 2.0], device=d), "float64"),
    (lambda d: pg.tensor([np.float16(1.5)], device=d), "float16"),
    (lambda d: pg.tensor([np.float16(1.5), 2.0], device=d), "float32"),
    (lambda d: pg.tensor([[np.float64(1)], [2.0]], device=d), "float64"),
    (lambda d: pg.tensor([1.5, 2], device=d), "float32"),
])
def test_sequence_dtype_from_numpy_scalars_and_tensors(make, dtype: str, device: str) -> None:
    try:
        t = make(device)
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no float16)
        pytest.skip(f"{device} declines {dtype} (DTypeError)")
    assert t.dtype is getattr(pg, dtype)


def test_one_element_tensors_in_a_sequence_are_numbers(device: str) -> None:
    t = pg.tensor([pg.tensor([1.0]), pg.tensor(2.0)], device=device)
    assert t.shape == (2,) and t.tolist() == [1.0, 2.0]  # (it was (2, 1))
    assert pg.tensor([[pg.tensor(1)], [pg.tensor(2)]], device=device).tolist() == [[1], [2]]


def test_uint64_values_past_int64_are_refused() -> None:
    with pytest.raises(RuntimeError, match="does not fit in int64"):
        pg.as_tensor(np.array([2**64 - 1], dtype=np.uint64))
    assert pg.as_tensor(np.array([5], dtype=np.uint64)).tolist() == [5]


def test_number_protocols_of_several_elements(device: str) -> None:
    for conv in (int, float, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted"):
            conv(pg.ones(2, device=device))
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        float(pg.ones(0, device=device))
    assert int(pg.ones(1, device=device)) == 1
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        pg.ones(2, device=device).item()


def test_type_names_and_tri_indices_checks() -> None:
    assert pg.ones(1, dtype=pg.complex64).type() == "portagrad.ComplexFloatTensor"
    assert pg.ones(1, dtype=pg.complex128).type() == "portagrad.ComplexDoubleTensor"
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        pg.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative, got-1"):
        pg.triu_indices(3, -1)
    assert pg.tril_indices(2, 2).tolist() == [[0, 1, 1], [0, 0, 1]]


def test_complex_numbers_into_a_real_dtype_raise() -> None:
    with pytest.raises(TypeError, match="must be real number, not complex"):
        pg.tensor([1 + 2j], dtype=pg.float32)
    assert pg.tensor([1 + 0j], dtype=pg.complex64).dtype is pg.complex64


# ------------------------------------------------------------------------------------ asarray
def test_asarray_shares_or_copies_numpy_as_copy_says() -> None:
    """``copy=None``/``False`` share a CPU numpy array of the same dtype, ``copy=True`` copies;
    ``copy=False`` refuses another dtype or a sequence with PyTorch's ValueError."""
    a = np.ones(3, np.float32)
    shared, alias, copied = pg.asarray(a), pg.asarray(a, copy=False), pg.asarray(a, copy=True)
    a[0] = 5.0
    assert shared[0].item() == 5.0 and alias[0].item() == 5.0 and copied[0].item() == 1.0
    converted = pg.asarray(a, dtype=pg.float64)
    a[1] = 7.0
    assert converted.dtype is pg.float64 and converted[1].item() == 1.0
    with pytest.raises(ValueError, match=r"^can't alias tensor with dtype 'Float' into dtype "
                       r"'Double'\.$"):
        pg.asarray(a, dtype=pg.float64, copy=False)
    with pytest.raises(ValueError, match=r"^can't alias arbitrary sequence into a tensor\.$"):
        pg.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="arbitrary sequence"):
        pg.asarray(3.5, copy=False)
    with pytest.raises(TypeError, match="argument 'copy' must be bool, not str"):
        pg.asarray([1], copy="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pg.asarray(a, pg.float64)  # type: ignore[misc]  # dtype is keyword-only
    assert pg.asarray(np.array([1, 2])).dtype is pg.int64
    assert pg.asarray([1, 2.5]).tolist() == [1.0, 2.5] and pg.asarray(3.5).dim() == 0


def test_asarray_of_tensors(device: str) -> None:
    """A tensor comes back itself unless ``copy=True`` (a recorded clone) or a conversion (a
    recorded ``to``); ``requires_grad`` given sets the flag on what is returned (the input
    itself, as PyTorch does), not given keeps the input's."""
    t = pg.ones(3, device=device)
    assert pg.asarray(t) is t and pg.asarray(t, copy=False) is t
    assert pg.asarray(t, dtype=pg.float32) is t
    c = pg.asarray(t, copy=True)
    assert c is not t and c.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"can't alias tensor with dtype 'Float' into dtype "
                       r"'Int'\."):
        pg.asarray(t, dtype=pg.int32, copy=False)
    leaf = pg.ones(3, device=device, requires_grad=True)
    same = pg.asarray(leaf)
    assert same is leaf and same.requires_grad
    cl = pg.asarray(leaf, copy=True)
    assert cl.requires_grad and type(cl.grad_fn).__name__ == "CloneBackward0"
    f64 = pg.asarray(leaf, dtype=pg.float64)
    assert f64.dtype is pg.float64 and type(f64.grad_fn).__name__ == "ToCopyBackward0"
    (cl.sum() + f64.sum()).backward()
    assert leaf.grad is not None and leaf.grad.tolist() == [2.0, 2.0, 2.0]
    plain = pg.ones(2, device=device)
    assert pg.asarray(plain, requires_grad=True) is plain and plain.requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require"):
        pg.asarray([1, 2], requires_grad=True)


def test_asarray_reads_buffers_as_the_dtype() -> None:
    """The buffer protocol: the bytes as they are, read as ``dtype`` (the default dtype when
    none is given, whatever a memoryview's format says, as PyTorch reads them)."""
    assert pg.asarray(bytearray(b"\x01\x02"), dtype=pg.uint8).tolist() == [1, 2]
    assert pg.asarray(bytearray(8), dtype=pg.float32).tolist() == [0.0, 0.0]
    ints = np.arange(3, dtype=np.int32)
    got = pg.asarray(memoryview(ints))
    assert got.dtype is pg.float32 and got.view(pg.int32).tolist() == [0, 1, 2]
    buf = bytearray(4)
    shared = pg.asarray(buf, dtype=pg.uint8)
    buf[2] = 9
    assert shared.tolist() == [0, 0, 9, 0]


# ------------------------------------------------------------- empty_strided, randint flags
def test_empty_strided_checks(device: str) -> None:
    with pytest.raises(RuntimeError, match=r"^dimensionality of sizes \(2\) must match "
                       r"dimensionality of strides \(1\)$"):
        pg.empty_strided((2, 3), (1,), device=device)
    with pytest.raises(RuntimeError, match=r"Storage size calculation overflowed with "
                       r"sizes=\[2, 3\] and strides=\[-1, 1\]"):
        pg.empty_strided((2, 3), (-1, 1), device=device)
    with pytest.raises(RuntimeError, match="negative dimension -2"):
        pg.empty_strided((-2, 3), (3, 1), device=device)
    t = pg.empty_strided((2, 3), (1, 2), device=device)
    assert t.shape == (2, 3) and t.stride() == (1, 2)


def test_randint_requires_grad(device: str) -> None:
    """``randint``/``randint_like`` honour ``requires_grad`` (they dropped it): a float result
    requires grad, an integer one refuses."""
    x = pg.ones(3, device=device)
    assert pg.randint_like(x, 5, requires_grad=True).requires_grad
    assert pg.randint(0, 5, (2,), dtype=pg.float32, device=device, requires_grad=True).requires_grad
    assert not pg.randint_like(x, 5).requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require"):
        pg.randint(0, 5, (2,), device=device, requires_grad=True)


@pytest.mark.parametrize("make, dtype", [
    (lambda: [np.ones(2), np.zeros(2)], "float64"),
    (lambda: [np.ones(2, np.float32)], "float32"),
    (lambda: [np.ones(2, np.int32)], "int32"),
    (lambda: [np.ones(2, np.int32), [1.5, 2.0]], "float32"),
    (lambda: [np.ones(2), np.ones(2, np.float32)], "float64"),
    (lambda: [np.ones(2, np.uint8)], "uint8"),
    (lambda: [np.ones(2, bool)], "bool"),
    (lambda: [np.ones(2, np.float16)], "float16"),
    (lambda: [[np.ones(2)], [np.zeros(2)]], "float64"),
    (lambda: [np.ones(2), [1, 2]], "float64"),
    (lambda: [np.ones(2, np.complex64)], "complex64"),
])
def test_numpy_arrays_in_sequences_keep_their_dtype(device: str, make, dtype: str) -> None:
    """PyTorch 2.13's dtypes: a numpy array inside a list counts with its own dtype (float64
    data was rounded to float32 before)."""
    try:
        t = pg.tensor(make(), device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no {dtype}")
    assert t.dtype is getattr(pg, dtype)
    if dtype == "float64":
        assert pg.as_tensor(make(), device=device).dtype is pg.float64


def test_float64_arrays_in_a_list_keep_their_values(device: str) -> None:
    try:
        t = pg.tensor([np.array([0.1, 0.2])], device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no float64")
    assert t.tolist() == [[0.1, 0.2]]


@pytest.mark.parametrize("data, exc, msg", [
    (None, RuntimeError, "^Could not infer dtype of NoneType$"),
    ([1, None], RuntimeError, "^Could not infer dtype of NoneType$"),
    ([[1], [None]], RuntimeError, "^Could not infer dtype of NoneType$"),
    ({"a": 1}, RuntimeError, "^Could not infer dtype of dict$"),
    ({1, 2}, RuntimeError, "^Could not infer dtype of set$"),
    ((x for x in range(2)), RuntimeError, "^Could not infer dtype of generator$"),
    ([object()], RuntimeError, "^Could not infer dtype of object$"),
    ([2**63], ValueError, "^Overflow when unpacking long long$"),
    (2**63, ValueError, "^Overflow when unpacking long long$"),
    ([1, 2**64], ValueError, "^Overflow when unpacking long long$"),
    ([-2**63 - 1], ValueError, "^Overflow when unpacking long long$"),
    ([1, "a"], TypeError, "^new\\(\\): invalid data type 'str'$"),
    ([b"a"], TypeError, "^new\\(\\): invalid data type 'bytes'$"),
])
def test_tensor_refuses_what_is_not_a_number(device: str, data, exc, msg) -> None:
    """PyTorch 2.13's exception types and words for data that is not numbers."""
    with pytest.raises(exc, match=msg):
        pg.tensor(data, device=device)


def test_int64_edges_and_arange_sign(device: str) -> None:
    assert pg.tensor([2**63 - 1, -2**63], device=device).tolist() == [2**63 - 1, -2**63]
    assert pg.tensor([2**63], dtype=pg.float32, device=device).item() == 2.0**63
    with pytest.raises(RuntimeError, match="^upper bound and lower bound inconsistent with "
                       "step sign$"):
        pg.arange(0, 5, -1, device=device)


@pytest.mark.parametrize("dtype, value, cname", [
    ("float32", 1e40, "float"), ("float32", 3.5e38, "float"), ("float16", 1e5, "c10::Half"),
    ("bfloat16", 1e39, "c10::BFloat16"), ("float32", 10**40, "float")])
def test_scalars_past_a_float_dtype_are_refused(device: str, dtype: str, value, cname: str
                                                ) -> None:
    """PyTorch refuses to store a finite number past the dtype's largest (fill_, full,
    masked_fill, where, x[i] = v); infinities are stored; arithmetic overflows to inf."""
    dt = getattr(pg, dtype)
    try:
        x = pg.ones(2, dtype=dt, device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no {dtype}")
    msg = f"^value cannot be converted to type {cname} without overflow$"
    mask = pg.tensor([True, False], device=device)
    for store in (lambda: x.fill_(value), lambda: pg.full((2,), value, dtype=dt, device=device),
                  lambda: x.masked_fill(mask, value), lambda: pg.where(mask, x, value),
                  lambda: x.__setitem__(0, value)):
        with pytest.raises(RuntimeError, match=msg):
            store()
    assert x.fill_(float("inf")).tolist() == [float("inf")] * 2
    assert (pg.ones(2, dtype=dt, device=device) * value).tolist() == [float("inf")] * 2


def test_integer_overflow_names_the_c_type(device: str) -> None:
    x = pg.ones(2, dtype=pg.int64, device=device)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without "
                       "overflow$"):
        x[0] = float("nan")


def test_copying_a_tensor_warns_as_pytorch(device: str) -> None:
    src = pg.ones(2, device=device)
    with pytest.warns(UserWarning, match=r"rather than torch\.tensor\(sourceTensor\)"):
        pg.tensor(src)
    with pytest.warns(UserWarning, match=r"rather than tensor\.new_tensor\(sourceTensor\)"):
        src.new_tensor(src)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.as_tensor(src)  # no copy: no warning
        pg.tensor([1.0, 2.0], device=device)
