"""Numbers on their way into a tensor, and in-place writes, follow PyTorch's rules on every device.

A Python number stored into an integer tensor (``tensor``, ``full``, ``fill_``, ``masked_fill``,
``index_fill``, an integer ``alpha``/``value``) goes through PyTorch's checked conversion: a float
is truncated toward zero and must lie in the type's range (NaN and infinities never do), an integer
must fit (a negative one whose magnitude fits wraps into ``uint8``); anything else raises
``RuntimeError: value cannot be converted to type ... without overflow`` instead of wrapping or
saturating silently. ``arange`` counts integer ranges as PyTorch does.

An in-place op whose operand shares some, but not all, of the written tensor's memory
(``b.mul_(b.t())``, ``x[1:].add_(x[:-1])``) raises as in PyTorch: written in place the result
would depend on the order of the writes (on OpenCL, a race). ``x.copy_(x)`` is a no-op, and the
operands of an in-place op may not broadcast to a shape larger than the tensor written.

Every expected value here is PyTorch's (torch 2.13), written out so that the tests need no torch.
"""
from __future__ import annotations

import base64
import math
import signal

import pytest

import portagrad as pg

OVERFLOW = "cannot be converted to type .* without overflow"
OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location")
INF, NAN = math.inf, math.nan


# ----------------------------------------------------------------------------- tensor(data, dtype)
@pytest.mark.parametrize("dtype, value", [
    (pg.int64, -INF), (pg.int64, 1e20), (pg.int64, NAN), (pg.int64, INF),
    (pg.int32, 2 ** 31), (pg.int32, 1e10), (pg.int32, NAN),
    (pg.int16, 40000), (pg.int16, NAN), (pg.int8, 128), (pg.int8, -128.5 - 1),
    (pg.uint8, -1.5), (pg.uint8, -1.0), (pg.uint8, -0.5), (pg.uint8, 255.5), (pg.uint8, 256),
    (pg.uint8, -256), (pg.uint8, NAN),
])
def test_tensor_refuses_a_value_the_dtype_cannot_hold(device, dtype, value):
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pg.tensor([1, value], dtype=dtype, device=device)


@pytest.mark.parametrize("dtype, value, stored", [
    (pg.int64, -1.5, -1), (pg.int64, 0.99, 0), (pg.int64, -0.99, 0), (pg.int64, 2 ** 62, 2 ** 62),
    (pg.int64, -2 ** 63, -2 ** 63), (pg.int32, 255.5, 255), (pg.int16, -300, -300),
    (pg.int8, -1.5, -1), (pg.int8, -128, -128), (pg.uint8, 0.99, 0), (pg.uint8, 1.5, 1),
    (pg.uint8, -255, 1), (pg.uint8, -1, 255), (pg.bool, NAN, True), (pg.bool, -0.5, True),
])
def test_tensor_truncates_and_wraps_as_pytorch(device, dtype, value, stored):
    assert pg.tensor([value], dtype=dtype, device=device).tolist() == [stored]


def test_tensor_of_a_too_large_python_int_raises(device):
    with pytest.raises(ValueError, match="^Overflow when unpacking long long$"):  # PyTorch's
        pg.tensor([2 ** 63], device=device)


# ----------------------------------------------------------------------------- writes of a scalar
_WRITERS = {
    "full": lambda x, v: pg.full(x.shape, v, dtype=x.dtype, device=x.device),
    "fill_": lambda x, v: x.fill_(v),
    "masked_fill": lambda x, v: x.masked_fill(pg.tensor([True, False], device=x.device), v),
    "masked_fill_": lambda x, v: x.masked_fill_(pg.tensor([True, False], device=x.device), v),
    "index_fill": lambda x, v: x.index_fill(0, pg.tensor([0], device=x.device), v),
    "index_add_alpha": lambda x, v: x.index_add(0, pg.tensor([0], device=x.device),
                                                pg.ones(1, dtype=x.dtype, device=x.device),
                                                alpha=v),
}


@pytest.mark.parametrize("writer", sorted(_WRITERS))
@pytest.mark.parametrize("dtype, value", [
    (pg.int64, INF), (pg.int64, -INF), (pg.int64, NAN), (pg.int32, 1e20), (pg.int32, 2 ** 40),
    (pg.uint8, -1.82), (pg.uint8, -0.5), (pg.uint8, 255.9), (pg.uint8, 300), (pg.int8, 200.0),
    (pg.int16, NAN),
])
def test_scalar_writes_refuse_what_the_dtype_cannot_hold(device, writer, dtype, value):
    x = pg.zeros(2, dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        _WRITERS[writer](x, value)
    assert x.tolist() == [0, 0]  # nothing was written


@pytest.mark.parametrize("writer, dtype, value, expected", [
    ("full", pg.uint8, -1, [255, 255]), ("full", pg.int64, 2.9, [2, 2]),
    ("full", pg.int32, -2.9, [-2, -2]), ("fill_", pg.uint8, 255.0, [255, 255]),
    ("fill_", pg.uint8, -0.0, [0, 0]),
    ("masked_fill", pg.int64, 1.5, [1, 0]), ("masked_fill", pg.uint8, -1, [255, 0]),
    ("index_fill", pg.int8, -7.9, [-7, 0]), ("index_add_alpha", pg.int64, 2.5, [2, 0]),
])
def test_scalar_writes_truncate_and_wrap_as_pytorch(device, writer, dtype, value, expected):
    x = pg.zeros(2, dtype=dtype, device=device)
    assert _WRITERS[writer](x, value).tolist() == expected


def test_addcmul_value_into_integers_is_checked(device):
    x = pg.zeros(2, dtype=pg.int64, device=device)
    one = pg.ones(2, dtype=pg.int64, device=device)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        x.addcmul_(one, one, value=INF)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        pg.zeros(2, dtype=pg.uint8, device=device).addcmul(one.byte(), one.byte(), value=300)
    assert x.addcmul_(one, one, value=1.5).tolist() == [1, 1]
    assert pg.addcmul(x, one.float(), one, value=1.5).tolist() == [2.5, 2.5]


def test_add_alpha_follows_the_result_dtype(device):
    i = pg.ones(2, dtype=pg.int32, device=device)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not "
                                           "be a floating point number"):
        i.add(i, alpha=1.5)
    with pytest.raises(RuntimeError, match="For integral input tensors"):
        pg.sub(i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match=OVERFLOW):
        i.add(i, alpha=2 ** 40)
    assert i.add(i.float(), alpha=1.5).tolist() == [2.5, 2.5]
    assert i.add(i, alpha=3).tolist() == [4, 4]
    assert pg.zeros(2, device=device).add(pg.ones(2, device=device), alpha=2).tolist() == [2.0, 2.0]


# ----------------------------------------------------------------------------- arange
@pytest.mark.parametrize("args, dtype, expected", [
    ((-0.99, 4), pg.int16, [0, 1, 2, 3, 4]), ((-0.99, 4), pg.int32, [0, 1, 2, 3, 4]),
    ((-0.99, 4), pg.uint8, [0, 1, 2, 3, 4]), ((-0.99, 4), pg.int64, [0, 1, 2, 3]),
    ((-2.5, 4.5, 1.5), pg.int16, [-2, -1, 0, 1, 2]), ((-3.7, 3, 2.2), pg.int64, [-3, -1, 1]),
    ((3.5, -1, -1), pg.int8, [3, 2, 1, 0, -1]), ((0.5, 3.2, 1), pg.int64, [0, 1, 2]),
    ((1, 2, 0.3), pg.int32, [1, 1, 1, 1]), ((-3, 3), pg.uint8, [253, 254, 255, 0, 1, 2]),
    ((5, -5, -2.5), pg.int64, [5, 3, 1, -1, -3]),
])
def test_arange_integer_counts_as_pytorch(device, args, dtype, expected):
    assert pg.arange(*args, dtype=dtype, device=device).tolist() == expected


@pytest.mark.parametrize("args, message", [
    ((NAN, 2), r"unsupported range: nan -> 2"), ((0, INF), r"unsupported range: 0 -> inf"),
    ((-INF, 0), r"unsupported range: -inf -> 0"), ((0, 2, NAN), "step must be nonzero"),
    ((0, 2, 0), "step must be nonzero"),
])
def test_arange_refuses_unbounded_ranges(device, args, message):
    with pytest.raises(RuntimeError, match=message):
        pg.arange(*args, device=device)


# ----------------------------------------------------------------------------- other raw errors
@pytest.mark.parametrize("name", ["fmax", "fmin", "ldexp"])
def test_binary_functions_that_take_only_tensors(device, name):
    fn = getattr(pg, name)
    t = pg.tensor([1.0], device=device)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not float"):
        fn(2.0, t)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        fn(t, 2)


def test_empty_tensor_with_a_huge_dimension(device):
    for make in (pg.zeros, pg.ones, pg.empty):
        t = make(2 ** 62, 0, device=device)
        assert t.shape == (2 ** 62, 0) and t.numel() == 0


# ----------------------------------------------------------------------------- in-place overlap
def _square(device):
    return pg.arange(4.0, device=device).reshape(2, 2)


def _line(device):
    return pg.arange(4.0, device=device) + 1


@pytest.mark.parametrize("case", [
    lambda d: (lambda b: b.mul_(b.t()))(_square(d)),
    lambda d: (lambda b: b.add_(b.t()))(_square(d)),
    lambda d: (lambda b: b.copy_(b.t()))(_square(d)),
    lambda d: (lambda x: x[1:].add_(x[:-1]))(_line(d)),
    lambda d: (lambda x: x[1:].copy_(x[:-1]))(_line(d)),
    lambda d: (lambda x: x.mul_(x[1]))(_line(d)),
    lambda d: (lambda x: x.copy_(x[1]))(_line(d)),
    lambda d: (lambda b: b.addcmul_(b.t(), b))(_square(d)),
    lambda d: (lambda b: b.clamp_(min=b.t()))(_square(d)),
    lambda d: (lambda b: b.lerp_(b.t(), 0.5))(_square(d)),
    lambda d: (lambda b: b.eq_(b.t()))(_square(d)),
    lambda d: (lambda b: b.index_add_(0, pg.tensor([0, 1], device=d), b.t()))(_square(d)),
], ids=["mul_t", "add_t", "copy_t", "add_shift", "copy_shift", "mul_elem", "copy_elem",
        "addcmul_t", "clamp_t", "lerp_t", "eq_t", "index_add_t"])
def test_inplace_with_a_partially_overlapping_operand_raises(device, case):
    with pytest.raises(RuntimeError, match=OVERLAP):
        case(device)


def test_inplace_overlap_is_checked_when_autograd_records(device):
    w = pg.ones(2, 2, device=device, requires_grad=True)
    b = w * 2
    with pytest.raises(RuntimeError, match=OVERLAP):
        b.mul_(b.t())


@pytest.mark.parametrize("case, expected", [
    (lambda d: (lambda x: x.copy_(x))(_square(d)), [[0.0, 1.0], [2.0, 3.0]]),
    (lambda d: (lambda x: x.copy_(x.view(2, 2).view(4)))(_line(d)), [1.0, 2.0, 3.0, 4.0]),
    (lambda d: (lambda b: b.mul_(b))(_square(d)), [[0.0, 1.0], [4.0, 9.0]]),
    (lambda d: (lambda b: b.addcmul_(b, b))(_square(d)), [[0.0, 2.0], [6.0, 12.0]]),
    (lambda d: (lambda b: b.sub_(b))(_square(d)), [[0.0, 0.0], [0.0, 0.0]]),
    # an operand too irregular to classify (stepped, expanded) is allowed, as in PyTorch, and
    # computed as if out of place on every device
    (lambda d: (lambda x: (x[:2].add_(x[::2]), x)[1])(_line(d)), [2.0, 5.0, 3.0, 4.0]),
    (lambda d: (lambda x: (x[1:].mul_(x[0:1].expand(3)), x)[1])(_line(d)), [1.0, 2.0, 3.0, 4.0]),
    (lambda d: (lambda x: (x[:2].mul_(x[2:3].expand(2)), x)[1])(_line(d)), [3.0, 6.0, 3.0, 4.0]),
], ids=["copy_self", "copy_same_layout", "mul_self", "addcmul_self", "sub_self", "stepped",
        "expanded_own", "expanded_other"])
def test_inplace_with_a_full_or_irregular_overlap(device, case, expected):
    assert case(device).tolist() == expected


@pytest.mark.parametrize("op", [
    lambda x, o: x.addcmul_(o, o), lambda x, o: x.addcdiv_(o, o), lambda x, o: x.lerp_(o, 0.5),
    lambda x, o: x.add_(o), lambda x, o: x.mul_(o), lambda x, o: x.clamp_(min=o),
], ids=["addcmul_", "addcdiv_", "lerp_", "add_", "mul_", "clamp_"])
def test_inplace_operands_may_not_broadcast_past_self(device, op):
    x = pg.zeros(1, device=device)
    with pytest.raises(RuntimeError, match=r"output with shape \[1\] doesn't match the broadcast "
                                           r"shape \[3\]"):
        op(x, pg.ones(3, device=device))
    assert x.tolist() == [0.0]


# ----------------------------------------------------------------------------- files and workers
# torch.save({"w": torch.tensor([1.5, -2.0])}, f, _use_new_zipfile_serialization=False)
_LEGACY_TORCH_FILE = base64.b64decode(
    "gAKKCmz8nEb5IGqoUBkugAJN6QMugAJ9cQAoWBAAAABwcm90b2NvbF92ZXJzaW9ucQFN6QNYDQAAAGxpdHRsZV9lbmRp"
    "YW5xAohYCgAAAHR5cGVfc2l6ZXNxA31xBChYBQAAAHNob3J0cQVLAlgDAAAAaW50cQZLBFgEAAAAbG9uZ3EHSwR1dS6A"
    "An1xAFgBAAAAd3EBY3RvcmNoLl91dGlscwpfcmVidWlsZF90ZW5zb3JfdjIKcQIoKFgHAAAAc3RvcmFnZXEDY3RvcmNo"
    "CkZsb2F0U3RvcmFnZQpxBFgOAAAAOTQxNjA0NjM5OTc5MzZxBVgDAAAAY3B1cQZLAk50cQdRSwBLAoVxCEsBhXEJiWNj"
    "b2xsZWN0aW9ucwpPcmRlcmVkRGljdApxCilScQt0cQxScQ1zLoACXXEAWA4AAAA5NDE2MDQ2Mzk5NzkzNnEBYS4CAAAA"
    "AAAAAAAAwD8AAADA")


@pytest.mark.parametrize("weights_only", [True, False])
def test_load_refuses_a_legacy_torch_file(tmp_path, weights_only):
    path = tmp_path / "legacy.pt"
    path.write_bytes(_LEGACY_TORCH_FILE)
    with pytest.raises(pg.serialization.LoadError, match="legacy format"):
        pg.load(path, weights_only=weights_only)
    with pytest.raises(pg.serialization.LoadError, match="legacy format"):
        pg.load(path.open("rb"), weights_only=weights_only)


def test_plain_pickle_still_loads(tmp_path):
    import pickle

    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps({"x": 1, "y": [2.5]}))
    assert pg.load(path) == {"x": 1, "y": [2.5]}


class _Numbers(pg.utils.data.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return pg.tensor([float(i)])


def test_persistent_loader_starts_new_workers_after_one_died():
    import os
    import time

    from portagrad.utils.data import DataLoader

    dl = DataLoader(_Numbers(), batch_size=2, num_workers=2, persistent_workers=True,
                    multiprocessing_context="fork")
    expected = [[[0.0], [1.0]], [[2.0], [3.0]], [[4.0], [5.0]]]
    assert [b.tolist() for b in dl] == expected
    victims = list(dl._iterator._workers)
    for w in victims:
        os.kill(w.pid, signal.SIGKILL)
    deadline = time.monotonic() + 300  # a hang detector, not a speed test
    while any(w.is_alive() for w in victims) and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(dl)
    assert [b.tolist() for b in dl] == expected  # the next epoch, on fresh workers
    assert [b.tolist() for b in dl] == expected
