"""OpenCL fast paths for softmax, layer/batch normalisation and cross-entropy (optional methods).

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend`, whose ``_dev`` and
``_empty_like`` (:mod:`.runtime`) and ``copy`` (:mod:`.primitives`) it uses. The contract is in
:mod:`portagrad.backends.interface` (section "normalisation fast paths"). Every method is one
launch of a kernel of :mod:`.norm_kernels` with one work-group per row (or channel): the row
statistics, then the outputs, without temporaries; ``layer_norm_backward`` adds a second launch
for the column sums of the weight and bias gradients, and batch norm on GPUs splits each channel
into parts (a few launches, partial sums in a scratch buffer added in a fixed order).
Non-contiguous operands (which the core never passes) are copied first; nothing waits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _dtype
from ...errors import DTypeError
from ..interface import View
from .errors import cl_errors
from .fusion import flushes
from .launch import gpu_parts
from .norm_kernels import norm_source

if TYPE_CHECKING:
    from .devices import Device

__all__ = ["NormsMixin"]

_FLOATS = ("float32", "float64", "float16", "bfloat16")
_I64, _I32 = np.int64, np.int32
#: numpy type of the kernels' scalar ``A`` arguments per storage dtype
_ACC = {"float32": np.float32, "float64": np.float64, "float16": np.float32,
        "bfloat16": np.float32}


_B = [None, _I64]  # a buffer and its offset
#: scalar argument dtypes of each kernel ("A": the kernel's computation type)
_TYPES: dict[str, list[Any]] = {
    "softmax": _B * 2 + [_I64, _I64, _I32],
    "softmax_backward": _B * 3 + [_I64, _I64, _I32],
    "softmax_c": _B * 2 + [_I64, _I32],
    "softmax_backward_c": _B * 3 + [_I64, _I32],
    "layer_norm": _B * 6 + [_I64, "A", _I32, _I32, _I32],
    "layer_norm_grad_x": _B * 6 + [_I64, _I32],
    "layer_norm_grad_wb": _B * 6 + [_I64, _I64, _I32, _I32, None, _I64, _I64],
    "layer_norm_grad_wb_sum": [None] + _B * 2 + [_I64, _I64, _I32, _I32],
    "batch_norm": _B * 8 + [_I64, _I64, _I64, "A", "A", _I32, _I32, _I32, _I32],
    "batch_norm_backward": _B * 8 + [_I64, _I64, _I64, _I32, _I32, _I32, _I32],
    "batch_norm_part": _B + [None] + [_I64] * 5 + [_I32],
    "batch_norm_part_out": _B * 8 + [None] + [_I64] * 5 + ["A", "A"] + [_I32] * 4,
    "batch_norm_backward_part": _B * 4 + [None] + [_I64] * 5,
    "batch_norm_backward_part_gx": _B * 8 + [None] + [_I64] * 5 + [_I32] * 4,
    "cross_entropy": _B * 6 + [_I64, _I64, _I32],
    "cross_entropy_backward": _B * 5 + [_I64],
}


#: rows per part at least, when a column reduction is split into parts
_MIN_ROWS_PER_PART = 16


def _row_parts(dev: Device, M: int, N: int) -> int:
    """Parts the rows of a column reduction (layer norm's weight and bias gradients: N columns
    summed over M rows) are split into: :func:`~.launch.gpu_parts` for its N columns (1 on
    CPU devices and where the columns alone fill the GPU), each part at least
    :data:`_MIN_ROWS_PER_PART` rows."""
    return int(max(1, min(gpu_parts(dev, N), M // _MIN_ROWS_PER_PART)))


#: elements per work-item at least, when a batch norm channel is split into parts
_MIN_PER_ITEM = 4


def _bn_parts(dev: Device, NB: int, C: int, L: int, wg: int) -> int:
    """Parts each batch norm channel (``NB * L`` elements) is split into on a GPU: enough
    work-groups of ``wg`` for :func:`~.launch.gpu_parts` over the ``C`` channels, each part at
    least :data:`_MIN_PER_ITEM` elements per work-item; 0 on CPU devices (the one-group-per-
    channel kernels)."""
    if not dev.is_gpu:
        return 0
    return int(max(1, min(gpu_parts(dev, C * wg), NB * L // (wg * _MIN_PER_ITEM))))


def _wg(dev: Device) -> int:
    """Work-group size of the row kernels: a power of two. CPU devices run a work-group as loops
    over its items, so a few items suffice there (and short rows waste none)."""
    want = 256 if dev.is_gpu else 16
    return min(want, 1 << (dev.max_wg.bit_length() - 1))


class NormsMixin:
    """softmax / softmax_backward / layer_norm(_backward) / batch_norm(_backward) /
    cross_entropy(_backward) as row kernels.

    Each method flushes the pending elementwise group first (``@flushes``) and enqueues."""

    # provided by OpenCLBackend
    _fz: Any
    _dev: Any
    _empty_like: Any
    copy: Any
    #: forces the parts layer norm's weight/bias gradient rows are split into (None: by device)
    _force_norm_parts: int | None = None
    #: forces the parts each batch norm channel is split into (None: by device; 0: one
    #: work-group per channel, the CPU devices' kernels)
    _force_bn_parts: int | None = None

    # ------------------------------------------------------------- helpers
    def _norm_kernel(self, v: View, name: str) -> tuple[Device, Any, int]:
        """The device of ``v``, kernel ``name`` for its dtype, and the work-group size."""
        dev = self._dev(v)
        dt = v.dtype.name
        if dt not in _FLOATS:
            raise DTypeError(f"{name} on the OpenCL backend needs a floating tensor, got {v.dtype}")
        wg = _wg(dev)
        acc = _ACC[dt]
        direct = dev.direct_vectors
        kern = dev.kernel(("norms", dt, wg, direct), name, lambda: norm_source(dt, wg, direct), [dt],
                          lambda: [acc if t == "A" else t for t in _TYPES[name]])
        return dev, kern, wg

    def _c(self, dev: Device, v: View | None) -> View | None:
        """``v`` itself when contiguous (or ``None``), else a contiguous copy."""
        if v is None or v.is_contiguous():
            return v
        tmp = self._empty_like(dev, v.shape, v.dtype)
        self.copy(v, tmp)
        return tmp

    def _out(self, dev: Device, v: View | None) -> tuple[View | None, Any]:
        """A contiguous output standing in for ``v`` and the action that copies it back."""
        if v is None or v.is_contiguous():
            return v, None
        tmp = self._empty_like(dev, v.shape, v.dtype)
        return tmp, (tmp, v)

    def _finish(self, pending: list[Any]) -> None:
        for p in pending:
            if p is not None:
                self.copy(p[0], p[1])

    @staticmethod
    def _arg(v: View | None, like: View) -> list[Any]:
        """Buffer and offset of ``v`` (``like``'s when ``v`` is ``None``: never read)."""
        u = like if v is None else v
        return [u.buffer.mem, u.offset]

    @staticmethod
    def _launch(dev: Device, kern: Any, groups: int, wg: int, args: list[Any]) -> None:
        if groups > 0:
            kern(dev.queue, (groups * wg,), (wg,), *args)

    # ------------------------------------------------------------- softmax
    def _softmax_rows(self, name: str, views: list[View], out: View, axis: int, log: bool) -> None:
        shape = out.shape
        if 0 in shape:
            return
        L = shape[axis]
        inner = 1
        for s in shape[axis + 1:]:
            inner *= s
        rows = out.numel // L
        contiguous_rows = inner == 1  # the common case (the last axis): vectorised kernels
        dev, kern, wg = self._norm_kernel(out, name + "_c" if contiguous_rows else name)
        with cl_errors(dev.label, name):
            ins = [self._c(dev, v) for v in views]
            o, back = self._out(dev, out)
            assert o is not None
            args: list[Any] = []
            for v in ins + [o]:
                args += self._arg(v, o)
            tail = [L, int(log)] if contiguous_rows else [L, inner, int(log)]
            self._launch(dev, kern, rows, wg, args + tail)
            self._finish([back])

    @flushes
    def softmax(self, x: View, axis: int, out: View, log: bool) -> None:
        """(Log-)softmax of ``x`` along ``axis`` into ``out``, one work-group per row."""
        self._softmax_rows("softmax", [x], out, axis, log)

    @flushes
    def softmax_backward(self, g: View, y: View, axis: int, out: View, log: bool) -> None:
        """Gradient of (log-)softmax from its output ``y``, one work-group per row."""
        self._softmax_rows("softmax_backward", [g, y], out, axis, log)

    # ---------------------------------------------------------- layer norm
    @flushes
    def layer_norm(self, x: View, weight: View | None, bias: View | None, eps: float, out: View,
                   mean: View | None, rstd: View | None) -> None:
        """Layer norm of the rows of the (M, N) ``x``: one work-group per row."""
        M, N = x.shape
        if M == 0:
            return
        dev, kern, wg = self._norm_kernel(out, "layer_norm")
        acc = _ACC[out.dtype.name]
        with cl_errors(dev.label, "layer_norm"):
            xc, w, b = self._c(dev, x), self._c(dev, weight), self._c(dev, bias)
            assert xc is not None
            (o, b1), (mu, b2), (rs, b3) = (self._out(dev, v) for v in (out, mean, rstd))
            assert o is not None
            stats = mu is not None and rs is not None
            args = [*self._arg(xc, xc), *self._arg(w, xc), *self._arg(b, xc), *self._arg(o, xc),
                    *self._arg(mu, o), *self._arg(rs, o), N, acc(eps), int(w is not None),
                    int(b is not None), int(stats)]
            self._launch(dev, kern, M, wg, args)
            self._finish([b1, b2, b3])

    @flushes
    def layer_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        """Gradients of :meth:`layer_norm`: a row kernel for ``grad_x``, a column kernel for
        ``grad_weight``/``grad_bias``."""
        M, N = x.shape
        dev, kern, wg = self._norm_kernel(x, "layer_norm_grad_x")
        with cl_errors(dev.label, "layer_norm_backward"):
            gc, xc, w = self._c(dev, g), self._c(dev, x), self._c(dev, weight)
            mu, rs = self._c(dev, mean), self._c(dev, rstd)
            assert gc is not None and xc is not None and mu is not None and rs is not None
            pend = []
            if grad_x is not None and M and N:
                o, back = self._out(dev, grad_x)
                assert o is not None
                args = [*self._arg(gc, xc), *self._arg(xc, xc), *self._arg(w, xc),
                        *self._arg(mu, xc), *self._arg(rs, xc), *self._arg(o, xc), N,
                        int(w is not None)]
                self._launch(dev, kern, M, wg, args)
                pend.append(back)
            if (grad_weight is not None or grad_bias is not None) and N:
                _, kwb, _ = self._norm_kernel(x, "layer_norm_grad_wb")
                (gw, b1), (gb, b2) = self._out(dev, grad_weight), self._out(dev, grad_bias)
                R = self._force_norm_parts or _row_parts(dev, M, N)
                R = max(1, min(R, M))
                MR = -(-M // R) if M else 0
                R = -(-M // MR) if M else 1  # no empty part
                scratch = None
                if R > 1:
                    acc_dt = _dtype.float64 if x.dtype is _dtype.float64 else _dtype.float32
                    scratch = self._empty_like(dev, (R, 2, N), acc_dt)
                flags = [int(gw is not None), int(gb is not None)]
                args = [*self._arg(gc, xc), *self._arg(xc, xc), *self._arg(mu, xc),
                        *self._arg(rs, xc), *self._arg(gw, xc), *self._arg(gb, xc), M, N,
                        *flags, (scratch or xc).buffer.mem, R, MR]
                ls = min(dev.local_size, 64)
                kwb(dev.queue, (-(-N // ls) * ls, R), (ls, 1), *args)
                if scratch is not None:
                    _, ksum, _ = self._norm_kernel(x, "layer_norm_grad_wb_sum")
                    ksum(dev.queue, (-(-N // ls) * ls,), (ls,), scratch.buffer.mem,
                         *self._arg(gw, xc), *self._arg(gb, xc), N, R, *flags)
                pend += [b1, b2]
            self._finish(pend)

    # ---------------------------------------------------------- batch norm
    @flushes
    def batch_norm(self, x: View, weight: View | None, bias: View | None,
                   running_mean: View | None, running_var: View | None, momentum: float,
                   eps: float, out: View, mean: View, rstd: View) -> None:
        """Training-mode batch norm of the (N, C, L) ``x``: one work-group per channel, which
        also updates the running statistics. On GPUs each channel is split into parts
        (:meth:`_bn_split`): a kernel for the parts' sums, one for their squared deviations
        from the mean, one for the outputs, each adding a channel's parts in order."""
        NB, C, L = x.shape
        dev, kern, wg = self._norm_kernel(out, "batch_norm")
        acc = _ACC[out.dtype.name]
        with cl_errors(dev.label, "batch_norm"):
            xc, w, b = self._c(dev, x), self._c(dev, weight), self._c(dev, bias)
            assert xc is not None
            outs = [self._out(dev, v) for v in (running_mean, running_var, out, mean, rstd)]
            if running_mean is not None and outs[0][1] is not None:  # read as well as written
                self.copy(running_mean, outs[0][0])
            if running_var is not None and outs[1][1] is not None:
                self.copy(running_var, outs[1][0])
            rm, rv, o, mu, rs = (p[0] for p in outs)
            head = [*self._arg(xc, xc), *self._arg(w, xc), *self._arg(b, xc), *self._arg(rm, xc),
                    *self._arg(rv, xc), *self._arg(o, xc), *self._arg(mu, xc), *self._arg(rs, xc)]
            tail = [acc(momentum), acc(eps), int(w is not None), int(b is not None),
                    int(rm is not None), int(rv is not None)]
            P, PL, sc = self._bn_split(dev, x, NB, C, L, wg)
            if sc is None:
                self._launch(dev, kern, C, wg, head + [NB, C, L] + tail)
            elif C:
                _, kp, _ = self._norm_kernel(out, "batch_norm_part")
                _, ko, _ = self._norm_kernel(out, "batch_norm_part_out")
                gs, ls = (P * wg, C), (wg, 1)
                for stage in (0, 1):  # the sums, then the squared deviations from the mean
                    kp(dev.queue, gs, ls, *self._arg(xc, xc), sc.buffer.mem, NB, C, L, P, PL,
                       stage)
                ko(dev.queue, gs, ls, *head, sc.buffer.mem, NB, C, L, P, PL, *tail)
            self._finish([p[1] for p in outs])

    def _bn_split(self, dev: Device, x: View, NB: int, C: int, L: int,
                  wg: int) -> tuple[int, int, View | None]:
        """(parts, elements per part, scratch) of a batch norm channel: parts from
        ``_force_bn_parts`` or :func:`_bn_parts`; the (2, C, parts) scratch of partial sums in
        the computation type, or ``None`` for the one-group-per-channel kernels."""
        P = self._force_bn_parts if self._force_bn_parts is not None else _bn_parts(dev, NB, C, L, wg)
        if P <= 0:
            return 0, 0, None
        cnt = NB * L
        P = max(1, min(P, cnt))
        PL = -(-cnt // P) if cnt else 0
        P = -(-cnt // PL) if cnt else 1  # no empty part
        acc_dt = _dtype.float64 if x.dtype is _dtype.float64 else _dtype.float32
        return P, PL, self._empty_like(dev, (2, max(C, 1), P), acc_dt)

    @flushes
    def batch_norm_backward(self, g: View, x: View, weight: View | None, mean: View, rstd: View,
                            grad_x: View | None, grad_weight: View | None,
                            grad_bias: View | None) -> None:
        """Gradients of training-mode :meth:`batch_norm`: one work-group per channel, or on GPUs
        per part of a channel (the parts' sums, then the input gradient from their totals)."""
        NB, C, L = x.shape
        dev, kern, wg = self._norm_kernel(x, "batch_norm_backward")
        with cl_errors(dev.label, "batch_norm_backward"):
            gc, xc, w = self._c(dev, g), self._c(dev, x), self._c(dev, weight)
            mu, rs = self._c(dev, mean), self._c(dev, rstd)
            assert xc is not None
            outs = [self._out(dev, v) for v in (grad_x, grad_weight, grad_bias)]
            gx, gw, gb = (p[0] for p in outs)
            head = [*self._arg(gc, xc), *self._arg(xc, xc), *self._arg(w, xc), *self._arg(mu, xc),
                    *self._arg(rs, xc), *self._arg(gx, xc), *self._arg(gw, xc),
                    *self._arg(gb, xc)]
            flags = [int(w is not None), int(gx is not None), int(gw is not None),
                     int(gb is not None)]
            P, PL, sc = self._bn_split(dev, x, NB, C, L, wg)
            if sc is None:
                self._launch(dev, kern, C, wg, head + [NB, C, L] + flags)
            elif C:
                _, kp, _ = self._norm_kernel(x, "batch_norm_backward_part")
                _, kg, _ = self._norm_kernel(x, "batch_norm_backward_part_gx")
                gs, ls = (P * wg, C), (wg, 1)
                kp(dev.queue, gs, ls, *self._arg(gc, xc), *self._arg(xc, xc), *self._arg(mu, xc),
                   *self._arg(rs, xc), sc.buffer.mem, NB, C, L, P, PL)
                kg(dev.queue, gs, ls, *head, sc.buffer.mem, NB, C, L, P, PL, *flags)
            self._finish([p[1] for p in outs])

    # ------------------------------------------------------- cross entropy
    @flushes
    def cross_entropy(self, x: View, target: View, weight: View | None, ignore_index: int,
                      loss: View, lse: View, row_weight: View) -> None:
        """Per-row cross entropy of the (N, C) logits: one work-group per row."""
        N, C = x.shape
        dev, kern, wg = self._norm_kernel(x, "cross_entropy")
        with cl_errors(dev.label, "cross_entropy"):
            xc, t, w = self._c(dev, x), self._c(dev, target), self._c(dev, weight)
            assert xc is not None
            outs = [self._out(dev, v) for v in (loss, lse, row_weight)]
            lo, ls, rw = (p[0] for p in outs)
            args = [*self._arg(xc, xc), *self._arg(t, xc), *self._arg(w, xc), *self._arg(lo, xc),
                    *self._arg(ls, xc), *self._arg(rw, xc), C, ignore_index, int(w is not None)]
            self._launch(dev, kern, N, wg, args)
            self._finish([p[1] for p in outs])

    @flushes
    def cross_entropy_backward(self, x: View, target: View, lse: View, coef: View,
                               grad_x: View) -> None:
        """``coef[i] * (softmax(x)[i] - onehot(target[i]))`` per row: one work-group per row."""
        N, C = x.shape
        if C == 0:
            return
        dev, kern, wg = self._norm_kernel(x, "cross_entropy_backward")
        with cl_errors(dev.label, "cross_entropy_backward"):
            xc, t, ls, k = (self._c(dev, v) for v in (x, target, lse, coef))
            assert xc is not None
            o, back = self._out(dev, grad_x)
            args = [*self._arg(xc, xc), *self._arg(t, xc), *self._arg(ls, xc), *self._arg(k, xc),
                    *self._arg(o, xc), C]
            self._launch(dev, kern, N, wg, args)
            self._finish([back])
