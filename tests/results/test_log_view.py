"""An anomaly's report shows the nodes' own log lines of its moments: the
lines each target's log stamps are placed on the history's clock through
run.json's `wall_start_ns`; a lost write's moments are its acknowledgement
and the faults that hit the nodes lacking it afterwards, the one that hit
the most of them first; a moment shown once is linked to after that."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import targets
from history.schema import HISTORY_COLUMNS, frame
from results.log_view import moments, read_logs
from results.report import write_report

NATS_FIXTURE = Path(__file__).parents[1] / "targets" / "nats" / "fixtures" / "n1.log"
ETCD_FIXTURE = Path(__file__).parents[1] / "data" / "etcd" / "n2-leader-killed.log"
S = 1_000_000_000
WALL_START = 1_795_000_000 * S  # 2026-11-18T11:06:40Z


def history() -> object:
    """An append acknowledged at 2 s; then a kill of n1 (3 s), every node's
    power lost (5 s), and n2 killed (7 s); a kill of n3 came before it (1 s)."""
    faults = [(1, "kill", ["n3"]), (3, "kill", ["n1"]), (5, "lose-unfsynced", ["n1", "n2", "n3"]), (7, "kill", ["n2"])]
    rows = [
        {"process": 0, "type": "invoke", "f": "append", "value": "a", "time_ns": 2 * S - 1000},
        {"process": 0, "type": "ok", "f": "append", "value": "a", "offset": 0, "time_ns": 2 * S},
    ]
    for t, f, nodes in faults:
        rows += [
            {"process": -1, "type": "invoke", "f": f, "time_ns": t * S - 1000},
            {"process": -1, "type": "ok", "f": f, "node": json.dumps(nodes), "time_ns": t * S},
        ]
    rows.sort(key=lambda row: row["time_ns"])
    return frame([{"index": i, **row} for i, row in enumerate(rows)], HISTORY_COLUMNS)


def test_a_lost_writes_moments_are_its_ack_and_the_faults_on_the_nodes_lacking_it():
    table = history()
    ack = int(table.index[(table["f"] == "append") & (table["type"] == "ok")][0])
    found = [(what, at // S) for what, at, _, _ in moments({"index": ack, "nodes": ["n1", "n2"]}, table)]
    # The power loss of all (2 of the 2 lacking it) is kept before the kills of one; the kill of n3 hit neither.
    assert found == [(f"row {ack}", 2), ("kill of n1", 3), ("lose-unfsynced of n1, n2, n3", 5), ("kill of n2", 7)]
    # An anomaly with times of its own is shown at them alone.
    assert [(what, at) for what, at, _, _ in moments({"time_ns": 4 * S, "index": ack}, table)] == [
        ("the anomaly", 4 * S)
    ]


def test_each_targets_log_is_placed_on_the_history_clock(tmp_path):
    """Every event a target reads from its log falls at the time of one of
    its lines, as `line_wall_ns` places them (a line without a stamp takes
    the one before it)."""
    kraft_log = tmp_path / "kraft" / "nodes" / "n1" / "events.jsonl"
    kraft_log.parent.mkdir(parents=True)
    kraft_log.write_text(
        "\n".join(
            json.dumps(
                {"ts_ns": WALL_START + k * S, "event": "transition", "node": "n1", "state": "follower", "epoch": k}
            )
            for k in range(3)
        )
        + "\n"
    )
    for name, log in (("nats", NATS_FIXTURE), ("etcd", ETCD_FIXTURE), ("kraft", kraft_log)):
        target = targets.get(name)
        run = tmp_path / name
        (run / "nodes" / "n1").mkdir(parents=True, exist_ok=True)
        (run / "nodes" / "n1" / target.log_file).write_text(log.read_text() + "a line with no stamp\n")
        [lines] = read_logs(run, target.log_file, target.line_wall_ns, WALL_START).values()
        events = target.log_events(log, lambda wall: wall - WALL_START)
        assert events and {e["time_ns"] for e in events} <= {t for t, _ in lines}, name
        assert lines[-1] == (lines[-2][0], "a line with no stamp")


@pytest.mark.parametrize("recorded", [True, False])
def test_the_report_shows_each_nodes_lines_of_the_moments(tmp_path, recorded):
    """nats-server lines: those within the moments' windows are shown, one
    moment once (the second anomaly links to the first's); a run.json
    without `wall_start_ns` (recorded before it was) shows no lines."""
    table = history()
    table.to_parquet(tmp_path / "history.parquet", index=False)
    ack = int(table.index[(table["f"] == "append") & (table["type"] == "ok")][0])
    lost = [
        {
            "kind": "lost-acknowledged-append",
            "index": ack,
            "offset": 0,
            "value": "a",
            "nodes": ["n1"],
            "summary": f"append a acknowledged at offset 0 (row {ack}) is not on n1",
        }
    ]
    verdict = {"valid": False, "checkers": {"committed-data-loss": {"valid": False, "anomalies": lost * 2}}}
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    meta = {"target": "nats", "config": {}} | ({"wall_start_ns": WALL_START} if recorded else {})
    (tmp_path / "run.json").write_text(json.dumps(meta))
    for node in ("n1", "n2"):
        (tmp_path / "nodes" / node).mkdir(parents=True)
        stamp = lambda s: f"[7] 2026/11/18 11:06:{40 + s:02d}.000000"  # noqa: E731 (the history's second s)
        (tmp_path / "nodes" / node / "node.log").write_text(
            f"{stamp(-5)} [INF] {node} starting\n{stamp(2)} [DBG] {node} stored the append\n"
            f"{stamp(3)} [WRN] {node} was killed\n{stamp(12)} [INF] {node} much later\n"
        )
    page = write_report(tmp_path).read_text()
    if not recorded:
        assert "stored the append" not in page and "the nodes&#x27; logs" not in page
        return
    assert "n1 stored the append" in page and "n2 stored the append" in page and "n1 was killed" in page
    assert "much later" not in page and "n1 starting" not in page
    assert page.count("<h4>kill of n1 at 3.000 s</h4>") == 1 and "under anomaly 1</a>" in page
    assert "<a href='#logs-0'>the nodes' logs</a>" in page
