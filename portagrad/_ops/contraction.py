"""Contractions and products composed from matmul: ``einsum``, ``tensordot``, ``cross``, ``addmv``,
``addr``, ``addbmm``.

Each is written with ops that already have derivatives, so gradients come from those.
"""
from __future__ import annotations

import math
import string
import warnings
from collections.abc import Sequence
from typing import Any


from .._autocast import SKIP as _SKIP
from .._autocast import STATE as _AUTOCAST
from .._autocast import autocast_call as _autocast_call
from .. import _dtype
from .._shape import wrap_dim
from .._tensor import Tensor
from . import reduction
from .shape import (
    narrow, permute, reshape,
)
from .diagonal import diagonal
from .elementwise import _type_name
from .joining import cat
from .matmul import scaled_input, matmul, mm, mv, outer

__all__ = ["einsum", "tensordot", "cross", "addmv", "addr", "addbmm"]


# ------------------------------------------------------------------------------- einsum
_SUBLIST_LETTERS = string.ascii_lowercase + string.ascii_uppercase


def _einsum_from_sublists(args: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """PyTorch's sublist form ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])`` as an equation and
    its operands (subscript ``k`` is the k-th letter of a-z then A-Z; ``...`` is Ellipsis)."""
    def letters(sub: Any) -> str:
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif isinstance(v, int) and 0 <= v < len(_SUBLIST_LETTERS):
                out.append(_SUBLIST_LETTERS[v])
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52), "
                                 f"but got {v}")
        return "".join(out)

    ops = args[0::2]
    subs = args[1::2]
    n = len(ops) if len(args) % 2 == 0 else len(ops) - 1  # an odd count: the output's sublist
    eq = ",".join(letters(sub) for sub in subs[:n])
    if len(args) % 2:
        eq += "->" + letters(args[-1])
    return eq, tuple(ops[:n])


def _einsum_check_letters(equation: str) -> None:
    """PyTorch's refusals of the equation's own text: subscripts are letters, ``...`` and the
    separators only."""
    i = 0
    while i < len(equation):
        c = equation[i]
        if c == "." and equation[i:i + 3] == "...":
            i += 3
            continue
        if c == "-" and equation[i:i + 2] == "->":
            i += 2
            continue
        if not (c in string.ascii_letters or c in ", "):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        i += 1


def _einsum_parse(equation: str, operands: Sequence[Tensor]) -> tuple[list[str], str]:
    _einsum_check_letters(equation)
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    # an ellipsis stands for the leading (broadcast) dimensions: name them with spare letters
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    nell = max((op.dim() - len(t.replace("...", "")) for t, op in zip(terms, operands)
                if "..." in t), default=0)
    ell = "".join(spare[:nell])
    out_terms: list[str] = []
    for t, op in zip(terms, operands):
        if "..." in t:
            k = op.dim() - len(t.replace("...", ""))
            t = t.replace("...", ell[nell - k:] if k else "")
        if len(t) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) "
                               f"does not match the number of dimensions ({op.dim()}) for "
                               f"operand {len(out_terms)}" + ("" if "..." in lhs else
                                                              " and no ellipsis was given"))
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts: dict[str, int] = {}
        for t in out_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    for c in out:
        if out.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                               f"output")
        if not any(c in t for t in out_terms):
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               f"for any input operand")
    seen: dict[str, int] = {}
    for k, (t, op) in enumerate(zip(out_terms, operands)):
        for c, n in zip(t, op.shape):
            prev = seen.get(c)
            if prev is not None and n != prev and n != 1 and prev != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which "
                                   f"does not broadcast with previously seen size {prev}")
            if prev is None or prev == 1:
                seen[c] = n
    return out_terms, out


def _einsum_align(op: Tensor, term: str, letters: str) -> Tensor:
    """``op`` with repeated subscripts reduced to their diagonal, permuted and unsqueezed to the
    order of ``letters``."""
    from_term = term
    while True:
        dup = next((c for c in from_term if from_term.count(c) > 1), None)
        if dup is None:
            break
        i = from_term.index(dup)
        j = from_term.index(dup, i + 1)
        op = diagonal(op, 0, i, j)
        from_term = from_term[:i] + from_term[i + 1:j] + from_term[j + 1:] + dup
    present = [c for c in letters if c in from_term]
    op = permute(op, [from_term.index(c) for c in present])
    shape = []
    it = iter(op.shape)
    for c in letters:
        shape.append(next(it) if c in from_term else 1)
    return reshape(op, shape)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation (``"ij,jk->ik"``; ``...`` for broadcast dimensions). The operands are
    contracted pairwise from the left, each index summed as soon as no later operand needs it:
    floating operands by one batched matmul per pair (:func:`_contract_pair`), integer and bool
    ones by products and sums (PyTorch's integer rules)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("einsum", einsum, equation, *operands)) is not _SKIP:
        return _ac_out
    if not isinstance(equation, str):  # the sublist form: einsum(op1, sub1, op2, sub2, [out])
        equation, operands = _einsum_from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, out = _einsum_parse(equation, operands)
    letters = "".join(dict.fromkeys(out + "".join(terms)))
    aligned = [_einsum_align(op, t, letters) for op, t in zip(operands, terms)]
    keep = None  # the dtype the products are summed in (None: sum's own, int64 for integers)
    as_bool = False
    by_matmul = False  # floating operands: each pair contracted by one batched matmul
    if len(aligned) > 1 and all(isinstance(op, Tensor) for op in aligned):
        dt = _dtype.result_type(*aligned)
        by_matmul = dt.is_floating_point or dt.is_complex
        # (an empty bool contraction sums to int64 below: PyTorch's result stays bool)
        as_bool = dt is _dtype.bool and _einsum_check_bool(aligned, terms, letters, out)
        if not (dt.is_floating_point or dt.is_complex or dt is _dtype.bool):
            # PyTorch's integer results: an index only one operand has is summed in that operand
            # first (a sum: int64), indices shared by operands are contracted by its batched
            # matmul in the operands' dtype (int8 stays int8 and wraps)
            keep = dt
            for k, t in enumerate(terms):
                own = [i for i, c in enumerate(letters) if c in t and c not in out
                       and sum(c in u for u in terms) == 1]
                if own:
                    aligned[k] = reduction.sum(aligned[k], own, keepdim=True)
    acc = aligned[0]
    for k in range(1, len(aligned)):
        later = set(out + "".join(terms[k + 1:]))
        if by_matmul:
            # as PyTorch: indices one operand alone has are summed in it first, shared ones
            # contracted by a batched matmul (no broadcast product of every index: an
            # "bhqd,bhkd->bhqk" made a (b, h, q, k, d) temporary; and a sum taken before the
            # product keeps the infinities' order of PyTorch's, where inf * x + -inf * y = nan)
            acc = _contract_pair(acc, aligned[k], [c in later for c in letters])
            continue
        acc = acc * aligned[k]
        dims = [i for i, c in enumerate(letters) if c not in later and acc.shape[i] != 1
                and c not in out]
        if dims:
            acc = reduction.sum(acc, dims, keepdim=True, dtype=acc.dtype if keep else None)
    rest = [i for i, c in enumerate(letters) if c not in out
            and not (by_matmul and acc.shape[i] == 1)]  # (contracted already)
    if rest:
        acc = reduction.sum(acc, rest, keepdim=True, dtype=acc.dtype if keep else None)
    acc = reshape(acc, [acc.shape[i] for i, c in enumerate(letters) if c in out]) \
        if out else reshape(acc, ())
    present = [c for c in letters if c in out]
    acc = permute(acc, [present.index(c) for c in out]) if out else acc
    return acc.to(_dtype.bool) if as_bool else acc


def _contract_pair(a: Tensor, b: Tensor, needed: list[bool]) -> Tensor:
    """``(a * b)`` summed over the indices not ``needed`` later, for ``a`` and ``b`` aligned to
    one letter order (a size-1 dimension: the index absent, or broadcast), as one batched
    matmul: indices both have and later need are its batch, indices both have and nobody needs
    its inner dimension; an index one of them has alone is summed there first when not needed,
    else it is that operand's free dimension. The result is aligned the same way."""
    n = len(needed)
    a_own = [i for i in range(n) if a.shape[i] != 1 and b.shape[i] == 1]
    b_own = [i for i in range(n) if b.shape[i] != 1 and a.shape[i] == 1]
    sa = [i for i in a_own if not needed[i]]
    sb = [i for i in b_own if not needed[i]]
    if sa:
        a = reduction.sum(a, sa, keepdim=True)
    if sb:
        b = reduction.sum(b, sb, keepdim=True)
    both = [i for i in range(n) if a.shape[i] != 1 and b.shape[i] != 1]
    batch = [i for i in both if needed[i]]
    inner = [i for i in both if not needed[i]]
    af = [i for i in a_own if needed[i]]
    bf = [i for i in b_own if needed[i]]
    rest_a = [i for i in range(n) if i not in batch + af + inner]  # size 1 in a
    rest_b = [i for i in range(n) if i not in batch + inner + bf]  # size 1 in b

    def size(t: Tensor, dims: list[int]) -> int:
        return math.prod(t.shape[i] for i in dims)

    dt = _dtype.result_type(a, b)
    a3 = reshape(permute(a.to(dt), batch + af + inner + rest_a),
                 (size(a, batch), size(a, af), size(a, inner)))
    b3 = reshape(permute(b.to(dt), batch + inner + bf + rest_b),
                 (size(b, batch), size(b, inner), size(b, bf)))
    r = matmul(a3, b3)  # (batch, a's free, b's free)
    kept = batch + af + bf
    r = reshape(r, [a.shape[i] for i in batch + af] + [b.shape[i] for i in bf])
    r = permute(r, sorted(range(len(kept)), key=lambda j: kept[j]))
    shape = [1] * n
    for i in kept:
        shape[i] = a.shape[i] if i not in bf else b.shape[i]
    return reshape(r, shape)


def _einsum_check_bool(aligned: list, terms: list, letters: str, out: str) -> bool:
    """PyTorch contracts an index that two operands share with its batched matmul, which refuses
    bool unless there is nothing to multiply (then its result is bool): raises, or says whether
    the result is such an empty contraction. Products and one operand's sums take bool."""
    shared = [i for i, c in enumerate(letters) if c not in out and sum(c in t for t in terms) > 1]
    if not shared:
        return False
    size = [math.prod(op.shape[i] for op in aligned) for i in range(len(letters))]  # 0 if empty
    work = math.prod(size[i] for i, c in enumerate(letters) if c in out or i in shared)
    if work:
        raise RuntimeError("einsum: bool tensors are not supported when an index shared by two "
                           "operands is summed; convert with .float() or .long() first")
    return True


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """Sum of products over ``dims`` (the last ``dims`` of ``a`` with the first of ``b``, or
    two lists of dimensions)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "tensordot", tensordot, a, b=b, dims=dims, out=out)) is not _SKIP:
        return _ac_out
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist())
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [wrap_dim(d, a.dim()) for d in da]
    db = [wrap_dim(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = reshape(permute(a, fa + da), (-1, k))
    bm = reshape(permute(b, db + fb), (k, -1))
    return reshape(mm(am, bm), [a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
    if _AUTOCAST.on and (_ac_out := _autocast_call("cross", cross, input, other=other, dim=dim)) is not _SKIP:
        return _ac_out
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.",
                      UserWarning, stacklevel=2)
        dim = next((k for k, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, input.dim())
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    # PyTorch's kernel takes one dtype (no promotion) and no bool, whatever the sizes
    if input.dtype is _dtype.bool:
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(input.dtype)} but found "
                           f"{_type_name(other.dtype)}")
    a0, a1, a2 = (narrow(input, d, k, 1) for k in range(3))
    b0, b1, b2 = (narrow(other, d, k, 1) for k in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2,
                a0 * b1 - a1 * b0], d)


# ------------------------------------------------------------------------------- matrix-vector
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addmv", addmv, input, mat=mat, vec=vec, beta=beta, alpha=alpha)) is not _SKIP:
        return _ac_out
    prod = mv(mat, vec)
    if alpha != 1:
        prod = prod * alpha
    return scaled_input(input, beta) + prod  # (beta == 0: input ignored, NaN too, as PyTorch)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addr", addr, input, vec1=vec1, vec2=vec2, beta=beta, alpha=alpha)) is not _SKIP:
        return _ac_out
    prod = outer(vec1, vec2)
    if alpha != 1:
        prod = prod * alpha
    return scaled_input(input, beta) + prod


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
           ) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if _AUTOCAST.on and (_ac_out := _autocast_call(
            "addbmm", addbmm, input, batch1=batch1, batch2=batch2, beta=beta, alpha=alpha)) is not _SKIP:
        return _ac_out
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3 else
                           "batch2 must be a 3D tensor")
    prod = reduction.sum(matmul(batch1, batch2), 0)
    if alpha != 1:
        prod = prod * alpha
    return scaled_input(input, beta) + prod
