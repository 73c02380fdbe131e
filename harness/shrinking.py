"""`splitbrain shrink RUN_DIR`: real trials for the shrinker
(`nemesis/shrink.py`). A candidate schedule is run up to N times with the
failing run's settings and seed; it fails when a trial fails a checker the
original run failed. The result is a campaign file anyone can run: the
settings, the seed and the shrunk schedule, repeated as many times as it
had trials (it failed in at least one).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from harness.campaign import OWN_OPTIONS, to_toml
from harness.run import RunConfig
from history.errors import UsageError
from history.faults import HEAL_ALL
from history.operations import NemesisOp
from nemesis.shrink import Shrunk, shrink
from results.wording import counted


class ShrinkError(UsageError):
    """A run that cannot be shrunk; the message names it."""


def failing_checkers(run_dir: Path) -> set[str]:
    try:
        verdict = json.loads((Path(run_dir) / "verdict.json").read_text())
    except (OSError, ValueError):
        return set()
    return {name for name, result in (verdict.get("checkers") or {}).items() if result.get("valid") is False}


def shrink_run(
    run_dir: Path, config: RunConfig, trials: int, to: Path | None, execute: Callable[[RunConfig], Path]
) -> tuple[Shrunk, Path]:
    """Shrink, printing a line per candidate; (the result, the campaign file)."""
    wanted = failing_checkers(run_dir)
    if not wanted:
        raise ShrinkError(f"{run_dir}: no checker failed in this run: nothing to shrink")
    schedule = [NemesisOp(op["at_s"], op["f"], op.get("args") or {}) for op in config.schedule or []]

    def fails(candidate: list[NemesisOp], limit: float) -> bool:
        trial_config = dataclasses.replace(
            config, schedule=[asdict(op) for op in candidate], time_limit_s=limit + config.lull_s
        )
        for trial in range(1, trials + 1):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                trial_dir = execute(trial_config)
            caught = failing_checkers(trial_dir) & wanted
            print(f"  trial {trial}: {', '.join(sorted(caught)) or 'passed'} ({trial_dir.name})", flush=True)
            if caught:
                return True
        return False

    print(f"shrinking {run_dir.name}: {len(schedule)} operations, failing {', '.join(sorted(wanted))}", flush=True)
    # The schedule's time is the run's load; each trial ends in the run's lull as the run did.
    shrunk = shrink(schedule, config.load_s, config.interval_s, progress(fails))
    path = to or Path(config.results) / "shrunk.toml"
    settings = {
        k: v for k, v in asdict(config).items() if k not in OWN_OPTIONS | {"schedule", "options"} and v is not None
    }
    settings.update(config.options)  # a campaign file names the target's options beside the others
    settings["time_limit_s"] = shrunk.time_limit_s + config.lull_s
    text = to_toml(
        "\n".join(
            [
                f"splitbrain shrink of {run_dir.name}: {counted(shrunk.faults, 'fault')} left; the candidates:",
                *shrunk.tried,
            ]
        ),
        {
            **settings,
            "name": f"shrunk-{run_dir.name}",
            "results": "runs/campaigns",
            "workloads": [config.workload],
            "nemeses": [",".join(config.nemesis) or "none"],
            "seeds": [config.seed],
            "repeats": trials,
        },  # it failed in at least one of this many trials
        {"shrunk": {"schedule": [asdict(op) for op in shrunk.schedule]}},
    )
    try:
        Path(path).write_text(text)
    except OSError as error:
        raise ShrinkError(f"{path}: cannot write: {error.strerror or error}") from None
    return shrunk, Path(path)


def progress(fails):
    """`fails`, announcing each candidate as the shrinker tries it."""
    count = iter(range(1, 1_000_000))

    def announced(candidate: list[NemesisOp], limit: float) -> bool:
        faults = sum(1 for op in candidate if op.f != HEAL_ALL and "of" not in op.args)
        print(f"candidate {next(count)}: {counted(faults, 'operation')}, {limit:g} s", flush=True)
        return fails(candidate, limit)

    return announced
