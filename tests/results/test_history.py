"""The live history file: typed rows, recovery after a crash, clear errors."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from history.errors import Defect
from history.schema import HISTORY_COLUMNS, OP_TYPES
from results.recording import (
    HistoryError,
    HistoryRecorder,
    jsonl_pieces,
    lines_table,
    load_history,
    recover,
    rows_table,
)


def test_rows_are_flushed_live_and_typed(tmp_path):
    recorder = HistoryRecorder(tmp_path)
    recorder.record(0, "invoke", "append", value=7, node="n1")
    recorder.record(0, "ok", "append", value=7, node="n1", epoch=2, offset=5)
    recorder.record(-1, "info", "kill", value={"target": "leader"}, error="timeout")
    # Nothing closed yet: a crashed harness leaves exactly this file.
    history = load_history(tmp_path)
    assert list(history.columns) == list(HISTORY_COLUMNS)
    assert history["index"].tolist() == [0, 1, 2]
    assert history["value"].tolist() == ["7", "7", '{"target": "leader"}']
    assert history["offset"].tolist()[1] == 5 and history["offset"].isna().tolist() == [True, False, True]
    assert history["time_ns"].is_monotonic_increasing


def lines_on_disk(recorder: HistoryRecorder) -> int:
    """The rows another process (or a crash) would find in the file now."""
    return recorder.path.read_bytes().count(b"\n")


def test_under_load_rows_are_flushed_together_within_the_interval(tmp_path):
    recorder = HistoryRecorder(tmp_path)

    async def load() -> list[int]:
        flushing = asyncio.create_task(recorder.flushing(0.05))
        await asyncio.sleep(0)  # batching from here on
        recorder.record(0, "invoke", "append", value=1, node="n1")
        recorder.record(0, "ok", "append", value=1, node="n1", offset=0)
        await asyncio.sleep(0.2)  # the flusher's turn came
        seen = [lines_on_disk(recorder)]
        flushing.cancel()
        recorder.flush_each_row()
        recorder.record(1, "invoke", "append", value=2, node="n1")
        return [*seen, lines_on_disk(recorder)]

    assert asyncio.run(load()) == [2, 3]


def test_recovery_leaves_out_a_torn_last_line_and_says_so(tmp_path):
    recorder = HistoryRecorder(tmp_path)
    recorder.record(0, "invoke", "append", value=1)
    recorder.close()
    with open(tmp_path / "history.jsonl", "a") as f:
        f.write('{"index": 1, "time_')
    note = recover(tmp_path)
    assert "line 2: torn last line" in note
    assert len(load_history(tmp_path)) == 1


def test_a_corrupt_line_in_the_middle_is_an_error_naming_it(tmp_path):
    row = '{"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "read"}'
    (tmp_path / "history.jsonl").write_text(f"{row}\nnot json\n{row}\n")
    with pytest.raises(HistoryError, match=r"history\.jsonl: line 2"):
        recover(tmp_path)
    (tmp_path / "history.jsonl").write_text(f"{row}\n{row.replace('0,', 'true,', 1)}\n{row}\n")
    with pytest.raises(HistoryError, match=r"history\.jsonl: line 2: index: True is not an integer"):
        recover(tmp_path)


def test_a_history_is_read_and_recovered_a_piece_at_a_time(tmp_path):
    """A history.jsonl is read a piece of whole lines at a time, so a soak's
    history is never held whole (its 13.2M rows read at once were 16.8 GB):
    the pieces together are the file, and a bad line or a torn last one is
    named by its line in the file, whichever piece it falls in."""
    recorder = HistoryRecorder(tmp_path)
    for index in range(40):
        recorder.record(index % 3 - 1, "invoke", "append", key=f"k{index % 4}", value=index, node="n1")
    recorder.close()
    path = tmp_path / "history.jsonl"
    whole, _ = rows_table(path.read_text(), 1, path)
    line = len(path.read_bytes()) // 40
    pieces = list(jsonl_pieces(path, piece_bytes=line * 7))
    assert len(pieces) >= 5 and all(torn is None for _, torn in pieces)
    pd.testing.assert_frame_equal(pd.concat([piece for piece, _ in pieces], ignore_index=True), whole)
    with open(path, "a") as f:
        f.write('{"index": 40, "time_')
    assert "line 41: torn last line" in recover(tmp_path)
    pd.testing.assert_frame_equal(load_history(tmp_path), whole)
    assert not (tmp_path / "history.parquet.part").exists()
    lines = path.read_text().split("\n")
    lines[30] = "not json"
    path.write_text("\n".join(lines))
    with pytest.raises(HistoryError, match=r"history\.jsonl: line 31: "):
        list(jsonl_pieces(path, piece_bytes=line * 7))


def test_a_wrong_row_type_is_refused(tmp_path):
    with pytest.raises(Defect, match="row type"):
        HistoryRecorder(tmp_path).record(0, "maybe", "append")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "process": st.integers(-1, 9),
                "type": st.sampled_from(OP_TYPES),
                "f": st.sampled_from(["append", "kill"]),
            },
            optional={
                "key": st.text(max_size=3),
                "value": st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2)),
                "node": st.sampled_from(["n1", "n2"]),
                "epoch": st.integers(0, 2**62),
                "offset": st.integers(0, 2**62),
                "error": st.text(max_size=5),
            },
        ),
        min_size=1,
        max_size=30,
    )
)
def test_a_recorded_history_is_read_by_arrow_as_row_by_row(tmp_path_factory, rows):
    """A run's history.jsonl is read with Arrow's JSON reader (no dict a row
    held: a soak's is 14M rows); the table equals the one the row by row
    reading makes, which stays for what Arrow cannot read."""
    run_dir = tmp_path_factory.mktemp("run")
    recorder = HistoryRecorder(run_dir)
    for row in rows:
        recorder.record(
            row["process"],
            row["type"],
            row["f"],
            **{k: v for k, v in row.items() if k in HISTORY_COLUMNS and k not in ("process", "type", "f")},
        )
    recorder.close()
    data = (run_dir / "history.jsonl").read_bytes()
    fast = lines_table(data)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, rows_table(data.decode(), 1, run_dir / "history.jsonl")[0])


def test_a_line_that_is_no_object_is_left_to_the_line_by_line_reading():
    """pyarrow 26's JSON reader crashes the process (a segmentation fault)
    on a line `null`; such a line never reaches it, and the line by line
    reading names it."""
    row = b'{"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "read"}\n'
    for line in (b"null\n", b"5\n", b"[1]\n", b' {"index": 1}\n'):
        assert lines_table(row + line + row) is None and lines_table(line + row) is None
    assert lines_table(row + row) is not None
