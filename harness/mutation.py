"""`splitbrain mutate`: the harness measures its own power. Mutants of the
target's code (harness/mutants.py) each run in a copy of the project, the
target's simulation first, then real runs under each strategy asked for,
and the share of them the checkers catch is the mutation score.

How a mutant is judged, by rules stated here and nowhere decided by hand:
- `equivalent`: in a file the simulation runs, the simulation of every
  schedule, with voter changes and without, did exactly what the
  original's did (the same events: the digest `simulate` reports). Set
  apart from the score.
- `stillborn`: no real run of it completed (a node exited as the cluster
  came up, or the run errored), and the simulation did not catch it. Set
  apart too: it is broken in a way no checker is for. A cluster whose
  nodes run and agree on no leader is not stillborn: the run judges it
  (`progress`'s `no-leader`), so such a mutant is caught.
- caught by the simulation: `simulate` found an invariant broken (safety,
  liveness at the end of a schedule, or a node halted: its core raised, as
  the real node halts on it), the simulation itself raised (`crashed`: a
  mutant that breaks it outside a node's core), or it `hung`: one of its simulations ran
  HUNG_TIMES as long as the original's two (`original_simulation_s` in the
  report), and at least HUNG_MIN_S, as a core that never stops producing
  work does (a node that spins).
- caught by a strategy: one of its real runs ended with a checker false,
  or, with a release gate's policy (`policy`: results/gate.py), broke
  that policy. The original runs first, under each strategy and seed: a
  policy it breaks cannot tell a mutant from it, and is refused (as a
  mutation tool refuses a test suite that fails before any mutation).
A mutant's real runs use the main job's settings (local, 3 nodes, append,
`time_limit_s`) and the seeds 1 to `runs`, the same for every strategy.

The score of a strategy: mutants it caught, over those neither equivalent
nor stillborn. Each copy carries a probe where its mutant changed the code
(harness/reach.py), so the report also says which mutants' changes never
ran in their simulation or any real run (`unreached`: nothing they did
could tell them from the original there), and `score_reached` leaves those
out too (PIT's and Stryker's "no coverage", and Stryker's score "based on
covered code").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import targets
from history.errors import SettingError, UsageError
from results.gate import Policy, judge, load_policy
from results.recording import find_run_dirs
from targets.interface import Mutable, Simulated

from .mutants import Mutant, mutants, sample
from .reach import ENV as REACHED_ENV

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("history", "checkers", "harness", "nemesis", "results", "targets", "workloads")
# A mutant's simulation that runs this many times as long as the original's, and at least HUNG_MIN_S, hung.
HUNG_TIMES = 20
HUNG_MIN_S = 60.0
# The original's own simulation, before its time is known.
SIMULATE_TIMEOUT_S = 600.0
# The file a copy's probe makes when its mutant's change runs.
REACHED = "reached"
EXIT_INVALID = 1


@dataclass
class Outcome:
    """What became of one mutant."""

    mutant: str
    change: str
    simulated: bool  # its file is one the simulation runs
    simulation: str = ""  # caught, equivalent, missed, crashed: ..., hung
    runs: dict[str, list[int]] = field(default_factory=dict)  # strategy -> exit codes of its runs
    errors: dict[str, list[str]] = field(default_factory=dict)  # strategy -> why each run that errored did
    reached: bool | None = None  # its change ran (in the simulation or a real run); None: not probed
    gated: dict[str, list[str]] = field(default_factory=dict)  # strategy -> how its runs broke the policy

    @property
    def equivalent(self) -> bool:
        return self.simulation == "equivalent"

    @property
    def caught_by_simulation(self) -> bool:
        return self.simulation in ("caught", "hung") or self.simulation.startswith("crashed")

    @property
    def stillborn(self) -> bool:
        codes = [code for found in self.runs.values() for code in found]
        return bool(codes) and not self.caught_by_simulation and all(code not in (0, EXIT_INVALID) for code in codes)

    def caught_by(self, strategy: str) -> bool:
        return EXIT_INVALID in self.runs.get(strategy, []) or bool(self.gated.get(strategy))


def copy_project(into: Path) -> Path:
    """The project's packages copied, for a mutant to change one file of."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__pycache__", "wgl_core"))
    return into


def run_in_copy(copy: Path, args: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """splitbrain's command, run from `copy`: the nodes it starts import the
    copy's code too, and its probe marks `copy`/REACHED when the change runs."""
    env = {**os.environ, "PYTHONPATH": str(copy), REACHED_ENV: str(copy / REACHED)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def simulated(
    copy: Path, target: str, schedules: int, seed: int, timeout_s: float = SIMULATE_TIMEOUT_S
) -> tuple[str, str]:
    """(`caught`, `missed`, `crashed: why` or `hung`; the digest of what the
    simulation did), over the schedules without voter changes and with them."""
    digests = []
    for extra in ([], ["--membership"]):
        args = ["simulate", "--target", target, "--quiet", "--nodes", "5", "--schedules", str(schedules), *extra]
        try:
            done = run_in_copy(copy, [*args, "--seed", str(seed), "--keep-going"], timeout_s)
        except subprocess.TimeoutExpired:
            return "hung", ""
        try:
            verdict = json.loads(done.stdout)
        except ValueError:
            return f"crashed: {last_line(done.stderr)}", ""
        if verdict["valid"] is False:
            return "caught", ""
        digests.append(verdict["checkers"]["simulation-invariants"]["stats"].get("digest", ""))
    return "missed", "/".join(digests)


def hung_after_s(original_s: float) -> float:
    """How long a mutant's simulation may run before it is judged hung, the original's having taken `original_s`."""
    return max(HUNG_MIN_S, HUNG_TIMES * original_s)


def simulation_verdict(verdict: str, digest: str, baseline: str) -> str:
    """`simulated`'s verdict on a mutant, `equivalent` where it missed and did exactly what the original's did."""
    return "equivalent" if verdict == "missed" and digest == baseline else verdict


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:200] if lines else "no output"


@dataclass
class RealRuns:
    """A strategy's real runs of one copy: exit codes, why each that errored
    did, and how each run that completed broke the policy (if one is given)."""

    codes: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    gated: list[str] = field(default_factory=list)


def real_runs(copy: Path, results: Path, strategy: str, settings: Settings, policy: Policy | None = None) -> RealRuns:
    """`settings.runs` real runs of the copy, seeds 1 to `runs`, each judged
    against `policy` too where it completed."""
    found = RealRuns()
    for seed in range(1, settings.runs + 1):
        folder = results / strategy / f"s{seed}"
        args = ["run", "--target", settings.target, "--quiet", "--nemesis-strategy", strategy, "--seed", str(seed)]
        args += ["--time-limit", str(settings.time_limit_s), "--results", str(folder)]
        args += ["--nemesis", ",".join(settings.nemesis)] if settings.nemesis else []
        try:
            done = run_in_copy(copy, args, 30 * settings.time_limit_s + 300)
        except subprocess.TimeoutExpired:
            found.codes.append(-1)
            found.errors.append("timed out")
            continue
        found.codes.append(done.returncode)
        if done.returncode not in (0, EXIT_INVALID):
            found.errors.append(last_line(done.stderr))
        elif policy is not None:
            found.gated += [
                f"seed {seed}: {check.name}: {check.failure}"
                for run_dir in find_run_dirs([folder])
                for check in judge(run_dir, policy)
                if check.failure
            ]
    return found


@dataclass(frozen=True)
class Settings:
    target: str = targets.DEFAULT
    count: int = 12
    seed: int = 1
    schedules: int = 30
    strategies: tuple[str, ...] = ("random", "guided", "novelty")
    runs: int = 1
    time_limit_s: int = 30
    real_for_all: bool = False  # real runs also for mutants the simulation caught (to compare strategies on all)
    policy: str | None = None  # a release gate's policy file: a run that breaks it caught its mutant
    nemesis: tuple[str, ...] = ()  # the faults each real run draws from (none named: the run's default)


def chosen(settings: Settings) -> tuple[list[Mutant], dict[str, bool]]:
    """The mutants drawn by the seed, and which files the simulation runs."""
    target = targets.get(settings.target)
    if not isinstance(target, Mutable):
        raise SettingError("target", f"{settings.target} offers no source to mutate")
    sources = target.mutation_sources()
    found = [m for path in sources for m in mutants(path, (ROOT / path).read_text())]
    return sample(found, settings.count, settings.seed), sources


def mutate(
    settings: Settings, results: Path, progress: Callable[[Iterable[Mutant]], Iterable[Mutant]]
) -> dict[str, Any]:
    """Every chosen mutant judged; the report (also written to RESULTS/mutation.json)."""
    picked, sources = chosen(settings)
    simulates = isinstance(targets.get(settings.target), Simulated)
    results.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="splitbrain-mutants-") as work:
        original = copy_project(Path(work) / "original")
        started = time.monotonic()
        baseline = simulated(original, settings.target, settings.schedules, settings.seed)[1] if simulates else ""
        original_s = round(time.monotonic() - started, 1)
        hung_s = hung_after_s(original_s)
        policy = None if settings.policy is None else load_policy(Path(settings.policy))
        if policy is not None:
            _original_keeps(original, results / "original", settings, policy)
        outcomes = []
        for number, mutant in enumerate(progress(picked)):
            copy = copy_project(Path(work) / f"m{number}")
            (copy / mutant.path).write_text(mutant.probed or mutant.source)
            outcome = Outcome(mutant.name, mutant.describe(), sources[mutant.path])
            if simulates and outcome.simulated:
                verdict, digest = simulated(copy, settings.target, settings.schedules, settings.seed, hung_s)
                outcome.simulation = simulation_verdict(verdict, digest, baseline)
            if not outcome.equivalent and (settings.real_for_all or not outcome.caught_by_simulation):
                for strategy in settings.strategies:
                    ran = real_runs(copy, results / f"m{number}", strategy, settings, policy)
                    outcome.runs[strategy], outcome.errors[strategy] = ran.codes, ran.errors
                    if ran.gated:
                        outcome.gated[strategy] = ran.gated
            outcome.reached = (copy / REACHED).exists() if mutant.probed else None
            outcomes.append(outcome)
            shutil.rmtree(copy)
    report = {**summary(settings, outcomes), "original_simulation_s": original_s}
    (results / "mutation.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _original_keeps(original: Path, results: Path, settings: Settings, policy: Policy) -> None:
    """The original's real runs, under each strategy and seed, all valid and
    within the policy; else a UsageError naming the first that is not."""
    for strategy in settings.strategies:
        problem = original_problem(real_runs(original, results, strategy, settings, policy))
        if problem:
            raise UsageError(
                f"--policy {settings.policy}: the original breaks it ({strategy}, {problem}), "
                "so it cannot tell a mutant from the original"
            )


def original_problem(ran: RealRuns) -> str | None:
    """The first way the original's runs fail: an error, a checker false, the policy broken; None: none."""
    wrong = ran.errors + [
        f"seed {seed}: a checker false" for seed, code in enumerate(ran.codes, 1) if code == EXIT_INVALID
    ]
    wrong += ran.gated
    return wrong[0] if wrong else None


def summary(settings: Settings, outcomes: list[Outcome]) -> dict[str, Any]:
    """The score per strategy (and the simulation's), over the mutants that count."""
    counted = [o for o in outcomes if not o.equivalent and not o.stillborn]

    def caught(outcome: Outcome, strategy: str, simulation_counts: bool) -> bool:
        """Caught by the strategy's runs, or (where the simulation counts) by the simulation."""
        return outcome.caught_by(strategy) or (simulation_counts and outcome.caught_by_simulation)

    def tally(simulation_counts: bool) -> dict[str, int]:
        return {s: sum(caught(o, s, simulation_counts) for o in counted) for s in settings.strategies}

    def never_ran(outcome: Outcome) -> bool:
        """Its change never ran, and nothing caught it."""
        return outcome.reached is False and not any(caught(outcome, s, True) for s in settings.strategies)

    # The score: the simulation counts unless every mutant ran for real; `with_simulation` as the default scores.
    scores, with_simulation = tally(not settings.real_for_all), tally(True)
    unreached = sum(never_ran(o) for o in counted)
    return {
        "settings": asdict(settings),
        "mutants": len(outcomes),
        "equivalent": sum(o.equivalent for o in outcomes),
        "stillborn": sum(o.stillborn for o in outcomes),
        "counted": len(counted),
        "caught_by_simulation": sum(o.caught_by_simulation for o in counted),
        "caught": scores,
        "score": share(scores, len(counted)),
        "score_with_simulation": share(with_simulation, len(counted)),
        "unreached": unreached,
        "score_reached": share(scores, len(counted) - unreached),
        # Per strategy, the changes of the counted mutants its score misses (what a gate names).
        "survived": {
            s: [o.change for o in counted if not caught(o, s, not settings.real_for_all)] for s in settings.strategies
        },
        "by_file_and_operator": by_file_and_operator(counted, settings.strategies, caught),
        "outcomes": [
            {
                **asdict(o),
                "equivalent": o.equivalent,
                "stillborn": o.stillborn,
                "caught_by_simulation": o.caught_by_simulation,
                "unreached": never_ran(o),
                "caught_by": [name for name in settings.strategies if o.caught_by(name)],
            }
            for o in outcomes
        ],
    }


def by_file_and_operator(
    counted: list[Outcome], strategies: tuple[str, ...], caught: Callable[[Outcome, str, bool], bool]
) -> dict[str, dict[str, dict[str, int]]]:
    """Per mutated file and operator: the mutants that count, those the
    simulation caught, and those each strategy's real runs caught alone."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for outcome in counted:
        parts = outcome.mutant.split(":")  # path:line:operator
        path, operator = parts[0], parts[-1]
        cell = table.setdefault(path, {}).setdefault(operator, dict.fromkeys(("counted", "simulation", *strategies), 0))
        cell["counted"] += 1
        cell["simulation"] += outcome.caught_by_simulation
        for strategy in strategies:
            cell[strategy] += caught(outcome, strategy, False)
    return table


def share(caught: dict[str, int], counted: int) -> dict[str, float | None]:
    """Each strategy's catch over the mutants that count (None where none does)."""
    return {strategy: round(n / counted, 3) if counted else None for strategy, n in caught.items()}
