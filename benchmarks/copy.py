"""Host<->device copy bandwidth: pageable numpy array vs pinned (``pin_memory``) source.

Run: ``python -m benchmarks.copy [MiB]`` (default 256). numpy's figure is a host ``memcpy`` of the
same size (``np.copyto``), the ceiling for a CPU OpenCL device.
"""
from __future__ import annotations

import sys

import numpy as np

from . import backend, best_time, empty, report


def main(mib: int = 256) -> None:
    be = backend()
    dev = be.device(0)
    nbytes = mib << 20
    print(f"device: {dev.label}; {mib} MiB")
    n = nbytes // 4
    pageable = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    pinned = be.pin_memory(nbytes).view(np.float32)
    pinned[:] = pageable
    dst = empty((n,))
    host_copy = np.empty_like(pageable)
    t_np = best_time(lambda: np.copyto(host_copy, pageable), repeat=3)
    gbs = nbytes / 1e9
    t_page = best_time(lambda: be.from_host(dst, pageable), dev.queue.finish, repeat=3)
    report("host->device pageable GB/s", gbs / t_page, gbs / t_np, "GB/s")
    t_pin = best_time(lambda: be.from_host(dst, pinned, non_blocking=True), dev.queue.finish, repeat=3)
    report("host->device pinned, non_blocking GB/s", gbs / t_pin, gbs / t_np, "GB/s")
    t_d2h = best_time(lambda: be.to_host(dst), repeat=3)
    report("device->host (new array) GB/s", gbs / t_d2h, gbs / t_np, "GB/s")
    assert np.array_equal(be.to_host(dst), pageable)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
