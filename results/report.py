"""`report.html` of a run: what people would rather look at than read. One
self-contained page (inline SVG, no network): the verdict, with each anomaly
linked to the history rows and the moment that prove it; a timeline of
operations per client process and of node states per node; latency and
throughput plots; nemesis windows shaded in all three.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

import targets
from checkers.availability import fault_windows
from checkers.pairing import pair
from checkers.progress import run_ended
from history.coverage import PARTITION_ROLES
from history.faults import AT_ONCE, BY_NAME, CATALOGUE, INSTANT, INSTANT_COLOUR, ON_MESSAGES, PARTITION, SLOWS
from history.observation import NEAR_ENTRIES
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, TEXT, frame, holds, nemesis_done
from results import log_view, run_options
from results.anomaly_view import render_focus
from results.recording import PARTIAL, load_history, read_table
from results.replica_view import MAX_SHOWN, render_copies
from results.wording import counted

WIDTH, LEFT, LANE = 1100, 110, 14
MAX_LANES = 60
MAX_OPS = 20_000
MAX_ROWS = 400
# The rows an anomaly is about (a linearizable prefix is context, not blame: it is not outlined).
ROW_FIELDS = ("index", "window")
MAX_FOCUSED = 3
ROLE_ORDER = (
    "leader",
    "follower",
    "candidate",
    "other",
    "majority",
    "all",
    *PARTITION_ROLES,
    "links",
)
TIME_FIELDS = ("time_ns", "times_ns")
OP_COLOURS = {"ok": "#2e9e4f", "fail": "#9aa3ad", "info": "#e08a1e", "open": "#e08a1e"}
STATE_COLOURS = {
    "leader": "#1f5fbf",
    "follower": "#8fb3e6",
    "candidate": "#d62f2f",
    "prospective": "#f2a33a",
    "unattached": "#d9d9d9",
    "resigned": "#7b4fa0",
}

STYLE = """
body { font: 14px/1.4 sans-serif; margin: 24px; color: #222; max-width: 1240px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.valid-true { color: #2e7d32; } .valid-false { color: #c62828; font-weight: bold; } .valid-unknown { color: #e08a1e; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
tr:target { background: #fff3b0; } .legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
svg text { font: 11px sans-serif; fill: #333; }
table.coverage td.hit { background: #e3f2e6; } table.coverage td.missed { background: #fdecea; }
table.coverage td.na { color: #bbb; }
"""


def write_report(
    run_dir: Path,
    history: pd.DataFrame | None = None,
    events: pd.DataFrame | None = None,
    drawing: Drawing | None = None,
) -> Path:
    """Render `run_dir/report.html` from its tables (read here unless given,
    as the checking that just read them gives them, with the drawing it made
    beside the checkers) and verdict.json."""
    run_dir = Path(run_dir)
    history = load_history(run_dir) if history is None else history
    if events is None:
        events_path = run_dir / "events.parquet"
        events = read_table(events_path, EVENTS_COLUMNS) if events_path.exists() else frame([], EVENTS_COLUMNS)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    meta = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    placed = [
        a for a in verdict.get("checkers", {}).get("committed-data-loss", {}).get("anomalies", []) if "offset" in a
    ]
    final = (
        read_table(run_dir / "final.parquet", FINAL_COLUMNS)
        if placed and (run_dir / "final.parquet").exists()
        else None
    )
    page = render(
        run_dir.name.removesuffix(PARTIAL),
        meta,
        history,
        events,
        verdict,
        drawing,
        final,
        _logs(run_dir, meta, verdict),
    )
    path = run_dir / "report.html"
    path.write_text(page)
    return path


def render(
    name: str,
    meta: dict,
    history: pd.DataFrame,
    events: pd.DataFrame,
    verdict: dict,
    drawing: Drawing | None = None,
    final: pd.DataFrame | None = None,
    logs: dict[str, list[tuple[int, str]]] | None = None,
) -> str:
    """The report page; `final` (the replicas' copies) where committed-data-loss
    named places, and `logs` (each node's timed lines) where there are anomalies."""
    drawing = drawing or Drawing(history, events)
    ops = drawing.ops
    anomalies = [(checker, a) for checker, r in verdict.get("checkers", {}).items() for a in r.get("anomalies", [])]
    marks = [(k, t) for k, (_, a) in enumerate(anomalies) for t in _times(a)]
    flagged = {i for _, a in anomalies for i in rows_named(a)}
    # A row an anomaly names, invocation or completion, belongs to one drawn operation.
    # (Only the operations the anomalies name: a map of every row costs seconds on a million operations.)
    named = ops[ops["invoke"].isin(flagged) | ops["index"].isin(flagged)]
    op_of = dict(zip(named["invoke"], named["invoke"])) | {
        c: i for c, i in zip(named["index"], named["invoke"]) if c >= 0
    }
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>splitbrain report: {html.escape(name)}</title>",
        f"<style>{STYLE}{log_view.STYLE}</style></head><body>",
        f"<h1>Run {html.escape(name)}: <span class='valid-{str(verdict.get('valid')).lower()}'>"
        f"valid: {html.escape(str(verdict.get('valid')))}</span></h1>",
        _config(meta),
        _verdict(verdict, anomalies, bool(logs)),
        *_close_ups(history, anomalies, final, logs),
        "<h2>Timeline</h2>",
        _legend(set(nemesis_done(history)["f"])),
        drawing.timeline(marks, {op_of[i] for i in flagged if i in op_of}),
        "<h2>Latency</h2>",
        drawing.latency,
        "<h2>Throughput (acknowledged operations per second)</h2>",
        drawing.throughput,
        coverage_table(verdict.get("coverage", {}).get("cells", [])),
        states_table(verdict.get("coverage", {})),
        _rows_table(history, flagged, op_of),
        "<script>document.body.dataset.rendered = document.querySelectorAll('svg .op').length;</script>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _close_ups(
    history: pd.DataFrame,
    anomalies: list[tuple[str, dict]],
    final: pd.DataFrame | None,
    logs: dict[str, list[tuple[int, str]]] | None,
) -> list[str]:
    """The first anomalies up close: a linearizability failure's operations,
    the replicas' copies where data was lost, and the nodes' log lines."""
    found = [render_focus(history, a, k) for k, (checker, a) in enumerate(anomalies) if checker == "linearizable"]
    found = found[:MAX_FOCUSED]
    if final is not None:
        lost = [
            (k, a) for k, (checker, a) in enumerate(anomalies) if checker == "committed-data-loss" and "offset" in a
        ]
        found += [render_copies(final, a, k) for k, a in lost[:MAX_SHOWN]]
    if logs:
        shown: dict[tuple[str, int], int] = {}  # the log lines' moments, each under the first anomaly it is one of
        found += [
            log_view.render_log_lines(logs, history, a, k, shown) for k, (_, a) in enumerate(anomalies[:MAX_SHOWN])
        ]
    return found


class _Scale:
    def __init__(self, span_ns: int) -> None:
        self.span_ns = span_ns

    def x(self, t_ns: float) -> float:
        return LEFT + (WIDTH - LEFT - 10) * min(max(t_ns, 0), self.span_ns) / self.span_ns

    def xs(self, t_ns: np.ndarray) -> list[float]:
        """`x` of many times at once."""
        return (LEFT + (WIDTH - LEFT - 10) * np.clip(t_ns, 0, self.span_ns) / self.span_ns).tolist()

    def axis(self, y: float) -> str:
        seconds = self.span_ns / 1e9
        step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 3600, 1e9) if seconds / s <= 12)
        ticks = [f"<line x1='{LEFT}' y1='{y}' x2='{WIDTH - 10}' y2='{y}' stroke='#999'/>"]
        for i in range(int(seconds / step) + 1):
            x = self.x(i * step * 1e9)
            ticks.append(
                f"<line x1='{x:.1f}' y1='{y}' x2='{x:.1f}' y2='{y + 4}' stroke='#999'/>"
                f"<text x='{x:.1f}' y='{y + 15}' text-anchor='middle'>{i * step:g} s</text>"
            )
        return "".join(ticks)


class Drawing:
    """What the report draws from the history and events alone: made beside
    the checkers (`results/checking.py`), since on a million operations it
    takes as long as one of them. The verdict adds only its marks and the
    outlines of the operations it names (`timeline`)."""

    def __init__(self, history: pd.DataFrame, events: pd.DataFrame, ops: Operations | None = None) -> None:
        """`ops`: the client operations as a run checked in pieces tallied them
        (its `history` then holds only some of its rows); else made here."""
        ops = ops or Operations.of(history, events)
        self.scale = ops.scale
        windows = fault_windows(history)
        self.ops, self.count = ops.head, ops.count
        transitions = events[(events["event"] == "transition") & (events["source"] == "log")].sort_values("time_ns")
        nodes = sorted(transitions["node"].dropna().unique())
        processes = sorted(self.ops["process"].unique())[:MAX_LANES]
        self.top, self.height = 16, max(len(nodes) + len(processes), 1) * LANE
        lanes = [f"node {n}" for n in nodes] + [f"process {p}" for p in processes]
        self.background = [_shade(self.scale, windows, 0, self.top + self.height)]
        self.background += [
            f"<text x='4' y='{self.top + lane * LANE + 10}'>{html.escape(label)}</text>"
            for lane, label in enumerate(lanes)
        ]
        self.background += _states(self.scale, transitions, nodes, self.top)
        lane_of = pd.Series(range(len(nodes), len(nodes) + len(processes)), index=processes, dtype="int64")
        self.shown = self.ops[self.ops["process"].isin(lane_of.index)].head(MAX_OPS)
        self.lane_y = self.top + lane_of.loc[self.shown["process"]].to_numpy() * LANE + 3
        self.bars = _bars(self.scale, self.shown, self.lane_y, np.zeros(len(self.shown), dtype=bool))
        self.instants = _instants(self.scale, instant_faults(history), self.top + self.height)
        self.latency = _latency(self.scale, self.ops, windows)
        self.throughput = _throughput(self.scale, ops.ok_by_bin, windows)

    def timeline(self, marks: list[tuple[int, int]], flagged: set[int]) -> str:
        """Operations per client process and node states per node, with the
        anomalies' moments (`marks`) and the operations they name outlined."""
        bars = list(self.bars)
        outlined = np.flatnonzero(self.shown["invoke"].isin(flagged).to_numpy())
        for k, bar in zip(
            outlined.tolist(),
            _bars(self.scale, self.shown.iloc[outlined], self.lane_y[outlined], np.ones(len(outlined), dtype=bool)),
        ):
            bars[k] = bar
        body = self.background + bars + self.instants
        for k, t in marks:
            x = self.scale.x(t)
            body.append(
                f"<a href='#anomaly-{k}'><line id='mark-{k}' x1='{x:.1f}' y1='0' x2='{x:.1f}' "
                f"y2='{self.top + self.height}' stroke='#c62828' stroke-width='2' stroke-dasharray='4 2'>"
                f"<title>anomaly {k + 1}</title></line></a>"
            )
        hidden = self.count - len(self.shown)
        note = f"<p>{hidden} operations not drawn.</p>" if hidden else ""
        total = self.top + self.height + 24
        return (
            f"<svg width='{WIDTH}' height='{total}' viewBox='0 0 {WIDTH} {total}'>{''.join(body)}"
            f"{self.scale.axis(self.top + self.height + 2)}</svg>{note}"
        )


class Operations:
    """What the drawing needs of the client operations: the first MAX_OPS by
    call time (`head`: invoke and completion times and rows, process, type,
    and the call's `f` and `value`), how many there are, and the ok answers
    counted in each of the throughput chart's bins. Added up operation by
    operation as they are paired (`add`), so a run checked in pieces
    (checkers/pieces.py) draws as one checked whole; `end` then adds the
    operations never answered, open until the run's end."""

    def __init__(self, end_ns: int, keep: int | None = MAX_OPS) -> None:
        self.keep = keep  # None: every operation (a run checked whole: anomalies far into it are outlined too)
        self.scale = _Scale(max(end_ns, 1))
        self.bins = max(1, min(200, math.ceil(self.scale.span_ns / 1e9)))
        self.ok_by_bin = np.zeros(self.bins, dtype="int64")
        self.head = pd.DataFrame(
            {
                "index": pd.Series(dtype="int64"),
                "invoke": pd.Series(dtype="int64"),
                "t0": pd.Series(dtype="int64"),
                "t1": pd.Series(dtype="int64"),
                "process": pd.Series(dtype="int64"),
                "type": pd.Series(dtype=TEXT),
                "latency_ms": pd.Series(dtype="float64"),
                "f": pd.Series(dtype=TEXT),
                "value": pd.Series(dtype=TEXT),
            }
        )
        self.count = 0

    @classmethod
    def of(cls, history: pd.DataFrame, events: pd.DataFrame) -> Operations:
        """From the whole history, drawn to the run's end (`run_ended`: its
        last row, or the end of its lull, where the nodes were watched)."""
        ops = cls(run_ended(int(history["time_ns"].max()) if len(history) else 0, events), keep=None)
        pairs = pair(history)
        ops.add(history, pairs.call, pairs.done)
        ops.end(history, pairs.pending)
        return ops

    def add(self, history: pd.DataFrame, call: np.ndarray, done: np.ndarray) -> None:
        """The operations of `history` called at rows `call` and answered at `done` (positions)."""
        t1 = history["time_ns"].to_numpy(dtype="int64")[done]
        ok = t1[holds(history["type"], ["ok"])[done]]
        width_ns = self.scale.span_ns / self.bins
        self.ok_by_bin += np.bincount((ok // width_ns).clip(max=self.bins - 1).astype("int64"), minlength=self.bins)[
            : self.bins
        ]
        self._keep(history, call, t1, history["index"].to_numpy(dtype="int64")[done], history["type"].take(done))

    def end(self, history: pd.DataFrame, pending: np.ndarray) -> None:
        """The operations called at rows `pending` and never answered."""
        t1 = np.full(len(pending), self.scale.span_ns, dtype="int64")
        self._keep(
            history,
            pending,
            t1,
            np.full(len(pending), -1, dtype="int64"),
            pd.Series("open", index=range(len(pending)), dtype=TEXT),
        )

    def _keep(
        self, history: pd.DataFrame, call: np.ndarray, t1: np.ndarray, index: np.ndarray, kinds: pd.Series
    ) -> None:
        self.count += len(call)
        t0 = history["time_ns"].to_numpy(dtype="int64")[call]
        if (
            self.keep is not None
            and len(self.head) >= self.keep
            and (not len(t0) or t0.min() >= self.head["t0"].iat[-1])
        ):
            return
        ops = pd.DataFrame(
            {
                "index": index,
                "invoke": history["index"].to_numpy(dtype="int64")[call],
                "t0": t0,
                "t1": t1,
                "process": history["process"].to_numpy(dtype="int64")[call],
                "type": kinds.to_numpy(),
                "latency_ms": (t1 - t0) / 1e6,
                "f": history["f"].take(call).to_numpy(),
                "value": history["value"].take(call).to_numpy(),
            }
        ).astype(self.head.dtypes.to_dict())
        both = pd.concat([self.head, ops], ignore_index=True) if len(self.head) else ops
        self.head = both.sort_values("t0", kind="stable").iloc[: self.keep].reset_index(drop=True)


def rows_named(anomaly: dict) -> list[int]:
    """The history rows an anomaly is about (the report lists them; a run checked in pieces reads them back)."""
    found = []
    for field in ROW_FIELDS:
        value = anomaly.get(field)
        found += [value] if isinstance(value, int) else [v for v in value or [] if isinstance(v, int)]
    return found


def _logs(run_dir: Path, meta: dict, verdict: dict) -> dict[str, list[tuple[int, str]]] | None:
    """Each node's log on the history's clock, for a run with anomalies whose
    run.json says when that clock started (runs recorded before it did, and
    imported histories, have no logs shown)."""
    anomalous = any(r.get("anomalies") for r in verdict.get("checkers", {}).values())
    if not anomalous or not isinstance(meta.get("wall_start_ns"), int) or meta.get("target") not in targets.names():
        return None
    target = targets.get(meta["target"])
    return log_view.read_logs(run_dir, target.log_file, target.line_wall_ns, meta["wall_start_ns"]) or None


def _times(anomaly: dict) -> list[int]:
    """Where the timeline marks an anomaly: its own moments, and its leadership claims'."""
    claims = [c["time_ns"] for c in anomaly.get("claims") or [] if isinstance(c.get("time_ns"), int)]
    return log_view.own_times(anomaly) + claims


def _config(meta: dict) -> str:
    config = meta.get("config") or {}
    shown = {
        k: config[k]
        for k in (
            "backend",
            "nodes",
            "workload",
            "nemesis",
            "topologies",
            "time_limit_s",
            "lull_s",
            "rate",
            "concurrency",
        )
        if k in config
    }
    shown["options"] = run_options.recorded(meta)
    if "source" in meta:
        shown = {
            "source": meta["source"].get("file"),
            "format": meta["source"].get("format"),
            "model": meta.get("model"),
        }
    shown["seed"] = meta.get("seed")
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(json.dumps(v))}</td></tr>" for k, v in shown.items()
    )
    return f"<table>{cells}</table>"


def _verdict(verdict: dict, anomalies: list[tuple[str, dict]], logs: bool) -> str:
    lines = ["<h2>Verdict</h2><table><tr><th>checker</th><th>valid</th><th>anomalies</th></tr>"]
    for name, result in verdict.get("checkers", {}).items():
        valid = str(result.get("valid")).lower()
        count = result.get("stats", {}).get("anomalies", len(result.get("anomalies", [])))
        lines.append(f"<tr><td>{html.escape(name)}</td><td class='valid-{valid}'>{valid}</td><td>{count}</td></tr>")
    lines.append("</table>")
    lines.append(_availability(verdict.get("checkers", {}).get("availability")))
    if anomalies:
        lines.append("<ol>")
        for k, (checker, anomaly) in enumerate(anomalies):
            # The row the anomaly is about first, then a few around it; the view up close has the rest.
            rows = list(dict.fromkeys(rows_named(anomaly)))
            links = [f"<a href='#row-{i}'>row {i}</a>" for i in rows[:6]]
            if checker == "linearizable":
                links.append(f"<a href='#focus-{k}'>up close</a>")
            elif len(rows) > 6:
                links.append(f"(and {len(rows) - 6} more rows below)")
            links += [f"<a href='#mark-{k}'>at {t / 1e9:.3f} s</a>" for t in _times(anomaly)[:5]]
            links += [f"<a href='#logs-{k}'>the nodes' logs</a>"] if logs and k < MAX_SHOWN else []
            lines.append(
                f"<li id='anomaly-{k}'><b>{html.escape(checker)}</b>: "
                f"{html.escape(anomaly.get('summary', anomaly.get('kind', '')))} {' '.join(links)}</li>"
            )
        lines.append("</ol>")
    return "\n".join(lines)


def _availability(result: dict | None) -> str:
    """The liveness figures a gate reads, in a sentence: elections, time
    with no leader, disruptive elections, and the longest time the cluster
    stood stuck (checkers/availability.py), with when and who was up."""
    stats = (result or {}).get("stats") or {}
    if "leader_elections" not in stats:
        return ""
    parts = [
        f"{stats['leader_elections']} leader elections",
        f"{stats['leaderless_ms']:.0f} ms with no leader",
        f"{stats.get('disruptive_elections', 0)} disruptive elections",
    ]
    stuck = stats.get("stuck") or []
    if stuck:
        span = stuck[0]
        parts.append(
            f"stuck {span['ms']:.0f} ms at the longest, from {span['time_ns'] / 1e9:.3f} s: "
            f"{', '.join(span['nodes'])} up and hearing one another, and none leading"
        )
    else:
        parts.append(
            "never stuck" if stats.get("stuck_ms") is not None else "stuck not measured (the voter set changed)"
        )
    return f"<p class='availability'>Availability: {html.escape('; '.join(parts))}.</p>"


def roles_for(fault: str) -> tuple[str, ...]:
    """The roles a fault of this kind can hit (checkers/coverage.py)."""
    if fault == PARTITION:
        return PARTITION_ROLES
    if fault in SLOWS and fault not in ON_MESSAGES:  # every link slowed or thinned
        return ("links",)
    many = AT_ONCE if fault in BY_NAME and BY_NAME[fault].at_once else ()
    return ("leader", "follower", "candidate", "other", *many)


def states_table(covered: dict, shown: int = 20) -> str:
    """The abstract states reached (checkers/abstract_state.py), the most entered first."""
    states = covered.get("states") or {}
    if not states:
        return ""
    rows = "".join(
        f"<tr><td>{times}</td><td><code>{html.escape(state)}</code></td></tr>"
        for state, times in sorted(states.items(), key=lambda kv: (-kv[1], kv[0]))[:shown]
    )
    return (
        f"<h2>States</h2><p>{counted(len(states), 'abstract state')} reached, "
        f"{counted(len(covered.get('transitions') or []), 'move')} between them; the {min(shown, len(states))} "
        "entered most often below. A node is its role, then how far it is behind the newest epoch (0, 1, 2 or more), "
        "behind the longest log, and ahead of its high watermark (0: level; +: by more than "
        f"{NEAR_ENTRIES} entries; ?: not reported), or the fault that holds it down; after | the faults in force.</p>"
        f"<table><tr><th>entered</th><th>state</th></tr>{rows}</table>"
    )


def coverage_table(cells: list[dict], what: str = "this run's faults") -> str:
    """Fault kind x the role of what it hit, each cell the times it was tried
    (its title: what else was going on); empty cells are what was never tried."""
    if not cells:
        return ""
    faults = sorted({c["fault"] for c in cells})
    roles = [r for r in ROLE_ORDER if any(r in roles_for(f) for f in faults)]
    rows = []
    for fault in faults:
        tds = []
        for role in roles:
            if role not in roles_for(fault):
                tds.append("<td class='na'>–</td>")
                continue
            mine = [c for c in cells if c["fault"] == fault and c["role"] == role]
            count = sum(c["count"] for c in mine)
            title = "; ".join(f"{c['with']}: {c['count']}" for c in mine)
            tds.append(f"<td title='{html.escape(title)}' class='{'hit' if count else 'missed'}'>{count or ''}</td>")
        rows.append(f"<tr><th>{html.escape(fault)}</th>{''.join(tds)}</tr>")
    head = "".join(f"<th>{html.escape(r)}</th>" for r in roles)
    return (
        f"<h2>Coverage</h2><p>What {html.escape(what)} tried: {counted(len(cells), 'cell')} of (fault, role hit, what else "
        "was going on); hover a count for the last. An empty cell was never tried.</p>"
        f"<table class='coverage'><tr><th>fault</th>{head}</tr>{''.join(rows)}</table>"
    )


def _legend(shown: set[str]) -> str:
    """What the colours mean: the operations', the states', and those of the faults `shown`."""
    items = [(c, f"op {t}") for t, c in OP_COLOURS.items() if t != "open"]
    items += [(c, s) for s, c in STATE_COLOURS.items()]
    items += [(f.colour, f"{f.name} (shaded)") for f in CATALOGUE if f.name in shown and not f.instant]
    instants = [f.name for f in CATALOGUE if f.name in shown and f.instant]
    if instants:
        items.append((INSTANT_COLOUR, f"{', '.join(instants)} (a line at its moment)"))
    items.append(("#c62828", "outlined: an operation an anomaly names (dashed line: its moment)"))
    spans = "".join(f"<span><i class='swatch' style='background:{c}'></i>{html.escape(t)}</span>" for c, t in items)
    return f"<div class='legend'>{spans}</div>"


def _shade(scale: _Scale, windows: pd.DataFrame, top: float, height: float) -> str:
    shades = []
    for w in windows.itertuples(index=False):
        x0, x1 = scale.x(w.start_ns), scale.x(w.end_ns)
        colour = BY_NAME[w.f].colour if w.f in BY_NAME else "#555555"
        shades.append(
            f"<rect class='fault' x='{x0:.1f}' y='{top}' width='{max(x1 - x0, 1):.1f}' height='{height}' "
            f"fill='{colour}' fill-opacity='0.12'><title>{html.escape(str(w.f))} "
            f"{html.escape(str(w.node or ''))} {w.start_ns / 1e9:.2f}-{w.end_ns / 1e9:.2f} s</title></rect>"
            f"<text x='{x0 + 2:.1f}' y='{top + 10}' fill='{colour}'>{html.escape(str(w.f))}</text>"
        )
    return "".join(shades)


def instant_faults(history: pd.DataFrame) -> pd.DataFrame:
    """Faults with no window (a bounce, a restart, a voter change): their moment and what they touched."""
    done = nemesis_done(history)
    return done[done["f"].isin(INSTANT)][["time_ns", "f", "node"]]


def _instants(scale, instants: pd.DataFrame, bottom: float) -> list[str]:
    """A line down the timeline and a mark on top at each instant fault, so the
    elections a bounce causes do not look unexplained."""
    drawn = []
    for row in instants.itertuples(index=False):
        x = scale.x(row.time_ns)
        title = f"{html.escape(str(row.f))} {html.escape(str(row.node or ''))} at {row.time_ns / 1e9:.2f} s"
        drawn.append(
            f"<g class='instant'><line x1='{x:.1f}' y1='0' x2='{x:.1f}' y2='{bottom}' stroke='{INSTANT_COLOUR}' "
            f"stroke-width='1.5'/><polygon points='{x - 5:.1f},0 {x + 5:.1f},0 {x:.1f},8' fill='{INSTANT_COLOUR}'/>"
            f"<title>{title}</title></g>"
        )
    return drawn


def _states(scale: _Scale, transitions: pd.DataFrame, nodes: list[str], top: int) -> list[str]:
    """Each node's states, one lane a node, from its logged transitions."""
    drawn = []
    for lane, node in enumerate(nodes):
        mine = transitions[transitions["node"] == node]
        times = mine["time_ns"].tolist() + [scale.span_ns]
        for (state, t0), t1 in zip(zip(mine["state"], mine["time_ns"]), times[1:]):
            x0, x1 = scale.x(t0), scale.x(t1)
            drawn.append(
                f"<rect x='{x0:.1f}' y='{top + lane * LANE + 2}' width='{max(x1 - x0, 0.5):.1f}' height='{LANE - 4}'"
                f" fill='{STATE_COLOURS.get(state, '#bbb')}'><title>{html.escape(node)}: {html.escape(str(state))}"
                f" from {t0 / 1e9:.3f} s</title></rect>"
            )
    return drawn


def _escaped(text: pd.Series) -> list[str]:
    """`html.escape(str(v))` of each value, on the whole column at once."""
    text = text.astype(TEXT).fillna(str(pd.NA))
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;")):
        text = text.str.replace(raw, entity, regex=False)
    return text.tolist()


def _bars(scale: _Scale, ops: pd.DataFrame, y: np.ndarray, outlined: np.ndarray) -> list[str]:
    """Each operation's bar on its process's lane (`y`), built column by column
    (20,000 of them one by one took most of the report's time); an outlined one
    links to its row in the table below."""
    x0, x1 = scale.xs(ops["t0"].to_numpy()), scale.xs(ops["t1"].to_numpy())
    fills = [OP_COLOURS.get(t, "#bbb") for t in ops["type"].tolist()]
    bars = []
    for invoke, a, b, top, fill, f, value, kind, ms, outline in zip(
        ops["invoke"].tolist(),
        x0,
        x1,
        y.tolist(),
        fills,
        _escaped(ops["f"]),
        _escaped(ops["value"]),
        ops["type"].tolist(),
        ops["latency_ms"].tolist(),
        outlined.tolist(),
    ):
        stroke = " stroke='#c62828' stroke-width='2'" if outline else ""
        bar = (
            f"<rect class='op' id='op-{invoke}' x='{a:.1f}' y='{top}' width='{max(b - a, 1):.1f}' "
            f"height='{LANE - 6}' fill='{fill}'{stroke}><title>row {invoke}: {f} {value} -> {kind} "
            f"({ms:.1f} ms)</title></rect>"
        )
        bars.append(f"<a href='#row-{invoke}'>{bar}</a>" if outline else bar)
    return bars


def _latency(scale, ops, windows) -> str:
    done = ops[ops["type"] != "open"].head(MAX_OPS)
    height = 220
    if done.empty:
        return "<p>No completed operations.</p>"
    low, high = math.log10(max(done["latency_ms"].min(), 0.01)), math.log10(max(done["latency_ms"].max(), 0.02))
    high = max(high, low + 1)

    def y(ms):
        return 10 + (height - 20) * (1 - (np.log10(np.maximum(ms, 0.01)) - low) / (high - low))

    body = [_shade(scale, windows, 0, height)]
    for decade in range(math.floor(low), math.ceil(high) + 1):
        if low <= decade <= high:
            body.append(
                f"<line x1='{LEFT}' y1='{y(10**decade):.1f}' x2='{WIDTH - 10}' y2='{y(10**decade):.1f}' "
                f"stroke='#eee'/><text x='{LEFT - 6}' y='{y(10**decade) + 4:.1f}' text-anchor='end'>"
                f"{10**decade:g} ms</text>"
            )
    fills = [OP_COLOURS.get(t, "#bbb") for t in done["type"].tolist()]
    body += [
        f"<circle cx='{x:.1f}' cy='{v:.1f}' r='2' fill='{fill}'/>"
        for x, v, fill in zip(scale.xs(done["t1"].to_numpy()), y(done["latency_ms"].to_numpy()).tolist(), fills)
    ]
    return f"<svg width='{WIDTH}' height='{height + 24}'>{''.join(body)}{scale.axis(height + 2)}</svg>"


def _throughput(scale, ok_by_bin, windows) -> str:
    height = 160
    bins = len(ok_by_bin)
    width_ns = scale.span_ns / bins
    rates = [count / (width_ns / 1e9) for count in ok_by_bin.tolist()]
    peak = max(max(rates), 1)
    points = " ".join(
        f"{scale.x((i + 0.5) * width_ns):.1f},{10 + (height - 20) * (1 - r / peak):.1f}" for i, r in enumerate(rates)
    )
    return (
        f"<svg width='{WIDTH}' height='{height + 24}'>{_shade(scale, windows, 0, height)}"
        f"<text x='{LEFT - 6}' y='14' text-anchor='end'>{peak:.0f}/s</text>"
        f"<polyline fill='none' stroke='#1f5fbf' stroke-width='1.5' points='{points}'/>"
        f"{scale.axis(height + 2)}</svg>"
    )


def _rows_table(history: pd.DataFrame, flagged: set[int], op_of: dict[int, int]) -> str:
    if not flagged:
        return ""
    # Each named operation's invocation and its completion, whose value is what it returned.
    invokes = flagged | {op_of[i] for i in flagged if i in op_of}
    wanted = sorted(invokes | {row for row, invoke in op_of.items() if invoke in invokes})[:MAX_ROWS]
    rows = history[history["index"].isin(wanted)]
    columns = ["index", "time_ns", "process", "type", "f", "key", "value", "node", "error"]
    head = "".join(f"<th>{c}</th>" for c in columns)
    body = []
    for row in rows[columns].itertuples(index=False):
        cells = "".join(f"<td>{html.escape('' if pd.isna(v) else str(v))}</td>" for v in row)
        link = f"<a href='#op-{op_of[row.index]}'>timeline</a>" if row.index in op_of else ""
        body.append(f"<tr id='row-{row.index}'>{cells}<td>{link}</td></tr>")
    return f"<h2>History rows named by anomalies</h2><table><tr>{head}<th></th></tr>{''.join(body)}</table>"
