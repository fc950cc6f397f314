"""A pytest plugin for ``benchmarks/gpu_check.sh``: ``PG_SHARD=k/n`` keeps every n-th collected
test starting at the k-th, so n processes run disjoint parts of the suite in parallel (test ids
hold spaces and brackets, so they cannot travel on a command line).

Run (from the repository root; one such process per shard ``k`` of ``n``):
``PG_SHARD=0/2 python -m pytest -q -p benchmarks._shard tests``. Without ``PG_SHARD`` it keeps
every test.
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["pytest_collection_modifyitems"]


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    spec = os.environ.get("PG_SHARD")
    if not spec:
        return
    k, n = (int(x) for x in spec.split("/"))
    keep = items[k::n]
    deselected = [it for i, it in enumerate(items) if i % n != k]
    config.hook.pytest_deselected(items=deselected)
    items[:] = keep
