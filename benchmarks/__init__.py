"""Benchmarks of portagrad's OpenCL backend through the public API, run as ``python -m benchmarks.<name>``.

Run: ``python -m benchmarks.<name> [--device opencl:0] [--quick]``, from the repository root, for
``<name>`` in ``conv``, ``copy``, ``elementwise``, ``fft``, ``gemm``, ``gemm_sweep``, ``generate``,
``half16``, ``models``, ``train_step`` (each module's docstring lists its own flags; ``--help`` prints
them). Figures measured with them are collected, with the command that made them, in
``docs/performance.md``.

Every figure is printed next to numpy's, measured in the same run, with the ratio ours/numpy
(``x`` > 1: we are faster). Common flags: ``--device`` (default ``opencl:0``) and ``--quick``
(fewer sizes and repeats). ``bash benchmarks/gpu_check.sh`` runs all of them on a machine with an
NVIDIA GPU (see the script's header).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("POCL_DEVICES", "pthread pthread")

# portagrad before numpy, as `python -m portagrad` imports them: portagrad then chooses numpy's
# BLAS kernels where that matters (portagrad._blas_env); blas_line() says which ran
import portagrad  # noqa: F401

__all__ = ["parse_args", "sync", "best_time", "report", "device_label", "backend_device", "blas_line",
           "one_blas_thread"]


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread (both libraries' matrix products, so ratios compare one core with
    one core) while the block runs, when threadpoolctl is installed."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def blas_line() -> str:
    """numpy's BLAS as ``portagrad info`` reports it: library, version, kernels."""
    from portagrad._info import _blas

    parts = [f"{b['library']} {b['version']} ({b['architecture']} kernels"
             + (f", OPENBLAS_CORETYPE={b['coretype_set_by_portagrad']} set by portagrad)"
                if b["coretype_set_by_portagrad"] else ")") for b in _blas()]
    return "numpy BLAS: " + (", ".join(parts) or "none found by threadpoolctl")


def parse_args(description: str, argv: list[str] | None = None,
               extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="opencl:0", help="portagrad device (default opencl:0)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    if extra is not None:
        extra(p)
    return p.parse_args(argv)


def sync(device: Any) -> None:
    """Wait for the device's queue (``pg.opencl.synchronize``; nothing on ``cpu``)."""
    import portagrad as pg

    dev = pg.device(device)
    if dev.type != "cpu":
        getattr(pg, dev.type).synchronize(dev.index or 0)


def best_time(fn: Callable[[], Any], sync_fn: Callable[[], Any] = lambda: None, repeat: int = 5,
              number: int = 1) -> float:
    """Best wall time of ``number`` calls of ``fn`` followed by ``sync_fn``, over ``repeat`` tries
    (after one warm-up call). The best, not the mean: this machine is shared and noisy."""
    fn()
    sync_fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        sync_fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def report(what: str, ours: float, theirs: float, unit: str, higher_is_better: bool = True,
           who: str = "numpy") -> None:
    """One line: our figure, the reference's and the ratio (ours/theirs, or theirs/ours for times)."""
    ratio = ours / theirs if higher_is_better else theirs / ours
    print(f"{what:<50} ours {ours:10.3f} {unit:<8} {who:<6} {theirs:10.3f} {unit:<8} ratio {ratio:6.2f}x",
          flush=True)


def backend_device(device: Any) -> Any:
    """The OpenCL backend's ``Device`` object (context, queue) behind a portagrad device."""
    import portagrad as pg
    from portagrad.plugins.manager import get_backend

    dev = pg.device(device)
    return get_backend(dev.type).device(dev.index or 0)


def device_label(device: Any) -> str:
    import portagrad as pg

    dev = pg.device(device)
    if dev.type == "cpu":
        return "cpu (numpy backend)"
    props = getattr(pg, dev.type).get_device_properties(dev.index or 0)
    return (f"{dev} = {props.name} ({props.type}, {props.compute_units} compute units, "
            f"{props.extra.get('platform', '')} {props.extra.get('driver_version', '')})")
