"""`splitbrain run-settings FILE`: one run from a JSON file of its settings,
as run.json's `config` holds them. A campaign's Spark task starts it on its
executor (harness/spark_campaign.py): a process of its own, so that when the
task dies (cancelled, or its executor lost) the run is told to stop, and
heals and tears down as after Ctrl-C."""

from __future__ import annotations

import argparse

from history.errors import UsageError
from results.user_files import read_json

from .arguments import path_arg
from .runs import execute, validated

NAME = "run-settings"
HELP = "one run from a JSON file of its settings (run.json's config), as a campaign's Spark tasks start it"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "settings", type=path_arg, metavar="SETTINGS.json", help="the run's settings, as run.json's config"
    )


def command(args: argparse.Namespace) -> int:
    """The run, checked and given its own name; the exit code by verdict."""
    from harness.run import RunConfig

    data = read_json(args.settings, UsageError)
    try:
        config = RunConfig.from_json(data)
    except (TypeError, AttributeError) as error:
        raise UsageError(f"{args.settings}: not a run's settings ({error})") from None
    validated(config)
    return execute(config)[1]
