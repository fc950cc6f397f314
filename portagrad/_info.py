"""``python -m portagrad info``: what is installed, which plugins loaded, failed or were blocked,
which backend specs were refused or shadowed (and why), each backend's devices with memory and
capabilities, and the relevant environment variables."""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys

import portagrad

from . import _blas_env
from .plugins.manager import get_backend, get_state

__all__ = ["main", "collect"]

_ENV_VARS = ("PORTAGRAD_DEVICE", "PORTAGRAD_VISIBLE_DEVICES", "PORTAGRAD_DISABLE_PLUGINS",
             "POCL_DEVICES", "POCL_CACHE_DIR", "PYOPENCL_CTX", "OCL_ICD_VENDORS",
             "PYOPENCL_CACHE_DIR", "OPENBLAS_CORETYPE", "PORTAGRAD_HOST_MALLOC", "PORTAGRAD_WINOGRAD",
             "PORTAGRAD_NUMBA")
_DISTS = ("numpy", "numba", "pluggy", "safetensors", "tqdm", "pyopencl", "pocl-binary-distribution")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n else "unknown"


def collect() -> dict:
    """Everything ``info`` prints, as a dict (tests read it).

    ``plugins_*`` are keyed by entry-point name (the plugin); ``backends`` maps each device type
    whose backend loaded to its serving plugin, its ``BackendSpec.name`` (``backend``), its
    ``priority``, the plugins it ``shadows`` and its devices; ``backends_failed`` maps the device
    types whose backend failed to load (or to report its devices) to the error. A failed backend
    is never listed as available."""
    state = get_state()
    backends, failed = {}, {}
    for device_type in sorted(state.specs):
        spec = state.specs[device_type]
        entry: dict = {"plugin": state.spec_plugin.get(device_type), "backend": spec.name,
                       "priority": spec.priority, "devices": [],
                       # lower-priority specs for this device type that this one wins over
                       # (refused claims, such as a third-party 'cpu', are listed as unused only)
                       "shadows": [p for p, t, why in state.shadowed
                                   if t == device_type and "shadowed by" in why]}
        try:
            backend = get_backend(device_type)
            for i in range(backend.device_count()):
                p = backend.get_device_properties(i)
                entry["devices"].append({
                    "device": f"{device_type}:{i}" if device_type != "cpu" else "cpu",
                    "name": p.name, "type": p.type, "memory": p.total_memory, "fp64": p.fp64,
                    "fp16": p.fp16, "compute_units": p.compute_units, "extra": p.extra})
        except (Exception, SystemExit) as exc:  # shown, never fatal (plugin code runs here)
            # a backend that fails to load (or to list its devices) is not available: it is
            # reported apart, with the reason
            failed[device_type] = {"plugin": entry["plugin"], "backend": spec.name,
                                   "error": str(exc)}
            continue
        backends[device_type] = entry
    return {
        "portagrad": portagrad.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "dependencies": {d: _version(d) for d in _DISTS},
        "plugins_loaded": dict(state.loaded),
        "plugins_failed": dict(state.failed),
        "plugins_blocked": list(state.blocked),
        "plugins_shadowed": [{"plugin": p, "device_type": t, "reason": why}
                             for p, t, why in state.shadowed],
        "backends": backends,
        "backends_failed": failed,
        "environment": {k: os.environ[k] for k in _ENV_VARS if k in os.environ},
        "blas": _blas(),
    }


def _blas() -> list[dict]:
    """numpy's BLAS libraries (threadpoolctl): library, version, kernels, threads; and whether
    portagrad chose OpenBLAS's kernels (``portagrad._blas_env``)."""
    from threadpoolctl import threadpool_info

    return [{"library": d.get("internal_api"), "version": d.get("version"),
             "architecture": d.get("architecture"), "threads": d.get("num_threads"),
             "coretype_set_by_portagrad": _blas_env.chosen()}
            for d in threadpool_info() if d.get("user_api") == "blas"]


def _blas_env_note(value: str) -> str:
    return f"OPENBLAS_CORETYPE={value} set by portagrad (AMD Zen 4; see portagrad._blas_env)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m portagrad info")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args(argv or [])
    info = collect()
    if args.json:
        import json

        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"portagrad {info['portagrad']}  (Python {info['python']}, {info['platform']})")
    print("dependencies:")
    for name, ver in info["dependencies"].items():
        print(f"  {name:26s} {ver}")
    print("plugins:")
    for name, origin in info["plugins_loaded"].items():
        print(f"  loaded   {name:12s} {origin}")
    for name, err in info["plugins_failed"].items():
        print(f"  FAILED   {name:12s} {err}")
    for name in info["plugins_blocked"]:
        print(f"  blocked  {name:12s} (PORTAGRAD_DISABLE_PLUGINS)")
    for d in info["plugins_shadowed"]:  # loaded, but does not serve this device type
        print(f"  unused   {d['plugin']:12s} {d['reason']}")
    for b in info["blas"]:
        why = (f", {_blas_env_note(b['coretype_set_by_portagrad'])}"
               if b["coretype_set_by_portagrad"] else "")
        print(f"BLAS: {b['library']} {b['version']}, {b['architecture']} kernels, "
              f"{b['threads']} threads{why}")
    print("backends and devices:")
    for device_type, entry in info["backends"].items():
        name = f", backend {entry['backend']}" if entry["backend"] != entry["plugin"] else ""
        wins = (f"; wins over {', '.join(entry['shadows'])} (see 'unused' above)"
                if entry["shadows"] else "")
        print(f"  {device_type} (plugin {entry['plugin']}{name}{wins}):")
        if not entry["devices"]:
            print("    no devices")
        for d in entry["devices"]:
            caps = ", ".join(c for c, ok in (("fp64", d["fp64"]), ("fp16", d["fp16"])) if ok)
            print(f"    {d['device']:10s} {d['name']}  [{d['type']}, {_mib(d['memory'])}, "
                  f"{d['compute_units']} compute units{', ' + caps if caps else ''}]")
    if info["backends_failed"]:
        print("failed backends (not available):")
    for device_type, entry in info["backends_failed"].items():
        print(f"  FAILED   {device_type} (plugin {entry['plugin']}): {entry['error']}")
    env = info["environment"]
    print("environment:" + ("" if env else " (none of the portagrad/OpenCL variables set)"))
    for k, v in env.items():
        print(f"  {k}={v}")
    return 0
