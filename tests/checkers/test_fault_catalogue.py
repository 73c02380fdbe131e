"""The fault catalogue (history/faults.py) is the one list of faults: what
the executor makes is in it, what reads faults takes them from it, and each
entry's recovery is one the executor makes."""

from __future__ import annotations

import random

import targets
from checkers import availability
from harness.run import RunConfig
from history import faults
from history.coverage import cell
from history.errors import SettingError
from history.faults import BY_NAME, CATALOGUE, INSTANT, KINDS, RECOVERIES
from nemesis import guided, schedule
from nemesis.faults import BY_OPERATION, FAMILIES, OPERATIONS
from nemesis.faults.family import HEAL_ORDER


def test_every_operation_the_executor_makes_is_a_catalogued_fault_or_a_recovery():
    made = set(OPERATIONS)
    assert made - set(BY_NAME) - set(RECOVERIES) == set()
    operations = {f.operation for f in CATALOGUE if not f.bookkeeping or f.name == "shrink"} | {"start-observers"}
    assert operations <= made, operations - made


def test_every_fault_has_one_family_that_draws_aims_makes_and_heals_it():
    """nemesis/faults/: each `--nemesis` kind and each recovery is one family's (a recipe's, or made);
    what a family heals is a step of heal-all's order."""
    assert set(KINDS) | set(RECOVERIES) - {faults.HEAL_ALL} <= set(BY_OPERATION)
    assert set(BY_OPERATION) <= set(BY_NAME) | set(RECOVERIES)
    for family in FAMILIES:
        assert {step for step, _ in family.heals} <= set(HEAL_ORDER)


def test_every_recovery_ends_what_names_it_and_instants_have_none():
    for fault in CATALOGUE:
        if fault.recovery and fault.recovery != "heal-all" and not fault.makes:
            assert fault.name in RECOVERIES[fault.recovery]
        assert (fault.name in INSTANT) == (fault.recovery is None and fault.makes is None)
        assert fault.hits in ("node", "link") and fault.colour.startswith("#")
        assert bool(fault.needs) == bool(fault.refused), fault.name


def test_the_readers_take_their_faults_from_the_catalogue():
    assert list(schedule.FAULTS) == list(KINDS)
    assert {k: v[1] for k, v in schedule.FAULTS.items()} == {k: BY_NAME[k].recovery for k in KINDS}
    assert set(guided.GUIDED_FAULTS) == {f.name for f in CATALOGUE if f.guided and not f.bookkeeping}
    assert availability.INSTANT is INSTANT and availability.RECOVERIES is RECOVERIES
    assert set(faults.COUNTED) >= set(guided.GUIDED_FAULTS) - {"membership"} and "start-observers" not in faults.COUNTED
    assert cell("latency", [["n1", "n2"]], {"n1": "leader"}, [])["role"] == "links"


def test_a_fault_the_target_lacks_the_capability_for_is_refused_with_its_reason():
    for fault in (f for f in CATALOGUE if f.needs and not f.bookkeeping):
        try:
            RunConfig(target="etcd", nemesis=[fault.name], nemesis_strategy="random").validate()
        except SettingError as error:
            assert (error.setting, error.reason) == ("nemesis", f"etcd{fault.refused}"), fault.name
        else:
            assert any(getattr(targets.get("etcd").capabilities, need) for need in fault.needs), fault.name


def test_a_fault_that_hits_many_at_once_is_aimed_and_counted_as_a_majority_or_all():
    states = {"n1": "leader", "n2": "follower", "n3": "follower", "n4": "follower", "n5": "follower"}
    assert cell("lose-unfsynced", ["n1", "n2", "n3"], states, [])["role"] == "majority"
    assert cell("lose-unfsynced", sorted(states), states, [])["role"] == "all"
    assert cell("pause", ["n2", "n3"], states, [])["role"] == "follower"
    guide = guided.Guide(random.Random(0), ["lose-unfsynced", "kill", "pause"])
    aims = {(c.f, c.args["target"]) for c in guide.choices(guided.Observation(states))}
    # A power loss, and processes killed together (Jepsen's kill nemesis aims at a majority, or all).
    assert {("lose-unfsynced", "majority"), ("lose-unfsynced", "all"), ("kill", "majority"), ("kill", "all")} <= aims
    assert not {("pause", "majority"), ("pause", "all")} & aims
    drawn = schedule.generate(random.Random(3), ["lose-unfsynced", "kill"], 600, 3, 5)
    for kind in ("lose-unfsynced", "kill"):
        assert {op.args["target"] for op in drawn if op.f == kind} >= {"majority", "all"}, kind
