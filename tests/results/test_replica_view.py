"""A lost or divergent record's report shows each replica's own copy around
its place, and says which replica holds nothing at all (its stream gone)."""

from __future__ import annotations

import json

from checkers.data_loss import committed_data_loss
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame
from results.replica_view import render_copies
from results.report import write_report


def appends(values: list[str]) -> list[dict]:
    rows = []
    for offset, value in enumerate(values):
        rows += [
            {"index": 2 * offset, "time_ns": 2 * offset, "process": 0, "type": "invoke", "f": "append", "value": value},
            {
                "index": 2 * offset + 1,
                "time_ns": 2 * offset + 1,
                "process": 0,
                "type": "ok",
                "f": "append",
                "value": value,
                "offset": offset,
            },
        ]
    return rows


def test_the_copies_around_a_lost_append_name_what_each_node_holds(tmp_path):
    history = frame(appends(["a", "b", "c", "d", "e"]), HISTORY_COLUMNS)
    final = frame(
        [
            *({"node": "n1", "offset": o, "value": v} for o, v in enumerate("abcde")),
            *({"node": "n2", "offset": o, "value": v} for o, v in enumerate("abXde")),
            {"node": "n3"},
        ],
        FINAL_COLUMNS,
    )
    verdict = committed_data_loss(history, final, frame([], EVENTS_COLUMNS))
    lost = next(a for a in verdict["anomalies"] if a["kind"] == "lost-acknowledged-append")
    page = render_copies(final, lost, 0)
    assert lost["offset"] == 0 and "n3" in lost["nodes"]
    assert page.count("<i>holds nothing</i>") == 4 and "Each replica's copy around offset 0" in page
    divergent = next(
        a for a in verdict["anomalies"] if a.get("offset") == 2 and a["kind"] != "lost-acknowledged-append"
    )
    rows = render_copies(final, divergent, 1).split("<tr")
    marked = next(row for row in rows if "fdecea" in row)
    assert ">2</th><td>c</td><td>X</td><td><i>holds nothing</i></td>" in marked
    # Written into the run's report, from its final table.
    history.to_parquet(tmp_path / "history.parquet", index=False)
    final.to_parquet(tmp_path / "final.parquet", index=False)
    (tmp_path / "verdict.json").write_text(json.dumps({"valid": False, "checkers": {"committed-data-loss": verdict}}))
    assert "Each replica's copy around offset" in write_report(tmp_path).read_text()
