"""The local-memory-tiled convolution kernels (``portagrad/backends/opencl/conv_tiled.py``).

The kind is forced (``_force_conv_kind = "tiled"``: on CPU devices it is never chosen by
itself) and every result compared with the numpy backend's: the convolution cases of
``test_opencl_conv.py`` on a small tile (so that small shapes span several tiles, with ragged
edges in every dimension), shapes of ResNet-18 on the tile GPUs run, the weight gradient split
into parts, and 16-bit floats against a float64 result. Then the tile's own rules.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import portagrad as pg
from portagrad.backends.opencl import conv_tiled
from portagrad.backends.opencl.conv_tiled import TiledConfig, tiled_source, tiled_wgrad_splits
from portagrad.testing.conformance import conv_checks as cc
from portagrad.testing.conformance.conv_checks import CONV_CASES, _conv_run, _tol

pytestmark = pytest.mark.usefixtures("opencl_devices")

DEV = "opencl:0"
#: a tile of 16 x 16 on 4 x 4 work-items: the test shapes span several tiles
SMALL = TiledConfig(16, 16, 8, 4, 4)


def _backend():
    return pg.empty(1, device=DEV)._storage.backend


def _need_fp64(device: str) -> None:
    try:
        cc.need_fp64(device)
    except cc.NoFloat64 as exc:
        pytest.skip(str(exc))


@pytest.fixture
def tiled(monkeypatch):
    monkeypatch.setattr(_backend(), "_force_conv_kind", "tiled", raising=False)


@pytest.fixture
def small_tile(monkeypatch):
    monkeypatch.setattr(conv_tiled, "TILED_CONFIG", {"float": SMALL, "double": SMALL})
    monkeypatch.setattr(conv_tiled, "_ENV_TILE", None)


def _tiled_kernels() -> set[str]:
    """Names of the tiled kernels built on the device so far."""
    dev = _backend().device(0)
    return {name for (key, name) in dev._kernels if key[0] == "conv_tiled"}


def _compare(case: tuple, dtype, transposed: bool = False, tol: dict | None = None) -> None:
    got = _conv_run(DEV, case, dtype, transposed)
    # the forced kind ran (not a fallback): all three kernels are built
    assert {"conv_tiled_fwd", "conv_tiled_dgrad", "conv_tiled_wgrad"} <= _tiled_kernels()
    want = _conv_run("cpu", case, dtype, transposed)
    for name, g, w in zip(("output", "grad input", "grad weight", "grad bias"), got, want):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, **(tol or _tol(dtype)), err_msg=name)


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
@pytest.mark.parametrize("dtype", [pg.float32, pg.float64], ids=["f32", "f64"])
def test_tiled_matches_numpy_backend(tiled, small_tile, case, dtype):
    """Strides, padding, dilation, groups, depthwise, non-contiguous inputs: forward and both
    gradients (the weight gradient in one part, as on CPU devices)."""
    if dtype == pg.float64:
        _need_fp64(DEV)
    _compare(case, dtype, transposed=case[0] == 3)


#: ResNet-18's convolutions at small sizes: (N, C, H, W, O, kernel, stride, padding, dilation, G)
RESNET = [
    (2, 3, 9, 11, 16, (3, 3), 1, 1, 1, 1),  # the CIFAR stem: K = 27, odd sizes
    (1, 20, 8, 8, 20, (3, 3), 1, 1, 1, 1),  # batch 1; channels no multiple of the tile
    (2, 16, 9, 9, 36, (3, 3), 2, 1, 1, 1),  # downsampling 3x3 stride 2, odd input
    (2, 16, 9, 9, 36, (1, 1), 2, 0, 1, 1),  # the 1x1 stride-2 shortcut
]


@pytest.mark.parametrize("case", RESNET, ids=["stem", "3x3s1", "3x3s2", "1x1s2"])
def test_tiled_resnet_shapes_default_tile(tiled, monkeypatch, case):
    """The tile GPUs run (:data:`~.conv_tiled.TILED_CONFIG`) on ResNet-18's kinds of layer."""
    monkeypatch.setattr(conv_tiled, "_ENV_TILE", None)
    _compare(case, pg.float32, tol={"rtol": 1e-4, "atol": 1e-4})


@pytest.mark.parametrize("case", RESNET[1:3], ids=["3x3s1", "3x3s2"])
def test_tiled_resnet_shapes_small_tile(tiled, small_tile, case):
    """Several tiles in every dimension, float64 as tightly as the other kernels."""
    _need_fp64(DEV)
    _compare(case, pg.float64)


@pytest.mark.parametrize("splits", [2, 3, 50])
@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[5], RESNET[2]], ids=["s2", "dw", "rn"])
def test_tiled_weight_gradient_split(tiled, small_tile, monkeypatch, case, splits):
    """The weight gradient's reduction split into parts of whole slices (what GPUs run: partial
    sums in a scratch buffer, added in order by a second kernel) equals the numpy backend's;
    more parts than slices fall back to one per slice."""
    monkeypatch.setattr(_backend(), "_force_wgrad_splits", splits, raising=False)
    _compare(case, pg.float32)


@pytest.mark.parametrize("dtype", [pg.float16, pg.bfloat16], ids=["f16", "bf16"])
def test_tiled_16bit_read_in_place(tiled, small_tile, monkeypatch, dtype):
    """16-bit operands are read as they are, accumulated in float32 and each result rounded
    once: within a 16-bit rounding of the float64 result (the weight gradient also split)."""
    monkeypatch.setattr(_backend(), "_force_wgrad_splits", 3, raising=False)
    case = RESNET[2]
    rnd = np.random.default_rng(0)
    N, C, H, W, O, k, s, p, d, G = case
    # values exact in every 16-bit type, so the inputs are the same on both sides
    xn = rnd.integers(-4, 5, (N, C, H, W)) / 4
    wn = rnd.integers(-4, 5, (O, C) + k) / 4
    gn = rnd.integers(-4, 5, (N, O, 5, 5)) / 4
    outs = {}
    for dev, dt in ((DEV, dtype), ("cpu", pg.float64)):
        x = pg.tensor(xn, dtype=dt, device=dev, requires_grad=True)
        w = pg.tensor(wn, dtype=dt, device=dev, requires_grad=True)
        y = pg.nn.functional.conv2d(x, w, None, s, p, d, G)
        assert y.dtype is dt
        (y * pg.tensor(gn, dtype=dt, device=dev)).sum().backward()
        outs[dev] = [t.detach().cpu().double().numpy() for t in (y, x.grad, w.grad)]
    eps = {pg.float16: 2.0**-10, pg.bfloat16: 2.0**-7}[dtype]
    for name, g, want in zip(("output", "grad input", "grad weight"), outs[DEV], outs["cpu"]):
        # each sum is exact in float32 (quarters, few terms): one rounding to 16 bits only
        np.testing.assert_allclose(g, want, rtol=eps, atol=0, err_msg=name)


def test_tile_rules():
    """A tile parses from ``tm,tn,tk,lx,ly``; tiles whose gathers do not map evenly onto the
    work-items, and malformed text, raise ``ValueError``; the sources build their kernels."""
    assert TiledConfig.parse("64,128,16,16,8") == TiledConfig()
    assert TiledConfig().local_bytes(4) == 2 * 16 * (68 + 132) * 4
    for bad in ("64,128,16,16", "a,b,c,d,e"):
        with pytest.raises(ValueError, match="expected five integers"):
            TiledConfig.parse(bad)
    for bad in ("64,128,24,16,8", "64,256,16,16,8", "60,128,16,16,8"):
        with pytest.raises(ValueError, match="multiples"):
            TiledConfig.parse(bad)
    win = (3, 3, 2, 2, 1, 1, 1, 1)
    for which in ("fwd", "dgrad", "wgrad"):
        src = tiled_source("float32", which, TiledConfig(), win)
        assert f"void conv_tiled_{which}(" in src
        assert src.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2  # one per slice, one before
    assert "conv_tiled_wsum" in tiled_source("float32", "wgrad", SMALL, win)


def test_tiled_weight_gradient_split_count():
    """One part on CPU devices and where the tiles fill the GPU; else enough for the GPU, at
    most one per slice, and no part left empty."""
    def dev(gpu: bool) -> SimpleNamespace:
        return SimpleNamespace(is_gpu=gpu, properties=SimpleNamespace(compute_units=132))

    def geom(N: int, C: int, O: int, HW: int, k: int = 3) -> dict[str, int]:
        return {"N": N, "C": C, "O": O, "kh": k, "kw": k, "G": 1, "OH": HW, "OW": HW}

    cfg = TiledConfig()
    layer1 = geom(128, 64, 64, 32)  # 64 x 576 weights: 5 tiles; K = 131072
    assert tiled_wgrad_splits(dev(False), layer1, cfg, 4) == 1
    s = tiled_wgrad_splits(dev(True), layer1, cfg, 4)
    assert s * 5 * cfg.nt >= 132 * 256
    tiny = geom(1, 4, 4, 3)  # K = 9: one slice
    assert tiled_wgrad_splits(dev(True), tiny, cfg, 4) == 1
    for forced in (2, 3, 7, 100):
        K = 2 * 5 * 5
        S = tiled_wgrad_splits(dev(False), geom(2, 4, 4, 5), SMALL, 4, forced)
        per = -(-K // S)  # a part's length, rounded up to whole slices as the launch does
        ks = -(-per // SMALL.tk) * SMALL.tk
        assert 1 <= S <= min(forced, -(-K // SMALL.tk))
        assert (S - 1) * ks < K <= S * ks  # every part has a slice


def test_conv_benchmark_times_a_forced_kind(capsys, monkeypatch):
    """``python -m benchmarks.conv --kinds tiled`` runs one layer (tiny batch) and prints its
    three directions and the per-step total."""
    from benchmarks import conv as bench

    monkeypatch.setenv("PORTAGRAD_OPENCL_GEMM_TUNE", "0")  # what main() sets; restored after

    bench.main(["--device", DEV, "--kinds", "tiled", "--batch", "1", "--layers", "l4sc",
                "--no-torch"])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("l4sc"))
    assert "tiled" in line and all(f"{op} " in line for op in ("fwd", "dgrad", "wgrad"))
    assert "per training step" in out and "total" in out


def test_tiled_is_a_candidate_on_gpus_only(monkeypatch):
    """The tuner is offered "tiled" on GPUs (not first: untimed shapes keep implicit GEMM) and
    never on CPU devices; a shape past the kernels' 32-bit indices is not offered, and forcing
    "tiled" on it runs the implicit kernel instead."""
    from portagrad.backends.opencl import conv as conv_mod

    be = _backend()
    monkeypatch.setattr(be, "_force_conv_kind", None, raising=False)
    monkeypatch.setattr(conv_mod, "_ENV_CONV", None)
    offered: dict[bool, list[str]] = {}

    class Tuner:
        """Records the candidates it is offered per kind of device; takes the first."""

        def __init__(self, gpu: bool) -> None:
            self.gpu = gpu

        def choose(self, cls, cands, *args, **kwargs):
            offered[self.gpu] = [c[0] for c in cands]
            return cands[0]

    monkeypatch.setattr(conv_mod, "tuner", lambda d: Tuner(d.is_gpu))
    gm = {"N": 128, "C": 64, "H": 32, "W": 32, "O": 64, "OH": 32, "OW": 32, "kh": 3, "kw": 3,
          "sh": 1, "sw": 1, "ph": 1, "pw": 1, "dh": 1, "dw": 1, "G": 1}
    ran: list[str] = []
    paths = {k: (lambda k=k: ran.append(k)) for k in conv_mod.CONV_KINDS}

    def dev(gpu: bool) -> SimpleNamespace:
        return SimpleNamespace(is_gpu=gpu, queue=SimpleNamespace(finish=lambda: None))

    for gpu in (True, False):
        be._conv_path(dev(gpu), "fwd", gm, "float32", paths)
    assert offered[True] == ["implicit", "tiled", "im2col"]
    assert offered[False] == ["im2col", "implicit"]
    assert ran == ["implicit", "im2col"]
    huge = dict(gm, N=2**18, OH=128, OW=128)  # 2**32 output positions
    be._conv_path(dev(True), "fwd", huge, "float32", paths)
    assert "tiled" not in offered[True]
    monkeypatch.setattr(be, "_force_conv_kind", "tiled", raising=False)
    ran.clear()
    be._conv_path(dev(True), "fwd", huge, "float32", paths)
    be._conv_path(dev(True), "fwd", gm, "float32", paths)
    assert ran == ["implicit", "tiled"]
