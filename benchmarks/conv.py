"""Convolution kernels on ResNet-18's layers (CIFAR, 32x32 inputs): forward, input gradient and
weight gradient, each convolution path forced in turn, in GFLOP/s; beside torch when importable
(CUDA with TF32 off if available, else its CPU).

Run: ``python -m benchmarks.conv [--device opencl:0] [--kinds im2col,implicit,tiled]
[--batch 128] [--dtype float32] [--tile 64,128,16,16,8] [--layers stem,l1,...]
[--bn [--bn-parts 0,auto,8]] [--quick]``, from the repository root. ``--kinds`` lists the
``PORTAGRAD_OPENCL_CONV`` paths to force (default: all of them); ``--tile`` sets the tiled
kernels' tile (as ``PORTAGRAD_OPENCL_CONV_TILE``). Each layer line gives milliseconds and
GFLOP/s per call; the last lines weigh each layer by how often a training step of ResNet-18 runs
it (milliseconds per step, all three directions). ``--bn`` adds training-mode batch norm on each
layer's output, a work-group per channel against the channels split into parts (the GPU
default; ``--bn-parts`` lists counts to force); its "dgrad" column in the per-step lines is the
backward.

The GEMM tuner is off (``PORTAGRAD_OPENCL_GEMM_TUNE=0``) so that the im2col path's GEMM is not
timed inside the measurement (it takes its default kernel).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

from . import best_time, device_label, one_blas_thread, parse_args, sync

#: name: (C, O, input size, kernel, stride, padding, uses per training step)
LAYERS: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "stem": (3, 64, 32, 3, 1, 1, 1),
    "l1": (64, 64, 32, 3, 1, 1, 4),
    "l2down": (64, 128, 32, 3, 2, 1, 1),
    "l2": (128, 128, 16, 3, 1, 1, 3),
    "l2sc": (64, 128, 32, 1, 2, 0, 1),
    "l3down": (128, 256, 16, 3, 2, 1, 1),
    "l3": (256, 256, 8, 3, 1, 1, 3),
    "l3sc": (128, 256, 16, 1, 2, 0, 1),
    "l4down": (256, 512, 8, 3, 2, 1, 1),
    "l4": (512, 512, 4, 3, 1, 1, 3),
    "l4sc": (256, 512, 8, 1, 2, 0, 1),
}
OPS = ("fwd", "dgrad", "wgrad")


def _extra(p: Any) -> None:
    p.add_argument("--kinds", default="im2col,implicit,tiled",
                   help="convolution paths to force, comma-separated (default: all)")
    p.add_argument("--kind", default=None, help="one path (same as --kinds with one name)")
    p.add_argument("--batch", type=int, default=128, help="batch size (default 128)")
    p.add_argument("--dtype", default="float32", help="float32, float64, float16 or bfloat16")
    p.add_argument("--tile", default=None, help="tiled kernels' tile tm,tn,tk,lx,ly")
    p.add_argument("--layers", default=None, help="layer names, comma-separated (default: all)")
    p.add_argument("--no-torch", action="store_true", help="skip the torch reference")
    p.add_argument("--bn", action="store_true",
                   help="also time batch norm on each layer's output, one work-group per channel "
                        "against channels split into parts (GPUs' default)")
    p.add_argument("--bn-parts", default="0,auto",
                   help="with --bn: parts per channel to force, comma-separated; 0 = a work-group "
                        "per channel, auto = the device's choice (default 0,auto)")


def _shapes(name: str, batch: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                             int, int, float]:
    """(x, w, y) shapes, stride, padding and GFLOP of layer ``name`` at ``batch``."""
    C, O, hw, k, s, p, _ = LAYERS[name]
    ohw = (hw + 2 * p - k) // s + 1
    gflop = 2 * batch * O * ohw * ohw * C * k * k / 1e9
    return (batch, C, hw, hw), (O, C, k, k), (batch, O, ohw, ohw), s, p, gflop


def _ours(dev: str, kind: str, name: str, batch: int, dtype: Any, repeat: int) -> list[float]:
    """Seconds per call of forward, input and weight gradient with ``kind`` forced."""
    import portagrad as pg
    import portagrad.nn.functional as F

    be = pg.empty(1, device=dev)._storage.backend
    xs, ws, ys, s, p, _ = _shapes(name, batch)
    x = pg.randn(*xs, device=dev, dtype=dtype)
    w = pg.randn(*ws, device=dev, dtype=dtype)
    gy = pg.randn(*ys, device=dev, dtype=dtype)
    forcing = hasattr(be, "_force_conv_kind")  # (OpenCL; other backends choose their own path)
    old = be._force_conv_kind if forcing else None
    if forcing:
        be._force_conv_kind = kind
    try:
        fns = [lambda: F.conv2d(x, w, None, s, p),
               lambda: pg.nn.grad.conv2d_input(xs, w, gy, s, p),
               lambda: pg.nn.grad.conv2d_weight(x, ws, gy, s, p)]
        return [best_time(f, lambda: sync(dev), repeat) for f in fns]
    finally:
        if forcing:
            be._force_conv_kind = old


def _bn(dev: str, name: str, batch: int, dtype: Any, repeat: int,
        parts: list[str]) -> list[tuple[str, float, float]]:
    """(label, forward seconds, forward + backward seconds) of training-mode batch norm on
    layer ``name``'s output, for each of ``parts`` ("auto" or a count for ``_force_bn_parts``:
    0 is a work-group per channel)."""
    import portagrad as pg
    import portagrad.nn.functional as F

    be = pg.empty(1, device=dev)._storage.backend
    ys = _shapes(name, batch)[2]
    C = ys[1]
    x = pg.randn(*ys, device=dev, dtype=dtype, requires_grad=True)
    w = pg.ones(C, device=dev, dtype=dtype, requires_grad=True)
    b = pg.zeros(C, device=dev, dtype=dtype, requires_grad=True)
    rm, rv = pg.zeros(C, device=dev, dtype=dtype), pg.ones(C, device=dev, dtype=dtype)
    gy = pg.randn(*ys, device=dev, dtype=dtype)

    def fwd() -> Any:
        return F.batch_norm(x, rm, rv, w, b, training=True)

    def both() -> Any:
        return pg.autograd.grad(fwd(), [x, w, b], gy)

    old = be._force_bn_parts
    res = []
    try:
        for p in parts:
            be._force_bn_parts = None if p == "auto" else int(p)
            res.append((f"bn-{p}", best_time(fwd, lambda: sync(dev), repeat),
                        best_time(both, lambda: sync(dev), repeat)))
    finally:
        be._force_bn_parts = old
    return res


def _torch(name: str, batch: int, dtype: str, repeat: int) -> tuple[list[float], str] | None:
    try:
        import torch
    except Exception:
        return None
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    dt = getattr(torch, dtype)
    xs, ws, ys, s, p, _ = _shapes(name, batch)
    x, w, gy = (torch.randn(*sh, device=dev, dtype=dt) for sh in (xs, ws, ys))
    tnf = torch.nn.functional
    fns = [lambda: tnf.conv2d(x, w, None, s, p),
           lambda: torch.nn.grad.conv2d_input(xs, w, gy, s, p),
           lambda: torch.nn.grad.conv2d_weight(x, ws, gy, s, p)]
    sy = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    number = 10 if dev == "cuda" else 1
    return [best_time(f, sy, repeat, number) for f in fns], f"torch-{dev}"


def main(argv: list[str] | None = None) -> None:
    args = parse_args("convolution paths on ResNet-18's layers", argv, _extra)
    os.environ.setdefault("PORTAGRAD_OPENCL_GEMM_TUNE", "0")  # read when a GEMM is chosen
    import portagrad as pg

    with contextlib.ExitStack() as stack:
        if pg.device(args.device).type == "cpu":
            # one core each, as the other cpu benchmarks (numpy's BLAS, torch's intra-op threads)
            stack.enter_context(one_blas_thread())
            try:
                import torch
                torch.set_num_threads(1)
            except ImportError:
                pass
        _run(args)


def _run(args: Any) -> None:
    import portagrad as pg
    from portagrad.backends.opencl import conv_tiled

    if args.tile:
        conv_tiled.TiledConfig.parse(args.tile)  # a bad tile fails here, with its reason
        conv_tiled._ENV_TILE = args.tile
    kinds = [args.kind] if args.kind else args.kinds.split(",")
    if not hasattr(pg.empty(1, device=args.device)._storage.backend, "_force_conv_kind"):
        kinds = ["backend"]  # no paths to force (the numpy backend): its own choice, once
    batch = 4 if args.quick and args.batch == 128 else args.batch
    repeat = 2 if args.quick else 5
    names = args.layers.split(",") if args.layers else list(LAYERS)
    if args.quick and not args.layers:
        names = ["stem", "l2down", "l3sc"]
    dtype = getattr(pg, args.dtype)
    print(f"device: {device_label(args.device)}; batch {batch}, {args.dtype}, tiled tile "
          f"{conv_tiled.tiled_config(args.dtype).name}")
    step: dict[str, list[float]] = {}
    for name in names:
        gflop = _shapes(name, batch)[5]
        uses = LAYERS[name][6]
        C, O, hw, k, s, p, _ = LAYERS[name]
        head = f"{name:<7} {C:>3}->{O:<3} {hw:>2}x{hw:<2} {k}x{k} s{s}"
        rows: list[tuple[str, list[float]]] = [(kd, _ours(args.device, kd, name, batch, dtype, repeat))
                                               for kd in kinds]
        ref = None if args.no_torch else _torch(name, batch, args.dtype, repeat)
        if ref is not None:
            rows.append((ref[1], ref[0]))
        for who, secs in rows:
            cells = "  ".join(f"{op} {t * 1e3:8.3f} ms {gflop / t:8.1f} GF/s" for op, t in zip(OPS, secs))
            print(f"{head}  {who:<10} {cells}", flush=True)
            tot = step.setdefault(who, [0.0, 0.0, 0.0])
            for i, t in enumerate(secs):
                tot[i] += uses * t
        if args.bn:
            # a batch norm follows every convolution of ResNet-18 (the shortcuts' too)
            for who, tf, tb in _bn(args.device, name, batch, dtype, repeat,
                                   args.bn_parts.split(",")):
                print(f"{head}  {who:<10} fwd {tf * 1e3:8.3f} ms  fwd+bwd {tb * 1e3:8.3f} ms",
                      flush=True)
                tot = step.setdefault(who, [0.0, 0.0, 0.0])
                tot[0] += uses * tf
                tot[1] += uses * (tb - tf)
    print("per training step (layers weighted by their uses):")
    for who, tot in step.items():
        print(f"  {who:<10} " + "  ".join(f"{op} {t * 1e3:8.2f} ms" for op, t in zip(OPS, tot))
              + f"  total {sum(tot) * 1e3:8.2f} ms", flush=True)


if __name__ == "__main__":
    main()
