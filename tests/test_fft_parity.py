"""PyTorch 2.13's window functions (values in float16/bfloat16, dtype and length checks),
``stft``/``istft`` dtype promotion with the window and their no-window warnings, ``fftfreq``'s
dtype checks and the one-dimensional transforms' 16-bit refusal; expected values are PyTorch
2.13's, written out."""
from __future__ import annotations

import math
import warnings

import pytest

import portagrad as pg
from portagrad._ops import stft as _stft_mod

NAN, INF = math.nan, math.inf

# (name, length, periodic, dtype name) -> PyTorch's window
LOW_WINDOWS = {
    ("hann_window", 7, True, "float16"):
        [0.0, 0.188232421875, 0.611328125, 0.9501953125, 0.95068359375, 0.611328125,
         0.189453125],
    ("hann_window", 10, False, "bfloat16"):
        [0.0, 0.1171875, 0.4140625, 0.75, 0.96875, 0.96875, 0.75, 0.404296875, 0.11328125, 0.0],
    ("hamming_window", 7, True, "float16"):
        [0.080078125, 0.253173828125, 0.64208984375, 0.9541015625, 0.95458984375,
         0.64208984375, 0.25439453125],
    ("hamming_window", 10, False, "bfloat16"):
        [0.078125, 0.185546875, 0.4609375, 0.76953125, 0.97265625, 0.96875, 0.76953125,
         0.44921875, 0.181640625, 0.078125],
    ("blackman_window", 7, True, "float16"):
        [0.0, 0.09033203125, 0.458984375, 0.919921875, 0.92041015625, 0.458984375,
         0.091064453125],
    ("blackman_window", 10, False, "bfloat16"):
        [0.0, 0.05078125, 0.2578125, 0.62890625, 0.953125, 0.9453125, 0.62890625, 0.25,
         0.048828125, 0.0],
    ("bartlett_window", 7, True, "float16"):
        [0.0, 0.28564453125, 0.5712890625, 0.85693359375, 0.857421875, 0.572265625,
         0.2861328125],
    ("bartlett_window", 10, False, "bfloat16"):
        [0.0, 0.22265625, 0.4453125, 0.66796875, 0.890625, 0.890625, 0.6640625, 0.4375,
         0.21875, 0.0],
    ("kaiser_window", 7, True, "float16"):
        [5.27501106262207e-05, 0.03277587890625, 0.330810546875, 0.888671875, 0.888671875,
         0.330810546875, 0.03277587890625],
    ("kaiser_window", 10, False, "bfloat16"):
        [5.269050598144531e-05, 0.01470947265625, 0.1455078125, 0.51953125, 0.9296875,
         0.9296875, 0.51953125, 0.1455078125, 0.01470947265625, 5.269050598144531e-05],
}


@pytest.mark.parametrize("key", sorted(LOW_WINDOWS))
def test_window_16bit_rounding(device: str, key: tuple) -> None:
    name, length, periodic, dtname = key
    try:
        w = getattr(pg, name)(length, periodic, dtype=getattr(pg, dtname), device=device)
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no 16-bit floats)
        pytest.skip(f"{device} declines {dtname} (DTypeError)")
    assert w.dtype is getattr(pg, dtname)
    assert w.float().tolist() == LOW_WINDOWS[key]  # bit-exact: PyTorch's rounding order


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_window_checks(device: str, name: str) -> None:
    fn = getattr(pg, name)
    opts = ("device=cpu, layout=Strided (default), requires_grad=false (default), "
            "pinned_memory=false, memory_format=(nullopt))")
    # the dtype first (even for lengths 0 and 1, and before a negative length)
    for length in (0, 1, 3, -1):
        with pytest.raises(RuntimeError) as e:
            fn(length, dtype=pg.int64)
        assert str(e.value) == (f"{name} expects floating point dtypes, got: "
                                f"TensorOptions(dtype=long int, {opts}")
    with pytest.raises(RuntimeError, match=r"TensorOptions\(dtype=unsigned char, "):
        fn(4, dtype=pg.uint8)
    with pytest.raises(RuntimeError) as e:
        fn(-1, device=device)
    assert str(e.value) == f"{name} requires non-negative window_length, got window_length=-1"
    for bad, tname in ((5.0, "float"), (True, "bool"), (None, "NoneType")):
        with pytest.raises(TypeError) as te:
            fn(bad)
        assert str(te.value) == (f"{name}(): argument 'window_length' (position 1) must be "
                                 f"int, not {tname}")
    assert fn(pg.tensor(3), device=device).shape == (3,)  # a 0-d integer tensor is an int
    assert fn(1, device=device).tolist() == [1.0]
    assert fn(0, dtype=pg.float64, device=device).dtype is pg.float64


def test_window_complex_dtype(device: str) -> None:
    # lengths 0 and 1 are ones; longer complex windows have no arange kernel in PyTorch
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        pg.hann_window(4, dtype=pg.complex64)
    with pytest.raises(NotImplementedError, match="'ComplexDouble'"):
        pg.kaiser_window(3, dtype=pg.complex128)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        pg.bartlett_window(-2, dtype=pg.complex64)


def test_window_float_values(device: str) -> None:
    w = pg.blackman_window(5, False, dtype=pg.float64, device=device)
    assert w.tolist() == pytest.approx([-1.3877787807814457e-17, 0.34, 1.0, 0.34,
                                        -1.3877787807814457e-17], abs=1e-15)
    w = pg.bartlett_window(6, dtype=pg.float64, device=device)
    assert w.tolist() == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0, 2 / 3, 1 / 3], abs=1e-15)
    w = pg.hamming_window(4, True, 0.5, 0.3, dtype=pg.float64, device=device)
    assert w.tolist() == pytest.approx([0.2, 0.5, 0.8, 0.5], abs=1e-15)


# ------------------------------------------------------------------------------- stft/istft
def test_stft_promotes_with_window(device: str) -> None:
    x = pg.arange(8.0, device=device)
    try:
        S = pg.stft(x, 4, 2, window=pg.hann_window(4, dtype=pg.float64, device=device),
                    center=False, return_complex=True)
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no complex tensors)
        pytest.skip(f"{device} declines complex (DTypeError)")
    assert S.dtype is pg.complex128  # float32 signal, float64 window: complex128, as PyTorch
    assert S.shape == (3, 3)
    got = S.tolist()
    assert [v.real for v in got[0]] == pytest.approx([4.0, 8.0, 12.0])
    assert got[1] == pytest.approx([-2 + 1j, -4 + 1j, -6 + 1j])
    # an integer window does not promote a float32 signal
    S32 = pg.stft(x, 4, 2, window=pg.ones(4, dtype=pg.int64, device=device), center=False,
                  return_complex=True)
    assert S32.dtype is pg.complex64


def test_istft_promotes_with_window(device: str) -> None:
    x = pg.arange(8.0, device=device)
    try:
        S = pg.stft(x, 4, 1, window=pg.ones(4, device=device), return_complex=True)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines complex (DTypeError)")
    y = pg.istft(S, 4, 1, window=pg.ones(4, dtype=pg.float64, device=device))
    assert y.dtype is pg.float64  # complex64 spectrum, float64 window: float64, as PyTorch
    assert y.tolist() == pytest.approx([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], abs=1e-5)


def test_stft_messages(device: str) -> None:
    with pytest.raises(RuntimeError) as e:
        pg.stft(pg.ones(20, dtype=pg.int64, device=device), 4, return_complex=True)
    assert str(e.value).startswith("stft(torch.LongTensor[24], n_fft=4, hop_length=1, ")
    assert str(e.value).endswith(": expected a tensor of floating point or complex values")


def test_stft_no_window_warns_once(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stft_mod, "_WARNED", {"stft": False, "istft": False})
    x = pg.arange(16.0, device=device)
    try:
        with pytest.warns(UserWarning, match="A window was not provided. A rectangular window "
                                             "will be applied,which is known to cause"):
            S = pg.stft(x, 4, return_complex=True)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines complex (DTypeError)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process, as PyTorch's
        pg.stft(x, 4, return_complex=True)
    with pytest.warns(UserWarning, match="Please provide the same window used by stft"):
        pg.istft(S, 4)


# ---------------------------------------------------------------------------------- fftfreq
def test_fftfreq_dtype_and_zero_spacing(device: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning for 0 * inf
        f = pg.fft.fftfreq(4, 0, device=device)
        r = pg.fft.rfftfreq(0, device=device)
    assert f.tolist()[1:] == [INF, -INF, -INF] and math.isnan(f.tolist()[0])
    assert r.shape == (1,) and math.isnan(r.tolist()[0])
    for fn in (pg.fft.fftfreq, pg.fft.rfftfreq):
        with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for "
                                                      "'ComplexFloat'"):
            fn(4, dtype=pg.complex64)


def test_fft_1d_16bit_refused_first(device: str) -> None:
    try:
        x = pg.ones(2, 4, dtype=pg.float32, device=device).to(pg.float16)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines float16")
    for fn in (pg.fft.fft, pg.fft.ifft, pg.fft.rfft, pg.fft.irfft, pg.fft.hfft, pg.fft.ihfft):
        with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
            fn(x, dim=2)  # (before the dimension is checked)
        with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
            fn(x, n=0)  # (before the size is checked)
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.fft.fftn(x, dim=5)  # the n-dimensional ones check the dims first
