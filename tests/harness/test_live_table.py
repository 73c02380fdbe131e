"""The live checks' history (harness/live.py): a look takes the rows
recorded since the last one from the recorder, which keeps them no longer,
and judges them with those the last look left (checkers/carried.py)."""

from __future__ import annotations

import pandas as pd

from checkers.carried import left_for_later
from checkers.schema import HISTORY_COLUMNS, frame
from harness.live import Live
from results.history import HistoryRecorder


def test_a_look_judges_the_rows_left_and_the_rows_since_and_the_recorder_keeps_none(tmp_path):
    recorder = HistoryRecorder(tmp_path, keep=True)
    live = Live(recorder, [], lambda: [], None, stop=False)
    recorded = []
    for look in range(3):
        for i in range(5):
            recorded.append(recorder.record(i, "invoke", "append", value=10 * look + i, node="n1"))
            ok = dict(value=10 * look + i, node="n1", epoch=1, leader="n1", offset=10 * look + i)
            recorded.append(recorder.record(i, "ok", "append", **ok))
        recorded.append(recorder.record(-1, "info", "kill", value={"target": "leader"}, error="timeout"))
        left = live.left
        assert live.look() == [] and recorder.kept == []
        since = frame(recorded[len(recorded) - 11 :], HISTORY_COLUMNS)
        judged = pd.concat([left, since], ignore_index=True)
        pd.testing.assert_frame_equal(live.left, left_for_later(judged))
    assert live.rows == 33 and live.last["rows"] == 33 and live.last["linearizable"] is True
    # Of 15 settled appends: the first and the highest, and the three nemesis rows.
    assert live.left["index"].tolist() == [0, 1, 10, 21, 30, 31, 32]
    assert recorder.taken() == [] and HistoryRecorder(tmp_path).taken() == []
