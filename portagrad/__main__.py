"""``python -m portagrad``: ``info`` (versions, plugins, devices) and ``demo`` (train a CNN)."""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m portagrad",
                                     description="portagrad command-line tools")
    parser.add_argument("command", choices=["info", "demo"], help="info: versions, plugins and "
                        "devices; demo: train a small CNN on handwritten digits")
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    args, rest = parser.parse_known_args(argv[:1])
    if args.command == "info":
        from ._info import main as info_main

        return info_main(argv[1:])
    from .demo import main as demo_main

    return demo_main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
