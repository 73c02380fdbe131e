"""A node's log read as it is written (`targets.log_lines.NewLines`): each
whole line once, a line not yet ended at the next call, a log replaced (a
wiped node's) from its start, and one that lost its end (what a disk had
not fsynced) and was written on: only the lines not read before."""

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
    with open(path, "a") as log:
        log.write('{"f": 6}\n')
    assert lines() == ['{"f": 6}']
    with open(path, "r+") as log:  # the same file loses its last line, and is written on past where it was
        log.truncate(9)
        log.seek(9)
        log.write('{"g": 7}\n{"h": 8}\n')
    assert lines() == ['{"g": 7}', '{"h": 8}']
    with open(path, "r+") as log:  # and again, to no further than where it was
        log.truncate(18)
    assert lines() == []
    with open(path, "a") as log:
        log.write('{"i": 9}\n')
    assert lines() == ['{"i": 9}']


def test_a_log_read_again_whole_gives_the_rows_past_those_still_as_they_were():
    """The default live reader (`Target.log_reader`): the log parsed whole each
    call, the rows after those still as given before are given."""
    from targets.interface import Target

    logged = [
        [{"e": 1}, {"e": 2}],
        [{"e": 1}, {"e": 2}, {"e": 3}],
        [{"e": 1}, {"e": 4}, {"e": 5}],
        [{"e": 1}, {"e": 4}],
    ]

    class Log:
        def log_events(self, path, to_run_ns):
            return logged.pop(0)

    read = Target.log_reader(Log(), "events.log", None)  # type: ignore[arg-type]
    assert [read(), read(), read(), read()] == [[{"e": 1}, {"e": 2}], [{"e": 3}], [{"e": 4}, {"e": 5}], []]


def test_a_file_only_appended_to_is_read_line_by_line_without_a_hash_of_each(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text('{"a": 1}\n{"b"')
    lines = NewLines(path, append_only=True)
    assert lines() == ['{"a": 1}'] and lines() == []
    with open(path, "a") as log:
        log.write(': 2}\n{"c": 3}\n{"d": 4}\n')
    assert lines() == ['{"b": 2}', '{"c": 3}', '{"d": 4}']
    with open(path, "a") as log:
        log.write('{"e": 5}\n')
    assert lines() == ['{"e": 5}'] and len(lines.hashes) == 0
