"""NATS's route framing (targets/nats/framing.py) on real bytes: route
connections between three JetStream servers of nats-server 2.9.10, captured
by `.venv/bin/python -m tests.targets.nats.capture_route_bytes DIR` (each
`NAME.up` what the dialling server sent, `NAME.down` what the other sent,
cut at 24 kB) and committed in tests/targets/nats/route_bytes/."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.toxiproxy.messages import SplitFramer
from history.messages import KINDS as VOCABULARY
from targets.nats.framing import KINDS, Unit, raft_message, split

BYTES = Path(__file__).parent / "route_bytes"
ROUTES = ("route-1", "route-2", "handshake")


def captured(name: str) -> tuple[bytes, bytes]:
    return (BYTES / f"{name}.up").read_bytes(), (BYTES / f"{name}.down").read_bytes()


def framed(data: bytes, cuts: list[int] | None = None) -> tuple[SplitFramer, list[Unit]]:
    """`data` fed one way to a fresh framer (as a proxy frames a route), in pieces `cuts` long if given."""
    connection = SplitFramer(split)
    units: list[Unit] = []
    at = 0
    for size in cuts or []:
        units += connection.up(data[at : at + size])
        at += size
    return connection, units + connection.up(data[at:])


def raft_lines(data: bytes) -> list[bytes]:
    """The protocol lines of messages on Raft subjects, read plainly."""
    return [line for line in data.split(b"\r\n") if line.startswith(b"RMSG") and b" $NRG." in line]


def test_every_raft_message_of_a_route_is_a_unit_and_every_byte_passes_as_read():
    for name in ROUTES:
        for data in captured(name):
            connection, units = framed(data)
            assert connection.unframed is None
            assert b"".join(unit for unit, _, _ in units) == data[: sum(len(unit) for unit, _, _ in units)]
            messages = [unit for unit in units if unit[1]]
            assert [unit.split(b"\r\n")[0] for unit, _, _ in messages] == raft_lines(data)[: len(messages)]
            assert {kind for _, kind, _ in messages} <= set(VOCABULARY) and set(KINDS.values()) <= set(VOCABULARY)


def test_votes_appends_heartbeats_and_their_answers_are_named_with_what_they_say():
    _, units = framed(captured("route-2")[0])
    types = {fields["type"] for _, kind, fields in units if kind}
    assert {"voteRequest", "voteResponse", "appendEntry", "heartbeat", "appendEntryResponse"} <= types
    for unit, kind, fields in units:
        if kind:
            line, payload = unit.split(b"\r\n", 1)
            subject = next(word.decode() for word in line.split()[1:3] if word.startswith(b"$NRG."))
            assert raft_message(subject, payload[:-2]) == (kind, fields)
            if fields["type"] in ("voteRequest", "appendEntry", "heartbeat"):  # (an answer may come from term 0)
                assert fields["epoch"] >= 1, fields
    answers = [fields for _, kind, fields in units if kind == "vote-answer"]
    assert answers and all(fields["granted"] for fields in answers)
    appends = [fields for _, kind, fields in units if kind == "append"]
    assert all(fields["entries"] >= 1 for fields in appends)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3000), max_size=40), st.sampled_from(ROUTES), st.booleans())
def test_the_units_are_the_same_however_the_bytes_arrive(cuts, name, way):
    data = captured(name)[way]
    whole = framed(data)
    pieces = framed(data, cuts)
    assert pieces[1] == whole[1] and pieces[0].unframed is None


def test_a_dropped_message_leaves_a_route_the_receiver_still_reads_whole():
    data = captured("route-1")[0]
    _, units = framed(data)
    dropped = next(at for at, (_, kind, _) in enumerate(units) if kind == "heartbeat")
    sent = b"".join(unit for at, (unit, _, _) in enumerate(units) if at != dropped)
    connection, again = framed(sent)
    assert connection.unframed is None
    assert [fields for _, _, fields in again] == [fields for at, (_, _, fields) in enumerate(units) if at != dropped]


def test_bytes_it_cannot_frame_pass_through_and_say_why():
    connection = SplitFramer(split)
    bad = b"RMSG $SYS $NRG.AE.g $NRG.R.x many\r\n" + b"\x00" * 100
    passed = connection.up(bad[:20]) + connection.up(bad[20:]) + connection.up(b"PING\r\n")
    assert b"".join(unit for unit, _, _ in passed) == bad + b"PING\r\n" and {kind for _, kind, _ in passed} == {""}
    assert connection.unframed is not None and "size" in connection.unframed
    endless = SplitFramer(split)
    assert b"".join(unit for unit, _, _ in endless.down(b"x" * 70_000)) == b"x" * 70_000
    assert endless.unframed == "no line ends"
