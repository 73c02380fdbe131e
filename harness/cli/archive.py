"""`splitbrain archive`: run directories packed into an archive folder, or an archive verified."""

from __future__ import annotations

import argparse

from history.errors import UsageError

from .arguments import path_arg
from .outcome import EXIT_ERROR, EXIT_VALID

NAME = "archive"
HELP = "pack run directories into an archive folder, or verify one (exit 2 on any problem)"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", type=path_arg, nargs="*", metavar="RUN", help="run directories, or folders of them")
    parser.add_argument("--to", type=path_arg, metavar="ARCHIVE", help="the archive folder (made if missing)")
    parser.add_argument("--verify", type=path_arg, metavar="ARCHIVE", help="check every file against the manifest")


def command(args: argparse.Namespace) -> int:
    """Pack runs into an archive, or verify one: every problem named, exit 2 if any."""
    from results import archive
    from results.checking import check_run
    from results.recording import find_run_dirs

    if args.verify:
        problems = archive.verify(args.verify)
        runs = len(archive.read_manifest(args.verify)["runs"])
        for problem in problems:
            print(f"{args.verify}: {problem}")
        print(f"archive {args.verify}: {runs} runs, {len(problems)} problems")
        return EXIT_ERROR if problems else EXIT_VALID
    if args.to is None or not args.runs:
        raise UsageError("archive: give --to ARCHIVE and run directories, or --verify ARCHIVE")
    added = archive.add(args.to, find_run_dirs(args.runs), check_run)
    print(f"archive {args.to}: {len(added)} runs added, index {args.to / archive.INDEX}")
    return EXIT_VALID
