"""The peers' wire format: every message survives encoding, JSON and
decoding unchanged, and encodes as its fields do (dataclasses.asdict's
deep form, which the shallow encoding replaced for speed)."""

from __future__ import annotations

import json
from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from targets.kraft.messages import _TYPES, Entry, FetchResponse, decode, encode

ENTRIES = st.lists(
    st.builds(Entry, epoch=st.integers(0, 9), data=st.dictionaries(st.sampled_from(["op", "value"]), st.integers())),
    max_size=3,
).map(tuple)
MESSAGES = st.one_of(
    *(st.builds(cls, entries=ENTRIES) if cls is FetchResponse else st.from_type(cls) for cls in _TYPES.values())
)


@given(MESSAGES)
def test_a_message_comes_back_as_it_was_sent(msg):
    sent = encode(msg)
    assert json.loads(json.dumps(sent)) == json.loads(json.dumps({**asdict(msg), "type": type(msg).__name__}))
    assert decode(json.loads(json.dumps(sent))) == msg
