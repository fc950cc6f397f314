"""Tensor methods and ``pg.*`` functions beyond the op table's shapes: numpy-style aliases and
in-place variants, the layout and device-kind flags, searching and counting, grids and stacks,
``resize_``, ``apply_``/``map_``, ``softmax`` with ``dtype=``, and PyTorch-parity spot checks
(those skip without torch)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import portagrad as pg


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------------- names and aliases
def test_numpy_style_names_are_the_same_functions() -> None:
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
                        ("arctan2", "atan2")]:
        assert getattr(pg, alias) is getattr(pg, name), alias
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"),
                        ("arcsin_", "asin_"), ("arccos_", "acos_"), ("absolute_", "abs_"),
                        ("greater_", "gt_"), ("less_equal_", "le_"), ("not_equal_", "ne_")]:
        assert getattr(pg.Tensor, alias) is getattr(pg.Tensor, name), alias


@pytest.mark.parametrize("name,ref,lo,hi", [
    ("asin", np.arcsin, -0.9, 0.9), ("acos", np.arccos, -0.9, 0.9), ("atan", np.arctan, -3, 3),
    ("sinh", np.sinh, -3, 3), ("cosh", np.cosh, -3, 3), ("asinh", np.arcsinh, -3, 3),
    ("acosh", np.arccosh, 1.1, 4), ("atanh", np.arctanh, -0.9, 0.9),
    ("deg2rad", np.deg2rad, -90, 90), ("rad2deg", np.rad2deg, -3, 3), ("sinc", np.sinc, -2, 2),
    ("erfc", lambda v: np.array([math.erfc(a) for a in v]), -2, 2), ("fix", np.trunc, -3, 3),
])
def test_inplace_variants_write_into_self(name: str, ref: object, lo: float, hi: float,
                                          device: str) -> None:
    v = np.linspace(lo, hi, 7)
    x = pg.tensor(v, device=device)
    before = x._version
    out = getattr(x, name + "_")()
    assert out is x and x._version > before
    np.testing.assert_allclose(_np(x), ref(v), rtol=1e-6, atol=1e-9)  # type: ignore[operator]


def test_inplace_refuses_a_float_result_in_an_integer_tensor(device: str) -> None:
    x = pg.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        x.asin_()
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Long but "
                                           "the operation's result requires dtype Double"):
        x.float_power_(2)


def test_binary_inplace_and_addc_methods(device: str) -> None:
    a = pg.tensor([1.0, -2.0, 3.0], device=device)
    a.copysign_(pg.tensor([-1.0, -0.0, 2.0], device=device))
    np.testing.assert_array_equal(_np(a), [-1.0, -2.0, 3.0])
    a.addcmul_(pg.tensor([1.0, 2.0, 3.0], device=device), pg.tensor([2.0, 2.0, 2.0],
                                                                      device=device), value=0.5)
    np.testing.assert_allclose(_np(a), [0.0, 0.0, 6.0])
    a.addcdiv_(pg.tensor([1.0, 1.0, 1.0], device=device), pg.tensor([2.0, 4.0, 8.0],
                                                                     device=device))
    np.testing.assert_allclose(_np(a), [0.5, 0.25, 6.125])
    a.clamp_min_(0.3).clamp_max_(1.0)
    np.testing.assert_allclose(_np(a), [0.5, 0.3, 1.0])
    b = pg.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    b.cumprod_(1)
    np.testing.assert_array_equal(_np(b), [[1, 2], [3, 12]])
    b.fill_diagonal_(-1.0)
    np.testing.assert_array_equal(_np(b), [[-1, 2], [3, -1]])


def test_precision_at_the_edges(device: str) -> None:
    """Forms that keep precision where the naive ones cancel or overflow."""
    x = pg.tensor([1e-10, -1e-10, 1e10, -1e10, 0.0], dtype=pg.float64, device=device)
    np.testing.assert_allclose(_np(pg.asinh(x)), np.arcsinh(_np(x)), rtol=1e-14)
    np.testing.assert_allclose(_np(pg.sinh(x[:2])), [1e-10, -1e-10], rtol=1e-14)
    c = pg.tensor([1.0 + 1e-12, 3.0, 1e10, 1e200], dtype=pg.float64, device=device)
    np.testing.assert_allclose(_np(pg.acosh(c)), np.arccosh(_np(c)), rtol=1e-8)
    e = pg.erfinv(pg.tensor([-1.0, 1.0, 0.0, 0.999999, 2.0], dtype=pg.float64, device=device))
    assert _np(e)[0] == -math.inf and _np(e)[1] == math.inf and _np(e)[2] == 0.0
    assert abs(math.erf(_np(e)[3]) - 0.999999) < 1e-13 and math.isnan(_np(e)[4])
    assert _np(pg.signbit(pg.tensor([-0.0, 0.0, -1.0], device=device))).tolist() == \
        [True, False, True]


# ----------------------------------------------------------------------------- flags
def test_layout_name_and_device_kind_flags(device: str) -> None:
    x = pg.randn(2, 3, device=device)
    assert x.layout is pg.strided and repr(pg.strided) == "portagrad.strided"
    assert x.name is None
    for flag in ("is_sparse", "is_sparse_csr", "is_xpu", "is_mps", "is_meta", "is_quantized",
                 "is_mkldnn", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia",
                 "is_nested", "is_cuda"):
        assert getattr(x, flag) is False, flag
    assert x.is_conj() is False and x.is_neg() is False
    assert x.conj() is x and x.resolve_conj() is x and x.resolve_neg() is x and x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        _ = x.imag
    assert x.to_dense() is x and x.sparse_dim() == 0 and x.dense_dim() == 2
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout "
                                           "but got Strided"):
        x.indices()
    y = x.requires_grad_() * 2
    assert y.output_nr == 0


def test_layout_pickles_as_the_same_object() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(pg.sparse_coo)) is pg.sparse_coo
    assert pickle.loads(pickle.dumps(pg.strided)) is pg.strided


# ----------------------------------------------------------------------------- softmax
def test_top_level_softmax_and_methods_take_dtype(device: str) -> None:
    x = pg.tensor([[1.0, 2.0, 3.0]], device=device)
    ref = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(_np(pg.softmax(x, 1))[0], ref, rtol=1e-6)
    np.testing.assert_allclose(_np(x.log_softmax(dim=-1))[0], np.log(ref), rtol=1e-6)
    assert pg.softmax(x, 1, dtype=pg.float64).dtype is pg.float64
    assert x.softmax(1, pg.float64).dtype is pg.float64
    with pytest.raises(TypeError):
        pg.softmax(x)  # type: ignore[call-arg]  # dim is required, as PyTorch


# ----------------------------------------------------------------------------- searching, counting
def test_searchsorted_and_bucketize(device: str) -> None:
    b = pg.tensor([1.0, 3.0, 5.0, 7.0, 9.0], device=device)
    v = pg.tensor([[3.0, 6.0, 9.0], [0.0, 10.0, 1.0]], device=device)
    np.testing.assert_array_equal(_np(pg.searchsorted(b, v)),
                                  np.searchsorted(_np(b), _np(v)))
    np.testing.assert_array_equal(_np(pg.searchsorted(b, v, right=True)),
                                  np.searchsorted(_np(b), _np(v), side="right"))
    assert pg.searchsorted(b, v, side="right", out_int32=True).dtype is pg.int32
    np.testing.assert_array_equal(_np(pg.bucketize(v, b)), np.searchsorted(_np(b), _np(v)))
    assert pg.searchsorted(b, 4.0).item() == 2
    rows = pg.tensor([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]], device=device)
    np.testing.assert_array_equal(_np(pg.searchsorted(rows, pg.tensor([[3.0], [3.0]],
                                                                      device=device))), [[1], [1]])
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        pg.searchsorted(b, v, right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        pg.bucketize(v, rows)


def test_bincount_histc_unique(device: str) -> None:
    i = pg.tensor([0, 1, 1, 3], device=device)
    np.testing.assert_array_equal(_np(pg.bincount(i)), [1, 2, 0, 1])
    w = pg.bincount(i, pg.tensor([0.5, 1.0, 1.0, 2.0], device=device), minlength=6)
    assert w.dtype is pg.float32
    np.testing.assert_array_equal(_np(w), [0.5, 2.0, 0, 2.0, 0, 0])
    assert pg.bincount(i, pg.tensor([1, 2, 3, 4], device=device)).dtype is pg.float64
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral"):
        pg.bincount(pg.tensor([-1, 2], device=device))
    x = pg.tensor([1.0, 2.0, 1.0, 4.0, -1.0], device=device)
    np.testing.assert_array_equal(_np(pg.histc(x, 4, 0, 3)), [0, 2, 1, 0])
    np.testing.assert_array_equal(_np(x.histc(5)), [1, 0, 2, 1, 1])
    u, inv, cnt = pg.unique(pg.tensor([[3, 1], [3, 2]], device=device), return_inverse=True,
                            return_counts=True)
    np.testing.assert_array_equal(_np(u), [1, 2, 3])
    np.testing.assert_array_equal(_np(inv), [[2, 0], [2, 1]])
    np.testing.assert_array_equal(_np(cnt), [1, 1, 2])
    v, inv2, cnt2 = pg.tensor([1, 1, 2, 2, 3, 1, 1], device=device).unique_consecutive(
        return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(v), [1, 2, 3, 1])
    np.testing.assert_array_equal(_np(inv2), [0, 0, 1, 1, 2, 3, 3])
    np.testing.assert_array_equal(_np(cnt2), [2, 2, 1, 2])
    rows, rinv, rcnt = pg.tensor([[1, 2], [0, 5], [1, 2]], device=device).unique(
        dim=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(_np(rows), [[0, 5], [1, 2]])
    np.testing.assert_array_equal(_np(rinv), [1, 0, 1])
    np.testing.assert_array_equal(_np(rcnt), [1, 2])
    cols = pg.tensor([[1, 1, 2], [3, 3, 4]], device=device).unique_consecutive(dim=1)
    np.testing.assert_array_equal(_np(cols), [[1, 2], [3, 4]])


def test_cummax_returns_values_and_indices_with_nan(device: str) -> None:
    x = pg.tensor([1.0, 3.0, 3.0, 2.0, math.nan, 5.0], device=device)
    vals, idx = x.cummax(0)
    np.testing.assert_array_equal(_np(vals), [1, 3, 3, 3, math.nan, math.nan])
    np.testing.assert_array_equal(_np(idx), [0, 1, 2, 2, 4, 4])
    assert pg.cummin(x, 0).indices.dtype is pg.int64


# ----------------------------------------------------------------------------- grids, stacks
def test_meshgrid_cartesian_prod_and_stacks(device: str) -> None:
    a, b = pg.arange(3, device=device), pg.arange(4, device=device)
    gi = pg.meshgrid(a, b, indexing="ij")
    gx = pg.meshgrid(a, b, indexing="xy")
    ni, nx = np.meshgrid(_np(a), _np(b), indexing="ij"), np.meshgrid(_np(a), _np(b))
    for g, n in zip(gi + gx, ni + nx):
        np.testing.assert_array_equal(_np(g), n)
    np.testing.assert_array_equal(_np(pg.cartesian_prod(a[:2], b[:2])),
                                  [[0, 0], [0, 1], [1, 0], [1, 1]])
    assert pg.atleast_1d(pg.tensor(1.0)).shape == (1,)
    assert pg.atleast_2d(pg.tensor([1.0, 2.0])).shape == (1, 2)
    assert pg.atleast_3d(pg.tensor([1.0, 2.0])).shape == (1, 2, 1)
    assert [t.shape for t in pg.atleast_2d(pg.tensor(1.0), pg.ones(2))] == [(1, 1), (1, 2)]
    np.testing.assert_array_equal(_np(pg.dstack([a, a])), np.dstack([_np(a), _np(a)]))
    np.testing.assert_array_equal(_np(pg.column_stack([a, a])),
                                  np.column_stack([_np(a), _np(a)]))
    parts = pg.arange(6, device=device).split_with_sizes([1, 5])
    assert [p.shape[0] for p in parts] == [1, 5]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        pg.arange(6).split_with_sizes([1, 2])
    assert [p.shape for p in pg.ones(4, 6).hsplit(3)] == [(4, 2)] * 3
    assert [p.shape for p in pg.ones(4, 6).vsplit([1])] == [(1, 6), (3, 6)]
    np.testing.assert_array_equal(_np(pg.triu_indices(3, 4, 1, device=device)),
                                  np.stack(np.triu_indices(3, 1, 4)))
    np.testing.assert_array_equal(_np(pg.tril_indices(3, 3, device=device)),
                                  np.stack(np.tril_indices(3, 0, 3)))


def test_small_methods(device: str) -> None:
    x = pg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    np.testing.assert_array_equal(_np(x.ravel()), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(_np(x.fliplr()), np.fliplr(_np(x)))
    np.testing.assert_array_equal(_np(x.flipud()), np.flipud(_np(x)))
    np.testing.assert_array_equal(_np(x.argwhere()), np.argwhere(_np(x)))
    np.testing.assert_array_equal(_np(x.sum_to_size(1, 3)), [[5, 7, 9]])
    with pytest.raises(RuntimeError, match=r"size \{\[2\]\} is not expandable to size "
                                           r"\{\[2, 3\]\}"):
        x.sum_to_size(2)
    np.testing.assert_array_equal(_np(x.narrow_copy(1, 1, 2)), [[2, 3], [5, 6]])
    assert x.is_same_size(pg.zeros(2, 3)) and not x.is_same_size(pg.zeros(3))
    assert x.equal(x.clone()) and x.allclose(x + 1e-9) and _np(x.isclose(x)).all()
    assert pg.tensor([2.0]).is_nonzero()
    np.testing.assert_array_equal(_np(x.where(x > 2, 0.0)), [[0, 0, 3], [4, 5, 6]])
    np.testing.assert_allclose(_np(x.dist(pg.zeros(2, 3, device=device))),
                               np.linalg.norm(_np(x)), rtol=1e-6)
    e = x.new_empty_strided((2, 2), (1, 2))
    assert e.shape == (2, 2) and e.stride() == (1, 2) and e.device == x.device


def test_put_index_put_and_apply(device: str) -> None:
    x = pg.zeros(2, 3, device=device)
    x.put_(pg.tensor([0, 5, -1], device=device), pg.tensor([1.0, 2.0, 3.0], device=device))
    np.testing.assert_array_equal(_np(x), [[1, 0, 0], [0, 0, 3]])
    x.index_put_((pg.tensor([0, 0], device=device), pg.tensor([1, 1], device=device)),
                 pg.tensor(2.0, device=device), accumulate=True)
    np.testing.assert_array_equal(_np(x), [[1, 4, 0], [0, 0, 3]])
    x.index_put_((pg.tensor([1], device=device),), pg.tensor(7.0, device=device))
    np.testing.assert_array_equal(_np(x), [[1, 4, 0], [7, 7, 7]])
    with pytest.raises(IndexError, match="out of range: tried to access index 6 on a tensor "
                                         "of 6 elements"):
        x.put_(pg.tensor([6], device=device), pg.tensor([1.0], device=device))
    y = pg.tensor([1.0, 2.0, 3.0], device=device)
    assert y.apply_(lambda v: v * v) is y
    np.testing.assert_array_equal(_np(y), [1, 4, 9])
    y.map_(pg.tensor([1.0], device=device), lambda a, b: a - b)
    np.testing.assert_array_equal(_np(y), [0, 3, 8])


def test_resize(device: str) -> None:
    x = pg.arange(6.0, device=device)
    v = x.view(2, 3)
    assert x.resize_(2, 2) is x
    assert x.shape == (2, 2) and x.is_contiguous()
    np.testing.assert_array_equal(_np(x), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(_np(v), [[0, 1, 2], [3, 4, 5]])  # shrinking keeps the storage
    x[0, 0] = 9.0
    assert _np(v)[0, 0] == 9.0
    x.resize_(3, 3)  # grows: the old elements come first
    assert x.shape == (3, 3)
    np.testing.assert_array_equal(_np(x).reshape(-1)[:4], [9, 1, 2, 3])
    x.resize_as_(pg.zeros(4))
    assert x.shape == (4,)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        pg.zeros(2, requires_grad=True).resize_(3)


def test_heaviside_is_not_differentiable_and_unique_has_no_grad(device: str) -> None:
    x = pg.tensor([-1.0, 0.0, 2.0], device=device, requires_grad=True)
    h = pg.heaviside(x, pg.tensor([0.5], device=device))
    assert not h.requires_grad
    np.testing.assert_array_equal(_np(h), [0.0, 0.5, 1.0])


# ----------------------------------------------------------------------------- PyTorch parity
def test_parity_with_torch_on_edge_values() -> None:
    torch = pytest.importorskip("torch")
    v = np.array([-1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, math.inf, -math.inf, math.nan])
    for name in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfinv",
                 "sinc", "logit", "deg2rad", "erfc", "angle"):
        ours = _np(getattr(pg, name)(pg.tensor(v)))
        theirs = getattr(torch, name)(torch.tensor(v)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, equal_nan=True,
                                   err_msg=name)
    a, b = np.array([0.0, 0.0, 1.0, 2.0]), np.array([0.0, math.nan, 0.0, 3.0])
    np.testing.assert_allclose(_np(pg.xlogy(pg.tensor(a), pg.tensor(b))),
                               torch.xlogy(torch.tensor(a), torch.tensor(b)).numpy(),
                               equal_nan=True)
    x = np.random.default_rng(0).normal(size=(3, 4))
    for eq in ("ij,kj->ik", "ij->j", "ii", "ij,ij->"):
        ops = [x[:, :3] if "ii" in eq else x] * (2 if "," in eq else 1)
        np.testing.assert_allclose(_np(pg.einsum(eq, *[pg.tensor(o) for o in ops])),
                                   torch.einsum(eq, *[torch.tensor(o) for o in ops]).numpy(),
                                   rtol=1e-12, err_msg=eq)


# ----------------------------------------------------------------------------- geometry, fills
def test_inplace_view_changes(device: str) -> None:
    x = pg.arange(6.0, device=device).reshape(2, 3)
    storage = x._storage
    assert x.t_() is x and x.shape == (3, 2) and x._storage is storage
    np.testing.assert_array_equal(_np(x), np.arange(6.0).reshape(2, 3).T)
    x.transpose_(0, 1).unsqueeze_(0)
    assert x.shape == (1, 2, 3)
    x.squeeze_(0)
    assert x.shape == (2, 3) and x.dim_order() == (0, 1) and x.t().dim_order() == (1, 0)
    x.as_strided_((3,), (2,))
    np.testing.assert_array_equal(_np(x), [0.0, 2.0, 4.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        pg.ones(2, 2, requires_grad=True).t_()
    with pytest.raises(NotImplementedError, match="t_ on a tensor that is part of an autograd "
                                                  "graph"):
        (pg.ones(2, 2, requires_grad=True) * 2).t_()
    assert pg.zeros(2, device=device).get_device() == (-1 if device == "cpu" else
                                                       pg.device(device).index)
    y = pg.zeros(3, device=device)
    assert y.is_set_to(y[:]) and not y.is_set_to(y[1:])
    np.testing.assert_array_equal(_np(pg.nonzero_static(pg.tensor([1, 0, 2], device=device),
                                                        size=3)), [[0], [2], [-1]])


def test_random_fills(device: str) -> None:
    pg.manual_seed(0)
    c = pg.empty(4000, device=device).cauchy_(1.0, 2.0)
    assert abs(float(_np(c.median())) - 1.0) < 0.2  # the median is the location
    ln = pg.empty(4000, device=device).log_normal_(0.5, 0.25)
    assert (_np(ln) > 0).all() and abs(float(_np(ln.log().mean())) - 0.5) < 0.05
    g = pg.empty(4000, device=device).geometric_(0.25)
    v = _np(g)
    assert v.min() >= 1 and (v == np.round(v)).all() and abs(v.mean() - 4.0) < 0.3
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in \\(0, 1\\)"):
        g.geometric_(1.5)


def test_removed_pytorch_methods_say_what_replaces_them() -> None:
    x = pg.eye(2)
    with pytest.raises(RuntimeError, match="`torch.solve` is deprecated in favor of "
                                           "`torch.linalg.solve`"):
        x.solve(x)
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        x.symeig()
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        x.reinforce(1.0)
    assert x.volatile is False and x.is_distributed() is False
    with pytest.raises(NotImplementedError, match="layout=torch.sparse_csr is not supported"):
        x.to_sparse_csr()


def test_special_namespace(device: str) -> None:
    x = pg.tensor([0.0, 0.5, 2.0], device=device)
    assert pg.special.gammaln is pg.lgamma and pg.special.psi is pg.digamma
    assert pg.special.expit is pg.sigmoid and pg.special.i0 is pg.i0
    np.testing.assert_allclose(_np(pg.special.entr(x)), [0.0, 0.5 * math.log(2), -2 * math.log(2)],
                               rtol=1e-6)
    np.testing.assert_allclose(_np(pg.special.ndtr(x)),
                               [0.5 * math.erfc(-v / math.sqrt(2)) for v in (0.0, 0.5, 2.0)],
                               rtol=1e-6)
    np.testing.assert_allclose(_np(pg.special.ndtri(pg.special.ndtr(x))), _np(x), atol=1e-5)
    np.testing.assert_allclose(_np(pg.special.xlog1py(x, x)), _np(x) * np.log1p(_np(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(_np(pg.special.multigammaln(x + 2, 2)),
                               [math.lgamma(v + 2) + math.lgamma(v + 1.5) + 0.5 * math.log(math.pi)
                                for v in (0.0, 0.5, 2.0)], rtol=1e-5)


def test_histogram_and_resize_copies(device: str) -> None:
    h, e = pg.histogram(pg.tensor([1.0, 2.0, 1.0], device=device), 4, range=(0.0, 3.0))
    np.testing.assert_array_equal(_np(h), [0, 2, 1, 0])
    np.testing.assert_allclose(_np(e), [0, 0.75, 1.5, 2.25, 3.0])
    hd, _ = pg.histogram(pg.tensor([1.0, 2.0, 1.0, 2.5], device=device),
                         pg.tensor([0.0, 1.0, 2.0, 2.5], device=device),
                         weight=pg.tensor([1.0, 2.0, 3.0, 4.0], device=device), density=True)
    np.testing.assert_allclose(_np(hd), [0.0, 0.4, 1.2], rtol=1e-6)
    x = pg.arange(4.0, device=device)
    r = x.resize(2, 2)
    assert r.shape == (2, 2) and x.shape == (4,)


def test_top_level_functions_of_nn_and_predicates(device: str) -> None:
    x = pg.tensor([[-1.0, 0.2, 3.0]], device=device)
    np.testing.assert_array_equal(_np(pg.hardshrink(x)), [[-1.0, 0.0, 3.0]])
    np.testing.assert_array_equal(_np(pg.threshold(x, 0.5, -9.0)), [[-9.0, -9.0, 3.0]])
    np.testing.assert_allclose(_np(pg.prelu(x, pg.tensor([0.1], device=device))),
                               [[-0.1, 0.2, 3.0]], rtol=1e-6)
    assert pg.dropout(x, 0.5, False) is x or np.array_equal(_np(pg.dropout(x, 0.5, False)),
                                                            _np(x))
    np.testing.assert_allclose(_np(pg.cosine_similarity(x, x)), [1.0], rtol=1e-6)
    np.testing.assert_allclose(_np(pg.pairwise_distance(x, x)), [math.sqrt(3) * 1e-6],
                               rtol=1e-3)
    assert pg.conj(x) is x and pg.real(x) is x and pg.resolve_conj(x) is x
    assert not pg.is_complex(x) and pg.is_signed(x) and not pg.is_conj(x)
    assert pg.is_same_size(x, pg.zeros(1, 3)) and not pg.is_inference(x)
    assert pg.can_cast(pg.int32, pg.float32) and not pg.can_cast(pg.float32, pg.int64)
    np.testing.assert_allclose(_np(pg.narrow_copy(x, 1, 1, 2)), [[0.2, 3.0]], rtol=1e-6)
    r, c = pg.unravel_index(pg.tensor([4, -1, 0], device=device), (2, 3))
    np.testing.assert_array_equal(_np(r), [1, 1, 0])
    np.testing.assert_array_equal(_np(c), [1, 2, 0])
    assert _np(pg.isin(pg.tensor([1, 5], device=device), 5)).tolist() == [False, True]


def test_incomplete_gamma(device: str) -> None:
    a = pg.tensor([0.5, 1.0, 2.5, 10.0, 3.0, 0.1, 20.0], dtype=pg.float64, device=device)
    x = pg.tensor([0.3, 2.0, 2.5, 12.0, 50.0, 30.0, 2.0], dtype=pg.float64, device=device)
    ref = [0.5614219739190002, 0.8646647167633873, 0.5841198130044921, 0.7576078383294876, 1.0,
           0.9999999999999996, 6.443731393112094e-14]  # mpmath
    np.testing.assert_allclose(_np(pg.igamma(a, x)), ref, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(_np(a.igammac(x)), 1 - np.array(ref), rtol=1e-8, atol=1e-15)
    assert pg.special.gammainc is pg.igamma
    edge = pg.igamma(pg.tensor([0.0, 2.0, 2.0, -1.0], device=device),
                     pg.tensor([1.0, 0.0, math.inf, 1.0], device=device))
    np.testing.assert_array_equal(_np(edge), [1.0, 0.0, 1.0, math.nan])
    xs = pg.tensor([0.5, 2.0, 7.0], dtype=pg.float64, device=device, requires_grad=True)
    a3 = pg.tensor([1.5, 2.0, 3.0], dtype=pg.float64, device=device)
    assert pg.autograd.gradcheck(lambda v: pg.igamma(a3, v), (xs,))
    assert pg.autograd.gradcheck(lambda v: pg.igammac(a3, v), (xs,))
    with pytest.raises(NotImplementedError, match="derivative of igamma/igammac with respect to "
                                                  "the input"):
        pg.igamma(a3.clone().requires_grad_(), xs).sum().backward()


def test_lu_and_qr_methods(device: str) -> None:
    a = np.array([[1.0, 2.0, 0.5], [4.0, -1.0, 2.0], [0.0, 3.0, 1.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    t = pg.tensor(a, dtype=pg.float64, device=device)
    LU, piv = t.lu()
    assert piv.dtype is pg.int32 and _np(piv).tolist() == [2, 3, 3]  # LAPACK's 1-based swaps
    P, L, U = pg.lu_unpack(LU, piv)
    np.testing.assert_allclose(_np(P @ L @ U), a, atol=1e-12)
    np.testing.assert_allclose(_np(pg.tensor(b, dtype=pg.float64, device=device).lu_solve(LU, piv)),
                               np.linalg.solve(a, b), rtol=1e-10)
    q, r = t.qr()
    np.testing.assert_allclose(_np(q @ r), a, atol=1e-12)
    np.testing.assert_allclose(_np(q.t() @ q), np.eye(3), atol=1e-12)
    assert _np(pg.linalg.qr(t, "r").R).shape == (3, 3)


def test_einsum_contracts_by_batched_matmul(device, monkeypatch):
    """Floating einsum contracts each pair of operands by one batched matmul (PyTorch's way),
    never a broadcast product over every index: "bhqd,bhkd->bhqk" made a (b, h, q, k, d)
    temporary. Indices one operand has alone are summed in it first."""
    from portagrad._ops import contraction

    calls = []
    mm = contraction.matmul
    monkeypatch.setattr(contraction, "matmul", lambda a, b: calls.append(
        (tuple(a.shape), tuple(b.shape))) or mm(a, b))
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5))
    out = pg.einsum("bhqd,bhkd->bhqk", pg.tensor(q, device=device), pg.tensor(k, device=device))
    np.testing.assert_allclose(_np(out), np.einsum("bhqd,bhkd->bhqk", q, k), rtol=1e-10)
    assert calls == [((6, 4, 5), (6, 5, 6))]
    calls.clear()
    a, v = rng.standard_normal((3, 3)), rng.standard_normal(4)
    out = pg.einsum("ii,j->j", pg.tensor(a, device=device), pg.tensor(v, device=device))
    np.testing.assert_allclose(_np(out), np.trace(a) * v, rtol=1e-10)
    assert calls == [((1, 1, 1), (1, 1, 4))]  # the trace summed first, then scaled
