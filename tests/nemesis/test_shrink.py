"""The shrinker, alone (the trials are a function here): it keeps the
fault a failure needs and drops the rest, keeps pairs that only fail
together, ends the run one interval after the last fault left, and never
returns a schedule that did not fail."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nemesis.schedule import generate
from nemesis.shrink import groups, shrink

KINDS = ["partition", "pause", "kill", "bounce", "latency", "churn"]


def faults_of(schedule) -> list[str]:
    found, _ = groups(schedule)
    return [group[0].f for group in found]


@given(st.integers(0, 2**32), st.sampled_from(["partition", "pause", "kill", "bounce"]))
def test_one_needed_fault_is_all_that_is_left(seed, needed):
    schedule = generate(random.Random(seed), KINDS, 60, 3, 5)
    calls = []

    def fails(candidate, limit):
        calls.append(limit)
        return needed in faults_of(candidate)

    shrunk = shrink(schedule, 60, 3, fails)
    if needed not in faults_of(schedule):
        assert shrunk.faults == len(groups(schedule)[0])  # nothing smaller fails: the original stands
        return
    assert faults_of(shrunk.schedule) == [needed] and shrunk.faults == 1
    assert shrunk.schedule[-1].f == "heal-all" and shrunk.schedule[-1].at_s == shrunk.time_limit_s
    assert shrunk.time_limit_s == min(60, max(op.at_s for op in shrunk.schedule[:-1]) + 3)
    assert len(calls) <= len(groups(schedule)[0])


@given(st.integers(0, 2**32))
def test_two_faults_that_fail_only_together_stay_together(seed):
    schedule = generate(random.Random(seed), ["partition", "pause", "kill"], 60, 3, 5)
    kinds = faults_of(schedule)
    if not {"partition", "kill"} <= set(kinds):
        return
    shrunk = shrink(schedule, 60, 3, lambda candidate, limit: {"partition", "kill"} <= set(faults_of(candidate)))
    assert sorted(faults_of(shrunk.schedule)) == ["kill", "partition"]
    for line in shrunk.tried:
        assert line.endswith(("fails", "passes"))


def test_every_op_of_a_group_goes_with_it():
    schedule = generate(random.Random(7), ["churn", "pause"], 30, 3, 5)
    found, final = groups(schedule)
    assert final is not None and final.f == "heal-all"
    assert [op for group in found for op in group] + [final] == schedule
    for group in found:
        assert group[-1].f in ("heal-all", "resume", "bounce") or "of" in group[-1].args
