"""``grouped_mm``: one matrix product per group, as mixture-of-experts layers use it.

Four modes, by the operands' ranks (``offs`` holds the groups' cumulative end offsets, int32):

* 2-D ``a`` (M, K) x 3-D ``b`` (G, K, N): the rows of ``a`` are grouped, group ``g`` times
  ``b[g]``; the result is (M, N).
* 3-D ``a`` (G, M, K) x 2-D ``b`` (K, N): the columns of ``b`` are grouped, ``a[g]`` times
  group ``g``; the result is (M, N).
* 2-D ``a`` (M, K) x 2-D ``b`` (K, N): ``K`` is grouped, one (M, N) product per group; the
  result is (G, M, N).
* 3-D x 3-D without ``offs``: the batched product (G, M, K) @ (G, K, N).

It is composed from the op layer (slices, ``matmul``, ``cat``/``stack``, zero fills), so it runs
on every backend and autograd differentiates it; the offsets are read from the device once
(``tolist``) and the Python loop does one slice and one product per non-empty group.

Where PyTorch leaves memory unwritten (rows or columns past the last offset, an empty group of
the 2-D x 2-D mode) the result here is zero; offsets past the end are clamped to it, and a
decreasing offset makes an empty group (PyTorch does not check them; its result is undefined).
"""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from .._common import check_same_device
from ..joining import cat, stack
from ..matmul import matmul

__all__ = ["grouped_mm"]

#: The dtypes PyTorch's CPU grouped GEMM takes.
_ACCEPTED = ("float32", "bfloat16", "float16")
#: PyTorch refuses operands whose leading (non-unit) stride is not a multiple of this many
#: bytes: the alignment its CUDA kernels need, checked on every device, so that code which runs
#: here runs there too.
_STRIDE_BYTES = 16


def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype: _dtype.dtype | None = None) -> Tensor:
    """``torch.nn.functional.grouped_mm``: a matrix product per group (see the module's
    docstring for the four modes). ``bias`` is refused and ``out_dtype`` must be ``mat_a``'s
    dtype, as on PyTorch's CPU path."""
    _check(mat_a, mat_b, offs, bias, out_dtype)
    if offs is None:  # both 3-D: the batched product
        return matmul(mat_a, mat_b)
    return _grouped(mat_a, mat_b, [int(e) for e in offs.tolist()])


def _check(a: Tensor, b: Tensor, offs: Tensor | None, bias: Tensor | None,
           out_dtype: _dtype.dtype | None) -> None:
    """PyTorch's argument checks, in its order (the first failing one is the one reported)."""
    for name, x in (("mat_a", a), ("mat_b", b)):
        if x.dtype.name not in _ACCEPTED:
            got = _dtype.SCALAR_TYPE_NAMES.get(x.dtype.name, x.dtype.name)
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, "
                               f"got {got}")
    for name, x in (("mat_a", a), ("mat_b", b)):
        if x.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
    check_same_device(a, b, "grouped_mm")
    both_2d = a.dim() == 2 and b.dim() == 2
    if not both_2d and a.shape[-1] != b.shape[-2]:  # (2-D x 2-D groups K: no single K to match)
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    _check_strides(a)
    _check_strides(b)
    both_3d = a.dim() == 3 and b.dim() == 3
    if (offs is None) != both_3d:
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if out_dtype is not None and out_dtype is not a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if offs is not None:
        if offs.dtype is not _dtype.int32:
            raise RuntimeError("Offsets have to be int32")
        if offs.dim() != 1:
            raise RuntimeError("offs has to be 1D")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if both_3d and a.shape[0] != b.shape[0]:
        raise RuntimeError("batched dimension has to match")
    if offs is not None and not both_2d and offs.shape[0] != (b if a.dim() == 2 else a).shape[0]:
        raise RuntimeError("matrix batch sizes have to match")
    if a.dtype is not b.dtype:  # PyTorch's per-group product (mm, or bmm into an out) refuses it
        names = _dtype.CPP_TYPE_NAMES
        na, nb = (names.get(x.dtype.name, x.dtype.name) for x in (a, b))
        if both_3d:
            raise RuntimeError(f"Expected out tensor to have dtype {nb}, but got {na} instead")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {na} != {nb}")


def _check_strides(x: Tensor) -> None:
    """The last two dims must be row- or column-major (one unit stride, the other covering the
    unit-stride dim), the other stride a multiple of 16 bytes; batch strides are free."""
    size, st = x.shape, x.stride()
    if st[-1] == 1 and st[-2] >= size[-1]:
        lead = st[-2]
    elif st[-2] == 1 and st[-1] >= size[-2]:
        lead = st[-1]
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {list(st)} for strides and {list(size)} "
                           f"for sizes")
    if (lead * x.element_size()) % _STRIDE_BYTES:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _bounds(ends: list[int], n: int) -> tuple[list[tuple[int, int]], int]:
    """Each group's ``[start, end)`` from cumulative ``ends``, clamped to ``[0, n]`` and to the
    previous end (so the groups tile ``[0, covered)``), and ``covered``."""
    spans = []
    s = 0
    for e in ends:
        e = min(max(e, s), n)
        spans.append((s, e))
        s = e
    return spans, s


def _grouped(a: Tensor, b: Tensor, ends: list[int]) -> Tensor:
    """The three modes with offsets, unchecked (any dtype ``matmul`` takes: the tests
    gradcheck it in float64, which PyTorch's ``grouped_mm`` refuses)."""
    if a.dim() == 2 and b.dim() == 3:  # rows of a grouped: (M, N)
        m, n = a.shape[0], b.shape[-1]
        spans, covered = _bounds(ends, m)
        parts = [matmul(a[s:e], b[g]) for g, (s, e) in enumerate(spans) if e > s]
        if covered < m:
            parts.append(a.new_zeros((m - covered, n)))
        return _joined(parts, 0, (m, n), a, b)
    if a.dim() == 3:  # 3-D x 2-D, columns of b grouped: (M, N)
        m, n = a.shape[1], b.shape[-1]
        spans, covered = _bounds(ends, n)
        parts = [matmul(a[g], b[:, s:e]) for g, (s, e) in enumerate(spans) if e > s]
        if covered < n:
            parts.append(a.new_zeros((m, n - covered)))
        return _joined(parts, 1, (m, n), a, b)
    # 2-D x 2-D, K grouped: one (M, N) product per group, (G, M, N)
    m, n = a.shape[0], b.shape[-1]
    spans, _ = _bounds(ends, a.shape[1])
    zeros = None
    parts = []
    for s, e in spans:
        if e > s:
            parts.append(matmul(a[:, s:e], b[s:e]))
        else:  # an empty sum: zeros (one fill shared by every empty group)
            zeros = a.new_zeros((m, n)) if zeros is None else zeros
            parts.append(zeros)
    if all(p is zeros for p in parts):  # no product (also: no group)
        return _connected(stack(parts) if parts else a.new_zeros((0, m, n)), a, b)
    return stack(parts)


def _joined(parts: list[Tensor], dim: int, shape: tuple[int, int], a: Tensor, b: Tensor) -> Tensor:
    """``parts`` joined along ``dim`` (the last one is a zero fill when the groups stop short)."""
    if not parts:
        return _connected(a.new_zeros(shape), a, b)
    if len(parts) == 1:
        return parts[0] if parts[0].requires_grad or not is_grad_enabled() else \
            _connected(parts[0], a, b)
    return cat(parts, dim)


def _connected(out: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``out`` (computed without a product: every group empty) tied into the graph of ``a`` and
    ``b`` as PyTorch's result is (it has a grad_fn and gives them zero gradients): plus the sums
    of empty slices, exact zeros whatever ``a`` and ``b`` hold (no ``0 * inf``)."""
    if not is_grad_enabled() or not (a.requires_grad or b.requires_grad):
        return out
    return out + (a[..., :0].sum() + b[..., :0].sum())
