"""``PORTAGRAD_VISIBLE_DEVICES``: which physical devices a backend exposes, and in what order."""
from __future__ import annotations

import os

__all__ = ["visible_indices"]


def visible_indices(device_type: str, count: int) -> list[int]:
    """Physical indices of the devices of ``device_type`` that are visible, in logical order.

    ``PORTAGRAD_VISIBLE_DEVICES`` is a comma-separated list like ``CUDA_VISIBLE_DEVICES``. Entries
    may name a type (``opencl:1``) or be bare indices (``1,0``), which apply to every non-cpu type.
    Entries out of range are ignored. Unset or empty: all ``count`` devices.
    """
    raw = os.environ.get("PORTAGRAD_VISIBLE_DEVICES")
    if raw is None or not raw.strip():
        return list(range(count))
    chosen: list[int] = []
    typed = False
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            continue
        if ":" in entry:
            dtype_name, _, idx = entry.partition(":")
            typed = True
            if dtype_name.strip() != device_type:
                continue
        else:
            idx = entry
        try:
            i = int(idx)
        except ValueError:
            continue
        if 0 <= i < count and i not in chosen:
            chosen.append(i)
    if not chosen and typed and not any(e.strip().startswith(device_type + ":")
                                        for e in raw.split(",")):
        # only other device types were named: this type is not restricted
        return list(range(count))
    return chosen
