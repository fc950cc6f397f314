"""Integer division by zero raises the same error on every backend (never garbage)."""
import pytest

import portagrad as pg


@pytest.mark.parametrize("op", [lambda a, b: a // b, lambda a, b: a % b,
                                lambda a, b: pg.div(a, b, rounding_mode="trunc"),
                                lambda a, b: pg.fmod(a, b)])
def test_integer_division_by_zero(device, op):
    a = pg.tensor([7, -7, 3], device=device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(a, pg.tensor([2, 0, 1], device=device))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(a, 0)


def test_integer_division_values(device):
    a = pg.tensor([7, -7, 7, -7], device=device)
    b = pg.tensor([2, 2, -2, -2], device=device)
    assert (a // b).tolist() == [3, -4, -4, 3]
    assert (a % b).tolist() == [1, 1, -1, -1]
    assert pg.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert pg.fmod(a, b).tolist() == [1, -1, 1, -1]
