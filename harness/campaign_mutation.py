"""A campaign file's `[mutation]` table: after its runs, the campaign
measures the harness's own power on mutants of the target's code
(`splitbrain mutate`, harness/mutation.py) into `<folder>/mutation/`, so
that `splitbrain gate` can hold a release to a mutation score (the
policy's `[mutation] min_score`) beside the runs' verdicts.

    [mutation]
    mutants = 12                  # as splitbrain mutate's options
    strategies = ["guided"]
    time_limit_s = 30
    policy = "gate.toml"          # a run that breaks it catches its mutant too

A campaign run again keeps a report made with the same settings."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import targets
from harness import limits
from harness.mutation import Settings, mutate
from history.errors import UsageError
from nemesis import STRATEGIES
from results.gate import MUTATION_REPORT, PolicyError, load_policy

FOLDER = "mutation"


def _policy_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must name a policy file"
    try:
        load_policy(Path(value))
    except PolicyError as error:
        return str(error)
    return None


# A key of the table: how its value is checked (a problem, or None).
CHECKS: dict[str, Callable[[Any], str | None]] = {
    "target": lambda v: None if v in targets.names() else f"must be one of {', '.join(targets.names())}",
    "count": limits.MUTANTS.problem,
    "seed": limits.RUN_SETTINGS["seed"].problem,
    "schedules": limits.SCHEDULES.problem,
    "strategies": lambda v: (
        None
        if isinstance(v, list) and v and all(s in STRATEGIES for s in v)
        else f"must list strategies, of {', '.join(STRATEGIES)}"
    ),
    "runs": limits.REPEAT.problem,
    "time_limit_s": limits.MUTANT_RUN_S.problem,
    "real_for_all": lambda v: None if isinstance(v, bool) else "must be true or false",
    "policy": _policy_problem,
}

# The file says `mutants`, as the command's --mutants; Settings says `count`.
NAMES = {"mutants": "count", **{f.name: f.name for f in fields(Settings) if f.name != "count"}}


def settings_of(path: Path, table: Any) -> Settings | None:
    """The table's settings, each value checked; None where the file has no table."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: mutation must be a table of splitbrain mutate's settings")
    values: dict[str, Any] = {}
    for key, value in table.items():
        name = NAMES.get(key)
        if name is None:
            raise UsageError(f"{path}: mutation.{key}: not a setting; known: {', '.join(sorted(NAMES))}")
        problem = CHECKS[name](value)
        if problem:
            raise UsageError(f"{path}: mutation.{key} {value!r}: {problem}")
        values[name] = tuple(value) if name == "strategies" else value
    return Settings(**values)


def measured(folder: Path, settings: Settings, progress: Callable[[Iterable], Iterable]) -> dict[str, Any]:
    """The mutation report of the campaign folder: the one already there
    when it was made with these settings, else a new one."""
    report_path = folder / FOLDER / MUTATION_REPORT
    try:
        report: dict[str, Any] = json.loads(report_path.read_text())
        if report.get("settings") == json.loads(json.dumps(asdict(settings))):  # as mutate wrote them
            return report
    except (OSError, ValueError):
        pass
    return mutate(settings, folder / FOLDER, progress)
