"""The op list and the argument strategies of the differential fuzzer (``test_fuzz_differential.py``).

Every op is written once against a library ``m`` (``portagrad`` or ``torch``) and its
``nn.functional`` ``F``, so one random call runs unchanged on both. Arguments are drawn to be
often invalid: empty and 0-d shapes, shapes that do not broadcast, dims out of range, bool/int
inputs to float-only ops, NaN/inf values, non-contiguous, transposed and expanded (overlapping)
views. Nothing here needs torch.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["OPS", "GRAD_UNARY", "GRAD_BINARY", "INPLACE_EDITS", "Arr", "call_strategy", "arr_strategy",
           "build"]

DTYPES = ("float32", "float64", "int64", "bool")
LAYOUTS = ("contig", "T", "step", "expand")


@dataclass(frozen=True)
class Arr:
    """One tensor argument: its numpy values and how the tensor is laid out in memory."""

    data: np.ndarray
    layout: str = "contig"

    def __repr__(self) -> str:
        return f"Arr({self.data.dtype}{list(self.data.shape)}, {self.layout}, {self.data.tolist()!r})"


def build(m: Any, a: Arr, device: Any = None, requires_grad: bool = False) -> Any:
    """The tensor of ``a`` in library ``m`` (``device`` only for portagrad), with ``a.layout``."""
    def mk(x: np.ndarray) -> Any:
        x = np.ascontiguousarray(x)
        if device is None:  # torch: CPU, and a copy so the caller's array is never written to
            return m.from_numpy(x.copy())
        return m.tensor(x, device=device)

    x = a.data
    if a.layout == "T" and x.ndim >= 2:
        t = mk(np.swapaxes(x, -1, -2)).transpose(-1, -2)
    elif a.layout == "step" and x.ndim >= 1:
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
        big[..., ::2] = x
        t = mk(big)[..., ::2]
    elif a.layout == "expand" and x.ndim >= 1 and x.shape[0] > 1:
        t = mk(x[:1]).expand(*x.shape)  # x's rows are all equal (arr_strategy makes them so)
    else:
        t = mk(x)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ----------------------------------------------------------------------------- strategies
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
SPECIALS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, -1e-30)


@st.composite
def arr_strategy(draw: Any, shape: tuple | None = None, dtype: str | None = None) -> Arr:
    shape = draw(shapes) if shape is None else shape
    dtype = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = math.prod(shape)
    if dtype == "bool":
        data = rng.random(shape) > 0.5
    elif dtype == "int64":
        data = rng.integers(-4, 5, shape)
    else:
        data = rng.normal(0, 2, shape)
        if n and draw(st.integers(0, 3)) == 0:  # NaN, inf, signed zeros, huge and tiny values
            flat = data.reshape(-1)
            for i in rng.integers(0, n, draw(st.integers(1, 3))):
                flat[i] = SPECIALS[int(rng.integers(0, len(SPECIALS)))]
    data = np.asarray(data, dtype=dtype)
    layout = draw(st.sampled_from(LAYOUTS))
    if layout == "expand" and data.ndim >= 1 and data.shape[0] > 1:
        data = np.ascontiguousarray(np.broadcast_to(data[:1], data.shape))
    return Arr(data, layout)


def _bshape(draw: Any, base: tuple) -> tuple:
    """Usually a shape that broadcasts with ``base``, sometimes anything."""
    if draw(st.integers(0, 4)) == 0:
        return draw(shapes)
    s = [draw(st.sampled_from([n, 1])) for n in base]
    return tuple(s[draw(st.integers(0, len(s))):])


dims = st.integers(-4, 4)
maybe_dim = st.one_of(st.none(), dims)


# ----------------------------------------------------------------------------- the ops
# name -> (tensor-argument kind, kwargs strategy or None, fn(m, F, *tensors, **kw))
# kinds: "u" one tensor, "b" two broadcastable, "mm" two matmul operands, "idx" tensor + index,
#        "loss" input + target, "t3" three tensors.
def _op(kind: str, kw: Any, fn: Callable) -> tuple:
    return (kind, kw, fn)


def _kw(**strats: Any) -> Any:
    return st.fixed_dictionaries({}, optional=strats)


def _unary(n: str) -> Callable:
    return lambda m, F, x: getattr(m, n)(x)


def _binary(n: str) -> Callable:
    return lambda m, F, x, y: getattr(m, n)(x, y)


_U = {n: _op("u", None, _unary(n)) for n in (
    "neg", "abs", "exp", "log", "sqrt", "sin", "tanh", "sigmoid", "floor", "round", "sign",
    "reciprocal", "isnan", "isinf", "logical_not", "relu", "square", "trunc")}
_B = {n: _op("b", None, _binary(n)) for n in (
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
    "eq", "lt", "ge", "logical_and", "bitwise_and", "atan2")}

_RED = _kw(dim=maybe_dim, keepdim=st.booleans())

OPS: dict[str, tuple] = {
    **_U, **_B,
    "sum": _op("u", _RED, lambda m, F, x, **k: x.sum(**k) if k.get("dim") is not None or not k
               else x.sum()),
    "mean": _op("u", _RED, lambda m, F, x, **k: x.mean(**k) if k.get("dim") is not None else x.mean()),
    "prod_dim": _op("u", _kw(dim=dims, keepdim=st.booleans()),
                    lambda m, F, x, **k: x.prod(k.pop("dim", 0), **k)),
    "amax": _op("u", _kw(dim=dims, keepdim=st.booleans()), lambda m, F, x, **k: m.amax(x, **k)),
    "max_dim": _op("u", _kw(keepdim=st.booleans()), lambda m, F, x, dim=0, **k: m.max(x, 0, **k)),
    "min_all": _op("u", None, lambda m, F, x: x.min()),
    "argmax": _op("u", _RED, lambda m, F, x, **k: m.argmax(x, **k)),
    "std": _op("u", _kw(dim=dims, keepdim=st.booleans()), lambda m, F, x, **k: x.std(**k)),
    "var_nocorr": _op("u", _kw(dim=dims), lambda m, F, x, **k: x.var(correction=0, **k)),
    "logsumexp": _op("u", _kw(keepdim=st.booleans()), lambda m, F, x, **k: m.logsumexp(x, -1, **k)),
    "cumsum": _op("u", _kw(dim=dims), lambda m, F, x, **k: m.cumsum(x, k.get("dim", 0))),
    "all": _op("u", None, lambda m, F, x: x.all()),
    "any_dim": _op("u", _kw(dim=dims), lambda m, F, x, **k: x.any(k.get("dim", 0))),
    "norm": _op("u", None, lambda m, F, x: x.norm()),
    "softmax": _op("u", _kw(dim=dims), lambda m, F, x, **k: F.softmax(x, k.get("dim", -1))),
    "log_softmax": _op("u", _kw(dim=dims), lambda m, F, x, **k: F.log_softmax(x, k.get("dim", -1))),
    "sort": _op("u", _kw(dim=dims, descending=st.booleans()),
                lambda m, F, x, **k: m.sort(x, stable=True, **k)),
    "topk": _op("u", _kw(k=st.integers(-1, 4), dim=dims),
                lambda m, F, x, **k: m.topk(x, k.pop("k", 1), **k).values),
    "clamp": _op("u", _kw(min=st.sampled_from([-1, 0.5, None])),
                 lambda m, F, x, **k: m.clamp(x, k.get("min", -1), 1)),
    "where": _op("t3", None, lambda m, F, c, x, y: m.where(c, x, y)),
    # shape ops
    "reshape": _op("u", _kw(s=st.sampled_from([(-1,), (2, -1), (0,), (3, 4), (-1, -1), ()])),
                   lambda m, F, x, s=(-1,): x.reshape(s)),
    "view": _op("u", _kw(s=st.sampled_from([(-1,), (2, -1), (4,)])), lambda m, F, x, s=(-1,): x.view(*s)),
    "transpose": _op("u", _kw(a=dims, b=dims), lambda m, F, x, a=0, b=-1: x.transpose(a, b)),
    "permute_rev": _op("u", None, lambda m, F, x: x.permute(*reversed(range(x.dim())))),
    "squeeze": _op("u", _kw(dim=dims), lambda m, F, x, **k: x.squeeze(k["dim"]) if k else x.squeeze()),
    "unsqueeze": _op("u", _kw(dim=dims), lambda m, F, x, dim=0: x.unsqueeze(dim)),
    "flatten": _op("u", _kw(a=dims), lambda m, F, x, a=0: x.flatten(a)),
    "expand": _op("u", _kw(s=st.sampled_from([(2, -1), (3, 4), (-1,), (2, 3, 4)])),
                  lambda m, F, x, s=(2, -1): x.expand(*s)),
    "cat": _op("b", _kw(dim=dims), lambda m, F, x, y, dim=0: m.cat([x, y], dim)),
    "stack": _op("b", _kw(dim=dims), lambda m, F, x, y, dim=0: m.stack([x, y], dim)),
    "split": _op("u", _kw(n=st.integers(0, 3), dim=dims), lambda m, F, x, n=1, dim=0: x.split(n, dim)),
    "chunk": _op("u", _kw(n=st.integers(0, 3), dim=dims), lambda m, F, x, n=2, dim=0: x.chunk(n, dim)),
    "flip": _op("u", _kw(dim=dims), lambda m, F, x, dim=0: m.flip(x, [dim])),
    "tril": _op("u", _kw(d=st.integers(-2, 2)), lambda m, F, x, d=0: m.tril(x, d)),
    "contiguous": _op("u", None, lambda m, F, x: x.contiguous()),
    # indexing
    "getitem_int": _op("u", _kw(i=st.integers(-5, 5)), lambda m, F, x, i=0: x[i]),
    "getitem_slice": _op("u", _kw(a=st.integers(-5, 5), s=st.integers(1, 3)),
                         lambda m, F, x, a=0, s=1: x[a::s]),
    "getitem_bool": _op("b", None, lambda m, F, x, y: x[y]),
    "index_select": _op("idx", _kw(dim=dims), lambda m, F, x, i, dim=0: m.index_select(x, dim, i)),
    "gather": _op("idx", _kw(dim=dims), lambda m, F, x, i, dim=0: m.gather(x, dim, i)),
    "take_along_dim": _op("idx", _kw(dim=dims), lambda m, F, x, i, dim=0: m.take_along_dim(x, i, dim)),
    "masked_fill": _op("b", None, lambda m, F, x, y: x.masked_fill(y, 1.5)),
    # matmul family
    "matmul": _op("mm", None, lambda m, F, x, y: m.matmul(x, y)),
    "mm": _op("mm", None, lambda m, F, x, y: m.mm(x, y)),
    "bmm": _op("mm", None, lambda m, F, x, y: m.bmm(x, y)),
    "mv": _op("mm", None, lambda m, F, x, y: m.mv(x, y)),
    "dot": _op("mm", None, lambda m, F, x, y: m.dot(x, y)),
    "outer": _op("mm", None, lambda m, F, x, y: m.outer(x, y)),
    "linear": _op("mm", None, lambda m, F, x, y: F.linear(x, y)),
    # losses
    "mse_loss": _op("b", _kw(reduction=st.sampled_from(["mean", "sum", "none"])),
                    lambda m, F, x, y, **k: F.mse_loss(x, y, **k)),
    "l1_loss": _op("b", None, lambda m, F, x, y: F.l1_loss(x, y)),
    "cross_entropy": _op("loss", _kw(reduction=st.sampled_from(["mean", "sum", "none"])),
                         lambda m, F, x, t, **k: F.cross_entropy(x, t, **k)),
    "nll_loss": _op("loss", None, lambda m, F, x, t: F.nll_loss(x, t)),
    "bce": _op("b", None, lambda m, F, x, y: F.binary_cross_entropy(m.sigmoid(x), y)),
    # in place (on expanded inputs: the overlapping-write error)
    "add_": _op("b", None, lambda m, F, x, y: x.add_(y)),
    "mul_": _op("b", None, lambda m, F, x, y: x.mul_(y)),
    "clamp_": _op("u", None, lambda m, F, x: x.clamp_(-1, 1)),
    "copy_": _op("b", None, lambda m, F, x, y: x.copy_(y)),
}


@st.composite
def call_strategy(draw: Any, names: tuple | None = None) -> tuple[str, list[Arr], dict]:
    """One random call: (op name, tensor arguments, keyword arguments)."""
    name = draw(st.sampled_from(sorted(OPS) if names is None else names))
    kind, kws, _ = OPS[name]
    a = draw(arr_strategy())
    if kind == "u":
        arrs = [a]
    elif kind == "b":
        arrs = [a, draw(arr_strategy(shape=_bshape(draw, a.data.shape)))]
    elif kind == "t3":
        arrs = [draw(arr_strategy(dtype="bool")) if draw(st.booleans()) else a]
        s = arrs[0].data.shape
        arrs += [draw(arr_strategy(shape=_bshape(draw, s))), draw(arr_strategy(shape=_bshape(draw, s)))]
    elif kind == "mm":
        s = a.data.shape
        k = s[-1] if s and draw(st.integers(0, 4)) else draw(st.integers(0, 3))
        other = draw(st.sampled_from([(k,), (k, 2), (k, 0), (2, k), (s[0] if s else 1, k, 3)]))
        arrs = [a, draw(arr_strategy(shape=other, dtype=draw(st.sampled_from(
            [str(a.data.dtype)] * 3 + list(DTYPES)))))]
    elif kind == "idx":
        n = max(a.data.shape, default=1)
        ishape = draw(st.sampled_from([(2,), a.data.shape, (0,), ()]))
        idx = np.random.default_rng(draw(st.integers(0, 99))).integers(-1, n + 1, ishape)
        if draw(st.integers(0, 2)):  # mostly in range
            idx = np.clip(idx, 0, max(min(a.data.shape, default=1) - 1, 0))
        arrs = [a, Arr(np.asarray(idx, dtype=draw(st.sampled_from(["int64", "int64", "float32"]))))]
    else:  # loss: logits (N, C) or (C,), targets in [-1, C]
        c = draw(st.integers(0, 4))
        n = draw(st.sampled_from([None, 0, 1, 3]))
        x = draw(arr_strategy(shape=(c,) if n is None else (n, c), dtype=draw(st.sampled_from(
            ["float32", "float32", "float64", "int64"]))))
        t = np.random.default_rng(draw(st.integers(0, 99))).integers(0 if draw(st.integers(0, 3)) else -1,
                                                                     max(c, 1) + 1, () if n is None else (n,))
        if draw(st.integers(0, 3)):
            t = np.clip(t, 0, max(c - 1, 0))
        arrs = [x, Arr(np.asarray(t, dtype="int64"))]
    kw = draw(kws) if kws is not None else {}
    return name, arrs, kw


# ----------------------------------------------------------------------------- autograd programs
GRAD_UNARY: dict[str, Callable] = {
    "exp": lambda m, x: x.exp(), "sin": lambda m, x: x.sin(), "tanh": lambda m, x: x.tanh(),
    "sigmoid": lambda m, x: x.sigmoid(), "relu": lambda m, x: x.relu(), "square": lambda m, x: x * x,
    "pow3": lambda m, x: x.pow(3), "sum0k": lambda m, x: x.sum(0, keepdim=True),
    "softmax": lambda m, x: m.nn.functional.softmax(x, -1), "t": lambda m, x: x.t(),
    "view_flat": lambda m, x: x.reshape(-1)[: x.numel()].reshape(x.shape), "abs": lambda m, x: x.abs(),
    "slice": lambda m, x: x[:, 1:],
}
GRAD_BINARY: dict[str, Callable] = {
    "add": lambda m, x, w: x + w, "mul": lambda m, x, w: x * w, "div": lambda m, x, w: x / (w * w + 1),
    "matmul": lambda m, x, w: x @ w.t(), "maximum": lambda m, x, w: m.maximum(x, w),
}
# in-place edits of an intermediate result; the version counter decides whether backward may run
INPLACE_EDITS: dict[str, Callable] = {
    "mul_": lambda x: x.mul_(2), "add_": lambda x: x.add_(1), "exp_": lambda x: x.exp_(),
    "zero_row": lambda x: x[0].zero_(), "relu_": lambda x: x.relu_(),
}
