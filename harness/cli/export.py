"""`splitbrain export`: a run's history for Jepsen's tools."""

from __future__ import annotations

import argparse

from history.errors import UsageError

from .arguments import path_arg
from .outcome import EXIT_VALID

NAME = "export"
HELP = "a run's history for Jepsen's tools (Knossos reads it)"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", type=path_arg, metavar="RUN_DIR", help="a run directory (register workload, or imported)"
    )
    parser.add_argument(
        "--format", required=True, choices=["jepsen-edn"], help="Jepsen's EDN history, one op map a line"
    )
    parser.add_argument("--to", type=path_arg, required=True, metavar="FILE", help="the file to write")


def command(args: argparse.Namespace) -> int:
    from results.exporter import export_edn

    if not args.to.parent.is_dir():
        raise UsageError(f"--to: {args.to.parent} is not a folder")
    options = export_edn(args.run_dir, args.to)
    print(f"exported {args.run_dir} -> {args.to} (read back with: splitbrain import {options})")
    return EXIT_VALID
