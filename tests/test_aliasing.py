"""Which results share memory with their input, as in PyTorch.

PyTorch documents, op by op, whether a result is a view of its input (``view``, ``expand``,
``reshape`` when the strides allow it, ``x.float()`` of a float tensor: the input itself) or new
memory (``repeat``, ``roll``, ``cumprod``, ``ravel`` of a non-contiguous tensor...). Getting it wrong
the one way is a silent wrong result: writing into a "copy" changes the input. The other way
costs a copy and breaks code that writes through a view.

* every op-table row on every device: a result shares storage with an input exactly when the
  row's ``aliases`` says PyTorch's does, and writing into a result that is not a view leaves the
  inputs as they were;
* the table's ``aliases`` against torch itself, where torch is installed
  (``tests/op_table_torch.py``);
* literal cases, the user-visible bug each time: write into the result, look at the input.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import portagrad as pg

from op_table import OP_TABLE, B, OpInfo, _flat, expected_alias, to_device
from op_table_torch import disagreements, torch, torch_shares

ROWS = [r for r in OP_TABLE if not r.factory]


def _tensors(obj: Any) -> list[pg.Tensor]:
    if isinstance(obj, pg.Tensor):
        return [obj]
    return [t for t in _flat(tuple(obj) if isinstance(obj, (tuple, list)) else [obj])
            if isinstance(t, pg.Tensor)]


def _shares(a: pg.Tensor, b: pg.Tensor) -> bool:
    return a._storage is b._storage


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_result_shares_storage_as_in_pytorch(row: OpInfo, device: str) -> None:
    for dtype in row.dtypes:
        for sample in row.samples(dtype, np.random.default_rng(1234)):
            where = f"{row.name} {dtype} {sample!r}"
            args = to_device(sample.args, device, sample.nc)
            inputs = _tensors(args)
            before = [t.detach().cpu().numpy().copy() for t in inputs]
            with np.errstate(all="ignore"):
                out = row.op(*args, **sample.kwargs)
            want = expected_alias(row, dtype, sample)
            outs = _tensors(out)
            for k, o in enumerate(outs):
                got = any(_shares(o, t) for t in inputs)
                assert got == want, (f"{where}: result {k} {'shares' if got else 'does not share'}"
                                     f" storage with an input; PyTorch's "
                                     f"{'does' if want else 'does not'}")
            if want:
                continue
            # the user-visible half: a write into the result must not reach an input
            with pg.no_grad():
                for o in outs:
                    if o.numel():
                        o.detach().fill_(True if o.dtype is B else 7)
            for t, b in zip(inputs, before):
                np.testing.assert_array_equal(t.detach().cpu().numpy(), b,
                                              err_msg=f"{where}: writing the result changed an "
                                                      f"input")


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
def test_table_aliases_field_is_torchs() -> None:
    wrong, skipped, compared = disagreements()
    assert not wrong, "\n".join(wrong)
    assert not skipped, "\n".join(skipped)
    assert compared > 5000


# ----------------------------------------------------------------------------- literal cases
# name -> (input, op on (library, x), the result's values, whether it is a view of x)
Case = tuple[Any, Callable[[Any, Any], Any], Any, bool]

CASES: dict[str, Case] = {
    "repeat_of_one_element": ([1.5], lambda L, x: x.repeat(3), [1.5, 1.5, 1.5], False),
    "repeat_by_ones": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x.repeat(1, 1),
                       [[1.0, 2.0], [3.0, 4.0]], False),
    "repeat_new_leading_dim": ([1.0, 2.0], lambda L, x: x.repeat(1, 1), [[1.0, 2.0]], False),
    "repeat_column": ([[1.0], [2.0]], lambda L, x: x.repeat(1, 3),
                      [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], False),
    "tile_int": ([1.0, 2.0], lambda L, x: x.tile(3), [1.0, 2.0, 1.0, 2.0, 1.0, 2.0], False),
    "tile_varargs": ([1.0, 2.0], lambda L, x: x.tile(2, 1), [[1.0, 2.0], [1.0, 2.0]], False),
    "tile_by_one": ([1.0, 2.0], lambda L, x: x.tile((1,)), [1.0, 2.0], False),
    "roll_by_zero": ([1.0, 2.0, 3.0], lambda L, x: x.roll(0), [1.0, 2.0, 3.0], False),
    "roll_full_period": ([1.0, 2.0, 3.0], lambda L, x: x.roll(3, 0), [1.0, 2.0, 3.0], False),
    "roll_size_one": ([[1.0, 2.0]], lambda L, x: x.roll(1, 0), [[1.0, 2.0]], False),
    "roll_one_element": ([4.0], lambda L, x: L.roll(x, 1), [4.0], False),
    "diff_order_zero": ([1.0, 4.0, 9.0], lambda L, x: x.diff(n=0), [1.0, 4.0, 9.0], False),
    "cumprod_size_one_dim": ([[1.0, 2.0, 3.0]], lambda L, x: x.cumprod(0), [[1.0, 2.0, 3.0]],
                             False),
    "cumprod_one_element": ([2.0], lambda L, x: x.cumprod(0), [2.0], False),
    "logcumsumexp_size_one_dim": ([[0.0], [1.0]], lambda L, x: x.logcumsumexp(1),
                                  [[0.0], [1.0]], False),
    "cumsum_size_one_dim": ([[1.0, 2.0]], lambda L, x: x.cumsum(0), [[1.0, 2.0]], False),
    "cummax_size_one_dim": ([[1.0, 2.0]], lambda L, x: x.cummax(0).values, [[1.0, 2.0]], False),
    "cummin_size_one_dim": ([[1.0, 2.0]], lambda L, x: x.cummin(0).values, [[1.0, 2.0]], False),
    "ravel_of_a_column": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x[:, 0].ravel(), [1.0, 3.0],
                          False),
    "ravel_of_a_sliced_column": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: L.ravel(x[:, :1]),
                                 [1.0, 3.0], False),
    "ravel_of_contiguous": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x.ravel(),
                            [1.0, 2.0, 3.0, 4.0], True),
    "flatten_of_a_column": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x[:, 0].flatten(), [1.0, 3.0],
                            True),
    "flatten_of_transposed": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x.t().flatten(),
                              [1.0, 3.0, 2.0, 4.0], False),
    "reshape_of_transposed": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x.t().reshape(4),
                              [1.0, 3.0, 2.0, 4.0], False),
    "reshape_of_contiguous": ([[1.0, 2.0], [3.0, 4.0]], lambda L, x: x.reshape(4),
                              [1.0, 2.0, 3.0, 4.0], True),
    "pixel_shuffle_by_one": ([[[[1.0, 2.0]]]], lambda L, x: L.nn.functional.pixel_shuffle(x, 1),
                             [[[[1.0, 2.0]]]], False),
    "pixel_shuffle_1x1": ([[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]],
                          lambda L, x: L.nn.functional.pixel_shuffle(x, 2),
                          [[[[1.0, 2.0], [3.0, 4.0]]]], False),
    "pixel_unshuffle_by_one": ([[[[1.0, 2.0]]]],
                               lambda L, x: L.nn.functional.pixel_unshuffle(x, 1),
                               [[[[1.0, 2.0]]]], False),
    "channel_shuffle_one_group": ([[[1.0], [2.0]]],
                                  lambda L, x: L.nn.functional.channel_shuffle(x, 1),
                                  [[[1.0], [2.0]]], False),
    "channel_shuffle_a_group_per_channel": ([[[1.0], [2.0]]],
                                            lambda L, x: L.nn.functional.channel_shuffle(x, 2),
                                            [[[1.0], [2.0]]], False),
    # PyTorch returns views (or the input itself) here: kept
    "float_of_float": ([1.0, 2.0], lambda L, x: x.float(), [1.0, 2.0], True),
    "to_same_dtype": ([1.0, 2.0], lambda L, x: x.to(L.float32), [1.0, 2.0], True),
    "contiguous_of_contiguous": ([1.0, 2.0], lambda L, x: x.contiguous(), [1.0, 2.0], True),
    "expand": ([1.0], lambda L, x: x.expand(2), [1.0, 1.0], True),
    "clone": ([1.0, 2.0], lambda L, x: x.clone(), [1.0, 2.0], False),
    "to_copy": ([1.0, 2.0], lambda L, x: x.to(L.float32, copy=True), [1.0, 2.0], False),
    "cat_of_one": ([1.0, 2.0], lambda L, x: L.cat([x]), [1.0, 2.0], False),
    "flip_of_one": ([1.0], lambda L, x: x.flip(0), [1.0], False),
    "sort_of_one": ([1.0], lambda L, x: x.sort().values, [1.0], False),
    "trunc_of_int": ([1, -2], lambda L, x: x.trunc(), [1, -2], False),
    "sum_over_no_dims_of_0d": (3.0, lambda L, x: x.sum(), 3.0, False),
}


def _check_case(L: Any, make: Callable[[Any], Any], case: Case, shares: Callable) -> None:
    data, op, values, is_view = case
    x = make(data)
    y = op(L, x)
    assert y.tolist() == values
    assert shares(y, x) == is_view, "a view of the input" if not is_view else "not a view"
    with L.no_grad():
        y.fill_(7)
    if is_view:
        assert x.flatten()[0].item() == 7, "a write through the view is not seen in the input"
    else:
        assert x.tolist() == data, "writing into the result changed the input"


@pytest.mark.parametrize("name", sorted(CASES))
def test_write_into_result(name: str, device: str) -> None:
    _check_case(pg, lambda d: pg.tensor(d, device=device), CASES[name], _shares)


@pytest.mark.skipif(torch is None, reason="torch is not installed (an optional reference)")
@pytest.mark.parametrize("name", sorted(CASES))
def test_write_into_result_torch(name: str) -> None:
    _check_case(torch, torch.tensor, CASES[name], torch_shares)
