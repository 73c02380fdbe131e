"""The nodes' own log lines at an anomaly's moments, for report.html: what a
developer of the target reads beside the history rows and the replicas'
copies. Each target says when a line of its log was written
(`Target.line_wall_ns`) and run.json when the history's clock read 0
(`wall_start_ns`), so any line is placed on the history's clock without
knowing what it means.

An anomaly's moments are its own times where it has them (an election, a
read no order explains); else the row it names (an acknowledgement), and
then each fault that hit a node lacking the acknowledged record after it
(the power loss, kill or damage a lost write went down with).
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from history.faults import BY_NAME
from history.schema import named_nodes, nemesis_done

# Lines shown around a moment: from BEFORE_NS before it to AFTER_NS after it.
BEFORE_NS, AFTER_NS = 2_000_000_000, 1_000_000_000
# After a fault, what the node did as it came back.
FAULT_BEFORE_NS, FAULT_AFTER_NS = 1_000_000_000, 4_000_000_000
# Lines per node and moment (the nearest to the moment are kept), and moments per anomaly.
MAX_LINES = 40
MAX_MOMENTS = 4

STYLE = """
pre.log { font: 11px/1.3 monospace; background: #f7f7f7; padding: 4px; max-height: 320px; overflow: auto;
          white-space: pre-wrap; }
"""


def read_logs(run_dir: Path, log_file: str, line_wall_ns, wall_start_ns: int) -> dict[str, list[tuple[int, str]]]:
    """Each node's log under `nodes/<node>/`, as (time on the history's
    clock, line); a line with no time of its own (a continuation) takes the
    time of the line before it, and lines before the first time are left out."""
    logs = {}
    for path in sorted(Path(run_dir).glob(f"nodes/*/{log_file}")):
        timed, last = [], None
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            wall = line_wall_ns(line)
            last = last if wall is None else wall - wall_start_ns
            if last is not None:
                timed.append((last, line))
        logs[path.parent.name] = timed
    return logs


def own_times(anomaly: dict) -> list[int]:
    """The moments an anomaly names itself (its `time_ns`, or its `times_ns`),
    on the history's clock; the report marks them, and shows the logs there."""
    own = [anomaly["time_ns"]] if isinstance(anomaly.get("time_ns"), int) else anomaly.get("times_ns") or []
    return [t for t in own if isinstance(t, int)]


def moments(anomaly: dict, history: pd.DataFrame) -> list[tuple[str, int, int, int]]:
    """(what, when, from, to) on the history's clock: the anomaly's own
    times, or the row it names and the faults on its nodes that followed."""
    own = own_times(anomaly)
    if own:
        return [("the anomaly", t, t - BEFORE_NS, t + AFTER_NS) for t in own[:MAX_MOMENTS]]
    row = anomaly.get("index")
    if not isinstance(row, int) or row >= len(history):
        return []
    at = int(history["time_ns"].iat[row])
    found = [(f"row {row}", at, at - BEFORE_NS, at + AFTER_NS)]
    lacking = set(anomaly.get("nodes") or [])
    faults = nemesis_done(history)
    after = []
    for f, t, node in zip(faults["f"], faults["time_ns"], faults["node"]):
        hit = {n for n in named_nodes(node) if isinstance(n, str)}
        if t > at and f in BY_NAME and hit & lacking:
            after.append((-len(hit & lacking), int(t), f"{f} of {', '.join(sorted(hit))}"))
    # Those that hit the most of the nodes lacking it first (a power loss of all of them), in time order.
    for _, t, what in sorted(sorted(after)[: MAX_MOMENTS - 1], key=lambda fault: fault[1]):
        found.append((what, t, t - FAULT_BEFORE_NS, t + FAULT_AFTER_NS))
    return found


def render_log_lines(
    logs: dict[str, list[tuple[int, str]]],
    history: pd.DataFrame,
    anomaly: dict,
    number: int,
    shown: dict[tuple[str, int], int],
) -> str:
    """For each of the anomaly's moments, each node's lines around it; a
    moment an earlier anomaly's lines showed (`shown`: moment -> anomaly
    number, filled in here) links to them instead."""
    parts = []
    for what, at, start, end in moments(anomaly, history):
        heading = f"{html.escape(what)} at {at / 1e9:.3f} s"
        if (what, at) in shown:
            parts.append(
                f"<h4>{heading}: <a href='#logs-{shown[what, at]}'>under anomaly {shown[what, at] + 1}</a></h4>"
            )
            continue
        shown[what, at] = number
        parts.append(f"<h4>{heading}</h4>")
        for node, lines in logs.items():
            near = [(t, line) for t, line in lines if start <= t <= end]
            kept = sorted(sorted(near, key=lambda timed: abs(timed[0] - at))[:MAX_LINES])
            more = f", the {MAX_LINES} nearest of {len(near)}" if len(near) > MAX_LINES else ""
            text = "\n".join(f"{t / 1e9:9.3f} s  {line}" for t, line in kept) or "(nothing logged)"
            parts.append(
                f"<details open><summary>{html.escape(node)} ({len(kept)} lines{more})</summary>"
                f"<pre class='log'>{html.escape(text)}</pre></details>"
            )
    if not parts:
        return ""
    return f"<h3 id='logs-{number}'>The nodes' logs at anomaly {number + 1}</h3>" + "".join(parts)
