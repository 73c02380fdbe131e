"""What a command prints of verdicts, and its exit code: 0 valid, 1 invalid, 2 unknown or error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from results.wording import counted

EXIT_VALID, EXIT_INVALID, EXIT_ERROR = 0, 1, 2


def exit_code(verdict: dict) -> int:
    return {True: EXIT_VALID, False: EXIT_INVALID}.get(verdict["valid"], EXIT_ERROR)


def worst_code(codes: list[int]) -> int:
    """Many runs' exit code: 1 if any found a violation, else 2 if any could not decide, else 0."""
    return EXIT_INVALID if EXIT_INVALID in codes else max(codes, default=EXIT_VALID)


def report(run_dir: Path) -> tuple[Path, int]:
    """Check a run directory, write its verdict and report, give it its own
    name, print a line per checker; the exit code by verdict."""
    from results.checking import check_and_record
    from results.recording import complete
    from results.soak_page import SOAK_PAGE

    verdict = check_and_record(run_dir)
    run_dir = complete(run_dir)
    print(f"run directory: {run_dir}", file=sys.stderr)
    print(f"report: {run_dir / 'report.html'}")
    if (run_dir / SOAK_PAGE).exists():
        print(f"soak: {run_dir / SOAK_PAGE}")
    for name, result in verdict["checkers"].items():
        anomalies = result.get("anomalies", [])
        line = f"{name}: {result['valid']}"
        if anomalies:
            line += f" ({counted(len(anomalies), 'anomaly', 'anomalies')}; first: {anomalies[0].get('summary', anomalies[0])})"
        print(line)
    note = f", {verdict['note']}" if verdict.get("note") else ""
    print(f"valid: {verdict['valid']}{note}  ({run_dir})")
    return run_dir, exit_code(verdict)


def verdict_line(run_dir: Path, verdict: dict) -> str:
    """One line: the verdict, the run, and each checker that did not pass with its first anomaly."""
    details = []
    for name, result in verdict["checkers"].items():
        if result["valid"] is True:
            continue
        anomalies = result.get("anomalies", [])
        why = result.get("error") or (anomalies[0].get("summary", str(anomalies[0])) if anomalies else "")
        details.append(f"{name}: {result['valid']}" + (f" ({why})" if why else ""))
    if verdict.get("note"):
        details.append(verdict["note"])
    return f"{str(verdict['valid']).lower():<7} {run_dir}" + ("  " + "; ".join(details) if details else "")


def one_line(text: object) -> str:
    """A message as one printable line: control characters and line breaks
    that came in with the input (a file's bytes, say) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _no_bar(args: argparse.Namespace, items: list) -> bool | None:
    """A bar for many items, on a terminal only (None: tqdm decides by the tty),
    so errors piped elsewhere stay one line each."""
    return True if len(items) < 2 or args.quiet else None
