"""Python's operator protocol on tensors: an operand a tensor cannot take makes the operator
return ``NotImplemented``, so Python tries the other operand's reflected method (a user's
operator class) and otherwise raises its own ``TypeError``, as torch's tensors do."""
from __future__ import annotations

import pytest

import portagrad as pg


class _Reflects:
    """An operand with reflected operators only, as a linear-operator class has."""

    def __rmatmul__(self, other):
        return ("rmatmul", other.shape)

    def __radd__(self, other):
        return ("radd", other.shape)

    def __rmul__(self, other):
        return ("rmul", other.shape)


@pytest.mark.parametrize("op", ["@", "+", "*"])
def test_reflected_operand_gets_its_turn(device: str, op: str) -> None:
    import operator

    fn = {"@": operator.matmul, "+": operator.add, "*": operator.mul}[op]
    got = fn(pg.ones(2, 3, device=device), _Reflects())
    assert got == ({"@": "rmatmul", "+": "radd", "*": "rmul"}[op], (2, 3))


@pytest.mark.parametrize("other", [[1.0, 2.0], 3, (1.0, 2.0), "a"], ids=lambda o: type(o).__name__)
def test_matmul_with_a_non_tensor_is_pythons_type_error(device: str, other) -> None:
    t = pg.ones(2, device=device)
    name = type(other).__name__
    with pytest.raises(TypeError, match=rf"^unsupported operand type\(s\) for @: 'Tensor' and '{name}'$"):
        t @ other
    with pytest.raises(TypeError, match=rf"^unsupported operand type\(s\) for @: '{name}' and 'Tensor'$"):
        other @ t


def test_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (torch, pg):
        t = lib.ones(2)
        assert t @ _Reflects() == ("rmatmul", lib.Size([2]) if lib is torch else (2,))
        with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for @"):
            t @ [1.0, 2.0]


# ------------------------------------------------- Python's protocols, PyTorch 2.13's answers
def test_contains_bool_and_format(device: str) -> None:
    """``in`` compares elementwise (a tensor element broadcast); ``bool()`` of an empty tensor
    and a format spec on a tensor of several elements get PyTorch's errors."""
    t = pg.tensor([1, 2], device=device)
    assert 2 in t and 5 not in t
    assert pg.tensor([1, 2], device=device) in pg.tensor([[1, 2]], device=device)
    with pytest.raises(RuntimeError, match=r"^Tensor.__contains__ only supports Tensor or "
                       r"scalar, but you passed in a <class 'str'>\.$"):
        "a" in t  # noqa: B015
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with no values is "
                       "ambiguous$"):
        bool(pg.ones(0, device=device))
    with pytest.raises(RuntimeError, match="more than one value"):
        bool(pg.ones(2, device=device))
    assert f"{pg.tensor(1.5, device=device):.2f}" == "1.50"
    with pytest.raises(TypeError, match="^unsupported format string passed to "
                       "Tensor.__format__$"):
        f"{pg.ones(2, device=device):.2f}"
    assert f"{pg.ones(2, device=device)}" == str(pg.ones(2, device=device))


def test_grad_and_data_setters(device: str) -> None:
    x = pg.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^attempting to assign a gradient of size '\[3\]' "
                       r"to a tensor of size '\[2\]'\. Please ensure that the gradient and the "
                       r"tensor are the same size$"):
        x.grad = pg.ones(3, device=device)
    with pytest.raises(TypeError, match="^assigned grad expected to be a Tensor or None but got "
                       "grad of type int$"):
        x.grad = 3  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="^data set to a tensor that requires gradients must "
                       "be floating point or complex dtype$"):
        x.data = pg.zeros(2, dtype=pg.int64, device=device)
    assert x.dtype is pg.float32 and x.requires_grad
    x.data = pg.zeros(5, device=device)  # another shape is allowed, as in PyTorch
    assert x.shape == (5,)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        pg.ones(2, device=device).to(pg.float64, pg.float16)
