"""Verdicts before and after a change, compared as JSON: each run directory
given is copied twice and checked again (`splitbrain check`) by the code at
a git revision (a worktree made for it) and by this checkout; every
verdict.json must be equal, field by field. For refactors of the checkers
and of what feeds them (issue "the structure the next engineer reads").

    .venv/bin/python benchmarks/verdicts_unchanged.py --before REV [--new coverage.states ...] RUN_DIR [RUN_DIR ...]

`--new KEY` names a field (dotted: `coverage.states`) that the change adds
on purpose: it is left out of the newer verdict, and only there, so every
field both have is still compared.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checked(code: Path, run_dir: Path, scratch: Path) -> dict:
    """`run_dir`'s verdict as the code in `code` gives it, on a copy."""
    copy = scratch / run_dir.name
    # The run's own verdict is left behind: a check that wrote none must not read as one that agreed.
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("report.html", "verdict.json"))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "--quiet", str(copy)], cwd=code, capture_output=True, text=True
    )
    if not (copy / "verdict.json").exists():
        sys.exit(f"verdicts_unchanged: {code} wrote no verdict for {run_dir}: {done.stderr.strip()[-300:]}")
    return json.loads((copy / "verdict.json").read_text())


def without(verdict: dict, keys: list[str]) -> dict:
    """`verdict` with the dotted `keys` taken out (where it has them)."""
    for key in keys:
        *path, last = key.split(".")
        holder = verdict
        for part in path:
            holder = holder.get(part, {}) if isinstance(holder, dict) else {}
        if isinstance(holder, dict):
            holder.pop(last, None)
    return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the git revision to compare with")
    parser.add_argument("--new", action="append", default=[], metavar="KEY", help="a field the change adds")
    parser.add_argument("runs", type=Path, nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="splitbrain-verdicts-") as work:
        before = Path(work) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(before), args.before], cwd=ROOT, check=True)
        try:
            differ = 0
            for run_dir in args.runs:
                old = checked(before, run_dir, Path(tempfile.mkdtemp(dir=work)))
                new = without(checked(ROOT, run_dir, Path(tempfile.mkdtemp(dir=work))), args.new)
                same = old == new
                differ += not same
                print(
                    f"{'same' if same else 'DIFFERENT'}  valid {old.get('valid')} / {new.get('valid')}  {run_dir}",
                    flush=True,
                )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, check=False)
    added = f" (left out of the newer: {', '.join(args.new)})" if args.new else ""
    print(f"{len(args.runs) - differ} of {len(args.runs)} verdicts equal as JSON{added} (goal: all)")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
