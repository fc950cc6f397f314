"""Index checks on a device that reads asynchronously (OpenCL): ``cross_entropy`` enqueues
its range check of the class targets with the loss instead of waiting for it, and ``embedding``
(``index_select``) its check of the rows; the error, PyTorch's ``IndexError: Target T is out of
bounds.`` or the index's, comes at the device's next read or synchronisation (as a CUDA
device-side assert, but typed and naming the value). Waiting for the checks stalled every
training step on the forward pass, and a GPT's embeddings on the previous step's optimizer."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import portagrad as pg
import portagrad.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ocl(device: str) -> str:
    if not device.startswith("opencl"):
        pytest.skip("deferred checks belong to the OpenCL backend (the cpu checks in the call)")
    return device


def _count_reads(device: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    backend = type(pg.empty(1, device=device)._storage.backend)
    reads: list[int] = []
    real = backend.to_host

    def to_host(self, src):
        reads.append(1)
        return real(self, src)

    monkeypatch.setattr(backend, "to_host", to_host)
    return reads


@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_reads_nothing_from_the_device(ocl, monkeypatch, ignore_index):
    x = pg.randn(8, 5, device=ocl, requires_grad=True)
    t = pg.tensor([0, 1, 4, 3, 2, 1, 0, 4], device=ocl)
    reads = _count_reads(ocl, monkeypatch)
    loss = F.cross_entropy(x, t, ignore_index=ignore_index)
    loss.backward()
    assert reads == []
    monkeypatch.undo()
    want = F.cross_entropy(x.detach().cpu(), t.cpu(), ignore_index=ignore_index).item()
    assert loss.item() == pytest.approx(want, rel=1e-5)


def test_error_at_the_next_read_then_the_device_works(ocl):
    x = pg.randn(4, 3, device=ocl, requires_grad=True)
    loss = F.cross_entropy(x, pg.tensor([0, 7, 2, -4], device=ocl))  # enqueued, not raised
    other = (x.detach() * 2).sum()
    with pytest.raises(IndexError, match=r"^Target 7 is out of bounds\.$"):
        other.item()  # any read of the device reports it, once
    assert other.item() == pytest.approx(2 * x.detach().cpu().sum().item(), rel=1e-5)
    assert loss.isnan().item()  # the kernel gave NaN for the bad rows, read nothing outside x
    good = F.cross_entropy(x, pg.tensor([0, 1, 2, 1], device=ocl))
    good.backward()
    assert x.grad is not None and pg.isfinite(x.grad).all().item()


def test_error_at_synchronize(ocl):
    x = pg.randn(3, 4, device=ocl)
    F.cross_entropy(x, pg.tensor([0, -100, 9], device=ocl))
    with pytest.raises(IndexError, match=r"^Target 9 is out of bounds\.$"):
        pg.opencl.synchronize(pg.device(ocl).index)
    pg.opencl.synchronize(pg.device(ocl).index)  # reported once


def test_error_left_unread_is_reported_at_exit(ocl, tmp_path):
    script = textwrap.dedent(f"""
        import portagrad as pg, portagrad.nn.functional as F
        x = pg.randn(2, 3, device="{ocl}")
        F.cross_entropy(x, pg.tensor([0, 5], device="{ocl}"))
        print("LAST LINE", flush=True)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "LAST LINE" in r.stdout, r.stderr[-3000:]
    assert "IndexError: Target 5 is out of bounds." in r.stderr, r.stderr[-3000:]


def test_checks_do_not_pile_up_without_reads(ocl):
    dev = pg.empty(1, device=ocl)._storage.backend._devices[pg.device(ocl).index]
    x = pg.randn(4, 3, device=ocl)
    t = pg.tensor([0, 1, 2, 1], device=ocl)
    for _ in range(300):
        F.cross_entropy(x, t)
    assert len(dev.checks) <= 257  # without reads: completed ones run from 64, all from 256
    pg.opencl.synchronize(pg.device(ocl).index)
    assert dev.checks == []


def test_embedding_reads_nothing_from_the_device(ocl, monkeypatch):
    w = pg.randn(10, 4, device=ocl, requires_grad=True)
    i = pg.tensor([[3, 9, 0], [3, 1, 1]], device=ocl)
    reads = _count_reads(ocl, monkeypatch)
    out = F.embedding(i, w)
    (out * out).sum().backward()
    assert reads == []
    monkeypatch.undo()
    wh = w.detach().cpu()
    assert pg.equal(out.detach().cpu(), wh[i.cpu()])
    want = pg.zeros(10, 4).index_add_(0, i.cpu().reshape(-1), 2 * wh[i.cpu().reshape(-1)])
    pg.testing.assert_close(w.grad.cpu(), want)


@pytest.mark.parametrize("bad", [10, -1])
def test_embedding_error_at_the_next_read_and_the_table_is_untouched(ocl, bad):
    w = pg.randn(10, 4, device=ocl, requires_grad=True)
    before = w.detach().cpu().clone()
    out = F.embedding(pg.tensor([2, bad, 5], device=ocl), w)  # enqueued, not raised
    out.sum().backward()  # the gradient of the bad row goes nowhere
    with pytest.raises(IndexError, match=rf"^index {bad} is out of bounds for dimension 0 with "
                                         rf"size 10$"):
        pg.opencl.synchronize(pg.device(ocl).index)
    assert pg.equal(w.detach().cpu(), before)
    grad = w.grad.cpu()
    assert grad[[2, 5]].eq(1).all().item() and grad.sum().item() == 8  # nothing written elsewhere
    good = F.embedding(pg.tensor([9, 0], device=ocl), w)
    assert pg.equal(good.detach().cpu(), before[[9, 0]])
