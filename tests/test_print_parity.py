"""``repr`` of tensors laid out exactly as PyTorch 2.13 lays them out (``torch.`` spelled
``portagrad.``): scientific notation, column widths, summaries, suffixes and line wrapping."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

import portagrad as pg

nan, inf = float("nan"), float("inf")


@pytest.fixture(autouse=True)
def _default_printoptions() -> Iterator[None]:
    pg.set_printoptions(profile="default")
    yield
    pg.set_printoptions(profile="default")


@pytest.mark.parametrize("values, dtype, expected", [
    ([0.001, 1000.0], None, "tensor([1.0000e-03, 1.0000e+03])"),
    ([1.0, 2000.0], None, "tensor([1.0000e+00, 2.0000e+03])"),
    ([1.0, 1000.0], None, "tensor([   1., 1000.])"),
    ([0.5, 600.0], None, "tensor([5.0000e-01, 6.0000e+02])"),
    ([0.5, 400.0], None, "tensor([  0.5000, 400.0000])"),
    ([9.9e7, 1.0], None, "tensor([9.9000e+07, 1.0000e+00])"),
    ([1e8], None, "tensor([100000000.])"),
    ([1.5e8], None, "tensor([1.5000e+08])"),
    ([1e-4, 1.0], None, "tensor([1.0000e-04, 1.0000e+00])"),
    ([0.00011, 0.1], None, "tensor([0.0001, 0.1000])"),
    ([1e-5 + 1e5j, 1j], None, "tensor([1.0000e-05+1.0000e+05j, 0.0000e+00+1.0000e+00j])"),
    ([1.1, 300.7, -0.001], pg.bfloat16,
     "tensor([ 1.1016e+00,  3.0000e+02, -9.9945e-04], dtype=portagrad.bfloat16)"),
    ([1.0, 2000.0], pg.float64, "tensor([1.0000e+00, 2.0000e+03], dtype=portagrad.float64)"),
])
def test_scientific_notation(values: list, dtype: pg.dtype | None, expected: str) -> None:
    assert repr(pg.tensor(values, dtype=dtype)) == expected


@pytest.mark.parametrize("values, expected", [
    ([nan, 1.0], "tensor([nan, 1.])"),
    ([-0.0, 0.0, 1.0], "tensor([-0., 0., 1.])"),
    ([nan + 1j, 1j], "tensor([nan+1.j, 0.+1.j])"),
    ([inf, 1.5], "tensor([   inf, 1.5000])"),
    ([1.5, -inf], "tensor([1.5000,   -inf])"),
    ([nan, 100.0], "tensor([ nan, 100.])"),
    ([nan], "tensor([nan])"),
    (nan, "tensor(nan)"),
    (-0.0, "tensor(-0.)"),
    ([1 + nan * 1j, 2.5 - 1j], "tensor([   nan+nanj, 2.5000-1.j])"),
    ([-3, 250], "tensor([ -3, 250])"),
])
def test_widths_from_nonzero_finite_values(values: object, expected: str) -> None:
    assert repr(pg.tensor(values)) == expected


def test_summaries() -> None:
    assert repr(pg.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert repr(pg.arange(2000.0).reshape(40, 50) / 4 + 1) == (
        "tensor([[  1.0000,   1.2500,   1.5000,  ...,  12.7500,  13.0000,  13.2500],\n"
        "        [ 13.5000,  13.7500,  14.0000,  ...,  25.2500,  25.5000,  25.7500],\n"
        "        [ 26.0000,  26.2500,  26.5000,  ...,  37.7500,  38.0000,  38.2500],\n"
        "        ...,\n"
        "        [463.5000, 463.7500, 464.0000,  ..., 475.2500, 475.5000, 475.7500],\n"
        "        [476.0000, 476.2500, 476.5000,  ..., 487.7500, 488.0000, 488.2500],\n"
        "        [488.5000, 488.7500, 489.0000,  ..., 500.2500, 500.5000, 500.7500]])")
    text = repr(pg.arange(7 * 11 * 13).reshape(7, 11, 13))
    assert text.startswith("tensor([[[   0,    1,    2,  ...,   10,   11,   12],\n"
                           "         [  13,   14,   15,  ...,   23,   24,   25],\n")
    assert "         ...,\n         [ 104," in text
    assert "        ...,\n\n        [[ 572,  573," in text


def test_empty_suffix_order() -> None:
    assert repr(pg.zeros(2, 0, dtype=pg.float64)) == \
        "tensor([], size=(2, 0), dtype=portagrad.float64)"
    assert repr(pg.zeros(2, 0, dtype=pg.float64, requires_grad=True)) == \
        "tensor([], size=(2, 0), dtype=portagrad.float64, requires_grad=True)"
    assert repr(pg.zeros(0, dtype=pg.int64)) == "tensor([], dtype=portagrad.int64)"
    assert repr(pg.zeros(0, dtype=pg.bool)) == "tensor([], dtype=portagrad.bool)"
    assert repr(pg.zeros(0)) == "tensor([])"
    assert repr(pg.zeros(2, 0)) == "tensor([], size=(2, 0))"


def test_suffixes_wrap_at_line_width() -> None:
    assert repr(pg.tensor([1e-5, 1, 1e5], dtype=pg.complex128)) == (
        "tensor([1.0000e-05+0.j, 1.0000e+00+0.j, 1.0000e+05+0.j],\n"
        "       dtype=portagrad.complex128)")
    assert repr(pg.tensor([1e-5, 1, 1e5], dtype=pg.complex128, requires_grad=True)) == (
        "tensor([1.0000e-05+0.j, 1.0000e+00+0.j, 1.0000e+05+0.j],\n"
        "       dtype=portagrad.complex128, requires_grad=True)")
    assert repr(pg.tensor([1.0, 2.0], dtype=pg.float64, requires_grad=True) * 2) == \
        "tensor([2., 4.], dtype=portagrad.float64, grad_fn=<MulBackward0>)"


def test_device_suffix_wraps(device: str) -> None:
    if not device.startswith("opencl:"):  # (the breaks below are for a suffix of that length)
        pytest.skip(f"the expected line breaks are those of device='opencl:N', not {device}")
    d = f"device='{device}'"
    x = pg.tensor([1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5], dtype=pg.float64, device=device)
    assert repr(x) == ("tensor([1.5000, 2.5000, 3.5000, 4.5000, 5.5000, 6.5000, 7.5000],\n"
                       f"       {d}, dtype=portagrad.float64)")
    assert repr(x[:6]) == ("tensor([1.5000, 2.5000, 3.5000, 4.5000, 5.5000, 6.5000], "
                           f"{d},\n       dtype=portagrad.float64)")
    assert repr(pg.zeros(2, 0, dtype=pg.int32, device=device)) == \
        f"tensor([], {d}, size=(2, 0), dtype=portagrad.int32)"


def test_elements_per_line() -> None:
    assert repr((pg.arange(60.0) * 1.25).reshape(3, 20)).split("\n")[:2] == [
        "tensor([[ 0.0000,  1.2500,  2.5000,  3.7500,  5.0000,  6.2500,  7.5000,  8.7500,",
        "         10.0000, 11.2500, 12.5000, 13.7500, 15.0000, 16.2500, 17.5000, 18.7500,"]
    assert repr(pg.arange(20.0) * (1 + 2j)) == (
        "tensor([ 0.+0.j,  1.+2.j,  2.+4.j,  3.+6.j,  4.+8.j,  5.+10.j,  6.+12.j,  7.+14.j,\n"
        "         8.+16.j,  9.+18.j, 10.+20.j, 11.+22.j, 12.+24.j, 13.+26.j, 14.+28.j, 15.+30.j,\n"
        "        16.+32.j, 17.+34.j, 18.+36.j, 19.+38.j])")


def test_profiles() -> None:
    from portagrad._format import _opts

    pg.set_printoptions(profile="short")
    assert repr(pg.arange(10.0) + 0.125) == \
        "tensor([0.12, 1.12, 2.12, 3.12, 4.12, 5.12, 6.12, 7.12, 8.12, 9.12])"
    assert repr(pg.arange(2000)) == "tensor([   0,    1,  ..., 1998, 1999])"
    pg.set_printoptions(profile="full")
    assert "..." not in repr(pg.arange(2000))
    pg.set_printoptions(precision=6, linewidth=50, sci_mode=True)
    pg.set_printoptions(profile="default")
    assert (_opts["precision"], _opts["threshold"], _opts["edgeitems"], _opts["linewidth"],
            _opts["sci_mode"]) == (4, 1000, 3, 80, None)
    pg.set_printoptions(profile="short", precision=6)
    assert (_opts["precision"], _opts["edgeitems"]) == (6, 2)
    with pytest.raises(ValueError):
        pg.set_printoptions(profile="long")


_CASES: list[tuple[object, str | None]] = [
    ([0.001, 1000.0], None), ([1.0, 2000.0], None), ([0.5, 600.0], None), ([9.9e7, 1.0], None),
    ([1e8], None), ([1e-5 + 1e5j, 1j], None), ([1.1, 300.7, -0.001], "bfloat16"),
    ([nan, 1.0], None), ([-0.0, 0.0, 1.0], None), ([nan + 1j, 1j], None), ([inf, 1.5], None),
    ([1 + nan * 1j, 2.5 - 1j], None), ([1e-5, 1, 1e5], "complex128"), ([1, 2], "int32"),
    ([True, False], None), ([1e-5, 3e4], "float16"), ([[1e-5, 2], [3, 4]], "float64"),
    ([-1.0, 2.5, -1000.25], None), (1.5, None), (2 + 3j, None), (1e9, None), (True, None),
    ([[1.5, -2.0], [3.0, 4.0]], None), ([x + 0.5 for x in range(15)], None),
]


@pytest.mark.parametrize("options", [{}, {"profile": "short"}, {"sci_mode": True},
                                     {"sci_mode": False}, {"precision": 2, "linewidth": 60},
                                     {"edgeitems": 1, "threshold": 10}])
def test_matches_torch(options: dict) -> None:
    torch = pytest.importorskip("torch")
    pairs = [(torch.tensor(v, dtype=None if dt is None else getattr(torch, dt)),
              pg.tensor(v, dtype=None if dt is None else getattr(pg, dt))) for v, dt in _CASES]
    pairs += [
        ((torch.arange(60.0) * 1.25).reshape(3, 20), (pg.arange(60.0) * 1.25).reshape(3, 20)),
        (torch.arange(20.0) * (1 + 2j), pg.arange(20.0) * (1 + 2j)),
        (torch.arange(2000), pg.arange(2000)),
        (torch.arange(2000.0).reshape(2, 10, 100), pg.arange(2000.0).reshape(2, 10, 100)),
        (torch.arange(7 * 11 * 13).reshape(7, 11, 13), pg.arange(7 * 11 * 13).reshape(7, 11, 13)),
        (torch.arange(5000.0).reshape(50, 100) / 3, pg.arange(5000.0).reshape(50, 100) / 3),
        (torch.arange(1200).reshape(30, 40) % 7 == 0, pg.arange(1200).reshape(30, 40) % 7 == 0),
        (torch.arange(12.0).reshape(3, 4) * (1 - 1j) / 3, pg.arange(12.0).reshape(3, 4) * (1 - 1j) / 3),
        (torch.arange(40.0) * (1e5 + 1e-5j), pg.arange(40.0) * (1e5 + 1e-5j)),
        (torch.zeros(2, 0, 3, dtype=torch.complex64), pg.zeros(2, 0, 3, dtype=pg.complex64)),
        (torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True) * 2,
         pg.tensor([1.0, 2.0], dtype=pg.float64, requires_grad=True) * 2),
    ]
    torch.set_printoptions(**options)
    pg.set_printoptions(**options)
    try:
        for t, p in pairs:
            assert repr(p) == repr(t).replace("torch.", "portagrad.")
    finally:
        torch.set_printoptions(profile="default")
