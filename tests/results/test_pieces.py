"""A run checked in pieces (results/pieces.py: its history a piece at a time,
its final logs a window of offsets at a time) has the verdict of the same
run checked whole: on made-up runs with each kind of lost, duplicated,
resurrected and reordered append placed across the pieces' and windows'
edges, and on real runs of the reference quorum, correct and with a
planted bug. Only the counts of what the checkers read differ (a piece's
checkers read what the pieces left, not every row), and so the longest
linearizable prefix a violation names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame
from results.checking import check_and_record, check_run, run_meta
from results.pieces import check_in_pieces, in_pieces

NODES = ["n1", "n2", "n3"]
APPENDS = 600
CLIENTS = 4
# Counts of the rows a checker read, which a piece's checker reads fewer of.
READ_COUNTS = {"linearizable": {"operations"}, "single-leader-per-epoch": {"claims"}}


def made_up_run(run_dir: Path, change=lambda history, final: None) -> Path:
    """A valid run of APPENDS unkeyed appends by CLIENTS clients, one at a
    time each, acknowledged at offsets in call order, every node holding
    them all; `change` edits its history and final rows first."""
    history, final = [], []
    for op in range(APPENDS):
        call, process = op * 1000, op % CLIENTS
        history.append({"time_ns": call, "process": process, "type": "invoke", "f": "append", "value": f'"{op}"'})
        history.append(
            {
                "time_ns": call + 500,
                "process": process,
                "type": "ok",
                "f": "append",
                "value": f'"{op}"',
                "node": "n1",
                "epoch": 1,
                "leader": "n1",
                "offset": op,
            }
        )
    for node in NODES:
        final += [{"node": node, "offset": op, "epoch": 1, "value": f'"{op}"'} for op in range(APPENDS)]
    change(history, final)
    history.sort(key=lambda row: row["time_ns"])
    for index, row in enumerate(history):
        row["index"] = index
    run_dir.mkdir()
    frame(history, HISTORY_COLUMNS).to_parquet(run_dir / "history.parquet", index=False, row_group_size=150)
    frame(final, FINAL_COLUMNS).to_parquet(run_dir / "final.parquet", index=False, row_group_size=150)
    events = [
        {
            "time_ns": 0,
            "node": "n1",
            "event": "transition",
            "state": "leader",
            "epoch": 1,
            "leader": "n1",
            "source": "log",
        }
    ]
    frame(events, EVENTS_COLUMNS).to_parquet(run_dir / "events.parquet", index=False)
    (run_dir / "run.json").write_text(json.dumps({"target": "kraft", "config": {"workload": "append"}}))
    return run_dir


def lose(history, final):
    """n2 lacks offset 430 (a window of 100 offsets, a piece of 170 rows: inside both), n3 holds another value at 77."""
    final[:] = [r for r in final if not (r["node"] == "n2" and r["offset"] == 430)]
    next(r for r in final if r["node"] == "n3" and r["offset"] == 77)["value"] = '"other"'


def duplicate_across_windows(history, final):
    """n2 holds append 10 again at offset 550, windows away, where append 550 was acknowledged."""
    next(r for r in final if r["node"] == "n2" and r["offset"] == 550)["value"] = '"10"'


def resurrect(history, final):
    """Append 333 failed definitely, yet every node holds it."""
    answer = next(r for r in history if r["type"] == "ok" and r["value"] == '"333"')
    answer.update(type="fail", offset=None, epoch=None, leader=None, node=None)


def cut_short(history, final):
    """n3's log ends at offset 299: every later acknowledged append is lost on it."""
    final[:] = [r for r in final if not (r["node"] == "n3" and r["offset"] >= 300)]


def reorder(history, final):
    """Append 401 is called after append 400 was answered, yet takes a lower offset (the log went back)."""
    for row in history:
        if row["type"] == "ok" and row["value"] in ('"400"', '"401"'):
            row["offset"] = 401 if row["value"] == '"400"' else 399


def no_final_logs(history, final):
    """No node's log was read at the end (no leader was elected to read them from): the final table has no rows."""
    final.clear()


def comparable(verdict: dict) -> dict:
    checkers = {}
    for name, result in verdict["checkers"].items():
        stats = {k: v for k, v in result.get("stats", {}).items() if k not in READ_COUNTS.get(name, ())}
        anomalies = [
            {k: v for k, v in a.items() if k != "linearized_prefix"}
            | {"summary": a.get("summary", "").split("; longest")[0]}
            for a in result.get("anomalies", [])
        ]
        checkers[name] = {**result, "stats": stats, "anomalies": anomalies}
    kept = {k: v for k, v in verdict.items() if k not in ("checkers", "stats")}
    return {**kept, "checkers": checkers}


@pytest.mark.parametrize(
    "change", [lambda h, f: None, lose, duplicate_across_windows, resurrect, cut_short, reorder, no_final_logs]
)
def test_a_made_up_run_has_the_same_verdict_in_pieces_as_whole(tmp_path, change):
    run_dir = made_up_run(tmp_path / "run", change)
    whole = check_run(run_dir)
    pieces = check_in_pieces(run_dir, run_meta(run_dir).get("capabilities"), 30.0, piece_rows=170).verdict
    assert pieces["stats"]["pieces"] == 8 and pieces["stats"]["history_rows"] == whole["stats"]["history_rows"]
    assert comparable(pieces) == comparable(whole)
    if change.__name__ != "<lambda>":
        assert whole["valid"] is not True, whole


def test_a_long_run_is_checked_in_pieces_by_the_command(tmp_path):
    run_dir = made_up_run(tmp_path / "run", lose)
    (run_dir / "history.jsonl").write_text("")  # as a run leaves it beside history.parquet, which is read first
    assert in_pieces(run_dir, piece_rows=1000) and not in_pieces(run_dir, piece_rows=10_000)
    whole = check_and_record(run_dir)
    page_whole = (run_dir / "report.html").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", str(run_dir), "--quiet", "--piece-rows", "170"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["stats"]["pieces"] == 8 and comparable(verdict) == comparable(whole)
    page = (run_dir / "report.html").read_text()
    # The drawing is the same: every operation drawn, the same throughput.
    assert page.count("class='op") == page_whole.count("class='op") > 0
    assert page.split("<h2>Throughput")[1][:2000] == page_whole.split("<h2>Throughput")[1][:2000]


@pytest.mark.slow
@pytest.mark.parametrize("bug", [None, "ack-before-commit"])
def test_a_real_run_has_the_same_verdict_in_pieces_as_whole(tmp_path, bug):
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--quiet",
        "--results",
        str(tmp_path),
        "--seed",
        "3",
        "--time-limit",
        "12",
        "--rate",
        "200",
        "--concurrency",
        "8",
    ]
    done = subprocess.run(command + (["--bug", bug] if bug else []), capture_output=True, text=True, timeout=300)
    assert done.returncode == (1 if bug else 0), done.stdout + done.stderr
    [run_dir] = [path for path in tmp_path.iterdir() if path.is_dir()]
    rows = len(pd.read_parquet(run_dir / "history.parquet", columns=["index"]))
    assert rows > 700  # (a few hundred operations at least, however loaded the machine: 7 pieces of 100 rows or more)
    whole = check_run(run_dir)
    pieces = check_in_pieces(run_dir, run_meta(run_dir).get("capabilities"), 30.0, piece_rows=rows // 7).verdict
    assert pieces["stats"]["pieces"] >= 7
    assert comparable(pieces) == comparable(whole)
    assert whole["valid"] is (False if bug else True)
    np.testing.assert_equal(pieces["checkers"]["availability"], whole["checkers"]["availability"])
