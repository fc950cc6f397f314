"""``out=`` on the top-level functions, against PyTorch: the values and dtype written, the returned
tensor being ``out`` itself, the resize of an ``out`` of another shape (with PyTorch's warning
unless it was empty), and PyTorch's error for each refusal: a dtype the op cannot write into (its
kernel's rule and message), autograd, another device; and Tensor methods taking no ``out=``."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import portagrad as pg

torch = pytest.importorskip("torch")

_F = np.array([[1.5, -2.0, 3.0], [0.25, 2.5, -1.0]], np.float32)
_INPUTS = {
    "f": _F,
    "g": np.array([[2.0, 1.0, -1.0], [0.5, -2.5, 4.0]], np.float32),
    "p": np.abs(_F),
    "i": np.array([[1, 2, 3], [4, -5, 6]], np.int64),
    "j": np.array([[3, 2, 1], [2, 3, -4]], np.int64),
    "q": np.arange(6, dtype=np.float32).reshape(3, 2) / 4,
    "v": np.array([0.5, -1.0, 2.0], np.float32),
    "b3": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8,
    "c3": np.arange(24, dtype=np.float32).reshape(2, 4, 3) / 8,
}

# (function, positional arguments: input names, numbers, lists of names; keywords; out's dtype)
CASES = [
    ("maximum", ("f", "g"), {}, "float32"),
    ("maximum", ("i", "j"), {}, "float32"),  # an integer result into a float out
    ("minimum", ("f", "g"), {}, "float64"),
    ("pow", ("i", 2), {}, "int64"),
    ("pow", ("p", "g"), {}, "float64"),
    ("remainder", ("f", "g"), {}, "float32"),
    ("fmod", ("i", "j"), {}, "int64"),
    ("floor_divide", ("i", "j"), {}, "float32"),
    ("true_divide", ("f", "g"), {}, "float64"),
    ("bitwise_and", ("i", "j"), {}, "int32"),
    ("bitwise_or", ("i", 1), {}, "int64"),
    ("bitwise_xor", ("i", "j"), {}, "int64"),
    ("bitwise_not", ("i",), {}, "int64"),
    ("logical_and", ("f", "g"), {}, "bool"),
    ("logical_or", ("f", "g"), {}, "float32"),
    ("logical_xor", ("i", "j"), {}, "int64"),
    ("logical_not", ("f",), {}, "bool"),
    ("eq", ("f", "g"), {}, "float32"),  # a bool result into a float out
    ("ne", ("i", "j"), {}, "bool"),
    ("lt", ("f", "g"), {}, "bool"),
    ("le", ("f", 1.5), {}, "uint8"),
    ("gt", ("i", "j"), {}, "bool"),
    ("ge", ("f", "g"), {}, "float64"),
    ("clamp", ("f", -1, 1), {}, "float32"),
    ("clamp", ("f",), {"min": "g"}, "float64"),  # tensor bounds: castable, as binary ops
    ("abs", ("i",), {}, "int64"),
    ("neg", ("f",), {}, "float32"),
    ("sqrt", ("p",), {}, "float64"),
    ("exp", ("i",), {}, "float32"),
    ("log", ("p",), {}, "float32"),
    ("sin", ("f",), {}, "float64"),
    ("cos", ("f",), {}, "float32"),
    ("tanh", ("f",), {}, "float32"),
    ("sigmoid", ("i",), {}, "float32"),
    ("log2", ("i",), {}, "float64"),
    ("exp2", ("f",), {}, "float32"),
    ("sign", ("f",), {}, "float32"),
    ("round", ("f",), {}, "float32"),
    ("round", ("f",), {"decimals": 1}, "float32"),
    ("floor", ("f",), {}, "float32"),
    ("ceil", ("f",), {}, "float32"),
    ("sum", ("f", 1), {}, "float64"),
    ("sum", ("f", 1), {}, "int64"),  # out's dtype is computed in: truncated, then summed
    ("sum", ("i", 0, True), {}, "float32"),
    ("sum", ("f", 1), {"dtype": "float64"}, "float64"),
    ("mean", ("f", 1), {}, "float64"),
    ("mean", ("f",), {}, "float32"),
    ("prod", ("f", 1), {}, "float32"),
    ("prod", ("i", 0), {}, "float32"),
    ("cumsum", ("f", 1), {}, "float64"),
    ("cumsum", ("f", 1), {}, "int64"),
    ("cumprod", ("i", 1), {}, "float32"),
    ("amax", ("f", 1), {}, "float32"),
    ("amin", ("i", 0), {}, "int64"),
    ("argmax", ("f", 1), {}, "int64"),
    ("argmin", ("f",), {}, "int64"),
    ("matmul", ("f", "q"), {}, "float32"),
    ("matmul", ("f", "v"), {}, "float32"),
    ("mm", ("f", "q"), {}, "float32"),
    ("bmm", ("b3", "c3"), {}, "float32"),
    ("stack", (["f", "g"], 1), {}, "float64"),
    ("stack", (["i", "j"],), {}, "float32"),
]

# refusals of out's dtype, one per kernel rule: (function, arguments, keywords, out's dtype)
DTYPE_ERRORS = [
    ("maximum", ("f", "g"), {}, "int64"),  # castable: float into integer
    ("sqrt", ("i",), {}, "int64"),
    ("mean", ("f", 1), {}, "int64"),
    ("abs", ("f",), {}, "float64"),  # the input's dtype exactly
    ("sign", ("i",), {}, "float32"),
    ("clamp", ("i", 1.5, 2), {}, "int64"),
    ("bitwise_not", ("i",), {}, "int32"),
    ("matmul", ("f", "q"), {}, "float64"),  # the result's dtype exactly, another message
    ("argmax", ("f", 1), {}, "float32"),
    ("sum", ("f", 1), {"dtype": "float64"}, "float32"),
    ("cumsum", ("f", 1), {"dtype": "float64"}, "float32"),
    ("cumprod", ("f", 1), {}, "bool"),  # no bool accumulator
    ("amax", ("f", 1), {}, "float64"),  # the input's dtype
    ("stack", (["f", "g"],), {}, "int64"),  # cat's TypeError
]


def _value(lib, a, device):
    if isinstance(a, list):
        return [_value(lib, x, device) for x in a]
    if isinstance(a, str) and a in _INPUTS:
        kw = {"device": device} if lib is pg else {}
        return lib.tensor(_INPUTS[a], **kw)
    if isinstance(a, str):
        return getattr(lib, a)  # a dtype name
    return a


def _call(lib, device, name, args, kwargs, out):
    fn = getattr(lib, name)
    kw = {k: _value(lib, v, device) for k, v in kwargs.items()}
    return fn(*(_value(lib, a, device) for a in args), **kw, out=out)


def _torch_result(name, args, kwargs, dt, shape=None):
    """PyTorch's out and result (its shape when ``shape`` is None)."""
    if shape is None:
        ref = getattr(torch, name)(*(_value(torch, a, None) for a in args),
                                   **{k: _value(torch, v, None) for k, v in kwargs.items()})
        shape = tuple(ref.shape)
    out = torch.empty(shape, dtype=getattr(torch, dt))
    return out, _call(torch, None, name, args, kwargs, out)


def _out(dt, shape, device):
    return pg.empty(shape, dtype=getattr(pg, dt), device=device)


@pytest.mark.parametrize("name,args,kwargs,dt", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_out_matches_torch(device, name, args, kwargs, dt):
    t_out, t_res = _torch_result(name, args, kwargs, dt)
    assert t_res is t_out
    out = _out(dt, tuple(t_out.shape), device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # an out of the right shape: no resize
        res = _call(pg, device, name, args, kwargs, out)
    assert res is out
    assert res.dtype == getattr(pg, dt) and tuple(res.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(res.cpu().numpy(), t_out.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,args,kwargs,dt", [
    ("maximum", ("f", "g"), {}, "float32"), ("sum", ("f", 1), {}, "float32"),
    ("matmul", ("f", "q"), {}, "float32"), ("argmax", ("f",), {}, "int64"),
])
def test_out_resized_with_torch_warning(device, name, args, kwargs, dt):
    for shape, warns in (((5,), True), ((0,), False)):
        t_out = torch.empty(shape, dtype=getattr(torch, dt))
        with warnings.catch_warnings(record=True) as t_w:
            warnings.simplefilter("always")
            _call(torch, None, name, args, kwargs, t_out)
        out = _out(dt, shape, device)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = _call(pg, device, name, args, kwargs, out)
        assert res is out and tuple(out.shape) == tuple(t_out.shape)
        np.testing.assert_allclose(out.cpu().numpy(), t_out.numpy(), rtol=1e-5)
        got = [str(x.message) for x in w if issubclass(x.category, UserWarning)]
        # (PyTorch's C++ warnings end with where they were raised)
        expected = [str(x.message).split(" (Triggered internally")[0] for x in t_w
                    if issubclass(x.category, UserWarning)]
        assert bool(expected) == warns and got == expected


@pytest.mark.parametrize("name,args,kwargs,dt", DTYPE_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(DTYPE_ERRORS)])
def test_out_dtype_refused_as_torch(device, name, args, kwargs, dt):
    with pytest.raises(Exception) as t_exc:
        _torch_result(name, args, kwargs, dt, shape=(0,))
    with pytest.raises(t_exc.type, match=f"^{re.escape(str(t_exc.value))}$"):
        _call(pg, device, name, args, kwargs, _out(dt, (0,), device))


def test_out_autograd_rules(device):
    a = pg.tensor(_INPUTS["f"], device=device, requires_grad=True)
    b = pg.tensor(_INPUTS["g"], device=device)
    msg = "functions with out=... arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=re.escape(f"maximum(): {msg}")):
        pg.maximum(a, b, out=pg.empty(2, 3, device=device))
    with pytest.raises(RuntimeError, match=re.escape(f"sum(): {msg}")):
        pg.sum(a, 1, out=pg.empty(2, device=device))
    with pytest.raises(RuntimeError, match=re.escape(f"add(): {msg}")):  # out requiring grad
        pg.add(b, b, out=pg.empty(2, 3, device=device, requires_grad=True))
    # ops without a derivative write even so, as PyTorch's
    assert pg.eq(a, b, out=pg.empty(2, 3, dtype=pg.bool, device=device)).tolist() == \
        [[False] * 3] * 2
    assert pg.argmax(a, 1, out=pg.empty(2, dtype=pg.int64, device=device)).tolist() == [2, 1]
    assert pg.floor_divide(a, b, out=pg.empty(2, 3, device=device)).tolist() == \
        [[0.0, -2.0, -3.0], [0.0, -1.0, -1.0]]
    with pg.no_grad():
        out = pg.empty(2, 3, device=device)
        assert pg.maximum(a, b, out=out) is out and not out.requires_grad


def test_out_on_another_device_refused(device):
    if device == "cpu":
        pytest.skip("needs a second device: the opencl run checks it")
    a = pg.tensor(_INPUTS["f"], device=device)
    for call in (lambda o: pg.maximum(a, a, out=o), lambda o: pg.sqrt(a, out=o),
                 lambda o: pg.sum(a, 1, out=o)):
        with pytest.raises(RuntimeError, match=re.escape(f"Expected out tensor to have device "
                                                         f"{a.device}, but got cpu instead")):
            call(pg.empty(0))


def test_methods_and_out_less_functions_take_no_out(device):
    x = pg.tensor(_INPUTS["f"], device=device)
    tx = torch.tensor(_INPUTS["f"])
    for lib, t in ((torch, tx), (pg, x)):
        kw = {"device": device} if lib is pg else {}
        for call in (lambda o, t=t: t.sum(1, out=o), lambda o, t=t: t.maximum(t, out=o),
                     lambda o, t=t, lib=lib: lib.relu(t, out=o)):
            with pytest.raises(TypeError):
                call(lib.empty(2, **kw))
        with pytest.raises(TypeError):  # out= is keyword-only
            lib.maximum(t, t, lib.empty(2, 3, **kw))


def test_out_calls_are_not_autocast():
    # PyTorch's autocast casts only the functional forms: mm(out=float32) computes in float32
    a = pg.ones(2, 2)
    with pg.autocast("cpu"):
        assert pg.mm(a, a).dtype == pg.bfloat16
        out = pg.empty(2, 2)
        assert pg.mm(a, a, out=out) is out and out.dtype == pg.float32
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                               "c10::BFloat16 instead"):
            pg.mm(a, a, out=pg.empty(2, 2, dtype=pg.bfloat16))
