"""`splitbrain archive`: run directories packed into one archive folder for
triage and for the Spark pipeline, each file with its checksum.

    ARCHIVE/
      manifest.json     every archived run: its source, and each file's sha256 and size
      index.parquet     a row per run: config, versions, verdict per checker, key figures
      runs/<run id>/    the run directory's files, as they were

A run's id is `<folder it was in>--<its name>`, so the same run names from
two campaigns do not meet. Archiving is idempotent (a run already there with
the same files is left as it is; other files under its id are an error) and
the manifest is replaced atomically after each run, so a crash leaves at
worst a directory the manifest does not list, which `verify` reports.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd

from history.errors import UsageError

from . import run_options
from .recording import TABLES, HistoryError, read_table, recover

MANIFEST, INDEX, RUNS = "manifest.json", "index.parquet", "runs"
FIGURES = ("leader_elections", "disruptive_elections", "leaderless_ms", "stuck_ms", "epochs")


class ArchiveError(UsageError):
    """An archive that cannot be used as asked; the message names the run or file."""


def run_id(run_dir: Path) -> str:
    run_dir = Path(run_dir).resolve()
    return f"{run_dir.parent.name}--{run_dir.name}"


def read_manifest(archive: Path) -> dict:
    path = Path(archive) / MANIFEST
    if not path.exists():
        return {"format": 1, "runs": {}}
    try:
        manifest = json.loads(path.read_text())
        for entry in manifest["runs"].values():
            for meta in entry["files"].values():
                if not isinstance(meta["sha256"], str) or not isinstance(meta["bytes"], int):
                    raise ArchiveError(
                        f"{path}: unreadable manifest: each file needs its sha256 (text) and bytes (a number)"
                    )
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as error:
        raise ArchiveError(f"{path}: unreadable manifest: {type(error).__name__}: {error}") from None
    return manifest


def _write_manifest(archive: Path, manifest: dict) -> None:
    staging = archive / f".{MANIFEST}.tmp"
    staging.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(staging, archive / MANIFEST)


def _files(run_dir: Path) -> dict[str, dict]:
    files = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        files[str(path.relative_to(run_dir))] = {"sha256": _sha256(path), "bytes": path.stat().st_size}
    return files


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def add(archive: Path, run_dirs: list[Path], check) -> list[str]:
    """Archive each run (its verdict first, by `check`, where it has none);
    returns the ids added. Every run is read and indexed before the archive
    is touched, so a run that cannot be archived leaves the archive as it
    was; each run is copied under a temporary name and renamed when whole."""
    archive = Path(archive)
    if archive.exists() and not archive.is_dir():
        raise ArchiveError(f"{archive}: a file, not an archive folder")
    manifest = read_manifest(archive)
    ready = []
    for run_dir in run_dirs:
        if not (run_dir / "history.parquet").exists():
            recover(run_dir)  # a crashed run: its history.jsonl is the record
        if not (run_dir / "verdict.json").exists():
            (run_dir / "verdict.json").write_text(json.dumps(check(run_dir), indent=2, default=str) + "\n")
        index_row(run_id(run_dir), run_dir)  # raises, naming the file, for what the index cannot read
        for name, columns in TABLES.items():  # what check reads, analyze reads: refuse what neither can
            if (run_dir / name).exists():
                read_table(run_dir / name, columns)
        ready.append(run_dir)
    (archive / RUNS).mkdir(parents=True, exist_ok=True)
    added = []
    for run_dir in ready:
        ident = run_id(run_dir)
        files = _files(run_dir)
        known = manifest["runs"].get(ident)
        if known is not None:
            if known["files"] != files:
                raise ArchiveError(f"{run_dir}: the archive holds other files under its id {ident}")
            continue
        target = archive / RUNS / ident
        staging = archive / RUNS / f".{ident}.partial"
        for leftover in (staging, target):  # left by a crash before the manifest named it
            if leftover.exists():
                shutil.rmtree(leftover)
        shutil.copytree(run_dir, staging)
        staging.rename(target)
        manifest["runs"][ident] = {
            "source": str(Path(run_dir).resolve()),
            "files": files,
            "archived_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        _write_manifest(archive, manifest)
        added.append(ident)
    write_index(archive, manifest)
    return added


def verify(archive: Path) -> list[str]:
    """Every problem, one line each naming the run and file: missing, changed,
    or a run directory the manifest does not list (a partial entry)."""
    archive = Path(archive)
    if not (archive / MANIFEST).is_file():
        raise ArchiveError(f"{archive}: not an archive (no {MANIFEST})")
    manifest = read_manifest(archive)
    problems = [p for ident, entry in sorted(manifest["runs"].items()) for p in verify_run(archive, ident, entry)]
    return problems + unlisted(archive, manifest)


def verify_run(archive: Path, ident: str, entry: dict) -> list[str]:
    """The problems of one listed run (its manifest `entry`): files missing or changed."""
    problems = []
    for name, meta in entry["files"].items():
        path = Path(archive) / RUNS / ident / name
        if not path.exists():
            problems.append(f"{ident}: {name}: missing")
        elif path.stat().st_size != meta["bytes"] or _sha256(path) != meta["sha256"]:
            problems.append(f"{ident}: {name}: checksum differs from the manifest")
    return problems


def unlisted(archive: Path, manifest: dict) -> list[str]:
    """Run directories the manifest does not list: partial entries of a crash."""
    listed = set(manifest["runs"])
    on_disk = {p.name for p in (archive / RUNS).iterdir()} if (archive / RUNS).is_dir() else set()
    return [
        f"{ident.removeprefix('.').removesuffix('.partial')}: partial entry: not in the manifest"
        for ident in sorted(on_disk - listed)
    ]


def write_index(archive: Path, manifest: dict) -> pd.DataFrame:
    rows = [index_row(ident, archive / RUNS / ident) for ident in sorted(manifest["runs"])]
    index = pd.DataFrame(rows)
    index.to_parquet(archive / INDEX, index=False)
    return index


def index_row(ident: str, run_dir: Path) -> dict:
    """The run's row of the index; a run.json or verdict.json that is not in
    the run directory format is a `HistoryError` naming the run."""
    try:
        return _index_row(ident, run_dir)
    except (AttributeError, TypeError, KeyError) as error:
        raise HistoryError(f"{run_dir}: run.json or verdict.json not in the run directory format ({error})") from None


def _index_row(ident: str, run_dir: Path) -> dict:
    try:
        meta = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
        verdict = json.loads((run_dir / "verdict.json").read_text())
        if (
            not isinstance(meta, dict)
            or not isinstance(verdict, dict)
            or not isinstance(verdict.get("checkers", {}), dict)
        ):
            raise HistoryError(f"{run_dir}: run.json and verdict.json must hold JSON objects")
    except (OSError, ValueError) as error:
        raise HistoryError(f"{run_dir}: {error}") from None
    config = meta.get("config", {})
    checkers = verdict.get("checkers", {})
    row = {
        "run_id": ident,
        "campaign": ident.split("--")[0],
        "target": meta.get("target", "import" if "source" in meta else None),
        # A campaign's [targets.NAME]; a run of its own is its target's.
        "option_set": config.get("option_set") or meta.get("target", "import" if "source" in meta else None),
        "ok_proves_leadership": bool((meta.get("capabilities") or {}).get("ok_proves_leadership", True)),
        "transitions_name_vote": bool((meta.get("capabilities") or {}).get("transitions_name_vote", False)),
        "bugs": ",".join(run_options.planted(meta)),
        # The target's options that differ from its defaults, as the command line spells them.
        "options": run_options.changed(meta),
        "workload": config.get("workload", (meta.get("model") or {}).get("name")),
        "nemesis": ",".join(config.get("nemesis", [])),
        "seed": meta.get("seed"),
        "nodes": config.get("nodes"),
        "backend": config.get("backend"),
        "time_limit_s": config.get("time_limit_s"),
        "source_file": (meta.get("source") or {}).get("file"),
        "model": json.dumps(meta["model"]) if "source" in meta else None,
        "server_version": meta.get("server_version"),
        "splitbrain_version": (meta.get("versions") or {}).get("splitbrain"),
        "python_version": (meta.get("versions") or {}).get("python"),
        "git_revision": meta.get("git_revision"),
        "start_time": meta.get("start_time") or meta.get("imported_at"),
        "valid": str(verdict.get("valid")).lower(),
        "anomalies": sum(len(c.get("anomalies", [])) for c in checkers.values()),
        # What the run's faults tried (checkers/coverage.py), as JSON: analyze adds the cells up.
        "coverage": json.dumps((verdict.get("coverage") or {}).get("cells", [])),
    }
    for name, result in checkers.items():
        row[f"valid_{name}"] = str(result.get("valid")).lower()
    stats = (checkers.get("availability") or {}).get("stats", {})
    for figure in FIGURES:
        row[figure] = stats.get(figure)
    everything = [w for w in (stats.get("clients") or {}).values()]
    operations = sum(w.get("operations", 0) for w in everything)
    row["operations"] = operations
    row["ok_rate"] = (sum(w["ok_rate"] * w["operations"] for w in everything) / operations) if operations else None
    return row
