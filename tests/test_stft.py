"""``stft`` / ``istft`` (PyTorch 2.13's): against a numpy reference written from the definition
(frames, window, DFT) and against PyTorch where it is installed, over ``center``/``pad_mode``,
``hop_length``, ``win_length`` (a shorter window centred in the frame), ``normalized``,
``onesided``, ``align_to_window``, batches and complex input; ``istft(stft(x)) == x`` for a
window satisfying NOLA, with ``length`` trimming and zero-padding; ``gradcheck`` of both; the
argument errors (``return_complex`` required for real input, the NOLA check) as PyTorch's; the
``Tensor`` methods. Complex results need a device that stores complex tensors: elsewhere both
raise the device's ``DTypeError``."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck
from portagrad.errors import DTypeError

from complex_support import complex_ok, need_complex

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 40))
XC = X + 1j * RNG.standard_normal((2, 40))


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def np_stft(x: np.ndarray, n_fft: int, hop_length: int | None = None,
            win_length: int | None = None, window: np.ndarray | None = None,
            center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
            onesided: bool | None = None, align_to_window: bool | None = None) -> np.ndarray:
    """The definition: frame ``t`` is ``x[t * hop : t * hop + n_fft]`` (after ``center``'s
    padding) times the window centred in ``n_fft``, transformed; ``(..., freq, frames)``."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    w = np.ones(win) if window is None else window
    left = (n_fft - win) // 2
    wpad = np.zeros(n_fft, dtype=w.dtype)
    wpad[left:left + win] = w
    if center:
        p = n_fft // 2
        mode = {"reflect": "reflect", "constant": "constant", "replicate": "edge",
                "circular": "wrap"}[pad_mode]
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode=mode)
    if align_to_window:  # the window starts at t * hop: the frame starts `left` earlier
        n_frames = 1 + (x.shape[-1] - win) // hop
        starts = [t * hop - left for t in range(n_frames)]
        xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(left, n_fft)])
        frames = np.stack([xp[..., s + left:s + left + n_fft] for s in starts], -2)
    else:
        n_frames = 1 + (x.shape[-1] - n_fft) // hop
        frames = np.stack([x[..., t * hop:t * hop + n_fft] for t in range(n_frames)], -2)
    frames = frames * wpad
    if onesided is None:
        onesided = not (np.iscomplexobj(x) or np.iscomplexobj(w))
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2)


HANN10 = np.hanning(12)[1:-1]
CASES = [
    ({"n_fft": 8}, X, None),
    ({"n_fft": 8, "hop_length": 3, "center": False}, X, None),
    ({"n_fft": 12, "hop_length": 3, "win_length": 10, "pad_mode": "constant",
      "normalized": True}, X, HANN10),
    ({"n_fft": 12, "hop_length": 3, "win_length": 10, "center": False, "align_to_window": True},
     X, HANN10),
    ({"n_fft": 12, "hop_length": 3, "win_length": 10, "onesided": False}, X, HANN10),
    ({"n_fft": 8, "pad_mode": "replicate"}, X[0], None),
    ({"n_fft": 8, "pad_mode": "circular", "hop_length": 5}, X, np.hanning(8)),
    ({"n_fft": 8}, XC, None),
    ({"n_fft": 9, "hop_length": 2}, X[1], np.hanning(9) * (1 + 0.5j)),
    ({"n_fft": 40, "center": False}, X, None),
]


def _call(lib: Any, kw: dict, x: np.ndarray, w: np.ndarray | None, device: str = "cpu") -> Any:
    mk = (lambda a: pg.tensor(a, device=device)) if lib is pg else lib.tensor
    return lib.stft(mk(x), window=None if w is None else mk(w), return_complex=True, **kw)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_stft_matches_definition(case: int, device: str) -> None:
    need_complex(device)
    kw, x, w = CASES[case]
    got = _call(pg, kw, x, w, device)
    want = np_stft(x, window=w, **kw)
    assert got.dtype is pg.complex128 and got.shape == want.shape
    np.testing.assert_allclose(_np(got), want, atol=1e-12)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_stft_matches_torch(case: int, device: str) -> None:
    torch = pytest.importorskip("torch")
    need_complex(device)
    kw, x, w = CASES[case]
    got = _call(pg, kw, x, w, device)
    want = _call(torch, kw, x, w)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(_np(got), want.numpy(), atol=1e-12)


def test_float32_gives_complex64_and_methods(device: str) -> None:
    need_complex(device)
    x = pg.tensor(X[0], dtype=pg.float32, device=device)
    w = pg.hann_window(8, device=device)
    s = x.stft(8, window=w, return_complex=True)
    assert s.dtype is pg.complex64
    np.testing.assert_allclose(_np(s), np_stft(X[0].astype(np.float32), 8,
                                               window=np.hanning(9)[:-1]), atol=1e-5)
    y = s.istft(8, window=w, length=40)
    assert y.dtype is pg.float32
    np.testing.assert_allclose(_np(y), X[0], atol=1e-5)


def test_return_complex_false_is_view_as_real(device: str) -> None:
    need_complex(device)
    x = pg.tensor(X, device=device)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        r = pg.stft(x, 8, return_complex=False)
    assert r.shape == (2, 5, 21, 2)
    np.testing.assert_array_equal(_np(r), _np(pg.view_as_real(pg.stft(x, 8,
                                                                      return_complex=True))))


@pytest.mark.parametrize("kw", [{}, {"hop_length": 3, "win_length": 10, "normalized": True},
                                {"center": False}, {"onesided": False},
                                {"hop_length": 1, "win_length": 4}])
def test_round_trip(kw: dict, device: str) -> None:
    """``istft(stft(x)) == x`` with a Hann window (NOLA holds; ``center=False`` keeps only the
    part where the envelope is non-zero: a periodic Hann window's first sample is 0, so the
    first and last samples are not recoverable and PyTorch's check refuses; the test uses a
    shifted window there)."""
    need_complex(device)
    n_fft = 12
    win = kw.get("win_length", n_fft)
    w = np.hanning(win + 2)[1:-1]  # no zero at either end
    x = pg.tensor(X, device=device)
    wt = pg.tensor(w, device=device)
    s = pg.stft(x, n_fft, window=wt, return_complex=True, **kw)
    y = pg.istft(s, n_fft, window=wt, length=40 if kw.get("center", True) else None, **kw)
    n = y.shape[-1]
    np.testing.assert_allclose(_np(y), X[..., :n], atol=1e-12)


def test_istft_length_trims_and_pads(device: str) -> None:
    need_complex(device)
    w = pg.tensor(np.hanning(10)[1:-1], device=device)
    s = pg.stft(pg.tensor(X[0], device=device), 8, window=w, return_complex=True)
    np.testing.assert_allclose(_np(pg.istft(s, 8, window=w, length=25)), X[0][:25], atol=1e-12)
    with pytest.warns(UserWarning, match="padded with zeros in the tail"):
        y = pg.istft(s, 8, window=w, length=50)
    # the frames cover 48 samples of the padded signal (4 padding, 40, 4 padding): past the
    # signal's reflected padding (kept, as PyTorch), 50 - 44 zeros
    assert y.shape == (50,)
    np.testing.assert_allclose(_np(y)[:40], X[0], atol=1e-12)
    np.testing.assert_allclose(_np(y)[40:44], X[0][-2:-6:-1], atol=1e-12)
    np.testing.assert_array_equal(_np(y)[44:], 0.0)


def test_istft_matches_torch(device: str) -> None:
    torch = pytest.importorskip("torch")
    need_complex(device)
    for kw, inp in (({"n_fft": 8}, X), ({"n_fft": 12, "hop_length": 3, "win_length": 10,
                                         "normalized": True}, X),
                    ({"n_fft": 8, "length": 45}, X), ({"n_fft": 8, "center": False}, X),
                    ({"n_fft": 8, "onesided": False}, X),
                    ({"n_fft": 8, "onesided": False, "return_complex": True}, XC)):
        win = kw.get("win_length", kw["n_fft"])
        w = np.hanning(win + 2)[1:-1]
        skw = {k: kw[k] for k in ("n_fft", "hop_length", "win_length", "center", "normalized",
                                  "onesided") if k in kw}
        S = torch.stft(torch.tensor(inp), window=torch.tensor(w), return_complex=True, **skw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.istft(S, window=torch.tensor(w), **kw)
            got = pg.istft(pg.tensor(S.numpy(), device=device), window=pg.tensor(w, device=device),
                           **kw)
        assert got.shape == tuple(want.shape) and got.dtype.is_complex == want.is_complex()
        np.testing.assert_allclose(_np(got), want.numpy(), atol=1e-12, err_msg=str(kw))


GRAD_CASES = [
    ({"n_fft": 8}, X[0, :20], None),
    ({"n_fft": 8, "hop_length": 3, "win_length": 6, "pad_mode": "constant",
      "normalized": True}, X[:, :20], np.hanning(6)),
    ({"n_fft": 8, "hop_length": 3, "win_length": 6, "center": False, "align_to_window": True},
     X[0, :20], np.hanning(6)),
    ({"n_fft": 8, "pad_mode": "replicate", "onesided": False}, X[0, :20], np.hanning(8)),
    ({"n_fft": 8}, XC[0, :20], np.hanning(8)),
    ({"n_fft": 7, "hop_length": 2}, X[1, :20], np.hanning(7) * (1 + 0.5j)),
]


@pytest.mark.parametrize("case", range(len(GRAD_CASES)))
def test_stft_gradcheck(case: int, device: str) -> None:
    """Gradients with respect to the signal and the window."""
    need_complex(device)
    kw, x, w = GRAD_CASES[case]
    args: tuple = (pg.tensor(x, device=device, requires_grad=True),)
    if w is not None:
        args += (pg.tensor(w, device=device, requires_grad=True),)
    assert gradcheck(lambda *a: pg.stft(a[0], window=a[1] if len(a) > 1 else None,
                                        return_complex=True, **kw), args)


@pytest.mark.parametrize("kw", [{}, {"onesided": False, "return_complex": True},
                                {"normalized": True, "hop_length": 3, "length": 30}])
def test_istft_gradcheck(kw: dict, device: str) -> None:
    need_complex(device)
    n_fft = 8
    w = np.hanning(n_fft + 2)[1:-1]
    onesided = kw.get("onesided", True)
    s = pg.stft(pg.tensor(XC[0, :24] if not onesided else X[0, :24], device=device), n_fft,
                window=pg.tensor(w, device=device), return_complex=True,
                onesided=None if onesided else False,
                **{k: v for k, v in kw.items() if k in ("normalized", "hop_length")})
    st = s.detach().clone().requires_grad_()
    wt = pg.tensor(w, device=device, requires_grad=True)
    assert gradcheck(lambda a, b: pg.istft(a, n_fft, window=b, **kw), (st, wt))


def _errors(lib: Any) -> list:
    x = lib.tensor(X[0])
    w8 = lib.tensor(np.hanning(8))
    S = lib.stft(x, 8, window=w8, return_complex=True)
    return [
        (lambda: lib.stft(x, 8), "stft requires the return_complex parameter be given for real "
                                 "inputs"),
        (lambda: lib.stft(x, 50, return_complex=True, center=False),
         "expected 0 < n_fft < 40, but got n_fft=50"),
        (lambda: lib.stft(x, 8, hop_length=0, return_complex=True),
         "expected hop_length > 0, but got hop_length=0"),
        (lambda: lib.stft(x, 8, win_length=9, return_complex=True),
         "expected 0 < win_length <= n_fft, but got win_length=9"),
        (lambda: lib.stft(x, 8, window=lib.ones(5, dtype=lib.float64), return_complex=True),
         "expected a 1D window tensor of size equal to win_length=8, but got window with size "
         "[5]"),
        (lambda: lib.stft(x.to(lib.complex128), 8, onesided=True, return_complex=True),
         "Cannot have onesided output if window or input is complex"),
        (lambda: lib.stft(x.reshape(2, 2, 10), 4, return_complex=True),
         "expected a 1D or 2D tensor"),
        (lambda: lib.stft(x, 8, align_to_window=True, return_complex=True),
         "stft align_to_window should only be set when center = false"),
        (lambda: lib.stft(x[:3], 8, return_complex=True),
         r"Padding size should be less than the corresponding input dimension, but got: "
         r"padding (4, 4) at dimension 2 of input [1, 1, 3]"),
        (lambda: lib.istft(lib.view_as_real(S), 8), "istft requires a complex-valued input"),
        (lambda: lib.istft(S, 8, window=w8, onesided=False),
         "expected the frequency dimension (3rd to the last) of the input tensor to match n_fft "
         "when onesided=False, but got 5"),
        (lambda: lib.istft(S, 8, window=lib.zeros(8, dtype=lib.float64)),
         "window overlap add min"),
        (lambda: lib.istft(S, 8, hop_length=9, window=w8), "expected 0 < hop_length <= "
                                                            "win_length"),
        (lambda: lib.istft(S, 8, window=w8, return_complex=True),
         "Cannot have onesided output if window or input is complex"),
        (lambda: lib.istft(S[None, None], 8), "expected a tensor with 3 or 4 dimensions, but "
                                              "got 5"),
    ]


def test_errors(device: str) -> None:
    need_complex(device)
    for i, (fn, msg) in enumerate(_errors(pg)):
        with pytest.raises(RuntimeError) as info:
            fn()
        assert msg in str(info.value), (i, str(info.value))
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode bogus"):
        pg.stft(pg.tensor(X[0]), 8, pad_mode="bogus", return_complex=True)


def test_errors_are_torchs() -> None:
    """The same calls raise the same messages on PyTorch (the checks above are its words); the
    argument summaries before ``:`` are compared too."""
    torch = pytest.importorskip("torch")
    for (fn, msg), (pfn, _) in zip(_errors(torch), _errors(pg), strict=True):
        with pytest.raises(RuntimeError) as want:
            fn()
        with pytest.raises(RuntimeError) as got:
            pfn()
        assert msg in str(want.value)
        assert str(got.value) == str(want.value)


def test_declined_without_complex(device: str) -> None:
    if complex_ok(device):
        pytest.skip(f"{device} has complex tensors")
    with pytest.raises(DTypeError, match="complex"):
        pg.stft(pg.ones(16, device=device), 8, return_complex=True)
