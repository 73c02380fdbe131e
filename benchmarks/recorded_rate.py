"""How much load splitbrain records (issue "hours of load"): one run of
`--seconds` of append load with no faults against a local 3-node cluster,
with many clients and a high `--rate`, then its verdict. Prints the
operations a second recorded (completions, ok or not, over the load's span:
goal 10,000 on the reference quorum's correct node, checked valid), and
where the limit is: each process's share of the CPU while load ran (the
harness's one Python process holds the clients and the recorder; the nodes;
the link proxy), sampled from /proc every second.

    .venv/bin/python benchmarks/recorded_rate.py [--target kraft|etcd] [--workload append|register] [--seconds 60] [--concurrency 300] [--rate 40000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.ownership import proc_stat  # noqa: E402
from harness.processes import descendants  # noqa: E402
from results.recording import load_history  # noqa: E402

GOAL_OPS_S = 10_000
TICKS_S = os.sysconf("SC_CLK_TCK")
# What each process is, by its command line (the first that matches).
ROLES = (
    ("harness.cli", "harness (clients, recorder)"),
    ("harness.toxiproxy", "link proxy"),
    ("targets.kraft.node", "nodes"),
    ("etcd", "nodes"),
    ("nats-server", "nodes"),
)


def role(pid: int) -> str:
    try:
        line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    name = next((name for marker, name in ROLES if marker in line), "other")
    node = re.search(r"--(?:id|name)[= ](\w+)", line)
    return f"node {node[1]}" if name == "nodes" and node else name


def cpu_ticks(pid: int) -> int | None:
    fields = proc_stat(str(pid))
    return int(fields[11]) + int(fields[12]) if fields else None  # utime + stime


def sample(root: int, history: Path) -> tuple[float, int, dict[int, tuple[str, int]]]:
    """Now, the history file's size, and each process of the run's tree: (role, CPU ticks)."""
    ticks = {}
    for pid, _ in descendants(root):
        spent = cpu_ticks(pid)
        if spent is not None:
            ticks[pid] = (role(pid), spent)
    return time.monotonic(), history.stat().st_size if history.exists() else 0, ticks


def cores_under_load(samples: list) -> dict[str, float]:
    """Mean cores each role used over the seconds in which the history grew
    at least half as fast as it ever did (the load, not set-up or checking)."""
    steps = list(zip(samples, samples[1:], strict=False))
    growth = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in steps]
    busy = [step for step, rate in zip(steps, growth, strict=True) if rate >= 0.5 * max(growth, default=0)]
    spent: dict[str, float] = {}
    seconds = sum(b[0] - a[0] for a, b in busy)
    for a, b in busy:
        for pid, (name, ticks) in b[2].items():
            if pid in a[2]:
                spent[name] = spent.get(name, 0.0) + (ticks - a[2][pid][1]) / TICKS_S
    return {name: value / seconds for name, value in sorted(spent.items())} if seconds else {}


def run(args: argparse.Namespace, results: Path) -> tuple[Path, list, int]:
    command = [
        sys.executable, "-m", "harness.cli", "run", "--backend", "local", "--nodes", "3",
        "--target", args.target, "--workload", args.workload, "--nemesis", "none",
        "--rate", str(args.rate), "--concurrency", str(args.concurrency),
        "--time-limit", str(args.seconds), "--seed", "1", "--quiet", "--results", str(results),
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []
    while process.poll() is None:
        history = next(results.glob("*/history.jsonl"), results / "none")
        samples.append(sample(process.pid, history))
        time.sleep(1.0)
    out, err = process.communicate()
    run_dirs = [d for d in results.iterdir() if (d / "verdict.json").exists()]
    if not run_dirs:  # exit 2 with a verdict is an `unknown` one: its figures still count
        sys.exit(f"the run failed (exit {process.returncode}): {err.strip()[-500:]}")
    [run_dir] = run_dirs
    return run_dir, samples, process.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="kraft", choices=["kraft", "etcd"])
    parser.add_argument("--workload", default="append", choices=["append", "register"])
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--rate", type=int, default=40_000)
    parser.add_argument("--keep", type=Path, help="keep the run directory under this folder")
    args = parser.parse_args()
    results = args.keep or Path(tempfile.mkdtemp(prefix="splitbrain-rate-"))
    results.mkdir(parents=True, exist_ok=True)
    run_dir, samples, code = run(args, results)
    history = load_history(run_dir)
    clients = history[history["process"] >= 0]
    done = clients[clients["type"] != "invoke"]
    span_s = (done["time_ns"].max() - clients["time_ns"].min()) / 1e9
    per_s = done.groupby(done["time_ns"] // 10**9).size()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    rate = len(done) / span_s
    print(
        f"{args.target}, {args.workload}, local, 3 nodes, {args.concurrency} clients, --rate {args.rate}, {args.seconds} s, no faults: "
        f"{len(done):,} operations completed ({(done['type'] == 'ok').mean():.2%} ok) in {span_s:.1f} s"
    )
    print(
        f"recorded rate {rate:,.0f} ops/s"
        + (f" (goal {GOAL_OPS_S:,})" if args.target == "kraft" else "")
        + f"; per second: median {per_s.median():,.0f}, lowest {per_s.iloc[1:-1].min():,.0f}"
    )
    print(f"verdict: valid={verdict['valid']} (exit {code}); history {len(history):,} rows")
    cores = cores_under_load(samples)
    print(
        "CPU under load (cores of this machine's "
        f"{os.cpu_count()}): " + ", ".join(f"{name} {value:.2f}" for name, value in cores.items())
    )
    if cores:
        busiest = max(cores, key=cores.get)
        print(f"busiest: {busiest} at {cores[busiest]:.2f} cores, all together {sum(cores.values()):.2f}")
    if args.keep is None:
        shutil.rmtree(results, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
