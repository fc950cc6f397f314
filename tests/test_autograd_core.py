"""The autograd core's internals: its one no-grad context, its one device-mismatch error, and who
owns a gradient's memory (``leaf.grad`` adopts the engine's fresh gradient without a copy, and never
memory anything else can still see)."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd.grad_mode import _no_grad


# ------------------------------------------------------------------- no-grad context
def test_internal_no_grad_restores_the_mode_also_on_errors(device):
    x = pg.ones(2, device=device, requires_grad=True)
    with _no_grad():
        assert not pg.is_grad_enabled()
        assert (x * 2).grad_fn is None
        with _no_grad():
            pass
        assert not pg.is_grad_enabled()  # nested: the outer mode stays
    assert pg.is_grad_enabled()
    with pytest.raises(ValueError), _no_grad():
        raise ValueError
    assert pg.is_grad_enabled()
    with pg.no_grad():
        with _no_grad():
            pass
        assert not pg.is_grad_enabled()  # restores what it found, not True
    assert (x * 2).grad_fn is not None


def test_internal_no_grad_is_thread_local():
    seen = []
    with _no_grad():
        t = threading.Thread(target=lambda: seen.append(pg.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ------------------------------------------------------------------ device mismatch
def test_one_device_mismatch_error_with_pytorchs_text():
    from portagrad.errors import DeviceMismatchError, raise_device_mismatch

    with pytest.raises(DeviceMismatchError) as info:
        raise_device_mismatch(pg.device("opencl:0"), pg.device("cpu"), "linear")
    assert str(info.value) == (
        "Expected all tensors to be on the same device, but found at least two devices, opencl:0 "
        "and cpu! (when checking arguments for linear)")
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(DeviceMismatchError, match=r"devices, cpu and opencl:1!$"):
        raise_device_mismatch("cpu", "opencl:1")


def test_check_same_device_uses_it(monkeypatch):
    from portagrad import errors
    from portagrad._ops._common import check_same_device

    calls = []
    monkeypatch.setattr(errors, "raise_device_mismatch", lambda *a: calls.append(a))
    a = pg.ones(1)
    fake = pg.ones(1)
    fake._storage = type("S", (), {"device": pg.device("opencl:0")})()
    check_same_device(a, a, "add")
    assert calls == []
    check_same_device(a, fake, "add")
    assert calls == [(pg.device("cpu"), pg.device("opencl:0"), "add")]


# ------------------------------------------------------------------- gradient ownership
def _aliases(a: pg.Tensor, b: pg.Tensor) -> bool:
    """Whether two tensors share memory (the same storage or the same backend buffer)."""
    return a._storage is b._storage or a._v.buffer is b._v.buffer


@pytest.fixture
def adoptions(monkeypatch):
    """Records, for every gradient the engine offers a leaf, whether it was adopted and the
    storage it had (the leaf's ``.grad`` then has that very storage: no copy)."""
    from portagrad.autograd import function

    seen = []
    orig = function._adoptable

    def spy(grad, leaf, epoch):
        st = grad._storage
        ok = orig(grad, leaf, epoch)
        seen.append((leaf, ok, st if ok else None))
        return ok

    monkeypatch.setattr(function, "_adoptable", spy)
    return seen


def test_a_training_step_adopts_every_gradient(device, adoptions):
    import portagrad.nn.functional as F
    from portagrad import nn

    gen = pg.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    opt = pg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = pg.randn(8, 12, generator=gen).to(device)
    t = pg.tensor([0, 1, 2, 0, 1, 2, 0, 1], device=device)
    for _ in range(2):
        opt.zero_grad()
        adoptions.clear()
        F.cross_entropy(model(x), t).backward()
        params = list(model.parameters())
        assert len(adoptions) == len(params)
        for leaf, ok, st in adoptions:
            assert ok and leaf.grad._storage is st  # the engine's own gradient, not a copy
        opt.step()
    # the adopted gradients are the user's now: a later backward adds into them in place
    grads = [p.grad for p in model.parameters()]
    before = [g.numpy(force=True).copy() for g in grads]
    F.cross_entropy(model(x), t).backward()
    for p, g, b in zip(model.parameters(), grads, before):
        assert p.grad is g and not np.allclose(g.numpy(force=True), b)


def test_gradients_written_region_by_region_are_adopted(device, adoptions):
    # basic indexing's backward fills a fresh zero tensor through a region, and split's backward
    # concatenates into a fresh one: writing a region makes no second tensor over the result
    w = pg.randn(6, 3, device=device).requires_grad_()
    v = pg.randn(6, 3, device=device).requires_grad_()
    (w[1:4] * 2).sum().backward()
    a, b = pg.split(v, [2, 4])
    (a.sum() + (b * 3).sum()).backward()
    assert [(leaf is w or leaf is v, ok) for leaf, ok, _ in adoptions] == [(True, True)] * 2
    for leaf, _, st in adoptions:
        assert leaf.grad._storage is st
    expect_w = np.zeros((6, 3))
    expect_w[1:4] = 2
    np.testing.assert_allclose(w.grad.numpy(force=True), expect_w)
    np.testing.assert_allclose(v.grad.numpy(force=True), [[1.0] * 3] * 2 + [[3.0] * 3] * 4)


def test_a_conv_step_adopts_every_gradient(device, adoptions):
    import portagrad.nn.functional as F
    from portagrad import nn

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 3)).to(device)
    x = pg.randn(2, 1, 4, 4, generator=pg.Generator().manual_seed(1)).to(device)
    F.cross_entropy(model(x), pg.tensor([0, 2], device=device)).backward()
    assert [ok for _, ok, _ in adoptions] == [True] * 4


def _leaf(device: str, n: int = 6) -> pg.Tensor:
    return pg.arange(n, dtype=pg.float32, device=device).requires_grad_()


def _check_private(grad: pg.Tensor, *visible: pg.Tensor) -> None:
    """``grad`` (a leaf's .grad) shares no memory with tensors the user holds, and writing into
    them leaves it unchanged."""
    want = grad.numpy(force=True).copy()
    for v in visible:
        assert not _aliases(grad, v)
        with pg.no_grad():
            v.fill_(-123.0)
    np.testing.assert_array_equal(grad.numpy(force=True), want)


def test_a_hook_returning_its_argument_keeps_it_from_being_adopted(device):
    x = _leaf(device)
    held = []
    x.register_hook(lambda g: held.append(g) or g)
    (x * 2.0).backward(pg.ones(6, device=device))
    assert x.grad.tolist() == [2.0] * 6
    _check_private(x.grad, held[0])


def test_a_hook_result_the_user_keeps_is_not_adopted(device):
    x = _leaf(device)
    held = []
    x.register_hook(lambda g: held.append(g * 3.0) or held[-1])
    (x * 2.0).backward(pg.ones(6, device=device))
    assert x.grad.tolist() == [6.0] * 6
    _check_private(x.grad, held[0])


def test_a_gradient_seen_by_a_hook_upstream_is_not_adopted(device):
    x = _leaf(device)
    y = x.clone()  # its backward passes the gradient through unchanged
    held = []
    y.register_hook(held.append)
    (y * 2.0).backward(pg.ones(6, device=device))
    _check_private(x.grad, held[0])


def test_a_cpu_gradient_exported_with_numpy_in_a_hook_is_not_adopted(device):
    x = _leaf(device)
    arrays = []
    x.register_hook(lambda g: arrays.append(g.numpy(force=True)))
    (x * 2.0).backward(pg.ones(6, device=device))
    assert not np.shares_memory(x.grad.numpy(force=True), arrays[0])
    arrays[0][...] = -5.0
    assert x.grad.tolist() == [2.0] * 6


def test_node_hooks_and_pre_hooks_disown_what_they_see(device):
    for kind in ("pre", "post"):
        x = _leaf(device)
        y = x * 2.0
        z = y.clone()
        held = []
        if kind == "pre":
            z.grad_fn.register_prehook(held.extend)
        else:
            z.grad_fn.register_hook(lambda gi, go, held=held: held.extend(gi))
        (z * 1.0).backward(pg.ones(6, device=device))
        # the clone's gradient flows on to y's MulBackward; x gets a fresh product, y's gradient
        # was seen by the hook: nothing the hook holds may become anybody's .grad
        _check_private(x.grad, *held)


def test_retain_grad_keeps_its_own_copy(device):
    for create_graph in (False, True):
        x = _leaf(device)
        y = x.clone()
        y.retain_grad()
        (y * pg.full((6,), 3.0, device=device)).sum().backward(create_graph=create_graph)
        assert y.grad.tolist() == [3.0] * 6 and x.grad.tolist() == [3.0] * 6
        _check_private(x.grad.detach(), y.grad.detach())


def test_a_gradient_given_to_backward_is_not_adopted(device):
    for make in (lambda x: x.clone(), lambda x: x.reshape(2, 3), lambda x: x * 1, lambda x: x + 0,
                 lambda x: x.view(6)):
        x = _leaf(device)
        y = make(x)
        g_user = pg.full(tuple(y.shape), 2.0, device=device) * 1.0  # an op's fresh output
        y.backward(gradient=g_user)
        assert x.grad.tolist() == [2.0] * 6
        _check_private(x.grad, g_user)


def test_autograd_grad_results_are_not_adopted_later(device):
    x = _leaf(device)
    (gx,) = pg.autograd.grad(x.clone(), x, pg.full((6,), 4.0, device=device) * 1.0)
    assert x.grad is None and gx.tolist() == [4.0] * 6
    x.clone().backward(gx)  # the user's tensor as a root gradient
    _check_private(x.grad, gx)
    w = _leaf(device)
    z = w.clone()
    z.backward(pg.ones(6, device=device) * 1.0, inputs=[w])
    (gw,) = pg.autograd.grad((w * 1.0).sum(), w)
    _check_private(w.grad, gw)


def test_one_gradient_for_two_leaves_is_adopted_by_neither(device):
    a, b = _leaf(device), _leaf(device)
    ((a + b) * 2.0).backward(pg.ones(6, device=device))  # AddBackward returns (g, g)
    assert a.grad.tolist() == b.grad.tolist() == [2.0] * 6
    assert not _aliases(a.grad, b.grad)
    with pg.no_grad():
        a.grad.add_(1.0)
    assert b.grad.tolist() == [2.0] * 6
    # whichever leaf comes second, its hook must not be handed the other one's .grad
    for hooked in (0, 1):
        leaves = [_leaf(device), _leaf(device)]
        held = []
        leaves[hooked].register_hook(held.append)
        ((leaves[0] + leaves[1]) * 2.0).backward(pg.ones(6, device=device))
        _check_private(leaves[1 - hooked].grad, held[0])


def test_gradients_that_are_views(device):
    a, b = _leaf(device, 4), _leaf(device, 2)
    (pg.cat([a, b]) * 3.0).backward(pg.ones(6, device=device))  # slices of one gradient
    assert a.grad.tolist() == [3.0] * 4 and b.grad.tolist() == [3.0] * 2
    assert not _aliases(a.grad, b.grad)
    x = _leaf(device)
    (x.reshape(2, 3) * 2.0).sum().backward()  # a full-size view of a fresh gradient: adoptable
    assert x.grad.tolist() == [2.0] * 6
    m = pg.arange(6, dtype=pg.float32, device=device).reshape(2, 3).requires_grad_()
    (m.t() * 2.0).sum().backward()  # a transposed view: copied to a contiguous .grad
    assert m.grad.is_contiguous() and m.grad.tolist() == [[2.0] * 3] * 2


def test_a_user_function_keeping_its_result_is_not_adopted(device):
    kept = []

    class Keep(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            kept.append(g * 5.0)
            return kept[-1]

    x = _leaf(device)
    Keep.apply(x).backward(pg.ones(6, device=device))
    assert x.grad.tolist() == [5.0] * 6
    _check_private(x.grad, kept[0])


def test_a_module_full_backward_hook_keeps_what_it_sees(device):
    from portagrad import nn

    lin = nn.Linear(3, 3).to(device)
    held = []
    lin.register_full_backward_hook(lambda m, gi, go: held.extend(gi + go))
    x = pg.ones(2, 3, device=device).requires_grad_()
    lin(x).backward(pg.ones(2, 3, device=device))
    _check_private(x.grad, *[h for h in held if h is not None])


def _trusted(fn_cls: type) -> type:
    """``fn_cls`` with its backward trusted as a built-in one (to stand in for a built-in formula
    with a flaw the ownership checks must still catch)."""
    fn_cls._backward_cls._trusted = True
    return fn_cls


def test_a_trusted_formula_returning_memory_from_before_the_run_is_not_adopted(device):
    @_trusted
    class ReturnsSaved(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x * 0.0 + 7.0)  # a fresh tensor, allocated in forward
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return ctx.saved_tensors[0]

    x = _leaf(device)
    y = ReturnsSaved.apply(x)
    saved = y.grad_fn.saved_tensors[0]
    y.backward(pg.ones(6, device=device), retain_graph=True)
    _check_private(x.grad, saved)  # (the allocation epoch: it predates the backward run)


def test_a_trusted_formula_keeping_a_second_tensor_over_its_result_is_not_adopted(device):
    cache = []

    @_trusted
    class Caches(pg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            fresh = g * 4.0
            cache.append(fresh.view(2, 3))  # another tensor over the same storage
            return fresh

    x = _leaf(device)
    Caches.apply(x).backward(pg.ones(6, device=device))
    assert x.grad.tolist() == [4.0] * 6
    _check_private(x.grad, cache[0])  # (the storage's reference count)


def test_a_backward_inside_a_hook_keeps_both_runs_apart(device, adoptions):
    inner_leaf = _leaf(device)
    seen = []

    def hook(g):
        with pg.enable_grad():
            (inner_leaf * 3.0).backward(g * 1.0)  # another backward run from within this one
        seen.append(inner_leaf.grad)

    x, w = _leaf(device), _leaf(device)
    y = x * 2.0
    y.register_hook(hook)
    (y * w).sum().backward()
    assert inner_leaf.grad.tolist() == (3.0 * w.detach()).tolist()
    assert x.grad.tolist() == (2.0 * w.detach()).tolist() and w.grad.tolist() == y.tolist()
    for a in (inner_leaf.grad, x.grad, w.grad):
        for b in (inner_leaf.grad, x.grad, w.grad):
            assert a is b or not _aliases(a, b)
    # the outer run still owns what it allocates after the inner run ended
    assert {id(leaf): ok for leaf, ok, _ in adoptions}[id(x)]


# ------------------------------------------------------------------- the in-place rule
def test_the_in_place_rule_lives_in_autograd_without_importing_ops():
    import ast
    import pathlib

    from portagrad._ops import conversion
    from portagrad.autograd import inplace

    assert conversion.inplace is inplace.inplace
    assert conversion.check_inplace is inplace.check_inplace
    # its nodes are built-in formulas: the engine trusts them with its gradients
    assert inplace._CopySlices._backward_cls._trusted and inplace._Overwrite._backward_cls._trusted
    tree = ast.parse(pathlib.Path(inplace.__file__).read_text())
    # at import time it reaches nothing outside the autograd package (ops are imported lazily)
    outside = [ast.dump(n) for n in tree.body if isinstance(n, ast.ImportFrom)
               and (n.level > 1 or (n.level == 0 and (n.module or "").startswith("portagrad")))]
    assert outside == []


def test_gradients_through_in_place_ops_are_still_adopted(device, adoptions):
    x = _leaf(device)
    y = x.clone()
    y[1:3] += 5.0  # CopySlices on y's base: x's gradient is its output, passed on by the clone
    (y * 4.0).backward(pg.ones(6, device=device))
    assert x.grad.tolist() == [4.0] * 6
    assert [ok for _, ok, _ in adoptions] == [True]
    z = _leaf(device)
    u = z * 1.0
    u.mul_(3.0)  # an in-place op on a tensor with history
    u.sum().backward()
    assert z.grad.tolist() == [3.0] * 6


def test_backward_runs_in_threads_keep_their_gradients_apart(device):
    # each thread's runs open their own epochs; interleaved runs may adopt less, never wrongly
    errors = []
    grads: list = []

    def work(k: float) -> None:
        for _ in range(30):
            w = pg.full((16,), k, device=device).requires_grad_()
            (w * w).sum().backward()  # d/dw = 2k
            g = w.grad
            if g.tolist() != [2 * k] * 16:
                errors.append((k, g.tolist()))
            grads.append(g)

    threads = [threading.Thread(target=work, args=(float(k),)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(grads) == 4 * 30  # (a thread that raised would fall short)
    buffers = {id(g._v.buffer) for g in grads}
    assert len(buffers) == len(grads)  # no two gradients share memory
