"""OpenCL C source of a fused elementwise group (see :mod:`.fusion`, which records the groups).

A group is a short program of unary/binary nodes over input buffers (*leaves*) and scalars, all
of one floating dtype (float32, float64, or bfloat16 computed in float) and one size;
:func:`fused_source` turns it into one kernel that loads every input, computes the nodes in
registers with the same expressions as the unfused kernels (:mod:`.kernels`), and stores the
outputs that are still needed.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .kernels import CTYPE, HALF16, binary_expr, prelude, unary_expr

__all__ = ["VEC_OPS", "VEC_WIDTH", "fused_source"]

#: ops whose expression is plain IEEE arithmetic, the same on vectors as on scalars
VEC_OPS = frozenset(["add", "sub", "mul", "div", "neg"])
#: lanes of the 64-byte vectors the streaming variant uses, by dtype
VEC_WIDTH = {"float32": 16, "float64": 8}


def fused_source(dtype: str, style: str, prog: tuple | list, nout: int, nleaf: int,
                 nscal: int, stream: bool = False, bcast: Sequence[int | None] = ()) -> str:
    """OpenCL C of one fused group: ``prog`` lists ``(op, args, store_slot)`` in order; an arg is
    a node index (>= 0), a leaf ``-1 - k`` or a scalar ``("s", k)``.

    Arguments: ``n`` (and ``ch`` for the loop style), then per output ``O<s>, o<s>``, per leaf
    ``L<k>, l<k>``, per scalar ``s<k>``. Each work-item loads every leaf, computes the nodes in
    order in registers, then stores the outputs: all loads come before any store.

    ``stream`` (loop style; every op in :data:`VEC_OPS`; operands 64-byte aligned): the chunk runs
    as 64-byte vectors stored with ``__builtin_nontemporal_store``, then a scalar tail. The ops
    are plain IEEE arithmetic and ``FP_CONTRACT`` is off, so lanes compute exactly what the
    scalar loop does.

    ``bcast`` (per leaf, default all ``None``): ``None`` for a contiguous leaf, else the number
    ``T`` of index terms of a *broadcast* leaf (a stride-0 view, e.g. a bias): element ``j`` of the
    group reads ``L<k>[l<k> + sum_t ((j / d<k>_t) % m<k>_t) * u<k>_t]``, the ``3*T`` longs being
    arguments after the leaves (so one kernel serves every shape). In the loop style the terms are
    counters set once per work-item and stepped per element (no division in the loop); such a
    group never streams."""
    t = CTYPE[dtype]
    bc = list(bcast) + [None] * (nleaf - len(bcast))
    # 16-bit floats: loaded into floats, every node rounded to the dtype as the unfused kernels
    # round it, stored as bits; scalars are floats
    bf = dtype in HALF16
    ld16, st16 = HALF16.get(dtype, ("", ""))
    et = "float32" if bf else dtype
    st = "float" if bf else t
    params = ["long n"] + (["long ch"] if style == "cl" else [])
    params += [f"__global {t}* O{s}, long o{s}" for s in range(nout)]
    params += [f"__global const {t}* L{k}, long l{k}" for k in range(nleaf)]
    params += [f"long d{k}_{i}, long m{k}_{i}, long u{k}_{i}"
               for k in range(nleaf) if bc[k] is not None for i in range(bc[k] or 0)]
    params += [f"{st} s{k}" for k in range(nscal)]
    counters = style == "cl"

    def bindex(k: int) -> str:
        """Element index of broadcast leaf ``k`` for group element ``j``."""
        terms = [f"q{k}_{i} * u{k}_{i}" if counters else f"((j / d{k}_{i}) % m{k}_{i}) * u{k}_{i}"
                 for i in range(bc[k] or 0)]
        return " + ".join([f"l{k}"] + terms)

    # loop style: the counters of the broadcast leaves, set at j0 and stepped after each element
    init = "".join(f"long q{k}_{i} = (j0 / d{k}_{i}) % m{k}_{i}, r{k}_{i} = j0 % d{k}_{i};\n    "
                   for k in range(nleaf) if bc[k] is not None for i in range(bc[k] or 0))
    step = "".join(f"\n        if (++r{k}_{i} == d{k}_{i}) {{ r{k}_{i} = 0; "
                   f"if (++q{k}_{i} == m{k}_{i}) q{k}_{i} = 0; }}"
                   for k in range(nleaf) if bc[k] is not None for i in range(bc[k] or 0))

    def body(vt: str, load: str, store: str) -> str:
        def operand(x: Any) -> str:
            if isinstance(x, tuple):
                return f"({vt})(s{x[1]})" if vt != st else f"s{x[1]}"
            return f"x{-1 - x}" if x < 0 else f"v{x}"

        lines = [f"{vt} x{k} = {load.format(p=f'L{k} + l{k}')};" if bc[k] is None else
                 f"{vt} x{k} = {load.replace('[j]', '[0]').format(p=f'L{k} + ' + bindex(k))};"
                 for k in range(nleaf)]
        stores = []
        for i, (op, args, slot) in enumerate(prog):
            expr = unary_expr(op, et) if len(args) == 1 else binary_expr(op, et)
            if bf:
                expr = f"{ld16}({st16}({expr}))"
            binds = f"{vt} a = {operand(args[0])};" + (
                f" {vt} b = {operand(args[1])};" if len(args) == 2 else "")
            # a block per node: the op's expression is written over variables a and b
            lines.append(f"{vt} v{i}; {{ {binds} v{i} = {expr}; }}")
            if slot >= 0:
                stores.append(store.format(v=f"v{i}", p=f"O{slot} + o{slot}"))
        return "\n        ".join(lines + stores)

    scalar = (body("float", ld16 + "(({p})[j])", "({p})[j] = " + st16 + "({v});") if bf
              else body(t, "({p})[j]", "({p})[j] = {v};"))
    if style == "cl" and stream and not any(b is not None for b in bc):
        w = VEC_WIDTH[dtype]
        vt = f"{t}{w}"
        # aligned pointer loads, not vload16: that returns a 16-wide vector through a function,
        # which clang warns about (an ABI note) without AVX-512, and pyopencl shows warnings
        vector = body(vt, f"*(__global const {vt}*)({{p}} + j)",
                      f"__builtin_nontemporal_store({{v}}, (__global {vt}*)({{p}} + j));")
        loop = (f"long j0 = get_global_id(0) * ch, j1 = min(n, j0 + ch);\n"
                f"    long jv = j0 + (j1 - j0) / {w} * {w};\n"
                f"    for (long j = j0; j < jv; j += {w}) {{\n        {vector}\n    }}\n"
                f"    for (long j = jv; j < j1; ++j) {{\n        {scalar}\n    }}")
    elif style == "cl":
        loop = (f"long j0 = get_global_id(0) * ch, j1 = min(n, j0 + ch);\n"
                f"    if (j0 >= n) return;\n    {init}"
                f"for (long j = j0; j < j1; ++j) {{\n        {scalar}{step}\n    }}")
    else:
        loop = f"long j = get_global_id(0);\n    if (j >= n) return;\n    {{\n        {scalar}\n    }}"
    return prelude([dtype]) + f"__kernel void pg_fused({', '.join(params)})\n{{\n    {loop}\n}}\n"
