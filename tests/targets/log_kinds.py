"""What the events of a target's real log lines are, per version: the rows
its parser gives for each node's committed fixture (`fixtures/logs/VERSION/nN.log`),
and their kinds as `event` or `transition:STATE`."""

from __future__ import annotations

from pathlib import Path


def version_rows(folder: Path, events) -> list[dict]:
    """Every node's rows of one version's fixtures, through `events(path, node, to_run_ns)`."""
    return [row for path in sorted(folder.glob("n*.log")) for row in events(path, path.stem, lambda wall_ns: wall_ns)]


def kinds(rows: list[dict]) -> set[str]:
    return {f"{r['event']}:{r['state']}" if r["event"] == "transition" else r["event"] for r in rows}
