"""`splitbrain soak`: one cluster for hours under load and guided faults,
judged as it goes (harness/soak.py): a run whose defaults are an hour at
2,000 operations a second, checked live, with its progress sampled into
soak.html; then healed and checked as any run."""

from __future__ import annotations

import argparse

from harness.limits import setting_type
from history.errors import UsageError

from . import run
from .runs import execute

NAME = "soak"
HELP = "one cluster for hours under load and guided faults, judged live; soak.html shows how it goes"


def arguments(parser: argparse.ArgumentParser) -> None:
    run.arguments(parser)
    parser.add_argument(
        "--sample-every",
        type=setting_type("soak_sample_s"),
        default=10.0,
        metavar="SECONDS",
        help="how often progress and memory are sampled into soak.jsonl and soak.html (default 10)",
    )
    # A soak's own defaults: an hour, 2,000 operations a second, enough clients for that rate, and
    # a fault every 10 s (each lasting as long): at 3 s, the guided nemesis's power losses of most
    # nodes left a cluster of 3 no time to elect a leader between them (no operation ok for minutes).
    parser.set_defaults(time_limit=3600.0, rate=2000.0, concurrency=200, interval=10.0, check_live=True)


def command(args: argparse.Namespace) -> int:
    if args.repeat != 1:
        raise UsageError("--repeat: a soak is one run (start it again for another)")
    return execute(run.config_of(args, soak_sample_s=args.sample_every))[1]
