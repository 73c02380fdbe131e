"""A node's log read as it is written (`targets.log_lines.NewLines`): each
whole line once, a line not yet ended at the next call, and a log replaced
(a wiped node's) from its start."""

from __future__ import annotations

import os

from targets.log_lines import NewLines


def test_each_whole_line_is_read_once_and_a_replaced_log_from_its_start(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c"')
    lines = NewLines(path)
    assert lines() == ['{"a": 1}', '{"b": 2}']
    assert lines() == []
    with open(path, "a") as log:
        log.write(': 3}\n{"d": 4}\n')
    assert lines() == ['{"c": 3}', '{"d": 4}']
    os.remove(path)
    path.write_text('{"e": 5}\n')
    assert lines() == ['{"e": 5}']
    path.write_text("{}\n")  # the same file cut shorter than what was read: from its start again
    assert lines() == ["{}"]
