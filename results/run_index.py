"""Every run and campaign under a results folder, as rows a person can scan
and filter (what `splitbrain serve` lists): the target, or the campaign's
option set, the workload, the options, the bug set, the seed and the
verdict. Only `run.json` and `verdict.json` are read, so listing thousands
of runs stays quick.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from checkers.signatures import group

from . import run_options
from .recording import PARTIAL, is_run

# The fields a listing filters on: exact values, except `options`, matched as text.
FILTERS = ("campaign", "option_set", "target", "workload", "bugs", "seed", "verdict", "failure_group", "options")
# How deep runs are looked for: runs/<id>, runs/campaigns/<name>/<id>, and a campaign's interrupted/<id>.
MAX_DEPTH = 5
CAMPAIGN_MARKS = ("campaign.json", "summary.html")


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def verdict_of(run_dir: Path) -> str:
    """`true`, `false` or `unknown` from verdict.json; `incomplete` without one."""
    return _word(_json(run_dir / "verdict.json"))


def _word(verdict: dict) -> str:
    valid = verdict.get("valid", "incomplete")
    return str(valid).lower() if valid in (True, False, "unknown") else "incomplete"


def options_of(meta: dict) -> str:
    """The settings that tell runs apart, as one short line."""
    config = meta.get("config") or {}
    if "source" in meta:
        model = meta.get("model") or {}
        return f"imported {meta['source'].get('format', '')}, model {model.get('name', '?')}"
    parts = [
        f"{config.get('backend', '?')}",
        f"{config.get('nodes', '?')} nodes",
        ",".join(config.get("nemesis") or []) or "no faults",
        f"{config.get('time_limit_s', '?')} s",
    ]
    if config.get("topologies"):
        parts.append("topologies " + ",".join(config["topologies"]))
    options = run_options.changed(meta)
    return " · ".join(parts + ([options] if options else []))


def describe(root: Path, run_dir: Path, campaign: str) -> dict:
    meta = _json(run_dir / "run.json")
    config = meta.get("config") or {}
    verdict = _json(run_dir / "verdict.json")
    failing = sorted(
        name
        for name, result in (verdict.get("checkers") or {}).items()
        if isinstance(result, dict) and result.get("valid") is not True
    )
    stamp = run_dir / "run.json" if (run_dir / "run.json").exists() else run_dir
    return {
        "path": run_dir.relative_to(root).as_posix(),
        "id": run_dir.name.removesuffix(PARTIAL),
        "campaign": campaign,
        "target": meta.get("target") or ("import" if "source" in meta else "?"),
        # A campaign's [targets.NAME]; a run of its own has none.
        "option_set": config.get("option_set") or "",
        "workload": config.get("workload") or (meta.get("model") or {}).get("name", ""),
        "bugs": ",".join(run_options.planted(meta)) or "none",
        "seed": str(meta.get("seed", "")),
        "options": options_of(meta),
        "verdict": _word(verdict),
        "failing": ", ".join(failing),
        # What it failed of first (checkers/signatures.py), the group triage puts it in.
        "failure_group": group(verdict) or "",
        "started": meta.get("start_time") or meta.get("imported_at", ""),
        "report": (run_dir / "report.html").exists(),
        "partial": run_dir.name.endswith(PARTIAL),
        "mtime": stamp.stat().st_mtime,
    }


def scan(root: Path) -> tuple[list[dict], list[dict]]:
    """(runs, newest first; campaigns) under `root`. Symbolic links are not
    followed, so no run is listed twice."""
    root = Path(root)
    runs: list[dict] = []
    campaigns: list[dict] = []
    for folder, names, files in os.walk(root):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        campaign_here = any(mark in files for mark in CAMPAIGN_MARKS)
        if campaign_here:
            summary = here / "summary.html"
            campaigns.append(
                {"path": here.relative_to(root).as_posix(), "name": here.name, "summary": summary.exists()}
            )
        keep = []
        for name in sorted(names):
            child = here / name
            if child.is_symlink():
                continue
            if is_run(child):
                campaign = here.name if campaign_here else (here.parent.name if here.name == "interrupted" else "")
                runs.append(describe(root, child, campaign))
            elif depth + 1 < MAX_DEPTH:
                keep.append(name)
        names[:] = keep
    runs.sort(key=lambda row: row["mtime"], reverse=True)
    for listed in campaigns:
        inside = "" if listed["path"] == "." else listed["path"] + "/"  # "." when the folder served is the campaign's
        mine = [r for r in runs if r["path"].startswith(inside)]
        listed.update(runs=len(mine), failed=sum(r["verdict"] == "false" for r in mine))
    return runs, campaigns


def failure_groups(runs: list[dict]) -> list[dict]:
    """The failing runs grouped by what they failed of first (as `analyze`
    groups an archive's): per group, its runs, the first and the last (by
    start), most runs first."""
    grouped: dict[str, list[dict]] = {}
    for row in runs:
        if row["failure_group"]:
            grouped.setdefault(row["failure_group"], []).append(row)
    found = []
    for name, rows in grouped.items():
        rows = sorted(rows, key=lambda row: (row["started"], row["path"]))
        found.append({"failure_group": name, "runs": len(rows), "first": rows[0], "last": rows[-1]})
    return sorted(found, key=lambda g: (-g["runs"], g["failure_group"]))


def matches(row: dict, wanted: dict[str, str]) -> bool:
    """Whether a run passes the filters (empty ones pass everything)."""
    for name, value in wanted.items():
        if not value:
            continue
        if name == "options":
            if value.lower() not in row["options"].lower():
                return False
        elif name == "bugs":
            if value not in row["bugs"].split(","):
                return False
        elif row.get(name) != value:
            return False
    return True
