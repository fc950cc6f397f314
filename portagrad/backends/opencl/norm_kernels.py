"""OpenCL C sources of the normalisation kernels (launched by :mod:`.norms`).

One program per (storage dtype, work-group size ``WG``) holds every kernel. Each kernel runs ONE
work-group per *row* (softmax, layer norm, cross entropy: a row of the reduced axis; batch norm: a
channel), whose ``WG`` work-items stride over the row and combine their partial results with a
tree reduction in local memory, so a whole row (statistics, then the outputs) is one launch. The
exceptions: the column sums of ``layer_norm_backward`` (weight and bias gradients), one
work-item per column in a second kernel; and batch norm on GPUs, whose channels are split into
parts (``batch_norm_part*``): a work-group per (part, channel), partial sums to a scratch buffer,
and each later kernel adds a channel's parts in order (so every group sees the same sums).

Values are computed in ``A``: the storage type for float32/float64, float for float16 and
bfloat16 (loaded with ``LD`` and rounded once by ``ST``). Scalars (``eps``, ``momentum``) are
passed in ``A``. Absent operands (``None`` in the contract) come with a flag of 0 and any buffer.
"""
from __future__ import annotations

from .kernels import CTYPE, HALF16, prelude
from .vectors import SAFE_VECTOR_BYTES, direct_typedefs, vload, vstore

__all__ = ["norm_source"]


def _reduce(var: str, comb: str) -> str:
    """Combine ``var`` over the work-group (tree in local memory ``sh``); every work-item gets
    the result. ``comb`` is an expression of ``a`` and ``b``."""
    return f"""
    sh[l] = {var};
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h >>= 1) {{
        if (l < h) {{ A a = sh[l], b = sh[l + h]; sh[l] = {comb}; }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    {var} = sh[0];
    barrier(CLK_LOCAL_MEM_FENCE);"""


_SUM = "a + b"
_MAX = "((isnan(b) || b > a) ? b : a)"  # NaN propagates

# the row of a (outer, L, inner) contiguous tensor that work-group r reduces: element j is at
# base + j * inner
_ROW = """
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    long base = (r / inner) * L * inner + r % inner;"""


def _softmax() -> str:
    return f"""
__kernel void softmax(__global const S* X, long xo, __global S* O, long oo, long L, long inner,
                      int lg)
{{{_ROW}
    __global const S* x = X + xo + base;
    __global S* o = O + oo + base;
    A m = -INFINITY;
    for (long j = l; j < L; j += WG) {{ A b = LD(x[j * inner]); A a = m; m = {_MAX}; }}
    {_reduce("m", _MAX)}
    A s = 0;
    for (long j = l; j < L; j += WG) s += exp(LD(x[j * inner]) - m);
    {_reduce("s", _SUM)}
    if (lg) {{
        A ls = log(s);
        for (long j = l; j < L; j += WG) o[j * inner] = ST((LD(x[j * inner]) - m) - ls);
    }} else {{
        for (long j = l; j < L; j += WG) o[j * inner] = ST(exp(LD(x[j * inner]) - m) / s);
    }}
}}

__kernel void softmax_backward(__global const S* G, long go, __global const S* Y, long yo,
                               __global S* O, long oo, long L, long inner, int lg)
{{{_ROW}
    __global const S* g = G + go + base;
    __global const S* y = Y + yo + base;
    __global S* o = O + oo + base;
    A s = 0;
    if (lg) {{ for (long j = l; j < L; j += WG) s += LD(g[j * inner]); }}
    else {{ for (long j = l; j < L; j += WG) s += LD(g[j * inner]) * LD(y[j * inner]); }}
    {_reduce("s", _SUM)}
    if (lg) {{
        for (long j = l; j < L; j += WG)
            o[j * inner] = ST(LD(g[j * inner]) - exp(LD(y[j * inner])) * s);
    }} else {{
        for (long j = l; j < L; j += WG) {{
            A yv = LD(y[j * inner]);
            o[j * inner] = ST(yv * (LD(g[j * inner]) - s));
        }}
    }}
}}
"""


def _vloop(vec: bool, body_v: str, body_s: str, n: str) -> str:
    """A loop of the work-item over the row ``[0, n)``: with ``vec``, chunks of ``VW`` elements
    (``body_v`` on ``V`` vectors at ``j``; PoCL turns a vector ``exp`` into one vector-math
    call, where the scalar form calls it per element) and a scalar tail; else element by element
    (``body_s`` at ``j``)."""
    if not vec:
        return f"for (long j = l; j < {n}; j += WG) {{ {body_s} }}"
    return f"""for (long j = (long)l * VW; j + VW <= {n}; j += (long)WG * VW) {{ {body_v} }}
    for (long j = ({n} / VW) * VW + l; j < {n}; j += WG) {{ {body_s} }}"""


def _softmax_c(vec: bool) -> str:
    """Softmax and its gradient over contiguous rows (``inner == 1``), vectorised where an
    ``exp`` is taken."""
    ld = "VLD(x + j)"
    return f"""
__kernel void softmax_c(__global const S* X, long xo, __global S* O, long oo, long L, int lg)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    __global const S* x = X + xo + r * L;
    __global S* o = O + oo + r * L;
    A m = -INFINITY;
    for (long j = l; j < L; j += WG) {{ A b = LD(x[j]); A a = m; m = {_MAX}; }}
    {_reduce("m", _MAX)}
    A s = 0;
    {_vloop(vec, f"s += VSUM(exp({ld} - m));", "s += exp(LD(x[j]) - m);", "L")}
    {_reduce("s", _SUM)}
    if (lg) {{
        A ls = log(s);
        {_vloop(vec, f"VST(({ld} - m) - ls, o + j);", "o[j] = ST((LD(x[j]) - m) - ls);", "L")}
    }} else {{
        {_vloop(vec, f"VST(exp({ld} - m) / s, o + j);", "o[j] = ST(exp(LD(x[j]) - m) / s);",
                "L")}
    }}
}}

__kernel void softmax_backward_c(__global const S* G, long go, __global const S* Y, long yo,
                                 __global S* O, long oo, long L, int lg)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    __global const S* g = G + go + r * L;
    __global const S* y = Y + yo + r * L;
    __global S* o = O + oo + r * L;
    A s = 0;
    if (lg) {{ for (long j = l; j < L; j += WG) s += LD(g[j]); }}
    else {{ for (long j = l; j < L; j += WG) s += LD(g[j]) * LD(y[j]); }}
    {_reduce("s", _SUM)}
    if (lg) {{
        {_vloop(vec, "VST(VLD(g + j) - exp(VLD(y + j)) * s, o + j);",
                "o[j] = ST(LD(g[j]) - exp(LD(y[j])) * s);", "L")}
    }} else {{
        for (long j = l; j < L; j += WG) {{ A yv = LD(y[j]); o[j] = ST(yv * (LD(g[j]) - s)); }}
    }}
}}
"""


def _layer_norm() -> str:
    return f"""
__kernel void layer_norm(__global const S* X, long xo, __global const S* W, long wo,
                         __global const S* B, long bo, __global S* O, long oo,
                         __global S* MU, long mo, __global S* RS, long ro, long N, A eps,
                         int hw, int hb, int hs)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    __global const S* x = X + xo + r * N;
    __global S* o = O + oo + r * N;
    A s = 0;
    for (long j = l; j < N; j += WG) s += LD(x[j]);
    {_reduce("s", _SUM)}
    A mu = N ? s / (A)N : (A)0;
    A v = 0;
    for (long j = l; j < N; j += WG) {{ A d = LD(x[j]) - mu; v += d * d; }}
    {_reduce("v", _SUM)}
    A rs = (A)1 / sqrt((N ? v / (A)N : (A)0) + eps);
    for (long j = l; j < N; j += WG) {{
        A y = (LD(x[j]) - mu) * rs;
        if (hw) y = y * LD(W[wo + j]);
        if (hb) y = y + LD(B[bo + j]);
        o[j] = ST(y);
    }}
    if (hs && l == 0) {{ MU[mo + r] = ST(mu); RS[ro + r] = ST(rs); }}
}}

__kernel void layer_norm_grad_x(__global const S* G, long go, __global const S* X, long xo,
                                __global const S* W, long wo, __global const S* MU, long mo,
                                __global const S* RS, long ro, __global S* O, long oo, long N,
                                int hw)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    __global const S* g = G + go + r * N;
    __global const S* x = X + xo + r * N;
    __global S* o = O + oo + r * N;
    A mu = LD(MU[mo + r]), rs = LD(RS[ro + r]);
    A c1 = 0, c2 = 0;
    for (long j = l; j < N; j += WG) {{
        A gw = LD(g[j]);
        if (hw) gw = gw * LD(W[wo + j]);
        c1 += gw;
        c2 += gw * ((LD(x[j]) - mu) * rs);
    }}
    {_reduce("c1", _SUM)}
    {_reduce("c2", _SUM)}
    c1 = c1 / (A)N;
    c2 = c2 / (A)N;
    for (long j = l; j < N; j += WG) {{
        A gw = LD(g[j]);
        if (hw) gw = gw * LD(W[wo + j]);
        o[j] = ST((gw - c1 - ((LD(x[j]) - mu) * rs) * c2) * rs);
    }}
}}

/* one work-item per column j and part r of the rows: sums over rows [r*MR, (r+1)*MR) of
   g * xhat (weight) and g (bias); with one part (R == 1) the sums are stored, else written
   unrounded to P[r, 0, j] and P[r, 1, j] for layer_norm_grad_wb_sum */
__kernel void layer_norm_grad_wb(__global const S* G, long go, __global const S* X, long xo,
                                 __global const S* MU, long mo, __global const S* RS, long ro,
                                 __global S* GW, long gwo, __global S* GB, long gbo, long M,
                                 long N, int hgw, int hgb, __global A* P, long R, long MR)
{{
    long j = get_global_id(0), r = get_global_id(1);
    if (j >= N) return;
    A sw = 0, sb = 0;
    for (long i = r * MR; i < min(M, (r + 1) * MR); ++i) {{
        A gv = LD(G[go + i * N + j]);
        sw += gv * ((LD(X[xo + i * N + j]) - LD(MU[mo + i])) * LD(RS[ro + i]));
        sb += gv;
    }}
    if (R > 1) {{
        P[(2 * r) * N + j] = sw;
        P[(2 * r + 1) * N + j] = sb;
        return;
    }}
    if (hgw) GW[gwo + j] = ST(sw);
    if (hgb) GB[gbo + j] = ST(sb);
}}

/* the R parts of layer_norm_grad_wb added in order, each column rounded once */
__kernel void layer_norm_grad_wb_sum(__global const A* P, __global S* GW, long gwo,
                                     __global S* GB, long gbo, long N, long R, int hgw, int hgb)
{{
    long j = get_global_id(0);
    if (j >= N) return;
    A sw = 0, sb = 0;
    for (long r = 0; r < R; ++r) {{
        sw += P[(2 * r) * N + j];
        sb += P[(2 * r + 1) * N + j];
    }}
    if (hgw) GW[gwo + j] = ST(sw);
    if (hgb) GB[gbo + j] = ST(sb);
}}
"""


# the elements of channel c of a contiguous (N, C, L) tensor: a loop over n, the work-items
# striding over the L positions of each
_CHANNEL = """
    long c = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    long cnt = NB * L;"""


def _batch_norm() -> str:
    loop = "for (long n = 0; n < NB; ++n) for (long k = l; k < L; k += WG)"
    at = "(n * C + c) * L + k"
    return f"""
__kernel void batch_norm(__global const S* X, long xo, __global const S* W, long wo,
                         __global const S* B, long bo, __global S* RM, long rmo,
                         __global S* RV, long rvo, __global S* O, long oo,
                         __global S* MU, long mo, __global S* RS, long ro, long NB, long C,
                         long L, A momentum, A eps, int hw, int hb, int hrm, int hrv)
{{{_CHANNEL}
    __global const S* x = X + xo;
    A s = 0;
    {loop} s += LD(x[{at}]);
    {_reduce("s", _SUM)}
    A mu = s / (A)cnt;
    A v = 0;
    {loop} {{ A d = LD(x[{at}]) - mu; v += d * d; }}
    {_reduce("v", _SUM)}
    A var = v / (A)cnt;
    A rs = (A)1 / sqrt(var + eps);
    A wv = hw ? LD(W[wo + c]) : (A)1, bv = hb ? LD(B[bo + c]) : (A)0;
    {loop} O[oo + {at}] = ST(((LD(x[{at}]) - mu) * rs) * wv + bv);
    if (l == 0) {{
        MU[mo + c] = ST(mu);
        RS[ro + c] = ST(rs);
        if (hrm) RM[rmo + c] = ST(LD(RM[rmo + c]) * ((A)1 - momentum) + mu * momentum);
        if (hrv) RV[rvo + c] = ST(LD(RV[rvo + c]) * ((A)1 - momentum)
                                  + var * ((A)cnt / (A)max(cnt - 1, (long)1)) * momentum);
    }}
}}

__kernel void batch_norm_backward(__global const S* G, long go, __global const S* X, long xo,
                                  __global const S* W, long wo, __global const S* MU, long mo,
                                  __global const S* RS, long ro, __global S* GX, long gxo,
                                  __global S* GW, long gwo, __global S* GB, long gbo, long NB,
                                  long C, long L, int hw, int hgx, int hgw, int hgb)
{{{_CHANNEL}
    __global const S* g = G + go;
    __global const S* x = X + xo;
    A mu = LD(MU[mo + c]), rs = LD(RS[ro + c]);
    A sg = 0, sgx = 0;
    {loop} {{ A gv = LD(g[{at}]); sg += gv; sgx += gv * ((LD(x[{at}]) - mu) * rs); }}
    {_reduce("sg", _SUM)}
    {_reduce("sgx", _SUM)}
    if (l == 0) {{
        if (hgw) GW[gwo + c] = ST(sgx);
        if (hgb) GB[gbo + c] = ST(sg);
    }}
    if (!hgx || cnt == 0) return;
    A sc = hw ? rs * LD(W[wo + c]) : rs;
    A m1 = sg / (A)cnt, m2 = sgx / (A)cnt;
    {loop} GX[gxo + {at}] = ST((LD(g[{at}]) - m1 - ((LD(x[{at}]) - mu) * rs) * m2) * sc);
}}
"""


# the elements of part p of channel c of a contiguous (N, C, L) tensor: the channel's NB*L
# elements in (n, k) order cut into parts of PL, the work-items striding over the part's flat
# index (so a short L, ResNet's last layers' 4x4, still occupies every work-item)
_PART = """
    long c = get_group_id(1), p = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    long cnt = NB * L, e0 = p * PL, e1 = min(cnt, e0 + PL);"""
_PLOOP = "for (long e = e0 + l; e < e1; e += WG)"
_PAT = "long n = e / L; long at = (n * C + c) * L + (e - n * L);"


def _sum_parts(var: str, row: str) -> str:
    """``var`` = the ``P`` partial sums ``SC[row * P + q]`` added in order: every work-group of
    the channel computes the same value, bit for bit."""
    return f"A {var} = 0; for (long q = 0; q < P; ++q) {var} += SC[({row}) * P + q];"


def _batch_norm_parts() -> str:
    return f"""
/* stage 0: SC[c, p] = sum of x over part p of channel c; stage 1: SC[C + c, p] = sum of
   (x - mean)^2, the mean from stage 0's sums */
__kernel void batch_norm_part(__global const S* X, long xo, __global A* SC, long NB, long C,
                              long L, long P, long PL, int stage)
{{{_PART}
    __global const S* x = X + xo;
    A mu = 0;
    if (stage) {{ {_sum_parts("s0", "c")} mu = s0 / (A)cnt; }}
    A s = 0;
    {_PLOOP} {{ {_PAT} A d = LD(x[at]) - mu; s += stage ? d * d : d; }}
    {_reduce("s", _SUM)}
    if (l == 0) SC[(stage * C + c) * P + p] = s;
}}

/* the output of part p of channel c; part 0 also stores the statistics and running ones */
__kernel void batch_norm_part_out(__global const S* X, long xo, __global const S* W, long wo,
                                  __global const S* B, long bo, __global S* RM, long rmo,
                                  __global S* RV, long rvo, __global S* O, long oo,
                                  __global S* MU, long mo, __global S* RS, long ro,
                                  __global const A* SC, long NB, long C, long L, long P, long PL,
                                  A momentum, A eps, int hw, int hb, int hrm, int hrv)
{{
    long c = get_group_id(1), p = get_group_id(0);
    int l = get_local_id(0);
    long cnt = NB * L, e0 = p * PL, e1 = min(cnt, e0 + PL);
    {_sum_parts("s", "c")}
    {_sum_parts("v", "C + c")}
    A mu = s / (A)cnt, var = v / (A)cnt;
    A rs = (A)1 / sqrt(var + eps);
    A wv = hw ? LD(W[wo + c]) : (A)1, bv = hb ? LD(B[bo + c]) : (A)0;
    __global const S* x = X + xo;
    {_PLOOP} {{ {_PAT} O[oo + at] = ST(((LD(x[at]) - mu) * rs) * wv + bv); }}
    if (p == 0 && l == 0) {{
        MU[mo + c] = ST(mu);
        RS[ro + c] = ST(rs);
        if (hrm) RM[rmo + c] = ST(LD(RM[rmo + c]) * ((A)1 - momentum) + mu * momentum);
        if (hrv) RV[rvo + c] = ST(LD(RV[rvo + c]) * ((A)1 - momentum)
                                  + var * ((A)cnt / (A)max(cnt - 1, (long)1)) * momentum);
    }}
}}

/* SC[c, p] = sum of g, SC[C + c, p] = sum of g * xhat over part p of channel c */
__kernel void batch_norm_backward_part(__global const S* G, long go, __global const S* X, long xo,
                                       __global const S* MU, long mo, __global const S* RS,
                                       long ro, __global A* SC, long NB, long C, long L, long P,
                                       long PL)
{{{_PART}
    __global const S* g = G + go;
    __global const S* x = X + xo;
    A mu = LD(MU[mo + c]), rs = LD(RS[ro + c]);
    A sg = 0, sgx = 0;
    {_PLOOP} {{ {_PAT} A gv = LD(g[at]); sg += gv; sgx += gv * ((LD(x[at]) - mu) * rs); }}
    {_reduce("sg", _SUM)}
    {_reduce("sgx", _SUM)}
    if (l == 0) {{ SC[c * P + p] = sg; SC[(C + c) * P + p] = sgx; }}
}}

/* the input gradient of part p of channel c; part 0 also stores the weight and bias ones */
__kernel void batch_norm_backward_part_gx(__global const S* G, long go, __global const S* X,
                                          long xo, __global const S* W, long wo,
                                          __global const S* MU, long mo, __global const S* RS,
                                          long ro, __global S* GX, long gxo, __global S* GW,
                                          long gwo, __global S* GB, long gbo,
                                          __global const A* SC, long NB, long C, long L, long P,
                                          long PL, int hw, int hgx, int hgw, int hgb)
{{
    long c = get_group_id(1), p = get_group_id(0);
    int l = get_local_id(0);
    long cnt = NB * L, e0 = p * PL, e1 = min(cnt, e0 + PL);
    {_sum_parts("sg", "c")}
    {_sum_parts("sgx", "C + c")}
    if (p == 0 && l == 0) {{
        if (hgw) GW[gwo + c] = ST(sgx);
        if (hgb) GB[gbo + c] = ST(sg);
    }}
    if (!hgx || cnt == 0) return;
    __global const S* g = G + go;
    __global const S* x = X + xo;
    A mu = LD(MU[mo + c]), rs = LD(RS[ro + c]);
    A sc = hw ? rs * LD(W[wo + c]) : rs;
    A m1 = sg / (A)cnt, m2 = sgx / (A)cnt;
    {_PLOOP} {{ {_PAT} GX[gxo + at] = ST((LD(g[at]) - m1 - ((LD(x[at]) - mu) * rs) * m2) * sc); }}
}}
"""


def _cross_entropy(vec: bool) -> str:
    return f"""
__kernel void cross_entropy(__global const S* X, long xo, __global const long* T, long to,
                            __global const S* W, long wo, __global S* LOSS, long lo,
                            __global S* LSE, long so, __global S* RW, long rwo, long Cn,
                            long ignore_index, int hw)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __local A sh[WG];
    __global const S* x = X + xo + r * Cn;
    A m = -INFINITY;
    for (long j = l; j < Cn; j += WG) {{ A b = LD(x[j]); A a = m; m = {_MAX}; }}
    {_reduce("m", _MAX)}
    A s = 0;
    {_vloop(vec, "s += VSUM(exp(VLD(x + j) - m));", "s += exp(LD(x[j]) - m);", "Cn")}
    {_reduce("s", _SUM)}
    if (l == 0) {{
        A lse = log(s) + m;
        long t = T[to + r];
        A w = 0, loss = 0;
        if (t != ignore_index && t >= 0 && t < Cn) {{
            w = hw ? LD(W[wo + t]) : (A)1;
            loss = w * (lse - LD(x[t]));
        }} else if (t != ignore_index) {{  /* not a class: NaN, never a read out of bounds
                                               (the target check reports it, maybe later) */
            w = (A)NAN;
            loss = (A)NAN;
        }}
        LSE[so + r] = ST(lse);
        RW[rwo + r] = ST(w);
        LOSS[lo + r] = ST(loss);
    }}
}}

__kernel void cross_entropy_backward(__global const S* X, long xo, __global const long* T,
                                     long to, __global const S* LSE, long so,
                                     __global const S* K, long ko, __global S* O, long oo,
                                     long Cn)
{{
    long r = get_group_id(0);
    int l = get_local_id(0);
    __global const S* x = X + xo + r * Cn;
    __global S* o = O + oo + r * Cn;
    A lse = LD(LSE[so + r]), k = LD(K[ko + r]);
    long t = T[to + r];
    {_vloop(vec, "VST(k * exp(VLD(x + j) - lse), o + j);",
            "o[j] = ST(k * exp(LD(x[j]) - lse));", "Cn")}
    barrier(CLK_GLOBAL_MEM_FENCE);  /* the target's element, written above, is this group's */
    if (l == 0 && t >= 0 && t < Cn) o[t] = ST(k * (exp(LD(x[t]) - lse) - (A)1));
}}
"""


def norm_source(dtype: str, wg: int, direct: bool = False) -> str:
    """Every normalisation kernel for storage ``dtype`` with work-groups of ``wg`` items (a power
    of two); ``direct``: vector loads and stores through pointers (see :mod:`.vectors`)."""
    s = CTYPE[dtype]
    if dtype in HALF16:  # stored as bits, computed in float
        a, ld, st = "float", f"{HALF16[dtype][0]}(v)", f"{HALF16[dtype][1]}(v)"
    else:
        a, ld, st = s, "(v)", "(v)"
    vec = dtype in ("float32", "float64")  # vector loads where storage and computation agree
    # 32-byte vectors: eight floats, four doubles (a builtin on a wider one can break PoCL's
    # kernel cache, see .vectors)
    vw = SAFE_VECTOR_BYTES // (8 if dtype == "float64" else 4)
    head = (f"{prelude([dtype])}\n#define WG {wg}\ntypedef {s} S;\ntypedef {a} A;\n"
            f"#define LD(v) {ld}\n#define ST(v) {st}\n#define VW {vw}\n")
    if vec:
        lanes = [f"(v).s{i}" for i in range(vw)]
        while len(lanes) > 1:  # a pairwise tree, as for eight lanes before
            lanes = [f"({lanes[i]} + {lanes[i + 1]})" for i in range(0, len(lanes), 2)]
        head += (f"typedef {s}{vw} V;\n#define VSUM(v) {lanes[0]}\n"
                 + (direct_typedefs(s, [vw]) if direct else "")
                 + f"#define VLD(p) {vload(s, vw, '(p)', direct)}\n"
                 f"#define VST(v, p) {vstore(s, vw, '(v)', '(p)', direct)}\n")
    return (head + _softmax() + _softmax_c(vec) + _layer_norm() + _batch_norm() + _batch_norm_parts()
            + _cross_entropy(vec))
