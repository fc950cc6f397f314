"""bfloat16 add/sub/mul/div/maximum/minimum on the cpu device run ml_dtypes' own loops (with
numba, add/sub/mul/div of tensors from 4096 elements a one-pass loop over the bit patterns)
instead of float32 copies: bit for bit the float32 result rounded once (NaN for NaN), over every bfloat16
bit pattern against random partners and with Python scalars that are exactly bfloat16 (others
keep the float32 path: a bfloat16 loop would round the scalar first)."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.numpy import backend as nb
from portagrad.backends.numpy.arrays import BFLOAT16_NP

_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
        "maximum": np.maximum, "minimum": np.minimum}


def _reference(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _OPS[op](a.astype(np.float32), b.astype(np.float32)).astype(BFLOAT16_NP)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    g, w = got.astype(np.float32), want.astype(np.float32)
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


@pytest.mark.parametrize("op", sorted(_OPS))
def test_every_bit_pattern(op: str) -> None:
    a = np.arange(1 << 16, dtype=np.uint16).view(BFLOAT16_NP)
    b = np.random.default_rng(1).permutation(a)
    got = pg.tensor(a.astype(np.float32)).to(pg.bfloat16)
    other = pg.tensor(b.astype(np.float32)).to(pg.bfloat16)
    with np.errstate(all="ignore"):
        res = getattr(pg, op)(got, other)
    _same(res.view(pg.int16).numpy().view(BFLOAT16_NP), _reference(op, a, b))


@pytest.mark.parametrize("size", [1000, 9000])  # (numba's one-pass loop from 4096 elements)
@pytest.mark.parametrize("scalar", [0.5, 3, -2.0, 0.1, 1e-40, 65504.0, 19945])
def test_python_scalars(scalar: float, size: int) -> None:
    """PyTorch's rule for a scalar operand of a 16-bit float op: the second operand of mul and
    div is taken at float32, any other scalar is rounded to bfloat16 (through float32) first.
    Large, tiny, infinite and NaN elements among the values."""
    a = (np.random.default_rng(2).standard_normal(size) * 1e3).astype(BFLOAT16_NP)
    a[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 3.3e38, 1e-39]
    x = pg.tensor(a.astype(np.float32)).to(pg.bfloat16)
    rounded = float(np.float32(scalar).astype(BFLOAT16_NP))
    af = a.astype(np.float32)
    cases = (
        (lambda t: t + scalar, lambda: af + np.float32(rounded)),
        (lambda t: scalar - t, lambda: np.float32(rounded) - af),
        (lambda t: pg.mul(scalar, t), lambda: np.float32(rounded) * af),
        (lambda t: t * scalar, lambda: af * np.float32(scalar)),
        (lambda t: scalar * t, lambda: af * np.float32(scalar)),  # x.mul(scalar), as PyTorch
        (lambda t: t / scalar, lambda: af / np.float32(scalar)),
        (lambda t: scalar / t, lambda: np.float32(rounded) / af),
    )
    for fn, ref in cases:
        with np.errstate(all="ignore"):
            want = ref().astype(BFLOAT16_NP)
        _same(fn(x).view(pg.int16).numpy().view(BFLOAT16_NP), want)


def test_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two bfloat16 tensors, or one and a scalar that is (or is rounded to) a bfloat16, take the
    native loops; a scalar multiplier kept at float32 (0.1 is not a bfloat16) keeps the float32
    copies."""
    assert nb._bf16_exact(0.5) and nb._bf16_exact(3) and not nb._bf16_exact(0.1)
    assert not nb._bf16_exact(float("nan")) and not nb._bf16_exact(10 ** 400)
    calls: list[str] = []

    def spy(*a: object, **k: object) -> object:
        calls.append("add")
        return np.add(*a, **k)

    monkeypatch.setitem(nb._BF16_UFUNCS, "add", spy)
    x = pg.ones(8, dtype=pg.bfloat16)
    assert (x + x).float().tolist() == [2.0] * 8 and calls == ["add"]
    assert (x + 0.5).float().tolist() == [1.5] * 8 and calls == ["add", "add"]
    # 0.1 is rounded to bfloat16 for add (PyTorch's rule), then exact: the native loop again
    assert (x + 0.1).float().tolist() == [1.1015625] * 8 and calls == ["add"] * 3
    monkeypatch.setitem(nb._BF16_UFUNCS, "mul", lambda *a, **k: calls.append("mul"))
    assert (x * 0.1).float().tolist() == [0.10009765625] * 8 and "mul" not in calls


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_row_broadcast_and_in_place(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bias of one row against (B, T, N) activations, the row on either side, and the
    in-place form (``out`` is the first operand): with numba the one-pass loop over the bit
    patterns (checked to be the path taken), bit for bit the float32 result rounded once."""
    from portagrad.backends.numpy import jit
    calls: list[str] = []
    if jit.available():
        real = jit.bf16_binary_rows
        monkeypatch.setattr(jit, "bf16_binary_rows",
                            lambda o, *a: calls.append(o) or real(o, *a))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 40, 64)).astype(BFLOAT16_NP)
    row = rng.standard_normal(64).astype(BFLOAT16_NP)
    row[:3] = [0.0, np.inf, np.nan]
    tx = pg.tensor(x.astype(np.float32)).to(pg.bfloat16)
    tr = pg.tensor(row.astype(np.float32)).to(pg.bfloat16)
    _same(getattr(pg, op)(tx, tr).view(pg.int16).numpy().view(BFLOAT16_NP),
          _reference(op, x, row[None, None]))
    _same(getattr(pg, op)(tr, tx).view(pg.int16).numpy().view(BFLOAT16_NP),
          _reference(op, row[None, None], x))
    y = tx.clone()
    getattr(y, op + "_")(tr)
    _same(y.view(pg.int16).numpy().view(BFLOAT16_NP), _reference(op, x, row[None, None]))
    if jit.available():
        assert calls == [op] * 3


@pytest.mark.skipif(not nb.jit.available(), reason="numba is not installed")
def test_a_scalar_operand_takes_one_pass_from_4096_elements(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """With numba, a bfloat16 tensor of 4096 elements or more and a scalar (attention's scale,
    dropout's 1 / (1 - p)) run one loop over the bit patterns, not float32 copies."""
    calls: list[str] = []
    real = nb.jit.bf16_scalar_op
    monkeypatch.setattr(nb.jit, "bf16_scalar_op", lambda op, *a: calls.append(op) or real(op, *a))
    x = pg.full((64, 64), 3.0, dtype=pg.bfloat16)
    assert (x * 0.1).float()[0, :2].tolist() == [0.30078125] * 2  # 3 * float32(0.1), rounded
    assert (1.0 - x).float()[0, 0].item() == -2.0
    assert calls == ["mul", "sub"]
    assert (pg.ones(4095, dtype=pg.bfloat16) * 0.1).dtype is pg.bfloat16 and len(calls) == 2
