"""nn layers' argument checks as PyTorch 2.13 has them (messages written out): unflatten's
sizes, ConvTranspose's output_size, Hardtanh's bounds, CELU's alpha, PReLU's channels and
adaptive pooling to an empty output."""
from __future__ import annotations

import pytest

import portagrad as pg

nn = pg.nn
F = pg.nn.functional


def test_unflatten_sizes(device: str) -> None:
    x = pg.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"^unflatten: Provided sizes \[2, 2\] don't multiply "
                       r"up to the size of dim 1 \(3\) in the input tensor$"):
        nn.Unflatten(1, (2, 2))(x)
    with pytest.raises(RuntimeError, match=r"Provided sizes \[2, -1\] don't multiply up"):
        x.unflatten(1, (2, -1))
    with pytest.raises(RuntimeError, match="^unflatten: sizes must be non-empty$"):
        x.unflatten(1, ())
    assert x.unflatten(1, (3, -1)).shape == (2, 3, 1)
    assert x.unflatten(-1, (1, 3)).shape == (2, 1, 3)


def test_conv_transpose_output_size_range(device: str) -> None:
    m = nn.ConvTranspose2d(3, 2, 3, stride=2).to(device)
    x = pg.ones(2, 3, 7, 7, device=device)
    assert m(x, output_size=[16, 16]).shape == (2, 2, 16, 16)
    with pytest.raises(ValueError, match=r"^requested an output size of \[20, 20\], but valid "
                       r"sizes range from \[15, 15\] to \[16, 16\] \(for an input of "
                       r"(portagrad|torch)\.Size\(\[7, 7\]\)\)$"):
        m(x, output_size=[20, 20])


def test_hardtanh_bounds() -> None:
    with pytest.raises(AssertionError, match=r"max_val \(-1\) must be greater than min_val \(1\)"):
        nn.Hardtanh(1, -1)


def test_set_submodule() -> None:
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1)))
    m.set_submodule("1.0", nn.Tanh())
    assert isinstance(m[1][0], nn.Tanh)
    m.set_submodule("1.5", nn.ReLU())  # a new name under an existing parent
    assert isinstance(m.get_submodule("1.5"), nn.ReLU)
    with pytest.raises(ValueError, match="^Cannot set the submodule without a target name!$"):
        m.set_submodule("", nn.Tanh())
    with pytest.raises(ValueError, match=r"^`module` is not an nn.Module, found <class 'int'>$"):
        m.set_submodule("1.0", 3)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="^Sequential has no attribute `7`$"):
        m.set_submodule("1.7", nn.Tanh(), strict=True)
    with pytest.raises(AttributeError, match="^`weight` is not an nn.Module$"):
        m.set_submodule("0.weight", nn.Tanh())


def test_sequential_repeats() -> None:
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    r = s * 2
    assert len(r) == 4 and r[0] is r[2] and len(3 * s) == 6
    s *= 2
    assert len(s) == 4 and s[1] is s[3]
    with pytest.raises(ValueError, match="^Non-positive multiplication factor 0 for"):
        s * 0
    with pytest.raises(TypeError, match="unsupported operand type"):
        s * 1.5  # type: ignore[operator]


def test_activation_argument_checks(device: str) -> None:
    x = pg.ones(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="^ZeroDivisionError: alpha cannot be 0 for CELU$"):
        F.celu(x, alpha=0.0)
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 3.40282e\+38\] for "
                       r"input dtype Float, but found -1$"):
        F.softshrink(x, -1)
    with pytest.raises(RuntimeError, match="^Mismatch of parameter numbers and input channel "
                       "size. Found parameter numbers = 4 and channel size = 3.$"):
        F.prelu(x, pg.ones(4, device=device))
    with pytest.raises(RuntimeError, match="^Not allow zero-dim input tensor.$"):
        F.prelu(pg.tensor(1.0, device=device), pg.ones(2, device=device))
    assert F.prelu(x, pg.ones(3, device=device)).shape == (2, 3, 4)


def test_adaptive_pooling_to_empty_and_negative_sizes(device: str) -> None:
    x = pg.ones(2, 3, 7, 7, device=device)
    assert F.adaptive_max_pool2d(x, 0).shape == (2, 3, 0, 0)
    assert F.adaptive_avg_pool1d(pg.ones(2, 3, 7, device=device), 0).shape == (2, 3, 0)
    out, idx = F.adaptive_max_pool2d(x, (0, 2), return_indices=True)
    assert out.shape == idx.shape == (2, 3, 0, 2) and idx.dtype is pg.int64
    with pytest.raises(RuntimeError, match=r"^adaptive_avg_pool2d: elements of output_size must "
                       r"be greater than or equal to 0 but received \{-1, -1\}$"):
        F.adaptive_avg_pool2d(x, -1)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        F.adaptive_max_pool2d(x, -1)


def test_attention_checks(device: str) -> None:
    q = pg.ones(3, 2, 4, device=device)
    m = nn.MultiheadAttention(4, 2).to(device)
    with pytest.raises(RuntimeError, match=r"^The shape of the 2D attn_mask is "
                       r"(portagrad|torch)\.Size\(\[2, 3\]\), but should be \(3, 3\)\.$"):
        m(q, q, q, attn_mask=pg.zeros(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is .*, but should be "
                       r"\(4, 3, 3\)\.$"):
        m(q, q, q, attn_mask=pg.zeros(2, 3, 3, device=device))
    assert m(q, q, q, attn_mask=pg.zeros(4, 3, 3, device=device))[0].shape == (3, 2, 4)
    try:
        q64 = q.double()
    except pg.errors.DTypeError:
        return
    with pytest.raises(RuntimeError, match=r"^Expected query, key, and value to have the same "
                       r"dtype, but got query.dtype: float key.dtype: double and value.dtype: "
                       r"float instead.$"):
        F.scaled_dot_product_attention(q, q64, q)
