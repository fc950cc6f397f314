"""OpenCL C source of the fused attention kernels (launched by :mod:`.attention`).

One program per (storage dtype, mask kind, head sizes ``D``/``DV``, work-group size ``WG``).
Flash-attention style: ``attn_fwd`` runs one work-group per (batch entry, block of ``WG`` query
rows), one query row per work-item; keys and values stream through local memory in tiles of
``WG`` rows, and each row keeps a running maximum, sum and output accumulator (online softmax),
so no score matrix exists anywhere; it writes the output and the row log-sum-exp. The backward
(flash-attention 2) recomputes the probabilities ``exp(s - lse)``: ``attn_bwd_dq`` (query rows,
key tiles) gives ``dq`` and the row values ``delta = rowsum(g * out)``, then ``attn_bwd_dkv``
(one work-item per key row, query tiles through local memory) gives ``dk`` and ``dv``; no atomics.

Values compute in ``A`` (float for 16-bit storage, loaded with ``LD`` and rounded once by
``ST``). The mask (``MK``: 0 none, 1 bool, 2 additive of the storage dtype) is read through three
strides (batch, row, column) so broadcast masks are never expanded. ``causal`` keeps key j for
query i when ``j <= i``.
"""
from __future__ import annotations

from .kernels import CTYPE, HALF16, prelude

__all__ = ["attention_source"]

# the score of query row `i` (private q[]) against key `t` of the tile `kt`, masked; `ok` says
# whether the key takes part
_SCORE = """
            A x = 0;
            for (int d = 0; d < D; ++d) x += QV[d] * KT[t * D + d];
            x *= scale;
            bool ok = !(causal && jj > i);
#if MK == 1
            ok = ok && M[mo + n * msb + i * msl + jj * mss] != 0;
#elif MK == 2
            x += LD(M[mo + n * msb + i * msl + jj * mss]);
#endif
            ok = ok && x != -INFINITY;"""


def _fwd() -> str:
    score = _SCORE.replace("QV", "q").replace("KT", "kt")
    return f"""
__kernel void attn_fwd(__global const S* Q, long qo, __global const S* K, long ko,
                       __global const S* V, long vo, __global const MT* M, long mo, long msb,
                       long msl, long mss, __global S* O, long oo, __global A* LSE, long lo,
                       long L, long SN, int causal, A scale)
{{
    long n = get_group_id(1);
    int l = get_local_id(0);
    long i = get_group_id(0) * WG + l;
    __local A kt[WG * D];
    __local A vt[WG * DV];
    A q[D], acc[DV], sc[WG];
    bool live = i < L;
    for (int d = 0; d < D; ++d) q[d] = live ? LD(Q[qo + (n * L + i) * D + d]) : 0;
    for (int d = 0; d < DV; ++d) acc[d] = 0;
    A m = -INFINITY, s = 0;
    int bad = 0;  // a NaN score seen
    long last = min(L - 1, (long)(get_group_id(0) * WG + WG - 1));  // the block's last row
    for (long j0 = 0; j0 < SN; j0 += WG) {{
        if (causal && j0 > last) break;  // uniform over the work-group
        barrier(CLK_LOCAL_MEM_FENCE);
        long jl = j0 + l;
        if (jl < SN) {{
            for (int d = 0; d < D; ++d) kt[l * D + d] = LD(K[ko + (n * SN + jl) * D + d]);
            for (int d = 0; d < DV; ++d) vt[l * DV + d] = LD(V[vo + (n * SN + jl) * DV + d]);
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        int tn = (int)min((long)WG, SN - j0);
        // the tile's scores first, then one rescale per tile (not per key) and branch-free
        // accumulation loops, which CPU compilers vectorise across work-items
        A tm = -INFINITY;
        for (int t = 0; t < tn; ++t) {{
            long jj = j0 + t;{score}
            sc[t] = ok ? x : -INFINITY;
            bad |= ok && isnan(x);
            tm = fmax(tm, sc[t]);
        }}
        if (tm == -INFINITY) continue;  // nothing in this tile for this row
        if (tm > m) {{  // a new maximum: rescale what was summed so far
            A c = exp(m - tm);
            s *= c;
            for (int d = 0; d < DV; ++d) acc[d] *= c;
            m = tm;
        }}
        for (int t = 0; t < tn; ++t) {{
            A p = exp(sc[t] - m);
            s += p;
            for (int d = 0; d < DV; ++d) acc[d] += p * vt[t * DV + d];
        }}
    }}
    if (!live) return;
    // a row that attends to nothing: output 0 and lse -inf (its gradients are then 0); a NaN
    // score (which fmax passes over) makes the row NaN, as PyTorch's math path
    if (bad) s = NAN;
    A r = s == 0 ? 0 : 1 / s;
    for (int d = 0; d < DV; ++d) O[oo + (n * L + i) * DV + d] = ST(acc[d] * r);
    LSE[lo + n * L + i] = s == 0 ? -INFINITY : m + log(s);
}}
"""


def _bwd_dq() -> str:
    score = _SCORE.replace("QV", "q").replace("KT", "kt")
    return f"""
__kernel void attn_bwd_dq(__global const S* G, long go, __global const S* Q, long qo,
                          __global const S* K, long ko, __global const S* V, long vo,
                          __global const S* O, long oo, __global const A* LSE, long lo,
                          __global const MT* M, long mo, long msb, long msl, long mss,
                          __global S* DQ, long dqo, __global A* DELTA, long L, long SN,
                          int causal, A scale)
{{
    long n = get_group_id(1);
    int l = get_local_id(0);
    long i = get_group_id(0) * WG + l;
    __local A kt[WG * D];
    __local A vt[WG * DV];
    A q[D], g[DV], dq[D];
    bool live = i < L;
    A lse = live ? LSE[lo + n * L + i] : -INFINITY;
    A delta = 0;
    for (int d = 0; d < D; ++d) {{ q[d] = live ? LD(Q[qo + (n * L + i) * D + d]) : 0; dq[d] = 0; }}
    for (int d = 0; d < DV; ++d) {{
        g[d] = live ? LD(G[go + (n * L + i) * DV + d]) : 0;
        delta += g[d] * (live ? LD(O[oo + (n * L + i) * DV + d]) : 0);
    }}
    long last = min(L - 1, (long)(get_group_id(0) * WG + WG - 1));
    for (long j0 = 0; j0 < SN; j0 += WG) {{
        if (causal && j0 > last) break;
        barrier(CLK_LOCAL_MEM_FENCE);
        long jl = j0 + l;
        if (jl < SN) {{
            for (int d = 0; d < D; ++d) kt[l * D + d] = LD(K[ko + (n * SN + jl) * D + d]);
            for (int d = 0; d < DV; ++d) vt[l * DV + d] = LD(V[vo + (n * SN + jl) * DV + d]);
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live || lse == -INFINITY) continue;
        int tn = (int)min((long)WG, SN - j0);
        for (int t = 0; t < tn; ++t) {{
            long jj = j0 + t;{score}
            if (!ok) continue;
            A p = exp(x - lse);
            A dp = 0;
            for (int d = 0; d < DV; ++d) dp += g[d] * vt[t * DV + d];
            A ds = p * (dp - delta);
            for (int d = 0; d < D; ++d) dq[d] += ds * kt[t * D + d];
        }}
    }}
    if (!live) return;
    for (int d = 0; d < D; ++d) DQ[dqo + (n * L + i) * D + d] = ST(dq[d] * scale);
    DELTA[n * L + i] = delta;
}}
"""


def _bwd_dkv() -> str:
    # here the work-item owns key row jj and the tile holds query rows: i = i0 + t
    score = (_SCORE.replace("QV[d] * KT[t * D + d]", "qt[t * D + d] * k[d]"))
    return f"""
__kernel void attn_bwd_dkv(__global const S* G, long go, __global const S* Q, long qo,
                           __global const S* K, long ko, __global const S* V, long vo,
                           __global const A* LSE, long lo, __global const A* DELTA,
                           __global const MT* M, long mo, long msb, long msl, long mss,
                           __global S* DK, long dko, __global S* DV_, long dvo, long L, long SN,
                           int causal, A scale)
{{
    long n = get_group_id(1);
    int l = get_local_id(0);
    long jj = get_group_id(0) * WG + l;
    __local A qt[WG * D];
    __local A gt[WG * DV];
    __local A lt[WG];
    __local A et[WG];
    A k[D], v[DV], dk[D], dv[DV];
    bool live = jj < SN;
    for (int d = 0; d < D; ++d) {{ k[d] = live ? LD(K[ko + (n * SN + jj) * D + d]) : 0; dk[d] = 0; }}
    for (int d = 0; d < DV; ++d) {{ v[d] = live ? LD(V[vo + (n * SN + jj) * DV + d]) : 0; dv[d] = 0; }}
    long first = get_group_id(0) * WG;  // the block's first key
    for (long i0 = 0; i0 < L; i0 += WG) {{
        if (causal && i0 + WG - 1 < first) continue;  // uniform: no query here sees these keys
        barrier(CLK_LOCAL_MEM_FENCE);
        long il = i0 + l;
        if (il < L) {{
            for (int d = 0; d < D; ++d) qt[l * D + d] = LD(Q[qo + (n * L + il) * D + d]);
            for (int d = 0; d < DV; ++d) gt[l * DV + d] = LD(G[go + (n * L + il) * DV + d]);
            lt[l] = LSE[lo + n * L + il];
            et[l] = DELTA[n * L + il];
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        int tn = (int)min((long)WG, L - i0);
        for (int t = 0; t < tn; ++t) {{
            long i = i0 + t;
            if (lt[t] == -INFINITY) continue;{score}
            if (!ok) continue;
            A p = exp(x - lt[t]);
            A dp = 0;
            for (int d = 0; d < DV; ++d) {{ dv[d] += p * gt[t * DV + d]; dp += gt[t * DV + d] * v[d]; }}
            A ds = p * (dp - et[t]);
            for (int d = 0; d < D; ++d) dk[d] += ds * qt[t * D + d];
        }}
    }}
    if (!live) return;
    for (int d = 0; d < D; ++d) DK[dko + (n * SN + jj) * D + d] = ST(dk[d] * scale);
    for (int d = 0; d < DV; ++d) DV_[dvo + (n * SN + jj) * DV + d] = ST(dv[d]);
}}
"""


def attention_source(dtype: str, mask: int, d: int, dv: int, wg: int) -> str:
    """The three attention kernels for storage ``dtype``, mask kind ``mask`` (0 none, 1 bool, 2
    additive), head sizes ``d`` (queries/keys) and ``dv`` (values), work-groups of ``wg``."""
    s = CTYPE[dtype]
    if dtype in HALF16:
        a, ld, st = "float", f"{HALF16[dtype][0]}(v)", f"{HALF16[dtype][1]}(v)"
    else:
        a, ld, st = s, "(v)", "(v)"
    mt = "uchar" if mask == 1 else s
    head = (f"{prelude([dtype])}\n#define WG {wg}\n#define D {d}\n#define DV {dv}\n"
            f"#define MK {mask}\ntypedef {s} S;\ntypedef {a} A;\ntypedef {mt} MT;\n"
            f"#define LD(v) {ld}\n#define ST(v) {st}\n")
    return head + _fwd() + _bwd_dq() + _bwd_dkv()
