"""Packed register-block GEMM for CPU OpenCL devices (GEMM family "packed").

The plain CPU kernel (family "cpu" in :mod:`.gemm`) reads its operands where they lie: a
work-item's ``RM`` rows of ``a`` and ``NB`` columns of ``b`` are ``K`` rows apart in memory. Once a
row is a multiple of 4 KiB long (``n = 1024`` float32) every one of those ``K`` loads falls into the
same cache set and a different page, and the kernel slows down several times over as sizes grow.

This family first copies the operands into *panels* (the layout of BLIS/GotoBLAS "packing"):
``a`` as ``(ceil(M/RM), K, RM)`` and ``b`` as ``(ceil(N/NB), K, NB)``, zero-padded to whole panels,
so a work-item walks two contiguous streams. The copies cost ``O(MK + KN)`` next to the product's
``O(MNK)``. A tile (:class:`PackedTile`) also fixes

* ``kc``: the depth of a pass (0: all of ``K`` in one pass); with ``kc`` the product runs as
  ``ceil(K/kc)`` launches, each adding its slice to ``out``, so the panels a pass touches stay in
  cache while other work-items reuse them;
* ``rowfast``: whether neighbouring work-items take neighbouring row panels (sharing a panel of
  ``b``) or neighbouring column panels (sharing one of ``a``).

Which tile wins depends on the sizes and the cache hierarchy, so :mod:`.gemm_tune` times a few
per device and size class. Broadcast batches (batch stride 0, e.g. a convolution's weight) are
packed once. Ragged edges need no second kernel: the panels are zero-padded and the edge blocks
store through bounds checks.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .kernels import CTYPE, HALF16, half16_helpers
from .vectors import vload, vstore

__all__ = ["PACKED_TILES", "PackedTile", "launch_packed", "packed_source"]

_I64 = np.int64
_KRUN = 64  # k values per work-item of the k-contiguous packing kernel


class PackedTile(NamedTuple):
    """A work-item's block, ``rm x (v*w)`` accumulators held as ``v`` vectors of ``w`` per row;
    ``kc``: depth of one pass over ``k`` (0: all of it); ``rowfast``: neighbouring work-items on
    neighbouring row panels (else column panels)."""

    rm: int = 8
    v: int = 1
    w: int = 16
    kc: int = 0
    rowfast: bool = True

    @property
    def nb(self) -> int:
        """Columns of a work-item's block (``v * w``)."""
        return self.v * self.w

    @property
    def name(self) -> str:
        """Short label, e.g. ``8x1x16/k256/rows``."""
        return (f"{self.rm}x{self.v}x{self.w}/k{self.kc or 'all'}/"
                + ("rows" if self.rowfast else "cols"))


#: candidate tiles by dtype, best guess first (the first is the default when nothing is timed).
#: 16 float32 lanes fill one AVX-512 register (two AVX2 ones); 256-deep passes keep a panel of
#: ``b`` (16 KiB) in L1 and the pass's panels of ``a`` in L2. The first tile, 4 x 2 vectors of
#: 32 bytes, is the one whose eight accumulators stay in the 16 registers of AVX2 (what PoCL 3.0
#: compiles for, even on AVX-512 CPUs): the tile the heuristic takes, and the tuner's usual pick
#: on PoCL; the wider ones are for drivers that use AVX-512.
PACKED_TILES: dict[str, tuple[PackedTile, ...]] = {
    "float32": (PackedTile(4, 2, 8, 256, True), PackedTile(4, 2, 8, 0, True),
                PackedTile(8, 1, 16, 0, True), PackedTile(8, 1, 16, 256, False),
                PackedTile(8, 2, 8, 256, True), PackedTile(4, 2, 16, 256, True)),
    "float64": (PackedTile(4, 2, 4, 128, True), PackedTile(8, 1, 8, 0, True),
                PackedTile(8, 1, 8, 128, False), PackedTile(8, 2, 4, 128, True),
                PackedTile(4, 2, 8, 128, True)),
}
# 16-bit floats: float32's blocks over 16-bit panels, each product in one pass over k (a pass
# adds into ``out``, which would round a 16-bit output once per pass)
for _dt in HALF16:
    PACKED_TILES[_dt] = (PackedTile(4, 2, 8, 0, True), PackedTile(8, 1, 16, 0, True),
                         PackedTile(8, 2, 8, 0, True), PackedTile(4, 2, 16, 0, True))
_LANES = "0123456789abcdef"


#: the panel element of a 16-bit float: bfloat16 panels hold its bits (widened to float by a shift
#: as the tile kernel loads them); float16 is widened as it is packed, since its conversion in the
#: inner loop costs more than the multiply-adds (2.5x slower than float32 at 1024^3 on PoCL)
_PANEL = {"bfloat16": "ushort", "float16": "float"}


def _tile_kernel(dtype: str, tile: PackedTile, c_unit: bool, name: str) -> str:
    rm, v, w = tile.rm, tile.v, tile.w
    nb = v * w
    ot = CTYPE[dtype]
    t = _PANEL.get(dtype, ot)
    # 16-bit floats: float accumulators, each output rounded once (16-bit tiles make one pass,
    # so beta is 0); bfloat16 panels are converted as loaded
    st = HALF16[dtype][1] if dtype in HALF16 else ""
    ld = HALF16[dtype][0] if t == "ushort" else ""
    ct = "float" if st else t
    vt = f"{ct}{w}"
    acc = "\n    ".join(f"{vt} c{i}_{j} = 0;" for i in range(rm) for j in range(v))
    vld = f"{ld}_{w}" if ld else ""
    bl = "".join(f"{vt} b{j} = {vld}(*(__global const {t}{w}*)(bk + {j * w}));\n        "
                 for j in range(v))
    al = "".join(f"{ct} a{i} = {ld}(ak[{i}]);\n        " for i in range(rm))
    fma = "\n        ".join(f"c{i}_{j} += a{i} * b{j};" for i in range(rm) for j in range(v))
    full, edge = [], []
    for i in range(rm):
        for j in range(v):
            if st:
                for lane in range(w):
                    col = j * w + lane
                    dst = f"cp[{i} * scm + {col} * scn]"
                    val = f"{st}(c{i}_{j}.s{_LANES[lane]})"
                    full.append(f"{dst} = {val};")
                    edge.append(f"if ({i} < mr && {col} < nr) {dst} = {val};")
                continue
            if c_unit:
                p = f"cp + {i} * scm + {j * w}"
                # at most 32-byte vload/vstore calls (see .vectors: PoCL's kernel cache)
                full.append(f"{{ {vt} o = c{i}_{j}; if (beta) o += {vload(t, w, p)}; "
                            f"{vstore(t, w, 'o', p)} }}")
            for lane in range(w):
                col = j * w + lane
                dst = f"cp[{i} * scm + {col} * scn]"
                s = f"c{i}_{j}.s{_LANES[lane]}"
                if not c_unit:
                    full.append(f"{dst} = beta ? {dst} + {s} : {s};")
                edge.append(f"if ({i} < mr && {col} < nr) {dst} = beta ? {dst} + {s} : {s};")
    ids = ("long ip = get_global_id(0), jp = get_global_id(1);" if tile.rowfast
           else "long jp = get_global_id(0), ip = get_global_id(1);")
    return f"""
__kernel void {name}(__global const {t}* restrict Ap, long apb, __global const {t}* restrict Bp,
                     long bpb, __global {ot}* C, long co, long scb, long scm, long scn,
                     long M, long N, long K, long k0, long kc, int beta)
{{
    {ids}
    long bt = get_global_id(2);
    __global const {t}* ak = Ap + bt * apb + (ip * K + k0) * {rm};
    __global const {t}* bk = Bp + bt * bpb + (jp * K + k0) * {nb};
    {acc}
    for (long k = 0; k < kc; ++k) {{
        {bl}{al}{fma}
        ak += {rm}; bk += {nb};
    }}
    long row = ip * {rm}, col = jp * {nb};
    __global {ot}* cp = C + co + bt * scb + row * scm + col * scn;
    if (row + {rm} <= M && col + {nb} <= N) {{
        {chr(10).join('        ' + x for x in full).lstrip()}
    }} else {{
        long mr = M - row, nr = N - col;
        {chr(10).join('        ' + x for x in edge).lstrip()}
    }}
}}
"""


def _kernel_name(i: int) -> str:
    return f"gemm_p{i}"


def packed_source(dtype: str, c_unit: bool) -> str:
    """One program with a packing kernel per panel width (``gemm_pack4``, ...) and a main kernel per tile of
    :data:`PACKED_TILES` (``gemm_p0``, ``gemm_p1``, ...): one build serves every candidate."""
    t = CTYPE[dtype]
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # a*b+c as one FMA: GEMM is not bit-exact anyway
    if dtype == "float64":
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    pt = _PANEL.get(dtype, t)  # the panels' element type
    # the packing copy: bits, or float16 widened to float (x() reads element i of X)
    px = "pg_h2f(x[{i}])" if dtype == "float16" else "x[{i}]"
    if dtype in HALF16:
        head += half16_helpers(dtype, sorted({tile.w for tile in PACKED_TILES[dtype]}
                                             if pt == "ushort" else ()))
    widths = sorted({w for tile in PACKED_TILES[dtype] for w in (tile.rm, tile.nb)})
    pack = "".join(f"""
/* P[bt][p][k][r] = X[bt][p*{r} + r][k] (0 past E rows): the panel layout of either operand, with
   (sx, sk) the strides of X along its panel axis (m of a, n of b) and along k; the width is a
   constant so that whole panels copy as unrolled (vectorisable) loops */
__kernel void gemm_pack{r}(__global const {t}* restrict X, long xo, long sb, long sx, long sk,
                        __global {pt}* restrict P, long E, long K)
{{
    long k = get_global_id(0), p = get_global_id(1), bt = get_global_id(2);
    long np = get_global_size(1);
    __global const {t}* x = X + xo + bt * sb + p * {r} * sx + k * sk;
    __global {pt}* d = P + ((bt * np + p) * K + k) * {r};
    long r1 = E - p * {r};
    if (r1 >= {r}) {{
        if (sx == 1) {{
            #pragma unroll
            for (int r = 0; r < {r}; ++r) d[r] = {px.format(i='r')};
        }} else {{
            #pragma unroll
            for (int r = 0; r < {r}; ++r) d[r] = {px.format(i='r * sx')};
        }}
    }} else {{
        for (long r = 0; r < {r}; ++r) d[r] = r < r1 ? {px.format(i='r * sx')} : ({pt})0;
    }}
}}

/* the same copy when k has unit stride and the panel axis does not (a row-major a): a
   work-item copies a run of {_KRUN} k values of every row of its panel, reading {r} contiguous
   streams and writing one contiguous {r * _KRUN}-element block, instead of gathering {r} values
   far apart per k */
__kernel void gemm_packk{r}(__global const {t}* restrict X, long xo, long sb, long sx, long sk,
                         __global {pt}* restrict P, long E, long K)
{{
    long k0 = get_global_id(0) * {_KRUN}, p = get_global_id(1), bt = get_global_id(2);
    long np = get_global_size(1), k1 = min(K, k0 + {_KRUN});
    __global const {t}* x = X + xo + bt * sb + p * {r} * sx;
    __global {pt}* d = P + (bt * np + p) * K * {r};
    long r1 = min((long){r}, E - p * {r});
    for (long r = 0; r < r1; ++r)
        for (long k = k0; k < k1; ++k) d[k * {r} + r] = {px.format(i='r * sx + k')};
    for (long r = r1; r < {r}; ++r)
        for (long k = k0; k < k1; ++k) d[k * {r} + r] = ({pt})0;
}}
""" for r in widths)
    tiles = "".join(_tile_kernel(dtype, tile, c_unit, _kernel_name(i))
                    for i, tile in enumerate(PACKED_TILES[dtype]))
    return head + pack + tiles


_PACK_TYPES = [None] + [_I64] * 4 + [None] + [_I64] * 2
_MAIN_TYPES = ([None, _I64, None, _I64, None] + [_I64] * 4 + [_I64] * 3 + [_I64, _I64, np.int32])


def _pack(dev: Any, key: tuple, src: Any, x: Any, bsz: int, sb: int, sx: int, sk: int, ext: int,
          k: int, r: int) -> tuple[Any, int]:
    """Pack operand view ``x`` (panel axis ``ext`` long, stride ``sx``; ``k`` along ``sk``) into a
    new buffer of ``r``-wide panels; returns the buffer and its batch stride (0 when ``x``'s batch
    is a broadcast, packed once)."""
    krun = sk == 1 and sx != 1
    kern = dev.kernel(key, f"gemm_pack{'k' if krun else ''}{r}", src, [x.dtype.name], _PACK_TYPES)
    nbat = 1 if sb == 0 else bsz
    npan = -(-ext // r)
    per = npan * k * r
    buf = dev.allocator.allocate(max(1, nbat * per) * (4 if x.dtype.name == "float16"
                                                         else x.dtype.itemsize))
    gs = (-(-k // _KRUN) if krun else k, npan, nbat)
    kern(dev.queue, gs, None, x.buffer.mem, x.offset, sb, sx, sk, buf.mem, ext, k)
    return buf, (0 if nbat == 1 else per)


def launch_packed(dev: Any, a: Any, b: Any, out: Any, tile: PackedTile) -> None:
    """Enqueue ``out = a @ b`` (views (B, M, K), (B, K, N), (B, M, N), floating, ``K > 0``)
    with ``tile``, one of :data:`PACKED_TILES` for the dtype. The packed copies are temporaries of
    the device's caching allocator: they go back to it on return, which is safe on the in-order
    queue (their next user is enqueued after these kernels)."""
    bsz, m, n = out.shape
    k = a.shape[2]
    dt = out.dtype.name
    tiles = PACKED_TILES[dt]
    if tile not in tiles:  # the program holds the listed tiles only
        raise ValueError(f"packed GEMM tile {tile.name} is not one of the {dt} tiles: "
                         f"{', '.join(t.name for t in tiles)}")
    idx = tiles.index(tile)
    scb, scm, scn = out.strides
    c_unit = scn == 1
    key = ("gemm", dt, "packed", c_unit)

    def src() -> str:  # generated on a cache miss only
        return packed_source(dt, c_unit)

    main = dev.kernel(key, _kernel_name(idx), src, [dt], _MAIN_TYPES)
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    ap, apb = _pack(dev, key, src, a, bsz, sab, sam, sak, m, k, tile.rm)
    bp, bpb = _pack(dev, key, src, b, bsz, sbb, sbn, sbk, n, k, tile.nb)
    mp, npan = -(-m // tile.rm), -(-n // tile.nb)
    gs = (mp, npan, bsz) if tile.rowfast else (npan, mp, bsz)
    kc = tile.kc or k
    for k0 in range(0, k, kc):
        main(dev.queue, gs, (1, 1, 1), ap.mem, apb, bp.mem, bpb, out.buffer.mem, out.offset,
             scb, scm, scn, m, n, k, k0, min(kc, k - k0), np.int32(k0 > 0))
