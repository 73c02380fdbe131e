"""`splitbrain campaign CONFIG.toml`: a matrix of runs (target option sets x
workloads x nemesis sets x seeds x repeats), each an ordinary run directory
under one campaign folder, with a progress bar. Run ids are fixed by the
matrix (a repeat runs the same seed again: real timing still differs, which
is what shows a flaky verdict), so an interrupted campaign resumes where it stopped: a run with a
verdict is not run again (a run is `<id>.partial` until it has one); one
cut short is moved to `interrupted/` (its
history kept) and run again. The campaign folder gets `summary.html`.

    [campaign]
    name = "nightly"              # the folder: <results>/<name>
    results = "runs/campaigns"
    backend = "local"             # any `splitbrain run` option, as RunConfig names it
    nodes = 3
    time_limit_s = 15
    workloads = ["append", "register"]
    nemeses = ["partition", "partition,kill,pause"]
    seeds = [0, 1]
    repeats = 1

    [targets.correct]             # one option set of the target per table
    [targets.stale-read]
    bugs = ["stale-read"]
    check_quorum = false
    workloads = ["register"]      # a target may bring its own workloads,
    seeds = [0, 1, 2]             # nemeses, seeds and repeats
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path

from tqdm import tqdm

import targets
from harness.limits import DEFAULT_MAX_RUNS, MAX_RUNS, RUNS_PER_HOST, SATURATED, Range, named_twice
from harness.run import MEMORY_FILE, Run, RunConfig, unless_none
from history.errors import SettingError, UsageError
from nemesis import AIMING, LEARNING
from results.user_files import read_toml
from results.wording import counted
from targets import DEFAULT as DEFAULT_TARGET

MATRIX_KEYS = {
    "name",
    "results",
    "workloads",
    "nemeses",
    "seeds",
    "repeats",
    "until_saturated",
    "max_runs",
    "spark",
    "runs_per_host",
    "learn_from",
    "versions",
}
TARGET_MATRIX_KEYS = {"workloads", "nemeses", "seeds", "repeats", "versions"}
# Options a campaign sets itself, per run.
LOCK_FILE = ".campaign.lock"
REPEATS = Range(int, least=1, most=10_000)

OWN_OPTIONS = {
    "workload",
    "nemesis",
    "seed",
    "results",
    "run_id",
    "progress",
    "option_set",
    "coverage_file",
    "memory_file",
}
COVERAGE_FILE = "coverage.json"
FOLDER_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]{0,99}")


class CampaignError(UsageError):
    """A campaign file that cannot be used; the message names file and key."""


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    target: str
    config: RunConfig


@dataclass(frozen=True)
class StoppingRule:
    """Keep adding runs while Good–Turing's chance that the next one hits a
    coverage cell never hit is at least `below` (checkers/coverage.py's
    `unseen_chance`), up to `max_runs` in all (DEFAULT_MAX_RUNS where not
    given); `below` None: the matrix only, its first `max_runs` where given."""

    below: float | None = None
    max_runs: int | None = None

    def cap(self) -> int:
        """At most this many runs in all."""
        return DEFAULT_MAX_RUNS if self.max_runs is None else self.max_runs


def stopping_rule(path: Path, below: float | None = None, max_runs: int | None = None) -> StoppingRule:
    """The file's `until_saturated` and `max_runs`, the command line's first."""
    campaign, _, _ = _read(path)
    below = campaign.get("until_saturated") if below is None else below
    max_runs = campaign.get("max_runs") if max_runs is None else max_runs
    for key, value, allowed in (("until_saturated", below, SATURATED), ("max_runs", max_runs, MAX_RUNS)):
        problem = None if value is None else allowed.problem(value)
        if problem:
            raise CampaignError(f"{path}: campaign.{key} {problem}")
    return StoppingRule(below, max_runs)


def spark_runner(path: Path, master: str | None = None, per_host: int | None = None, say=print):
    """Where the runs run: on the Spark master the command line or the
    file's `spark` names (harness/spark_campaign.py), at most `runs_per_host`
    on one host; None: here, one after another."""
    campaign, _, _ = _read(path)
    named = f"{path}: campaign.spark" if master is None else "--spark"
    master = campaign.get("spark") if master is None else master
    per_host = campaign.get("runs_per_host") if per_host is None else per_host
    if master is None:
        if per_host is not None:
            raise CampaignError(f"{path}: runs_per_host: only for runs on Spark (spark = MASTER, or --spark)")
        return None
    from harness.spark_campaign import SparkRunner
    from results.spark_session import master_problem

    problem = master_problem(master) if isinstance(master, str) else "must be a Spark master URL"
    if problem:
        raise CampaignError(f"{named} {master!r}: {problem}")
    problem = None if per_host is None else RUNS_PER_HOST.problem(per_host)
    if problem:
        raise CampaignError(f"{path}: campaign.runs_per_host {problem}")
    for plan in load(path)[1]:
        if plan.config.backend not in ("local", "docker"):
            raise CampaignError(
                f"{path}: targets.{plan.target}: backend {plan.config.backend}: runs on Spark are local or docker"
            )
    return SparkRunner(master, per_host, say)


def load(path: Path, results: Path | None = None) -> tuple[Path, list[PlannedRun]]:
    """The campaign folder (under `results`, when given, instead of the
    file's `results` key) and every run of the matrix, in order."""
    campaign, targets, common = _read(path)
    name = campaign.get("name") or Path(path).stem
    in_file = campaign.get("results", "runs/campaigns")
    problem = folder_name_problem(name)
    if problem:
        raise CampaignError(f"{path}: campaign.name {name!r}: {problem}")
    if not isinstance(in_file, str) or not in_file.strip():
        raise CampaignError(f"{path}: campaign.results must be a path, not {in_file!r}")
    for target in targets:
        problem = folder_name_problem(target)
        if problem:
            raise CampaignError(f"{path}: [targets.{json.dumps(target)}]: an option set's name {problem}")
    folder = Path(in_file if results is None else results) / name
    planned = []
    for target, table in targets.items():
        planned += _target_runs(path, folder, campaign, common, target, table)
    return folder, planned


def _read(path: Path) -> tuple[dict, dict, dict]:
    """The file's [campaign] table, its option sets ([targets.NAME]) and the
    settings common to every run, each key checked to be one a run takes."""
    raw = _toml(path)
    for table in set(raw) - {"campaign", "targets", "mutation"}:
        raise CampaignError(f"{path}: unknown table [{table}]; known: [campaign], [targets.NAME], [mutation]")
    if not raw:
        raise CampaignError(f"{path}: empty: a campaign file has a [campaign] table, [targets.NAME] tables, or both")
    for key in ("campaign", "targets"):
        if not isinstance(raw.get(key, {}), dict):
            raise CampaignError(f"{path}: {key} must be a table ([{key}]), not {raw[key]!r}")
    campaign = dict(raw.get("campaign", {}))
    sources = campaign.get("learn_from", [])
    if not isinstance(sources, list) or not all(isinstance(source, str) for source in sources):
        raise CampaignError(f"{path}: campaign.learn_from must list archives, campaign folders or run directories")
    targets = raw.get("targets") or {"default": {}}
    for name, table in targets.items():
        if not isinstance(table, dict):
            raise CampaignError(f"{path}: targets.{name}: must be a table")
    # A run's own settings, and any target's options (each run refuses those its target does not declare).
    options = {f.name for f in fields(RunConfig)} - OWN_OPTIONS - {"options"} | target_option_names()
    common = {k: v for k, v in campaign.items() if k not in MATRIX_KEYS}
    for where, table, allowed in [
        ("campaign", common, options),
        *((f"targets.{name}", t, options | TARGET_MATRIX_KEYS) for name, t in targets.items()),
    ]:
        for key in table:
            if key not in allowed:
                raise CampaignError(f"{path}: {where}.{key}: not a run option; known: {', '.join(sorted(allowed))}")
    return campaign, targets, common


def _toml(path: Path) -> dict:
    return read_toml(path, CampaignError)


def mutation_settings(path: Path):
    """The file's `[mutation]` table, checked (harness/campaign_mutation.py); None without one."""
    from harness.campaign_mutation import settings_of

    return settings_of(path, _toml(path).get("mutation"))


def learn_from(path: Path, folder: Path) -> str | None:
    """`learn_from`: a novelty campaign's memory, before its first run,
    starts as what earlier campaigns learned: every `novelty.json` in the
    archives, campaign folders and run directories it lists (nemesis/novelty.py's
    `merged`). Nothing where the campaign has a memory already (a resumed
    one's) or the file does not say; what was read, as a line to print."""
    from nemesis.novelty import Memory, merged

    sources = _read(path)[0].get("learn_from")
    if sources is None or (folder / MEMORY_FILE).exists():
        return None
    files = []
    for source in map(Path, sources):
        found = sorted(
            {*source.glob(MEMORY_FILE), *source.glob(f"*/{MEMORY_FILE}"), *source.glob(f"runs/*/{MEMORY_FILE}")}
        )
        if not found:
            raise CampaignError(
                f"{path}: campaign.learn_from: {source}: no {MEMORY_FILE} there (novelty runs write it)"
            )
        files += found
    memories = []
    for file in files:
        try:
            memories.append(Memory.read(file))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CampaignError(f"{path}: campaign.learn_from: {file}: unreadable: {error}") from None
    memory = merged(memories)
    memory.write(folder / MEMORY_FILE)
    return (
        f"campaign: learning from {len(files)} {MEMORY_FILE} files of {', '.join(sources)}: "
        f"{len(memory.visits)} states, {len(memory.moves)} moves"
    )


def _target_runs(path: Path, folder: Path, campaign: dict, common: dict, target: str, table: dict) -> list[PlannedRun]:
    """An option set's runs: its matrix (the campaign's, or its own: the faults that show its bug) unrolled."""
    matrix = {**campaign, **{k: v for k, v in table.items() if k in TARGET_MATRIX_KEYS}}
    overrides = {k: v for k, v in table.items() if k not in TARGET_MATRIX_KEYS}
    _check_matrix(path, target, matrix)
    planned = []
    settings = run_settings({**common, **overrides})
    named = settings.get("target", DEFAULT_TARGET)
    # A release of the target's server each (`versions`: --target NAME@VERSION); none: the target as named.
    for version in matrix.get("versions", [None]):
        chosen = {} if version is None else {"target": f"{targets.base(named)}@{version}"}
        for workload in matrix.get("workloads", ["append"]):
            for nemesis in matrix.get("nemeses", [None]):  # None: the strategy's default (RunConfig.default_nemesis)
                kinds = None if nemesis is None else [k for k in nemesis.split(",") if k and k != "none"]
                for seed in matrix.get("seeds", [0]):
                    for repeat in range(matrix.get("repeats", 1)):
                        one = {**settings, **chosen, "workload": workload, "seed": seed}
                        planned.append(_planned(path, folder, target, one, kinds, repeat, version))
    return planned


def _planned(
    path: Path, folder: Path, target: str, settings: dict, kinds: list[str] | None, repeat: int, version: str | None
) -> PlannedRun:
    """One run of the matrix, named for what it runs, its settings checked."""
    try:
        config = RunConfig(**settings, **unless_none(nemesis=kinds), results=folder, progress=False, option_set=target)
        faults = "default" if kinds is None and config.nemesis_strategy != "random" else "+".join(config.nemesis)
        release = "" if version is None else f"v{version}-"
        run_id = f"{target}-{release}{config.workload}-{faults or 'none'}-s{config.seed}-r{repeat}"
        config = dataclasses.replace(config, run_id=run_id)
        config.validate()
    except (TypeError, ValueError, SettingError) as error:
        raise CampaignError(f"{path}: targets.{target}: {error}") from None
    return PlannedRun(run_id, target, config)


def target_option_names() -> set[str]:
    return {option.name for name in targets.names() for option in targets.get(name).options}


def run_settings(table: dict) -> dict:
    """A table's keys as RunConfig takes them: its own settings, and the target's options under `options`."""
    own = {f.name for f in fields(RunConfig)}
    return {**{k: v for k, v in table.items() if k in own}, "options": {k: v for k, v in table.items() if k not in own}}


def folder_name_problem(name) -> str | None:
    """Why `name` cannot name a folder of the campaign's (its own, or a run's
    beginning), or None: it stays inside the campaign folder and reads on a
    console as it is."""
    if not isinstance(name, str) or not FOLDER_NAME.fullmatch(name):
        return "must be a folder name of letters, digits, '.', '_', '+' and '-', not starting with '.' or '-'"
    return None


def _check_matrix(path: Path, target: str, matrix: dict) -> None:
    """The matrix keys' types and ranges (each run's settings are checked by RunConfig.validate)."""
    for key in ("workloads", "nemeses", "versions"):
        if key in matrix and (not isinstance(matrix[key], list) or not all(isinstance(v, str) for v in matrix[key])):
            raise CampaignError(f"{path}: targets.{target}: {key} must be a list of names, not {matrix[key]!r}")
    for nemesis in matrix.get("nemeses", []):
        if not [kind for kind in nemesis.split(",") if kind.strip()]:
            raise CampaignError(f"{path}: targets.{target}: nemeses: {nemesis!r} names no fault; name faults, or none")
    seeds = matrix.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds:
        raise CampaignError(f"{path}: targets.{target}: seeds must be a list of integers, not {seeds!r}")
    for key in ("workloads", "nemeses", "seeds", "versions"):  # twice, one run would run twice under one name
        twice = named_twice(matrix.get(key, []))
        if twice:
            raise CampaignError(f"{path}: targets.{target}: {key}: {twice[0]!r} given twice")
    problem = REPEATS.problem(matrix.get("repeats", 1))
    if problem:
        raise CampaignError(f"{path}: targets.{target}: repeats {problem}")


def to_toml(comment: str, campaign: dict, targets: dict[str, dict]) -> str:
    """A campaign file: a comment, [campaign], then a [targets.NAME] each."""

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(float(v)) if isinstance(v, float) else str(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items() if x is not None) + "}"
        return json.dumps(str(v))  # TOML's basic strings take JSON's escapes

    lines = [f"# {line}" for line in comment.splitlines()] + ["[campaign]"]
    lines += [f"{key} = {value(v)}" for key, v in campaign.items()]
    for name, table in targets.items():
        lines += ["", f"[targets.{json.dumps(name)}]"] + [f"{key} = {value(v)}" for key, v in table.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Steer:
    """What a runner asks the campaign's loop as it goes: `more()`, another
    run while the stopping rule wants one (None once it does not); `tried()`,
    the coverage file of the runs landed so far, for the next guided run."""

    more: Callable[[], PlannedRun | None]
    tried: Callable[[], Path]


def aims(config: RunConfig) -> bool:
    """Whether a run's strategy aims at what earlier runs did not try (every strategy but random)."""
    return config.nemesis_strategy in AIMING


def learns(config: RunConfig) -> bool:
    """Whether a run's strategy learns from earlier runs (the novelty search's)."""
    return config.nemesis_strategy in LEARNING


def cells_of(run_dir: Path) -> list[list[dict]]:
    """A finished run's coverage cells (its verdict's), as a list of one; an
    empty list where it has no verdict to read (it counts as no run)."""
    with contextlib.suppress(OSError, ValueError):
        verdict = json.loads((run_dir / "verdict.json").read_text())
        return [(verdict.get("coverage") or {}).get("cells", [])]
    return []


def another(planned: list[PlannedRun], matrix: int) -> PlannedRun:
    """One more run for the stopping rule: the matrix's runs in turn, each
    again with a seed no run of the campaign has had."""
    base = planned[(len(planned) - matrix) % matrix]
    seed = max(plan.config.seed for plan in planned) + 1
    run_id = re.sub(r"-s\d+-r\d+$", f"-s{seed}-r0", base.run_id)
    return PlannedRun(run_id, base.target, dataclasses.replace(base.config, seed=seed, run_id=run_id))


def finished(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "verdict.json").read_text())["valid"] in (True, False, "unknown")
    except (OSError, ValueError, KeyError, TypeError):
        return False


def execute(
    config_path: Path,
    progress: bool = True,
    results: Path | None = None,
    finished_run=None,
    rule: StoppingRule | None = None,
    runner=None,
) -> tuple[Path, list[Path]]:
    """Run what is not finished yet, then, under a stopping rule, more runs
    until coverage saturates; returns the folder and every run directory.
    `finished_run(run_dir, chance)` is called as each run has its verdict
    (runs finished before, too, in their turn), with Good–Turing's chance
    that the next run hits a new coverage cell. `runner`: where the runs
    run (harness/spark_campaign.py's SparkRunner); None: here, one by one."""
    folder, planned = load(config_path, results)
    rule = rule or stopping_rule(config_path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CampaignError(f"{folder}: cannot make the campaign folder: {error.strerror or error}") from None
    runs = serially if runner is None else runner.runs
    with exclusive(folder):
        return _execute(
            config_path, folder, planned, progress, finished_run or (lambda run_dir, chance: None), rule, runs
        )


@contextlib.contextmanager
def exclusive(folder: Path):
    """One campaign per folder at a time: a second one would move the first's
    live run aside and share its data directories. The lock goes with the
    process, however it ends."""
    with open(folder / LOCK_FILE, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise CampaignError(f"{folder}: a campaign is already running in this folder ({holder})") from None
        lock.truncate(0)
        lock.write(f"pid {os.getpid()}\n")
        lock.flush()
        yield


def _execute(
    config_path: Path, folder: Path, planned: list[PlannedRun], progress: bool, finished_run, rule: StoppingRule, runs
) -> tuple[Path, list[Path]]:
    from checkers.coverage import add_up, unseen_chance
    from results.campaign_page import write_summary

    if rule.max_runs is not None and len(planned) > rule.max_runs:
        tqdm.write(f"campaign: the first {counted(rule.max_runs, 'run')} of the matrix's {len(planned)} (max_runs)")
        del planned[rule.max_runs :]
    matrix = len(planned)
    learned = learn_from(config_path, folder)
    if learned:
        tqdm.write(learned)
    _describe(folder, config_path, planned)
    hit: list[list[dict]] = []  # each finished run's cells, added as it finishes (not read again each time)
    with tqdm(total=len(planned), desc="campaign", unit="run", disable=not progress) as bar:

        def more() -> PlannedRun | None:
            """Another run, while the stopping rule wants one; None once it does not."""
            chance = unseen_chance(hit)
            wanted = rule.below is not None and (chance is None or chance >= rule.below)
            if not wanted or len(planned) >= rule.cap():
                return None
            planned.append(another(planned, matrix))
            _describe(folder, config_path, planned)
            bar.total = len(planned)
            return planned[-1]

        def tried() -> Path:
            """The landed runs' cells added up, from `hit` (each verdict read once, as it lands)."""
            path = folder / COVERAGE_FILE
            path.write_text(json.dumps(add_up(hit), indent=1) + "\n")
            return path

        for plan in runs(folder, planned, Steer(more, tried)):
            hit += cells_of(folder / plan.run_id)
            finished_run(folder / plan.run_id, unseen_chance(hit))
            bar.update()
    write_summary(folder, [(plan.target, folder / plan.run_id) for plan in planned])
    return folder, [folder / plan.run_id for plan in planned]


def serially(folder: Path, planned: list[PlannedRun], steer: Steer) -> Iterator[PlannedRun]:
    """The runs here, one after another, each plan yielded once its run has
    its verdict; then `steer.more()`'s, until it has none."""
    done = 0
    while done < len(planned) or steer.more() is not None:
        _run_once(folder, planned[done], steer)
        done += 1
        yield planned[done - 1]


def _describe(folder: Path, config_path: Path, planned: list[PlannedRun]) -> None:
    (folder / "campaign.json").write_text(
        json.dumps(
            {
                "config": str(Path(config_path).resolve()),
                "runs": [{"run_id": p.run_id, "target": p.target} for p in planned],
            },
            indent=2,
        )
        + "\n"
    )


def _run_once(folder: Path, plan: PlannedRun, steer: Steer) -> None:
    """A run of the campaign, unless it has its verdict already (a resumed
    campaign); one cut short before is moved aside first."""
    from results.checking import check_and_record
    from results.recording import complete

    if finished(folder / plan.run_id):
        return
    set_aside(folder, plan.run_id)
    config = plan.config
    if aims(config):  # later runs go where earlier ones did not
        config = dataclasses.replace(config, coverage_file=steer.tried())
    if learns(config):  # and learn from them
        config = dataclasses.replace(config, memory_file=folder / MEMORY_FILE)
    run = Run(config)
    run.execute()
    check_and_record(run.dir)
    complete(run.dir)


def set_aside(folder: Path, run_id: str) -> None:
    """A run cut short before (its directory, or its partial one) moved to `interrupted/`, its history kept."""
    from results.recording import partial

    for cut_short in (folder / run_id, partial(folder / run_id)):
        if cut_short.exists():
            aside = folder / "interrupted" / f"{run_id}-{time.strftime('%Y%m%dT%H%M%S')}"
            aside.parent.mkdir(exist_ok=True)
            shutil.move(cut_short, aside)
