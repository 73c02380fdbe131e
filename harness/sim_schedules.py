"""A simulation's failing schedules as run descriptions (`splitbrain
simulate --write-schedules DIR`): for each violation, `DIR/sim-<seed>/`
holds a `run.json` that `splitbrain replay` runs on a real cluster (the
local backend, the same nodes and target options, and the schedule's faults,
a workload and the nodes' timeouts as the target translates them,
`Simulated.real_schedule`)
and a `verdict.json` with the simulation's verdict, so that replay says
whether the real run reproduced it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from harness.limits import LULL_S
from harness.run import RunConfig
from history.faults import KINDS
from targets.interface import Simulated, Target

# A replay's load. The simulator reads at every node that believes it leads
# every 20 simulated ms; a real run's clients read where they last found the
# leader, each waiting out its answer (a second, at a node that is down). At
# the run's default of 4 clients and 50 operations a second no read landed
# at a node in its first moments as leader, where a stale read is answered:
# a simulated stale read (a leader bounced, its schedule shrunk) came back in
# 0 of 2 replays at that load, and in 2 of 2 at this one.
REPLAY_RATE, REPLAY_CONCURRENCY = 200.0, 8
# Every simulated schedule ends in seconds with no load, its liveness then
# judged; a replay ends in the run's lull (harness/run.py), LULL_S after its
# schedule's time, so that a cluster that keeps no leader without writes
# shows it there as it did in the simulation.


def write(folder: Path, target: Target, settings: dict, options: dict, verdict: dict) -> list[Path]:
    """One folder per violation of `verdict`; their paths. Each one's
    verdict keeps how steady its violation is (`Simulated.steadiness`,
    as `retimed`)."""
    assert isinstance(target, Simulated)
    written = []
    for found in verdict["checkers"]["simulation-invariants"].get("anomalies") or []:
        steadiness = target.steadiness(settings, found)
        anomaly = {**found, "retimed": {"held": steadiness[0], "of": steadiness[1]}} if steadiness else found
        ops, limit_s, workload, timeouts = target.real_schedule(settings, anomaly)
        used = {op["f"] for op in ops}
        observers = settings.get("observers", 0)
        config = RunConfig(
            target=target.name,
            backend="local",
            nodes=settings["nodes"] + observers,
            initial_voters=settings["nodes"] if observers else None,
            workload=workload,
            rate=REPLAY_RATE,
            concurrency=REPLAY_CONCURRENCY,
            nemesis=[kind for kind in KINDS if kind in used],
            nemesis_strategy="random",
            time_limit_s=limit_s + LULL_S,
            lull_s=LULL_S,
            seed=anomaly["seed"],
            options={**options, **timeouts},
        )
        run_dir = folder / f"sim-{anomaly['seed']}"
        run_dir.mkdir(parents=True, exist_ok=True)
        described = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()}
        meta = {"config": described, "seed": anomaly["seed"], "target": target.name, "load_start_s": 0.0}
        (run_dir / "run.json").write_text(json.dumps({**meta, "schedule": ops}, indent=2) + "\n")
        checker = {"valid": False, "anomalies": [anomaly], "stats": {}}
        (run_dir / "verdict.json").write_text(
            json.dumps({"valid": False, "checkers": {"simulation-invariants": checker}}, indent=2) + "\n"
        )
        written.append(run_dir)
    return written


def held(run_dir: Path) -> str:
    """How steady a written schedule's violation is, in words ("" where it was not measured)."""
    [anomaly] = json.loads((run_dir / "verdict.json").read_text())["checkers"]["simulation-invariants"]["anomalies"]
    retimed = anomaly.get("retimed")
    return f"; it broke again under {retimed['held']} of {retimed['of']} other timings" if retimed else ""
