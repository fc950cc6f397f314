"""``nn.functional.grouped_mm`` (its four modes, gradients, dtype and stride rules, PyTorch's
argument checks and messages) and the device-generic ``pg.Stream`` / ``pg.Event``; expected
values are PyTorch 2.13's (CPU), written out."""
from __future__ import annotations

import pytest

import portagrad as pg
from portagrad._ops.nn.grouped_mm import _grouped

F = pg.nn.functional


def ints(device: str, shape: tuple[int, ...], mod: int, shift: int, dtype=pg.float32) -> pg.Tensor:
    """Small exact values: ``(i * 7 % mod) - shift`` for ``i`` in ``range(numel)``."""
    n = 1
    for s in shape:
        n *= s
    return pg.tensor([(i * 7 % mod) - shift for i in range(n)], dtype=dtype,
                     device=device).reshape(shape)


def offs(device: str, *ends: int) -> pg.Tensor:
    return pg.tensor(list(ends), dtype=pg.int32, device=device)


def run(device: str, a_shape, b_shape, ends, w_shape):
    """``grouped_mm`` of the standard exact inputs, and the gradients of ``(out * w).sum()``."""
    a = ints(device, a_shape, 5, 2).requires_grad_()
    b = ints(device, b_shape, 3, 1).requires_grad_()
    out = F.grouped_mm(a, b, offs=None if ends is None else offs(device, *ends))
    (out * ints(device, w_shape, 4, 1)).sum().backward()
    return out.detach().tolist(), a.grad.tolist(), b.grad.tolist(), out


# ------------------------------------------------------------------------------- the modes
def test_2d_x_3d_rows_grouped_with_an_empty_group(device: str) -> None:
    out, ga, gb, res = run(device, (6, 4), (3, 4, 4), (2, 2, 6), (6, 4))
    assert res.shape == (6, 4) and res.dtype is pg.float32
    assert out == [[5, -2, -3, 5], [-3, -2, 5, -3], [-2, -1, 3, -2], [1, 1, -2, 1],
                   [-1, -2, 3, -1], [-3, 5, -2, -3]]
    assert ga == [[2, 1, -3, 2], [2, 1, -3, 2], [-3, 2, 1, -3], [-3, 2, 1, -3], [-3, 2, 1, -3],
                  [-3, 2, 1, -3]]
    assert gb == [[[1, -2, -1, 0], [2, -4, -2, 0], [-2, 4, 2, 0], [-1, 2, 1, 0]],
                  [[0] * 4] * 4,  # the empty group's expert: a zero gradient
                  [[1, -2, -1, 0], [-2, 4, 2, 0], [0, 0, 0, 0], [2, -4, -2, 0]]]


def test_3d_x_2d_columns_grouped(device: str) -> None:
    out, ga, gb, _ = run(device, (3, 2, 4), (4, 12), (4, 4, 12), (2, 12))
    assert out == [[1, 0, -1, 1, 0, 2, -2, 0, 2, -2, 0, 2],
                   [-1, 0, 1, -1, 0, -1, 1, 0, -1, 1, 0, -1]]
    assert ga == [[[2] * 4] * 2, [[0] * 4] * 2, [[-2] * 4] * 2]
    assert gb == [[1, -2, -1, 0, 2, -4, -2, 0, 2, -4, -2, 0],
                  [2, -4, -2, 0, -2, 4, 2, 0, -2, 4, 2, 0],
                  [-2, 4, 2, 0, -1, 2, 1, 0, -1, 2, 1, 0],
                  [-1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]]


def test_2d_x_2d_contraction_grouped(device: str) -> None:
    out, ga, gb, res = run(device, (2, 12), (12, 4), (4, 12), (2, 2, 4))
    assert res.shape == (2, 2, 4)  # one (M, N) product per group
    assert out == [[[5, -2, -3, 5], [1, -2, 1, 1]], [[-4, 4, 0, -4], [0, 4, -4, 0]]]
    assert ga == [[2, 1, -3] * 4] * 2
    assert gb == [[0, 0, 0, 0], [1, -2, -1, 0], [-3, 6, 3, 0], [3, -6, -3, 0], [-1, 2, 1, 0],
                  [0, 0, 0, 0], [1, -2, -1, 0], [-3, 6, 3, 0], [3, -6, -3, 0], [-1, 2, 1, 0],
                  [0, 0, 0, 0], [1, -2, -1, 0]]


def test_3d_x_3d_batched(device: str) -> None:
    out, ga, gb, res = run(device, (2, 3, 4), (2, 4, 4), None, (2, 3, 4))
    assert res.shape == (2, 3, 4)
    assert out == [[[5, -2, -3, 5], [-3, -2, 5, -3], [-1, 3, -2, -1]],
                   [[-2, 1, 1, -2], [3, -1, -2, 3], [-2, -3, 5, -2]]]
    assert ga == [[[2, 1, -3, 2]] * 3, [[1, -3, 2, 1]] * 3]
    assert gb == [[[2, -4, -2, 0], [1, -2, -1, 0], [0, 0, 0, 0], [-1, 2, 1, 0]],
                  [[0, 0, 0, 0], [-1, 2, 1, 0], [-2, 4, 2, 0], [2, -4, -2, 0]]]


def test_transposed_expert_weights(device: str) -> None:
    """A (G, N, K) weight transposed to (G, K, N) (column-major, as MoE layers store it)."""
    a = ints(device, (6, 4), 5, 2)
    b = ints(device, (3, 4, 4), 3, 1)
    bt = b.transpose(1, 2).contiguous().transpose(1, 2)
    assert F.grouped_mm(a, bt, offs=offs(device, 2, 2, 6)).tolist() == \
        F.grouped_mm(a, b, offs=offs(device, 2, 2, 6)).tolist()


def test_out_dtype_equal_to_the_input_dtype(device: str) -> None:
    a, b = ints(device, (6, 4), 5, 2), ints(device, (3, 4, 4), 3, 1)
    out = F.grouped_mm(a, b, offs=offs(device, 2, 4, 6), out_dtype=pg.float32)
    assert out.dtype is pg.float32
    assert out.tolist() == [[5, -2, -3, 5], [-3, -2, 5, -3], [3, -2, -1, 3], [-2, 1, 1, -2],
                            [-1, -2, 3, -1], [-3, 5, -2, -3]]


@pytest.mark.parametrize("dtype, expected", [
    ("bfloat16", [[0.66796875, -0.333984375, -0.333984375, 0.66796875, -0.333984375,
                   -0.333984375, 0.66796875, -0.333984375],
                  [-0.4453125, 0.333984375, 0.111328125, -0.4453125, 0.333984375, 0.111328125,
                   -0.4453125, 0.333984375]]),
    ("float16", [[0.66943359375, -0.334716796875, -0.334716796875, 0.66943359375,
                  -0.334716796875, -0.334716796875, 0.66943359375, -0.334716796875],
                 [-0.4462890625, 0.334716796875, 0.111572265625, -0.4462890625, 0.334716796875,
                  0.111572265625, -0.4462890625, 0.334716796875]]),
])
def test_half_float_dtypes(device: str, dtype: str, expected) -> None:
    dt = getattr(pg, dtype)
    try:
        a = ints(device, (2, 8), 5, 2).to(dt) / 3
        b = ints(device, (2, 8, 8), 3, 1).to(dt) / 3
        out = F.grouped_mm(a, b, offs=offs(device, 1, 2))
    except pg.errors.DTypeError:  # (a backend over array-api-strict has no 16-bit floats)
        pytest.skip(f"{device} declines {dtype} (DTypeError)")
    assert out.dtype is dt
    got = out.float().tolist()
    for row, want in zip(got, expected):
        assert row == pytest.approx(want, abs=4e-3)


# --------------------------------------------------- where PyTorch leaves memory unwritten
def test_rows_and_columns_past_the_last_offset_are_zero(device: str) -> None:
    """PyTorch leaves them (and their gradients) uninitialised; here they are zeros."""
    a = ints(device, (6, 4), 5, 2).requires_grad_()
    b = ints(device, (3, 4, 4), 3, 1)
    out = F.grouped_mm(a, b, offs=offs(device, 1, 2, 3))
    assert out[:3].tolist() == [[5, -2, -3, 5], [-2, 5, -3, -2], [-2, -1, 3, -2]]  # PyTorch's
    assert out[3:].tolist() == [[0] * 4] * 3
    out.sum().backward()
    assert a.grad[:3].tolist() == [[-1, 0, 1, -1], [0, 1, -1, 0], [1, -1, 0, 1]]  # PyTorch's
    assert a.grad[3:].tolist() == [[0] * 4] * 3
    a3, b2 = ints(device, (3, 2, 4), 5, 2), ints(device, (4, 12), 3, 1)
    cols = F.grouped_mm(a3, b2, offs=offs(device, 4, 4, 8))
    assert cols[:, :4].tolist() == [[1, 0, -1, 1], [-1, 0, 1, -1]]  # PyTorch's
    assert cols[:, 8:].tolist() == [[0] * 4] * 2


def test_every_group_empty_still_differentiable(device: str) -> None:
    a = ints(device, (6, 4), 5, 2).requires_grad_()
    b = ints(device, (3, 4, 4), 3, 1).requires_grad_()
    out = F.grouped_mm(a, b, offs=offs(device, 0, 0, 0))
    assert out.tolist() == [[0] * 4] * 6 and out.requires_grad
    out.sum().backward()
    assert a.grad.tolist() == [[0] * 4] * 6 and b.grad.tolist() == [[[0] * 4] * 4] * 3
    k = F.grouped_mm(ints(device, (2, 4), 5, 2), ints(device, (4, 4), 3, 1), offs=offs(device, 0, 4))
    # (PyTorch's: an empty contraction is a zero product)
    assert k.tolist() == [[[0] * 4] * 2, [[5, -2, -3, 5], [-3, -2, 5, -3]]]


def test_empty_inputs(device: str) -> None:
    out = F.grouped_mm(pg.zeros(0, 4, device=device), pg.ones(3, 4, 4, device=device),
                       offs=offs(device, 0, 0, 0))
    assert out.shape == (0, 4)
    assert F.grouped_mm(pg.ones(0, 5, 4, device=device), pg.ones(0, 4, 4, device=device)
                        ).shape == (0, 5, 4)
    out = F.grouped_mm(pg.ones(6, 4, device=device), pg.ones(0, 4, 4, device=device),
                       offs=pg.zeros(0, dtype=pg.int32, device=device))
    assert out.shape == (6, 4)  # no group: nothing written (zeros here)


@pytest.mark.parametrize("mode", ["2d3d", "3d2d", "2d2d"])
def test_gradcheck_float64(device: str, mode: str) -> None:
    """PyTorch's grouped_mm refuses float64; the composition does not, so it is gradchecked
    there through the unchecked core."""
    shapes = {"2d3d": ((5, 3), (3, 3, 2), [2, 2, 4]), "3d2d": ((3, 2, 3), (3, 5), [1, 1, 4]),
              "2d2d": ((2, 5), (5, 3), [2, 2, 4])}[mode]
    try:
        pg.manual_seed(0)
        a = pg.randn(*shapes[0], dtype=pg.float64, device=device).requires_grad_()
        b = pg.randn(*shapes[1], dtype=pg.float64, device=device).requires_grad_()
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines float64 (DTypeError)")
    assert pg.autograd.gradcheck(lambda x, y: _grouped(x, y, shapes[2]), (a, b))


# ------------------------------------------------------------------------------- errors
def _err(device: str, case: str):
    f32 = pg.float32
    z = lambda *s, dtype=f32: pg.zeros(*s, dtype=dtype, device=device)  # noqa: E731
    o = offs(device, 2, 4, 6)
    return {
        "a float64": (z(6, 8, dtype=pg.float64), z(3, 8, 4), {"offs": o}),
        "b int32": (z(6, 8), z(3, 8, 4, dtype=pg.int32), {"offs": o}),
        "a 1-D": (z(8), z(3, 8, 4), {"offs": o}),
        "b 4-D": (z(6, 8), z(1, 3, 8, 4), {"offs": o}),
        "K": (z(6, 8), z(3, 4, 4), {"offs": o}),
        "K 3d3d": (z(3, 5, 4), z(3, 8, 4), {}),
        "K 2d2d": (z(5, 16), z(8, 4), {"offs": offs(device, 4, 8, 16)}),
        "stride": (z(6, 3), z(3, 3, 4), {"offs": o}),
        "stride b": (z(6, 8), z(3, 8, 3), {"offs": o}),
        "stride a.T": (z(8, 6).t(), z(3, 8, 4), {"offs": o}),
        "layout": (z(6, 16)[:, ::2], z(3, 8, 4), {"offs": o}),
        "layout expanded": (z(1, 8).expand(6, 8), z(3, 8, 4), {"offs": o}),
        "no offs": (z(6, 8), z(3, 8, 4), {}),
        "offs 3d3d": (z(3, 5, 8), z(3, 8, 4), {"offs": o}),
        "out_dtype": (z(6, 8), z(3, 8, 4), {"offs": o, "out_dtype": pg.float64}),
        "offs int64": (z(6, 8), z(3, 8, 4), {"offs": pg.tensor([2, 4, 6], device=device)}),
        "offs 2-D": (z(6, 8), z(3, 8, 4), {"offs": o.reshape(1, 3)}),
        "bias": (z(6, 8), z(3, 8, 4), {"offs": o, "bias": z(3, 4)}),
        "groups": (z(6, 8), z(3, 8, 4), {"offs": offs(device, 2, 6)}),
        "groups 3d2d": (z(3, 5, 8), z(8, 12), {"offs": offs(device, 4, 12)}),
        "batch": (z(2, 5, 8), z(3, 8, 4), {}),
    }[case]


@pytest.mark.parametrize("case, message", [
    ("a float64", "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double"),
    ("b int32", "Expected mat_b to be Float32, BFloat16 or Float16 matrix, got Int"),
    ("a 1-D", "mat_a has to be 2 or 3d"),
    ("b 4-D", "mat_b has to be 2 or 3d"),
    ("K", "contraction dimension of mat_a and mat_b must match"),
    ("K 3d3d", "contraction dimension of mat_a and mat_b must match"),
    ("K 2d2d", r"mat1 and mat2 shapes cannot be multiplied \(5x8 and 0x4\)"),
    ("stride", "strides should be multiple of 16 bytes"),
    ("stride b", "strides should be multiple of 16 bytes"),
    ("stride a.T", "strides should be multiple of 16 bytes"),
    ("layout", r"Invalid strides/sizes, got \[16, 2\] for strides and \[6, 8\] for sizes"),
    ("layout expanded", r"Invalid strides/sizes, got \[0, 1\] for strides and \[6, 8\] for sizes"),
    ("no offs", "Have to provide offsets if there is a 2d matrix, or no offset if both "
                "matrices are 3d"),
    ("offs 3d3d", "Have to provide offsets if there is a 2d matrix"),
    ("out_dtype", "Grouped gemm output dtype must match `mat_a` dtype"),
    ("offs int64", "Offsets have to be int32"),
    ("offs 2-D", "offs has to be 1D"),
    ("bias", "Bias not supported yet"),
    ("groups", "matrix batch sizes have to match"),
    ("groups 3d2d", "matrix batch sizes have to match"),
    ("batch", "batched dimension has to match"),
])
def test_argument_checks(device: str, case: str, message: str) -> None:
    try:
        a, b, kw = _err(device, case)
    except pg.errors.DTypeError:
        pytest.skip(f"{device} declines the dtype (DTypeError)")
    with pytest.raises(RuntimeError, match=f"^{message}"):
        F.grouped_mm(a, b, **kw)


def test_check_order(device: str) -> None:
    """PyTorch reports the first failing check: dtype, rank, contraction, strides, offsets,
    out_dtype, offsets' dtype, bias, group counts, then mixed dtypes."""
    z = lambda *s: pg.zeros(*s, device=device)  # noqa: E731
    with pytest.raises(RuntimeError, match="contraction dimension"):
        F.grouped_mm(z(6, 3), z(3, 8, 4), offs=offs(device, 2, 4, 6))
    with pytest.raises(RuntimeError, match="strides should be"):
        F.grouped_mm(z(6, 3), z(3, 3, 4))
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        F.grouped_mm(z(6, 8), z(3, 8, 4), out_dtype=pg.float16)
    with pytest.raises(RuntimeError, match="Offsets have to be int32"):
        F.grouped_mm(z(6, 8), z(3, 8, 4), offs=pg.tensor([2, 6], device=device),
                     bias=z(3, 4))
    with pytest.raises(RuntimeError, match="Bias not supported yet"):
        F.grouped_mm(z(2, 5, 8), z(3, 8, 4), bias=z(3, 4))
    try:
        bf = pg.zeros(3, 8, 8, dtype=pg.bfloat16, device=device)
    except pg.errors.DTypeError:
        return
    with pytest.raises(RuntimeError, match=r"^expected m1 and m2 to have the same dtype, but "
                       r"got: float != c10::BFloat16$"):
        F.grouped_mm(z(6, 8), bf, offs=offs(device, 2, 4, 6))
    with pytest.raises(RuntimeError, match=r"^Expected out tensor to have dtype c10::BFloat16, "
                       r"but got float instead$"):
        F.grouped_mm(z(3, 5, 8), bf)


# ------------------------------------------------------------------ pg.Stream and pg.Event
def test_stream_on_the_device(device: str) -> None:
    s = pg.Stream(device)
    assert s.stream_id == 0 and not s.is_capturing() and s == pg.Stream(device)
    assert hash(s) == hash(pg.Stream(device))
    with s:  # (a context manager that changes nothing)
        pass
    if device == "cpu":  # PyTorch's CPU stream: always idle, no events
        assert (s.device, s.device_index, s.device_type) == (pg.device("cpu"), -1, 0)
        assert repr(s) == "portagrad.Stream device_type=cpu, device_index=-1, stream_id=0"
        assert s.query() is True and s.synchronize() is None
        assert s.wait_event(pg.Event("cpu")) is None
        for call in (s.record_event, lambda: s.wait_stream(s)):
            with pytest.raises(RuntimeError, match=r"^cpu backend doesn't support events\.$"):
                call()
        return
    x = pg.ones(64, 64, device=device)
    y = x @ x
    try:
        ev = s.record_event()
    except NotImplementedError:  # (a backend without the optional event methods)
        pytest.skip(f"{device}'s backend has no events")
    s.synchronize()
    assert ev.query() and s.query() and ev.device == s.device
    s.wait_event(ev)
    s.wait_stream(pg.Stream(device))
    assert y[0, 0].item() == 64


def test_event_on_the_device(device: str) -> None:
    start = pg.Event(device, enable_timing=True)
    end = pg.Event(device, enable_timing=True)
    assert start.event_id == 0 and start.query() is True  # never recorded: nothing to wait for
    with pytest.raises(ValueError, match=r"^Both events must be created with argument "
                       r"'enable_timing=True'\.$"):
        start.elapsed_time(pg.Event(device))
    with pytest.raises(ValueError, match=r"^Both events must be recorded before calculating "
                       r"elapsed time\.$"):
        start.elapsed_time(end)
    if device == "cpu":
        assert repr(start) == ("portagrad.Event device_type=cpu, device_index=-1, event_flag=1, "
                               "event_id=0")
        with pytest.raises(RuntimeError, match=r"^cpu backend doesn't support events\.$"):
            start.record()
        assert start.synchronize() is None and start.wait() is None
        return
    try:
        start.record()
    except NotImplementedError:
        pytest.skip(f"{device}'s backend has no events")
    (pg.ones(32, 32, device=device) @ pg.ones(32, 32, device=device)).sum()
    end.record(pg.Stream(device))
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="does not match recording stream's device"):
        end.record(pg.Stream("cpu"))


def test_stream_and_event_arguments(device: str) -> None:
    meta = pg.Stream("meta", priority=-1)
    assert (meta.device_type, meta.device_index, meta.query()) == (14, -1, True)
    with pytest.raises(RuntimeError, match=r"^meta backend doesn't support events\.$"):
        pg.Event("meta").record()
    with pytest.raises(TypeError, match=r"argument 'device' \(position 1\) must be torch.device, "
                       r"not float"):
        pg.Stream(1.5)
    with pytest.raises(TypeError):
        pg.Stream("cpu", 0)  # (priority is keyword-only)
    with pytest.raises(TypeError):
        pg.Event("cpu", True)  # (so is enable_timing)
    with pytest.raises(RuntimeError, match="^PyTorch is not linked with support for cuda devices$"):
        pg.Event("cuda")
    with pytest.raises(NotImplementedError, match="torch.Event ipc is not supported yet"):
        pg.Event(device).ipc_handle()
    with pytest.raises(RuntimeError, match="^Backend doesn't support getting stream native "
                       "handle.$"):
        pg.Stream(device).native_handle  # noqa: B018
    assert pg.Stream(pg.device(device)).device.type == pg.device(device).type
