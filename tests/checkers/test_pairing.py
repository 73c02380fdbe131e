"""Which completion answers which invocation (`checkers/pairing.py`), held to
the rule walked row by row: a completion answers its process's invocation
just before it; an invocation not answered by its process's next row never
was. Histories are generated with processes interleaved, nemesis rows
(process -1) among them, and the odd malformed process (a second invocation
before the first's answer, an answer with no invocation)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from checkers.pairing import pair
from history.schema import HISTORY_COLUMNS, frame

ROWS = st.lists(st.tuples(st.integers(-1, 4), st.sampled_from(["invoke", "invoke", "ok", "fail", "info"])), max_size=60)


def walked(rows: list[tuple[int, str]]) -> tuple[list[int], list[int], list[int]]:
    previous: dict[int, tuple[int, str]] = {}  # process -> its last row (position, type)
    pairs, pending = [], []
    for position, (process, kind) in enumerate(rows):
        if process < 0:
            continue
        before = previous.get(process)
        if before and before[1] == "invoke":
            if kind == "invoke":
                pending.append(before[0])
            else:
                pairs.append((before[0], position))
        previous[process] = (position, kind)
    pending += [position for position, kind in previous.values() if kind == "invoke"]
    return [c for c, _ in pairs], [d for _, d in pairs], sorted(pending)


@given(ROWS)
def test_pairs_are_the_row_by_row_rule(rows):
    history = frame(
        [{"index": i, "time_ns": i, "process": p, "type": t, "f": "read"} for i, (p, t) in enumerate(rows)],
        HISTORY_COLUMNS,
    )
    pairs = pair(history)
    call, done, pending = walked(rows)
    assert pairs.call.tolist() == call
    assert pairs.done.tolist() == done
    assert pairs.pending.tolist() == pending
