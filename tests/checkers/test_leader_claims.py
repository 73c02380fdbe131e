"""`single-leader-per-epoch` decides on integer codes of (epoch, claimed
node) pairs. Against a row-by-row reading of the claims (docs/organisation.md's rule:
every claim about who leads an epoch names the same node), on events and
replies with nulls anywhere: the same epochs are found claimed twice, with
the same nodes, each named by its first claim, and the same claims counted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.elections import single_leader_per_epoch
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

NODES = st.one_of(st.none(), st.sampled_from(["n1", "n2", "n3"]))
EPOCHS = st.one_of(st.none(), st.integers(0, 3))
EVENTS = st.lists(
    st.fixed_dictionaries(
        {
            "node": NODES,
            "state": st.one_of(st.none(), st.sampled_from(["leader", "follower"])),
            "epoch": EPOCHS,
            "leader": NODES,
        }
    ),
    max_size=12,
)
REPLIES = st.lists(
    st.fixed_dictionaries(
        {
            "process": st.integers(-1, 2),
            "type": st.sampled_from(["invoke", "ok", "fail", "info"]),
            "node": NODES,
            "epoch": EPOCHS,
            "leader": NODES,
        }
    ),
    max_size=12,
)


def oracle(events: list[dict], replies: list[dict], ok_proves: bool) -> tuple[dict[int, list[str]], int]:
    """epoch -> its claimed nodes in the order of their first claim (time, then as listed), where more than one; the claims."""
    claims = []  # (time, epoch, claimed)
    for e in events:
        if e["state"] == "leader":
            claims.append((e["time_ns"], e["epoch"], e["node"]))
        claims.append((e["time_ns"], e["epoch"], e["leader"]))
    for r in replies:
        if r["process"] < 0:
            continue
        if r["type"] != "invoke":
            claims.append((r["time_ns"], r["epoch"], r["leader"]))
        if ok_proves and r["type"] == "ok":
            claims.append((r["time_ns"], r["epoch"], r["node"]))
    claims = [c for c in claims if c[1] is not None and c[2] is not None]
    first: dict[int, dict[str, int]] = {}
    for time, epoch, claimed in claims:
        first.setdefault(epoch, {}).setdefault(claimed, time)
        first[epoch][claimed] = min(first[epoch][claimed], time)
    twice = {
        epoch: sorted(named, key=lambda node: (named[node], node)) for epoch, named in first.items() if len(named) > 1
    }
    return twice, len(claims)


@settings(max_examples=150, deadline=None)
@given(EVENTS, REPLIES, st.booleans())
def test_epochs_claimed_twice_are_those_a_row_by_row_reading_finds(events, replies, ok_proves):
    events = [{**e, "time_ns": 2 * i, "event": "status"} for i, e in enumerate(events)]
    replies = [{**r, "time_ns": 2 * i + 1, "index": i, "f": "append"} for i, r in enumerate(replies)]
    verdict = single_leader_per_epoch(
        frame(events, EVENTS_COLUMNS), frame(replies, HISTORY_COLUMNS), {"ok_proves_leadership": ok_proves}
    )
    twice, count = oracle(events, replies, ok_proves)
    found = {a["epoch"]: a["leaders"] for a in verdict["anomalies"]}
    assert {epoch: sorted(leaders) for epoch, leaders in found.items()} == {
        epoch: sorted(nodes) for epoch, nodes in twice.items()
    }
    for epoch in found:
        times = [claim["time_ns"] for claim in next(a for a in verdict["anomalies"] if a["epoch"] == epoch)["claims"]]
        assert times == sorted(times)
    assert verdict["valid"] is (not twice)
    assert verdict["stats"]["claims"] == count
