"""LLVM IR kernels compiled by llvmlite for the host CPU (installed with numba, the ``fast``
extra), for loops numba cannot express (an instruction it does not emit, accumulators that must
stay in registers across a loop): an emitter for the IR's lines, and compilation with the
object file cached on disk (keyed by the IR, the CPU and llvmlite's version, checked against
its SHA-256 before use), so later processes skip the compilation.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Emitter", "cache_key", "compile_ir", "const", "host_target", "read_object",
           "write_object"]


class Emitter:
    """Lines of one LLVM function: fresh value and label names, allocas hoisted to its entry
    block (LLVM's mem2reg turns them into registers)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.allocas: list[str] = []
        self.count = 0

    def value(self, prefix: str = "v") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def label(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def slot(self, ty: str, prefix: str) -> str:
        p = self.value(prefix)
        self.allocas.append(f"{p} = alloca {ty}, align 64")
        return p

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def start(self, label: str) -> None:
        self.lines.append(f"{label}:")

    def row_ptr(self, base: str, ty: str, row0: str, i: int, ld: str, col: str) -> str:
        """``&base[(row0 + i) * ld + col]`` of element type ``ty``."""
        r, o, o2, p = self.value(), self.value(), self.value(), self.value()
        self(f"{r} = add i64 {row0}, {i}")
        self(f"{o} = mul i64 {r}, {ld}")
        self(f"{o2} = add i64 {o}, {col}")
        self(f"{p} = getelementptr {ty}, ptr {base}, i64 {o2}")
        return p

    def loop(self, counter: str, start: str | int, stop: str, step: int,
             body: Callable[[str], None], after: str) -> None:
        """``counter = start; while counter + step <= stop: body(counter); counter += step``,
        then a branch to the label ``after``."""
        head, inside = self.label("loop"), self.label("body")
        self(f"store i64 {start}, ptr {counter}")
        self(f"br label %{head}")
        self.start(head)
        v, hi, c = self.value(), self.value(), self.value()
        self(f"{v} = load i64, ptr {counter}")
        self(f"{hi} = add i64 {v}, {step}")
        self(f"{c} = icmp sle i64 {hi}, {stop}")
        self(f"br i1 {c}, label %{inside}, label %{after}")
        self.start(inside)
        body(v)
        v2, v3 = self.value(), self.value()
        self(f"{v2} = load i64, ptr {counter}")
        self(f"{v3} = add i64 {v2}, {step}")
        self(f"store i64 {v3}, ptr {counter}")
        self(f"br label %{head}")

    def splat(self, ty: str, x: str) -> str:
        """``<16 x ty>`` with every lane the scalar ``x`` (one broadcast instruction)."""
        one, out = self.value(), self.value()
        self(f"{one} = insertelement <16 x {ty}> poison, {ty} {x}, i32 0")
        self(f"{out} = shufflevector <16 x {ty}> {one}, <16 x {ty}> poison, "
             f"<16 x i32> zeroinitializer")
        return out

    def accumulators(self, rows: int, cols: int) -> dict[tuple[int, int], str]:
        """A register tile: ``<16 x float>`` slots keyed ``(i, j)``, stored as zeros."""
        acc = {(i, j): self.slot("<16 x float>", "acc") for i in range(rows) for j in range(cols)}
        for p in acc.values():
            self(f"store <16 x float> zeroinitializer, ptr {p}")
        return acc

    def function(self, signature: str, prologue: Sequence[str] = ()) -> str:
        """The text of ``define void <signature>`` over the emitted lines: the hoisted allocas
        and ``prologue`` (instructions of the entry block) first."""
        return "\n".join([f"define void {signature} {{", "entry:",
                          *("  " + a for a in self.allocas), *("  " + p for p in prologue),
                          "  br label %first", "first:", *self.lines, "}"])

    def accumulate(self, slot: str, instruction: str) -> None:
        """The ``<16 x float>`` accumulator at ``slot`` replaced by ``instruction`` (``call
        @llvm.fma...``), whose text names the accumulator's value ``{acc}``."""
        x, y = self.value(), self.value()
        self(f"{x} = load <16 x float>, ptr {slot}")
        self(f"{y} = " + instruction.format(acc=x))
        self(f"store <16 x float> {y}, ptr {slot}")

    def tile_loads(self, rows_a: int, rows_w: int, m0: str, n0: str, k: str, lanes: int,
                   elem: str, masked: bool, each: Callable[[str], str] = lambda v: v
                   ) -> tuple[list[str], list[str]]:
        """The vectors of ``lanes`` ``elem`` (``"i16"`` or ``"float"``) at column ``k`` of the
        ``rows_a`` rows of ``%a`` from ``m0`` (leading dimension ``%lda``) and the ``rows_w``
        rows of ``%w`` from ``n0`` (``%ldw``), each passed through ``each`` (instructions emitted
        right after its load). ``masked``: only the lanes of ``%mask`` are read, zeros past them
        (the last columns of K, where zeros add nothing)."""
        size, tag = {"i16": (2, "i16"), "float": (4, "f32")}[elem]
        ty = f"<{lanes} x {elem}>"
        loaded = []
        for rows, base, ld, row0 in ((rows_a, "%a", "%lda", m0), (rows_w, "%w", "%ldw", n0)):
            vals = []
            for i in range(rows):
                p = self.row_ptr(base, elem, row0, i, ld, k)
                v = self.value()
                if masked:
                    self(f"{v} = call {ty} @llvm.masked.load.v{lanes}{tag}.p0(ptr {p}, "
                         f"i32 {size}, <{lanes} x i1> %mask, {ty} zeroinitializer)")
                else:
                    self(f"{v} = load {ty}, ptr {p}, align {size}")
                vals.append(each(v))
            loaded.append(vals)
        return loaded[0], loaded[1]

    def over_k(self, width: int, step: Callable[[str, bool], None]) -> None:
        """A register tile's loop along K: ``step(k, False)`` for ``k = 0, width, ...`` below
        ``%Kv`` (the whole steps), then ``step("%Kv", True)`` (masked loads) when ``%hasrem``;
        the lines after it run once the loop is done."""
        k_slot = self.slot("i64", "k")
        head, body, done, tail, after = (self.label(x) for x in ("k", "kbody", "kdone", "ktail",
                                                                 "reduce"))
        self(f"store i64 0, ptr {k_slot}")
        self(f"br label %{head}")
        self.start(head)
        k, c = self.value(), self.value()
        self(f"{k} = load i64, ptr {k_slot}")
        self(f"{c} = icmp slt i64 {k}, %Kv")
        self(f"br i1 {c}, label %{body}, label %{done}")
        self.start(body)
        step(k, False)
        k2 = self.value()
        self(f"{k2} = add i64 {k}, {width}")
        self(f"store i64 {k2}, ptr {k_slot}")
        self(f"br label %{head}")
        self.start(done)
        self(f"br i1 %hasrem, label %{tail}, label %{after}")
        self.start(tail)
        step("%Kv", True)
        self(f"br label %{after}")
        self.start(after)

    def sum_lanes(self, acc: dict[tuple[int, int], str]) -> tuple[str, list[tuple[int, int]]]:
        """The ``<16 x float>`` accumulators' lane sums as one ``<n x float>`` vector (``n`` the
        number of accumulators, a power of two up to 16) and the ``(i, j)`` key of each lane.
        Pairs of vectors are folded into one by halves of their lane groups (a transposing
        reduction: 15 additions for 16 accumulators, where one horizontal sum each took 4), then
        the groups left in one vector are folded within it."""
        vecs: list[tuple[str, list[tuple[int, int]]]] = []
        for key, p in acc.items():
            x = self.value()
            self(f"{x} = load <16 x float>, ptr {p}")
            vecs.append((x, [key]))
        lanes = 16  # lanes per group
        while len(vecs) > 1:  # two vectors of G groups -> one of 2G groups, each half as wide
            half, merged = lanes // 2, []
            for (x, gx), (y, gy) in zip(vecs[0::2], vecs[1::2]):
                lo = [g * lanes + k for g in range(len(gx)) for k in range(half)]
                mask_a = const("i32", lo + [16 + v for v in lo])
                mask_b = const("i32", [v + half for v in lo] + [16 + v + half for v in lo])
                a, b, z = self.value(), self.value(), self.value()
                self(f"{a} = shufflevector <16 x float> {x}, <16 x float> {y}, <16 x i32> {mask_a}")
                self(f"{b} = shufflevector <16 x float> {x}, <16 x float> {y}, <16 x i32> {mask_b}")
                self(f"{z} = fadd <16 x float> {a}, {b}")
                merged.append((z, gx + gy))
            vecs, lanes = merged, half
        v, groups = vecs[0]
        width = 16
        while lanes > 1:  # fewer than 16 accumulators: fold each group's lanes within the vector
            half = lanes // 2
            lo = [g * lanes + k for g in range(len(groups)) for k in range(half)]
            a, b, z = self.value(), self.value(), self.value()
            n = len(lo)
            self(f"{a} = shufflevector <{width} x float> {v}, <{width} x float> poison, "
                 f"<{n} x i32> {const('i32', lo)}")
            self(f"{b} = shufflevector <{width} x float> {v}, <{width} x float> poison, "
                 f"<{n} x i32> {const('i32', [k + half for k in lo])}")
            self(f"{z} = fadd <{n} x float> {a}, {b}")
            v, width, lanes = z, n, half
        return v, groups

    def tiled(self, prefix: str, stop: str, step: int, unit: int,
              body: Callable[[str, int], None]) -> None:
        """``body(i, step)`` for ``i = 0, step, ...`` while a whole step fits below ``stop``,
        then ``body(i, unit)`` for the rest, ``unit`` at a time (a register tile's loop and its
        remainder)."""
        slot = self.slot("i64", prefix)
        rest, done = self.label(prefix + "rest"), self.label(prefix + "done")
        self.loop(slot, 0, stop, step, lambda i: body(i, step), rest)
        self.start(rest)
        i = self.value()
        self(f"{i} = load i64, ptr {slot}")
        self.loop(slot, i, stop, unit, lambda i0: body(i0, unit), done)
        self.start(done)


def const(ty: str, values: list[int]) -> str:
    """An LLVM vector constant of element type ``ty``."""
    return "<" + ", ".join(f"{ty} {v}" for v in values) + ">"


def read_object(path: str) -> bytes | None:
    """The compiled object cached at ``path``, or None when there is none or it does not end
    with the SHA-256 of the rest (a truncated or damaged file is compiled anew, never loaded)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    data, digest = blob[:-32], blob[-32:]
    return data if len(blob) > 32 and hashlib.sha256(data).digest() == digest else None


def write_object(path: str) -> Callable[[Any, bytes], None]:
    """llvmlite's callback for a freshly compiled object: written to ``path`` with its SHA-256
    (a read-only install compiles in every process)."""
    def notify(module: Any, data: bytes) -> None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(data + hashlib.sha256(data).digest())
            os.replace(tmp, path)  # another process may write the same file: whole or nothing
        except OSError:
            pass
    return notify


def host_target() -> tuple[Any, Any, str, str, dict[str, bool]]:
    """``(llvmlite.binding, target machine, cpu name, feature string, features)`` for this CPU
    (ImportError without llvmlite)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features()
    cpu, flat = llvm.get_host_cpu_name(), features.flatten()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=flat, opt=3)
    return llvm, tm, cpu, flat, dict(features)


def cache_key(src: str, cpu: str, flat: str) -> str:
    """The cache key of ``src`` compiled for ``cpu`` with features ``flat`` by this llvmlite."""
    import llvmlite

    return hashlib.sha256("\0".join((src, cpu, flat, llvmlite.__version__)).encode()
                          ).hexdigest()[:20]


def compile_ir(llvm: Any, tm: Any, src: str, path: str) -> Any:
    """The execution engine of the IR module ``src`` (RuntimeError when it does not parse or
    verify), its object read from ``path`` when cached there, else optimised, compiled and
    written there."""
    mod = llvm.parse_assembly(src)
    mod.verify()
    cached = read_object(path)
    if cached is None:  # else the cached object is used: no passes, no codegen
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.set_object_cache(write_object(path), lambda module, obj=cached: obj)
    engine.finalize_object()
    return engine
