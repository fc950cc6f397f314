"""Creation and conversion as PyTorch 2.13 infers dtypes and shapes: numpy scalars in
arithmetic and in sequences, tensors inside sequences, Python's number protocols. Expected
values are PyTorch's, written out."""
from __future__ import annotations

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
