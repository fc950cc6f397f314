"""Local-memory-tiled implicit-GEMM convolution kernels for GPUs (the convolution kind "tiled").

:mod:`.conv_implicit` gives each work-item a block of the result and lets it read its operands
from global memory itself; neighbouring work-items then read different channels (uncoalesced) and
every value is read by many work-items. Here a work-group computes a ``tm x tn`` tile of the GEMM
the convolution is, as the GPU GEMM "gpu3" (:mod:`.gemm`) does: for each ``tk`` slice of the
reduction, its work-items gather the slice of both operands from the tensors (the weight, and the
input's windows, with the zero padding as zeros) into local memory, then each multiplies a
register block of ``tm/ly x tn/lx`` accumulators from there. The slices are double-buffered: the
next one is gathered into registers while the current one is multiplied, so one barrier per slice.

The three GEMM views (``NB`` the batch, ``g`` a group: the third grid axis):

* ``conv2d``: M = O/G output channels, N = NB*OH*OW positions, K = C/G*kh*kw taps.
* ``conv2d_grad_input``: M = C/G input channels, N = NB*H*W input positions, K = O/G*kh*kw; the
  gathered operand is the output gradient at the window that reads each input position (for
  strides > 1, the taps whose window does not land on a stride multiple are zeros).
* ``conv2d_grad_weight``: M = O/G, N = C/G*kh*kw, K = NB*OH*OW, split into ``S`` parts of whole
  slices (the third grid axis is G*S); each part writes its sums, unrounded, to a scratch buffer and
  ``conv_tiled_wsum`` adds the parts in order (deterministic, no atomics), as :mod:`.conv_implicit`.

How the gathers are laid out over the work-items (which index varies fastest from one work-item to
the next) follows the memory: the input's positions and the weight's taps are contiguous, so the
work-items of a row read neighbouring addresses. The window (kernel size, stride, padding,
dilation) is compiled in, so the index arithmetic divides by constants; the sizes are arguments.

Accumulation order differs from the other kinds (a slice at a time, in tap or position order), so
results agree to float32 rounding, not bit for bit. 16-bit floats are read as their 16 bits,
widened on load, kept as ``float`` in local memory and the accumulators, rounded once on store.
Index arithmetic is 32-bit: shapes whose GEMM dimensions reach 2**31 are declined
(:func:`tiled_supports`) and take the implicit kernels.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .conv_implicit import SPLIT_BYTES
from .kernels import CTYPE, HALF16, prelude
from .launch import gpu_parts

__all__ = ["TiledConfig", "TILED_CONFIG", "tiled_config", "tiled_source", "tiled_supports",
           "tiled_wgrad_splits", "launch_tiled"]

_I64 = np.int64
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class TiledConfig:
    """Tile of the tiled kernels: ``tm x tn`` results per work-group of ``lx x ly`` work-items
    (each owning ``tm/ly x tn/lx`` of them as blocks of 4x4, ``4*ly`` rows and ``4*lx`` columns
    apart, read from local memory as 4-vectors), ``tk`` reduction steps per slice."""

    tm: int = 64
    tn: int = 128
    tk: int = 16
    lx: int = 16
    ly: int = 8

    @property
    def name(self) -> str:
        return f"{self.tm}x{self.tn}x{self.tk}/{self.lx}x{self.ly}"

    @property
    def nt(self) -> int:
        return self.lx * self.ly

    def local_bytes(self, itemsize: int) -> int:
        """Local memory of a work-group: two slices of each operand (rows padded by four)."""
        return 2 * self.tk * ((self.tm + 4) + (self.tn + 4)) * itemsize

    def validate(self) -> None:
        """Raise ``ValueError`` unless the gathers map evenly onto the work-items: ``tk`` and
        ``tn`` divide the work-items' count, and ``tm`` and ``tn`` are multiples of ``4*ly`` and
        ``4*lx`` (blocks of 4x4) and of the rows one pass of the work-items covers; at most 32
        gathers of an operand per work-item (their rows' bounds are bits of an ``int``)."""
        nt = self.nt
        ok = (min(self.tm, self.tn, self.tk, self.lx, self.ly) > 0 and self.tm % (4 * self.ly) == 0
              and self.tn % (4 * self.lx) == 0 and nt % self.tk == 0 and nt % self.tn == 0
              and self.tm % (nt // self.tk) == 0 and self.tn % (nt // self.tk) == 0
              and (self.tn * self.tk) % nt == 0 and max(self.tm, self.tn) * self.tk <= 32 * nt)
        if not ok:
            raise ValueError(f"convolution tile {self.name}: tm, tn must be multiples of 4*ly, 4*lx; "
                             f"lx*ly a multiple of tk and of tn; tm, tn multiples of lx*ly/tk")

    @classmethod
    def parse(cls, text: str) -> TiledConfig:
        """``"tm,tn,tk,lx,ly"`` (e.g. ``"64,128,16,16,8"``) as a validated tile."""
        try:
            tm, tn, tk, lx, ly = (int(v) for v in text.split(","))
        except ValueError:
            raise ValueError(f"convolution tile {text!r}: expected five integers "
                             f"tm,tn,tk,lx,ly") from None
        cfg = cls(tm, tn, tk, lx, ly)
        cfg.validate()
        return cfg


#: default tile by the type computed in: gpu3's float32 tile (64x128 on 16x8 work-items, 8x8 each);
#: float64 halves ``tk`` so that the double-buffered slices stay within 48 KiB of local memory
TILED_CONFIG = {"float": TiledConfig(), "double": TiledConfig(tk=8)}
_ENV_TILE = os.environ.get("PORTAGRAD_OPENCL_CONV_TILE") or None


def tiled_config(dtype: str) -> TiledConfig:
    """The tile for ``dtype``: ``PORTAGRAD_OPENCL_CONV_TILE`` (``tm,tn,tk,lx,ly``) when set, else
    :data:`TILED_CONFIG` for the type computed in."""
    if _ENV_TILE is not None:
        return TiledConfig.parse(_ENV_TILE)
    return TILED_CONFIG["double" if dtype == "float64" else "float"]


def _win(gm: dict[str, int]) -> tuple[int, ...]:
    return tuple(gm[k] for k in ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw"))


def _dims(which: str, gm: dict[str, int]) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM view of ``which`` for one group."""
    og, cg, kk = gm["O"] // gm["G"], gm["C"] // gm["G"], gm["kh"] * gm["kw"]
    if which == "fwd":
        return og, gm["N"] * gm["OH"] * gm["OW"], cg * kk
    if which == "dgrad":
        return cg, gm["N"] * gm["H"] * gm["W"], og * kk
    return og, cg * kk, gm["N"] * gm["OH"] * gm["OW"]


def tiled_supports(which: str, gm: dict[str, int]) -> bool:
    """Whether the tiled kernel of ``which`` takes this shape: its GEMM dimensions (plus a tile)
    fit the kernels' 32-bit index arithmetic."""
    return all(d + 256 <= _INT_MAX for d in _dims(which, gm))


def tiled_wgrad_splits(dev: Any, gm: dict[str, int], cfg: TiledConfig, itemsize: int,
                       forced: int | None = None) -> int:
    """Parts the weight gradient's reduction (K = NB*OH*OW) is split into: enough work-groups'
    work-items for the GPU (:func:`~.launch.gpu_parts`), at most one per slice and within
    :data:`~.conv_implicit.SPLIT_BYTES` of partial sums; ``forced`` (if given) bounded the same
    way. Every part gets at least one slice (no empty parts)."""
    M, N, K = _dims("wgrad", gm)
    groups = -(-M // cfg.tm) * -(-N // cfg.tn) * gm["G"]
    want = forced if forced is not None else gpu_parts(dev, groups * cfg.nt)
    slices = -(-K // cfg.tk)
    cap = SPLIT_BYTES // max(1, gm["O"] * N * itemsize)
    S = int(max(1, min(want, slices, cap)))
    # parts of whole slices, none empty: S = ceil(K / part length)
    ks = -(-slices // S) * cfg.tk
    return -(-K // ks)


# --------------------------------------------------------------------------- source
def _mapping(cfg: TiledConfig, R: int, kfast: bool) -> list[tuple[str, str]]:
    """(tile row, slice step) of each gather a work-item does for an operand with ``R`` rows per
    tile: ``kfast`` puts neighbouring work-items on neighbouring reduction steps (one row each),
    else on neighbouring rows."""
    nt, tk = cfg.nt, cfg.tk
    n = R * tk // nt
    if kfast:
        return [(f"(tid / {tk} + {e * (nt // tk)})", f"(tid % {tk})") for e in range(n)]
    return [(f"(tid % {R})", f"(tid / {R} + {e * (nt // R)})") for e in range(n)]


def _decomp3(p: str, k: str, KK: int, KW: int) -> str:
    """``k`` (a tap count) as (first, u, v) named ``{p}c``, ``{p}u``, ``{p}v``."""
    return (f"const int {p}c = (int){k} / {KK}, {p}q = (int){k} - {p}c * {KK}; "
            f"const int {p}u = {p}q / {KW}, {p}v = {p}q - {p}u * {KW};")


class _Kind:
    """The C fragments of one GEMM view: the operands' gathers and the output's scatter."""

    def __init__(self, which: str, win: tuple[int, ...], ld: Any, ct: str):
        self.which = which
        KH, KW, SH, SW, PH, PW, DH, DW = win
        KK = KH * KW
        self.win = win
        self.ct = ct
        z = f"({ct})0"
        if which == "fwd":
            self.a_kfast, self.b_kfast = True, False
            self.a_pre = lambda r, rg: (f"const long am{r} = {rg}; const long ar{r} = Wto + "
                                        f"(g * Og + min(am{r}, Og - 1)) * Wtn;")
            self.a_k = lambda k, kg: f"const long ak{k} = {kg}; " + _decomp3(f"a{k}", f"ak{k}", KK, KW)
            self.a_val = lambda r, k: (
                f"(AOK({r}) && ak{k} < kend) ? "
                f"{ld(f'Wt[ar{r} + a{k}c * Wtc + a{k}u * Wth + a{k}v * Wtw]')} : {z}")
            self.b_pre = lambda r, rg: (
                f"const long bn{r} = {rg}, bm{r} = min(bn{r}, N - 1), bnb{r} = bm{r} / L; "
                f"const int bl{r} = (int)(bm{r} - bnb{r} * L); "
                f"const int bh{r} = (bl{r} / (int)OW) * {SH} - {PH}, "
                f"bw{r} = (bl{r} % (int)OW) * {SW} - {PW}; "
                f"const long bb{r} = Xo + bnb{r} * Xn + g * Cg * Xc;")
            self.b_k = lambda k, kg: f"const long bk{k} = {kg}; " + _decomp3(f"b{k}", f"bk{k}", KK, KW)
            self.b_val = lambda r, k: (
                f"const int ih = bh{r} + b{k}u * {DH}, iw = bw{r} + b{k}v * {DW}; "
                f"V = (BOK({r}) && bk{k} < kend && ih >= 0 && ih < H && iw >= 0 && iw < W) ? "
                f"{ld(f'X[bb{r} + b{k}c * Xc + ih * Xh + iw * Xw]')} : {z};")
            self.c_pre = lambda j, ng: (
                f"const long cn{j} = {ng}, cq{j} = min(cn{j}, N - 1), cnb{j} = cq{j} / L, "
                f"cl{j} = cq{j} - cnb{j} * L; "
                f"const long cb{j} = Yo + cnb{j} * Yn + (cl{j} / OW) * Yh + (cl{j} % OW) * Yw;")
            self.c_row = "Y + (g * Og + cm) * Yc"
        elif which == "dgrad":
            self.a_kfast, self.b_kfast = True, False
            self.a_pre = lambda r, rg: (f"const long am{r} = {rg}; "
                                        f"const long ar{r} = Wto + min(am{r}, Cg - 1) * Wtc;")
            self.a_k = lambda k, kg: f"const long ak{k} = {kg}; " + _decomp3(f"a{k}", f"ak{k}", KK, KW)
            self.a_val = lambda r, k: (
                f"(AOK({r}) && ak{k} < kend) ? "
                f"{ld(f'Wt[ar{r} + (g * Og + a{k}c) * Wtn + a{k}u * Wth + a{k}v * Wtw]')} : {z}")
            self.b_pre = lambda r, rg: (
                f"const long bn{r} = {rg}, bm{r} = min(bn{r}, N - 1), bnb{r} = bm{r} / HW; "
                f"const int bp{r} = (int)(bm{r} - bnb{r} * HW); "
                f"const int bh{r} = bp{r} / (int)W + {PH}, bw{r} = bp{r} % (int)W + {PW}; "
                f"const long bb{r} = Gro + bnb{r} * Grn + g * Og * Grc;")
            self.b_k = lambda k, kg: f"const long bk{k} = {kg}; " + _decomp3(f"b{k}", f"bk{k}", KK, KW)
            if SH == SW == 1:  # every tap lands on an output position: no division
                taps = "const int oh = th, ow = tw; const int ok = th >= 0 && tw >= 0"
            else:  # the stride is a constant: the division and remainder are cheap
                taps = (f"const int oh = th / {SH}, ow = tw / {SW}; const int ok = th >= 0 && "
                        f"tw >= 0 && th % {SH} == 0 && tw % {SW} == 0")
            self.b_val = lambda r, k: (
                f"const int th = bh{r} - b{k}u * {DH}, tw = bw{r} - b{k}v * {DW}; {taps}; "
                f"V = (ok && oh < OH && ow < OW && BOK({r}) && bk{k} < kend) ? "
                f"{ld(f'Gr[bb{r} + b{k}c * Grc + oh * Grh + ow * Grw]')} : {z};")
            self.c_pre = lambda j, ng: (
                f"const long cn{j} = {ng}, cq{j} = min(cn{j}, N - 1), cnb{j} = cq{j} / HW, "
                f"cl{j} = cq{j} - cnb{j} * HW; "
                f"const long cb{j} = Yo + cnb{j} * Yn + (cl{j} / W) * Yh + (cl{j} % W) * Yw;")
            self.c_row = "Y + (g * Cg + cm) * Yc"
        else:  # wgrad: both gathers walk positions, which are contiguous
            self.a_kfast, self.b_kfast = True, True

            def kpos(p: str, k: str, kg: str) -> str:
                return (f"const long {p}k{k} = {kg}; const int {p}{k}n = (int)({p}k{k} / L), "
                        f"{p}{k}l = (int)({p}k{k} - {p}{k}n * L); const int {p}{k}h = {p}{k}l / "
                        f"(int)OW, {p}{k}w = {p}{k}l - {p}{k}h * (int)OW;")
            self.a_pre = lambda r, rg: (f"const long am{r} = {rg}; const long ar{r} = Gro + "
                                        f"(g * Og + min(am{r}, Og - 1)) * Grc;")
            self.a_k = lambda k, kg: kpos("a", k, kg)
            self.a_val = lambda r, k: (
                f"(AOK({r}) && ak{k} < kend) ? "
                f"{ld(f'Gr[ar{r} + a{k}n * Grn + a{k}h * Grh + a{k}w * Grw]')} : {z}")
            self.b_pre = lambda r, rg: (
                f"const long bn{r} = {rg}; " + _decomp3(f"b{r}", f"min(bn{r}, N - 1)", KK, KW)
                + f" const long bb{r} = Xo + (g * Cg + b{r}c) * Xc; "
                f"const int bdu{r} = b{r}u * {DH} - {PH}, bdv{r} = b{r}v * {DW} - {PW};")
            self.b_k = lambda k, kg: kpos("b", k, kg)
            self.b_val = lambda r, k: (
                f"const int ih = b{k}h * {SH} + bdu{r}, iw = b{k}w * {SW} + bdv{r}; "
                f"V = (BOK({r}) && bk{k} < kend && ih >= 0 && ih < H && iw >= 0 && iw < W) ? "
                f"{ld(f'X[bb{r} + b{k}n * Xn + ih * Xh + iw * Xw]')} : {z};")
            self.c_pre = lambda j, ng: (
                f"const long cn{j} = {ng}; " + _decomp3(f"c{j}", f"min(cn{j}, N - 1)", KK, KW)
                + f" const long cb{j} = Yo + c{j}c * Yc + c{j}u * Yh + c{j}v * Yw;")
            self.c_row = "Y + (g * Og + cm) * Yn"


def _s4(name: str, t: str) -> str:
    return f"__global {t}* {name}, long {name}o, long {name}n, long {name}c, long {name}h, long {name}w"


_GEOM = ("NB", "C", "H", "W", "O", "OH", "OW", "G")


def tiled_source(dtype: str, which: str, cfg: TiledConfig, win: tuple[int, ...]) -> str:
    """Kernel ``conv_tiled_<which>`` (``which``: "fwd", "dgrad" or "wgrad"; "wgrad" also has
    ``conv_tiled_wsum``) for ``dtype``, tile ``cfg`` and window ``win`` = (kh, kw, sh, sw, ph,
    pw, dh, dw). Arguments: the operands and the result as buffer, offset and four strides in
    (N, C, H, W) order (the weight's as (O, C/G, kh, kw)), then the sizes :data:`_GEOM`; the
    weight gradient then has its scratch buffer, the parts ``S`` and a part's length ``KS``."""
    cfg.validate()
    t = CTYPE[dtype]
    half = HALF16.get(dtype)
    ct = "float" if half else t

    def ld(ref: str) -> str:
        return f"{half[0]}({ref})" if half else ref

    def st(expr: str) -> str:
        return f"{half[1]}({expr})" if half else expr

    kd = _Kind(which, win, ld, ct)
    tm, tn, tk, lx, ly = cfg.tm, cfg.tn, cfg.tk, cfg.lx, cfg.ly
    rm, rn = tm // ly, tn // lx
    # k-major rows padded by 4: 4-vector reads stay aligned, k-fast stores spread over the banks
    PA, PB = tm + 4, tn + 4
    amap, bmap = _mapping(cfg, tm, kd.a_kfast), _mapping(cfg, tn, kd.b_kfast)

    def gathers(x: str, mp: list[tuple[str, str]], kfast: bool) -> tuple[list[str], list[str], list[str]]:
        """(precomputation once per kernel, gather of the slice at ``k0`` into registers, store
        of the registers into local buffer ``nxt``) for operand ``x``."""
        pre_f, k_f, val_f = ((kd.a_pre, kd.a_k, kd.a_val) if x == "a"
                             else (kd.b_pre, kd.b_k, kd.b_val))
        origin = "gm" if x == "a" else "gn"
        P = PA if x == "a" else PB
        X = "As" if x == "a" else "Bs"
        pre, load, store = [], [], []
        for e, (rl, kl) in enumerate(mp):
            r = e if kfast else 0  # rows vary per gather only when k is the fast index
            k = 0 if kfast else e
            if e == 0 or kfast:
                pre.append(pre_f(r, f"{origin} + {rl}"))
                # whether the row exists, as a bit: the row index itself is then dead in the loop
                lim, idx = ("M", f"am{r}") if x == "a" else ("N", f"bn{r}")
                pre.append(f"{x}mask |= ({idx} < {lim}) << {r};")
            pre.append(f"const int {x}st{e} = {kl} * {P} + {rl};")
            if e == 0 or not kfast:
                load.append(k_f(k, f"k0 + {kl}"))
            v = val_f(r, k)
            if v.startswith("const"):  # a statement assigning V
                load.append(f"{{ {ct} V; {v} r{x}{e} = V; }}")
            else:
                load.append(f"r{x}{e} = {v};")
            store.append(f"{X}[nxt + {x}st{e}] = r{x}{e};")
        return pre, load, store

    apre, aload, astore = gathers("a", amap, kd.a_kfast)
    bpre, bload, bstore = gathers("b", bmap, kd.b_kfast)
    regs = ([f"{ct} ra{e};" for e in range(len(amap))]
            + [f"{ct} rb{e};" for e in range(len(bmap))])
    acc = [f"{ct} c{i}_{j} = 0;" for i in range(rm) for j in range(rn)]
    # as gpu3: a work-item's rows are 4*ty + q*4*ly + (0..3), its columns 4*tx + h*4*lx + (0..3),
    # so a k step reads rm/4 + rn/4 4-vectors from local memory
    t4 = f"{ct}4"
    reads = ([f"const {t4} a{q} = ap[k * {PA // 4} + {q * ly}];" for q in range(rm // 4)]
             + [f"const {t4} b{h} = bp[k * {PB // 4} + {h * lx}];" for h in range(rn // 4)])
    fma = [f"c{i}_{j} += a{i // 4}.s{i % 4} * b{j // 4}.s{j % 4};"
           for i in range(rm) for j in range(rn)]

    def row(i: int) -> str:
        return f"4 * ty + {(i // 4) * 4 * ly + i % 4}"

    def col(j: int) -> str:
        return f"4 * tx + {(j // 4) * 4 * lx + j % 4}"
    cpre = [kd.c_pre(j, f"gn + {col(j)}") for j in range(rn)]
    if which == "wgrad":
        geo_extra = f", __global {ct}* P, long S, long KS"
        head = ("const long g = get_group_id(2) / S, s = get_group_id(2) % S;\n"
                "    const long M = Og, N = Cg * KK, kbeg = s * KS, kend = min(NB * L, kbeg + KS);")
    else:
        geo_extra = ""
        mn = {"fwd": ("Og", "NB * L", "Cg * KK"), "dgrad": ("Cg", "NB * HW", "Og * KK")}[which]
        head = ("const long g = get_group_id(2);\n"
                f"    const long M = {mn[0]}, N = {mn[1]}, kbeg = 0, kend = {mn[2]};")
    stores = []
    for i in range(rm):
        stores.append(f"{{ const long cm = gm + {row(i)}; if (cm < M) {{")
        if which == "wgrad":
            stores.append(f"    __global {t}* yr = {kd.c_row}; "
                          f"__global {ct}* pr = P + (s * O + g * Og + cm) * N;")
            for j in range(rn):
                stores.append(f"    if (cn{j} < N) {{ if (S > 1) pr[cn{j}] = c{i}_{j}; "
                              f"else yr[cb{j}] = {st(f'c{i}_{j}')}; }}")
        else:
            stores.append(f"    __global {t}* yr = {kd.c_row};")
            for j in range(rn):
                stores.append(f"    if (cn{j} < N) yr[cb{j}] = {st(f'c{i}_{j}')};")
        stores.append("} }")
    ops = {"fwd": ("X", "Wt"), "dgrad": ("Gr", "Wt"), "wgrad": ("X", "Gr")}[which]
    KK = win[0] * win[1]

    def lines(code: list[str], ind: int) -> str:
        return ("\n" + " " * ind).join(code)

    src = f"""
#define KK {KK}
#define AOK(r) ((amask >> (r)) & 1)
#define BOK(r) ((bmask >> (r)) & 1)
__kernel __attribute__((reqd_work_group_size({lx}, {ly}, 1)))
void conv_tiled_{which}({_s4(ops[0], f"const {t}")}, {_s4(ops[1], f"const {t}")}, {_s4("Y", t)},
                        {", ".join(f"long {k}" for k in _GEOM)}{geo_extra})
{{
    __local {t4} As4[2 * {tk * PA // 4}];
    __local {t4} Bs4[2 * {tk * PB // 4}];
    __local {ct}* As = (__local {ct}*)As4;
    __local {ct}* Bs = (__local {ct}*)Bs4;
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * {lx} + tx;
    const long gm = (long)get_group_id(1) * {tm}, gn = (long)get_group_id(0) * {tn};
    const long Og = O / G, Cg = C / G, L = OH * OW, HW = H * W;
    {head}
    int amask = 0, bmask = 0;  /* bit r: gather row r of the operand lies inside it */
    {lines(apre, 4)}
    {lines(bpre, 4)}
    {lines(regs, 4)}
    {lines(acc, 4)}
    long k0 = kbeg;
    {{
        {lines(aload + bload, 8)}
        const int nxt = 0;
        {lines(astore + bstore, 8)}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    int sel = 0;
    for (; k0 < kend; ) {{
        const long kn = k0 + {tk};
        if (kn < kend) {{  /* gather the next slice into registers while this one multiplies */
            k0 = kn;
            {lines(aload + bload, 12)}
        }}
        __local const {t4}* ap = As4 + sel * {tk * PA // 4} + ty;
        __local const {t4}* bp = Bs4 + sel * {tk * PB // 4} + tx;
        #pragma unroll
        for (int k = 0; k < {tk}; ++k) {{
            {lines(reads + fma, 12)}
        }}
        if (kn < kend) {{  /* the other buffer: its last readers passed the previous barrier */
            const int nxt = (sel ^ 1) * {tk * PA};
            {lines(astore, 12)}
        }}
        if (kn < kend) {{
            const int nxt = (sel ^ 1) * {tk * PB};
            {lines(bstore, 12)}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        sel ^= 1;
        k0 = kn;
    }}
    {lines(cpre, 4)}
    {lines(stores, 4)}
}}
"""
    if which == "wgrad":
        src += f"""
/* dw[o, q] = the S parts P[s, o, q] added in order, rounded once */
__kernel void conv_tiled_wsum(__global const {ct}* P, {_s4("Y", t)}, long S, long O, long CK)
{{
    const long q = get_global_id(0), o = get_global_id(1);
    if (q >= CK || o >= O) return;
    {ct} acc = 0;
    for (long s = 0; s < S; ++s) acc += P[(s * O + o) * CK + q];
    {_decomp3("c", "q", KK, win[1])}
    Y[Yo + o * Yn + cc * Yc + cu * Yh + cv * Yw] = {st('acc')};
}}
"""
    # a*b+c as one FMA, as in the GEMM kernels
    return prelude([dtype]) + "#pragma OPENCL FP_CONTRACT ON\n" + src


# --------------------------------------------------------------------------- launch
_TYPES = ([None] + [_I64] * 5) * 3 + [_I64] * len(_GEOM)
_WGRAD_TYPES = _TYPES + [None, _I64, _I64]
_WSUM_TYPES = [None, None] + [_I64] * 5 + [_I64] * 3


def _args(v: Any) -> list[Any]:
    return [v.buffer.mem, v.offset, *v.strides]


def _check_local(dev: Any, cfg: TiledConfig, itemsize: int) -> None:
    need, have = cfg.local_bytes(itemsize), int(dev.cl_device.local_mem_size)
    if need > have:
        raise ValueError(f"convolution tile {cfg.name} needs {need} bytes of local memory for "
                         f"{itemsize}-byte values; {dev.label} has {have}")


def launch_tiled(dev: Any, which: str, p: Any, q: Any, out: Any, gm: dict[str, int],
                 partial: Any = None, cfg: TiledConfig | None = None) -> None:
    """Enqueue the tiled kernel of ``which``: "fwd" (``p`` = x, ``q`` = w, ``out`` = y), "dgrad"
    (``p`` = g, ``q`` = w, ``out`` = dx) or "wgrad" (``p`` = x, ``q`` = g, ``out`` = dw), every
    view 4-D, ``gm`` the sizes as :func:`~.conv._gdict`. For "wgrad", ``partial`` is a contiguous
    (S, O, C/G*kh*kw) scratch view in the type computed in when the reduction is split into
    S > 1 parts (:func:`tiled_wgrad_splits`), else None."""
    dt = out.dtype.name
    cfg = cfg or tiled_config(dt)
    ct_size = 8 if dt == "float64" else 4
    _check_local(dev, cfg, ct_size)
    win = _win(gm)
    M, N, K = _dims(which, gm)
    if M <= 0 or N <= 0:
        return
    key = ("conv_tiled", dt, which, cfg.tm, cfg.tn, cfg.tk, cfg.lx, cfg.ly, *win)

    def src() -> str:
        return tiled_source(dt, which, cfg, win)
    S = 1 if partial is None else partial.shape[0]
    gs = (-(-N // cfg.tn) * cfg.lx, -(-M // cfg.tm) * cfg.ly, gm["G"] * S)
    ls = (cfg.lx, cfg.ly, 1)
    geo = [gm[k] for k in ("N", "C", "H", "W", "O", "OH", "OW", "G")]
    if which != "wgrad":
        kern = dev.kernel(key, f"conv_tiled_{which}", src, [dt], _TYPES)
        kern(dev.queue, gs, ls, *_args(p), *_args(q), *_args(out), *geo)
        return
    ks = -(-K // S)
    ks = -(-ks // cfg.tk) * cfg.tk  # parts of whole slices
    kern = dev.kernel(key, "conv_tiled_wgrad", src, [dt], _WGRAD_TYPES)
    pbuf = out.buffer.mem if partial is None else partial.buffer.mem
    kern(dev.queue, gs, ls, *_args(p), *_args(q), *_args(out), *geo, pbuf, S, ks)
    if partial is not None:
        ksum = dev.kernel(key, "conv_tiled_wsum", src, [dt], _WSUM_TYPES)
        ksum(dev.queue, (N, gm["O"]), None, partial.buffer.mem, *_args(out), S, gm["O"], N)
