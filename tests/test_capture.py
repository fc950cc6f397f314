"""Captured training steps (``portagrad.capture``, ``pg.compile(mode="reduce-overhead")``):
replays are bit-identical to eager steps, and every reason a replay would be wrong makes the step
run eagerly instead, with one warning naming it."""
from __future__ import annotations

import math

import gc
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.capture import CapturedStep, capture
from portagrad.plugins import manager

# ``benchmarks`` is not installed with the package: reach it from the repository root (appended,
# so ``portagrad`` still resolves to the installed package under tox)
sys.path.append(str(Path(__file__).resolve().parents[1]))
from benchmarks.model_zoo import GPTConfig, gpt, resnet18

nn = pg.nn
F = pg.nn.functional


# ------------------------------------------------------------------------ models
def _mlp() -> Any:
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))


def _wide() -> Any:
    # 2 MiB weights and gradients: buffers the cpu backend's pool hands out again between steps
    return nn.Sequential(nn.Linear(12, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                         nn.Linear(512, 5))


def _cnn() -> Any:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


_GPT = GPTConfig(vocab=32, seq=8, d_model=16, heads=2, layers=1, dropout=0.1)


def _sgd(m: Any) -> Any:
    return pg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)


def _adamw(m: Any) -> Any:
    return pg.optim.AdamW(m.parameters(), lr=0.01, capturable=True)


def _batches(kind: str, device: str, n: int) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(1)
    out = []
    for _ in range(n):
        if kind == "gpt":
            idx = rng.integers(0, _GPT.vocab, (2, _GPT.seq + 1))
            out.append((pg.tensor(idx[:, :-1], device=device), pg.tensor(idx[:, 1:], device=device)))
            continue
        shape = {"mlp": (6, 12), "wide": (6, 12), "cnn": (6, 1, 8, 8), "resnet": (2, 3, 8, 8)}[kind]
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.integers(0, 5, shape[0])
        out.append((pg.tensor(x, device=device), pg.tensor(y, device=device)))
    return out


_MODELS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "mlp": (_mlp, _sgd),
    "wide": (_wide, _sgd),
    "cnn": (_cnn, _sgd),
    "gpt": (lambda: gpt(pg, _GPT), _adamw),
    "resnet": (lambda: resnet18(pg, num_classes=5, widths=(4, 4, 8, 8)), _sgd),
}


def _setup(kind: str, device: str) -> tuple[Any, Any, Callable[..., Any]]:
    build, make_opt = _MODELS[kind]
    pg.manual_seed(0)
    model = build().to(device)
    opt = make_opt(model)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def _bits(t: Any) -> bytes:
    return t.detach().cpu().numpy().tobytes()


def _state(model: Any) -> list[bytes]:
    return [_bits(t) for t in model.state_dict().values()]


# ------------------------------------------------------------------ bit-identity
@pytest.mark.parametrize("kind", ["mlp", "wide", "cnn", "gpt", "resnet"])
def test_replay_is_bit_identical_to_eager(device: str, kind: str) -> None:
    data = _batches(kind, device, 6)
    model, opt, step = _setup(kind, device)
    eager = [_bits(step(x, y)) for x, y in data]
    eager_state = _state(model)
    eager_grads = [_bits(p.grad) for p in model.parameters()]
    eager_rng = pg.default_generator._offset

    model, opt, step = _setup(kind, device)
    cstep = capture(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback
        captured = [_bits(cstep(x, y)) for x, y in data]
    assert cstep.stats == {"captured": True, "calls": 6, "replays": 3, "fallbacks": 0,
                           "last_fallback": None}
    assert captured == eager
    assert _state(model) == eager_state  # parameters and buffers (BatchNorm statistics)
    assert [_bits(p.grad) for p in model.parameters()] == eager_grads
    assert pg.default_generator._offset == eager_rng  # replays advance the generator as eager
    if device.startswith("opencl"):  # the first replay traced its runs, the later ones ran traces
        runs = cstep._rec.runs
        assert runs and any(r.trace is not None for r in runs)


def test_replay_records_methods_the_backend_set_on_itself(device: str,
                                                          monkeypatch: Any) -> None:
    """With fusion off the OpenCL backend puts its unfused ``unary``/``binary`` on the instance;
    the recording skipped such names once, so the replays left every elementwise op out."""
    if not device.startswith("opencl"):
        pytest.skip("the OpenCL backend's fusion switch")
    pg.zeros(1, device=device)
    be = manager.get_state().backends["opencl"]
    monkeypatch.setattr(be, "_fz", None)
    monkeypatch.setattr(be, "unary", be._unary_eager)
    monkeypatch.setattr(be, "binary", be._binary_eager)
    data = _batches("mlp", device, 5)
    model, _, step = _setup("mlp", device)
    eager = [_bits(step(x, y)) for x, y in data]
    eager_state = _state(model)
    model, _, step = _setup("mlp", device)
    cstep = capture(step)
    assert [_bits(cstep(x, y)) for x, y in data] == eager
    assert cstep.stats["replays"] == 2
    assert _state(model) == eager_state


def test_outputs_are_copies_that_survive_the_next_call(device: str) -> None:
    data = _batches("mlp", device, 6)
    _, _, step = _setup("mlp", device)
    cstep = capture(step)
    losses = [cstep(x, y) for x, y in data]
    assert cstep.replays == 3
    assert len({_bits(loss) for loss in losses}) == 6  # not views of one recorded buffer
    # recorded and replayed calls return copies without history; warm-up is the eager result
    assert all(loss.grad_fn is None and not loss.requires_grad for loss in losses[1:])
    assert losses[0].grad_fn is not None


def test_compile_reduce_overhead_captures_functions(device: str) -> None:
    data = _batches("mlp", device, 5)
    model, _, step = _setup("mlp", device)
    cstep = pg.compile(step, mode="reduce-overhead")
    assert isinstance(cstep, CapturedStep)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured and cstep.replays == 2
    assert isinstance(pg.compile(step, backend="cudagraphs"), CapturedStep)
    assert pg.compile(step) is step  # the default mode runs eagerly
    assert pg.compile(step, mode="reduce-overhead", disable=True) is step
    assert pg.compile(model, mode="reduce-overhead") is model  # modules run eagerly
    deco = pg.compile(mode="reduce-overhead")(step)
    assert isinstance(deco, CapturedStep)


def test_reset_frees_the_recording(device: str) -> None:
    data = _batches("mlp", device, 4)
    _, _, step = _setup("mlp", device)
    cstep = capture(step)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured
    cstep.reset()
    assert not cstep.captured and cstep.stats["replays"] == 0 and cstep._rec is None


def test_capture_argument_errors() -> None:
    with pytest.raises(TypeError, match="callable"):
        capture(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="warmup"):
        capture(lambda: None, warmup=-1)


def test_decorator_forms_and_warmup() -> None:
    @capture
    def double(x: Any) -> Any:
        return x * 2

    @capture(warmup=2)
    def triple(x: Any) -> Any:
        return x * 3

    assert isinstance(double, CapturedStep) and isinstance(triple, CapturedStep)
    for i in range(5):
        assert double(pg.full((2,), float(i))).tolist() == [2.0 * i] * 2
        assert triple(pg.full((2,), float(i))).tolist() == [3.0 * i] * 2
    assert double.replays == 2 and triple.replays == 1  # 1 (2) warm-up + 2 recorded calls
    assert "replays=2" in repr(double)


# --------------------------------------------------------------------- fallbacks
def _run_both(device: str, kind: str, n: int, make: Callable[..., Callable[..., Any]],
              between: Callable[[int, Any, Any], None] = lambda i, m, o: None
              ) -> tuple[CapturedStep, list[Any]]:
    """Run ``n`` steps eagerly and captured (``make(model, opt, step)`` gives the step; ``between``
    runs before each call), assert the results and final states are bit-identical, and return the
    captured step and the warnings it gave."""
    data = _batches(kind, device, n)
    results = []
    states = []
    cstep: Any = None
    caught: list[Any] = []
    for cap in (False, True):
        model, opt, step = _setup(kind, device)
        fn = make(model, opt, step)
        if cap:
            cstep = fn = capture(fn)
        out = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for i, (x, y) in enumerate(data):
                between(i, model, opt)
                out.append(_bits(fn(x, y)))
        if cap:
            caught = [str(m.message) for m in w if "captured step" in str(m.message)]
        results.append(out)
        states.append(_state(model))
    assert results[0] == results[1]
    assert states[0] == states[1]
    return cstep, caught


def _reason(cstep: CapturedStep, caught: list[str], text: str, once: bool = True) -> None:
    assert cstep.fallbacks >= 1
    assert cstep.last_fallback is not None and text in cstep.last_fallback
    hits = [m for m in caught if text in m]
    assert hits and (len(hits) == 1 or not once), caught


def test_fallback_host_read(device: str) -> None:
    def make(model: Any, opt: Any, step: Any) -> Any:
        def fn(x: Any, y: Any) -> Any:
            loss = step(x, y)
            loss.item()
            return loss
        return fn
    cstep, caught = _run_both(device, "mlp", 6, make)
    _reason(cstep, caught, "host read")
    assert not cstep.captured and cstep.replays == 0


def test_fallback_adam_without_capturable(device: str) -> None:
    def make(model: Any, opt: Any, step: Any) -> Any:
        o2 = pg.optim.Adam(model.parameters(), lr=0.01)

        def fn(x: Any, y: Any) -> Any:
            o2.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            o2.step()
            return loss
        return fn
    cstep, caught = _run_both(device, "mlp", 5, make)
    _reason(cstep, caught, "host read")


def test_fallback_data_dependent_control_flow(device: str) -> None:
    def make(model: Any, opt: Any, step: Any) -> Any:
        calls = [0]

        def fn(x: Any, y: Any) -> Any:
            calls[0] += 1
            loss = step(x, y)
            return loss * 2 if calls[0] % 2 else loss
        return fn
    cstep, caught = _run_both(device, "mlp", 6, make)
    _reason(cstep, caught, "launches where the previous step made")


def test_fallback_python_scalar_changes_every_step(device: str) -> None:
    def make(model: Any, opt: Any, step: Any) -> Any:
        calls = [0]

        def fn(x: Any, y: Any) -> Any:
            calls[0] += 1
            return step(x, y) * (1.0 / calls[0])
        return fn
    cstep, caught = _run_both(device, "mlp", 6, make)
    _reason(cstep, caught, "scalar that changes every step")


def test_fallback_tensor_kept_across_steps(device: str) -> None:
    kept: list[Any] = []

    def make(model: Any, opt: Any, step: Any) -> Any:
        def fn(x: Any, y: Any) -> Any:
            loss = step(x, y)
            kept.append(loss.detach())
            return loss
        return fn
    cstep, caught = _run_both(device, "mlp", 6, make)
    _reason(cstep, caught, "outlives the next step")


def test_fallback_input_shape_change_then_replays_again(device: str) -> None:
    data = _batches("mlp", device, 7)
    small = _batches("mlp", device, 1)[0]
    seq = data[:5] + [(small[0][:3], small[1][:3])] + data[5:]
    outs = []
    for cap in (False, True):
        model, _, step = _setup("mlp", device)
        fn = capture(step) if cap else step
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            outs.append(([_bits(fn(x, y)) for x, y in seq], _state(model)))
    assert outs[0] == outs[1]
    assert isinstance(fn, CapturedStep)
    assert fn.fallbacks == 1 and "shape of input 0 changed" in (fn.last_fallback or "")
    assert fn.captured and fn.replays == 4  # the recording survives the odd batch
    assert sum("shape of input 0" in str(m.message) for m in w) == 1


def test_fallback_dtype_named(device: str) -> None:
    cstep = capture(lambda x: (x * 2).sum())
    for i in range(4):
        cstep(pg.full((3,), float(i), device=device))
    assert cstep.captured
    with pytest.warns(UserWarning, match="dtype of input 0 changed"):
        out = cstep(pg.ones(3, dtype=pg.float64, device=device))
    assert out.dtype == pg.float64 and out.item() == 6.0
    assert "float64" in (cstep.last_fallback or "")
    assert _bits(cstep(pg.full((3,), 4.0, device=device))) == _bits(pg.tensor(24.0))
    assert cstep.replays == 2


def test_fallback_grad_mode(device: str) -> None:
    data = _batches("mlp", device, 4)
    model, opt, _ = _setup("mlp", device)

    def fwd(x: Any, y: Any) -> Any:
        return F.cross_entropy(model(x), y)
    cstep = capture(fwd)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured
    with pg.no_grad(), pytest.warns(UserWarning, match="grad mode changed"):
        out = cstep(*data[0])
    assert _bits(out) == _bits(fwd(*data[0]))


def test_fallback_hook_added_records_again(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            model[0].weight.register_hook(lambda g: g * 0.5)
    cstep, caught = _run_both(device, "mlp", 8, lambda m, o, s: s, between)
    _reason(cstep, caught, "parameter 'weight' of a Linear changed")
    assert cstep.captured and cstep.replays == 3  # call 4, then recorded again: calls 7 and 8


def test_fallback_module_hook_added(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            model[1].register_forward_hook(lambda mod, inp, out: out * 2)
    cstep, caught = _run_both(device, "mlp", 8, lambda m, o, s: s, between)
    _reason(cstep, caught, "hooks of a ReLU changed")


def test_fallback_parameter_replaced(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            w = model[0].weight
            w.data = w.detach() * 0.5
    cstep, caught = _run_both(device, "mlp", 8, lambda m, o, s: s, between)
    _reason(cstep, caught, "parameter 'weight' of a Linear changed")


def test_fallback_lr_schedule(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            for g in opt.param_groups:
                g["lr"] *= 0.1
    cstep, caught = _run_both(device, "mlp", 8, lambda m, o, s: s, between)
    _reason(cstep, caught, "hyper-parameter 'lr'")


def test_fallback_lr_scheduler_inside_the_step(device: str) -> None:
    """A StepLR stepping inside the captured function keeps the same lr for its first steps, so
    the two recordings agree; a replay would then skip the scheduler's Python and keep that lr
    for ever (losses drifting from eager's with no warning). It runs eagerly instead."""
    def make(model: Any, opt: Any, step: Any) -> Any:
        sched = pg.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.1)

        def fn(x: Any, y: Any) -> Any:
            loss = step(x, y)
            sched.step()
            return loss
        return fn
    cstep, caught = _run_both(device, "mlp", 10, make)
    _reason(cstep, caught, "an LR scheduler steps inside the step")
    assert cstep.replays == 0


def test_fallback_hyper_parameter_set_inside_the_step(device: str) -> None:
    def make(model: Any, opt: Any, step: Any) -> Any:
        count = [0]

        def fn(x: Any, y: Any) -> Any:
            count[0] += 1
            for g in opt.param_groups:  # a hand-made warm-up: lr grows until step 3, then stays
                g["lr"] = 0.01 * min(count[0], 3)
            return step(x, y)
        return fn
    cstep, caught = _run_both(device, "mlp", 8, make)
    assert cstep.replays == 0 and cstep.fallbacks >= 1


def test_lr_scheduler_outside_the_step_replays(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 0:
            opt._sched = pg.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
        else:
            opt._sched.step()
    cstep, caught = _run_both(device, "mlp", 10, lambda m, o, s: s, between)
    assert cstep.replays >= 2  # between the lr changes, the recording is replayed
    _reason(cstep, caught, "hyper-parameter 'lr'")


def test_fallback_eval_mode(device: str) -> None:
    def between(i: int, model: Any, opt: Any) -> None:
        if i == 4:
            model.eval()
    cstep, caught = _run_both(device, "cnn", 8, lambda m, o, s: s, between)
    _reason(cstep, caught, "training changed")


def test_a_transient_fallback_warns_once() -> None:
    cstep = capture(lambda x: x * 2)
    for i in range(4):
        cstep(pg.full((3,), float(i)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in (2, 4, 5):
            assert cstep(pg.ones(n)).tolist() == [2.0] * n
    assert cstep.fallbacks == 3
    assert [str(m.message).count("shape of input 0 changed") for m in w] == [1, 1, 1]
    # each message names the shapes; the same change again is counted but not warned again
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cstep(pg.ones(2))
    assert cstep.fallbacks == 4 and not w


def test_fallback_input_changed_in_place() -> None:
    def step(x: Any) -> Any:
        x.mul_(2)
        return x.sum()
    cstep = capture(step)
    xs = [pg.ones(3) for _ in range(4)]
    with pytest.warns(UserWarning, match="changes an input tensor in place"):
        for x in xs:
            cstep(x)
    assert cstep.disabled
    assert all(x.tolist() == [2.0, 2.0, 2.0] for x in xs)  # the recorded call's too


def test_fallback_strided_input() -> None:
    cstep = capture(lambda x: x.sum(0))
    for i in range(4):
        cstep(pg.full((2, 3), float(i)))
    assert cstep.captured
    x = pg.arange(6.0).reshape(3, 2).t()
    with pytest.warns(UserWarning, match="input 0 is not contiguous"):
        out = cstep(x)
    assert out.tolist() == [1.0, 5.0, 9.0]
    assert cstep.captured and cstep.fallbacks == 1


def test_fallback_input_requires_grad() -> None:
    cstep = capture(lambda x: (x * 2).sum())
    x = pg.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="requires grad"):
        out = cstep(x)
    assert out.item() == 6.0 and cstep.disabled


def test_replayed_index_check_raises() -> None:
    data = _batches("mlp", "cpu", 4)
    _, _, step = _setup("mlp", "cpu")
    cstep = capture(step)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured
    bad = pg.tensor([0, 1, 2, 3, 4, 5])  # class 5 of 5
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        cstep(data[0][0], bad)


@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_replays_defer_their_index_checks_where_the_device_reads_late(device: str,
                                                                     kind: str) -> None:
    """On a device with ``defer_check`` (OpenCL) a replay enqueues the checks that the eager step
    defers (class targets, embedding rows) and reads nothing from the device; a bad index
    raises at the next read (as CUDA's device-side assert: the step has run by then, its
    kernels in bounds, the NaN of the bad row in the parameters), and the device works on."""
    backend = type(pg.empty(1, device=device)._storage.backend)
    if getattr(backend, "defer_check", None) is None:
        pytest.skip(f"{device}'s backend checks indices in the call (no defer_check)")
    data = _batches(kind, device, 4)
    _, _, step = _setup(kind, device)
    cstep = capture(step)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured
    import pyopencl as cl

    reads: list[int] = []
    real = cl.enqueue_copy

    def enqueue_copy(queue: Any, dest: Any, src: Any, **kw: Any) -> Any:
        if isinstance(dest, np.ndarray) and kw.get("is_blocking", True):
            reads.append(1)  # a device -> host copy the host waits for
        return real(queue, dest, src, **kw)

    cl.enqueue_copy = enqueue_copy
    try:
        loss = cstep(*data[1])
    finally:
        cl.enqueue_copy = real
    assert reads == []
    assert math.isfinite(loss.item())
    x, y = data[0]
    bad = y.clone()
    bad.view(-1)[1] = _GPT.vocab if kind == "gpt" else 5  # one class past the last
    if kind == "gpt":  # an embedding row past the table as well
        x = x.clone()
        x.view(-1)[0] = _GPT.vocab + 3
    cstep(x, bad)  # enqueued, not raised
    with pytest.raises(IndexError, match="captured step: index .* is out of bounds"):
        pg.opencl.synchronize(pg.device(device).index)
    assert pg.ones(3, device=device).sum().item() == 3.0


def test_recording_leaves_backends_and_generators_as_they_were(device: str) -> None:
    from portagrad import _raw
    from portagrad.plugins import manager

    def own_methods() -> dict[int, dict[str, Any]]:
        # (a backend may set some on itself: the OpenCL backend's unfused unary/binary with
        # PORTAGRAD_OPENCL_FUSION=0; the recording must put exactly those back)
        return {id(be): {k: v for k, v in vars(be).items() if callable(v) and not k.startswith("_")}
                for be in manager.get_state().backends.values()}

    take = pg.Generator._take
    data = _batches("gpt", device, 4)
    _, _, step = _setup("gpt", device)
    before = own_methods()
    cstep = capture(step)
    for x, y in data:
        cstep(x, y)
    assert cstep.captured
    assert own_methods() == before
    assert pg.Generator._take is take and _raw.CHECK_HOOK is None


def test_adamw_capturable_keeps_the_step_on_the_device(device: str) -> None:
    results = []
    for capturable in (False, True):
        pg.manual_seed(0)
        model = _mlp().to(device)
        opt = pg.optim.AdamW(model.parameters(), lr=0.01, capturable=capturable)
        for x, y in _batches("mlp", device, 3):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        st = opt.state[model[0].weight]["step"]
        assert st.item() == 3.0 and st.dtype == pg.float32
        assert st.device == (model[0].weight.device if capturable else pg.device("cpu"))
        results.append([p.detach().cpu().numpy() for p in model.parameters()])
    for a, b in zip(*results):  # the same update up to the rounding of the bias corrections
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_adam_capturable_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    w0 = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    g0 = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    p = pg.tensor(w0, requires_grad=True)
    tp = torch.tensor(w0, requires_grad=True)
    opt = pg.optim.Adam([p], lr=0.1, weight_decay=0.1, amsgrad=True, capturable=True)
    # torch's capturable path needs an accelerator; its default path is the reference here
    topt = torch.optim.Adam([tp], lr=0.1, weight_decay=0.1, amsgrad=True)
    for k in range(3):
        p.grad = pg.tensor(g0 * (k + 1))
        tp.grad = torch.tensor(g0 * (k + 1))
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_temporaries_share_memory_in_a_replay(device: str) -> None:
    data = _batches("cnn", device, 5)
    model, _, step = _setup("cnn", device)
    cstep = capture(step)
    for x, y in data:
        cstep(x, y)
    rec = cstep._rec
    assert rec is not None
    # (counted in buffers: a backend's buffer object need not say its size)
    kept, allocated = len(rec.buffers), len(rec.sizes)
    assert kept < allocated * 0.8, (kept, allocated)
    # what outlives a step keeps its own memory: the gradients the parameters hold
    ids = {id(b) for b in rec.buffers}
    assert all(id(p.grad._storage.buffer) in ids for p in model.parameters())


@pytest.mark.parametrize("kind", ["gpt", "cnn"])
def test_a_replay_writes_no_more_than_the_eager_step(device: str, kind: str) -> None:
    """A replay keeps every temporary alive; the backend is told when one is dead (``discard``),
    so the OpenCL fusion stores and launches no more than in the eager step (it stored every
    temporary, and the capturable Adam's one-element terms split each parameter's update)."""
    if not device.startswith("opencl"):
        pytest.skip("elementwise fusion (stores and fused launches) is the OpenCL backend's")
    be = manager.get_state().backends["opencl"]
    fz = be._fz
    if fz is None:
        pytest.skip("PORTAGRAD_OPENCL_FUSION=0: nothing is fused")
    data = _batches(kind, device, 6)
    model, _, step = _setup(kind, device)
    gc.disable()  # (a finalizer flushing half-way would move the counts)
    try:
        def counts(fn: Callable[[], Any]) -> tuple[int, int]:
            pg.opencl.synchronize(device)
            s, n = fz.stores, fz.launches
            fn()
            pg.opencl.synchronize(device)
            return fz.stores - s, fz.launches - n

        for x, y in data[:2]:
            step(x, y)
        eager = counts(lambda: step(*data[2]))
        cstep = capture(step)
        for x, y in data[3:6]:  # a warm-up call and two recordings
            cstep(x, y)
        cstep(*data[5])  # the first replay
        replayed = counts(lambda: cstep(*data[5]))
    finally:
        gc.enable()
    assert cstep.stats["replays"] == 2
    assert replayed[0] <= eager[0] and replayed[1] <= eager[1], (replayed, eager)


def test_any_backend_method_is_recorded_and_results_refused(monkeypatch: Any) -> None:
    be = pg.ones(1)._storage.backend
    calls = []

    def extra_fill(self: Any, out: Any, value: float) -> None:  # a primitive added later
        calls.append(value)
        self.fill(out, value)

    monkeypatch.setattr(type(be), "extra_fill", extra_fill, raising=False)

    def step(x: Any) -> Any:
        out = x * 1
        out._storage.backend.extra_fill(out._v, 7.0)
        return out
    cstep = capture(step)
    for _ in range(5):
        assert cstep(pg.ones(2)).tolist() == [7.0, 7.0]
    assert cstep.replays == 2 and len(calls) == 5  # replays call it too

    monkeypatch.setattr(type(be), "extra_sum", lambda self, v: 3.0, raising=False)
    cstep = capture(lambda x: x * x._storage.backend.extra_sum(x._v))
    with pytest.warns(UserWarning, match=r"extra_sum\(\) returned a value"):
        for _ in range(3):
            assert cstep(pg.ones(2)).tolist() == [3.0, 3.0]
    assert not cstep.captured

