"""Backends with one planted bug each, to show that the conformance kit catches it.

Every class below is the numpy backend (as the device type ``planted``) with exactly one realistic
mistake of a backend author; :data:`PLANTED` maps each to the kit tests that must catch it (a
``pytest -k`` expression). :class:`Clean` (the numpy backend) and :class:`CleanFull` (two devices,
memory accounting, out-of-memory errors, pinned memory and events, all correct) must pass the
whole kit. ``tests/test_kit_catches_planted.py`` runs the kit on each with
``--portagrad-backend-object tests/planted_backends.py:<Name>``.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from portagrad.backends import philox
from portagrad.backends.helpers import fit_scalar, visible_indices
from portagrad.backends.interface import DeviceProperties, View
from portagrad.backends.numpy import NumpyBackend
from portagrad.backends.numpy.arrays import nd as _nd
from portagrad.errors import OutOfMemoryError

__all__ = ["Clean", "CleanFull", "PLANTED", "CLEAN"]


class Clean(NumpyBackend):
    """The numpy backend under its own device type (``cpu`` is reserved for the built-in), one
    device that ``PORTAGRAD_VISIBLE_DEVICES`` may hide like any non-cpu device."""

    device_type = "planted"

    def device_count(self) -> int:
        return len(visible_indices(self.device_type, 1))


class CleanFull(Clean):
    """Two devices of 1 GiB each (fewer, or reordered, under ``PORTAGRAD_VISIBLE_DEVICES``) with
    per-device memory accounting, out-of-memory errors, pinned memory, events and softmax: every
    optional part of the contract, done right.

    It also has a copy engine: host-to-device copies queued on ``_copy_engine`` (as ``(dst,
    src)``) land when ``synchronize`` or ``to_host`` is called. CleanFull itself queues nothing
    (its uploads finish before ``from_host`` returns); a subclass that queues one without ordering
    the device's next primitives after it is asynchronous the wrong way."""

    CAPACITY = 1 << 30
    PHYSICAL = 2

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._physical = visible_indices(self.device_type, self.PHYSICAL)  # logical -> physical
        self._allocated = [0] * self.PHYSICAL
        self._peak = [0] * self.PHYSICAL
        self._device_of: dict[int, int] = {}
        self._pinned: dict[int, Any] = {}
        self._copy_engine: list[tuple[View, np.ndarray]] = []

    def device_count(self) -> int:
        return len(self._physical)

    def get_device_properties(self, index: int) -> DeviceProperties:
        return DeviceProperties(name=f"planted device {self._physical[index]}", type="accelerator",
                                total_memory=self.CAPACITY, fp64=True, fp16=True)

    def _drain(self) -> None:
        while self._copy_engine:
            dst, src = self._copy_engine.pop(0)
            NumpyBackend.from_host(self, dst, src)

    def synchronize(self, index: int) -> None:
        self._drain()

    def to_host(self, src: View) -> np.ndarray:
        self._drain()
        return super().to_host(src)

    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        with self._lock:
            if self._allocated[index] + nbytes > self.CAPACITY:
                raise OutOfMemoryError(f"planted:{index}: tried to allocate {nbytes} bytes with "
                                       f"{self._allocated[index]} of {self.CAPACITY} in use")
            self._add(index, nbytes)
        buf = np.empty(nbytes, np.uint8)
        self._device_of[id(buf)] = index
        weakref.finalize(buf, self._release, index, nbytes, id(buf))
        return buf

    def _add(self, index: int, nbytes: int) -> None:
        self._allocated[index] += nbytes
        self._peak[index] = max(self._peak[index], self._allocated[index])

    def _release(self, index: int, nbytes: int, key: int) -> None:
        with self._lock:
            self._allocated[index] -= nbytes
            self._device_of.pop(key, None)

    def memory_stats(self, index: int) -> dict[str, int]:
        return {"allocated": self._allocated[index], "reserved": self._allocated[index],
                "peak_allocated": self._peak[index]}

    def reset_peak_memory_stats(self, index: int) -> None:
        self._peak[index] = self._allocated[index]

    def pin_memory(self, nbytes: int) -> np.ndarray:
        arr = np.empty(nbytes, np.uint8)
        self._pinned[id(arr)] = weakref.ref(arr)
        return arr

    def is_pinned(self, array: np.ndarray) -> bool:
        a: Any = array
        while a is not None:
            ref = self._pinned.get(id(a))
            if ref is not None and ref() is a:
                return True
            a = getattr(a, "base", None)  # another backend's pinned memory ends elsewhere
        return False

    def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
        xa = _nd(x).astype(np.float64)
        with np.errstate(all="ignore"):
            z = xa - xa.max(axis, keepdims=True) if xa.shape[axis] else xa
            s = np.log(np.exp(z).sum(axis, keepdims=True))
            _nd(out)[...] = z - s if log else np.exp(z - s)

    def record_event(self, index: int) -> float:
        return time.perf_counter()

    def event_wait(self, event: Any) -> None:
        return None

    def event_query(self, event: Any) -> bool:
        return True

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return (end - start) * 1000.0


def _host_view(v: View, arr: np.ndarray) -> View:
    """A view of the host array ``arr`` with ``v``'s shape and dtype (contiguous)."""
    a = np.ascontiguousarray(arr, v.dtype.numpy).reshape(v.shape)
    out = View(a.reshape(-1).view(np.uint8), 0, v.shape, tuple(s // a.itemsize for s in a.strides)
               if a.ndim else (), v.dtype)
    return out


# ---------------------------------------------------------------------- the planted bugs
class Float64RandomMapping(CleanFull):
    """float64 ``rand``/``randn`` built from the float32 24-bit mapping."""

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        if out.dtype.name != "float64":
            return super().random(kind, out, seed, offset, a, b)
        gen = philox.uniform if kind == "uniform" else philox.normal
        o = _nd(out)
        o[...] = gen(o.size, seed, offset, a, b, np.float32).astype(np.float64).reshape(o.shape)


class MaxIgnoresNaN(CleanFull):
    """``reduce`` max/min skip NaN (``fmax``) instead of propagating it."""

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if op in ("max", "min") and x.dtype.is_floating_point and x.dtype.name != "bfloat16":
            f = np.fmax if op == "max" else np.fmin
            f.reduce(_nd(x), tuple(axes), None, _nd(out), True)
            return
        super().reduce(op, x, axes, out)


class ArgmaxIgnoresNaN(CleanFull):
    """``arg_reduce`` skips NaN (``nanargmax``)."""

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        xa = _nd(x)
        if xa.dtype.kind == "f" and np.isnan(xa).any() and not np.isnan(xa).all(axis=axis).any():
            f = np.nanargmax if op == "argmax" else np.nanargmin
            _nd(out)[...] = f(xa, axis=axis, keepdims=True)
            return
        super().arg_reduce(op, x, axis, out)


class MaximumIgnoresNaN(CleanFull):
    """``binary`` maximum/minimum return the number when one side is NaN (``fmax``)."""

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        if op in ("maximum", "minimum") and out.dtype.name in ("float32", "float64"):
            f = np.fmax if op == "maximum" else np.fmin
            f(_nd(a) if isinstance(a, View) else a, _nd(b) if isinstance(b, View) else b,
              out=_nd(out))
            return
        super().binary(op, a, b, out)


class ReluNaNToZero(CleanFull):
    """``relu`` as ``x > 0 ? x : 0``, which turns NaN into 0."""

    def unary(self, op: str, x: View, out: View) -> None:
        if op == "relu" and x.dtype.name in ("float32", "float64"):
            xa = _nd(x)
            _nd(out)[...] = np.where(xa > 0, xa, 0)
            return
        super().unary(op, x, out)


class RoundHalfUp(CleanFull):
    """``round`` as ``floor(x + 0.5)`` (half up, not half to even)."""

    def unary(self, op: str, x: View, out: View) -> None:
        if op == "round" and x.dtype.name in ("float32", "float64"):
            np.floor(_nd(x) + 0.5, out=_nd(out))
            return
        super().unary(op, x, out)


class CopyBetweenLost(CleanFull):
    """``copy_between`` into device 1 is enqueued on a queue nobody waits for: the destination
    keeps whatever the allocation held."""

    def copy_between(self, dst: View, src: View) -> None:
        if self._device_of.get(id(dst.buffer)) == 1:
            return
        super().copy_between(dst, src)


class StatsNeverDecrease(CleanFull):
    """Freed buffers are never subtracted from ``allocated``."""

    def _release(self, index: int, nbytes: int, key: int) -> None:
        self._device_of.pop(key, None)


class NoOutOfMemory(CleanFull):
    """``allocate`` never checks the capacity (the host happily over-commits)."""

    def allocate(self, index: int, nbytes: int) -> np.ndarray:
        with self._lock:
            self._add(index, nbytes)
        buf = np.empty(nbytes, np.uint8)
        weakref.finalize(buf, self._release, index, nbytes, id(buf))
        return buf


class UnaryIgnoresInputStrides(CleanFull):
    """``unary`` reads its input as if it were contiguous from its offset."""

    def unary(self, op: str, x: View, out: View) -> None:
        if not x.is_contiguous() and x.numel and x.dtype.name != "bfloat16":
            n = x.numel
            flat = x.buffer.view(x.dtype.numpy)[x.offset:x.offset + n]
            if flat.size == n:
                super().unary(op, _host_view(x, flat), out)
                return
        super().unary(op, x, out)


class BinaryIgnoresStridedOut(CleanFull):
    """``binary`` writes its result contiguously from ``out``'s offset, whatever its strides."""

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        if out.is_contiguous() or not out.numel:
            return super().binary(op, a, b, out)
        tmp = np.empty(out.shape, out.dtype.numpy)
        super().binary(op, a, b, _host_view(out, tmp))
        flat = out.buffer.view(out.dtype.numpy)
        flat[out.offset:out.offset + out.numel] = tmp.reshape(-1)


class ScalarLeftSubSwapped(CleanFull):
    """``2 - x`` (a scalar on the left of ``sub``) computed as ``x - 2``."""

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        if op == "sub" and not isinstance(a, View) and isinstance(b, View):
            return super().binary(op, b, a, out)
        super().binary(op, a, b, out)


class FloordivTruncates(CleanFull):
    """Integer ``floordiv`` rounds toward zero (C's ``/``) instead of toward minus infinity."""

    def binary(self, op: str, a: Any, b: Any, out: View) -> None:
        if op == "floordiv" and out.dtype.name in ("int32", "int64"):
            av = _nd(a) if isinstance(a, View) else a
            bv = _nd(b) if isinstance(b, View) else b
            if np.any(np.asarray(bv) == 0):
                raise ZeroDivisionError("integer division by zero")
            q = np.abs(av) // np.abs(bv)
            _nd(out)[...] = np.where((np.asarray(av) < 0) != (np.asarray(bv) < 0), -q, q)
            return
        super().binary(op, a, b, out)


class ReduceIgnoresOffset(CleanFull):
    """``reduce`` reads its input from the start of the buffer, ignoring the view's offset."""

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if x.offset:
            x = View(x.buffer, 0, x.shape, x.strides, x.dtype)
        super().reduce(op, x, axes, out)


class SumOfEmptyAxes(CleanFull):
    """``reduce`` over an empty axis list sums everything instead of copying."""

    def reduce(self, op: str, x: View, axes: Sequence[int], out: View) -> None:
        if not axes and op == "sum" and x.numel:
            _nd(out)[...] = np.sum(_nd(x), dtype=_nd(out).dtype)
            return
        super().reduce(op, x, axes, out)


class ArgReduceLastTie(CleanFull):
    """``arg_reduce`` returns the last of tied extremes."""

    def arg_reduce(self, op: str, x: View, axis: int, out: View) -> None:
        xa = np.flip(_nd(x), axis)
        if xa.dtype.name == "bfloat16":
            xa = xa.astype(np.float32)
        f = np.argmax if op == "argmax" else np.argmin
        _nd(out)[...] = xa.shape[axis] - 1 - f(xa, axis=axis, keepdims=True)


class CumsumExclusive(CleanFull):
    """``cumsum`` is off by one: an exclusive scan."""

    def cumsum(self, x: View, axis: int, out: View) -> None:
        super().cumsum(x, axis, out)
        o = _nd(out)
        if o.shape[axis] and out.dtype.name != "bfloat16":
            o[...] = o - _nd(x).astype(o.dtype)


class MatmulBatchStrideZero(CleanFull):
    """``matmul`` with a broadcast batch (stride 0) of ``a`` uses ``b``'s first batch throughout."""

    def matmul(self, a: View, b: View, out: View) -> None:
        if a.shape[0] > 1 and a.strides[0] == 0 and out.dtype.name != "bfloat16":
            np.matmul(_nd(a), _nd(b)[:1], out=_nd(out))
            return
        super().matmul(a, b, out)


class GatherLastAxis(CleanFull):
    """``gather`` always along the last axis."""

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        super().gather(x, len(x.shape) - 1, index, out)


class ScatterAddOverwrites(CleanFull):
    """``scatter`` with ``reduce="add"`` does not accumulate duplicate indices (``o[i] += s``)."""

    def scatter(self, out: View, axis: int, index: View, src: View, reduce: str | None) -> None:
        if reduce != "add":
            return super().scatter(out, axis, index, src, reduce)
        o, idx, s = _nd(out), _nd(index), _nd(src)
        grids: list[Any] = list(np.indices(idx.shape, sparse=True))
        grids[axis] = idx
        o[tuple(grids)] += s


class UnstableSort(CleanFull):
    """``sort`` with an unstable algorithm: ties come out in any order."""

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        xa = _nd(x)
        if xa.dtype.name == "bfloat16":
            return super().sort(x, axis, descending, values, indices)
        idx = np.argsort(-xa if descending and xa.dtype.kind in "fi" else xa, axis=axis,
                         kind="quicksort")
        if descending and xa.dtype.kind not in "fi":
            idx = np.flip(idx, axis)
        _nd(indices)[...] = idx
        _nd(values)[...] = np.take_along_axis(xa, idx, axis=axis)


class SortNaNFirst(CleanFull):
    """Ascending ``sort`` puts NaN first."""

    def sort(self, x: View, axis: int, descending: bool, values: View, indices: View) -> None:
        xa = _nd(x)
        if descending or xa.dtype.kind != "f" or not np.isnan(xa).any():
            return super().sort(x, axis, descending, values, indices)
        key = np.where(np.isnan(xa), -np.inf, xa)
        idx = np.argsort(key, axis=axis, kind="stable")
        _nd(indices)[...] = idx
        _nd(values)[...] = np.take_along_axis(xa, idx, axis=axis)


class WhereScalarA(CleanFull):
    """``where`` with a scalar ``a`` swaps the branches."""

    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        if not isinstance(a, View) and isinstance(b, View):
            return super().where(cond, b, a, out)
        super().where(cond, a, b, out)


class FillIgnoresStrides(CleanFull):
    """``fill`` writes ``numel`` contiguous elements from ``out``'s offset."""

    def fill(self, out: View, value: Any) -> None:
        if out.is_contiguous() or not out.numel:
            return super().fill(out, value)
        flat = View(out.buffer, out.offset, (out.numel,), (1,), out.dtype)
        super().fill(flat, value)


class CopyRoundsToInt(CleanFull):
    """float -> int ``copy`` rounds to nearest instead of truncating toward zero."""

    def copy(self, src: View, dst: View) -> None:
        if src.dtype.name in ("float32", "float64") and dst.dtype.name in ("int32", "int64"):
            _nd(dst)[...] = np.rint(_nd(src))
            return
        super().copy(src, dst)


class RandomIgnoresOffset(CleanFull):
    """``random`` ignores the Philox counter offset (every draw restarts the stream)."""

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        super().random(kind, out, seed, 0, a, b)


class Float16UniformMapping(CleanFull):
    """float16 ``uniform`` from 11 random bits (``(r0 >> 21) * 2**-11``), not the contract's
    float32 ``u`` rounded to float16."""

    def random(self, kind: str, out: View, seed: int, offset: int, a: float, b: float) -> None:
        if kind != "uniform" or out.dtype.name != "float16":
            return super().random(kind, out, seed, offset, a, b)
        o = _nd(out)
        r0 = philox.words(o.size, seed, offset)
        u = ((r0 >> 21).astype(np.float32) * np.float32(2.0 ** -11)).astype(np.float16)
        o[...] = (np.float16(a) + np.float16(b - a) * u).reshape(o.shape)


class PinnedIgnoresOffset(CleanFull):
    """``from_host(non_blocking=True)`` from a pinned array copies from the start of the pinned
    allocation, ignoring where the array starts inside it."""

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        if non_blocking and self.is_pinned(src):
            base: Any = src
            while base.base is not None:
                base = base.base
            src = np.frombuffer(base, src.dtype, count=src.size)
        super().from_host(dst, src, non_blocking)


class EventQueryLies(CleanFull):
    """``event_query`` says an event is pending even after waiting for it."""

    def event_query(self, event: Any) -> bool:
        return False


class ConvGradWeightGroups(CleanFull):
    """``conv2d_grad_weight`` with groups reads group 0's input channels for every group."""

    def conv2d_grad_weight(self, x: View, g: View, out: View, stride: Sequence[int],
                           padding: Sequence[int], dilation: Sequence[int], groups: int) -> None:
        if groups > 1 and x.dtype.name in ("float32", "float64"):
            xa = _nd(x)
            cg = xa.shape[1] // groups
            same = np.concatenate([xa[:, :cg]] * groups, axis=1)
            x = _host_view(x, same)
        super().conv2d_grad_weight(x, g, out, stride, padding, dilation, groups)


class MaxPoolLastTie(CleanFull):
    """``max_pool2d`` picks the last maximum of a window (``>=``) instead of the first."""

    def max_pool2d(self, x: View, out: View, indices: View, kernel_size: Sequence[int],
                   stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]) -> None:
        xa, o, ind = _nd(x), _nd(out), _nd(indices)
        N, C, H, W = xa.shape
        OH, OW = o.shape[2:]
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
        for i in range(OH):
            for j in range(OW):
                best = np.full((N, C), -np.inf, xa.dtype)
                pos = np.full((N, C), -1, np.int64)
                for u in range(kh):
                    for v in range(kw):
                        r, c = i * sh - ph + u * dh, j * sw - pw + v * dw
                        if not (0 <= r < H and 0 <= c < W):
                            continue
                        val = xa[:, :, r, c]
                        take = (val >= best) | np.isnan(val) | (pos < 0)
                        take &= ~np.isnan(best) | np.isnan(val)
                        best = np.where(take, val, best)
                        pos = np.where(take, r * W + c, pos)
                o[:, :, i, j] = best
                ind[:, :, i, j] = pos


class SoftmaxUnshifted(CleanFull):
    """``softmax`` without subtracting the maximum: large inputs overflow to NaN."""

    def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
        xa = _nd(x).astype(np.float64)
        with np.errstate(all="ignore"):
            s = np.log(np.exp(xa).sum(axis, keepdims=True))
            _nd(out)[...] = xa - s if log else np.exp(xa - s)


class SoftmaxBackwardLastAxis(CleanFull):
    """``softmax_backward`` sums over the last axis whatever ``axis`` it is given."""

    def softmax_backward(self, g: View, y: View, axis: int, out: View, log: bool) -> None:
        super().softmax_backward(g, y, len(y.shape) - 1, out, log)


class LayerNormUnbiasedVar(CleanFull):
    """``layer_norm`` normalises with the unbiased variance (``/ (N - 1)``), not the biased."""

    def layer_norm(self, x: View, weight: View | None, bias: View | None, eps: float, out: View,
                   mean: View | None, rstd: View | None) -> None:
        xa = _nd(x).astype(np.float64)
        M, N = xa.shape
        mu = xa.mean(1, keepdims=True) if N else np.zeros((M, 1))
        var = xa.var(1, ddof=1, keepdims=True) if N > 1 else np.zeros((M, 1))
        r = 1 / np.sqrt(var + eps)
        y = (xa - mu) * r
        if weight is not None:
            y = y * _nd(weight)
        if bias is not None:
            y = y + _nd(bias)
        _nd(out)[...] = y
        if mean is not None and rstd is not None:
            _nd(mean)[...] = mu[:, 0]
            _nd(rstd)[...] = r[:, 0]


class LayerNormGradWeightRawX(CleanFull):
    """``layer_norm_backward`` gives ``grad_weight`` as column sums of ``g * x`` (the input, not
    the normalised ``xhat``)."""

    def layer_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        super().layer_norm_backward(g, x, weight, mean, rstd, grad_x, None, grad_bias)
        if grad_weight is not None:
            _nd(grad_weight)[...] = np.sum(_nd(g) * _nd(x), 0)


class BatchNormBackwardNoWeight(CleanFull):
    """``batch_norm_backward`` leaves ``weight`` out of ``grad_x``."""

    def batch_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        super().batch_norm_backward(g, x, None, mean, rstd, grad_x, grad_weight, grad_bias)


class BatchNormStaleRunningVar(CleanFull):
    """``batch_norm`` updates ``running_mean`` but never ``running_var``."""

    def batch_norm(self, x: View, weight: View | None, bias: View | None,
                   running_mean: View | None, running_var: View | None, momentum: float,
                   eps: float, out: View, mean: View, rstd: View) -> None:
        super().batch_norm(x, weight, bias, running_mean, None, momentum, eps, out, mean, rstd)


class CrossEntropyKeepsIgnored(CleanFull):
    """``cross_entropy`` honours ``ignore_index`` only outside ``[0, C)`` (the default -100):
    rows of an ignored real class still count."""

    def cross_entropy(self, x: View, target: View, weight: View | None, ignore_index: int,
                      loss: View, lse: View, row_weight: View) -> None:
        if 0 <= ignore_index < x.shape[1]:
            ignore_index = -(1 << 40)
        super().cross_entropy(x, target, weight, ignore_index, loss, lse, row_weight)


# ------------------------------------- bugs a version of the kit missed (13 of 40 planted)
class UnaryIgnoresStridedOut(CleanFull):
    """``unary`` writes its result contiguously from ``out``'s offset, whatever its strides."""

    def unary(self, op: str, x: View, out: View) -> None:
        if out.is_contiguous() or not out.numel:
            return super().unary(op, x, out)
        tmp = np.empty(out.shape, out.dtype.numpy)
        super().unary(op, x, _host_view(out, tmp))
        out.buffer.view(out.dtype.numpy)[out.offset:out.offset + out.numel] = tmp.reshape(-1)


class GatherTransposes(CleanFull):
    """``gather`` along an axis other than the last transposes the operands with ``.T`` (a 2-D
    habit) to use its last-axis kernel: right for every 2-D gather, wrong along the middle axis
    of a 3-D tensor (``.T`` reverses all the axes)."""

    def gather(self, x: View, axis: int, index: View, out: View) -> None:
        if axis == len(x.shape) - 1 or not out.numel:
            return super().gather(x, axis, index, out)
        xt, it = _nd(x).T, _nd(index).T
        crop = tuple(slice(0, n) for n in it.shape[:-1])
        _nd(out)[...] = np.take_along_axis(xt[crop], it, -1).T


class FromHostIgnoresOffset(CleanFull):
    """``from_host`` writes from the start of the buffer, ignoring the destination's offset."""

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        if dst.offset:
            dst = View(dst.buffer, 0, dst.shape, dst.strides, dst.dtype)
        super().from_host(dst, src, non_blocking)


class CopyBetweenIgnoresSourceOffset(CleanFull):
    """``copy_between`` reads the source from the start of its buffer (a device-to-device copy
    given the buffer, not the view)."""

    def copy_between(self, dst: View, src: View) -> None:
        if src.offset:
            src = View(src.buffer, 0, src.shape, src.strides, src.dtype)
        super().copy_between(dst, src)


class CopyZeroDimIgnoresOffset(CleanFull):
    """``copy`` into a 0-d view writes element 0 of its buffer (``x[3].copy_(y)`` lands in
    ``x[0]``): the scalar fast path forgets the offset."""

    def copy(self, src: View, dst: View) -> None:
        if not dst.shape and dst.offset:
            dst = View(dst.buffer, 0, (), (), dst.dtype)
        super().copy(src, dst)


class SoftmaxIgnoresOffset(CleanFull):
    """The ``softmax`` fast path reads its (contiguous) input from the start of the buffer."""

    def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
        if x.offset:
            x = View(x.buffer, 0, x.shape, x.strides, x.dtype)
        super().softmax(x, axis, out, log)


class ResetPeakToZero(CleanFull):
    """``reset_peak_memory_stats`` sets the peak to 0 instead of to what is allocated now."""

    def reset_peak_memory_stats(self, index: int) -> None:
        self._peak[index] = 0


class EventElapsedSeconds(CleanFull):
    """``event_elapsed_ms`` returns seconds (the host clock's unit), not milliseconds."""

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        return float(end - start)


class PinnedUploadUnordered(CleanFull):
    """A non-blocking upload from pinned memory goes on the copy engine with nothing ordering the
    device's next primitives after it (a DMA queue without an event): ``synchronize`` and
    ``to_host`` wait for it, but a primitive that reads the destination first sees old bytes."""

    def from_host(self, dst: View, src: np.ndarray, non_blocking: bool = False) -> None:
        if non_blocking and self.is_pinned(src):
            self._copy_engine.append((dst, src))
            return
        super().from_host(dst, src, non_blocking)


class WhereScalarCast(CleanFull):
    """``where`` converts a Python scalar with numpy's cast instead of PyTorch's checked
    conversion: ``300`` into uint8 wraps to 44, ``inf`` into int64 gives a garbage integer."""

    def where(self, cond: View, a: Any, b: Any, out: View) -> None:
        o, c = _nd(out), _nd(cond)
        with np.errstate(invalid="ignore"):
            av = _nd(a) if isinstance(a, View) else np.array(a).astype(o.dtype)
            bv = _nd(b) if isinstance(b, View) else np.array(b).astype(o.dtype)
        if a is out:
            np.copyto(o, bv, where=~c)
            return
        np.copyto(o, bv, casting="unsafe")
        np.copyto(o, av, casting="unsafe", where=c)


class FillInt64ViaDouble(CleanFull):
    """``fill`` passes an int64 value through a C ``double`` (the kernel's value argument): past
    ``2**53`` it is rounded."""

    def fill(self, out: View, value: Any) -> None:
        if out.dtype.name != "int64" or isinstance(value, bool) or not isinstance(value, int):
            return super().fill(out, value)
        as_double = np.float64(fit_scalar(value, "int64"))
        if 0 not in out.shape:
            with np.errstate(invalid="ignore"):
                _nd(out)[...] = as_double


class Bfloat16ToHostAsFloat32(CleanFull):
    """``to_host`` of a bfloat16 view returns its values widened to float32 (the download kernel
    converts), not bfloat16 data."""

    def to_host(self, src: View) -> np.ndarray:
        host = super().to_host(src)
        return host.astype(np.float32) if src.dtype.name == "bfloat16" else host


class IgnoresVisibleDevices(CleanFull):
    """``device_count`` reports every physical device whatever ``PORTAGRAD_VISIBLE_DEVICES``
    says."""

    def device_count(self) -> int:
        return self.PHYSICAL


class EighReadsBothTriangles(CleanFull):
    """``eigh`` decomposes ``(A + A^T) / 2`` instead of reading only the ``uplo`` triangle."""

    def eigh(self, a: View, uplo: str, w: View, v: View | None) -> None:
        x = _nd(a).astype(np.float64)
        sym = (x + np.swapaxes(x, -1, -2)) / 2
        vals, vecs = np.linalg.eigh(sym)
        _nd(w)[...] = vals
        if v is not None:
            _nd(v)[...] = vecs


class SvdAscending(CleanFull):
    """``svd`` returns the singular values ascending (the vectors permuted to match, so
    ``U diag(S) Vh`` is still ``A``)."""

    def svd(self, a: View, full_matrices: bool, u: View | None, s: View,
            vh: View | None) -> None:
        super().svd(a, full_matrices, u, s, vh)
        k = s.shape[-1]
        _nd(s)[...] = _nd(s)[..., ::-1].copy()
        if u is not None and vh is not None:
            uu, vv = _nd(u), _nd(vh)
            uu[..., :, :k] = uu[..., :, :k][..., ::-1].copy()
            vv[..., :k, :] = vv[..., :k, :][..., ::-1, :].copy()


PLANTED: dict[str, str] = {
    # planted backend -> the kit tests (a -k expression) that must fail on it
    "Float64RandomMapping": "test_random",
    "MaxIgnoresNaN": "test_reduce",
    "ArgmaxIgnoresNaN": "test_arg_reduce",
    "MaximumIgnoresNaN": "test_binary",
    "ReluNaNToZero": "test_unary",
    "RoundHalfUp": "test_unary",
    "CopyBetweenLost": "copy_between or another_device",
    "StatsNeverDecrease": "test_memory_stats",
    "NoOutOfMemory": "test_out_of_memory",
    "UnaryIgnoresInputStrides": "test_unary",
    "BinaryIgnoresStridedOut": "test_binary",
    "ScalarLeftSubSwapped": "test_binary",
    "FloordivTruncates": "test_binary",
    "ReduceIgnoresOffset": "test_reduce",
    "SumOfEmptyAxes": "test_reduce",
    "ArgReduceLastTie": "test_arg_reduce",
    "CumsumExclusive": "test_cumsum",
    "MatmulBatchStrideZero": "test_matmul",
    "GatherLastAxis": "test_gather",
    "ScatterAddOverwrites": "test_scatter",
    "UnstableSort": "test_sort",
    "SortNaNFirst": "test_sort",
    "WhereScalarA": "test_where",
    "FillIgnoresStrides": "test_fill",
    "CopyRoundsToInt": "test_copy",
    "RandomIgnoresOffset": "test_random",
    "Float16UniformMapping": "test_random",
    "PinnedIgnoresOffset": "test_pinned",
    "EventQueryLies": "test_event",
    "ConvGradWeightGroups": "test_conv2d",
    "MaxPoolLastTie": "test_max_pool",
    "SoftmaxUnshifted": "softmax",
    "SoftmaxBackwardLastAxis": "test_softmax_backward",
    "LayerNormUnbiasedVar": "test_layer_norm",
    "BatchNormStaleRunningVar": "test_batch_norm",
    "LayerNormGradWeightRawX": "test_layer_norm_backward",
    "BatchNormBackwardNoWeight": "test_batch_norm_backward",
    "CrossEntropyKeepsIgnored": "test_cross_entropy",
    "UnaryIgnoresStridedOut": "test_unary",
    "GatherTransposes": "test_gather",
    "FromHostIgnoresOffset": "test_host_roundtrip",
    "CopyBetweenIgnoresSourceOffset": "copy_between or another_device",
    "CopyZeroDimIgnoresOffset": "test_copy",
    "SoftmaxIgnoresOffset": "test_softmax_method",
    "ResetPeakToZero": "test_memory_stats",
    "EventElapsedSeconds": "test_event",
    "PinnedUploadUnordered": "test_pinned",
    "WhereScalarCast": "test_scalar_into_integers",
    "FillInt64ViaDouble": "test_fill",
    "Bfloat16ToHostAsFloat32": "test_host_roundtrip",
    "IgnoresVisibleDevices": "test_visible_devices",
    "EighReadsBothTriangles": "test_eigh",
    "SvdAscending": "test_svd",
}

CLEAN = ("Clean", "CleanFull")
"""The correct backends: the whole kit passes on them."""
