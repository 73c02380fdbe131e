"""Faults on single messages in splitbrain's link proxy, on a real TCP
stream through the server, driven as the harness drives it: a proxy that
frames its traffic (the reference quorum's JSON lines) drops, holds,
duplicates and reorders whole messages, names each one it acted on, and
keeps the connection up throughout."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.toxiproxy.messages import LinkCount, MessageStream, SplitFramer
from harness.toxiproxy.toxics import Toxic
from targets.kraft import framing

from .test_toxiproxy import echo, server  # noqa: F401  (fixtures)

FRAMING = "targets.kraft.framing"


def line(kind: str, epoch: int) -> bytes:
    return json.dumps({"type": kind, "src": "n1", "dst": "n2", "epoch": epoch}).encode() + b"\n"


@pytest.fixture
def framed(server, echo):  # noqa: F811
    [made] = server.populate([{"name": "framed", "listen": "127.0.0.1:0", "upstream": echo, "framing": FRAMING}])
    host, port = made["listen"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=3) as sock:
        yield sock
    server.use().destroy_all()


def fault(server, action: str, kind: str = "any", **attributes) -> None:  # noqa: F811
    server.use().get_proxy("framed").add_toxic(
        type="message", stream="upstream", name=action, attributes={"action": action, "kind": kind, **attributes}
    )


def received(sock: socket.socket, lines: int, timeout_s: float = 3.0) -> list[bytes]:
    sock.settimeout(timeout_s)
    got = b""
    while got.count(b"\n") < lines:
        got += sock.recv(65536)
    return got.splitlines(keepends=True)


def test_a_dropped_vote_request_is_cut_out_and_named_and_the_connection_lives_on(server, framed):  # noqa: F811
    fault(server, "drop", "vote-request")
    framed.sendall(line("FetchRequest", 1) + line("VoteRequest", 2) + line("VoteRequest", 3) + line("FetchRequest", 4))
    assert received(framed, 3) == [line("FetchRequest", 1), line("VoteRequest", 3), line("FetchRequest", 4)]
    [acted] = server.toxic("framed", "drop")["applied"]
    assert (acted["ordinal"], acted["kind"], acted["epoch"]) == (2, "vote-request", 2)
    framed.sendall(line("VoteRequest", 5))  # the fault acted on its one message: the next passes
    assert received(framed, 1) == [line("VoteRequest", 5)]


def test_a_duplicate_is_sent_twice(server, framed):  # noqa: F811
    fault(server, "duplicate", "fetch")
    framed.sendall(line("FetchRequest", 1) + line("FetchRequest", 2))
    assert received(framed, 3) == [line("FetchRequest", 1), line("FetchRequest", 1), line("FetchRequest", 2)]


def test_a_reordered_message_goes_after_the_next_one(server, framed):  # noqa: F811
    fault(server, "reorder", "vote-answer")
    framed.sendall(line("VoteResponse", 1) + line("FetchRequest", 2))
    assert received(framed, 2) == [line("FetchRequest", 2), line("VoteResponse", 1)]


def test_a_held_message_goes_after_its_time_while_later_ones_pass(server, framed):  # noqa: F811
    fault(server, "hold", "leader-notice", hold_ms=400)
    start = time.monotonic()
    framed.sendall(line("BeginQuorumEpoch", 1) + line("FetchRequest", 2))
    assert received(framed, 1) == [line("FetchRequest", 2)]
    assert received(framed, 1) == [line("BeginQuorumEpoch", 1)]
    assert time.monotonic() - start >= 0.35


def test_a_message_held_until_a_kind_passes_goes_right_after_it(server, framed):  # noqa: F811
    fault(server, "hold", "vote-request", hold_ms=5000, until="vote-answer")
    framed.sendall(line("VoteRequest", 1) + line("FetchRequest", 2) + line("VoteResponse", 3))
    assert received(framed, 3) == [line("FetchRequest", 2), line("VoteResponse", 3), line("VoteRequest", 1)]


def test_a_fault_in_a_moment_acts_only_between_its_opening_and_closing_kinds(server, framed):  # noqa: F811
    """A vote in flight: the fetches before the request and after its answer pass; the one between is dropped."""
    fault(server, "drop", "fetch", count=0, after="vote-request", before="vote-answer")
    sent = [("FetchRequest", 1), ("VoteRequest", 2), ("FetchRequest", 3), ("VoteResponse", 4), ("FetchRequest", 5)]
    framed.sendall(b"".join(line(kind, epoch) for kind, epoch in sent))
    assert received(framed, 4) == [line(kind, epoch) for kind, epoch in sent if epoch != 3]
    assert [m["epoch"] for m in server.toxic("framed", "drop")["applied"]] == [3]
    framed.sendall(line("VoteRequest", 6) + line("FetchRequest", 7))  # a new vote opens it again
    assert received(framed, 1) == [line("VoteRequest", 6)]
    assert [m["epoch"] for m in server.toxic("framed", "drop")["applied"]] == [3, 7]


def test_a_moment_opened_on_one_link_holds_for_its_group_on_another():
    """A vote asked on one link: the group's toxic on another link acts while it is unanswered."""
    attributes = {"action": "drop", "kind": "fetch", "count": 0, "after": "vote-request", "before": "vote-answer"}
    here, there = (Toxic.from_json({"type": "message", "attributes": attributes}) for _ in range(2))
    there.tally = here.tally  # (as the server joins a group's toxics)
    one, other = (MessageStream(SplitFramer(framing.split).up, LinkCount(), lambda _: None) for _ in range(2))
    assert other.feed(line("FetchRequest", 1), [there]) == [line("FetchRequest", 1)]
    one.feed(line("VoteRequest", 2), [here])
    assert other.feed(line("FetchRequest", 3), [there]) == []
    one.feed(line("VoteResponse", 4), [here])
    assert other.feed(line("FetchRequest", 5), [there]) == [line("FetchRequest", 5)]


def test_skip_lets_matching_messages_pass_first_and_a_bad_action_is_refused(server, framed):  # noqa: F811
    fault(server, "drop", "fetch", skip=1)
    framed.sendall(line("FetchRequest", 1) + line("FetchRequest", 2) + line("FetchRequest", 3))
    assert received(framed, 2) == [line("FetchRequest", 1), line("FetchRequest", 3)]
    from toxiproxy.exceptions import InvalidToxic

    with pytest.raises(InvalidToxic):
        fault(server, "explode")


def test_a_framing_that_cannot_be_imported_is_refused(server, echo):  # noqa: F811
    from toxiproxy.exceptions import InvalidToxic

    with pytest.raises(InvalidToxic, match="framing"):
        server.populate([{"name": "bad", "listen": "127.0.0.1:0", "upstream": echo, "framing": "no.such.module"}])


@settings(max_examples=200, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(framing.KINDS)), min_size=1, max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
    drop=st.sampled_from(sorted(set(framing.KINDS.values()))),
)
def test_however_the_bytes_arrive_each_message_passes_whole_but_those_dropped(kinds, cuts, drop):
    """Read in any chunks, the stream gives every message whole and in
    order, but the one `drop` names (count 0: all of its kind)."""
    stream_bytes = b"".join(line(kind, epoch) for epoch, kind in enumerate(kinds))
    toxic = Toxic.from_json({"type": "message", "attributes": {"action": "drop", "kind": drop, "count": 0}})
    stream = MessageStream(SplitFramer(framing.split).up, LinkCount(), lambda _: None)
    bounds = sorted({0, len(stream_bytes), *(c % (len(stream_bytes) + 1) for c in cuts)})
    out = b"".join(b"".join(stream.feed(stream_bytes[a:b], [toxic])) for a, b in zip(bounds, bounds[1:]))
    kept = [line(kind, epoch) for epoch, kind in enumerate(kinds) if framing.KINDS[kind] != drop]
    assert out == b"".join(kept)
    assert [m["epoch"] for m in toxic.applied] == [e for e, k in enumerate(kinds) if framing.KINDS[k] == drop]
    asyncio.run(asyncio.sleep(0))


def test_a_loss_drops_at_its_rate_and_takes_a_new_rate_in_force(server, framed):  # noqa: F811
    fault(server, "drop", "fetch", count=0, per_mille=500)
    framed.sendall(b"".join(line("FetchRequest", n) for n in range(200)) + line("VoteRequest", 999))
    framed.settimeout(3)
    got = b""
    while not got.endswith(line("VoteRequest", 999)):  # (no other kind is touched, and the connection lives)
        got += framed.recv(65536)
    passed = got.splitlines(keepends=True)
    dropped = server.toxic("framed", "drop")["applied"]
    assert 60 <= len(dropped) <= 140 and len(passed) == 201 - len(dropped)
    server.update_toxic("framed", "drop", attributes={"per_mille": 0})
    framed.sendall(b"".join(line("FetchRequest", n) for n in range(20)))
    assert len(received(framed, 20)) == 20 and len(server.toxic("framed", "drop")["applied"]) == len(dropped)
