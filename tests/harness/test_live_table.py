"""The live checks' history table (harness/live.py): made a look at a time
from the rows recorded since the last look, it is the table of every row
recorded, as the checkers would get it made at once."""

from __future__ import annotations

import pandas as pd

from checkers.schema import HISTORY_COLUMNS, frame
from harness.live import Live
from results.history import HistoryRecorder


def test_the_table_grown_look_by_look_is_the_table_of_every_row(tmp_path):
    recorder = HistoryRecorder(tmp_path, keep=True)
    live = Live(recorder, [], lambda: [], None, stop=False)
    assert live.history().empty
    for look in range(3):
        for i in range(5):
            recorder.record(i, "invoke", "append", value=10 * look + i, node="n1")
            recorder.record(i, "ok", "append", value=10 * look + i, node="n1", epoch=1, leader="n1", offset=i)
        recorder.record(-1, "info", "kill", value={"target": "leader"}, error="timeout")  # a column all null but here
        grown = live.history()
        pd.testing.assert_frame_equal(grown, frame(list(recorder.kept), HISTORY_COLUMNS))
    assert len(live.history()) == 33 and live.history() is grown  # nothing new: the same table
