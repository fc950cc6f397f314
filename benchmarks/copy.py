"""Host->device copy bandwidth through the public API: pageable vs pinned host tensors.

Run: ``python -m benchmarks.copy [--device opencl:0] [--quick]``, from the repository root.

Sizes 1 MiB .. 256 MiB (1, 16 and 256 MiB with ``--quick``). "pageable" is ``t.to(device)`` of
an ordinary CPU tensor; "pinned" is ``t.pin_memory().to(device, non_blocking=True)`` followed by
``pg.opencl.synchronize()``, timed also with ``pg.opencl.Event``s. The reference is numpy copying
the same bytes in host memory (``np.copyto``): the ceiling for a CPU OpenCL device; a GPU is
bounded by PCIe instead. Each size then times device->host, ``d.cpu()`` into a new array, against
the same reference.
"""
from __future__ import annotations

import numpy as np

from . import best_time, device_label, parse_args, report, sync


def main(argv: list[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    import portagrad as pg

    dev = args.device
    print(f"device: {device_label(dev)}")
    mibs = [1, 16, 256] if args.quick else [1, 4, 16, 64, 256]
    repeat = 3 if args.quick else 5
    for mib in mibs:
        nbytes = mib << 20
        n = nbytes // 4
        host = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        pageable = pg.from_numpy(host)
        pinned = pageable.pin_memory()
        assert pinned.is_pinned()
        number = max(1, 64 // mib)
        scratch = np.empty_like(host)
        t_np = best_time(lambda: np.copyto(scratch, host), repeat=repeat, number=number)  # noqa: B023 - timed within this iteration
        gb = nbytes / 1e9
        t_page = best_time(lambda: pageable.to(dev), lambda: sync(dev), repeat, number)  # noqa: B023 - timed within this iteration
        report(f"host->device {mib:4d} MiB pageable, GB/s", gb / t_page, gb / t_np, "GB/s")
        t_pin = best_time(lambda: pinned.to(dev, non_blocking=True), lambda: sync(dev), repeat, number)  # noqa: B023 - timed within this iteration
        report(f"host->device {mib:4d} MiB pinned non_blocking, GB/s", gb / t_pin, gb / t_np, "GB/s")
        mod = getattr(pg, pg.device(dev).type, None)
        if mod is not None and hasattr(mod, "Event"):
            start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
            best = float("inf")
            for _ in range(repeat):
                start.record()
                for _ in range(number):
                    pinned.to(dev, non_blocking=True)
                end.record()
                best = min(best, start.elapsed_time(end) / 1e3 / number)
            print(f"{'  pinned, timed with Events, GB/s':<50} {gb / best:10.3f}", flush=True)
        d = pinned.to(dev)
        t_d2h = best_time(lambda: d.cpu(), repeat=repeat, number=number)  # noqa: B023 - timed within this iteration
        report(f"device->host {mib:4d} MiB (new array), GB/s", gb / t_d2h, gb / t_np, "GB/s")
        assert np.array_equal(d.cpu().numpy(), host)


if __name__ == "__main__":
    main()
