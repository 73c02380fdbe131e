"""`splitbrain campaign CONFIG.toml`: a matrix of runs (target option sets x
workloads x nemesis sets x seeds x repeats), each an ordinary run directory
under one campaign folder, with a progress bar. Run ids are fixed by the
matrix (a repeat runs the same seed again: real timing still differs, which
is what shows a flaky verdict), so an interrupted campaign resumes where it stopped: a run with a
verdict is not run again; one cut short is moved to `interrupted/` (its
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

import json
import shutil
import time
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from tqdm import tqdm

from harness.run import Run, RunConfig

MATRIX_KEYS = {"name", "results", "workloads", "nemeses", "seeds", "repeats"}
TARGET_MATRIX_KEYS = {"workloads", "nemeses", "seeds", "repeats"}
# Options a campaign sets itself, per run.
OWN_OPTIONS = {"workload", "nemesis", "seed", "results", "run_id", "progress"}


class CampaignError(ValueError):
    """A campaign file that cannot be used; the message names file and key."""


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    target: str
    config: RunConfig


def load(path: Path) -> tuple[Path, list[PlannedRun]]:
    """The campaign folder and every run of the matrix, in order."""
    try:
        raw = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise CampaignError(f"{path}: {error}") from None
    for table in set(raw) - {"campaign", "targets"}:
        raise CampaignError(f"{path}: unknown table [{table}]; known: [campaign], [targets.NAME]")
    campaign = dict(raw.get("campaign", {}))
    targets = raw.get("targets") or {"default": {}}
    options = {f.name for f in fields(RunConfig)} - OWN_OPTIONS
    common = {k: v for k, v in campaign.items() if k not in MATRIX_KEYS}
    for where, table, allowed in [("campaign", common, options),
                                  *((f"targets.{name}", t, options | TARGET_MATRIX_KEYS) for name, t in targets.items())]:  # fmt: skip
        for key in table:
            if key not in allowed:
                raise CampaignError(f"{path}: {where}.{key}: not a run option; known: {', '.join(sorted(allowed))}")
    name = campaign.get("name") or Path(path).stem
    folder = Path(campaign.get("results", "runs/campaigns")) / name
    planned = []
    for target, table in targets.items():
        # A target may bring its own matrix: the faults that show its bug.
        matrix = {**campaign, **{k: v for k, v in table.items() if k in TARGET_MATRIX_KEYS}}
        overrides = {k: v for k, v in table.items() if k not in TARGET_MATRIX_KEYS}
        for workload in matrix.get("workloads", ["append"]):
            for nemesis in matrix.get("nemeses", ["partition,kill,pause"]):
                kinds = [k for k in nemesis.split(",") if k and k != "none"]
                for seed in matrix.get("seeds", [0]):
                    for repeat in range(matrix.get("repeats", 1)):
                        run_id = f"{target}-{workload}-{'+'.join(kinds) or 'none'}-s{seed}-r{repeat}"
                        settings = {**common, **overrides}
                        try:
                            config = RunConfig(**settings, workload=workload, nemesis=kinds, seed=seed, results=folder,
                                               run_id=run_id, progress=False)  # fmt: skip
                        except TypeError as error:
                            raise CampaignError(f"{path}: {error}") from None
                        planned.append(PlannedRun(run_id, target, config))
    return folder, planned


def finished(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "verdict.json").read_text())["valid"] in (True, False, "unknown")
    except (OSError, ValueError, KeyError, TypeError):
        return False


def execute(config_path: Path, progress: bool = True) -> tuple[Path, list[Path]]:
    """Run what is not finished yet; returns the folder and every run directory."""
    from checkers.verdict import check_run
    from results.campaign_page import write_summary
    from results.report import write_report

    folder, planned = load(config_path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.json").write_text(json.dumps(
        {"config": str(Path(config_path).resolve()), "runs": [{"run_id": p.run_id, "target": p.target} for p in planned]},
        indent=2) + "\n")  # fmt: skip
    with tqdm(total=len(planned), desc="campaign", unit="run", disable=not progress) as bar:
        for plan in planned:
            run_dir = folder / plan.run_id
            if not finished(run_dir):
                if run_dir.exists():
                    aside = folder / "interrupted" / f"{plan.run_id}-{time.strftime('%Y%m%dT%H%M%S')}"
                    aside.parent.mkdir(exist_ok=True)
                    shutil.move(run_dir, aside)
                Run(plan.config).execute()
                (run_dir / "verdict.json").write_text(json.dumps(check_run(run_dir), indent=2, default=str) + "\n")
                write_report(run_dir)
            bar.update()
    write_summary(folder, [(plan.target, folder / plan.run_id) for plan in planned])
    return folder, [folder / plan.run_id for plan in planned]
