"""etcd's peer framing (targets/etcd/framing.py) on real bytes: connections
between members of a real etcd 3.4.23 cluster, captured by
`.venv/bin/python -m tests.targets.etcd.capture_peer_bytes DIR` (each
`NAME.up` what the dialling member sent, `NAME.down` what the dialled one
answered, cut at 24 kB) and committed in tests/targets/etcd/peer_bytes/."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from history.messages import KINDS
from targets.etcd.framing import Connection, Unit, message_fields

BYTES = Path(__file__).parent / "peer_bytes"
CONNECTIONS = ("message-stream-1", "message-stream-2", "msgapp-stream", "probing", "version")


def captured(name: str) -> tuple[bytes, bytes]:
    return (BYTES / f"{name}.up").read_bytes(), (BYTES / f"{name}.down").read_bytes()


def framed(up: bytes, down: bytes, cuts: list[int] | None = None) -> tuple[Connection, list[Unit], list[Unit]]:
    """Both ways of a connection fed to a fresh Connection (the answer in pieces `cuts` long, if given)."""
    connection = Connection()
    ups = connection.up(up)
    downs: list[Unit] = []
    at = 0
    for size in cuts or []:
        downs += connection.down(down[at : at + size])
        at += size
    downs += connection.down(down[at:])
    return connection, ups, downs


def stream_frames(down: bytes) -> list[bytes]:
    """The length-prefixed messages of a stream's answer, read plainly: its
    chunks' data joined, then cut by each message's length (a whole message
    only; the capture cuts the last)."""
    body = down[down.index(b"\r\n\r\n") + 4 :]
    data = b""
    while (end := body.find(b"\r\n")) >= 0:
        size = int(body[:end], 16)
        if len(body) < end + 2 + size + 2 or not size:
            break
        data, body = data + body[end + 2 : end + 2 + size], body[end + 2 + size + 2 :]
    frames = []
    while len(data) >= 8 and len(data) >= 8 + int.from_bytes(data[:8], "big"):
        size = 8 + int.from_bytes(data[:8], "big")
        frames.append(data[:size])
        data = data[size:]
    return frames


def unit_frame(unit: bytes) -> bytes:
    """The message a stream's unit carries (its one chunk's data)."""
    end = unit.index(b"\r\n")
    return unit[end + 2 : -2]


def test_a_message_stream_is_cut_into_every_message_in_order_each_its_own_chunk():
    up, down = captured("message-stream-2")
    connection, ups, downs = framed(up, down)
    assert connection.unframed is None and [kind for _, kind, _ in ups] == [""]
    messages = [unit for unit in downs if unit[1]]
    assert [unit_frame(message) for message, _, _ in messages] == stream_frames(down)
    assert {kind for _, kind, _ in messages} <= set(KINDS)
    types = {fields["type"] for _, _, fields in messages}
    assert {"MsgHeartbeat", "MsgHeartbeatResp", "MsgAppResp", "MsgReadIndex", "MsgVote", "MsgVoteResp"} <= types
    for message, kind, fields in messages:
        assert message_fields(unit_frame(message)[8:]) == (kind, fields)
        assert message.startswith(b"%x\r\n" % len(unit_frame(message))) and message.endswith(b"\r\n")
    read = next(fields for _, kind, fields in messages if kind == "read-index")
    assert read["type"] == "MsgReadIndex" and read["entries"] == 1  # (its request id; a follower forwards it at term 0)
    answers = [fields for _, kind, fields in messages if kind == "vote-answer"]
    assert answers and all(fields["granted"] for fields in answers)
    assert {fields["pre_vote"] for fields in answers} == {True, False}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3000), max_size=40), st.sampled_from(CONNECTIONS))
def test_the_units_are_the_same_however_the_bytes_arrive(cuts, name):
    """TCP hands a proxy its bytes in any pieces; the messages framed, and what is sent on, do not change."""
    up, down = captured(name)
    whole = framed(up, down)
    pieces = framed(up, down, cuts)
    assert pieces[1:] == whole[1:] and pieces[0].unframed is None


def test_what_is_no_message_passes_byte_for_byte():
    """msgappv2 (whose frames lean on one another), probes and version checks: every unit of kind "", the bytes as read."""
    for name in ("msgapp-stream", "probing", "version", "message-stream-1"):
        up, down = captured(name)
        _, ups, downs = framed(up, down)
        assert b"".join(unit for unit, _, _ in ups) == up
        if name != "message-stream-1":  # (its messages were one a chunk as etcd wrote them: the same bytes too)
            assert all(kind == "" for _, kind, _ in downs)
        assert b"".join(unit for unit, _, _ in downs) == down[: sum(len(unit) for unit, _, _ in downs)]


def test_a_dropped_message_leaves_a_stream_the_receiver_still_reads_whole():
    up, down = captured("message-stream-1")
    _, _, downs = framed(up, down)
    dropped = next(at for at, (_, kind, _) in enumerate(downs) if kind == "vote-request")
    sent = b"".join(unit for at, (unit, _, _) in enumerate(downs) if at != dropped)
    connection, _, again = framed(up, sent)
    assert connection.unframed is None
    assert [fields for _, _, fields in again] == [fields for at, (_, _, fields) in enumerate(downs) if at != dropped]


def test_a_pipeline_post_is_one_unit_named_by_its_message():
    """A `POST /raft` carries one message (built here from a real vote the stream carried)."""
    up, down = captured("message-stream-1")
    vote = next(frame[8:] for frame in stream_frames(down) if message_fields(frame[8:])[1]["type"] == "MsgVote")
    post = b"POST /raft HTTP/1.1\r\nHost: n2\r\nContent-Length: %d\r\n\r\n" % len(vote) + vote
    connection = Connection()
    units = connection.up(post[:30]) + connection.up(post[30:] + post)
    assert [(unit, kind) for unit, kind, _ in units] == [(post, "vote-request")] * 2
    assert connection.down(b"HTTP/1.1 204 No Content\r\n\r\n") == [(b"HTTP/1.1 204 No Content\r\n\r\n", "", {})]


def test_bytes_it_cannot_frame_pass_through_and_say_why():
    connection = Connection()
    garbage = b"\x16\x03\x01\x02\x00" * 20_000  # (a TLS hello, say: no HTTP head within 64 kB)
    passed = connection.up(garbage[:70_000]) + connection.up(garbage[70_000:])
    assert b"".join(unit for unit, _, _ in passed) == garbage and {kind for _, kind, _ in passed} == {""}
    assert connection.unframed == "no HTTP head"
    _, _, downs = framed(
        b"GET /raft/stream/message/1 HTTP/1.1\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    )
    assert downs[-1] == (b"zz\r\n", "", {})
