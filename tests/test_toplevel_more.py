"""The smaller top-level names: ``sym_*`` shape arithmetic, the build flags, ``adjoint``,
``gradient``, ATen's ``native_*`` norms and dropout, ``grid_sampler`` / ``affine_grid_generator`` /
``conv_tbc``, ``norm_except_dim`` and ``testing.assert_allclose``. Values are checked against
closed forms and numpy here (the op table rows check them on every device with gradcheck), and
against PyTorch where it is installed."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import portagrad as pg
from portagrad.autograd import gradcheck

F = pg.nn.functional


def _np(t: pg.Tensor) -> np.ndarray:
    return t.detach().numpy(force=True)


# --- sym_*: the arithmetic PyTorch does on plain numbers
def test_sym_arithmetic() -> None:
    assert pg.sym_int(3.7) == 3 and pg.sym_int(-3.7) == -3 and type(pg.sym_int(2.0)) is int
    assert pg.sym_float(3) == 3.0 and type(pg.sym_float(3)) is float
    # a float on either side makes the result a float (unlike max/min)
    assert pg.sym_max(2, 3) == 3 and type(pg.sym_max(2, 3)) is int
    assert pg.sym_max(2, 3.0) == 3.0 and type(pg.sym_max(3, 2.0)) is float
    assert pg.sym_min(2, 3.0) == 2.0 and type(pg.sym_min(2, 3.0)) is float
    assert pg.sym_max(np.int64(4), 1) == 4
    assert pg.sym_not(True) is False and pg.sym_not(0) is True
    assert pg.sym_sqrt(4) == 2.0 and pg.sym_sqrt(2) == math.sqrt(2)
    assert pg.sym_sum([1, 2, 3]) == 6 and pg.sym_sum(1, 2.5) == 3.5 and pg.sym_sum() == 0
    assert pg.sym_ite(True, 1, 2) == 1 and pg.sym_ite(False, "a", "b") == "b"
    assert pg.sym_fresh_size(5) == 5 and pg.sym_fresh_size(3.5) == 3.5


def test_sym_errors() -> None:
    with pytest.raises(AssertionError, match="expected .* got <class 'str'>"):
        pg.sym_max("a", 1)
    with pytest.raises(AssertionError, match="expected SymBool or bool"):
        pg.sym_ite(1, 2, 3)
    with pytest.raises(AssertionError, match="type mismatch"):
        pg.sym_ite(True, 1, 2.0)
    with pytest.raises(ValueError):
        pg.sym_int("x")


def test_sym_constrain_range() -> None:
    assert pg.sym_constrain_range(3, min=0, max=5) is None
    assert pg.sym_constrain_range(-(2 ** 62)) is None
    with pytest.raises(RuntimeError, match=r"Invalid value range for 7 between \[0, 5\]\."):
        pg.sym_constrain_range(7, min=0, max=5)
    with pytest.raises(RuntimeError,
                       match=r"Invalid value range for -5 between \[-9223372036854775808, -10\]"):
        pg.sym_constrain_range(-5, max=-10)
    with pytest.raises(TypeError, match="argument 'min' must be int, not float"):
        pg.sym_constrain_range(1, min=1.5)
    with pytest.raises(TypeError, match=r"argument 'size' \(position 1\) must be Number, not str"):
        pg.sym_constrain_range("a")
    with pytest.raises(TypeError):
        pg.sym_constrain_range(3, 1)  # the bounds are keyword-only
    # sizes: at least 0 by default, max above 2
    assert pg.sym_constrain_range_for_size(0) is None
    with pytest.raises(RuntimeError, match=r"Invalid value range for -1 between \[0, 9223372036854775807\]"):
        pg.sym_constrain_range_for_size(-1)
    with pytest.raises(RuntimeError, match="must be greater than 2. got: -10"):
        pg.sym_constrain_range_for_size(-5, max=-10)


def test_build_flags() -> None:
    assert pg.has_lapack is True and pg.has_spectral is True and pg.has_openmp is True


# --- adjoint
def test_adjoint_is_a_transposed_view(device: str) -> None:
    x = pg.arange(24.0, device=device).reshape(2, 3, 4)
    a = pg.adjoint(x)
    assert a.shape == (2, 4, 3) and a._storage is x._storage
    np.testing.assert_array_equal(_np(a), np.swapaxes(np.arange(24.0).reshape(2, 3, 4), 1, 2))
    np.testing.assert_array_equal(_np(x.adjoint()), _np(a))


def test_adjoint_of_a_scalar_warns_and_of_a_vector_raises(device: str) -> None:
    s = pg.tensor(2.0, device=device)
    with pytest.warns(UserWarning, match="adjoint\\(\\) is deprecated on 0-D tensors"):
        a = s.adjoint()
    assert a.shape == () and a.item() == 2.0 and a._storage is s._storage
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):
        pg.arange(3.0, device=device).adjoint()


# --- gradient
def test_gradient_closed_forms(device: str) -> None:
    # a quadratic: second-order differences are exact everywhere with edge_order=2
    xs = np.array([0.0, 0.5, 1.5, 2.0, 3.5, 4.0])
    f = pg.tensor(xs ** 2, dtype=pg.float64, device=device)
    (g,) = pg.gradient(f, spacing=(pg.tensor(xs, device=device),), edge_order=2)
    np.testing.assert_allclose(_np(g), 2 * xs, rtol=1e-12)
    # uniform spacing 0.5 on a cubic: centred differences have error h^2 f'''/6 = 0.25 inside
    t = np.arange(6) * 0.5
    (g,) = pg.gradient(pg.tensor(t ** 3, dtype=pg.float64, device=device), spacing=0.5)
    np.testing.assert_allclose(_np(g)[1:-1], 3 * t[1:-1] ** 2 + 0.25, rtol=1e-12)
    # integers differentiate in the default dtype; a 0-d input has no dimension to differentiate
    (g,) = pg.gradient(pg.tensor([1, 2, 4, 8], device=device), dim=0)
    assert g.dtype is pg.float32
    np.testing.assert_array_equal(_np(g), [1.0, 1.5, 3.0, 4.0])
    assert pg.gradient(pg.tensor(1.0, device=device)) == ()
    (g,) = pg.gradient(pg.tensor([1.0, 3.0], device=device), spacing=pg.tensor(2.0))
    np.testing.assert_array_equal(_np(g), [1.0, 1.0])


def test_gradient_spacing_errors(device: str) -> None:
    x = pg.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="coordinates of dimension 1 to have 4 elements"):
        pg.gradient(x, spacing=[pg.arange(3.0, device=device)], dim=1)
    with pytest.raises(RuntimeError, match="got an element with 2 dimensions"):
        pg.gradient(x, spacing=[pg.zeros(1, 4, device=device)], dim=1)
    with pytest.raises(TypeError, match="not a 1-d tensor"):
        pg.gradient(x, spacing=pg.zeros(2, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.gradient(x, dim=2)


# --- native norms and dropout
def test_native_layer_norm_statistics(device: str) -> None:
    a = np.random.default_rng(0).normal(size=(2, 3, 4))
    x = pg.tensor(a, device=device, requires_grad=True)
    out, mean, rstd = pg.native_layer_norm(x, [3, 4], None, None, 1e-5)
    assert mean.shape == rstd.shape == (2, 1, 1)
    np.testing.assert_allclose(_np(mean), a.mean((1, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(_np(rstd), 1 / np.sqrt(a.var((1, 2), keepdims=True) + 1e-5),
                               rtol=1e-12)
    # the statistics are not differentiable, the output is: (x - mean) * rstd
    assert out.requires_grad and not mean.requires_grad and not rstd.requires_grad
    np.testing.assert_allclose(_np(out), (a - _np(mean)) * _np(rstd), rtol=1e-10, atol=1e-12)


def test_native_group_norm_gradcheck(device: str) -> None:
    x = pg.randn(2, 4, 3, dtype=pg.float64, device=device, requires_grad=True)
    w = pg.randn(4, dtype=pg.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x, w: pg.native_group_norm(x, w, None, 2, 4, 3, 2, 1e-5)[0], (x, w))
    with pytest.raises(RuntimeError, match="expected an input of N=2, C=4 and HxW=4"):
        pg.native_group_norm(x, None, None, 2, 4, 4, 2, 1e-5)


def test_native_batch_norm_training_and_eval(device: str) -> None:
    a = np.random.default_rng(1).normal(size=(4, 3, 5))
    x = pg.tensor(a, device=device)
    rm, rv = pg.zeros(3, dtype=pg.float64, device=device), pg.ones(3, dtype=pg.float64,
                                                                   device=device)
    out, mean, invstd = pg.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    np.testing.assert_allclose(_np(mean), a.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(_np(invstd), 1 / np.sqrt(a.var((0, 2)) + 1e-5), rtol=1e-12)
    # running statistics updated as batch_norm does (unbiased variance)
    np.testing.assert_allclose(_np(rm), 0.1 * a.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-12)
    out, mean, invstd = pg.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    assert mean.shape == invstd.shape == (0,)
    expect = (a - _np(rm)[:, None]) / np.sqrt(_np(rv)[:, None] + 1e-5)
    np.testing.assert_allclose(_np(out), expect, rtol=1e-10)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        pg.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)


def test_native_dropout(device: str) -> None:
    x = pg.ones(2000, dtype=pg.float64, device=device, requires_grad=True)
    out, mask = pg.native_dropout(x, 0.25, True)
    assert mask.dtype is pg.bool and mask.shape == x.shape
    m = _np(mask)
    np.testing.assert_array_equal(_np(out), np.where(m, 1 / 0.75, 0.0))
    assert 0.7 < m.mean() < 0.8  # 1500 kept in expectation, sd ~19
    out.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.where(m, 1 / 0.75, 0.0))
    out, mask = pg.native_dropout(x, 0.25, False)
    assert bool(mask.all()) and pg.equal(out, x)
    out, mask = pg.native_dropout(x, 1.0, None)  # None trains
    assert not bool(mask.any()) and not bool(out.any())
    with pytest.raises(ValueError, match="between 0 and 1"):
        pg.native_dropout(x, 1.5, True)


# --- grid sampling and the TBC convolution
def test_grid_sampler_integer_modes(device: str) -> None:
    rng = np.random.default_rng(2)
    x = pg.tensor(rng.normal(size=(1, 2, 4, 5)), device=device)
    g = pg.tensor(rng.uniform(-1.2, 1.2, size=(1, 3, 3, 2)), device=device)
    for mi, mode in enumerate(("bilinear", "nearest")):
        for pi, pad in enumerate(("zeros", "border", "reflection")):
            for ac in (False, True):
                np.testing.assert_array_equal(
                    _np(pg.grid_sampler_2d(x, g, mi, pi, ac)),
                    _np(F.grid_sample(x, g, mode, pad, ac)))
    x3 = pg.tensor(rng.normal(size=(1, 1, 2, 3, 3)), device=device)
    g3 = pg.tensor(rng.uniform(-1, 1, size=(1, 2, 2, 2, 3)), device=device)
    np.testing.assert_array_equal(_np(pg.grid_sampler_3d(x3, g3, 0, 1, False)),
                                  _np(F.grid_sample(x3, g3, "bilinear", "border", False)))
    np.testing.assert_array_equal(_np(pg.grid_sampler(x, g, 2, 0, False)),  # mode 2: bicubic
                                  _np(F.grid_sample(x, g, "bicubic", "zeros", False)))
    with pytest.raises(RuntimeError, match="invalid padding_mode 5"):
        pg.grid_sampler(x, g, 0, 5, False)
    with pytest.raises(TypeError, match="'align_corners' \\(position 5\\) must be bool"):
        pg.grid_sampler(x, g, 0, 0, None)  # type: ignore[arg-type]


def test_conv_tbc_is_a_sequence_convolution(device: str) -> None:
    # a kernel of ones over a ramp with no bias: each output sums `kernel` consecutive inputs
    t = pg.arange(6.0, device=device).reshape(6, 1, 1)
    out = pg.conv_tbc(t, pg.ones(3, 1, 1, device=device), pg.zeros(1, device=device))
    np.testing.assert_array_equal(_np(out).ravel(), [3.0, 6.0, 9.0, 12.0])
    out = pg.conv_tbc(t, pg.ones(3, 1, 1, device=device), pg.zeros(1, device=device), 1)
    np.testing.assert_array_equal(_np(out).ravel(), [1.0, 3.0, 6.0, 9.0, 12.0, 9.0])
    with pytest.raises(RuntimeError, match="Input must have 3 dims"):
        pg.conv_tbc(t[0], pg.ones(3, 1, 1, device=device), pg.zeros(1, device=device))


def test_norm_except_dim_is_weight_norms_divisor(device: str) -> None:
    a = np.random.default_rng(4).normal(size=(4, 3, 2))
    v = pg.tensor(a, device=device)
    # weight_norm's g * v / norm_except_dim(v, 2, dim): one norm per slice along dim
    np.testing.assert_allclose(_np(pg.norm_except_dim(v, 2, 0)),
                               np.sqrt((a ** 2).sum((1, 2), keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(_np(pg.norm_except_dim(v, 1, 2)),
                               np.abs(a).sum((0, 1), keepdims=True), rtol=1e-12)
    assert pg.norm_except_dim(v, 2, -1).shape == ()
    np.testing.assert_allclose(pg.norm_except_dim(v, 2, -1).item(), np.sqrt((a ** 2).sum()))
    with pytest.raises(IndexError, match="Dimension out of range"):
        pg.norm_except_dim(v, 2, 3)


# --- testing.assert_allclose
def test_assert_allclose_is_deprecated_and_looser() -> None:
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated since 1.12"):
        # float32 defaults are rtol 1e-4 (assert_close's: 1.3e-6); other dtypes are not compared
        pg.testing.assert_allclose(pg.tensor([1.0, 2.0]), [1.00005, 2.0001])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        pg.testing.assert_allclose(pg.tensor([1.0, float("nan")]), [1.0, float("nan")])
        pg.testing.assert_allclose(pg.tensor([1, 2]), pg.tensor([1.0, 2.0]))
        with pytest.raises(AssertionError, match="Tensor-likes are not close"):
            pg.testing.assert_allclose(pg.tensor([1.0, 2.0]), [1.001, 2.0])
        with pytest.raises(AssertionError, match="custom"):
            pg.testing.assert_allclose(pg.tensor([1.0]), [2.0], msg="custom")


# --- PyTorch parity
def _torch_and_pg(fn_name: str, *arrays: np.ndarray, **kw: Any) -> tuple[Any, Any]:
    torch = pytest.importorskip("torch")
    t_args = [torch.tensor(a) for a in arrays]
    p_args = [pg.tensor(a) for a in arrays]
    return getattr(torch, fn_name)(*t_args, **kw), getattr(pg, fn_name)(*p_args, **kw)


def _same(t_out: Any, p_out: Any, rtol: float = 1e-6) -> None:
    if isinstance(t_out, (tuple, list)):
        assert len(t_out) == len(p_out)
        for a, b in zip(t_out, p_out):
            _same(a, b, rtol)
        return
    assert tuple(t_out.shape) == tuple(p_out.shape)
    assert str(t_out.dtype).split(".")[-1] == str(p_out.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(p_out), t_out.detach().numpy(), rtol=rtol, atol=1e-6)


def test_torch_parity() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 5)).astype(np.float32)
    for kw in ({}, {"spacing": 2.0, "dim": 1}, {"spacing": [0.5, 2.0], "edge_order": 2},
               {"dim": [1, 0]}):
        _same(*_torch_and_pg("gradient", a, **kw))
    coords = np.array([0.0, 0.5, 2.0, 2.5, 4.0])
    _same(torch.gradient(torch.tensor(a), spacing=(torch.tensor(coords),), dim=1, edge_order=2),
          pg.gradient(pg.tensor(a), spacing=(pg.tensor(coords),), dim=1, edge_order=2))
    _same(*_torch_and_pg("adjoint", a))
    _same(torch.native_layer_norm(torch.tensor(a), [5], None, None, 1e-5),
          pg.native_layer_norm(pg.tensor(a), [5], None, None, 1e-5), rtol=1e-5)
    b = rng.normal(size=(2, 4, 3)).astype(np.float32)
    _same(torch.native_group_norm(torch.tensor(b), None, None, 2, 4, 3, 2, 1e-5),
          pg.native_group_norm(pg.tensor(b), None, None, 2, 4, 3, 2, 1e-5), rtol=1e-5)
    _same(torch.native_batch_norm(torch.tensor(b), None, None, None, None, True, 0.1, 1e-5),
          pg.native_batch_norm(pg.tensor(b), None, None, None, None, True, 0.1, 1e-5),
          rtol=1e-5)
    for dim in (0, 1, -1, -2):
        _same(torch.norm_except_dim(torch.tensor(b), 2, dim),
              pg.norm_except_dim(pg.tensor(b), 2, dim), rtol=1e-5)
    w, bias = rng.normal(size=(3, 3, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)
    _same(torch.conv_tbc(torch.tensor(b.transpose(1, 0, 2).copy()), torch.tensor(w),
                         torch.tensor(bias), 1),
          pg.conv_tbc(pg.tensor(b.transpose(1, 0, 2).copy()), pg.tensor(w), pg.tensor(bias), 1),
          rtol=1e-5)
    theta = rng.normal(size=(1, 2, 3)).astype(np.float32)
    tg = torch.affine_grid_generator(torch.tensor(theta), [1, 1, 3, 4], False)
    pgg = pg.affine_grid_generator(pg.tensor(theta), [1, 1, 3, 4], False)
    _same(tg, pgg, rtol=1e-5)
    img = rng.normal(size=(1, 1, 3, 4)).astype(np.float32)
    _same(torch.grid_sampler(torch.tensor(img), tg, 0, 1, False),
          pg.grid_sampler(pg.tensor(img), pgg, 0, 1, False), rtol=1e-5)
    for name, args in (("sym_max", (2, 3.0)), ("sym_min", (4, 1)), ("sym_int", (-2.5,)),
                       ("sym_sum", ([1, 2.0],)), ("sym_sqrt", (9,))):
        got, want = getattr(pg, name)(*args), getattr(torch, name)(*args)
        assert got == want and type(got) is type(want), name
    assert (pg.has_lapack, pg.has_spectral) == (torch.has_lapack, torch.has_spectral)


# --- storages, pointers, streams, module_load
@pytest.mark.parametrize("dt, legacy", [("float32", "FloatStorage"), ("float64", "DoubleStorage"),
                                        ("int64", "LongStorage"), ("bool", "BoolStorage"),
                                        ("uint8", "ByteStorage")])
def test_typed_storage(device: str, dt: str, legacy: str) -> None:
    x = pg.zeros(6, dtype=getattr(pg, dt), device=device)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x[2:].storage()  # the whole memory, whichever view asks
    itemsize = getattr(pg, dt).itemsize
    assert isinstance(s, pg.TypedStorage) and not isinstance(s, pg.UntypedStorage)
    assert len(s) == s.size() == 6 and s.element_size() == itemsize
    assert s.nbytes() == 6 * itemsize and s.dtype is getattr(pg, dt)
    assert s.device == x.device and s.data_ptr() == x.data_ptr()
    assert s.untyped() == x.untyped_storage()
    assert x.storage_type() is getattr(pg, legacy)
    assert isinstance(s, getattr(pg, legacy)) and not isinstance(s, pg.ShortStorage)
    assert s.pickle_storage_type() == legacy
    with pytest.raises(NotImplementedError):
        pg.FloatStorage(3)


def test_const_data_ptr_record_stream_module_load(device: str) -> None:
    x = pg.arange(6.0, device=device)
    assert x[2:].const_data_ptr() == x[2:].data_ptr() == x.data_ptr() + 2 * 4
    with pytest.raises(NotImplementedError, match="no streams"):
        x.record_stream(None)
    dst, src = pg.zeros(3, device=device), pg.ones(3, device=device, requires_grad=True)
    new = dst.module_load(src)  # copies into dst, returns a detached alias of it
    assert new is not dst and new._storage is dst._storage and not new.requires_grad
    np.testing.assert_array_equal(_np(dst), [1.0, 1.0, 1.0])
    new = dst.module_load(src, assign=True)  # the state dict's tensor itself, detached
    assert new._storage is src._storage and not new.requires_grad


def test_storage_parity_with_torch() -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for dt in ("float32", "int16", "bool", "uint8"):
            t = torch.zeros(5, dtype=getattr(torch, dt))
            p = pg.zeros(5, dtype=getattr(pg, dt))
            assert p.storage_type().__name__ == t.storage_type().__name__
            assert (len(p.storage()), p.storage().nbytes()) == (len(t.storage()),
                                                                t.storage().nbytes())


# --- whole recurrent stacks
@pytest.mark.parametrize("name, cls", [("lstm", "LSTM"), ("gru", "GRU"), ("rnn_tanh", "RNN"),
                                       ("rnn_relu", "RNN")])
def test_recurrent_stack_is_what_the_module_runs(device: str, name: str, cls: str) -> None:
    kw = {"nonlinearity": "relu"} if name == "rnn_relu" else {}
    m = getattr(pg.nn, cls)(3, 4, 2, bidirectional=True, batch_first=True, device=device, **kw)
    x = pg.randn(2, 5, 3, device=device)
    h = pg.randn(4, 2, 4, device=device)
    hx = (h, pg.randn(4, 2, 4, device=device)) if name == "lstm" else h
    weights = [getattr(m, n) for n in m._flat_weights_names]
    got = getattr(pg, name)(x, list(hx) if name == "lstm" else hx, weights, True, 2, 0.0, False,
                            True, True)
    want = m(x, hx)
    want_flat = (want[0],) + (tuple(want[1]) if name == "lstm" else (want[1],))
    assert len(got) == len(want_flat)
    for g, w in zip(got, want_flat):
        np.testing.assert_array_equal(_np(g), _np(w))


def test_recurrent_stack_errors(device: str) -> None:
    x, h = pg.zeros(3, 1, 2, device=device), pg.zeros(1, 1, 2, device=device)
    ps = [pg.zeros(2, 2, device=device), pg.zeros(2, 2, device=device)]
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        pg.lstm(x, [h], [pg.zeros(8, 2, device=device)] * 2, False, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="Expected more hidden states"):
        pg.rnn_tanh(x, h, ps * 2, False, 2, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="expected a 3-D input"):
        pg.gru(x[0], h, ps, False, 1, 0.0, False, False, False)
    # the packed-sequence form takes the packed (steps, features) data
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        pg.rnn_tanh(x, pg.tensor([1, 1, 1]), h, ps, False, 1, 0.0, False,  # type: ignore
                    False)


def test_recurrent_stacks_match_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for name, gates in (("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)):
        x = rng.normal(size=(4, 2, 3)).astype(np.float32)
        h = rng.normal(size=(2, 2, 5)).astype(np.float32)
        ps = [rng.normal(size=s).astype(np.float32) * 0.5 for s in
              ((gates * 5, 3), (gates * 5, 5), (gates * 5,), (gates * 5,))]
        args = (True, 1, 0.0, False, True, False)  # one bidirectional layer: two weight sets
        t_hx: Any = [torch.tensor(h), torch.tensor(h)] if name == "lstm" else torch.tensor(h)
        p_hx: Any = [pg.tensor(h), pg.tensor(h)] if name == "lstm" else pg.tensor(h)
        want = getattr(torch, name)(torch.tensor(x), t_hx, [torch.tensor(p) for p in ps * 2],
                                    *args)
        got = getattr(pg, name)(pg.tensor(x), p_hx, [pg.tensor(p) for p in ps * 2], *args)
        _same(want, got, rtol=1e-5)


# --- nn.functional's helpers
def test_boolean_dispatch_and_assert_int_or_pair() -> None:
    def with_idx(x: int, flag: bool = False) -> tuple:
        """Doubles x."""
        return ("with", 2 * x)

    def without(x: int, flag: bool = False) -> tuple:
        return ("without", 2 * x)

    fn = F.boolean_dispatch("flag", 1, False, with_idx, without, "mymod", "double")
    assert fn(3) == ("without", 6) and fn(3, True) == ("with", 6) and fn(3, flag=True)[0] == "with"
    assert fn.__name__ == "double" and fn.__module__ == "mymod"
    assert fn.__doc__ == without.__doc__ == "Doubles x."  # the one docstring, shared
    assert pg.nn._dispatch.boolean_dispatched[fn]["if_true"] is with_idx
    with pytest.raises(RuntimeError, match="only one function can have a docstring"):
        F.boolean_dispatch("flag", 1, False, with_idx, without, None, None)
    F.assert_int_or_pair(3, "kernel_size", "{} must be int or pair")
    F.assert_int_or_pair((1, 2), "kernel_size", "{} must be int or pair")
    with pytest.raises(AssertionError, match="^kernel_size must be int or pair$"):
        F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be int or pair")
    assert F.has_torch_function is pg.overrides.has_torch_function
    assert not F.has_torch_function_unary(pg.ones(1))
    assert not F.has_torch_function_variadic(pg.ones(1), 2)


# --- LAPACK's compact QR
def test_geqrf_then_ormqr_rebuilds_the_matrix(device: str) -> None:
    a = np.random.default_rng(6).normal(size=(2, 5, 3))
    f, tau = pg.geqrf(pg.tensor(a, device=device))
    r = pg.triu(f)  # (5, 3): R on top of zeros
    np.testing.assert_allclose(_np(pg.ormqr(f, tau, r)), a, rtol=1e-10, atol=1e-12)
    # Q is orthogonal: Q^T (Q x) = x, and its first columns are linalg.qr's Q up to the signs
    x = pg.tensor(np.eye(5), device=device).expand(2, 5, 5)
    q = pg.ormqr(f, tau, x)
    np.testing.assert_allclose(_np(pg.ormqr(f, tau, q, True, True)), _np(x), atol=1e-12)
    np.testing.assert_allclose(_np(pg.linalg.householder_product(f, tau)), _np(q)[..., :3],
                               atol=1e-12)
    np.testing.assert_allclose(np.abs(_np(q)[..., :3]), np.abs(np.linalg.qr(a)[0]), atol=1e-10)
    assert not f.requires_grad  # geqrf is not differentiable (nor in PyTorch)
    assert pg.geqrf(pg.tensor(a, device=device))._fields == ("a", "tau")


def test_geqrf_ormqr_match_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        a = rng.normal(size=shape)
        _same(torch.geqrf(torch.tensor(a)), pg.geqrf(pg.tensor(a)), rtol=1e-10)
    a = rng.normal(size=(5, 3))
    ft, tt = torch.geqrf(torch.tensor(a))
    fp, tp = pg.geqrf(pg.tensor(a))
    for left, other in ((True, rng.normal(size=(5, 2))), (False, rng.normal(size=(4, 5)))):
        for tr in (False, True):
            _same(torch.ormqr(ft, tt, torch.tensor(other), left, tr),
                  pg.ormqr(fp, tp, pg.tensor(other), left, tr), rtol=1e-10)


# --- histogramdd
@pytest.mark.parametrize("kw", [{"bins": 4}, {"bins": [2, 3, 4]},
                                {"bins": [2, 3, 4], "range": [-1.0, 1.0, -2.0, 2.0, 0.0, 3.0]},
                                {"bins": 3, "density": True}])
def test_histogramdd_against_numpy(device: str, kw: dict) -> None:
    x = np.random.default_rng(8).normal(size=(2, 25, 3))  # leading dimensions flatten
    w = np.random.default_rng(9).uniform(size=(2, 25))
    hist, edges = pg.histogramdd(pg.tensor(x, device=device), weight=pg.tensor(w, device=device),
                                 **kw)
    rng = None if "range" not in kw else np.reshape(kw["range"], (3, 2))
    want, want_edges = np.histogramdd(x.reshape(-1, 3), bins=kw["bins"], range=rng,
                                      weights=w.reshape(-1), density=kw.get("density", False))
    np.testing.assert_allclose(_np(hist), want, rtol=1e-12)
    assert len(edges) == 3
    for e, we in zip(edges, want_edges):
        np.testing.assert_allclose(_np(e), we, rtol=1e-12)


def test_histogramdd_edges_and_errors(device: str) -> None:
    x = pg.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [1.0, 2.0]], device=device)
    hist, edges = pg.histogramdd(x, bins=[pg.tensor([0.0, 1.0, 2.0], device=device),
                                          pg.tensor([0.0, 1.5, 3.0], device=device)])
    # bins are [0,1) [1,2] by [0,1.5) [1.5,3]: the last bin of each dimension includes its edge
    np.testing.assert_array_equal(_np(hist), [[1.0, 0.0], [2.0, 1.0]])
    hist, edges = pg.histogramdd(pg.zeros(0, 2, device=device), bins=2)  # numpy's [0, 1]
    np.testing.assert_array_equal(_np(edges[0]), [0.0, 0.5, 1.0])
    with pytest.raises(RuntimeError, match="size of bins must be equal to the innermost"):
        pg.histogramdd(x, bins=[2, 2, 2])
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        pg.histogramdd(x, bins=2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        pg.histogramdd(x, bins=0)
    with pytest.raises(RuntimeError, match="should have at least 2 dimensions"):
        pg.histogramdd(x[0], bins=2)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        pg.histogramdd(x.long(), bins=2)


def test_histogramdd_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(10).normal(size=(40, 2)).astype(np.float32)
    for kw in ({"bins": 3}, {"bins": [2, 5], "density": True}):
        t, p = torch.histogramdd(torch.tensor(a), **kw), pg.histogramdd(pg.tensor(a), **kw)
        _same(t.hist, p.hist, rtol=1e-5)
        _same(t.bin_edges, p.bin_edges, rtol=1e-6)
    t, p = torch.histogram(torch.zeros(0), 2), pg.histogram(pg.zeros(0), 2)
    _same(t.bin_edges, p.bin_edges)


class _AsksForAGenerator(pg.utils.data.Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> Any:
        gen = pg.thread_safe_generator()
        # what a random transform does with it: pass it on (None draws from the default)
        return pg.tensor([float(gen is None), float(pg.utils.data.get_worker_info() is not None)])


def test_thread_safe_generator_is_the_default_in_process_workers() -> None:
    assert pg.thread_safe_generator() is None
    loader = pg.utils.data.DataLoader(_AsksForAGenerator(), batch_size=2, num_workers=1)
    (batch,) = list(loader)
    np.testing.assert_array_equal(_np(batch), [[1.0, 1.0], [1.0, 1.0]])  # in a worker, None


# --- Tensor.grad_dtype
def test_grad_dtype_casts_accumulated_gradients(device: str) -> None:
    z = pg.zeros(2, requires_grad=True, device=device)
    assert z.grad_dtype is pg.float32
    z.grad_dtype = pg.float64
    (z * 2).sum().backward()
    (z * 3).sum().backward()  # accumulates in float64 too
    assert z.grad.dtype is pg.float64
    np.testing.assert_array_equal(_np(z.grad), [5.0, 5.0])
    z.grad = pg.ones(2, dtype=pg.float64, device=device)  # an assigned .grad must match it
    with pytest.raises(RuntimeError, match="dtype 'float' to a tensor with grad_dtype 'Double'"):
        z.grad = pg.ones(2, device=device)
    # None: any dtype may be assigned, and gradients keep the dtype they arrive in
    z.grad_dtype = None
    z.grad = pg.ones(2, dtype=pg.int64, device=device)
    assert z.grad.dtype is pg.int64
    w = pg.zeros(2, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="dtype 'double' to a tensor with grad_dtype 'Float'"):
        w.grad = pg.ones(2, dtype=pg.float64, device=device)
    y = w * 2
    with pytest.raises(RuntimeError, match="grad_dtype can only be accessed on leaf tensors"):
        _ = y.grad_dtype
    with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf tensors"):
        y.grad_dtype = pg.float64
    with pytest.raises(TypeError, match="grad_dtype must be a torch.dtype or None, but got str"):
        w.grad_dtype = "float64"


def test_grad_dtype_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (torch, pg):
        z = lib.zeros(3, requires_grad=True)
        z.grad_dtype = lib.float64
        (z * lib.arange(3.0)).sum().backward()
        assert str(z.grad.dtype).endswith("float64")
        np.testing.assert_array_equal(z.grad.numpy(), [0.0, 1.0, 2.0])


# --- from_file
def test_from_file(tmp_path: Any, device: str) -> None:
    path = str(tmp_path / "values.bin")
    np.arange(10, dtype=np.float32).tofile(path)
    t = pg.from_file(path, size=4, device=device)
    assert t.device == pg.device(device)
    np.testing.assert_array_equal(_np(t), [0.0, 1.0, 2.0, 3.0])
    assert pg.from_file(path).shape == (0,)  # size 0 by default
    as_int = pg.from_file(path, size=2, dtype=pg.int32)
    np.testing.assert_array_equal(_np(as_int), np.arange(2, dtype=np.float32).view(np.int32))
    t[0] = 7.0  # a copy: the file is unchanged
    assert np.fromfile(path, np.float32)[0] == 0.0
    with pytest.raises(RuntimeError, match=r"size <40> is smaller than the required mapping "
                                           r"size <44>"):
        pg.from_file(path, size=11)
    with pytest.raises(RuntimeError, match="unable to open file .* No such file"):
        pg.from_file(str(tmp_path / "missing.bin"), size=1)


def test_from_file_shared_writes_through(tmp_path: Any) -> None:
    path = str(tmp_path / "values.bin")
    np.arange(4, dtype=np.float64).tofile(path)
    t = pg.from_file(path, shared=True, size=3, dtype=pg.float64)
    t[0] = 42.0
    t.mul_(2)
    del t
    np.testing.assert_array_equal(np.fromfile(path, np.float64), [84.0, 2.0, 4.0, 3.0])
    with pytest.raises(RuntimeError, match="shared=True maps the file into host memory"):
        pg.from_file(path, shared=True, size=1, device="opencl:0")


def test_from_file_matches_torch(tmp_path: Any) -> None:
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "values.bin")
    np.random.default_rng(11).normal(size=12).tofile(path)
    for kw in ({"size": 5}, {"size": 12, "dtype": "float64"}, {"size": 3, "dtype": "int16"}):
        t_kw = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
        p_kw = {k: getattr(pg, v) if k == "dtype" else v for k, v in kw.items()}
        _same(torch.from_file(path, **t_kw), pg.from_file(path, **p_kw), rtol=0)


# --- autograd.set_multithreading_enabled
def test_set_multithreading_enabled(device: str) -> None:
    from portagrad.autograd.grad_mode import is_multithreading_enabled
    import threading

    x = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert is_multithreading_enabled()
    with pg.autograd.set_multithreading_enabled(False):
        assert not is_multithreading_enabled()
        seen: list[bool] = []
        t = threading.Thread(target=lambda: seen.append(is_multithreading_enabled()))
        t.start()
        t.join()
        assert seen == [True]  # thread-local
        (x * x).sum().backward()  # backward on this thread, as asked
    assert is_multithreading_enabled()
    np.testing.assert_array_equal(_np(x.grad), [2.0, 4.0])
    pg.autograd.set_multithreading_enabled(False)  # as a function: acts at once
    try:
        assert not is_multithreading_enabled()
    finally:
        pg.autograd.set_multithreading_enabled(True)
    assert is_multithreading_enabled()
