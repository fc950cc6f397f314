"""A program that ends with OpenCL work in flight exits cleanly: the backend waits for every
device's queue from :mod:`atexit`. Without that wait, PoCL could still be compiling a kernel (with
the LLVM inside its shared library) while the exit destroyed that library's static objects: a
segfault after the program's last line, seen on a script whose last result was never read."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The check is registered before portagrad is imported, so it runs after the backend's hook
# (atexit runs last-registered first): by then the marker enqueued after the program's last
# operation must be complete, and every device waited for once.
_SCRIPT = textwrap.dedent("""
    import atexit, sys
    state = {}

    def check():
        import pyopencl as cl
        done = state["marker"].command_execution_status == cl.command_execution_status.COMPLETE
        print("MARKER_COMPLETE", done, "FINISHED", sorted(state["finished"]), flush=True)

    atexit.register(check)
    import pyopencl as cl
    import portagrad as pg

    devices = sys.argv[1:]
    state["finished"] = []
    for name in devices:
        dev = pg.empty(1, device=name)._storage.backend._devices[pg.device(name).index]
        real = dev.finish

        def finish(real=real, name=name):
            state["finished"].append(name)
            real()

        dev.finish = finish
        x = pg.randn(96, 96, device=name)
        y = (x @ x).tanh() @ x  # never read: still queued (or compiling) at the last line
        state["marker"] = cl.enqueue_marker(dev.queue)
    print("LAST LINE", tuple(y.shape), flush=True)
""")


def test_exit_waits_for_queued_work(opencl_devices: list[str], tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PORTAGRAD_OPENCL_FUSION"] = "0"  # launch at once, so the marker follows real work
    r = subprocess.run([sys.executable, "-c", _SCRIPT, *opencl_devices], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    assert "LAST LINE (96, 96)" in r.stdout, r.stdout
    assert f"MARKER_COMPLETE True FINISHED {sorted(opencl_devices)}" in r.stdout, r.stdout
