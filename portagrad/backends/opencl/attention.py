"""OpenCL fused scaled dot-product attention (the optional ``attention``/``attention_backward``).

Mixed into :class:`~portagrad.backends.opencl.backend.OpenCLBackend` (uses its ``_dev``,
``_empty_like`` and ``copy``); the contract is in :mod:`portagrad.backends.interface` ("fused
scaled dot-product attention"). The kernels are in :mod:`.attention_kernels`: the forward is one
launch, the backward two (``dq`` with the row values ``delta``, then ``dk``/``dv``). The batch
dimensions are flattened into one; a mask whose (expanded) batch dimensions do not flatten to one
stride is copied whole first (the masks models use: (L, S), (1, 1, L, S), per-head, flatten).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DTypeError
from ..interface import View
from .attention_kernels import attention_source
from .errors import cl_errors
from .fusion import flushes

if TYPE_CHECKING:
    from .devices import Device

__all__ = ["AttentionMixin"]

_FLOATS = ("float32", "float64", "float16", "bfloat16")
_ACC = {"float32": np.float32, "float64": np.float64, "float16": np.float32,
        "bfloat16": np.float32}
_I64, _I32 = np.int64, np.int32
_B = [None, _I64]
_MASK = [None, _I64, _I64, _I64, _I64]
_TYPES: dict[str, list[Any]] = {
    "attn_fwd": _B * 3 + _MASK + _B * 2 + [_I64, _I64, _I32, "A"],
    "attn_bwd_dq": _B * 6 + _MASK + _B + [None, _I64, _I64, _I32, "A"],
    "attn_bwd_dkv": _B * 5 + [None] + _MASK + _B * 2 + [_I64, _I64, _I32, "A"],
}


def _wg(dev: Device, d: int, dv: int) -> int:
    """Query (or key) rows per work-group: 64 on GPUs; on CPU devices (PoCL runs a work-group as
    loops over its items) 32, which measured best there for head sizes 64 and below (and keeps
    the key and value tiles within a core's L1/L2); bounded by the device's limits (local memory
    holds (D + DV) * WG values)."""
    want = 64 if dev.is_gpu else 32
    want = min(want, 1 << (dev.max_wg.bit_length() - 1))
    while want > 1 and (d + dv + 2) * want * 8 > 32768:
        want //= 2
    return want


def _flat_strides(v: View, nb: int) -> tuple[int, ...] | None:
    """The single stride of the first ``nb`` dimensions of ``v`` flattened, or ``None``."""
    shape, strides = v.shape[:nb], v.strides[:nb]
    dims = [(s, t) for s, t in zip(shape, strides) if s != 1]
    if not dims:
        return (0,)
    if all(t == 0 for _, t in dims):
        return (0,)
    for (_, t0), (s1, t1) in zip(dims, dims[1:]):
        if t0 != t1 * s1:
            return None
    return (dims[-1][1],)


#: the float32 size of an attention's scores from which the fused kernels run (see
#: ``AttentionMixin.fused_attention``): the composition keeps several tensors of that size
FUSED_MIN_BYTES = 1 << 30


class AttentionMixin:
    """attention / attention_backward as flash-attention style kernels."""

    _dev: Any
    _empty_like: Any
    copy: Any
    #: forces the rows per work-group (None: by device; for measurements and tests)
    _force_attn_wg: int | None = None
    #: forces the fused kernels on (True) or off (False); None: by the size of the scores
    _force_fused_attention: bool | None = None

    def fused_attention(self, index: int, scores: int) -> bool:
        """Whether ``scaled_dot_product_attention`` runs these kernels on device ``index`` for
        ``scores`` attention scores (batch x L x S): where the composition's scores would take
        :data:`FUSED_MIN_BYTES` or more. The kernels were slower than the composition's GEMMs
        wherever measured (H200, causal (8, 12, L, 64) forward and backward: 1.4x at L = 256,
        3.6x at L = 1024; PoCL 3.7-8.5x) but keep a tenth of the memory, so they are the
        choice when the L x S matrices would crowd the device."""
        if self._force_fused_attention is not None:
            return self._force_fused_attention
        return scores * 4 >= FUSED_MIN_BYTES

    def _attn_kernel(self, q: View, v: View, mask: View | None, name: str) -> tuple[Any, Any, int]:
        dev = self._dev(q)
        dt = q.dtype.name
        if dt not in _FLOATS:
            raise DTypeError(f"attention on the OpenCL backend needs a floating tensor, got "
                             f"{q.dtype}")
        mk = 0 if mask is None else (1 if mask.dtype.name == "bool" else 2)
        d, dv = q.shape[-1], v.shape[-1]
        wg = self._force_attn_wg or _wg(dev, d, dv)
        acc = _ACC[dt]
        kern = dev.kernel(("attention", dt, mk, d, dv, wg), name,
                          lambda: attention_source(dt, mk, d, dv, wg), [dt],
                          lambda: [acc if t == "A" else t for t in _TYPES[name]])
        return dev, kern, wg

    def _attn_c(self, dev: Device, v: View) -> View:
        if v.is_contiguous():
            return v
        tmp = self._empty_like(dev, v.shape, v.dtype)
        self.copy(v, tmp)
        return tmp

    def _mask_args(self, dev: Device, mask: View | None, like: View) -> list[Any]:
        """Buffer, offset and (batch, row, column) strides of the mask (any buffer when none)."""
        if mask is None:
            return [like.buffer.mem, 0, 0, 0, 0]
        nb = len(mask.shape) - 2
        fs = _flat_strides(mask, nb)
        if fs is None:
            mask = self._attn_c(dev, mask)
            fs = _flat_strides(mask, nb)
            assert fs is not None
        return [mask.buffer.mem, mask.offset, fs[0], mask.strides[-2], mask.strides[-1]]

    @staticmethod
    def _sizes(q: View, k: View) -> tuple[int, int, int]:
        n = 1
        for s in q.shape[:-2]:
            n *= s
        return n, q.shape[-2], k.shape[-2]

    @flushes
    def attention(self, q: View, k: View, v: View, mask: View | None, causal: bool,
                  scale: float, out: View, lse: View) -> None:
        """Fused attention: one work-group per (batch entry, block of query rows)."""
        n, L, S = self._sizes(q, k)
        if n == 0 or L == 0:
            return
        dev, kern, wg = self._attn_kernel(q, v, mask, "attn_fwd")
        acc = _ACC[q.dtype.name]
        with cl_errors(dev.label, "attention"):
            qc, kc, vc = self._attn_c(dev, q), self._attn_c(dev, k), self._attn_c(dev, v)
            assert out.is_contiguous() and lse.is_contiguous()
            args = [qc.buffer.mem, qc.offset, kc.buffer.mem, kc.offset, vc.buffer.mem, vc.offset,
                    *self._mask_args(dev, mask, qc), out.buffer.mem, out.offset, lse.buffer.mem,
                    lse.offset, L, S, int(causal), acc(scale)]
            groups = -(-L // wg)
            kern(dev.queue, (groups * wg, n), (wg, 1), *args)

    @flushes
    def attention_backward(self, g: View, q: View, k: View, v: View, out: View, lse: View,
                           mask: View | None, causal: bool, scale: float, dq: View, dk: View,
                           dv: View) -> None:
        """Gradients of :meth:`attention`: ``dq`` (and the row values ``delta``) by query
        blocks, then ``dk``/``dv`` by key blocks."""
        n, L, S = self._sizes(q, k)
        if n == 0:
            return
        dev, kq, wg = self._attn_kernel(q, v, mask, "attn_bwd_dq")
        _, kkv, _ = self._attn_kernel(q, v, mask, "attn_bwd_dkv")
        acc = _ACC[q.dtype.name]
        with cl_errors(dev.label, "attention_backward"):
            if L == 0 or S == 0:  # nothing attended: every gradient is 0
                for t in (dq, dk, dv):
                    if 0 not in t.shape:
                        self.fill(t, 0)  # type: ignore[attr-defined]
                return
            gc, qc, kc, vc, oc = (self._attn_c(dev, t) for t in (g, q, k, v, out))
            delta = self._empty_like(dev, (n * L,), lse.dtype)
            ma = self._mask_args(dev, mask, qc)
            common = [L, S, int(causal), acc(scale)]
            kq(dev.queue, (-(-L // wg) * wg, n), (wg, 1),
               gc.buffer.mem, gc.offset, qc.buffer.mem, qc.offset, kc.buffer.mem, kc.offset,
               vc.buffer.mem, vc.offset, oc.buffer.mem, oc.offset, lse.buffer.mem, lse.offset,
               *ma, dq.buffer.mem, dq.offset, delta.buffer.mem, *common)
            kkv(dev.queue, (-(-S // wg) * wg, n), (wg, 1),
                gc.buffer.mem, gc.offset, qc.buffer.mem, qc.offset, kc.buffer.mem, kc.offset,
                vc.buffer.mem, vc.offset, lse.buffer.mem, lse.offset, delta.buffer.mem,
                *ma, dk.buffer.mem, dk.offset, dv.buffer.mem, dv.offset, *common)
