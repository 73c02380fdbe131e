"""`python -m targets.kraft.format`: format a node's data directory before its
first start, as `kafka-storage format` does for KRaft.

    --initial-voters n1@DIR1,n2@DIR2,...   bootstrap with this voter set
    --standalone                           bootstrap with this node alone
    (neither)                              an observer, to be added later

Formatting is done once: a node whose disk is lost must not be bootstrapped
again (it would found a second cluster), so it is started unformatted and
comes back as an observer. Prints the directory id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .storage import StorageError, format_data_dir, new_directory_id


def parse_voters(text: str) -> tuple[tuple[str, str], ...]:
    voters = []
    for item in text.split(","):
        node, sep, directory = item.partition("@")
        if not sep or not node or len(directory) != 32:
            raise argparse.ArgumentTypeError(f"expected ID@DIRECTORY_ID (32 hex digits), got {item!r}")
        voters.append((node, directory))
    return tuple(voters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kraft-format", description="Format a reference-quorum data directory.")
    parser.add_argument("--id", required=True, help="this node's id")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--directory-id", default=None, help="32 hex digits (default: a new random one)")
    bootstrap = parser.add_mutually_exclusive_group()
    bootstrap.add_argument("--initial-voters", type=parse_voters, default=())
    bootstrap.add_argument("--standalone", action="store_true")
    args = parser.parse_args(argv)
    directory_id = args.directory_id or new_directory_id()
    voters = ((args.id, directory_id),) if args.standalone else args.initial_voters
    if voters and args.id in dict(voters) and dict(voters)[args.id] != directory_id:
        parser.error(f"--initial-voters names {args.id} with directory {dict(voters)[args.id]}, not {directory_id}")
    try:
        format_data_dir(args.data_dir, directory_id, voters)
    except StorageError as error:
        print(f"kraft-format: {error}", file=sys.stderr)
        return 2
    print(directory_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
