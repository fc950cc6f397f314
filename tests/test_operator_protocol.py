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
