"""The live checks' history (harness/live.py): a look reads the whole lines
written to history.jsonl since the last look (a line being written waits
for the next one) and judges them with the rows the last look left
(checkers/carried.py); nothing else of the history is held."""

from __future__ import annotations

import json

import pandas as pd

from checkers.carried import left_for_later
from harness.live import Live
from history.schema import HISTORY_COLUMNS, frame
from results.recording import HistoryRecorder


def test_a_look_judges_the_rows_left_and_the_lines_written_since(tmp_path):
    recorder = HistoryRecorder(tmp_path)
    live = Live(recorder, [], lambda: [], None, stop=False)
    recorded = []
    for look in range(3):
        for i in range(5):
            recorded.append(recorder.record(i, "invoke", "append", value=10 * look + i, node="n1"))
            ok = dict(value=10 * look + i, node="n1", epoch=1, leader="n1", offset=10 * look + i)
            recorded.append(recorder.record(i, "ok", "append", **ok))
        recorded.append(recorder.record(-1, "info", "kill", value={"target": "leader"}, error="timeout"))
        left = live.left
        assert live.look() == []
        judged = pd.concat([left, frame(recorded[-11:], HISTORY_COLUMNS)], ignore_index=True)
        pd.testing.assert_frame_equal(live.left, left_for_later(judged))
    assert live.rows == 33 and live.last["rows"] == 33 and live.last["linearizable"] is True
    assert recorder.tally == {
        "operations": 15,
        "ok": 15,
        "faults": 0,
    }  # the kill's row is its answer (info), not its call
    # Of 15 settled appends: the first and the highest, and the three nemesis rows.
    assert live.left["index"].tolist() == [0, 1, 10, 21, 30, 31, 32]
    with open(recorder.path, "a") as history:  # a line not yet ended: left for the next look
        history.write('{"index": 33, "time_ns": 1')
    live.look()
    assert live.rows == 33


def test_a_violation_found_at_one_look_stays_in_the_verdict_when_later_looks_no_longer_show_it(tmp_path):
    """Two appends acknowledged at one offset, found at the first look; by
    the next look both are settled and what is left of them cannot show it
    again: the live verdict still holds it."""
    recorder = HistoryRecorder(tmp_path)
    live = Live(recorder, [], lambda: [], None, stop=False)
    for process in (1, 2):
        recorder.record(process, "invoke", "append", value=process, node="n1")
    for process in (1, 2):
        recorder.record(process, "ok", "append", value=process, node="n1", epoch=1, leader="n1", offset=0)
    assert live.look() == ["linearizable"]
    recorder.record(3, "invoke", "append", value=3, node="n1")
    recorder.record(3, "ok", "append", value=3, node="n1", epoch=1, leader="n1", offset=1)
    assert live.look() == [] and live.last["linearizable"] is False
    live.ended(tmp_path, None, 0.0)
    assert json.loads((tmp_path / "live.json").read_text())["valid"] is False
