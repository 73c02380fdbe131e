"""A campaign's `summary.html`: per target option set, how many runs failed
and which checkers caught them; per version of the server, where it ran
more than one, how many runs each checker failed; then every run with its verdict, its first
anomaly and a link to its report; then what the campaign's faults tried
(their coverage cells added up)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from checkers.abstract_state import add_up_states
from checkers.coverage import add_up

from .report import STYLE, coverage_table, states_table


def _shrink(run_dir: Path) -> str:
    return f"<code>splitbrain shrink {html.escape(str(run_dir))}</code>"


def write_summary(folder: Path, runs: list[tuple[str, Path]]) -> Path:
    """`runs`: (target name, run directory) in matrix order."""
    rows = []
    verdicts = []
    versions = []
    for target, run_dir in runs:
        try:
            verdict = json.loads((run_dir / "verdict.json").read_text())
        except (OSError, ValueError):
            verdict = {"valid": "not run", "checkers": {}}
        verdicts.append(verdict)
        versions.append(_server_version(run_dir))
        failing = {name: r for name, r in verdict.get("checkers", {}).items() if r.get("valid") is not True}
        rows.append((target, run_dir, verdict.get("valid"), failing))
    coverages = [v.get("coverage") or {} for v in verdicts]
    tried = coverage_table(add_up(c.get("cells", []) for c in coverages), "the campaign's faults")
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>campaign {html.escape(folder.name)}</title>"
        f"<style>{STYLE}</style></head><body><h1>Campaign {html.escape(folder.name)}</h1>"
        f"{_targets_table(rows)}{_versions_table(rows, versions)}{_runs_table(folder, rows)}"
        f"{tried}"
        f"{states_table(add_up_states(coverages))}</body></html>"
    )
    path = folder / "summary.html"
    path.write_text(page)
    return path


Row = tuple[str, Path, object, dict]


def _targets_table(rows: list[Row]) -> str:
    """Per option set: its runs, how many failed, and the checkers that caught them."""
    per_target: dict[str, list] = {}
    for target, _, valid, failing in rows:
        per_target.setdefault(target, []).append((valid, failing))
    head = ["<h2>Targets</h2><table><tr><th>target</th><th>runs</th><th>failed</th><th>caught by</th></tr>"]
    for target, results in per_target.items():
        failed = sum(1 for valid, _ in results if valid is False)
        caught = sorted(
            {
                name
                for valid, failing in results
                if valid is False
                for name, r in failing.items()
                if r.get("valid") is False
            }
        )
        head.append(
            f"<tr><td>{html.escape(target)}</td><td>{len(results)}</td><td>{failed}</td>"
            f"<td>{html.escape(', '.join(caught))}</td></tr>"
        )
    return "".join(head) + "</table>"


def _server_version(run_dir: Path) -> str:
    """The version of the server the run ran (run.json's `server_version`), "?" where it says none."""
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return "?"
    return str(meta.get("server_version") or "?") if isinstance(meta, dict) else "?"


def _versions_table(rows: list[Row], versions: list[str]) -> str:
    """Where the campaign ran more than one version of the server: per
    version, its runs and, per checker that failed any run, how many of
    that version's runs it failed."""
    if len(set(versions)) < 2:
        return ""
    checkers = sorted({name for _, _, valid, failing in rows for name, r in failing.items() if r.get("valid") is False})
    order = sorted(set(versions), key=lambda v: tuple(int(p) if p.isdigit() else -1 for p in v.split(".")))
    head = "".join(f"<th>{html.escape(name)}</th>" for name in checkers)
    body = [f"<h2>Versions</h2><table class='versions'><tr><th>version</th><th>runs</th>{head}</tr>"]
    for version in order:
        mine = [failing for (_, _, _, failing), v in zip(rows, versions) if v == version]
        cells = "".join(
            f"<td>{sum(1 for failing in mine if (failing.get(name) or {}).get('valid') is False)}</td>"
            for name in checkers
        )
        body.append(f"<tr><td>{html.escape(version)}</td><td>{len(mine)}</td>{cells}</tr>")
    return "".join(body) + "</table>"


def _runs_table(folder: Path, rows: list[Row]) -> str:
    """A line per run: its report, its verdict, its first anomaly, and how to shrink it."""
    body = [
        "<h2>Runs</h2><table><tr><th>run</th><th>target</th><th>valid</th><th>first anomaly</th>"
        "<th>fewer faults that still fail</th></tr>"
    ]
    for target, run_dir, valid, failing in rows:
        first = next(
            (
                f"{name}: {(r.get('anomalies') or [{}])[0].get('summary', r.get('error', ''))}"
                for name, r in failing.items()
            ),
            "",
        )
        link = run_dir.relative_to(folder) / "report.html"
        body.append(
            f"<tr><td><a href='{html.escape(str(link))}'>{html.escape(run_dir.name)}</a></td>"
            f"<td>{html.escape(target)}</td><td class='valid-{str(valid).lower()}'>{html.escape(str(valid))}</td>"
            f"<td>{html.escape(first)}</td><td>{_shrink(run_dir) if valid is False else ''}</td></tr>"
        )
    return "".join(body) + "</table>"
