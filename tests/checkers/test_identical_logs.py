"""`committed-data-loss` checks a node's log once where it equals another
node's (as most runs end). Whatever the logs hold (copies, copies with a
record changed, dropped or nulled, keyed or not), the verdict is the one
given when the nodes' records come interleaved, which leaves every log to
be checked on its own: the same anomalies, naming the same nodes and values,
and the same stats."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.data_loss import committed_data_loss
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame

VALUES = st.one_of(st.none(), st.sampled_from(['"a"', '"b"', '"c"', '{"leader": 1}', '"d"']))
LOG = st.lists(st.tuples(st.sampled_from([None, "k"]), st.integers(0, 5), VALUES), max_size=8)
CHANGES = st.lists(st.one_of(st.none(), st.tuples(st.integers(0, 7), VALUES), st.just("drop")), min_size=1, max_size=4)
ACKED = st.lists(
    st.tuples(st.sampled_from(["ok", "fail", "info"]), st.sampled_from([None, "k"]), st.integers(0, 7), VALUES),
    max_size=10,
)


def logs(base: list, changes: list) -> list[list]:
    """A log per node: the base log, or it with one record's value changed, or its last record dropped."""
    made = []
    for change in changes:
        log = list(base)
        if change == "drop":
            log = log[:-1]
        elif change is not None and log:
            at, value = change
            key, offset, _ = log[at % len(log)]
            log[at % len(log)] = (key, offset, value)
        made.append(log)
    return made


@settings(max_examples=200)
@given(LOG, CHANGES, ACKED, st.randoms(use_true_random=False))
def test_a_log_equal_to_another_gives_the_verdict_it_gives_checked_on_its_own(base, changes, acked, rng: random.Random):
    rows = [
        {"node": f"n{i + 1}", "key": k, "offset": o, "value": v}
        for i, log in enumerate(logs(base, changes))
        for k, o, v in log
    ]
    history = frame(
        [
            {"index": i, "time_ns": i, "process": 0, "type": t, "f": "append", "key": k, "offset": o, "value": v}
            for i, (t, k, o, v) in enumerate(acked)
        ],
        HISTORY_COLUMNS,
    )
    events = frame([], EVENTS_COLUMNS)
    # The nodes' records interleaved at random, each node's in its order.
    queues = [[row for row in rows if row["node"] == node] for node in dict.fromkeys(row["node"] for row in rows)]
    shuffled = []
    while any(queues):
        shuffled.append(rng.choice([queue for queue in queues if queue]).pop(0))
    together = committed_data_loss(history, frame(rows, FINAL_COLUMNS), events)
    apart = committed_data_loss(history, frame(shuffled, FINAL_COLUMNS), events)
    assert together == apart
