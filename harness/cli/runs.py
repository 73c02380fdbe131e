"""Runs from start to verdict, for `run`, `replay` and `shrink`: settings checked before anything is made, and a recorded run's settings ready to run again."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

from harness.limits import raise_file_limit
from history.errors import ClusterError, UsageError

from .arguments import writable_folder
from .outcome import report


def fresh_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def validated(config) -> None:
    """A run's settings checked before anything is made: one line naming the option."""
    config.validate()
    if config.toxiproxy:
        reachable_toxiproxy(config.toxiproxy)
    writable_folder(config.results, "--results")


def reachable_toxiproxy(url: str) -> None:
    """`--toxiproxy URL` answers its API, or a one-line error before the run starts."""
    from harness.links import ToxiproxyServer, wait_for_api

    try:
        wait_for_api(ToxiproxyServer(url), timeout_s=5.0)
    except (UsageError, ClusterError) as error:
        raise UsageError(f"--toxiproxy: {error}") from None


def execute(config) -> tuple[Path, int]:
    """One run from start to verdict: its directory and exit code."""
    from harness.run import Run

    raise_file_limit()
    print(f"seed: {config.seed}", file=sys.stderr)
    run = Run(config)
    try:
        run.execute()
    except BaseException:
        print(f"run directory: {run.dir}", file=sys.stderr)
        raise
    return report(run.dir)


def recorded_run(run_dir: Path, results: Path | None, quiet: bool):
    """A run directory's settings with the schedule it recorded (offsets from
    the start of load, faults aimed as they were: by role), ready to run
    again; a one-line UsageError for anything else."""
    from harness.run import RunConfig

    meta_path = run_dir / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
    except OSError as error:
        raise UsageError(
            f"{meta_path}: cannot read: {error.strerror or error} (is {run_dir} a run directory?)"
        ) from None
    except ValueError as error:
        raise UsageError(f"{meta_path}: not JSON: {error}") from None
    if isinstance(meta, dict) and "source" in meta:
        raise UsageError(f"{run_dir}: an imported history: there is no run to run again")
    try:
        config = RunConfig.from_json(meta["config"])
        start = meta.get("load_start_s", 0.0)
        schedule = [{**op, "at_s": offset(op["at_s"] - start, config.load_s)} for op in meta.get("schedule", [])]
    except (KeyError, TypeError, AttributeError) as error:
        raise UsageError(f"{meta_path}: not a run description ({type(error).__name__}: {error})") from None
    config = dataclasses.replace(
        config, run_id=None, progress=not quiet, schedule=schedule, results=results or run_dir.resolve().parent
    )
    validated(config)
    return config


# Rounding moves an offset by at most this much (seconds).
ROUNDING_S = 1e-3


def offset(at_s: float, limit_s: float) -> float:
    """An operation's offset from the start of load again, within its time
    (`limit_s`: the time limit but the lull; rounding may put one a microsecond either side of the
    span); one made before the nodes started stays before it."""
    at_s = round(at_s, 6)
    return at_s if at_s < -ROUNDING_S else min(limit_s, max(0.0, at_s))
