"""``out=`` on the top-level functions, against PyTorch: the values and dtype written, the returned
tensor being ``out`` itself, the resize of an ``out`` of another shape (with PyTorch's warning
unless it was empty), and PyTorch's error for each refusal: a dtype the op cannot write into (its
kernel's rule and message), autograd, another device; and Tensor methods taking no ``out=``.
Ops returning a pair (``max(dim)``, ``sort``, ``topk`` ...) take ``out=(values, indices)``."""
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


# ------------------------------------------------------------------- out=(values, indices)
# (function, positional arguments, keywords, out's dtypes): ops returning a pair
PAIR_CASES = [
    ("max", ("f", 1), {}, ("float32", "int64")),
    ("min", ("i", 0), {"keepdim": True}, ("int64", "int64")),
    ("sort", ("f", 1), {"descending": True}, ("float32", "int64")),
    ("topk", ("f", 2), {}, ("float32", "int64")),
    ("kthvalue", ("f", 2, 1), {}, ("float32", "int64")),
    ("mode", ("i", 1), {}, ("int64", "int64")),
    ("median", ("f", 1), {}, ("float32", "int64")),
    ("nanmedian", ("f", 0), {"keepdim": True}, ("float32", "int64")),
    ("cummax", ("f", 1), {}, ("float32", "int64")),
    ("cummin", ("i", 0), {}, ("int64", "int64")),
    ("aminmax", ("f",), {"dim": 1}, ("float32", "float32")),
    ("aminmax", ("i",), {}, ("int64", "int64")),
]
_PAIR_IDS = [f"{c[0]}-{i}" for i, c in enumerate(PAIR_CASES)]


def _pair(lib, dts, shape, device):
    kw = {"device": device} if lib is pg else {}
    return tuple(lib.empty(shape, dtype=getattr(lib, dt), **kw) for dt in dts)


def _record(fn):
    """``fn()``'s result and the UserWarnings it gave (PyTorch's C++ ones without their origin)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = fn()
    return res, [str(x.message).split(" (Triggered internally")[0] for x in w
                 if issubclass(x.category, UserWarning)]


@pytest.mark.parametrize("name,args,kwargs,dts", PAIR_CASES, ids=_PAIR_IDS)
def test_out_pair_matches_torch(device, name, args, kwargs, dts):
    for shape in ((0,), (7,)):  # an empty out resized silently, a wrong-sized one with a warning
        t_out = _pair(torch, dts, shape, None)
        t_res, t_warn = _record(lambda o=t_out: _call(torch, None, name, args, kwargs, o))
        out = _pair(pg, dts, shape, device)
        res, warn = _record(lambda o=out: _call(pg, device, name, args, kwargs, list(o)))
        assert res[0] is out[0] and res[1] is out[1]
        assert res._fields == type(t_res).__match_args__  # (values, indices) or (min, max)
        assert warn == t_warn and len(warn) == (2 if shape == (7,) else 0)
        for a, b in zip(out, t_out):
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


@pytest.mark.parametrize("name,args,kwargs,dts", PAIR_CASES, ids=_PAIR_IDS)
def test_out_pair_dtype_and_arguments_refused_as_torch(device, name, args, kwargs, dts):
    wrong = {"float32": "float64", "int64": "int32"}
    for k in (0, 1):  # values, then indices, of another dtype
        bad = tuple(wrong[d] if i == k else d for i, d in enumerate(dts))
        with pytest.raises(RuntimeError) as t_exc:
            _call(torch, None, name, args, kwargs, _pair(torch, bad, (0,), None))
        with pytest.raises(RuntimeError, match=f"^{re.escape(str(t_exc.value))}$"):
            _call(pg, device, name, args, kwargs, _pair(pg, bad, (0,), device))
    for lib, dev in ((torch, None), (pg, device)):
        three = _pair(lib, dts + dts[:1], (0,), dev)
        with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
            _call(lib, dev, name, args, kwargs, three)
        with pytest.raises(TypeError):  # one tensor: not a tuple
            _call(lib, dev, name, args, kwargs, _pair(lib, dts, (0,), dev)[0])


def test_out_pair_autograd_rules(device):
    x = pg.tensor(_INPUTS["f"], device=device, requires_grad=True)
    msg = "functions with out=... arguments don't support automatic differentiation"
    for name, call in (("max", lambda o: pg.max(x, 1, out=o)), ("sort", lambda o: pg.sort(x, out=o)),
                       ("cummin", lambda o: pg.cummin(x, 0, out=o))):
        with pytest.raises(RuntimeError, match=re.escape(f"{name}(): {msg}")):
            call((pg.empty(0, device=device), pg.empty(0, dtype=pg.int64, device=device)))
    y = pg.tensor(_INPUTS["f"], device=device)
    with pytest.raises(RuntimeError, match=re.escape(f"topk(): {msg}")):  # values out requiring grad
        pg.topk(y, 1, out=(pg.empty(0, device=device, requires_grad=True),
                           pg.empty(0, dtype=pg.int64, device=device)))
    with pg.no_grad():
        v, i = pg.empty(0, device=device), pg.empty(0, dtype=pg.int64, device=device)
        assert pg.max(x, 1, out=(v, i)).values is v and not v.requires_grad
        assert i.tolist() == [2, 1]


def test_out_of_max_min_over_all_elements_and_with_another_tensor(device):
    for dt in ("float32", "float64", "float16", "int64", "bool"):
        for name, args in (("max", ("f",)), ("min", ("i",)), ("max", ("f", "g")),
                           ("min", ("i", "j"))):
            try:
                t_res = _call(torch, None, name, args, {}, torch.empty(0, dtype=getattr(torch, dt)))
            except RuntimeError as exc:
                with pytest.raises(RuntimeError, match=f"^{re.escape(str(exc))}$"):
                    _call(pg, device, name, args, {}, _out(dt, (0,), device))
                continue
            out = _out(dt, (0,), device)
            assert _call(pg, device, name, args, {}, out) is out
            assert out.dtype == getattr(pg, dt) and tuple(out.shape) == tuple(t_res.shape)
            np.testing.assert_array_equal(out.float().cpu().numpy(), t_res.float().numpy())


def test_median_of_all_elements_takes_no_out(device):
    for lib, dev in ((torch, None), (pg, device)):
        x = _value(lib, "f", dev)
        for fn in (lib.median, lib.nanmedian):
            with pytest.raises(TypeError):
                fn(x, out=_out("float32", (0,), device) if lib is pg else torch.empty(0))


# ------------------------------------------------------------------- where
def test_where_out_matches_torch(device):
    cond = np.array([[True, False, True], [False, True, False]])
    for lib, dev in ((torch, None), (pg, device)):
        kw = {"device": dev} if lib is pg else {}
        c, x, y = lib.tensor(cond, **kw), _value(lib, "f", dev), _value(lib, "g", dev)
        out = lib.empty(2, 3, **kw)
        assert lib.where(c, x, y, out=out) is out
        np.testing.assert_array_equal(out.cpu().numpy() if lib is pg else out.numpy(),
                                      np.where(cond, _INPUTS["f"], _INPUTS["g"]))
        out = lib.empty(0, **kw)  # broadcast condition, an empty out resized without a warning
        _, warn = _record(lambda w=lib.where, a=(c[0], x, y), o=out: w(*a, out=o))
        assert tuple(out.shape) == (2, 3) and not warn
    # out's dtype must be the result's (not castable into); numbers and no values take no out
    for dt, args in (("float64", ("f", "g")), ("int64", ("f", "g")), ("float32", ("i", "j")),
                     ("bool", ("f", "g"))):
        with pytest.raises(RuntimeError) as t_exc:
            torch.where(torch.tensor(cond), *(_value(torch, a, None) for a in args),
                        out=torch.empty(0, dtype=getattr(torch, dt)))
        with pytest.raises(RuntimeError, match=f"^{re.escape(str(t_exc.value))}$"):
            pg.where(pg.tensor(cond, device=device), *(_value(pg, a, device) for a in args),
                     out=_out(dt, (0,), device))
    for lib, dev in ((torch, None), (pg, device)):
        kw = {"device": dev} if lib is pg else {}
        c, x = lib.tensor(cond, **kw), _value(lib, "f", dev)
        for args in ((c, x, 0.0), (c, 1.0, x), (c,)):
            with pytest.raises(TypeError):
                lib.where(*args, out=lib.empty(0, **kw))
    x = pg.tensor(_INPUTS["f"], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("where(): functions with out=... arguments "
                                                     "don't support automatic differentiation")):
        pg.where(pg.tensor(cond, device=device), x, x, out=pg.empty(0, device=device))
