"""Message faults as the strategies choose them (nemesis/faults/messages.py): the
random draw aims at the kinds the target's framing names, sized by its
election timeout; the guided nemesis offers one cell per fault and kind of
message (never a voter change's own or an unplaced one; an election's only
while one is open), and right after a leader is lost it aims one at what an
election puts in flight."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from history.messages import ANY, IN_ELECTION, KINDS, MOMENTS
from history.observation import Observation
from nemesis.faults import messages
from nemesis.faults.family import Choice
from nemesis.guided import Guide
from nemesis.schedule import generate

FRAMED = messages.framed_kinds("targets.kraft.framing")


def test_the_reference_quorum_s_framing_names_kinds_of_the_vocabulary():
    assert set(FRAMED) <= set(KINDS) and {"vote-request", "vote-answer", "fetch", "fetch-answer"} <= set(FRAMED)
    assert messages.framed_kinds("") == ()


@given(kind=st.sampled_from(messages.KINDS), timeout_ms=st.integers(10, 10_000), seed=st.integers(0, 2**31 - 1))
def test_a_drawn_message_fault_aims_at_a_framed_kind_within_its_bounds(kind, timeout_ms, seed):
    drawn = messages.draw(kind, random.Random(seed), timeout_ms, FRAMED)
    assert drawn["message"] in (ANY, *FRAMED) and drawn["target"] in messages.AIMS
    assert drawn["within_ms"] == 3 * timeout_ms and drawn["count"] in messages.COUNTS
    assert ("hold_ms" in drawn) == (kind == "message-hold")
    if kind == "message-hold":
        assert timeout_ms / 10 - 1 <= drawn["hold_ms"] <= 2 * timeout_ms + 1


def test_the_schedule_draws_them_from_the_framed_kinds():
    ops = generate(random.Random(1), list(messages.KINDS), 40, 2, 3, timeout_ms=300, framed=FRAMED)
    made = [op for op in ops if op.f in messages.KINDS]
    assert {op.f for op in made} == set(messages.KINDS)
    assert {op.args["message"] for op in made} <= {ANY, *FRAMED}


SEEN = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})


def test_the_guide_offers_a_cell_per_fault_and_aimed_kind_and_none_without_framing():
    guide = Guide(random.Random(1), ["kill", *messages.KINDS], timeout_ms=300, framed=FRAMED)
    electing = Observation({"n1": "candidate", "n2": "follower", "n3": "follower"})
    offered = {c.cell[:2] for c in guide.choices(electing) if c.f in messages.KINDS}
    aimed = [kind for kind in FRAMED if kind not in ("membership", "other")]
    assert offered == {(f, kind) for f in messages.KINDS for kind in aimed}
    steady = {c.cell[:2] for c in guide.choices(SEEN) if c.f in messages.KINDS}
    assert steady == {(f, kind) for f in messages.KINDS for kind in aimed if kind not in IN_ELECTION}
    assert all(c.args["target"] == "any" for c in guide.choices(SEEN) if c.f in messages.KINDS)
    assert not [c for c in Guide(random.Random(1), list(messages.KINDS)).choices(SEEN)]


def test_with_the_leader_lost_a_message_fault_at_once_lands_on_an_election_s_messages():
    for seed in range(20):
        guide = Guide(random.Random(seed), ["kill", *messages.KINDS], timeout_ms=300, framed=FRAMED)
        first = Choice(("kill", "leader", "alone"), "kill", {"target": "leader"})
        more = guide.overlap(SEEN, [first], at_once=True)
        assert more is not None and more.f in messages.KINDS and more.cell[1] in IN_ELECTION, more


def test_moments_are_offered_where_the_framing_shows_them_and_reach_the_proxy_as_a_window():
    assert messages.moments_of(FRAMED) == ("vote-in-flight", "newly-elected")  # (kraft asks no read index)
    etcd = messages.framed_kinds("targets.etcd.framing")
    assert "read-index-in-flight" in messages.moments_of(etcd)
    assert messages.moments_of(etcd, electing=False) == ("read-index-in-flight",)
    guide = Guide(random.Random(3), list(messages.KINDS), timeout_ms=300, framed=FRAMED)
    electing = Observation({"n1": "candidate", "n2": "follower", "n3": "follower"})
    drawn = [c.args.get("moment", "") for _ in range(20) for c in guide.choices(electing)]
    assert set(drawn) == {"", "vote-in-flight", "newly-elected"}
    assert 0.35 < drawn.count("") / len(drawn) < 0.65  # (any time, as likely as the moments together)
    assert messages._window("vote-in-flight") == {"after": "vote-request", "before": "vote-answer"}
    assert messages._window("") == {}


def test_a_steady_cluster_is_aimed_at_no_election_s_moment_and_a_lost_leader_s_is():
    """Run 81's CI: on a cluster with its leader in place, faults waiting for a
    vote in flight (or for a vote itself) waited out their time and acted on nothing."""
    guide = Guide(random.Random(3), ["kill", *messages.KINDS], timeout_ms=300, framed=FRAMED)
    assert not {c.args.get("moment", "") for _ in range(20) for c in guide.choices(SEEN)} - {""}
    first = Choice(("kill", "leader", "alone"), "kill", {"target": "leader"})
    at_once = [guide.overlap(SEEN, [first], at_once=True) for _ in range(40)]
    assert {more.args.get("moment", "") for more in at_once if more} == {"", "vote-in-flight", "newly-elected"}
    asked = [messages.aimed("message-drop", "vote-request", random.Random(i), 300, FRAMED, True) for i in range(40)]
    assert {args.get("moment", "") for args in asked} == {"", "newly-elected"}  # (no moment its own kind opens)
    leaderless = Observation({"n2": "follower", "n3": "follower"})
    assert {c.args.get("moment", "") for _ in range(20) for c in guide.choices(leaderless)} - {""}


@given(
    key=st.sampled_from(["message", "until", "moment"]),
    value=st.text(min_size=1, max_size=20).filter(lambda v: v not in (ANY, *KINDS, *MOMENTS)),
)
def test_a_schedule_s_message_fault_naming_what_the_target_cannot_show_is_refused(key, value):
    assert messages.problem({key: value}, FRAMED).startswith(f"{key} {value!r} is none of the target's: ")
    assert messages.problem({"message": "vote-request", "moment": "vote-in-flight", "until": ANY}, FRAMED) is None
    assert messages.problem({"moment": "read-index-in-flight"}, FRAMED) is not None
