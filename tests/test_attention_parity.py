"""Multi-head attention against PyTorch 2.13: fully masked query rows and input checks (values
written out from PyTorch)."""
from __future__ import annotations

import math

import pytest

import portagrad as pg

_OUT = [[[-0.01001, -0.17251, -0.20758, -0.41098], [-0.02148, -0.16135, -0.21714, -0.40413],
         [-0.02473, -0.15999, -0.21645, -0.40679]],
        [[0.04234, -0.15895, -0.28548, -0.27774]] * 3]
_GRAD = [[[0.01417, -0.01637, -0.03921, -0.04361], [0.02146, -0.00667, -0.03166, -0.04177],
          [0.00165, 0.00161, 0.00081, -0.00037]],
         [[0.0, 0.0, 0.0, 0.0]] * 3]


def _mha(device: str) -> pg.nn.MultiheadAttention:
    m = pg.nn.MultiheadAttention(4, 2, batch_first=True).to(device)
    with pg.no_grad():
        for i, (_, v) in enumerate(m.state_dict().items()):
            n = v.numel()
            v.copy_(pg.tensor([math.sin(j * 0.7 + i) * 0.3 for j in range(n)],
                              device=device).reshape(v.shape))
    return m


def test_fully_masked_rows_give_the_bias_not_nan(device: str) -> None:
    # need_weights=False (what the transformer layers ask for): PyTorch's fused attention
    # gives 0 for a query row whose keys are all masked, so the output is out_proj's bias
    m = _mha(device)
    x = pg.tensor([math.cos(j * 0.3) for j in range(24)], device=device).reshape(2, 3, 4)
    x.requires_grad_(True)
    kpm = pg.tensor([[False, False, True], [True, True, True]], device=device)
    out, w = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    assert w is None
    got = out.detach().cpu().tolist()
    assert all(abs(a - b) < 2e-5 for ra, rb in zip(got, _OUT) for va, vb in zip(ra, rb)
               for a, b in zip(va, vb)), got
    out.sum().backward()
    g = x.grad.cpu().tolist()
    assert all(abs(a - b) < 2e-5 for ra, rb in zip(g, _GRAD) for va, vb in zip(ra, rb)
               for a, b in zip(va, vb)), g
    assert all(bool(pg.isfinite(p.grad).all()) for p in m.parameters())


@pytest.mark.parametrize("call, message", [
    (lambda m, x: m(x, x, x, key_padding_mask=pg.zeros(3, 3, dtype=pg.bool)),
     "Expected key_padded_mask.shape[0] to be 2, but got 3"),
    (lambda m, x: m(x, x, x, key_padding_mask=pg.zeros(2, 2, dtype=pg.bool)),
     "Expected key_padded_mask.shape[1] to be 3, but got 2"),
    (lambda m, x: m(x, x, x, attn_mask=pg.zeros(3, 3, dtype=pg.int64)),
     "only bool and floating types of attn_mask are supported"),
    (lambda m, x: m(x, x, x, key_padding_mask=pg.zeros(2, 3, dtype=pg.int64)),
     "only bool and floating types of key_padding_mask are supported"),
    (lambda m, x: m(x[None], x[None], x[None]),
     "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor"),
    (lambda m, x: m(x, x[:, 0], x[:, 0]),
     "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D"),
    (lambda m, x: m(x[:, 0], x[:, 0], x[:, 0], key_padding_mask=pg.zeros(1, 3, dtype=pg.bool)),
     "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D"),
    (lambda m, x: m(x, x, pg.ones(4, 2, 4)), "does not match value shape"),
])
def test_input_checks(call, message: str) -> None:
    m = pg.nn.MultiheadAttention(4, 2)  # sequence first: (L, N, E)
    with pytest.raises(AssertionError) as info:
        call(m, pg.ones(3, 2, 4))
    assert message in str(info.value)
