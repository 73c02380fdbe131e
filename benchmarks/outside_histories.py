"""Checking time on the outside corpora, against Porcupine's figures.

Run: .venv/bin/python benchmarks/outside_histories.py [--repeats 5] [--engines native,python] [--porcupine DIR]

Every file of tests/data/outside is imported first (not timed) and its
history loaded into memory; then each figure is the best of `--repeats`
timings of `linearizable(history, model)` alone: turning the history table
into operations, the search and the verdict (interpreter start, import and
file reading excluded, as in Porcupine's figures). Porcupine, on a 2-core
machine of this kind: the 102 etcd histories 0.72 s together (slowest,
etcd_002, 267 ms), kv c50-ok 153 ms, c50-bad 44 ms.

`--porcupine DIR` (a checkout of anishathalye/porcupine, and Go) measures
Porcupine in the same minute instead: its own benchmarks (`go test -bench`,
`--repeats` iterations each; its histories already parsed, as here), the 103
etcd ones summed, and the ratios are to those figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checkers.linearizable import linearizable
from checkers.models import make_model
from results.importer import import_file
from results.recording import load_history

DATA = Path(__file__).parents[1] / "tests" / "data" / "outside"
INITIAL = {"porcupine-histories": None, "knossos-histories": 0}
PORCUPINE_S = {"etcd (102 together)": 0.72, "kv c50-ok": 0.153, "kv c50-bad": 0.044}


def load_all(scratch: Path) -> dict[str, tuple]:
    """name -> (history, model, expected verdict)"""
    loaded = {}
    for corpus, initial in INITIAL.items():
        with open(DATA / corpus / "expected.csv") as f:
            for row in csv.DictReader(f):
                path = DATA / corpus / row["file"]
                model = make_model(row["model"], initial)
                fmt = "jepsen-log" if path.suffix == ".log" else "jepsen-edn"
                run_dir = import_file(path, fmt, model, scratch / corpus / Path(row["file"]).parent)
                loaded[f"{corpus}/{row['file']}"] = (load_history(run_dir), model, row["linearizable"] == "true")
    return loaded


def best_of(repeats: int, check) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        check()
        times.append(time.perf_counter() - start)
    return min(times)


def timed(loaded: dict, names: list[str], engine: str, repeats: int) -> float:
    def check():
        for name in names:
            history, model, expected = loaded[name]
            verdict = linearizable(history, model, budget_s=120, engine=engine)
            assert verdict["valid"] is expected, (name, verdict["valid"])

    return best_of(repeats, check)


def porcupine_figures(checkout: Path, repeats: int) -> dict[str, float]:
    """Porcupine's own benchmarks run in `checkout`, in seconds, labelled as ours are."""
    try:
        done = subprocess.run(
            ["go", "test", "-run", "^$", "-bench", "EtcdJepsen|Kv50Clients(Ok|Bad)$", "-benchtime", f"{repeats}x"],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        last = (getattr(error, "stderr", "") or getattr(error, "stdout", "") or str(error)).strip().splitlines()[-1:]
        print(f"--porcupine {checkout}: Porcupine's benchmarks did not run: {' '.join(last) or error}", file=sys.stderr)
        raise SystemExit(2) from None
    ns = {
        name: float(value)
        for name, value in re.findall(r"^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", done.stdout, re.M)
    }
    etcd = [value for name, value in ns.items() if name.startswith("EtcdJepsen")]
    return {
        "etcd (102 together)": sum(etcd) / 1e9,
        "kv c50-ok": ns["Kv50ClientsOk"] / 1e9,
        "kv c50-bad": ns["Kv50ClientsBad"] / 1e9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engines", default="native,python")
    parser.add_argument("--porcupine", type=Path, help="a checkout of Porcupine: run its benchmarks beside ours")
    args = parser.parse_args()
    porcupine = PORCUPINE_S
    with tempfile.TemporaryDirectory() as scratch:
        loaded = load_all(Path(scratch))
    etcd = sorted(name for name in loaded if "/etcd/" in name)
    kv = "porcupine-histories/kv/"
    figures = {}
    for engine in args.engines.split(","):
        if args.porcupine:  # in the same minute as each engine's figures
            porcupine = porcupine_figures(args.porcupine, args.repeats)
            print(
                "Porcupine, now: "
                + ", ".join(f"{label} {seconds * 1000:.1f} ms" for label, seconds in porcupine.items())
            )
        each = {name: timed(loaded, [name], engine, args.repeats) for name in loaded}
        slowest = max(each, key=each.get)
        figures[engine] = {
            "etcd (102 together)": timed(loaded, etcd, engine, args.repeats),
            "kv c50-ok": each[kv + "c50-ok.txt"],
            "kv c50-bad": each[kv + "c50-bad.txt"],
            f"slowest single file ({slowest})": each[slowest],
            "all 228 files, one by one": sum(each.values()),
        }
        print(f"engine {engine}: every one of the {len(loaded)} verdicts equals expected.csv")
        for label, seconds in figures[engine].items():
            against = porcupine.get(label)
            ratio = f"  {seconds / against:5.2f}x Porcupine ({against * 1000:.0f} ms)" if against else ""
            print(f"  {label:<48} {seconds * 1000:9.1f} ms{ratio}")
    print(json.dumps({e: {k: round(v, 4) for k, v in f.items()} for e, f in figures.items()}))


if __name__ == "__main__":
    main()
