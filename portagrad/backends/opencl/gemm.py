"""Batched GEMM kernels: ``out[b] = a[b] @ b[b]`` on arbitrary strided operands.

Kernel families, chosen by device type:

* **CPU** (PoCL and other CPU drivers): no local memory and no barriers. PoCL keeps values that
  live across a barrier in per-work-item memory, so a classic local-memory tiled kernel spills its
  accumulators, while a barrier-free kernel in which each work-item owns an ``RM x (V*W)`` block
  of ``floatW`` accumulators keeps them in registers. The ``fma()`` builtin goes through a slow
  path in PoCL; ``c += a * b`` with ``FP_CONTRACT ON`` compiles to hardware FMA. The full blocks
  of ``out`` go to this kernel; the ragged right and bottom strips (fewer than ``RM`` rows /
  ``V*W`` columns) to a simple one-element-per-work-item kernel.
* **GPU** ("gpu3", the default on GPUs; see :func:`_gpu3_kernel`): register blocking (8x8
  accumulators per work-item read from local memory as ``float4``) with the known fast-SGEMM
  techniques: per-work-item pointers computed once, an unchecked path for slices wholly inside the
  operands (bounds checks only on edge tiles, so any size works in one launch), 4-vector global
  loads and stores where strides and alignment allow, double-buffered local memory with one
  barrier per slice. Its tile is a :class:`Gpu3Config` (:data:`GPU3_CONFIG` by dtype), chosen
  with ``benchmarks/gemm_sweep.py`` (the figures are in ``docs/architecture.md``).

``tests/test_opencl_gemm.py`` checks both families (and every "gpu3" tile the sweep times) on
PoCL, and on a GPU through ``benchmarks/gpu_check.sh``, at ragged sizes and every operand layout.
* **packed** (CPU devices, :mod:`.gemm_packed`): the operands copied into contiguous panels first,
  then register blocks as in "cpu"; several tiles.
* **gemv** (every device, :mod:`.gemm_gemv`): products of at most :data:`GEMV_MAX_M` rows (a
  decoding step's activations times a weight), which the families above leave to scalar edge
  kernels or pack first: ``b`` streamed once along its unit-stride axis with vector loads.

Every family reads bfloat16/float16 operands as they are (16-bit loads widened to float in
registers, float32 accumulators, each output rounded once): no float32 copies.

Unless a family is forced, products of at most :data:`GEMV_MAX_M` rows take "gemv" when ``b`` is
k-fast or the product is too small to time, and are timed against the others otherwise ("gemv"
was faster than "cpu" and "packed" on PoCL at the shapes of ``docs/performance.md``). On GPUs,
where it is unmeasured (its k-fast kernel has no work-group reduction, so its reads may coalesce
poorly), "gemv" is one more candidate the tuner times against "gpu3".
:mod:`.gemm_tune` picks the family and tile of the other products per device and size class by
timing a few candidates (products too small to matter take a heuristic choice). The family can be
forced with ``PORTAGRAD_OPENCL_GEMM=cpu|gpu3|packed|gemv`` (its default tile, nothing timed).

Strides (in elements) and offsets are kernel arguments, so a transposed operand (swapped strides)
or a broadcast batch (batch stride 0) needs no copy. Variants are keyed by dtype and by the
operands' layout (which strides are 1, and for "gpu3" 4-vector alignment), never by sizes.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any, NamedTuple

import numpy as np

from .gemm_dot import launch_dot
from .gemm_gemv import GEMV_ROWS, launch_gemv
from .gemm_packed import PACKED_TILES, PackedTile, launch_packed
from .gemm_tune import TUNE_MIN_FLOPS, Choice, Tuner, size_class
from .kernels import CTYPE, HALF16, UTYPE, half16_helpers
from .vectors import direct_typedefs, vload, vstore

__all__ = [
    "CPU_BLOCK",
    "GEMM_KINDS",
    "GEMV_MAX_M",
    "GPU3_CONFIG",
    "GPU3_SWEEP",
    "TUNED_KERNELS",
    "GemmPlan",
    "Gpu3Config",
    "Gpu3Layout",
    "candidates",
    "gemm_source",
    "gpu3_layout",
    "launch_gemm",
    "tuner",
]

#: CPU register block: (rows per work-item, vectors per row) and vector width by dtype (16-bit
#: floats accumulate in float32 blocks). Eight accumulators, with the operands, fit the 16
#: vector registers of AVX2 (PoCL 3.0 compiles for AVX2 even on AVX-512 CPUs); 8 x 2 spilled and
#: ran at half the speed of 4 x 2 on PoCL once its loads were direct (see .vectors)
CPU_BLOCK = {"float32": (4, 2, 8), "float64": (4, 2, 4), "bfloat16": (4, 2, 8),
             "float16": (4, 2, 8)}
#: GEMM kernel families: "cpu" (barrier-free register blocks on the operands in place), "gpu3"
#: (double-buffered, unchecked interior tiles, vector global access; tile in GPU3_CONFIG; the
#: default on GPUs) and "packed" (:mod:`.gemm_packed`, CPU devices). ``PORTAGRAD_OPENCL_GEMM`` (or
#: the backend's ``_force_gemm_kind``) picks one on any device, so the GPU kernel is tested on PoCL
#: too; otherwise :mod:`.gemm_tune` chooses per size class. "gemv" (:mod:`.gemm_gemv`, any
#: device) streams ``b`` once for products of few rows; forced, it runs any ``M`` in 8-row strips.
#: "dot" (:mod:`.gemm_dot`, CPU devices) takes operands contiguous along ``k`` (``x @ W.T``);
#: forced, it gathers any other layout.
GEMM_KINDS = ("cpu", "gpu3", "packed", "gemv", "dot")
#: products with at most this many rows of ``out`` take "gemv" unless a family is forced (at 8
#: rows the register-blocked families beat it on PoCL)
GEMV_MAX_M = 7

_LANES = "0123456789abcdef"
_ARGS = ("__global const {t}* A, long ao, long sab, long sam, long sak, "
         "__global const {t}* B, long bo, long sbb, long sbk, long sbn, "
         "__global {t}* C, long co, long scb, long scm, long scn, long M, long N, long K")
# scalar argument dtypes matching _ARGS (plus two row/col origins for the edge kernel)
_ARG_TYPES = [None] + [np.int64] * 4 + [None] + [np.int64] * 4 + [None] + [np.int64] * 7


class GemmPlan:
    """What :func:`gemm_source` generated: the program key, source and kernel names."""

    __slots__ = ("dtype", "key", "source")

    def __init__(self, key: tuple, source: str, dtype: str) -> None:
        self.key = key
        self.source = source
        self.dtype = dtype


def _conv16(dtype: str) -> tuple[str, str, str]:
    """``(compute type, load, store)`` of ``dtype``'s GEMM: a 16-bit float is loaded into float
    (``load`` names the conversion function, "" for none) and stored rounded once (``store``)."""
    if dtype in HALF16:
        return "float", HALF16[dtype][0], HALF16[dtype][1]
    return CTYPE[dtype], "", ""


def _edge_kernel(dtype: str) -> str:
    # one element per work-item over the rectangle [r0, r0 + rows) x [c0, c0 + cols) given by
    # the global size; accumulates in the output type (16-bit floats: in float, rounded once)
    t = CTYPE[dtype]
    ct, ld, st = _conv16(dtype)
    return f"""
__kernel void gemm_edge({_ARGS.format(t=t)}, long r0, long c0)
{{
    long n = c0 + get_global_id(0), m = r0 + get_global_id(1), bt = get_global_id(2);
    __global const {t}* a = A + ao + bt * sab + m * sam;
    __global const {t}* b = B + bo + bt * sbb + n * sbn;
    {ct} acc = 0;
    for (long k = 0; k < K; ++k) acc += {ld}(a[k * sak]) * {ld}(b[k * sbk]);
    C[co + bt * scb + m * scm + n * scn] = {st}(acc);
}}
"""


def _int_kernel(dtype: str) -> str:
    # integer GEMM (PyTorch's CPU matmul takes int32/int64): one element per work-item, exact;
    # products and sums in the unsigned twin so overflow wraps as on the CPU (signed overflow is
    # undefined in C). Integer products are rare and small next to float ones: no blocking.
    t, u = CTYPE[dtype], UTYPE[dtype]
    return f"""
__kernel void gemm_int({_ARGS.format(t=t)})
{{
    long n = get_global_id(0), m = get_global_id(1), bt = get_global_id(2);
    __global const {t}* a = A + ao + bt * sab + m * sam;
    __global const {t}* b = B + bo + bt * sbb + n * sbn;
    {u} acc = 0;
    for (long k = 0; k < K; ++k) acc += ({u})a[k * sak] * ({u})b[k * sbk];
    C[co + bt * scb + m * scm + n * scn] = ({t})acc;
}}
"""


def _cpu_kernel(t: str, dtype: str, b_unit: bool, c_unit: bool, direct: bool = False) -> str:
    rm, v, w = CPU_BLOCK[dtype]
    ct, ld, st = _conv16(dtype)  # 16-bit operands: loaded into float vectors, stored rounded
    vt = f"{ct}{w}"
    acc = "\n    ".join(f"{vt} c{i}_{j} = 0;" for i in range(rm) for j in range(v))
    if b_unit:
        vld = f"{ld}_{w}" if ld else ""
        bl = "".join(f"{vt} b{j} = {vld}({vload(t, w, f'bk + {j * w}', direct)});\n        "
                     for j in range(v))
    else:
        bl = "".join(
            f"{vt} b{j} = ({vt})(" + ", ".join(f"{ld}(bk[{j * w + l} * sbn])" for l in range(w))
            + ");\n        " for j in range(v))
    al = "".join(f"{ct} a{i} = {ld}(ak[{i} * sam]);\n        " for i in range(rm))
    fma = "\n        ".join(f"c{i}_{j} += a{i} * b{j};" for i in range(rm) for j in range(v))
    stores: list[str] = []
    for i in range(rm):
        for j in range(v):
            if ld:
                stores.extend(f"cp[{i} * scm + {j * w + l} * scn] = {st}(c{i}_{j}.s{_LANES[l]});"
                              for l in range(w))
            elif c_unit:
                stores.append(vstore(t, w, f"c{i}_{j}", f"cp + {i} * scm + {j * w}", direct))
            else:
                stores.extend(f"cp[{i} * scm + {j * w + l} * scn] = c{i}_{j}.s{_LANES[l]};"
                              for l in range(w))
    st = "\n    ".join(stores)
    return f"""
__kernel void gemm_main({_ARGS.format(t=t)})
{{
    long col = get_global_id(0) * {v * w}, row = get_global_id(1) * {rm}, bt = get_global_id(2);
    __global const {t}* ak = A + ao + bt * sab + row * sam;
    __global const {t}* bk = B + bo + bt * sbb + col * sbn;
    {acc}
    for (long k = 0; k < K; ++k) {{
        {bl}{al}{fma}
        ak += sak; bk += sbk;
    }}
    __global {t}* cp = C + co + bt * scb + row * scm + col * scn;
    {st}
}}
"""


class Gpu3Config(NamedTuple):
    """Tile of the GPU kernel (:func:`_gpu3_kernel`): a work-group of ``lx x ly``
    work-items computes a ``tm x tn`` tile of ``out`` in ``tk``-deep slices of ``k``, so each
    work-item owns ``(tm/ly) x (tn/lx)`` accumulators (both multiples of 4: they are read from local
    memory as 4-vectors). ``vec``: use 4-vector global loads and stores where an operand's unit
    stride and alignment allow it (else scalar ones everywhere). ``warp8x4``: arrange each
    32-work-item warp as 8 columns x 4 rows of the work-group's grid instead of the natural
    16 x 2, so that a ``k`` step's local reads touch 4 + 8 distinct 4-vectors rather than 2 + 16
    (fewer shared-memory wavefronts on NVIDIA; global loads are unaffected)."""

    tm: int = 128
    tn: int = 128
    tk: int = 16
    lx: int = 16
    ly: int = 16
    vec: bool = True
    warp8x4: bool = False

    @property
    def name(self) -> str:
        """Short label, e.g. ``128x128x16/16x16`` (``-scalar`` without vector global access,
        ``-w8x4`` with the 8x4 warp arrangement)."""
        return (f"{self.tm}x{self.tn}x{self.tk}/{self.lx}x{self.ly}" + ("" if self.vec else "-scalar")
                + ("-w8x4" if self.warp8x4 else ""))

    def local_bytes(self, itemsize: int) -> int:
        """Local memory of one work-group: two slices of A and of B, rows padded by 4."""
        return 2 * self.tk * (self.tm + 4 + self.tn + 4) * itemsize

    def validate(self) -> None:
        """Raise ``ValueError`` unless every work-item owns whole 4-vectors and the slices split
        evenly over the work-group (see :func:`_operand_loads`)."""
        rm, rn = self.tm // self.ly, self.tn // self.lx
        if self.tm % self.ly or self.tn % self.lx or rm % 4 or rn % 4 or rm < 4 or rn < 4:
            raise ValueError(f"GEMM tile {self.name}: each work-item must own a multiple of 4 rows "
                             "and columns")
        if self.warp8x4 and (self.lx % 8 or self.ly % 4):
            raise ValueError(f"GEMM tile {self.name}: an 8x4 warp needs lx % 8 == 0 and ly % 4 == 0")
        for to in (self.tm, self.tn):  # raises if a slice cannot be split evenly
            _load_map(to, self.tk, self.lx * self.ly, True, False)
            _load_map(to, self.tk, self.lx * self.ly, False, False)


class Gpu3Layout(NamedTuple):
    """Operand layout a "gpu3" program is specialised for (see :func:`gpu3_layout`):
    ``a_kfast``/``b_nfast``: which axis of A/B neighbouring work-items walk when loading (the
    unit-stride one); ``*_vec``: that axis has unit stride and every 4-vector is aligned to its size,
    so full tiles use 4-vector global loads (A, B) or stores (C)."""

    a_kfast: bool = True
    a_vec: bool = True
    b_nfast: bool = True
    b_vec: bool = True
    c_vec: bool = True


#: default "gpu3" tile by dtype: float32 from the GEMM sweep on a GPU (see the module doc);
#: float64's ``tk = 8`` keeps the double-buffered slices within the 48 KiB of local memory
#: NVIDIA's OpenCL gives a work-group (its speed has not been measured)
GPU3_CONFIG = {"float32": Gpu3Config(64, 128, 16, 16, 8, True),
               "float64": Gpu3Config(128, 128, 8, 16, 16, True)}
# 16-bit floats: float32's tile, since local memory and the accumulators hold float (untuned)
GPU3_CONFIG.update(bfloat16=GPU3_CONFIG["float32"], float16=GPU3_CONFIG["float32"])
#: "gpu3" tiles ``benchmarks/gemm_sweep.py`` times by default (``tests/test_opencl_gemm.py`` checks
#: each): the default, its slice depths, scalar global access, 8x4 warps, and narrower tiles, whose
#: extra work-groups fill the GPU's multiprocessors on smaller matrices
GPU3_SWEEP = (Gpu3Config(128, 128, 16), Gpu3Config(128, 128, 8), Gpu3Config(128, 128, 16, vec=False),
              Gpu3Config(128, 128, 16, warp8x4=True), Gpu3Config(128, 128, 8, warp8x4=True),
              Gpu3Config(128, 64, 16), Gpu3Config(64, 128, 16, 16, 8), Gpu3Config(64, 64, 16))


def _check_local_memory(dev: Any, cfg: Gpu3Config, itemsize: int) -> None:
    """Raise ``ValueError`` when the tile's local memory exceeds what a work-group of ``dev`` may
    use (a clear message instead of the driver's build or launch failure)."""
    need, have = cfg.local_bytes(itemsize), int(dev.cl_device.local_mem_size)
    if need > have:
        raise ValueError(f"GEMM tile {cfg.name} needs {need} bytes of local memory for "
                         f"{itemsize}-byte elements; {dev.label} allows {have}")


def _gpu3_key(dtype: str, cfg: Gpu3Config, layout: Gpu3Layout) -> tuple:
    # cfg.vec only matters through the layout's *_vec flags: one program per distinct source
    return ("gemm", dtype, "gpu3", cfg.tm, cfg.tn, cfg.tk, cfg.lx, cfg.ly, cfg.warp8x4, *layout)


def _cpu_key(dtype: str, b_unit: bool, c_unit: bool, direct: bool) -> tuple:
    return ("gemm", dtype, "cpu", b_unit, c_unit, direct)


def _aligned4(bsz: int, offset: int, batch_stride: int, slow_stride: int) -> bool:
    """Whether every 4-vector starting at a multiple of 4 along the unit-stride axis is aligned to
    its size, ``4 * itemsize`` bytes (16 for float32, 8 for 16-bit floats, 32 for float64): that
    is, the offset and the other strides are multiples of 4 elements, whatever the element size,
    since buffers themselves are at least 128-byte aligned."""
    return offset % 4 == 0 and slow_stride % 4 == 0 and (bsz == 1 or batch_stride % 4 == 0)


def gpu3_layout(a: Any, b: Any, out: Any, cfg: Gpu3Config) -> Gpu3Layout:
    """The :class:`Gpu3Layout` for views ``a`` (B, M, K), ``b`` (B, K, N), ``out`` (B, M, N)."""
    bsz = out.shape[0]
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    scb, scm, scn = out.strides
    a_kfast = sak == 1 or sam != 1
    b_nfast = sbn == 1 or sbk != 1
    a_vec = cfg.vec and ((sak == 1 and _aligned4(bsz, a.offset, sab, sam)) if a_kfast
                         else (sam == 1 and _aligned4(bsz, a.offset, sab, sak)))
    b_vec = cfg.vec and ((sbn == 1 and _aligned4(bsz, b.offset, sbb, sbk)) if b_nfast
                         else (sbk == 1 and _aligned4(bsz, b.offset, sbb, sbn)))
    c_vec = cfg.vec and scn == 1 and _aligned4(bsz, out.offset, scb, scm)
    return Gpu3Layout(a_kfast, a_vec, b_nfast, b_vec, c_vec)


def _load_map(to: int, tk: int, nt: int, kfast: bool, vec: bool) -> tuple[int, int, int]:
    """How ``nt`` work-items load a ``to x tk`` slice of an operand: ``(fe, slots, step)``.

    Work-item ``tid`` takes position ``f = tid % fe`` along the fast axis (in vectors of
    ``4 if vec else 1``; ``fe`` positions) and ``s = tid / fe`` along the slow one, then
    ``slots`` more at ``s + i * step``: neighbouring work-items read neighbouring addresses, and one
    pointer per work-item serves every slot."""
    v = 4 if vec else 1
    fast = tk if kfast else to
    slow = to if kfast else tk
    if fast % v or nt % (fast // v) or (to * tk) % (v * nt):
        raise ValueError(f"a {to}x{tk} slice cannot be loaded evenly by {nt} work-items "
                         f"{'k' if kfast else 'm/n'}-first with vectors of {v}")
    fe = fast // v
    step = nt // fe
    return fe, slow // step, step


def _operand_loads(t: str, x: str, to: int, tk: int, nt: int, kfast: bool, vec: bool,
                   ld: str = "") -> dict:
    """Code fragments moving operand ``x`` ("a" or "b") from global memory to local memory.

    ``t`` is the operand's C type in global memory; ``ld`` names the function widening a 16-bit
    float (its 16-bit pattern, ``ushort``) to ``float`` ("" for none): such operands are read as
    16 bits, converted in registers and kept as ``float`` in local memory (``ld + "_4"`` widens a
    ``ushort4``, see :func:`.kernels.half16_helpers`).

    The slice is ``to`` rows (m for A, n for B) by ``tk``; in local memory it is stored k-major
    (``Xs[k * P + o]``, ``P = to + 4``) whatever the global layout, so the multiply reads both A and
    B as 4-vectors. Keys: ``init`` (per-work-item pointer and offsets, computed once), ``regs``
    (declaration of the prefetch registers), ``fast`` (unchecked loads of a slice that lies inside
    the operand), ``checked`` (bounds-checked loads, zero outside), ``store`` (registers to the
    local buffer at element offset ``{x}nxt``) and ``advance`` (move the pointer one slice on).
    ``vec`` quietly falls back to scalar access when the slice does not split into 4-vectors."""
    if vec:
        try:
            _load_map(to, tk, nt, kfast, True)
        except ValueError:
            vec = False
    fe, slots, step = _load_map(to, tk, nt, kfast, vec)
    v = 4 if vec else 1
    X = x.upper()
    lt = "float" if ld else t  # type of the registers and of local memory
    lt4 = f"{lt}4"

    def cv(e: str) -> str:  # a loaded element as ``lt``
        return f"{ld}({e})" if ld else e

    o_stride, k_stride = ("sam", "sak") if x == "a" else ("sbn", "sbk")
    origin, ext = ("gm", "M") if x == "a" else ("gn", "N")
    pad = to + 4
    slow_stride = o_stride if kfast else k_stride
    # (o, k) of the work-item's first element, as 32-bit tile coordinates
    if kfast:
        ok = f"int {x}o = tid / {fe}, {x}k = (tid % {fe}) * {v};"
    else:
        ok = f"int {x}o = (tid % {fe}) * {v}, {x}k = tid / {fe};"
    init = (f"{ok}\n    "
            f"__global const {t}* {x}p = {X} + {x}off + bt * {'sab' if x == 'a' else 'sbb'} + "
            f"({origin} + {x}o) * {o_stride} + (long){x}k * {k_stride};\n    "
            f"const long {x}ds = {step}L * {slow_stride}, {x}adv = {tk}L * {k_stride};\n    "
            f"const int {x}st = {x}k * {pad} + {x}o;  /* local offset of the first element */\n    "
            f"const int {x}rem = (int)min({ext} - {origin}, (long){to});  /* rows of the tile inside */")
    regs = f"{lt4 if vec else lt} " + ", ".join(f"r{x}{i}" for i in range(slots)) + ";"

    def addr(i: int) -> str:
        return f"{x}p" if i == 0 else f"{x}p + {i} * {x}ds"

    # slot i sits `i * step` further along the slow axis: rows (kfast) or k (o-fast)
    o_of = (lambda i, c: f"{x}o + {i * step}") if kfast else (lambda i, c: f"{x}o + {c}")
    k_of = (lambda i, c: f"{x}k + {c}") if kfast else (lambda i, c: f"{x}k + {i * step}")
    fast: list[str] = []
    checked: list[str] = []
    store: list[str] = []
    for i in range(slots):
        if vec:
            v4 = f"*(__global const {t}4*)({addr(i)})"
            fast.append(f"r{x}{i} = {ld + '_4(' + v4 + ')' if ld else v4};")
            for c in range(4):
                checked.append(f"r{x}{i}.s{c} = ({o_of(i, c)} < {x}rem && {k_of(i, c)} < kr) ? "
                               f"{cv(f'({addr(i)})[{c}]')} : ({lt})0;")
        else:
            fast.append(f"r{x}{i} = {cv(f'*({addr(i)})')};")
            checked.append(f"r{x}{i} = ({o_of(i, 0)} < {x}rem && {k_of(i, 0)} < kr) ? "
                           f"{cv(f'*({addr(i)})')} : ({lt})0;")
        disp = i * step if kfast else i * step * pad  # local displacement of slot i
        if vec and kfast:  # four k values of one row: transposed into four local rows
            store.extend(f"{X}s[{x}nxt + {x}st + {disp + c * pad}] = r{x}{i}.s{c};" for c in range(4))
        elif vec:
            store.append(f"*(__local {lt4}*)({X}s + {x}nxt + {x}st + {disp}) = r{x}{i};")
        else:
            store.append(f"{X}s[{x}nxt + {x}st + {disp}] = r{x}{i};")
    return {"init": init, "regs": regs, "fast": fast, "checked": checked, "store": store,
            "advance": f"{x}p += {x}adv;", "pad": pad}


def _gpu3_kernel(t: str, layout: Gpu3Layout, cfg: Gpu3Config, ld: str = "", st: str = "") -> str:
    """The GPU kernel (kind "gpu3"), built for fast SGEMM on NVIDIA GPUs.

    ``t`` is the C type of the operands in global memory. For a 16-bit float, ``ld``/``st`` name
    its conversions to and from ``float``: the operands are loaded as 16 bits (4-vectors of
    ``ushort`` where the layout allows) and widened in registers, local memory and the
    accumulators are ``float``, and each output element is rounded once when stored.

    * Tile ``cfg.tm x cfg.tn`` per work-group of ``cfg.lx x cfg.ly``; each work-item owns
      ``RM x RN`` accumulators as ``RM/4 x RN/4`` blocks of 4x4 spread ``4*ly`` rows / ``4*lx``
      columns apart, so each ``k`` step reads ``RM/4 + RN/4`` 4-vectors from local memory (A is
      stored k-major, i.e. transposed on the way in, so it is read as vectors too).
    * Double-buffered local memory: slice ``s + 1`` is loaded from global memory into registers
      while slice ``s`` is multiplied, then stored into the other buffer: ONE barrier per slice.
    * Per-work-item global pointers are computed once and advanced by a slice per iteration; tile
      coordinates are 32-bit. A slice that lies wholly inside an operand (every slice of an interior
      tile, except a ragged last one in ``k``) takes the unchecked path, with 4-vector loads when
      ``layout`` allows; edge tiles take bounds-checked loads (a uniform branch per work-group and
      slice), so any size, strides, offsets and batch (stride 0 broadcasts) work in one launch.
    * Output: 4-vector stores for interior tiles when ``layout.c_vec``, else guarded scalars."""
    cfg.validate()
    tm, tn, tk, lx, ly = cfg.tm, cfg.tn, cfg.tk, cfg.lx, cfg.ly
    nt = lx * ly
    rm, rn = tm // ly, tn // lx
    qa, qb = rm // 4, rn // 4  # 4-vectors of A and of B per k step
    ct = "float" if ld else t  # local memory and accumulators
    t4 = f"{ct}4"
    A = _operand_loads(t, "a", tm, tk, nt, layout.a_kfast, layout.a_vec, ld)
    B = _operand_loads(t, "b", tn, tk, nt, not layout.b_nfast, layout.b_vec, ld)
    pa4, pb4 = A["pad"] // 4, B["pad"] // 4
    acc = "\n    ".join(f"{t4} c{r}_{h} = 0;" for r in range(rm) for h in range(qb))
    reads = ([f"{t4} a{q} = ar[k * {pa4} + {q * ly}];" for q in range(qa)]
             + [f"{t4} b{h} = br[k * {pb4} + {h * lx}];" for h in range(qb)])
    fma = [f"c{r}_{h} += a{r // 4}.s{r % 4} * b{h};" for r in range(rm) for h in range(qb)]
    inner = "\n            ".join(reads + fma)
    # output: row r of the work-item is 4*ty + (r/4)*4*ly + r%4, column 4*tx + h*4*lx + j
    vstores, sstores, cstores = [], [], []
    for r in range(rm):
        ro = (r // 4) * 4 * ly + r % 4
        for h in range(qb):
            co = h * 4 * lx
            val = [f"{st}(c{r}_{h}.s{j})" if st else f"c{r}_{h}.s{j}" for j in range(4)]
            vval = f"({t}4)({', '.join(val)})" if st else f"c{r}_{h}"  # each rounded once
            vstores.append(f"*(__global {t}4*)(cp + {ro}L * scm + {co}) = {vval};")
            for j in range(4):
                dst = f"cp[{ro}L * scm + {co + j}L * scn]"
                sstores.append(f"{dst} = {val[j]};")
                cstores.append(f"if ({ro} < crows && {co + j} < ccols) {dst} = {val[j]};")
    fast_store = "\n        ".join(vstores if layout.c_vec else sstores)
    checked_store = "\n        ".join(cstores)

    def lines(code: list[str], indent: int) -> str:
        return ("\n" + " " * indent).join(code)

    def load(x: dict, ind: int) -> str:
        # uniform per work-group: every work-item sees the same tile and slice
        full = "afull" if x is A else "bfull"
        pad = " " * ind
        return (f"if ({full} && kr == {tk}) {{\n{pad}    {lines(x['fast'], ind + 4)}\n{pad}}} "
                f"else {{\n{pad}    {lines(x['checked'], ind + 4)}\n{pad}}}")

    return f"""
__kernel __attribute__((reqd_work_group_size({lx}, {ly}, 1)))
void gemm_main(__global const {t}* restrict A, long aoff, long sab, long sam, long sak,
               __global const {t}* restrict B, long boff, long sbb, long sbk, long sbn,
               __global {t}* C, long co, long scb, long scm, long scn, long M, long N, long K)
{{
    /* two slices each; rows padded by 4: 4-vector reads stay aligned, k-major stores spread banks */
    __local {t4} As4[2 * {tk * pa4}];
    __local {t4} Bs4[2 * {tk * pb4}];
    __local {ct}* As = (__local {ct}*)As4;
    __local {ct}* Bs = (__local {ct}*)Bs4;
    const int tid = get_local_id(1) * {lx} + get_local_id(0);  /* loads are mapped by tid */
    {_compute_ids(cfg)}
    const long gm = get_group_id(1) * {tm}L, gn = get_group_id(0) * {tn}L, bt = get_group_id(2);
    {A['init']}
    {B['init']}
    const int afull = arem == {tm}, bfull = brem == {tn};
    {A['regs']}
    {B['regs']}
    {acc}
    int kr = (int)min(K, {tk}L);  /* k values of the slice inside the operands */
    {{
        {load(A, 8)}
        {load(B, 8)}
        const int anxt = 0, bnxt = 0;
        {lines(A['store'] + B['store'], 8)}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    int sel = 0;
    for (long k0 = 0; k0 < K; k0 += {tk}) {{
        const long kn = k0 + {tk};
        if (kn < K) {{  /* prefetch the next slice into registers */
            {A['advance']} {B['advance']}
            kr = (int)min(K - kn, {tk}L);
            {load(A, 12)}
            {load(B, 12)}
        }}
        __local const {t4}* ar = As4 + sel * {tk * pa4} + ty;
        __local const {t4}* br = Bs4 + sel * {tk * pb4} + tx;
        #pragma unroll
        for (int k = 0; k < {tk}; ++k) {{
            {inner}
        }}
        if (kn < K) {{  /* the other buffer: its last readers passed the previous barrier */
            const int anxt = (sel ^ 1) * {tk * A['pad']}, bnxt = (sel ^ 1) * {tk * B['pad']};
            {lines(A['store'] + B['store'], 12)}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        sel ^= 1;
    }}
    __global {t}* cp = C + co + bt * scb + (gm + 4 * ty) * scm + (gn + 4 * tx) * scn;
    if (afull && bfull) {{
        {fast_store}
    }} else {{
        const int crows = arem - 4 * ty, ccols = brem - 4 * tx;
        {checked_store}
    }}
}}
"""


def _compute_ids(cfg: Gpu3Config) -> str:
    """Declaration of ``tx``, ``ty``: which 4-column / 4-row groups of the tile a work-item
    multiplies (loads are mapped by ``tid`` alone)."""
    if not cfg.warp8x4:
        return "const int tx = get_local_id(0), ty = get_local_id(1);"
    wx = cfg.lx // 8  # warps across the work-group's grid
    return (f"const int lane = tid % 32, wid = tid / 32;  /* a warp: 8 x 4 work-items */\n    "
            f"const int tx = (wid % {wx}) * 8 + lane % 8, ty = (wid / {wx}) * 4 + lane / 8;")


def gemm_source(dtype: str, kind: str, b_unit: bool, c_unit: bool, a_kfast: bool = True,
                config: Gpu3Config | None = None, layout: Gpu3Layout | None = None,
                direct: bool = False) -> GemmPlan:
    """Source of GEMM family ``kind`` (see :data:`GEMM_KINDS`) for ``dtype``. "gpu3" takes its
    tile from ``config`` (default ``GPU3_CONFIG[dtype]``) and its operand layout from ``layout``;
    without one, ``a_kfast``, ``b_unit`` and ``c_unit`` describe 4-vector-aligned operands whose
    walked axis has unit stride (contiguous or transposed tensors: what :func:`gpu3_layout` finds
    for them). "cpu" is specialised on ``b_unit`` and ``c_unit`` only, and with ``direct`` reads
    and writes vectors through pointers (see :mod:`.vectors`; PoCL)."""
    t = CTYPE[dtype]
    head = "#pragma OPENCL FP_CONTRACT ON\n"  # let a*b+c fuse: GEMM is not bit-exact anyway
    if dtype == "float64":
        head += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    if dtype in HALF16:  # 16-bit operands read in place, widened to float on load
        head += half16_helpers(dtype, [4 if kind == "gpu3" else CPU_BLOCK[dtype][2]])
    if kind == "gpu3":
        cfg = config or GPU3_CONFIG[dtype]
        if layout is None:
            layout = Gpu3Layout(a_kfast, cfg.vec, b_unit, cfg.vec, cfg.vec and c_unit)
        body = _gpu3_kernel(t, layout, cfg, *HALF16.get(dtype, ("", "")))
        key = _gpu3_key(dtype, cfg, layout)
    else:
        if direct:
            head += direct_typedefs(t, [CPU_BLOCK[dtype][2]])
        body = _cpu_kernel(t, dtype, b_unit, c_unit, direct)
        key = _cpu_key(dtype, b_unit, c_unit, direct)
    return GemmPlan(key, head + body + _edge_kernel(dtype), dtype)


def _kind(dev: Any, forced: str | None) -> str | None:
    """The GEMM family forced for ``dev``: ``forced``, else ``PORTAGRAD_OPENCL_GEMM``, else
    ``None`` (the tuner chooses); an unknown name raises ``ValueError`` naming the valid ones."""
    kind = forced if forced is not None else _ENV_KIND
    if kind is None:
        return None
    if kind not in GEMM_KINDS:
        where = "" if forced is not None else " (from PORTAGRAD_OPENCL_GEMM)"
        raise ValueError(f"unknown GEMM kernel family {kind!r}{where}; expected one of "
                         f"{', '.join(GEMM_KINDS)}")
    return kind


#: "gpu3" tiles the tuner times on GPUs besides the default: a wide one for large products and a
#: narrow one whose extra work-groups fill the multiprocessors on smaller ones
_GPU3_TUNE = (Gpu3Config(128, 128, 16), Gpu3Config(64, 64, 16))
#: the generation of the candidate kernels, part of the key of remembered choices: a choice timed
#: against an earlier set of kernels is not trusted for the current one
TUNED_KERNELS = "k3"
_TUNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TUNERS_LOCK = threading.Lock()  # one Tuner per device, whichever threads ask first


def tuner(dev: Any) -> Tuner:
    """The :class:`~.gemm_tune.Tuner` of ``dev`` (created on first use), keyed on disk by the
    device's name, platform and driver version and :data:`TUNED_KERNELS`."""
    t = _TUNERS.get(dev)
    if t is None:
        with _TUNERS_LOCK:
            t = _TUNERS.get(dev)
            if t is None:
                ex = dev.properties.extra
                t = _TUNERS[dev] = Tuner(
                    f"{dev.name}|{ex.get('platform', '')}|{ex.get('driver_version', '')}"
                    f"|{TUNED_KERNELS}")
    return t


def candidates(dev: Any, dtype: str, kfast: bool = False) -> list[Choice]:
    """The ``(kind, tile)`` pairs the tuner may choose from on ``dev`` for ``dtype``, in order of
    preference: on GPUs the "gpu3" tiles whose local memory fits, elsewhere the "packed" tiles
    and the plain "cpu" kernel, after "dot" when ``kfast`` (both operands contiguous along
    ``k``)."""
    if dev.is_gpu:
        out: list[Choice] = [("gpu3", GPU3_CONFIG[dtype])]
        itemsize = 8 if dtype == "float64" else 4
        have = int(dev.cl_device.local_mem_size)
        out += [("gpu3", c) for c in _GPU3_TUNE
                if c != GPU3_CONFIG[dtype] and c.local_bytes(itemsize) <= have]
        return out
    dot: list[Choice] = [("dot", None)] if kfast else []
    return dot + [("packed", t) for t in PACKED_TILES[dtype]] + [("cpu", None)]


def _overlaps(x: Any, out: Any) -> bool:
    return x.buffer is out.buffer


def launch_gemm(dev: Any, a: Any, b: Any, out: Any, kind: str | None = None,
                config: Gpu3Config | PackedTile | None = None) -> None:
    """Enqueue ``out = a @ b`` for views of shapes (B, M, K), (B, K, N), (B, M, N) on ``dev``.

    ``kind`` forces the kernel family, a name from :data:`GEMM_KINDS` (tests run "gpu3" on a CPU
    device); else ``PORTAGRAD_OPENCL_GEMM``; else :mod:`.gemm_tune` chooses the family and tile for
    the device and size class. ``config``: the tile ("gpu3": a :class:`Gpu3Config`, default
    ``GPU3_CONFIG``; "packed": a :class:`~.gemm_packed.PackedTile`), which implies the family."""
    bsz, m, n = out.shape
    k = a.shape[2]
    dt = out.dtype.name
    if dt in UTYPE:  # integer: the simple exact kernel, whatever the family
        intk = dev.kernel(("gemm", dt, "int"), "gemm_int", lambda: _int_kernel(dt), [dt],
                          _ARG_TYPES)
        intk(dev.queue, (n, m, bsz), None, a.buffer.mem, a.offset, *a.strides, b.buffer.mem,
             b.offset, *b.strides, out.buffer.mem, out.offset, *out.strides, m, n, k)
        return
    forced = _kind(dev, kind)
    if isinstance(config, PackedTile):
        choice: Choice = ("packed", config)
    elif config is not None:
        choice = ("gpu3", config)
    elif forced == "packed":
        choice = ("packed", PACKED_TILES[dt][0])
    elif forced is not None:
        choice = (forced, GPU3_CONFIG[dt] if forced == "gpu3" else None)
    elif m <= GEMV_MAX_M and not dev.is_gpu and (b.strides[1] == 1 or
                                                 2 * bsz * m * n * k < TUNE_MIN_FLOPS):
        # bound by reading b, which "gemv" does once, in vectors: always so along k (a Linear's
        # weight); along a long n its strided walk can lose to "packed", so large ones are timed
        choice = ("gemv", None)
    else:
        cands = candidates(dev, dt, a.strides[2] == 1 and b.strides[1] == 1)
        if m <= GEMV_ROWS:  # (8 rows: one gemv launch reads b once, which wins on wide b)
            cands = [*cands, ("gemv", None)]
        flops = 2 * bsz * m * n * k
        choice = tuner(dev).choose(
            size_class(a, b, out), cands, flops, m, n,
            lambda c: _run(dev, a, b, out, c), dev.queue.finish,
            can_time=not (_overlaps(a, out) or _overlaps(b, out)))
    _run(dev, a, b, out, choice)


def _run(dev: Any, a: Any, b: Any, out: Any, choice: Choice) -> None:
    """Enqueue ``out = a @ b`` (floating) with the ``(kind, tile)`` ``choice``."""
    kind, tile = choice
    if kind == "gemv":
        launch_gemv(dev, a, b, out)
        return
    if kind == "dot":
        launch_dot(dev, a, b, out)
        return
    if kind == "packed" and a.shape[2] > 0:  # an empty sum goes to "cpu", which writes zeros
        launch_packed(dev, a, b, out, tile)
        return
    bsz, m, n = out.shape
    k = a.shape[2]
    dt = out.dtype.name
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    scb, scm, scn = out.strides
    b_unit = sbn == 1
    c_unit = scn == 1
    cfg = layout = None
    if kind == "gpu3":
        cfg = tile or GPU3_CONFIG[dt]
        layout = gpu3_layout(a, b, out, cfg)
        key = _gpu3_key(dt, cfg, layout)
    else:
        key = _cpu_key(dt, b_unit, c_unit, dev.direct_vectors)
    args = [a.buffer.mem, a.offset, sab, sam, sak, b.buffer.mem, b.offset, sbb, sbk, sbn,
            out.buffer.mem, out.offset, scb, scm, scn, m, n, k]

    def src() -> str:  # generated on a cache miss only
        if cfg is not None:  # 16-bit floats are kept as float in local memory
            _check_local_memory(dev, cfg, 4 if dt in HALF16 else out.dtype.itemsize)
        return gemm_source(dt, "gpu3" if cfg is not None else "cpu", b_unit, c_unit, config=cfg,
                           layout=layout, direct=dev.direct_vectors).source

    main = dev.kernel(key, "gemm_main", src, [dt], _ARG_TYPES)
    q = dev.queue
    if cfg is not None:
        gs = ((n + cfg.tn - 1) // cfg.tn * cfg.lx, (m + cfg.tm - 1) // cfg.tm * cfg.ly, bsz)
        main(q, gs, (cfg.lx, cfg.ly, 1), *args)
        return
    rm, v, w = CPU_BLOCK[dt]
    nb = v * w
    mm, nn = m // rm, n // nb
    if mm and nn:
        main(q, (nn, mm, bsz), (1, 1, 1), *args)
    edge = dev.kernel(key, "gemm_edge", src, [dt], _ARG_TYPES + [np.int64, np.int64])
    if n > nn * nb:  # right strip, all rows
        edge(q, (n - nn * nb, m, bsz), (1, 1, 1), *args, 0, nn * nb)
    if m > mm * rm and nn:  # bottom strip, full-block columns
        edge(q, (nn * nb, m - mm * rm, bsz), (1, 1, 1), *args, mm * rm, 0)


_ENV_KIND = os.environ.get("PORTAGRAD_OPENCL_GEMM") or None
