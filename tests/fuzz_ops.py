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

__all__ = ["OPS", "NAMESPACES", "GRAD_UNARY", "GRAD_BINARY", "INPLACE_EDITS", "Arr", "call_strategy",
           "arr_strategy", "build"]

DTYPES = ("float32", "float64", "int64", "bool")
# drawn less often: stored as float32 data and cast by both libraries (numpy has neither type)
LOW_PRECISION = ("float16", "bfloat16")
LAYOUTS = ("contig", "T", "step", "expand")


@dataclass(frozen=True)
class Arr:
    """One tensor argument: its numpy values, how the tensor is laid out in memory, and the
    16-bit float type it is cast to after it is made (``cast``), if any."""

    data: np.ndarray
    layout: str = "contig"
    cast: str | None = None

    def __repr__(self) -> str:
        kind = self.cast or str(self.data.dtype)
        return f"Arr({kind}{list(self.data.shape)}, {self.layout}, {self.data.tolist()!r})"


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
    if a.cast is not None:
        t = t.to(getattr(m, a.cast))
    if requires_grad:
        t.requires_grad_(True)
    return t


# ----------------------------------------------------------------------------- strategies
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
SPECIALS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, -1e-30)


@st.composite
def arr_strategy(draw: Any, shape: tuple | None = None, dtype: str | None = None) -> Arr:
    shape = draw(shapes) if shape is None else shape
    cast = None
    if dtype is None:
        dtype = draw(st.sampled_from(DTYPES))
        if dtype == "float32" and draw(st.integers(0, 3)) == 0:  # now and then, 16 bits
            cast = draw(st.sampled_from(LOW_PRECISION))
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
    return Arr(data, layout, cast)


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


def _filled(m: Any, like: Any, value: float) -> Any:
    """A 1-element tensor of ``value`` with ``like``'s dtype and device (a broadcast input)."""
    return m.full((1,), value, dtype=like.dtype, device=like.device)

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
    # the add* family: beta == 0 ignores the input (NaN included)
    "addmm_beta": _op("mm", _kw(beta=st.sampled_from([0, 0.5, 1])),
                      lambda m, F, x, y, beta=0: m.addmm(_filled(m, x, math.nan), x, y, beta=beta)),
    "addmv_beta0": _op("mm", None, lambda m, F, x, y: m.addmv(_filled(m, x, math.inf), x, y, beta=0)),
}

# linalg: square matrices (kind "sq": (n, n) or a batch of them, n = 0..3, sometimes not square)
_ORDS = st.sampled_from([0, 0.5, 1, 2, 3, math.inf, -math.inf, -1])
LINALG: dict[str, tuple] = {
    "linalg.inv": _op("sq", None, lambda m, F, a: m.linalg.inv(a)),
    "linalg.det": _op("sq", None, lambda m, F, a: m.linalg.det(a)),
    "linalg.slogdet": _op("sq", None, lambda m, F, a: tuple(m.linalg.slogdet(a))),
    "linalg.solve": _op("sq", None, lambda m, F, a: m.linalg.solve(a, a.sum(-1))),
    "linalg.cholesky": _op("sq", _kw(upper=st.booleans()), lambda m, F, a, **k: m.linalg.cholesky(
        a @ a.mT + m.eye(a.shape[-1], dtype=a.dtype, device=a.device), **k)),
    "linalg.vector_norm": _op("u", _kw(ord=_ORDS, dim=maybe_dim),
                              lambda m, F, x, **k: m.linalg.vector_norm(x, **k)),
    "linalg.matrix_norm": _op("sq", _kw(ord=st.sampled_from(["fro", 1, -1, math.inf, -math.inf])),
                              lambda m, F, a, **k: m.linalg.matrix_norm(a, **k)),
    "linalg.matrix_power": _op("sq", _kw(n=st.integers(-1, 3)),
                               lambda m, F, a, n=2: m.linalg.matrix_power(a, n)),
    "linalg.matrix_exp": _op("sq", None, lambda m, F, a: m.linalg.matrix_exp(a * 0.25)),
    "linalg.lu_factor": _op("sq", None, lambda m, F, a: tuple(m.linalg.lu_factor(a))),
    "linalg.cross": _op("b", None, lambda m, F, x, y: m.linalg.cross(x, y)),
}
# special functions, at their poles and edges as often as elsewhere
SPECIAL: dict[str, tuple] = {
    "special.logit": _op("u", _kw(eps=st.sampled_from([None, 0.0, 0.1])),
                         lambda m, F, x, **k: m.special.logit(x.sigmoid(), **k)),
    "special.erfc": _op("u", None, lambda m, F, x: m.special.erfc(x * 3)),
    "special.erfinv": _op("u", None, lambda m, F, x: m.special.erfinv(x.tanh())),
    "special.xlogy": _op("b", None, lambda m, F, x, y: m.special.xlogy(x, y)),
    "special.expit": _op("u", None, lambda m, F, x: m.special.expit(x)),
    "special.ndtr": _op("u", None, lambda m, F, x: m.special.ndtr(x)),
    "special.i0": _op("u", None, lambda m, F, x: m.special.i0(x)),
    "special.entr": _op("u", None, lambda m, F, x: m.special.entr(x)),
    "special.sinc": _op("u", None, lambda m, F, x: m.special.sinc(x)),
    "lgamma": _op("u", None, lambda m, F, x: m.lgamma(x.round())),
    "digamma": _op("u", None, lambda m, F, x: m.digamma(x.round())),
}
# nn.functional: piecewise activations at their kinks, losses with broadcast weights, padding
_ACT = ("hardtanh", "relu6", "hardsigmoid", "hardswish", "silu", "elu", "selu", "softsign",
        "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "leaky_relu", "mish", "gelu")
def _activation(name: str) -> Callable:
    return lambda m, F, x: getattr(F, name)(x.round())  # rounded: the kinks are integers


FUNCTIONAL: dict[str, tuple] = {
    **{f"F.{n}": _op("u", None, _activation(n)) for n in _ACT},
    "F.softplus": _op("u", _kw(beta=st.sampled_from([1, 2]), threshold=st.sampled_from([1, 20])),
                      lambda m, F, x, **k: F.softplus(x, **k)),
    "F.gelu_tanh": _op("u", None, lambda m, F, x: F.gelu(x, approximate="tanh")),
    "F.threshold": _op("u", None, lambda m, F, x: F.threshold(x.round(), 1.0, -2.0)),
    "F.layer_norm": _op("u", None, lambda m, F, x: F.layer_norm(x, x.shape[-1:])),
    "F.normalize": _op("u", _kw(dim=dims), lambda m, F, x, dim=-1: F.normalize(x, dim=dim)),
    "F.bce_with_logits": _op("b", None, lambda m, F, x, y: F.binary_cross_entropy_with_logits(
        x, y.sigmoid(), pos_weight=y.abs()[..., :1] if y.dim() else None)),
    "F.smooth_l1_loss": _op("b", None, lambda m, F, x, y: F.smooth_l1_loss(x, y)),
    "F.huber_loss": _op("b", None, lambda m, F, x, y: F.huber_loss(x, y, delta=0.5)),
    "F.kl_div": _op("b", _kw(log_target=st.booleans()),
                    lambda m, F, x, y, **k: F.kl_div(x, y, reduction="batchmean", **k)),
    "F.pad": _op("u", _kw(mode=st.sampled_from(["constant", "reflect", "replicate", "circular"])),
                 lambda m, F, x, mode="constant": F.pad(x, (1, 1), mode=mode)),
    "F.cosine_similarity": _op("b", None, lambda m, F, x, y: F.cosine_similarity(x, y, dim=-1)),
    "F.glu": _op("u", _kw(dim=dims), lambda m, F, x, dim=-1: F.glu(x, dim)),
}
# distributions: log-probabilities and entropies with broadcast parameters
DISTRIBUTIONS: dict[str, tuple] = {
    "Normal.log_prob": _op("b", None, lambda m, F, x, y: m.distributions.Normal(
        x, y.abs() + 0.5, validate_args=False).log_prob(y)),
    "Normal.entropy": _op("u", None, lambda m, F, x: m.distributions.Normal(
        0.0, x.abs() + 0.5, validate_args=False).entropy()),
    "Bernoulli.log_prob": _op("b", None, lambda m, F, x, y: m.distributions.Bernoulli(
        logits=x, validate_args=False).log_prob((y > 0).to(x.dtype))),
    "Exponential.log_prob": _op("b", None, lambda m, F, x, y: m.distributions.Exponential(
        x.abs() + 0.1, validate_args=False).log_prob(y.abs())),
    "Laplace.cdf": _op("b", None, lambda m, F, x, y: m.distributions.Laplace(
        x, 1.5, validate_args=False).cdf(y)),
    "Categorical.log_prob": _op("u", None, lambda m, F, x: m.distributions.Categorical(
        logits=x, validate_args=False).log_prob(m.zeros(x.shape[:-1], dtype=m.int64, device=x.device))),
}
NAMESPACES = {"core": tuple(OPS), "linalg": tuple(LINALG), "special": tuple(SPECIAL),
              "functional": tuple(FUNCTIONAL), "distributions": tuple(DISTRIBUTIONS)}
OPS.update(LINALG)
OPS.update(SPECIAL)
OPS.update(FUNCTIONAL)
OPS.update(DISTRIBUTIONS)


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
    elif kind == "sq":
        shape = draw(st.sampled_from([(0, 0), (1, 1), (2, 2), (3, 3), (2, 3, 3), (2, 3), (3,)]))
        arrs = [draw(arr_strategy(shape=shape, dtype=draw(st.sampled_from(
            ["float32", "float64", "float64", "int64"]))))]
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
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x.round()),
    "relu6": lambda m, x: m.nn.functional.relu6(x * 3),
    "hardswish": lambda m, x: m.nn.functional.hardswish(x.round() * 3),
    "logit": lambda m, x: m.special.logit(x.sigmoid(), 0.1),
    "erfc": lambda m, x: m.special.erfc(x),
    "norm3": lambda m, x: m.linalg.vector_norm(x, 3, dim=-1, keepdim=True) * x,
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
