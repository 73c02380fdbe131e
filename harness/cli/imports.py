"""`splitbrain import`: histories recorded by other tools (Jepsen's), made run directories."""

from __future__ import annotations

import argparse
import json
import sys

from tqdm import tqdm

from checkers.models import MODELS
from history.errors import SettingError, UsageError

from .arguments import path_arg, writable_folder
from .outcome import EXIT_ERROR, EXIT_VALID, _no_bar, one_line

NAME = "import"
HELP = "histories recorded by other tools (Jepsen) as run directories"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=path_arg, nargs="+", metavar="FILE", help="history files, one run directory each")
    parser.add_argument(
        "--format",
        required=True,
        choices=["jepsen-edn", "jepsen-log"],
        help="Jepsen's EDN history, or old jepsen.util log lines",
    )
    parser.add_argument(
        "--model", required=True, choices=sorted(MODELS), help="what the history ran against (checkers/models.py)"
    )
    parser.add_argument("--initial", help='the model\'s initial value as JSON, or nil (default: nil; kv: "")')
    parser.add_argument("--to", type=path_arg, required=True, help="where run directories go: TO/<file stem>/")
    parser.add_argument("--replace", action="store_true", help="import over run directories that exist")
    parser.add_argument(
        "--independent", action="store_true", help="values are [key value] (jepsen.independent): one register per key"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args: argparse.Namespace) -> int:
    from checkers.models import make_model
    from results.importer import ImportFormatError, import_file

    try:
        model = make_model(args.model, parse_initial(args.initial))
    except SettingError as error:
        raise UsageError(f"--model: {error.reason}") from None
    writable_folder(args.to, "--to", make=False)
    worst = EXIT_VALID
    for path in tqdm(args.files, desc="import", unit="file", disable=_no_bar(args, args.files)):
        try:
            run_dir = import_file(path, args.format, model, args.to, replace=args.replace, independent=args.independent)
        except ImportFormatError as error:
            tqdm.write(one_line(f"splitbrain: {error}"), file=sys.stderr)
            worst = EXIT_ERROR
            continue
        tqdm.write(f"imported {path} -> {run_dir}")
    return worst


def parse_initial(text: str | None):
    """`--initial`: JSON (0, "", null) or EDN's nil."""
    if text is None or text == "nil":
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise UsageError(f"--initial: {text!r} is not a JSON value (or nil)") from None
