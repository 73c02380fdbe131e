"""The checker protocol (checkers/checker.py): which checkers a run's tables
call for, a checker of one's own run as the built-in ones are, and a
validity that is none of true, false and "unknown" refused."""

from __future__ import annotations

import pytest

from checkers.checker import Checker, Rule, Tables, validity
from checkers.registry import CHECKERS, NAMES
from checkers.verdict import check_tables
from history.errors import Defect
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame


def tables(*fs: str, events: list[dict] | None = None) -> Tables:
    rows = [{"index": i, "time_ns": i, "process": 0, "type": "invoke", "f": f} for i, f in enumerate(fs)]
    return Tables(frame(rows, HISTORY_COLUMNS), frame(events or [], EVENTS_COLUMNS), frame([], FINAL_COLUMNS))


def applying(t: Tables) -> list[str]:
    return [checker.name for checker in CHECKERS if checker.applies(t)]


def test_each_workload_gets_its_own_checkers_and_every_run_the_election_and_availability_ones():
    always = ["election-safety", "single-leader-per-epoch", "availability"]
    clients = ["progress", "availability"]  # progress: wherever clients called anything
    assert applying(tables("append", "read")) == always[:2] + ["committed-data-loss", "linearizable", *clients]
    assert applying(tables("read", "write", "cas")) == always[:2] + ["linearizable", *clients]
    assert applying(tables("acquire", "add", "release")) == always[:2] + ["mutual-exclusion", *clients]
    assert applying(tables()) == always
    voters = [{"time_ns": 1, "node": "n1", "source": "log", "event": "voters"}]
    assert "membership" in applying(tables("append", events=voters))
    assert NAMES == tuple(checker.name for checker in CHECKERS) and len(set(NAMES)) == len(NAMES)


def test_the_final_copies_are_read_once_and_only_when_a_checker_asks():
    """A run checked in pieces hands its copies as what reads them (a scan
    of final.parquet): a register run's checkers never read them."""
    from checkers.verdict import check

    reads: list[int] = []

    def copies():
        reads.append(1)
        return frame([], FINAL_COLUMNS)

    registers = tables("read", "write")
    check(Tables(registers.history, registers.events, copies), {})
    assert reads == []
    locks = tables("acquire", "add", "release")
    check(Tables(locks.history, locks.events, copies), {})
    assert reads == [1]


def test_a_checker_is_anything_with_a_name_applies_and_check():
    class Counting:
        name = "counting"

        def applies(self, t: Tables) -> bool:
            return "write" in t.client_fs

        def check(self, t: Tables) -> dict:
            return {"valid": True, "anomalies": [], "stats": {"ops": len(t.history)}}

    checkers: list[Checker] = [Counting(), Rule("never", lambda t: False, lambda t: {"valid": False})]
    t = tables("write", "read")
    assert [c.check(t)["stats"]["ops"] for c in checkers if c.applies(t)] == [2]


@pytest.mark.parametrize("wrong", ["ture", "true", 1, 0, None, "Unknown"])
def test_a_validity_other_than_true_false_or_unknown_is_a_defect(wrong):
    with pytest.raises(Defect, match='true, false or "unknown"'):
        validity(wrong)
    assert [validity(v) for v in (True, False, "unknown")] == [True, False, "unknown"]


def test_a_verdict_holds_the_applying_checkers_in_the_catalogues_order():
    t = tables("read", "write")
    verdict = check_tables(t.history, t.events, t.final)
    assert list(verdict["checkers"]) == applying(t)
