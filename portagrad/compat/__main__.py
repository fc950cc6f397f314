"""``python -m portagrad.compat [--coverage [--missing]] | script.py args | -m module args``."""
from __future__ import annotations

import os
import sys

from . import _coverage, run_module, run_script

USAGE = """usage: python -m portagrad.compat script.py [args ...]
       python -m portagrad.compat -m module [args ...]
       python -m portagrad.compat --coverage [--missing]

Runs a PyTorch script with 'import torch' resolving to portagrad, or prints which public PyTorch
names portagrad provides (--missing also lists the absent ones)."""


def main(argv: list[str]) -> int:
    """Dispatch the command line; returns the exit status (the script's own exits propagate)."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("--coverage", "--missing"):
        extra = [a for a in argv if a not in ("--coverage", "--missing")]
        if extra:
            print(f"portagrad.compat: unexpected arguments {extra}\n\n{USAGE}", file=sys.stderr)
            return 2
        return _coverage.main(missing="--missing" in argv)
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"portagrad.compat: -m needs a module name\n\n{USAGE}", file=sys.stderr)
            return 2
        run_module(argv[1], argv[2:])
        return 0
    if argv[0].startswith("-"):
        print(f"portagrad.compat: unknown option {argv[0]}\n\n{USAGE}", file=sys.stderr)
        return 2
    if not os.path.isfile(argv[0]):
        # as `python missing.py`: a message and status 2, not a traceback
        print(f"{sys.executable}: can't open file '{os.path.abspath(argv[0])}': [Errno 2] No such "
              "file or directory", file=sys.stderr)
        return 2
    run_script(argv[0], argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
