"""Differential fuzzing: random, often invalid, op calls and small autograd programs, run on
portagrad and compared, on every test device (the ``device`` fixture).

* ``test_fuzz_vs_torch`` / ``test_fuzz_autograd_vs_torch``: against PyTorch (CPU) on the same numpy
  data: the same dtype, shape and values (NaN positions equal; tolerance by dtype), or an error of
  the same family on both (RuntimeError / IndexError / ValueError / TypeError); gradients of random
  chains of ops, sometimes with an in-place edit of an intermediate, equal, or both refuse to run
  backward. torch is optional: these skip, saying why, when it is not installed (CI has no torch).
* ``test_fuzz_device_vs_cpu``: always runs; the same calls on ``cpu`` and on the device under test
  must agree with each other (values, or the same error class), and every error must be one of the
  four families above, raised from portagrad's own code: never a raw numpy, pyopencl,
  ZeroDivisionError or OverflowError leaking through.

Calls and arguments come from ``fuzz_ops.py``. Runs are derandomized (the same examples every run)
with a small budget; ``PORTAGRAD_FUZZ_EXAMPLES=5000`` runs more (and random) examples locally.
``PORTAGRAD_FUZZ_NO_TORCH=1`` behaves as if torch were not installed (the CI path);
``PORTAGRAD_FUZZ_NAMESPACE=linalg`` (``core``, ``special``, ``functional``, ``distributions``) draws
only that namespace's ops, and ``PORTAGRAD_FUZZ_SURVEY=1`` lists the ops that disagree instead of
failing.

Discrepancies found and not yet fixed are listed in ``KNOWN``: a call of such an op that disagrees is
reported as an expected failure (xfail-like note) instead of failing; agreeing calls are still checked.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import portagrad as pg
import portagrad.nn.functional as pgF

from fuzz_ops import (GRAD_BINARY, GRAD_UNARY, INPLACE_EDITS, NAMESPACES, OPS, Arr, arr_strategy, build,
                      call_strategy)

torch: Any = None
torchF: Any = None
if not os.environ.get("PORTAGRAD_FUZZ_NO_TORCH"):
    try:
        import torch
        import torch.nn.functional as torchF
    except ImportError:  # optional: the device-vs-cpu part below still runs
        torch = None

needs_torch = pytest.mark.skipif(
    torch is None, reason="torch is not installed (pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu), or PORTAGRAD_FUZZ_NO_TORCH is set")

_LONG = int(os.environ.get("PORTAGRAD_FUZZ_EXAMPLES", "0"))
# PORTAGRAD_FUZZ_NAMESPACE=linalg (core, special, functional, distributions): draw only its ops
_NAMES = NAMESPACES[os.environ["PORTAGRAD_FUZZ_NAMESPACE"]] \
    if os.environ.get("PORTAGRAD_FUZZ_NAMESPACE") else None
FUZZ = settings(max_examples=_LONG or 150, derandomize=not _LONG, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
FUZZ_GRAD = settings(FUZZ, max_examples=_LONG or 60)
FUZZ_CI = settings(FUZZ, max_examples=_LONG or 400)  # the torch-free part: what CI runs

FAMILIES = (IndexError, ValueError, TypeError, RuntimeError)  # most specific first: see _family

# (op, reason): calls of these ops that disagree with torch are noted, not failed. Each names the
# discrepancy the fuzzer found; remove the entry when it is fixed (the test then checks it again).
# Reproducers are in the comments (Arr(dtype[shape], layout, values)).
KNOWN: dict[str, str] = {
    # errors where torch gives a result
    "pow": "pow(int64 -3, int64 tensor -2) raises 'Integers to negative integer powers' where torch "
           "returns 0",
    # errors where torch gives a result, or results where torch raises
    # error families that differ from torch's
    # values
    "autograd": "x / (w * w + 1) * w with infinite entries and an in-place zero_ of a row: NaN in "
                "x.grad where torch has finite values (the backward formulas differ at inf)",
    "gather": "a float index raises 'Expected dtype int32/int64' where torch raises for other reasons "
              "first, or an out-of-range index is refused where torch's shapes checks come first",
    # the namespaces the fuzzer draws from since the surface grew (the survey lists them)
    "linalg.cholesky": "an input with inf: NaN where torch's LAPACK returns finite entries",
    "linalg.inv": "exactly singular matrices (a row a power-of-two multiple of another): "
                  "portagrad's elimination clears the row and raises LinAlgError, torch's LAPACK "
                  "order can leave a 1e-16 pivot and return entries near 1e16",
    "linalg.lu_factor": "equal rows of large entries ([[1e30, x], [1e30, x]]): torch's MKL kernel "
                        "leaves an exact 0 in U and raises, where LAPACK's reciprocal multiplier "
                        "(portagrad's, and MKL's own for other sizes) leaves 1e-16: build-dependent",
    "linalg.slogdet": "singular and near-singular matrices: the sign differs where torch's pivoting "
                      "rounds to a tiny nonzero pivot",
    "special.logit": "16-bit inputs of logit(sigmoid(x)): the sigmoid rounds differently by one unit",
    "F.gelu_tanh": "16-bit inputs near zero: one unit apart from torch's fused kernel",
    "F.glu": "a bool input: portagrad's dtype error comes before torch's dim check",
    "F.pad": "circular/reflect padding of empty dimensions raises a reshape error where torch pads",
    "F.layer_norm": "float32 entries of 1e30: torch's variance overflows to NaN, portagrad's "
                    "(mean-centred first) stays finite",
    "F.bce_with_logits": "a float32 input with a float64 target: one float32 rounding apart (the "
                         "log-sigmoid of the float32 input is rounded at a different step)",
    # (not a promotion step: torch's broadcast_all keeps each parameter's dtype, as portagrad's;
    # the float32 log of the scale or rate is one unit apart between numpy's and torch's log,
    # seen through a float64 result that is compared at float64's tolerance)
    "Normal.log_prob": "float32 scale with a float64 loc: the float64 result is 1e-8 relative apart "
                       "(float32 log(scale) one unit apart from torch's)",
    "Exponential.log_prob": "float32 rate with a float64 value: 1e-9 relative apart (float32 "
                            "log(rate) one unit apart from torch's)",
}

# Outputs that are unspecified when values tie (the index of a tie); compared by values only.
VALUES_ONLY: set[str] = set()  # sort runs with stable=True, so its indices are determined too

# counters, printed at the end of the session (-s) and read by the report
STATS: dict[str, int] = {}


def _count(key: str) -> None:
    STATS[key] = STATS.get(key, 0) + 1


def _family(exc: BaseException) -> type | None:
    for fam in FAMILIES:
        if isinstance(exc, fam):
            return fam
    return None


def _check_not_leaked(exc: BaseException, what: str) -> None:
    """A portagrad error is one of the families, raised as a builtin or portagrad exception type."""
    mod = type(exc).__module__
    assert _family(exc) is not None and (mod == "builtins" or mod.startswith("portagrad")), (
        f"{what}: raw {mod}.{type(exc).__qualname__} leaked through: {exc}")
    assert not isinstance(exc, (ArithmeticError, np.exceptions.AxisError)), (
        f"{what}: raw {type(exc).__qualname__} leaked through: {exc}")


def _run(fn: Any) -> tuple[Any, BaseException | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(), None
            except Exception as exc:  # compared below
                return None, exc


def _norm(x: Any) -> Any:
    """A result as plain data: tensors -> (dtype name, shape, numpy values); sequences elementwise.
    16-bit floats are read as float32 (exact), which both libraries can hand to numpy."""
    if isinstance(x, pg.Tensor):
        name = str(x.dtype).split(".")[-1]
        t = x.detach().float() if name in ("bfloat16", "float16") else x.detach()
        return (name, tuple(x.shape), t.cpu().numpy())
    if torch is not None and isinstance(x, torch.Tensor):
        name = str(x.dtype).split(".")[-1]
        t = x.detach().float() if name in ("bfloat16", "float16") else x.detach()
        return (name, tuple(x.shape), t.numpy().copy())
    if isinstance(x, (tuple, list)):
        return [_norm(v) for v in x]
    return x


def _tol(dtype: str, cross: bool) -> tuple[float, float]:
    if dtype == "bfloat16":  # 8 bits of mantissa: one rounding apart is 2**-8
        return (1e-2, 1e-3)
    if dtype == "float16":
        return (2e-3, 1e-4)
    if dtype == "float32":
        return (1e-4, 1e-5) if cross else (1e-5, 1e-6)
    if dtype == "float64":
        return (1e-9, 1e-12)
    return (0.0, 0.0)


def _assert_same(a: Any, b: Any, where: str = "", cross: bool = True, low: bool = False) -> None:
    """``low``: an input went through a 16-bit cast, so intermediates of any dtype carry 16-bit
    rounding that backends place differently: bfloat16's tolerance."""
    if isinstance(a, list) or isinstance(b, list):
        assert isinstance(a, list) and isinstance(b, list) and len(a) == len(b), f"{where}: {a} vs {b}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]", cross, low)
        return
    if not isinstance(a, tuple):
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), f"{where}: {a} vs {b}"
        return
    (da, sa, va), (db, sb, vb) = a, b
    assert (da, sa) == (db, sb), f"{where}: dtype/shape {da}{list(sa)} vs {db}{list(sb)}"
    if va.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(va), np.isnan(vb), err_msg=f"{where}: NaN positions")
        rtol, atol = _tol("bfloat16" if low else da, cross)
        # inf, -inf compare exactly; float32 huge values may overflow differently: atol relative
        np.testing.assert_allclose(va, vb, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(va, vb, err_msg=where)


class Declined(Exception):
    """The device declines a dtype of the call's arguments (its typed ``DTypeError``: float16
    on an OpenCL device without ``cl_khr_fp16``): nothing to compare."""


def _synced(m: Any, out: Any, device: Any) -> Any:
    """``out``, after waiting for portagrad's OpenCL device: a check the call deferred to the
    device's next read (cross-entropy's targets) raises here, inside the call being compared."""
    if m is pg and isinstance(device, str) and device.startswith("opencl"):
        pg.opencl.synchronize(pg.device(device).index)
    return out


def _call(m: Any, F: Any, name: str, arrs: list[Arr], kw: dict, device: Any) -> tuple:
    """Run one call; returns (result, error, the tensor arguments after the call)."""
    fn = OPS[name][2]
    try:
        ts = [build(m, a, device) for a in arrs]
    except pg.errors.DTypeError as exc:
        raise Declined(str(exc)) from exc
    out, exc = _run(lambda: _synced(m, fn(m, F, *ts, **dict(kw)), device))
    if isinstance(exc, pg.errors.DTypeError) and any(a.cast for a in arrs):
        # an empty 16-bit tensor is made without a kernel; the device declines the dtype at the
        # op's first kernel instead
        raise Declined(str(exc))
    return out, exc, ts


def _outputs(name: str, out: Any, ts: list) -> Any:
    res = _norm(out)
    if name in VALUES_ONLY and isinstance(res, list):
        res = res[:1]
    return [res, _norm(ts[0])]  # the first input too: in-place ops (and views of it) write it


def _compare(name: str, a: tuple, b: tuple, where: str, low: bool = False) -> None:
    (oa, ea, ta), (ob, eb, tb) = a, b
    if ea is not None:
        _check_not_leaked(ea, f"portagrad {name}")
    if ea is not None or eb is not None:
        assert ea is not None and eb is not None, (
            f"{where}: {name}: only {'portagrad' if ea is not None else 'the reference'} raised: "
            f"{type(ea or eb).__name__}: {ea or eb}")
        assert _family(ea) is _family(eb), (
            f"{where}: {name}: error families differ: {type(ea).__name__}: {ea} vs "
            f"{type(eb).__name__}: {eb}")
        _count(f"{where}:both-raise")
        return
    try:
        ra = _outputs(name, oa, ta)
    except Exception as exc:  # reading the result back failed: a broken result, not an error
        raise AssertionError(f"{where}: {name}: reading the result raised {type(exc).__module__}."
                             f"{type(exc).__qualname__}: {exc}") from exc
    _assert_same(ra, _outputs(name, ob, tb), f"{where}: {name}", low=low)
    _count(f"{where}:both-ok")


# PORTAGRAD_FUZZ_SURVEY=1: record every discrepancy (the first message per op) instead of failing,
# printed at the end of the module (-s): for finding what KNOWN should hold after a change
_SURVEY = bool(os.environ.get("PORTAGRAD_FUZZ_SURVEY"))
FOUND: dict[str, tuple[str, str]] = {}


def _known(name: str, check: Any, case: Any = None) -> None:
    if name not in KNOWN and not _SURVEY:
        check()
        return
    try:
        check()
    except AssertionError as exc:  # a known discrepancy (see KNOWN): noted, not failed
        _count(f"known:{name}" if name in KNOWN else f"found:{name}")
        msg = " ".join(str(exc).split())[:400]
        rep = repr(case)
        if name not in FOUND or len(rep) < len(FOUND[name][1]):  # keep the smallest case
            FOUND[name] = (msg, rep)


# ----------------------------------------------------------------------------- vs torch
@needs_torch
@FUZZ
@given(call=call_strategy(_NAMES))
def test_fuzz_vs_torch(call: tuple, device: str) -> None:
    name, arrs, kw = call
    _count(f"{device}:vs-torch")
    try:
        mine = _call(pg, pgF, name, arrs, kw, device)
    except Declined:
        _count(f"{device}:declined")
        return
    theirs = _call(torch, torchF, name, arrs, kw, None)
    low = any(a.cast for a in arrs)
    _known(name, lambda: _compare(name, mine, theirs, f"{device} vs torch", low), call)


@st.composite
def program(draw: Any) -> tuple:
    """x (2, 3) and w (2, 3), both leaves; 1-4 steps, each unary f(h) or binary g(h, w); an in-place
    edit of one intermediate sometimes; the loss is the sum of the last value."""
    steps = draw(st.lists(st.one_of(st.tuples(st.just("u"), st.sampled_from(sorted(GRAD_UNARY))),
                                    st.tuples(st.just("b"), st.sampled_from(sorted(GRAD_BINARY)))),
                          min_size=1, max_size=4))
    edit = draw(st.one_of(st.none(), st.tuples(st.integers(0, len(steps) - 1),
                                               st.sampled_from(sorted(INPLACE_EDITS)))))
    x = draw(arr_strategy(shape=(2, 3), dtype="float64"))
    w = draw(arr_strategy(shape=(2, 3), dtype="float64"))
    return steps, edit, Arr(x.data), Arr(w.data)


def _run_program(m: Any, prog: tuple, device: Any) -> tuple[Any, BaseException | None]:
    steps, edit, xa, wa = prog

    def go() -> Any:
        x, w = build(m, xa, device, True), build(m, wa, device, True)
        h = x
        for i, (kind, op) in enumerate(steps):
            h = GRAD_UNARY[op](m, h) if kind == "u" else GRAD_BINARY[op](m, h, w if h.shape == w.shape
                                                                          else w.t())
            if edit is not None and edit[0] == i:
                INPLACE_EDITS[edit[1]](h)
        h.sum().backward()
        return [x.grad, w.grad]

    return _run(go)


def _grads(g: list) -> list:
    return [None if v is None else _norm(v) for v in g]


@needs_torch
@FUZZ_GRAD
@given(prog=program())
def test_fuzz_autograd_vs_torch(prog: tuple, device: str) -> None:
    _count(f"{device}:autograd-vs-torch")
    ga, ea = _run_program(pg, prog, device)
    gb, eb = _run_program(torch, prog, None)

    def check() -> None:
        if ea is not None:
            _check_not_leaked(ea, "portagrad autograd program")
        assert (ea is None) == (eb is None), f"{prog[:2]}: one side raised: {ea or eb!r}"
        if ea is not None:
            assert _family(ea) is _family(eb), f"{prog[:2]}: {ea!r} vs {eb!r}"
            # the version-counter error on both, or another error (the edit on a leaf's view ...)
            _count(f"{device}:autograd:both-raise")
            return
        _assert_same(_grads(ga), _grads(gb), f"{prog[:2]} grads")
        _count(f"{device}:autograd:both-ok")

    _known("autograd", check, prog)


# ----------------------------------------------------------------------------- torch-free
@FUZZ_CI
@given(call=call_strategy(_NAMES))
def test_fuzz_device_vs_cpu(call: tuple, device: str) -> None:
    name, arrs, kw = call
    _count(f"{device}:vs-cpu")
    try:
        mine = _call(pg, pgF, name, arrs, kw, device)
    except Declined:
        _count(f"{device}:declined")
        return
    if device == "cpu":  # nothing to compare with: the check is that no raw error leaks
        if mine[1] is not None:
            _known(name, lambda: _check_not_leaked(mine[1], f"{device} {name}{kw}"), call)
        return
    ref = _call(pg, pgF, name, arrs, kw, "cpu")
    low = any(a.cast for a in arrs)
    _known(name, lambda: _compare(name, mine, ref, f"{device} vs cpu", low), call)


def test_fuzz_op_list_is_known() -> None:
    """Every KNOWN entry names an op of the list (or the autograd programs) and a reason."""
    for name, why in KNOWN.items():
        assert (name in OPS or name == "autograd") and why


@pytest.fixture(scope="module", autouse=True)
def _report_stats() -> Any:
    yield
    for name, (msg, rep) in sorted(FOUND.items()):
        print(f"\nFOUND {name}: {msg}\n    case: {rep}")
    if STATS:
        print("\nfuzz counts: " + ", ".join(f"{k}={v}" for k, v in sorted(STATS.items())))
    if _SURVEY:  # discrepancies per namespace (the ops of each that disagreed at least once)
        for ns, names in NAMESPACES.items():
            bad = sorted(n for n in FOUND if n in names)
            print(f"\nsurvey {ns}: {len(bad)} of {len(names)} ops disagree: {', '.join(bad)}")
