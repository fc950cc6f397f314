"""The names libraries reach for at import and in their hot paths (``tests/test_libraries.py``
runs the libraries themselves): flex attention, saved-tensor hooks, pytree key paths,
antialiased resizing, tensor subclasses, storages and ``data_ptr``, the declared-only unsigned
dtypes. Values come from PyTorch 2.13 (literals) or from an independent composition here."""
from __future__ import annotations

import numpy as np
import pytest

import portagrad as pg
import portagrad.nn.functional as F
from portagrad.autograd.graph import save_on_cpu, saved_tensors_hooks
from portagrad.nn.attention.flex_attention import create_block_mask, flex_attention
from portagrad.utils import _pytree


def _qkv(device: str) -> tuple[pg.Tensor, pg.Tensor, pg.Tensor]:
    g = np.random.default_rng(3)
    return tuple(pg.tensor(g.standard_normal((1, 2, 8, 4)), dtype=pg.float32, device=device)
                 for _ in range(3))  # type: ignore[return-value]


def test_flex_attention_equals_sdpa(device: str) -> None:
    """No modification: attention itself; a causal block mask: ``is_causal``; a score_mod adding
    a bias: an additive ``attn_mask``; gradients reach q, k and v as through sdpa."""
    q, k, v = _qkv(device)
    close = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flex_attention(q, k, v).cpu().numpy(),
                               F.scaled_dot_product_attention(q, k, v).cpu().numpy(), **close)
    mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, 8, 8, device=device)
    np.testing.assert_allclose(
        flex_attention(q, k, v, block_mask=mask).cpu().numpy(),
        F.scaled_dot_product_attention(q, k, v, is_causal=True).cpu().numpy(), **close)
    bias = pg.tensor(np.linspace(-1, 1, 64).reshape(8, 8), dtype=pg.float32, device=device)
    qs = [t.clone().requires_grad_() for t in (q, k, v)]
    qr = [t.clone().requires_grad_() for t in (q, k, v)]
    out = flex_attention(*qs, score_mod=lambda s, b, h, qi, ki: s + bias[qi, ki])
    ref = F.scaled_dot_product_attention(*qr, attn_mask=bias)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().cpu().numpy(), **close)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for a, b in zip(qs, qr):
        np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.cpu().numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_saved_tensors_hooks_pack_and_unpack(device: str) -> None:
    """Every tensor a node saves goes through pack at forward and unpack at backward (as in
    PyTorch: ``x * x`` saves both operands), and the gradient is unchanged; save_on_cpu keeps
    the saved values on the host."""
    calls: list[str] = []

    def pack(t: pg.Tensor) -> tuple[str, np.ndarray]:
        calls.append("pack")
        return str(t.device), t.detach().cpu().numpy().copy()

    def unpack(saved: tuple[str, np.ndarray]) -> pg.Tensor:
        calls.append("unpack")
        return pg.tensor(saved[1], device=saved[0])

    x = pg.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    assert calls == ["pack", "pack"]
    y.backward()
    assert calls == ["pack", "pack", "unpack", "unpack"]
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2.0, -4.0, 6.0])
    x.grad = None
    with save_on_cpu():
        z = (x.exp() * 2).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp([1.0, -2.0, 3.0]), rtol=1e-6)


def test_pytree_key_paths_as_torch() -> None:
    tree = {"a": [1, (2, 3)], "b": {"c": 4}}
    leaves, spec = _pytree.tree_flatten_with_path(tree)
    # PyTorch 2.13: keystr of each path
    assert [(_pytree.keystr(k), v) for k, v in leaves] == [
        ("['a'][0]", 1), ("['a'][1][0]", 2), ("['a'][1][1]", 3), ("['b']['c']", 4)]
    assert _pytree.tree_unflatten([v for _, v in leaves], spec) == tree
    mapped = _pytree.tree_map_with_path(lambda p, v: len(p) * 10 + v, tree)
    assert mapped == {"a": [21, (32, 33)], "b": {"c": 24}}


# PyTorch 2.13: F.interpolate(torch.arange(36.).reshape(1, 1, 6, 6), size=(3, 2), mode=...,
# antialias=True).flatten(), and the uint8 case below
_AA = {"bilinear": [5.535714149475098, 8.035715103149414, 16.25, 18.75, 26.96428680419922,
                    29.46428680419922],
       "bicubic": [4.395177364349365, 7.132020473480225, 16.131580352783203, 18.86842155456543,
                   27.86798095703125, 30.604825973510742]}
_AA_U8 = [85, 150, 96, 157, 110, 107, 110, 115, 176]


def test_interpolate_antialias_as_torch(device: str) -> None:
    x = pg.arange(36.0, device=device).reshape(1, 1, 6, 6)
    for mode, want in _AA.items():
        got = F.interpolate(x, size=(3, 2), mode=mode, antialias=True)
        np.testing.assert_allclose(got.flatten().cpu().numpy(), want, rtol=1e-6, atol=1e-5)
    x8 = (pg.arange(64, device=device) * 37 % 256).to(pg.uint8).reshape(1, 1, 8, 8)
    got8 = F.interpolate(x8, size=(3, 3), mode="bilinear", antialias=True)
    assert got8.dtype == pg.uint8
    assert got8.flatten().tolist() == _AA_U8
    with pytest.raises(ValueError, match="restricted to bilinear, bicubic, and lanczos"):
        F.interpolate(x, size=(3, 2), mode="nearest", antialias=True)


class _Tagged(pg.Tensor):
    pass


def test_as_subclass_shares_memory_and_graph(device: str) -> None:
    t = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    s = t.as_subclass(_Tagged)
    assert type(s) is _Tagged and s.data_ptr() == t.data_ptr()
    (s * 3).sum().backward()
    np.testing.assert_allclose(t.grad.cpu().numpy(), [3.0, 3.0])
    made = pg.Tensor._make_subclass(_Tagged, t.detach(), True)
    assert type(made) is _Tagged and made.requires_grad and made.grad_fn is None
    with pytest.raises(TypeError, match="subclass of Tensor"):
        t.as_subclass(int)


def test_storage_and_data_ptr_tell_aliasing(device: str) -> None:
    """What libraries use to find tied weights (safetensors, transformers): views share the
    storage and data_ptr moves by the offset in bytes; distinct tensors never compare equal."""
    a = pg.arange(6.0, device=device).reshape(2, 3)
    b = a[1]
    c = pg.zeros(6, device=device)
    assert a.untyped_storage() == b.untyped_storage() != c.untyped_storage()
    assert a.untyped_storage().nbytes() == 6 * 4
    assert b.data_ptr() - a.data_ptr() == 3 * 4
    ranges = [(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()) for t in (a, c)]
    (s0, n0), (s1, n1) = sorted(ranges)
    assert s0 + n0 <= s1  # distinct memories never overlap


def test_unsigned_wide_dtypes_are_declared_only() -> None:
    assert pg.iinfo(pg.uint16).max == 65535 and pg.iinfo(pg.uint32).max == 2**32 - 1
    assert pg.iinfo(pg.uint64).max == 2**64 - 1
    with pytest.raises(pg.errors.DTypeError, match="no uint16 tensors"):
        pg.zeros(2, dtype=pg.uint16)
