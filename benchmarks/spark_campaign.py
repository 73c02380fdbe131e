"""Campaigns and simulations on Spark (issue 38), on a standalone Spark
cluster of pyspark's own master and 4 workers on 127.0.0.1 (harness/
spark_standalone.py), each worker one executor of `--executor-cores` cores
(default 2: 8 runs at once; the runs are not all waiting: a 10 s run takes
about 5 s of CPU, so at 4 at once the 2 cores are the limit). In one sitting:

1. `wall`: a campaign of `--runs` 10 s local runs of the correct node
   (random strategy, seeds 1 to N), run serially and then on the cluster.
   Goals: Spark's wall time at most 0.35x the serial one; every verdict
   valid; every run directory holding the same files either way.
2. `bugs`: the same campaign with `--bug ack-before-commit`, `--bug-runs`
   runs each way. Goal: runs caught on Spark within one of the serial count.
3. `sim`: `splitbrain simulate --schedules N` on a cluster of 1 worker and
   on one of 2. Goal: 2 workers at least 1.8x faster.
4. `kill`: the `wall` campaign on the cluster with one worker SIGKILLed once
   its run is under way. Goals: the campaign completes, every run there
   exactly once, and nothing of the killed worker's processes left 30 s on.

    .venv/bin/python benchmarks/spark_campaign.py [--runs 24] [--bug-runs 12] [--schedules 10000] [--executor-cores 2] [--parts wall,bugs,sim,kill]

Prints a line per measure with its goal; exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.processes import alive, names  # noqa: E402
from harness.spark_campaign import RUN_NAME  # noqa: E402
from harness.spark_standalone import StandaloneSpark  # noqa: E402

CAMPAIGN = """
[campaign]
name = "{name}"
results = "{results}"
backend = "local"
nodes = 3
time_limit_s = 10
nemesis_strategy = "random"
seeds = {seeds}
[targets.{name}]
{bugs}
"""
EXECUTORS = 4


def splitbrain(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT)
    return time.monotonic() - start, done


def campaign_file(work: Path, name: str, runs: int, bug: str | None) -> Path:
    path = work / f"{name}.toml"
    bugs = f'bugs = ["{bug}"]' if bug else ""
    path.write_text(CAMPAIGN.format(name=name, results=work / "runs", seeds=list(range(1, runs + 1)), bugs=bugs))
    return path


def verdicts(folder: Path) -> dict[str, object]:
    return {
        run.name: json.loads((run / "verdict.json").read_text())["valid"]
        for run in sorted(folder.iterdir())
        if (run / "verdict.json").exists()
    }


def layout(run_dir: Path) -> set[str]:
    return {str(path.relative_to(run_dir)) for path in run_dir.rglob("*")}


def both_ways(work: Path, url: str, name: str, runs: int, bug: str | None) -> dict:
    """The campaign serially and on Spark: wall times, verdicts, layouts."""
    found = {}
    for way, extra in (("serial", []), ("spark", ["--spark", url])):
        config = campaign_file(work, f"{name}-{way}", runs, bug)
        seconds, done = splitbrain("campaign", "--quiet", *extra, str(config))
        if done.returncode not in (0, 1):
            sys.exit(f"{way} campaign failed: {done.stderr.strip()[-500:]}")
        folder = work / "runs" / f"{name}-{way}"
        runs_found = {run: valid for run, valid in verdicts(folder).items()}
        found[way] = {"seconds": seconds, "verdicts": runs_found, "folder": folder}
        print(f"{name}: {way}: {len(runs_found)} runs in {seconds:.1f} s", flush=True)
    return found


def same_layout(found: dict) -> bool:
    serial, spark = (sorted(p for p in found[w]["folder"].iterdir() if p.is_dir()) for w in ("serial", "spark"))
    return len(serial) == len(spark) and all(layout(a) == layout(b) for a, b in zip(serial, spark, strict=True))


def wall(work: Path, url: str, runs: int) -> bool:
    found = both_ways(work, url, "wall", runs, None)
    ratio = found["spark"]["seconds"] / found["serial"]["seconds"]
    valid = all(v is True for way in found.values() for v in way["verdicts"].values())
    counts = [len(found[w]["verdicts"]) for w in ("serial", "spark")]
    shape = same_layout(found)
    print(
        f"WALL spark/serial: {ratio:.2f}x (goal at most 0.35x); {found['serial']['seconds']:.0f} s -> {found['spark']['seconds']:.0f} s"
    )
    print(f"WALL every verdict valid: {valid}; runs {counts[0]} and {counts[1]} (goal {runs}); same layout: {shape}")
    return ratio <= 0.35 and valid and counts == [runs, runs] and shape


def bugs(work: Path, url: str, runs: int) -> bool:
    found = both_ways(work, url, "bug", runs, "ack-before-commit")
    caught = {way: sum(v is False for v in found[way]["verdicts"].values()) for way in found}
    print(
        f"BUGS ack-before-commit caught: serial {caught['serial']} of {runs}, spark {caught['spark']} of {runs} (goal: within 1)"
    )
    return abs(caught["serial"] - caught["spark"]) <= 1


def sim(work: Path, schedules: int) -> bool:
    times = {}
    for workers in (1, 2):
        with StandaloneSpark(work / f"sim-spark-{workers}", workers=workers, cores=1) as cluster:
            seconds, done = splitbrain(
                "simulate", "--quiet", "--keep-going", "--schedules", str(schedules), "--spark", cluster.url
            )
        if done.returncode not in (0, 1):
            sys.exit(f"simulate on {workers} workers failed: {done.stderr.strip()[-500:]}")
        times[workers] = seconds
        print(
            f"SIM {schedules} schedules on {workers} worker(s): {seconds:.1f} s ({done.stderr.strip().splitlines()[-1]})",
            flush=True,
        )
    speedup = times[1] / times[2]
    print(f"SIM 2 workers against 1: {speedup:.2f}x faster (goal at least 1.8x)")
    return speedup >= 1.8


def kill(work: Path, cluster: StandaloneSpark, runs: int) -> bool:
    config = campaign_file(work, "kill", runs, None)
    command = [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--spark", cluster.url, str(config)]
    campaign = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while RUN_NAME not in names(cluster.worker_processes(0)):
        time.sleep(0.5)
    time.sleep(4)
    killed = cluster.kill_worker(0)
    time.sleep(30)
    left = alive(killed)
    out, err = campaign.communicate()
    folder = work / "runs" / "kill"
    present = [p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith("kill-")]
    once = sorted(present) == sorted(set(present)) and len(present) == runs
    print(f"KILL campaign exit {campaign.returncode}; runs present {len(present)} of {runs}, each once: {once}")
    print(f"KILL processes of the killed worker left after 30 s: {len(left)} of {len(killed)} (goal 0)")
    if campaign.returncode not in (0, 1):
        print(err.strip()[-500:])
    return campaign.returncode == 0 and once and not left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--bug-runs", type=int, default=12)
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--executor-cores", type=int, default=2)
    parser.add_argument("--parts", default="wall,bugs,sim,kill")
    args = parser.parse_args()
    parts = args.parts.split(",")
    work = Path(tempfile.mkdtemp(prefix="spark-campaign-"))
    met = []
    try:
        if {"wall", "bugs", "kill"} & set(parts):
            with StandaloneSpark(work / "spark", workers=EXECUTORS, cores=args.executor_cores) as cluster:
                if "wall" in parts:
                    met.append(wall(work, cluster.url, args.runs))
                if "bugs" in parts:
                    met.append(bugs(work, cluster.url, args.bug_runs))
                if "kill" in parts:
                    met.append(kill(work, cluster, args.runs))
        if "sim" in parts:
            met.append(sim(work, args.schedules))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"goals met: {sum(met)} of {len(met)}")
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
