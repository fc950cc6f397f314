"""pg.testing.assert_close and make_tensor: PyTorch's semantics and messages (the expected
messages were produced by torch.testing.assert_close on the same inputs)."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
from portagrad.testing import assert_close, make_tensor


def _msg(fn) -> str:
    with pytest.raises(AssertionError) as info:
        fn()
    return str(info.value)


def test_close_values_pass(device):
    a = pg.tensor([1.0, 2.0, 3.0], device=device)
    assert_close(a, a + 1e-6)
    assert_close(a.double(), a.double() + 1e-8)
    assert_close(pg.tensor([1, 2], device=device), pg.tensor([1, 2], device=device))
    assert_close(a, pg.tensor([1.0, 2.0, 3.0], dtype=pg.float64, device=device), check_dtype=False)
    assert_close(pg.tensor([1.0, 2.0], device=device), pg.tensor([1.0, 2.1], device=device),
                 rtol=0.1, atol=0)
    nan = pg.tensor([1.0, float("nan"), float("inf")], device=device)
    assert_close(nan, nan.clone(), equal_nan=True)
    assert_close(a.requires_grad_(), a.detach())  # requires_grad is not compared


def test_mismatch_message_format(device):
    msg = _msg(lambda: assert_close(pg.tensor([1., 2., 3.], device=device),
                                    pg.tensor([1., 2.5, 3.1], device=device)))
    assert msg == ("Tensor-likes are not close!\n\n"
                   "Mismatched elements: 2 / 3 (66.7%)\n"
                   "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                   "Greatest relative difference: 0.20000000298023224 at index (1,) "
                   "(up to 1.3e-06 allowed)")
    msg = _msg(lambda: assert_close(pg.tensor([1, 2, 3], device=device),
                                    pg.tensor([1, 2, 4], device=device)))
    assert msg == ("Tensor-likes are not equal!\n\n"
                   "Mismatched elements: 1 / 3 (33.3%)\n"
                   "Greatest absolute difference: 1 at index (2,)\n"
                   "Greatest relative difference: 0.25 at index (2,)")
    msg = _msg(lambda: assert_close(pg.zeros(2, 2, device=device), pg.eye(2, device=device)))
    assert "Mismatched elements: 2 / 4 (50.0%)" in msg
    assert "Greatest absolute difference: 1.0 at index (0, 0) (up to 1e-05 allowed)" in msg
    msg = _msg(lambda: assert_close(pg.tensor([1., 0.], device=device),
                                    pg.tensor([1., 0.1], device=device)))
    assert "Greatest relative difference: 1.0 at index (1,)" in msg
    msg = _msg(lambda: assert_close(pg.tensor(1., device=device), pg.tensor(1.5, device=device)))
    assert msg == ("Scalars are not close!\n\nExpected 1.5 but got 1.0.\n"
                   "Absolute difference: 0.5 (up to 1e-05 allowed)\n"
                   "Relative difference: 0.3333333333333333 (up to 1.3e-06 allowed)")


def test_nan_and_explicit_tolerances(device):
    nan = pg.tensor([1., float("nan")], device=device)
    msg = _msg(lambda: assert_close(nan, nan.clone()))
    assert "Greatest absolute difference: nan at index (1,)" in msg
    msg = _msg(lambda: assert_close(pg.tensor([1., 2.], device=device),
                                    pg.tensor([1., 2.1], device=device), rtol=0.0, atol=0.0))
    assert msg.startswith("Tensor-likes are not equal!")
    assert "Greatest absolute difference: 0.09999990463256836 at index (1,)\n" in msg
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        assert_close(pg.ones(1), pg.ones(1), rtol=1e-3)


def test_attribute_checks(device):
    a = pg.tensor([1., 2.], device=device)
    assert _msg(lambda: assert_close(a, pg.tensor([1., 2.], dtype=pg.float64, device=device))) \
        == "The values for attribute 'dtype' do not match: portagrad.float32 != portagrad.float64."
    assert _msg(lambda: assert_close(a, pg.tensor([[1., 2.]], device=device))) == (
        "The values for attribute 'shape' do not match: portagrad.Size([2]) != "
        "portagrad.Size([1, 2]).")
    if device != "cpu":
        msg = _msg(lambda: assert_close(a, a.to("cpu")))
        assert msg == f"The values for attribute 'device' do not match: {device} != cpu."
        assert_close(a, a.to("cpu"), check_device=False)
    t = pg.ones(2, 3, device=device)
    assert_close(t.t(), t.t().contiguous())
    assert "stride()" in _msg(lambda: assert_close(t.t(), t.t().contiguous(), check_stride=True))


def test_msg_containers_and_scalars():
    a, b = pg.tensor([1., 2.]), pg.tensor([1., 2.5])
    assert _msg(lambda: assert_close(a, b, msg="custom")) == "custom"
    assert _msg(lambda: assert_close(a, b, msg=lambda m: "X" + m[:10])) == "XTensor-lik"
    assert _msg(lambda: assert_close([a], [b])).endswith("\n\nThe failure occurred for item [0]")
    assert _msg(lambda: assert_close({"a": a}, {"a": b})).endswith("for item ['a']")
    assert _msg(lambda: assert_close((1, 2), (1, 3))) == (
        "Scalars are not equal!\n\nExpected 3 but got 2.\nAbsolute difference: 1\n"
        "Relative difference: 0.3333333333333333\n\nThe failure occurred for item [1]")
    assert _msg(lambda: assert_close([1.0], [1.0, 2.0])) == (
        "The length of the sequences mismatch: 1 != 2")
    assert "Absolute difference: 0.10000000000000009 (up to 1e-07 allowed)" in _msg(
        lambda: assert_close(1.0, 1.1))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        assert_close(a, [1.0, 2.0])
    assert_close(None, None)
    assert_close(np.array([1.0, 2.0]), pg.tensor([1.0, 2.0], dtype=pg.float64))
    assert_close({"w": [a, 3]}, {"w": [a.clone(), 3]})


def test_make_tensor(device):
    pg.manual_seed(0)
    t = make_tensor(3, 4, dtype=pg.float32, device=device, low=-1, high=2)
    assert t.shape == (3, 4) and t.dtype == pg.float32 and str(t.device) == str(pg.device(device))
    v = t.numpy(force=True)
    assert v.min() >= -1 and v.max() < 2
    i = make_tensor((50,), dtype=pg.int64, device=device)
    iv = i.numpy(force=True)
    assert iv.min() >= -9 and iv.max() < 10
    nz = make_tensor(100, dtype=pg.int32, device=device, low=-1, high=2, exclude_zero=True)
    assert (nz.numpy(force=True) != 0).all()
    nc = make_tensor(2, 3, dtype=pg.float64, device=device, noncontiguous=True,
                     requires_grad=True)
    assert not nc.is_contiguous() and nc.requires_grad and nc.shape == (2, 3)
    b = make_tensor(10, dtype=pg.bool, device=device)
    assert b.dtype == pg.bool
    with pytest.raises(ValueError, match="low must be less than or equal to high"):
        make_tensor(2, dtype=pg.float32, device=device, low=3, high=1)
