"""Every op-table row on every device: forward vs the numpy reference for each dtype, result
device and dtype (PyTorch's promotion), views sharing storage, in-place semantics, error cases;
plus the parts of the API that are not table-shaped (random numbers, conversions, repr)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.errors import DeviceMismatchError

from op_table import (ALL, B, F32, F64, I32, I64, OP_TABLE, OpInfo, Sample, _flat,
                      cross_device_cases, expected_dtype, expected_result_type, to_device)

ROW_DTYPES = [(row, dt) for row in OP_TABLE for dt in row.dtypes]


def _id(p: Any) -> str:
    return p.name if isinstance(p, OpInfo) else str(p).replace("portagrad.", "")


def tols(row: OpInfo, dtype: Any) -> tuple[float, float]:
    if dtype is F32:
        return max(row.rtol, 1e-5), max(row.atol, 1e-5)
    return 1e-7, 1e-9


def compare(out: Any, ref: Any, exp_dtype: Any, device: str, rtol: float, atol: float,
            where: str) -> None:
    if isinstance(out, tuple) and "indices" in getattr(out, "_fields", ()):
        assert len(ref) == 2, f"{where}: reference must give (values, indices)"
        compare(out[0], ref[0], exp_dtype, device, rtol, atol, where + " values")
        compare(out[1], ref[1], I64, device, rtol, atol, where + " indices")
        return
    if isinstance(out, (tuple, list)):
        assert isinstance(ref, (tuple, list)), f"{where}: got a sequence, reference is not"
        assert len(out) == len(ref), f"{where}: {len(out)} outputs, reference has {len(ref)}"
        for k, (o, r) in enumerate(zip(out, ref)):
            compare(o, r, exp_dtype, device, rtol, atol, f"{where}[{k}]")
        return
    assert isinstance(out, pg.Tensor), f"{where}: expected a Tensor, got {type(out).__name__}"
    assert out.device == pg.device(device), f"{where}: result on {out.device}, expected {device}"
    assert out.dtype is exp_dtype, f"{where}: dtype {out.dtype}, expected {exp_dtype}"
    ref = np.asarray(ref)
    got = out.detach().cpu().numpy()
    assert tuple(got.shape) == ref.shape, f"{where}: shape {got.shape}, reference {ref.shape}"
    if exp_dtype.is_floating_point:
        np.testing.assert_allclose(got, ref.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=where, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref.astype(exp_dtype.numpy), err_msg=where)


def _tensors_of(obj: Any) -> list:
    return [t for t in _flat(obj) if isinstance(t, pg.Tensor)]


def run_sample(row: OpInfo, sample: Sample, device: str, dtype: Any) -> None:
    where = f"{row.name} {dtype} {sample!r}"
    if row.factory:
        out = row.op(*sample.args, device=device, **sample.kwargs)
        with np.errstate(all="ignore"):
            ref = row.ref(*sample.args, **sample.kwargs)
        exp = expected_dtype(row, sample, (), dtype)
        rtol, atol = tols(row, exp)
        compare(out, ref, exp, device, rtol, atol, where)
        return
    args = to_device(sample.args, device, sample.nc)
    first = _tensors_of(args)[0]
    exp = expected_dtype(row, sample, args, dtype)
    with np.errstate(all="ignore"):  # references of empty/0-dim samples may warn
        ref = row.ref(*sample.args, **sample.kwargs)
    out = row.op(*args, **sample.kwargs)
    rtol, atol = tols(row, exp)
    compare(out, ref, exp, device, rtol, atol, where)
    if row.method is not None and isinstance(args[0], pg.Tensor):
        args2 = to_device(sample.args, device, sample.nc)
        out2 = getattr(args2[0], row.method)(*args2[1:], **sample.kwargs)
        compare(out2, ref, exp, device, rtol, atol, where + f" (method .{row.method})")
    if row.view:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o in outs:
            assert o._storage is first._storage, f"{where}: not a view of the input"
            assert o._version == first._version
        if outs and first.numel() and outs[0].numel():
            # an in-place change through the base is seen through the view, with the version
            v = outs[0]._version
            first.add_(1) if first.dtype is not B else first.logical_not_()
            assert outs[0]._version == v + 1, f"{where}: view does not see the version bump"
            assert not np.array_equal(outs[0].cpu().numpy(), np.asarray(
                ref[0] if isinstance(ref, tuple) else ref)), f"{where}: view does not see write"
    if row.inplace:
        assert out is args[0]


@pytest.mark.parametrize("row,dtype", ROW_DTYPES, ids=_id)
def test_forward(row: OpInfo, dtype: Any, device: str) -> None:
    rng = np.random.default_rng(1234)
    for sample in row.samples(dtype, rng):
        run_sample(row, sample, device, dtype)


ERRORS = [(row, e) for row in OP_TABLE for e in row.errors]


@pytest.mark.parametrize("row,case", ERRORS,
                         ids=[f"{r.name}-{e.name or i}" for i, (r, e) in enumerate(ERRORS)])
def test_errors(row: OpInfo, case: Any, device: str) -> None:
    with pytest.raises(case.exc, match=case.match):
        out = case.fn(device)
        if isinstance(out, pg.Tensor):  # a device that checks indices late raises at the read
            out.tolist()


# --------------------------------------------------------------------- promotion on real ops
PAIRS = [(a, b) for a in ALL for b in ALL]


@pytest.mark.parametrize("da,db", PAIRS, ids=_id)
def test_binary_promotion(da: Any, db: Any, device: str) -> None:
    """``a (2,3) op b (3,)``, ``a op 0-dim b`` and ``a op python scalar``: PyTorch's result dtype
    and values (numpy reference in float64, cast)."""
    rng = np.random.default_rng(0)
    an = (rng.integers(1, 4, (2, 3))).astype(da.numpy)
    for bshape in ((3,), ()):
        bn = np.asarray(rng.integers(1, 4, bshape)).astype(db.numpy)
        a, b = pg.tensor(an, device=device), pg.tensor(bn, device=device)
        exp = expected_result_type(a, b)
        assert pg.result_type(a, b) is exp
        for name, fn, ref in (("add", pg.add, np.add), ("mul", pg.mul, np.multiply),
                              ("maximum", pg.maximum, np.maximum)):
            out = fn(a, b)
            assert out.dtype is exp, f"{name}({da}, {db}{list(bshape)}) -> {out.dtype}, not {exp}"
            assert out.device == pg.device(device)
            np.testing.assert_allclose(
                out.cpu().numpy().astype(np.float64),
                ref(an.astype(np.float64), bn.astype(np.float64)).astype(exp.numpy))
        if da is not B and db is not B:  # PyTorch refuses a bool operand of sub
            out = pg.sub(a, b)
            assert out.dtype is exp
        out = pg.div(a, b)
        assert out.dtype is (exp if exp.is_floating_point else pg.get_default_dtype())
        assert pg.eq(a, b).dtype is B
        w = pg.where(pg.tensor([True, False, True], device=device), a, b)
        assert w.dtype is exp
    for s in (True, 2, 2.5):
        a = pg.tensor(an, device=device)
        exp = expected_result_type(a, s)
        assert (a + s).dtype is exp and (s + a).dtype is exp, (da, s)
        assert (a * s).dtype is exp


def test_zero_dim_cpu_tensor_meets_any_device(device: str) -> None:
    a = pg.ones(2, 3, device=device)
    s = pg.tensor(2.0)
    out = a * s
    assert out.device == pg.device(device)
    np.testing.assert_allclose(out.cpu().numpy(), 2.0)


# --------------------------------------------------------------------- cross-device errors
def test_cross_device_errors_name_both_devices(device: str, opencl_devices: list) -> None:
    other = "cpu" if device != "cpu" else opencl_devices[0]
    for name, fn in cross_device_cases(device, other):
        with pytest.raises(DeviceMismatchError) as info:
            fn()
        msg = str(info.value)
        assert device in msg and other in msg, f"{name}: {msg}"


def test_two_opencl_devices_mismatch(opencl_devices: list) -> None:
    if len(opencl_devices) < 2:
        pytest.skip("needs two OpenCL devices (POCL_DEVICES='pthread pthread')")
    d0, d1 = opencl_devices[:2]
    for name, fn in cross_device_cases(d0, d1):
        with pytest.raises(DeviceMismatchError) as info:
            fn()
        msg = str(info.value)
        assert d0 in msg and d1 in msg, f"{name}: {msg}"


def test_copy_and_to_cross_devices(device: str, opencl_devices: list) -> None:
    other = "cpu" if device != "cpu" else opencl_devices[-1]
    a = pg.arange(6, dtype=F32, device=device).reshape(2, 3)
    b = pg.zeros(2, 3, device=other)
    b.copy_(a)
    assert b.device == pg.device(other)
    np.testing.assert_array_equal(b.cpu().numpy(), np.arange(6).reshape(2, 3))
    c = a.t().to(other, F64, non_blocking=True)
    assert c.device == pg.device(other) and c.dtype is F64
    np.testing.assert_array_equal(c.cpu().numpy(), np.arange(6).reshape(2, 3).T)


# --------------------------------------------------------------------- random numbers
def test_random_factories(device: str) -> None:
    pg.manual_seed(0)
    r = pg.rand(3, 4, device=device)
    assert r.shape == (3, 4) and r.dtype is F32 and r.device == pg.device(device)
    v = r.cpu().numpy()
    assert (v >= 0).all() and (v < 1).all()
    n = pg.randn(2000, dtype=F64, device=device).cpu().numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    i = pg.randint(2, 5, (50,), device=device)
    assert i.dtype is I64 and set(i.cpu().numpy().tolist()) <= {2, 3, 4}
    assert pg.rand(0, device=device).shape == (0,)
    assert pg.randn((), device=device).shape == ()
    for like in (pg.rand_like, pg.randn_like):
        t = like(pg.zeros(2, 3, dtype=F64, device=device))
        assert t.shape == (2, 3) and t.dtype is F64 and t.device == pg.device(device)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        pg.rand(2, dtype=I64, device=device)


def test_manual_seed_reproducible_and_same_on_every_device(device: str) -> None:
    pg.manual_seed(42)
    a = pg.randn(5, device=device).cpu().numpy()
    b = pg.rand(5, device=device).cpu().numpy()
    pg.manual_seed(42)
    np.testing.assert_array_equal(pg.randn(5, device=device).cpu().numpy(), a)
    np.testing.assert_array_equal(pg.rand(5, device=device).cpu().numpy(), b)
    pg.manual_seed(42)
    np.testing.assert_allclose(pg.randn(5).numpy(), a, rtol=1e-6, atol=1e-6)


def test_generator_streams_are_independent(device: str) -> None:
    g1 = pg.Generator().manual_seed(7)
    g2 = pg.Generator().manual_seed(7)
    pg.manual_seed(1)
    x = pg.rand(4, generator=g1, device=device)
    pg.rand(10, device=device)  # advancing the default generator changes nothing for g2
    y = pg.rand(4, generator=g2, device=device)
    np.testing.assert_array_equal(x.cpu().numpy(), y.cpu().numpy())
    assert g1.initial_seed() == 7
    z = pg.rand(4, generator=g1, device=device)
    assert not np.array_equal(x.cpu().numpy(), z.cpu().numpy())
    st = g1.get_state()
    u = pg.randn(3, generator=g1, device=device).cpu().numpy()
    g1.set_state(st)
    np.testing.assert_array_equal(pg.randn(3, generator=g1, device=device).cpu().numpy(), u)


# --------------------------------------------------------------------- creation specifics
def test_from_numpy_shares_memory() -> None:
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = pg.from_numpy(arr)
    arr[0, 0] = 10
    assert t[0, 0].item() == 10
    t[1, 2] = -1
    assert arr[1, 2] == -1
    nc = pg.from_numpy(arr[:, ::2])
    assert nc.shape == (2, 2) and nc.stride() == (3, 2)
    np.testing.assert_array_equal(nc.numpy(), arr[:, ::2])
    assert np.shares_memory(t.numpy(), arr)
    with pytest.raises(TypeError, match=r"can't convert np.ndarray of type complex256"):
        pg.from_numpy(np.zeros(2, np.clongdouble))
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        pg.from_numpy([1, 2])


def test_as_tensor(device: str) -> None:
    arr = np.arange(4, dtype=np.float64)
    t = pg.as_tensor(arr)
    arr[0] = 5
    assert t[0].item() == 5  # shares on the CPU
    d = pg.as_tensor(arr, device=device)
    assert d.device == pg.device(device) and d.dtype is F64
    assert pg.as_tensor(d) is d
    f = pg.as_tensor([1, 2], dtype=F32, device=device)
    assert f.dtype is F32 and f.device == pg.device(device)


def test_tensor_dtype_inference(device: str) -> None:
    assert pg.tensor([1, 2], device=device).dtype is I64
    assert pg.tensor([1.0, 2], device=device).dtype is F32
    assert pg.tensor([True], device=device).dtype is B
    assert pg.tensor(np.zeros(2, np.int32), device=device).dtype is I32
    assert pg.tensor(np.zeros(2), device=device).dtype is F64
    assert pg.tensor(3, device=device).shape == ()


# --------------------------------------------------------------------- conversions
def test_item_tolist_numpy(device: str) -> None:
    t = pg.tensor([[1.5, 2.0], [3.0, 4.0]], device=device)
    assert t[0, 1].item() == 2.0 and isinstance(t[0, 1].item(), float)
    assert pg.tensor(3, device=device).item() == 3
    assert pg.tensor([True], device=device).item() is True
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert t.t().tolist() == [[1.5, 3.0], [2.0, 4.0]]
    assert pg.tensor(2.5, device=device).tolist() == 2.5
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"):
        t.item()
    if device == "cpu":
        np.testing.assert_array_equal(t.numpy(), [[1.5, 2.0], [3.0, 4.0]])
        assert np.shares_memory(t.numpy(), t.numpy())
    else:
        with pytest.raises(TypeError, match=rf"can't convert {device} device type tensor to "
                                            rf"numpy. Use Tensor.cpu\(\)"):
            t.numpy()
        np.testing.assert_array_equal(t.cpu().numpy(), [[1.5, 2.0], [3.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        pg.ones(2, requires_grad=True).numpy()


def test_cpu_to_clone_contiguous(device: str) -> None:
    x = pg.arange(12, dtype=F32, device=device).reshape(3, 4)
    c = x.cpu()
    assert c.device == pg.device("cpu")
    assert (x.cpu() is x) == (device == "cpu")
    assert x.to(device) is x and x.to(x.dtype) is x
    y = x.to(device, F64)
    assert y.dtype is F64 and y.device == pg.device(device)
    assert x.to(pg.zeros(1, dtype=I32)).dtype is I32
    z = x.to("cpu", non_blocking=True)
    np.testing.assert_array_equal(z.numpy(), np.arange(12).reshape(3, 4))
    xt = x.t()
    assert not xt.is_contiguous()
    ct = xt.contiguous()
    assert ct.is_contiguous() and ct._storage is not x._storage
    assert x.contiguous() is x
    cl = x.clone()
    assert cl._storage is not x._storage
    cl.add_(1)
    assert x[0, 0].item() == 0
    with pytest.raises(TypeError, match=r"is not a portagrad dtype"):
        x.to(dtype="complex32")


# --------------------------------------------------------------------- version counters
def test_inplace_bumps_version_through_every_view(device: str) -> None:
    base = pg.zeros(4, 6, device=device)
    views = [base.view(24), base.t(), base[1:3, ::2], base.unsqueeze(0), base.narrow(1, 2, 2),
             base.transpose(0, 1)[2], base.reshape(2, 12), base.expand(2, 4, 6), base.T,
             base.squeeze(), base.permute(1, 0), *base.unbind(0), *base.split(2)]
    ops = [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(), lambda t: t.fill_(3),
           lambda t: t.copy_(pg.ones_like(t)), lambda t: t.clamp_(0, 1),
           lambda t: t.masked_fill_(pg.ones_like(t, dtype=B), 2.0), lambda t: t.sub_(1),
           lambda t: t.div_(2), lambda t: t.exp_(), lambda t: t.__setitem__(0, 5.0)]
    for op in ops:
        for target in (base, views[2], views[0]):
            before = [v._version for v in views]
            b0 = base._version
            op(target)
            assert base._version == b0 + 1
            assert [v._version for v in views] == [b + 1 for b in before]
    base[0, 0] = 7.0
    assert views[0][0].item() == 7.0 and views[1][0, 0].item() == 7.0
    d = base.detach()
    assert d._version == base._version


# --------------------------------------------------------------------- repr
def test_repr_like_pytorch(device: str) -> None:
    suffix = "" if device == "cpu" else f", device='{device}'"
    assert repr(pg.tensor([1.0, 2.5], device=device)) == f"tensor([1.0000, 2.5000]{suffix})"
    assert repr(pg.tensor([1, 2], device=device)) == f"tensor([1, 2]{suffix})"
    assert repr(pg.tensor([1.0, 2.0], device=device)) == f"tensor([1., 2.]{suffix})"
    assert repr(pg.tensor(3.0, device=device)) == f"tensor(3.{suffix})"
    assert repr(pg.tensor([True, False], device=device)) == f"tensor([ True, False]{suffix})"
    assert repr(pg.tensor([1, 2], dtype=I32, device=device)) == \
        f"tensor([1, 2]{suffix}, dtype=portagrad.int32)"
    assert repr(pg.tensor([1.0, 2.0], dtype=F64, device=device)) == \
        f"tensor([1., 2.]{suffix}, dtype=portagrad.float64)"
    assert repr(pg.zeros(0, device=device)) == f"tensor([]{suffix})"
    assert repr(pg.zeros(2, 0, device=device)) == f"tensor([]{suffix}, size=(2, 0))"
    assert repr(pg.tensor([[1.5, -2.0], [3.0, 4.0]], device=device)) == (
        f"tensor([[ 1.5000, -2.0000],\n        [ 3.0000,  4.0000]]{suffix})")
    x = pg.tensor([1.0, -1.0], device=device, requires_grad=True)
    assert repr(x) == f"tensor([ 1., -1.]{suffix}, requires_grad=True)"
    assert repr(x * 2) == f"tensor([ 2., -2.]{suffix}, grad_fn=<MulBackward0>)"
    assert repr(pg.tensor([1e-5, 1.0], device=device)) == f"tensor([1.0000e-05, 1.0000e+00]{suffix})"
    assert str(pg.tensor([float("nan"), float("inf")], device=device)) == \
        f"tensor([nan, inf]{suffix})"
