"""`splitbrain gate`: the release decision over many runs' verdicts, by a
policy a team keeps in its repository, with JUnit XML so any CI system shows
which run failed which requirement.

A policy (TOML):

    required = ["election-safety", "single-leader-per-epoch", "linearizable"]
    may_be_absent = ["committed-data-loss"]   # e.g. a register run has none
    allow_unknown = []                        # checkers whose "unknown" passes
    min_faults = 1                            # a run in which no fault was made fails

    [availability]                            # stats of the availability checker
    max_disruptive_elections = 0
    max_leaderless_ms = 15000

    [availability.clients.quiet]              # client figures in one window
    min_ok_rate = 0.9                         # (quiet, or a fault: partition, ...)
    max_latency_p99_ms = 500

    [mutation]                                # the harness's own power (splitbrain mutate,
    min_score = 0.6                           # or a campaign's [mutation] table): the share
    strategies = ["guided"]                   # of mutants caught, per strategy (default: all)

`max_X` holds when the figure X is at most the value, `min_X` when at least;
X is one of `checkers.availability.FIGURES` (in a `clients.<window>` table,
of `CLIENT_FIGURES`), and any other name is refused with the policy.
A required checker missing from a verdict fails (unless `may_be_absent`);
a run without a readable verdict fails by name; nothing is skipped. With
`[mutation]`, each RESULTS folder's `mutation.json` (or `mutation/mutation.json`,
where a campaign writes it) must show every strategy's score at least
`min_score`, and a gate that finds none fails by name.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from checkers.availability import CLIENT_FIGURES, FIGURES
from checkers.registry import NAMES
from checkers.verdict import NO_FAULT
from history.errors import UsageError
from results.user_files import read_toml

POLICY_KEYS = {"required", "may_be_absent", "allow_unknown", "availability", "min_faults", "mutation"}
MUTATION_KEYS = {"min_score", "strategies"}
MUTATION_REPORT = "mutation.json"


class PolicyError(UsageError):
    """A policy that cannot be used; the message names the file and key."""


@dataclass
class Check:
    run: str
    name: str
    failure: str | None = None  # why it failed; None: passed


@dataclass
class Policy:
    required: list[str]
    may_be_absent: list[str] = field(default_factory=list)
    allow_unknown: list[str] = field(default_factory=list)
    availability: dict = field(default_factory=dict)
    min_faults: int = 0
    mutation: dict = field(default_factory=dict)  # min_score, and the strategies it holds for (None: all)


def load_policy(path: Path) -> Policy:
    raw = read_toml(path, PolicyError)
    unknown = set(raw) - POLICY_KEYS
    if unknown:
        raise PolicyError(f"{path}: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(POLICY_KEYS))}")
    if not isinstance(raw.get("required"), list) or not raw["required"]:
        raise PolicyError(f"{path}: 'required' must list the checkers every run must pass")
    for key in ("required", "may_be_absent", "allow_unknown"):
        names = raw.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PolicyError(f"{path}: {key!r} must be a list of checker names")
        misspelt = [n for n in names if n not in NAMES]
        if misspelt:
            raise PolicyError(f"{path}: {key}: unknown checker {misspelt[0]!r}; known: {', '.join(NAMES)}")
    if not isinstance(raw.get("availability", {}), dict):
        raise PolicyError(f"{path}: 'availability' must be a table of thresholds")
    min_faults = raw.get("min_faults", 0)
    if isinstance(min_faults, bool) or not isinstance(min_faults, int) or min_faults < 0:
        raise PolicyError(f"{path}: min_faults: must be a whole number of faults, 0 or more, not {min_faults!r}")
    policy = Policy(
        raw["required"],
        raw.get("may_be_absent", []),
        raw.get("allow_unknown", []),
        raw.get("availability", {}),
        min_faults,
        _mutation_policy(path, raw.get("mutation")),
    )
    for key, bound in _thresholds(policy.availability):
        *path_in, last = key.split(".")
        if not last.startswith(("max_", "min_")) or isinstance(bound, bool) or not isinstance(bound, (int, float)):
            raise PolicyError(f"{path}: availability.{key}: a threshold is max_FIGURE or min_FIGURE = number")
        per_window = len(path_in) == 2 and path_in[0] == "clients"
        if path_in and not per_window:
            raise PolicyError(
                f"{path}: availability.{key}: thresholds go in [availability] or [availability.clients.WINDOW]"
            )
        known = CLIENT_FIGURES if per_window else FIGURES
        if last[4:] not in known:
            raise PolicyError(f"{path}: availability.{key}: unknown figure {last[4:]!r}; known: {', '.join(known)}")
    return policy


def _mutation_policy(path: Path, table) -> dict:
    """The `[mutation]` table checked: `min_score` a share, `strategies` names."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise PolicyError(f"{path}: 'mutation' must be a table: min_score, and strategies if not all")
    unknown = set(table) - MUTATION_KEYS
    if unknown:
        raise PolicyError(
            f"{path}: mutation: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(MUTATION_KEYS))}"
        )
    score = table.get("min_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        raise PolicyError(f"{path}: mutation.min_score: a share of the mutants, from 0 to 1, not {score!r}")
    strategies = table.get("strategies")
    if strategies is not None and (
        not isinstance(strategies, list) or not strategies or not all(isinstance(s, str) for s in strategies)
    ):
        raise PolicyError(f"{path}: mutation.strategies: a list of strategy names, not {strategies!r}")
    return {"min_score": float(score), "strategies": strategies}


def mutation_reports(paths: list[Path]) -> list[Path]:
    """The mutation reports in the folders a gate is given: a folder's own
    `mutation.json`, or its `mutation/` folder's (a campaign's)."""
    found = []
    for path in map(Path, paths):
        found += [p for p in (path / MUTATION_REPORT, path / "mutation" / MUTATION_REPORT) if p.is_file()]
    return found


def judge_mutation(reports: list[Path], policy: Policy) -> list[Check]:
    """Each report's score for each strategy the policy names (all, where it
    names none) against `min_score`; no report at all fails by name."""
    if not policy.mutation:
        return []
    if not reports:
        return [Check("mutation", "mutation", f"no {MUTATION_REPORT} among the results (splitbrain mutate writes it)")]
    checks = []
    for path in reports:
        try:
            report = json.loads(path.read_text())
            readable = isinstance(report["caught"], dict) and isinstance(report["counted"], int)
        except (OSError, ValueError, KeyError, TypeError) as error:
            checks.append(Check(str(path), "mutation", f"{MUTATION_REPORT} unreadable: {error}"))
            continue
        if not readable:
            checks.append(Check(str(path), "mutation", f"{MUTATION_REPORT} unreadable: no caught and counted"))
            continue
        for strategy in policy.mutation["strategies"] or sorted(report["caught"]):
            checks.append(Check(str(path), f"mutation.{strategy}", _score_failure(report, strategy, policy)))
    return checks


def _score_failure(report: dict, strategy: str, policy: Policy) -> str | None:
    least = policy.mutation["min_score"]
    if strategy not in report["caught"]:
        return f"{strategy} was not measured (strategies measured: {', '.join(sorted(report['caught']))})"
    caught, counted = report["caught"][strategy], report["counted"]
    if not counted:
        return "no mutant counted (every one equivalent or stillborn)"
    if caught / counted >= least:
        return None
    survivors = report.get("survived", {}).get(strategy, [])
    return f"caught {caught} of {counted} ({caught / counted:.0%}), below {least:.0%}" + (
        f"; survived: {survivors[0]}" + (f" and {len(survivors) - 1} more" if len(survivors) > 1 else "")
        if survivors
        else ""
    )


def _thresholds(availability: dict, prefix: str = ""):
    """(dotted key, bound) for every threshold, nested tables flattened."""
    for key, value in availability.items():
        if isinstance(value, dict):
            yield from _thresholds(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def judge(run_dir: Path, policy: Policy) -> list[Check]:
    run = str(run_dir)
    broken = not_whole(run_dir)
    if broken:
        return [Check(run, "run", broken)]
    try:
        verdict = json.loads((run_dir / "verdict.json").read_text())
        checkers = verdict["checkers"]
        if not isinstance(checkers, dict) or not all(isinstance(r, dict) for r in checkers.values()):
            return [Check(run, "verdict", "verdict.json unreadable: checkers must map each name to its result")]
    except FileNotFoundError:
        return [Check(run, "verdict", "no verdict.json (splitbrain check writes it)")]
    except (ValueError, KeyError, TypeError) as error:
        return [Check(run, "verdict", f"verdict.json unreadable: {error}")]
    checks = []
    for name in policy.required:
        result = checkers.get(name)
        if result is None:
            failure = None if name in policy.may_be_absent else "did not run"
        elif result.get("valid") is True or (result.get("valid") == "unknown" and name in policy.allow_unknown):
            failure = None
        else:
            anomalies = result.get("anomalies") or []
            why = result.get("error") or (anomalies[0].get("summary", str(anomalies[0])) if anomalies else "")
            failure = f"valid: {result.get('valid')}" + (f": {why}" if why else "")
        checks.append(Check(run, name, failure))
    if policy.min_faults:
        checks.append(Check(run, "faults", _faults_failure(verdict.get("faults_made"), policy.min_faults)))
    stats = (checkers.get("availability") or {}).get("stats")
    for key, bound in _thresholds(policy.availability):
        checks.append(Check(run, f"availability.{key}", _threshold_failure(stats, key, bound)))
    return checks


def not_whole(run_dir: Path) -> str | None:
    """What makes `run_dir` less than a whole run (its settings and its
    history beside its verdict), or None: a gate once passed a run whose
    run.json was cut short, reading its verdict alone."""
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no run.json (the run's settings)"
    except (OSError, ValueError) as error:
        return f"run.json unreadable: {error}"
    if not isinstance(meta, dict):
        return "run.json unreadable: not a JSON object"
    parquet, jsonl = run_dir / "history.parquet", run_dir / "history.jsonl"
    if parquet.exists():
        try:
            pq.read_metadata(parquet)
        except (OSError, ValueError, pa.ArrowException) as error:
            return f"history.parquet unreadable: {error}"
    elif not jsonl.exists():
        return "no history (history.parquet or history.jsonl)"
    return None


def _faults_failure(made, least: int) -> str | None:
    if not isinstance(made, int):
        return "the verdict does not count the faults made (check the run again)"
    if made == 0:
        return NO_FAULT
    return None if made >= least else f"{made} faults made, fewer than {least}"


def _threshold_failure(stats: dict | None, key: str, bound: float) -> str | None:
    if stats is None:
        return "no availability figures in the verdict"
    *path, last = key.split(".")
    figures = stats
    for part in path:  # clients.<window>
        figures = figures.get(part) or {}
    figure = last[4:]
    value = figures.get(figure)
    if value is None:
        return f"no figure {'.'.join([*path, figure])} in this run"
    if last.startswith("max_") and value > bound:
        return f"{figure} = {value} > {bound}"
    if last.startswith("min_") and value < bound:
        return f"{figure} = {value} < {bound}"
    return None


def junit(checks: list[Check], path: Path) -> None:
    """One testcase per (run, requirement), a failure element where it failed."""
    failures = [c for c in checks if c.failure]
    suite = ElementTree.Element(
        "testsuite", name="splitbrain gate", tests=str(len(checks)), failures=str(len(failures))
    )
    for check in checks:
        case = ElementTree.SubElement(suite, "testcase", classname=check.run, name=check.name)
        if check.failure:
            ElementTree.SubElement(case, "failure", message=check.failure[:500]).text = check.failure
    ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
