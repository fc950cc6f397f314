"""``GradScaler``: the inf/NaN check of all gradients costs one host read per step, and the
skip/backoff/growth decisions follow it (more cases in test_toplevel_settings.py)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad._tensor import Tensor


def _count_host_reads(monkeypatch: pytest.MonkeyPatch, device: str) -> list[str]:
    """Every copy to the host from now on: ``Tensor._host`` (item, tolist, bool, numpy) and the
    backend's ``to_host`` when called outside it."""
    reads: list[str] = []
    inside = [0]
    host = Tensor._host

    def counted_host(self: Tensor) -> Any:
        reads.append("Tensor._host")
        inside[0] += 1
        try:
            return host(self)
        finally:
            inside[0] -= 1

    backend = pg.zeros(1, device=device)._storage.backend
    to_host = backend.to_host

    def counted_to_host(*args: Any, **kwargs: Any) -> Any:
        if not inside[0]:
            reads.append("backend.to_host")
        return to_host(*args, **kwargs)

    monkeypatch.setattr(Tensor, "_host", counted_host)
    monkeypatch.setattr(backend, "to_host", counted_to_host)
    return reads


def _model(device: str, n: int = 20) -> list[pg.nn.Parameter]:
    return [pg.nn.Parameter(pg.full((3,), float(i + 1), device=device)) for i in range(n)]


def _backward(scaler: pg.amp.GradScaler, params: list[pg.nn.Parameter], bad: float | None = None
              ) -> None:
    loss = sum((p * p).sum() for p in params)
    if bad is not None:
        loss = loss + (params[7] * bad).sum()
    scaler.scale(loss).backward()


@pytest.mark.parametrize("bad", [None, float("inf"), float("nan")])
def test_step_reads_the_host_once(device: str, monkeypatch: pytest.MonkeyPatch,
                                  bad: float | None) -> None:
    params = _model(device)
    opt = pg.optim.SGD(params, lr=0.01)
    scaler = pg.amp.GradScaler(device.split(":")[0], init_scale=1024.0)
    _backward(scaler, params, bad)
    before = [p.detach().clone() for p in params]
    reads = _count_host_reads(monkeypatch, device)
    scaler.step(opt)
    scaler.update()
    assert reads == ["Tensor._host"], reads  # the one found-inf flag, read by step, reused by update
    monkeypatch.undo()
    skipped = bad is not None
    for p, b in zip(params, before):
        assert pg.equal(p.detach(), b) == skipped
    assert scaler.get_scale() == (512.0 if skipped else 1024.0)
    if not skipped:  # the gradients were unscaled: 2p
        np.testing.assert_allclose(params[3].grad.tolist(), [8.0] * 3)


def test_unscale_then_step_and_several_optimizers(device: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _model(device, 3), _model(device, 3)
    oa, ob = pg.optim.SGD(a, lr=0.1), pg.optim.SGD(b, lr=0.1, momentum=0.9)
    scaler = pg.amp.GradScaler(device.split(":")[0], init_scale=4.0, growth_interval=1)
    _backward(scaler, a + b)
    scaler.unscale_(oa)
    pg.nn.utils.clip_grad_norm_(a, 1e6)  # the gradients are unscaled for clipping
    np.testing.assert_allclose(a[0].grad.tolist(), [2.0] * 3)
    reads = _count_host_reads(monkeypatch, device)
    scaler.step(oa)
    scaler.step(ob)
    scaler.update()
    assert len(reads) == 2  # one per optimizer stepped
    monkeypatch.undo()
    assert scaler.get_scale() == 8.0  # grew: growth_interval=1, no overflow


def test_matches_torch_scale_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    seq = [None, None, float("inf"), None, float("nan"), None, None, None]
    scales = []
    reads: list[str] = []
    for lib in (torch, pg):
        lib.manual_seed(0)
        params = [lib.nn.Parameter(lib.ones(2)) for _ in range(4)]
        opt = lib.optim.SGD(params, lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=16.0, growth_interval=2)
        got = []
        for bad in seq:
            opt.zero_grad()
            loss = sum((p * p).sum() for p in params)
            loss = loss + (0.0 if bad is None else (params[1] * bad).sum())
            scaler.scale(loss).backward()
            if lib is pg:
                reads = _count_host_reads(monkeypatch, "cpu")
            scaler.step(opt)
            scaler.update()
            if lib is pg:
                assert len(reads) == 1, reads  # one per step, whatever the parameter count
                monkeypatch.undo()
            got.append((scaler.get_scale(),
                        [[round(float(v), 5) for v in p.detach().tolist()] for p in params]))
        scales.append(got)
    assert scales[0] == scales[1]


def test_step_without_scale_says_step() -> None:
    p = pg.nn.Parameter(pg.tensor([1.0]))
    opt = pg.optim.SGD([p], lr=0.1)
    scaler = pg.amp.GradScaler("cpu")
    (p * 2).sum().backward()
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
