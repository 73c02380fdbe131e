"""Nemesis schedules: seeded, every fault undone before the next, always a final heal."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.errors import SettingError
from nemesis.schedule import FAULTS, generate

KINDS = st.lists(st.sampled_from(sorted(FAULTS)), unique=True)
# Faults made of several operations, and the operations each may hold.
COMPOSITE = {"churn": ("latency", "kill", "bounce"), "membership": ("wipe", "kill", "start", "shrink")}


@given(KINDS, st.integers(0, 2**32), st.floats(1, 120), st.floats(0.2, 10), st.sampled_from([3, 5]))
def test_faults_are_undone_in_order_and_the_schedule_ends_healed(kinds, seed, limit, interval, nodes):
    ops = generate(random.Random(seed), kinds, limit, interval, nodes)
    assert ops[-1].f == "heal-all" and ops[-1].at_s == limit
    assert [op.at_s for op in ops] == sorted(op.at_s for op in ops)
    assert all(op.at_s <= limit for op in ops)
    recovery = {kind: undo for kind, (_, undo) in FAULTS.items()}
    open_fault = None
    for op in ops[:-1]:
        if "of" in op.args:
            assert op.args["of"] == open_fault and op.f == recovery[open_fault], op
            open_fault = None
        elif op.args.get("during") in COMPOSITE:
            during = op.args["during"]
            assert open_fault in (during, None) and op.f in COMPOSITE[during], op
            open_fault = during
        else:
            assert open_fault is None, (open_fault, op)
            open_fault = op.f if recovery[op.f] else None
    assert generate(random.Random(seed), kinds, limit, interval, nodes) == ops


@given(KINDS.filter(bool), st.integers(0, 2**32), st.sampled_from([3, 5]))
def test_every_kind_has_a_turn_before_any_kind_has_two(kinds, seed, nodes):
    """README's `run.sh` (5 kinds, 30 s, 3 s intervals) shows every fault it names."""
    interval = 3.0
    ops = generate(random.Random(seed), kinds, interval * 2 * len(kinds), interval, nodes)
    started = [op for op in ops if "of" not in op.args and op.f != "heal-all" and op.args.get("during") is None]
    started += [op for op in ops if op.args.get("of") in ("churn", "membership")]
    assert len(started) == len(kinds)
    recovery_of = {fault: kind for kind, (fault, _) in FAULTS.items() if kind not in COMPOSITE}
    kinds_seen = {op.args["of"] if op.args.get("of") in COMPOSITE else recovery_of[op.f] for op in started}
    assert kinds_seen == set(kinds)


def test_unknown_faults_are_refused_by_name():
    with pytest.raises(SettingError, match="nemesis: unknown fault.*'flood'"):
        generate(random.Random(0), ["kill", "flood"], 10, 1, 3)
