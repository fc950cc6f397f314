"""Loss input checks that must run on every device, with PyTorch's error class and message.

Out-of-range class targets (``cross_entropy``, ``nll_loss``, ``CrossEntropyLoss``, ``NLLLoss``,
also in the spatial layout ``(N, C, d1, ...)``) raise ``IndexError: Target T is out of bounds.``;
``binary_cross_entropy`` / ``BCELoss`` raise ``RuntimeError`` for an input (or target) outside
[0, 1]. A device would otherwise return a wrong loss or NaN silently. On OpenCL the check is enqueued
with the loss and raises at the device's next read (the tests read the loss), as a CUDA
device-side assert does, but with the error PyTorch's CPU gives.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn as nn
import portagrad.nn.functional as F


def _t(data, device, dtype=None):
    return pg.tensor(data, device=device, dtype=dtype)


def _read(loss):
    """Read a loss: a device that checks targets asynchronously (OpenCL, as CUDA) raises the
    target error at its next read, the cpu in the call itself."""
    return loss.sum().item()


# ------------------------------------------------------------------ class targets
@pytest.mark.parametrize("kwargs", [{}, {"weight": "ones"}, {"label_smoothing": 0.1},
                                    {"reduction": "none"}, {"reduction": "sum"}])
@pytest.mark.parametrize("bad", [3, 7, -1, -3])
def test_cross_entropy_target_out_of_bounds(device, kwargs, bad):
    x = pg.randn(2, 3, device=device)
    kw = dict(kwargs)
    if kw.get("weight") == "ones":
        kw["weight"] = pg.ones(3, device=device)
    with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\.$"):
        _read(F.cross_entropy(x, _t([0, bad], device), **kw))
    with pytest.raises(IndexError, match=rf"^Target {bad} is out of bounds\.$"):
        _read(F.nll_loss(F.log_softmax(x, 1), _t([0, bad], device),
                         **{k: v for k, v in kw.items() if k != "label_smoothing"}))


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_spatial_target_out_of_bounds(device, fn):
    x = pg.randn(2, 3, 4, device=device)
    target = _t([[0, 1, 2, 5], [0, 0, 0, 0]], device)
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        _read(getattr(F, fn)(x, target))
    target = _t([[0, 1, 2, 1], [0, -3, 0, 0]], device)
    with pytest.raises(IndexError, match=r"^Target -3 is out of bounds\.$"):
        _read(getattr(F, fn)(x, target))
    x5 = pg.randn(2, 3, 2, 2, device=device)
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        _read(getattr(F, fn)(x5, _t([[[0, 1], [2, 0]], [[1, 1], [3, 0]]], device)))


def test_unbatched_target_out_of_bounds(device):
    x = pg.randn(3, device=device)
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        _read(F.cross_entropy(x, _t(5, device)))
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        _read(F.nll_loss(x, _t(5, device)))


# numpy references (CI has no torch); where torch is installed the tests also compare with it
def _np_cross_entropy(xs, ts, ignore_index):
    x = np.asarray(xs, dtype=np.float64)
    logp = x - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) - x.max(1, keepdims=True)
    keep = [i for i, t in enumerate(ts) if t != ignore_index]
    return float(-np.mean([logp[i, ts[i]] for i in keep]))


def _np_nll_spatial(x, ts, ignore_index):
    # x: (N, C, L) values used as log-probabilities; ts: (N, L)
    x = np.asarray(x, dtype=np.float64)
    vals = [-x[n, t, j] for n, row in enumerate(ts) for j, t in enumerate(row) if t != ignore_index]
    return float(np.mean(vals))


def _np_bce(xs, ts):
    x, t = np.asarray(xs, dtype=np.float64), np.asarray(ts, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lx, l1x = np.maximum(np.log(x), -100), np.maximum(np.log(1 - x), -100)
    return float(-np.mean(t * lx + (1 - t) * l1x))


def _torch():
    try:
        import torch
        import torch.nn.functional as TF
    except ImportError:
        return None, None
    return torch, TF


def test_loss_modules_target_out_of_bounds(device):
    x = pg.randn(4, 3, device=device)
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        _read(nn.CrossEntropyLoss()(x, _t([0, 1, 2, 3], device)))
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        _read(nn.NLLLoss()(x, _t([0, 1, 2, 3], device)))


def test_first_bad_target_is_reported(device):
    # PyTorch names the first out-of-range target in memory order
    x = pg.randn(4, 3, device=device)
    with pytest.raises(IndexError, match=r"^Target 9 is out of bounds\.$"):
        _read(F.nll_loss(x, _t([0, 9, -5, 4], device)))


@pytest.mark.parametrize("ignore_index", [-100, 7, -1])
def test_ignore_index_is_not_out_of_bounds(device, ignore_index):
    torch, TF = _torch()
    xs = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.0, 1.0, 3.0]]
    ts = [0, ignore_index, 2]
    want = _np_cross_entropy(xs, ts, ignore_index)
    if torch is not None:
        assert want == pytest.approx(TF.cross_entropy(
            torch.tensor(xs), torch.tensor(ts), ignore_index=ignore_index).item(), rel=1e-5)
    got = F.cross_entropy(_t(xs, device), _t(ts, device), ignore_index=ignore_index).item()
    assert got == pytest.approx(want, rel=1e-5)
    # the spatial layout, through nll_loss
    xsp = pg.tensor([xs, xs], device=device).permute(0, 2, 1)  # (2, C=3, 3)
    tsp = _t([ts, [ignore_index, 1, 0]], device)
    want = _np_nll_spatial(np.transpose([xs, xs], (0, 2, 1)), [ts, [ignore_index, 1, 0]],
                           ignore_index)
    if torch is not None:
        assert want == pytest.approx(TF.nll_loss(
            torch.tensor([xs, xs]).permute(0, 2, 1), torch.tensor([ts, [ignore_index, 1, 0]]),
            ignore_index=ignore_index).item(), rel=1e-5)
    assert F.nll_loss(xsp, tsp, ignore_index=ignore_index).item() == pytest.approx(want, rel=1e-5)
    # an ignored value does not excuse another out-of-range one
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        _read(F.cross_entropy(_t(xs, device), _t([ignore_index, 3, 0], device),
                              ignore_index=ignore_index))
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        _read(F.nll_loss(xsp, _t([ts, [ignore_index, 3, 0]], device), ignore_index=ignore_index))


def test_all_targets_ignored_is_nan_not_an_error(device):
    x = pg.randn(2, 3, device=device)
    assert math.isnan(F.cross_entropy(x, _t([-100, -100], device)).item())


def test_in_range_targets_match_torch(device):
    torch, TF = _torch()
    xs = [[[0.5, -1.0], [2.0, 0.1]], [[1.5, 0.25], [-0.5, 0.3]], [[0.0, 1.0], [3.0, -2.0]]]
    ts = [[0, 2], [1, 1]]
    x = np.asarray([xs, xs], dtype=np.float32).reshape(2, 3, 2, 2)[:, :, 0]  # (2, 3, 2)
    # cross entropy over dim 1 = nll of log_softmax over dim 1
    xd = x.astype(np.float64)
    m = xd.max(1, keepdims=True)
    logp = xd - m - np.log(np.exp(xd - m).sum(1, keepdims=True))
    want = _np_nll_spatial(logp, ts, -100)
    if torch is not None:
        assert want == pytest.approx(TF.cross_entropy(torch.tensor(x), torch.tensor(ts)).item(),
                                     rel=1e-5)
    got = F.cross_entropy(pg.tensor(x.tolist(), device=device), _t(ts, device)).item()
    assert got == pytest.approx(want, rel=1e-5)


# ------------------------------------------------------------------ binary cross entropy
@pytest.mark.parametrize("bad", [1.5, -0.5, 1.0000001, float("nan"), float("inf")])
def test_bce_input_outside_unit_interval(device, bad):
    x = _t([0.5, bad, 0.25], device)
    t = _t([0.0, 1.0, 1.0], device)
    msg = r"^all elements of input should be between 0 and 1$"
    with pytest.raises(RuntimeError, match=msg):
        F.binary_cross_entropy(x, t)
    with pytest.raises(RuntimeError, match=msg):
        nn.BCELoss()(x, t)
    with pytest.raises(RuntimeError, match=msg):
        F.binary_cross_entropy(x.double(), t.double(), reduction="none")


@pytest.mark.parametrize("bad", [2.0, -1.0, float("nan")])
def test_bce_target_outside_unit_interval(device, bad):
    x = _t([0.5, 0.5], device)
    with pytest.raises(RuntimeError, match=r"^all elements of target should be between 0 and 1$"):
        F.binary_cross_entropy(x, _t([0.0, bad], device))


def test_bce_edges_are_allowed(device):
    torch, TF = _torch()
    xs, ts = [0.0, 1.0, 0.5, 1e-8], [0.0, 1.0, 1.0, 0.5]
    want = _np_bce(np.float32(xs), ts)
    if torch is not None:
        assert want == pytest.approx(TF.binary_cross_entropy(
            torch.tensor(xs), torch.tensor(ts)).item(), rel=1e-5)
    got = F.binary_cross_entropy(_t(xs, device), _t(ts, device)).item()
    assert got == pytest.approx(want, rel=1e-5)
    # a 0-d input and an empty one
    assert F.binary_cross_entropy(_t(0.5, device), _t(1.0, device)).item() == pytest.approx(
        math.log(2), rel=1e-6)
    empty = pg.zeros(0, device=device)
    assert F.binary_cross_entropy(empty, empty, reduction="sum").item() == 0.0
