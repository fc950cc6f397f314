"""The legacy tensor types ``pg.FloatTensor`` ... as PyTorch's: constructors, ``isinstance`` and
``Tensor.type``."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg

# (type name, dtype name): every legacy type PyTorch has
TYPES = [("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
         ("LongTensor", "int64"), ("IntTensor", "int32"), ("BoolTensor", "bool"),
         ("ByteTensor", "uint8"), ("CharTensor", "int8"), ("ShortTensor", "int16"),
         ("BFloat16Tensor", "bfloat16")]


@pytest.mark.parametrize("name,dt", TYPES)
def test_call_forms(name: str, dt: str) -> None:
    T, dtype = getattr(pg, name), getattr(pg, dt)
    assert T.dtype is dtype and T.is_cuda is False
    sized = T(2, 3)
    assert sized.shape == (2, 3) and sized.dtype is dtype and sized.device == pg.device("cpu")
    assert T(pg.Size([4])).shape == (4,) and T(5).shape == (5,)
    assert T().shape == (0,)
    data = T([1, 0, 1])
    assert data.dtype is dtype and data.tolist() == np.array([1, 0, 1]).astype(dtype.numpy).tolist()
    assert T((1, 0)).shape == (2,)  # a tuple is data, as in PyTorch
    assert T(np.array([[1, 0]])).shape == (1, 2)
    src = pg.zeros(3, dtype=dtype)
    alias = T(src)
    assert alias is not src and alias.shape == (3,)
    alias[0] = 1  # the same storage, as PyTorch
    assert src[0].item() == 1
    assert isinstance(data, T) and isinstance(pg.zeros(1, dtype=dtype), T)
    assert not isinstance(np.zeros(1), T)
    assert not issubclass(T, pg.Tensor)


def test_isinstance_checks_dtype_and_device(device: str) -> None:
    x = pg.ones(2, device=device)
    assert isinstance(x, pg.FloatTensor) == (device == "cpu")
    assert not isinstance(x, pg.LongTensor) and not isinstance(x, pg.DoubleTensor)
    assert isinstance(pg.ones(2, requires_grad=True), pg.FloatTensor)
    assert isinstance(pg.tensor([1]), pg.LongTensor)


def test_type_converts(device: str) -> None:
    x = pg.tensor([1.5, 2.5], device=device)
    for target in (pg.LongTensor, "torch.LongTensor", "portagrad.LongTensor"):
        y = x.type(target)  # a CPU type: the result is on the cpu, as in PyTorch
        assert y.dtype is pg.int64 and y.device == pg.device("cpu") and y.tolist() == [1, 2]
    z = x.type(pg.float64)  # a dtype keeps the device
    assert z.dtype is pg.float64 and z.device == x.device
    assert pg.ones(1).type() == "portagrad.FloatTensor"
    with pytest.raises(ValueError, match="invalid type: 'torch.Foo'"):
        x.type("torch.Foo")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        x.type("torch.cuda.FloatTensor")


def test_bad_calls_raise_like_torch() -> None:
    with pytest.raises(TypeError, match="data must be a sequence"):
        pg.FloatTensor(2.5)
    with pytest.raises(TypeError, match="data must be a sequence"):
        pg.FloatTensor("ab")
    with pytest.raises(TypeError, match="expected dtype portagrad.float32"):
        pg.FloatTensor(pg.ones(2, dtype=pg.int64))
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        pg.FloatTensor(-1)
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        pg.FloatTensor([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="expects device type: cpu but device type: opencl"):
        pg.FloatTensor([1.0], device="opencl:0")
    assert pg.FloatTensor([1.0], device="cpu").tolist() == [1.0]


def test_module_type_takes_legacy_types_and_dtypes() -> None:
    m = pg.nn.Linear(2, 2)
    assert m.type(pg.DoubleTensor) is m and m.weight.dtype is pg.float64
    assert isinstance(m.weight, pg.nn.Parameter)
    assert m.type(pg.float32).bias.dtype is pg.float32


def test_tensor_constructor_and_new(device: str) -> None:
    assert pg.Tensor().shape == (0,) and pg.Tensor().dtype is pg.float32
    assert pg.Tensor(2, 3).shape == (2, 3) and pg.Tensor([1, 2]).tolist() == [1.0, 2.0]
    x = pg.ones(2, dtype=pg.int64, device=device)
    for y, shape in ((x.new(2, 3), (2, 3)), (x.new(pg.Size([4])), (4,)), (x.new(), (0,)),
                     (x.new([1, 2]), (2,)), (x.new((1, 2, 3)), (3,))):
        assert y.shape == shape and y.dtype is pg.int64 and y.device == x.device
    assert x.new([5, 6]).tolist() == [5, 6] and x.new(np.array([7])).tolist() == [7]
    for y in (x.new_zeros(size=(2,)), x.new_ones(size=[2]), x.new_empty(size=(2,)),
              x.new_zeros(2), x.new_ones((2,))):
        assert y.shape == (2,) and y.dtype is pg.int64 and y.device == x.device
    assert x.new_zeros(size=(2,)).tolist() == [0, 0] and x.new_ones(size=(2,)).tolist() == [1, 1]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'size'"):
        x.new_zeros()


def test_set_default_tensor_type_sets_the_default_dtype() -> None:
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            pg.set_default_tensor_type(pg.DoubleTensor)
        assert pg.get_default_dtype() is pg.float64 and pg.ones(1).dtype is pg.float64
        with pytest.warns(UserWarning):
            pg.set_default_tensor_type("torch.FloatTensor")
        assert pg.get_default_dtype() is pg.float32
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point"):
            pg.set_default_tensor_type(pg.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="invalid type object"):
            pg.set_default_tensor_type(pg.float64)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="not compiled with CUDA"):
            pg.set_default_tensor_type("torch.cuda.FloatTensor")
    finally:
        pg.set_default_dtype(pg.float32)
