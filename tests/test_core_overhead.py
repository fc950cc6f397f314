"""The core's cheap paths keep the semantics of the general ones: fresh results built without
``__init__``, saved tensors and gradients freed as soon as backward no longer needs them."""
from __future__ import annotations

import copy
import gc
import threading
import weakref

import numpy as np
import pytest

import portagrad as pg
from portagrad import _raw
from portagrad._tensor import Tensor
from portagrad.autograd import grad_mode


def _slots(t: Tensor) -> dict:
    return {s: getattr(t, s) for s in Tensor.__slots__ if s not in ("__weakref__", "__dict__")}


# ----------------------------------------------------------------- fresh results
@pytest.mark.parametrize("via", ["new_on", "operator"])
def test_fresh_results_set_every_slot_as_make_does(device, via):
    # new_on builds with Tensor._fresh; the operators' path with its own inlined copy of it
    # (binary_views, where the backend's binary_array computes the result)
    x = pg.ones(2, 3, device=device)
    fresh = _raw.new_on(x._storage, (2, 3), pg.float32) if via == "new_on" else x + x
    made = Tensor._make(fresh._storage, 0, (2, 3), (3, 1), pg.float32)
    a, b = _slots(fresh), _slots(made)  # every slot is set (getattr raises otherwise)
    for name in ("_storage", "_v", "_vc"):
        a.pop(name), b.pop(name)
    assert a == b
    assert fresh._vc == [0] and fresh._vc is not made._vc
    assert fresh._v.shape == (2, 3) and fresh._v.strides == (3, 1) and fresh._v.offset == 0
    st = fresh._storage
    assert st.nbytes == 24 and st.device == x.device and not st.pinned and not st.shared


def test_result_storages_are_never_pinned_nor_shared_until_shared():
    # an op result's AllocatedStorage has class-level False flags (no store per result), read-only
    # on the instance; share_memory_() turns it into a plain Storage whose slots hold them
    from portagrad._storage import AllocatedStorage, Storage

    y = pg.ones(3) + 1.0
    st = y._storage
    assert type(st) is AllocatedStorage and not st.pinned and not st.shared
    with pytest.raises(AttributeError):
        st.shared = True
    twin = copy.copy(st)  # (the generic protocol copies the slots, not the flags)
    assert type(twin) is AllocatedStorage and twin.buffer is st.buffer and not twin.shared
    y.share_memory_()
    assert type(y._storage) is Storage and y.is_shared() and not y.is_pinned()
    assert y.tolist() == [2.0, 2.0, 2.0]


def test_new_on_stamps_the_allocation_epoch(device):
    x = pg.ones(2, device=device)
    epoch, prev = _raw.open_epoch()
    try:
        t = _raw.new_on(x._storage, (2,), pg.float32)
        assert _raw.owned(t, epoch)
    finally:
        _raw.close_epoch(prev)
    assert not _raw.owned(_raw.new_on(x._storage, (2,), pg.float32), epoch)


def test_new_on_under_inference_mode_makes_inference_tensors(device):
    x = pg.ones(2, device=device)
    with pg.inference_mode():
        y = x + x
    assert y.is_inference() and not (x + x).is_inference()


def test_inference_flag_is_read_per_thread_and_per_block(device):
    # fresh results skip the thread-local read while no inference block is open anywhere: one
    # open in another thread, or an inference_mode(False) inside one, must still be honoured
    x = pg.ones(2, device=device)
    with pg.inference_mode():
        with pg.inference_mode(False):
            assert not (x + x).is_inference()
        assert (x + x).is_inference()
        seen = []
        worker = threading.Thread(target=lambda: seen.append((x + x).is_inference()))
        worker.start()
        worker.join()
        assert seen == [False]
    assert not (x + x).is_inference() and not grad_mode._inference_blocks
    with pytest.raises(ZeroDivisionError):
        with pg.inference_mode():
            raise ZeroDivisionError
    assert not grad_mode._inference_blocks and not (x + x).is_inference()


def test_epoch_of_another_thread_does_not_stamp_this_one(device):
    x = pg.ones(2, device=device)
    opened, release, stamps = threading.Event(), threading.Event(), []

    def run() -> None:
        epoch, prev = _raw.open_epoch()
        try:
            stamps.append(_raw.new_on(x._storage, (2,), pg.float32)._storage._epoch == epoch)
            opened.set()
            release.wait(10)
        finally:
            _raw.close_epoch(prev)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert opened.wait(10)
        assert (x + x)._storage._epoch == 0  # this thread has no backward run open
    finally:
        release.set()
        worker.join()
    assert stamps == [True] and not _raw._OPEN
    y = pg.ones(2, device=device, requires_grad=True)
    (y * y).sum().backward()
    assert not _raw._OPEN  # the engine closed its epoch


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64])
def test_float_binary_fast_path_matches_numpy(device, dtype):
    # the backends' float32/float64 binary path: fresh 1-D and n-D results, broadcasting, a
    # Python scalar on either side, and outputs that are prefixes, offsets or strided parts of a
    # larger storage (which must stay untouched outside the output)
    rng = np.random.default_rng(0)
    npd = np.float32 if dtype is pg.float32 else np.float64
    an, bn = rng.standard_normal((3, 5)).astype(npd), rng.standard_normal(5).astype(npd)
    a, b = pg.tensor(an, device=device), pg.tensor(bn, device=device)
    for got, want in [(a + b, an + bn), (a[0] * b, an[0] * bn), (b - 2.5, bn - npd(2.5)),
                      (2.5 - b, npd(2.5) - bn), (a / b, an / bn), (a[:, 1] + a[:, 2], an[:, 1] + an[:, 2]),
                      (pg.maximum(a, b), np.maximum(an, bn))]:
        assert got.dtype is dtype
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    for part in (slice(0, 3), slice(2, 5), slice(0, 6, 2)):
        big = pg.zeros(6, dtype=dtype, device=device)
        n = len(range(6)[part])
        pg.add(b[:n], b[:n], out=big[part])
        want = np.zeros(6, npd)
        want[part] = bn[:n] + bn[:n]
        np.testing.assert_allclose(big.cpu().numpy(), want, rtol=1e-6)
    empty = pg.ones(0, dtype=dtype, device=device)
    assert (empty + empty).shape == (0,)
    z = pg.tensor(1.5, dtype=dtype, device=device)
    assert (z * z).shape == () and float(z * z) == 2.25


# ------------------------------------------------------------------ memory in backward
def _chain(device: str, n: int, size: int) -> tuple[pg.Tensor, pg.Tensor, list]:
    """``x`` -> ``x * 1.0`` -> n ``sin`` steps -> sum, keeping only weak references to the storages
    of the n intermediates ``sin`` saved (each is saved by the one node after it)."""
    x = pg.full((size,), 0.01, device=device, requires_grad=True)
    h = x * 1.0
    refs = []
    for _ in range(n):
        refs.append(weakref.ref(h._storage))
        h = h.sin()
    return x, h.sum(), refs


def test_backward_frees_saved_tensors_node_by_node(device):
    x, loss, refs = _chain(device, 6, 64)
    alive = []
    # a tensor hook on x runs once every node but x's AccumulateGrad has run: by then each
    # intermediate was released by the node that needed it, without garbage collection
    x.register_hook(lambda g: alive.append([r() is not None for r in refs]))
    gc.disable()
    try:
        loss.backward()
    finally:
        gc.enable()
    assert alive == [[False] * 6]
    h, d = np.float32(0.01), 1.0
    for _ in range(6):  # d sin(sin(...(x))) / dx = product of cos of each step's input
        d *= np.cos(h)
        h = np.sin(h)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full(64, d), rtol=1e-5)


def test_retain_graph_keeps_saved_tensors(device):
    x, loss, refs = _chain(device, 6, 64)
    alive = []
    x.register_hook(lambda g: alive.append([r() is not None for r in refs]))
    loss.backward(retain_graph=True)
    assert alive == [[True] * 6]  # the check above can fail: here every one is still saved
    g1 = x.grad.clone()
    loss.backward()  # the graph runs again
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * g1.cpu().numpy(), rtol=1e-6)


def test_backward_frees_incoming_gradients_once_consumed(device):
    x = pg.full((32,), 0.5, device=device, requires_grad=True)
    a = x * 2.0
    b = a.exp()
    c = b.sin()
    loss = c.sum()
    seen = []
    c.register_hook(lambda g: seen.append(weakref.ref(g._storage)))  # the root's ones, expanded
    b.register_hook(lambda g: seen.append(weakref.ref(g._storage)))  # SinBackward's result
    later = []
    a.register_hook(lambda g: later.append([r() is not None for r in seen]))
    del b, c
    gc.disable()
    try:
        loss.backward()
    finally:
        gc.enable()
    assert later == [[False, False]]


def test_relu_gradient_masks_where_the_result_is_not_positive(device):
    x = pg.tensor([-1.0, 0.0, 2.0, float("nan")], device=device, requires_grad=True)
    pg.relu(x).backward(pg.tensor([4.0, 5.0, 3.0, 7.0], device=device))
    assert x.grad.tolist() == [0.0, 0.0, 3.0, 7.0]  # (torch 2.13: the same; NaN passes g)
    x.grad = None
    (g,) = pg.autograd.grad(pg.relu(x * 1.0).sum(), x, create_graph=True)  # the recorded form
    assert g.tolist() == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("retain", [False, True])
def test_device_memory_drops_during_backward(device, retain):
    if not device.startswith("opencl"):
        pytest.skip("memory_allocated is a device allocator's figure")
    dev = pg.device(device)
    size, n = 1 << 18, 6  # 1 MiB per intermediate
    x, loss, _ = _chain(device, n, size)
    pg.opencl.synchronize(dev)
    at_hook = []

    def hook(g: pg.Tensor) -> None:
        # (synchronize first: pending fused elementwise work holds its operands' buffers)
        pg.opencl.synchronize(dev)
        at_hook.append(pg.opencl.memory_allocated(dev))

    x.register_hook(hook)
    before = pg.opencl.memory_allocated(dev)
    loss.backward(retain_graph=retain)
    (mid,) = at_hook
    mib = 4 * size
    if retain:
        assert mid >= before  # the saved intermediates are all still there
    else:
        # released node by node: by x's hook the n saved intermediates are gone and only x's
        # gradient (and small scalars) was added
        assert mid <= before - (n - 2) * mib
