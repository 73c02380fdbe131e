"""`splitbrain targets`: each target's version, options, workloads, capabilities and faults."""

from __future__ import annotations

import argparse
import json

import targets

from .outcome import EXIT_VALID

NAME = "targets"
HELP = "each target's version, options, workloads, capabilities and faults"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", choices=targets.names(), help="only this target")
    parser.add_argument("--json", action="store_true", help="as JSON, one object per target")


def command(args: argparse.Namespace) -> int:
    """Each target (or the one named): version, options, workloads, capabilities, faults."""
    from harness.target_listing import describe, text

    described = [describe(name) for name in ([args.name] if args.name else targets.names())]
    if args.json:
        print(json.dumps(described, indent=2))
    else:
        print("\n\n".join(text(d) for d in described))
    return EXIT_VALID
