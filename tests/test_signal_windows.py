"""``portagrad.signal.windows`` against PyTorch 2.13's ``torch.signal.windows`` (values written
out from it, rounded to 6 decimals)."""
from __future__ import annotations

import pytest

import portagrad as pg
from portagrad.signal import windows as W

CASES = [
    (lambda d: W.hann(5, device=d), [0.0, 0.5, 1.0, 0.5, 0.0]),
    (lambda d: W.hann(6, sym=False, device=d), [0.0, 0.25, 0.75, 1.0, 0.75, 0.25]),
    (lambda d: W.blackman(6, sym=False, device=d), [0.0, 0.13, 0.63, 1.0, 0.63, 0.13]),
    (lambda d: W.nuttall(6, device=d),
     [0.000363, 0.110515, 0.798258, 0.798258, 0.110515, 0.000363]),
    (lambda d: W.bartlett(5, sym=False, device=d), [0.0, 0.4, 0.8, 0.8, 0.4]),
    (lambda d: W.bartlett(2, device=d), [0.0, 0.0]),
    (lambda d: W.cosine(5, sym=False, device=d),
     [0.258819, 0.707107, 0.965926, 0.965926, 0.707107]),
    (lambda d: W.exponential(5, sym=False, device=d),
     [0.082085, 0.22313, 0.606531, 0.606531, 0.22313]),
    (lambda d: W.exponential(7, center=1.5, tau=2.0, sym=False, device=d),
     [0.472367, 0.778801, 0.778801, 0.472367, 0.286505, 0.173774, 0.105399]),
    (lambda d: W.gaussian(6, sym=False, device=d),
     [0.011109, 0.135335, 0.606531, 1.0, 0.606531, 0.135335]),
    (lambda d: W.gaussian(7, std=0.7, device=d),
     [0.000103, 0.01688, 0.360448, 1.0, 0.360448, 0.01688, 0.000103]),
    (lambda d: W.kaiser(5, device=d), [5.3e-05, 0.215673, 1.0, 0.215673, 5.3e-05]),
    (lambda d: W.kaiser(7, beta=3.5, sym=False, device=d),
     [0.135534, 0.429046, 0.755146, 0.97029, 0.97029, 0.755146, 0.429046]),
    (lambda d: W.general_cosine(5, a=[0.46, 0.3, 0.1, 0.14], device=d),
     [0.12, 0.36, 1.0, 0.36, 0.12]),
    (lambda d: W.general_hamming(6, alpha=0.3, sym=False, device=d),
     [-0.4, -0.05, 0.65, 1.0, 0.65, -0.05]),
    (lambda d: W.kaiser(1, device=d), [1.0]),
    (lambda d: W.hann(0, sym=False, device=d), []),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_window_values(device: str, k: int) -> None:
    make, expected = CASES[k]
    w = make(device)
    assert w.dtype is pg.float32 and w.device == pg.device(device)
    assert w.shape == (len(expected),)
    assert all(abs(a - b) <= 2e-6 for a, b in zip(w.tolist(), expected)), w.tolist()


def test_window_dtype_and_grad(device: str) -> None:
    try:
        w = W.hann(4, dtype=pg.float64, device=device)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} has no float64")
    assert w.dtype is pg.float64 and abs(w[1].item() - 0.75) < 1e-15
    assert W.hamming(4, requires_grad=True, device=device).requires_grad


@pytest.mark.parametrize("call, exc, message", [
    (lambda: W.hann(-1), ValueError, "general_cosine requires non-negative window length, got M=-1"),
    (lambda: W.bartlett(-2), ValueError, "bartlett requires non-negative window length, got M=-2"),
    (lambda: W.hann(5, dtype=pg.int64), ValueError, "general_cosine expects float32 or float64"),
    (lambda: W.cosine(3, dtype=pg.float16), ValueError, "cosine expects float32 or float64"),
    (lambda: W.exponential(5, center=1.0), ValueError, "Center must be None for symmetric windows"),
    (lambda: W.exponential(5, tau=0), ValueError, "Tau must be positive, got: 0 instead."),
    (lambda: W.gaussian(5, std=-1), ValueError, "Standard deviation must be positive, got: -1"),
    (lambda: W.kaiser(5, beta=-1), ValueError, "beta must be non-negative, got: -1 instead."),
    (lambda: W.general_cosine(5, a=0.5), TypeError, "Coefficients must be a list/tuple"),
    (lambda: W.general_cosine(5, a=[]), ValueError, "Coefficients cannot be empty"),
    (lambda: W.hann(5, layout=pg.sparse_coo), ValueError,
     "general_cosine is implemented for strided tensors only"),
])
def test_window_errors(call, exc: type, message: str) -> None:
    with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
