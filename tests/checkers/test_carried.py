"""A run judged look by look, each over the rows the last look left
(`left_for_later`, `events_left_for_later`) and those recorded since, as `run --check-live` judges
it: a checker finds a violation at some look exactly when it finds one over
the whole run so far. Proven on simulated runs of the correct node and of
planted bugs cut at hypothesis's rows, and on generated append logs (shared
offsets, offsets out of real-time order, timeouts, failures) cut anywhere."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.carried import events_left_for_later, left_for_later
from checkers.elections import election_safety
from checkers.linearizable import linearizable
from checkers.verdict import check_prefix
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

from .test_linearizable import append_histories
from .test_prefix_checks import CASES, KRAFT, simulated


def looks(history: pd.DataFrame, events: pd.DataFrame, cuts: list[int]) -> dict[str, bool]:
    """Per checker, whether a look found it violated: one look after each
    cut (a row count), and one at the end."""
    left, left_events, seen_ns, violated = history.iloc[0:0], events.iloc[0:0], -1, {}
    for start, end in zip([0, *cuts], [*cuts, len(history)]):
        table = pd.concat([left, history.iloc[start:end]], ignore_index=True)
        at_ns = int(history["time_ns"].iloc[end - 1]) if end else -1
        if end == len(history):
            at_ns = max(at_ns, int(events["time_ns"].max()))
        since = events[(events["time_ns"] > seen_ns) & (events["time_ns"] <= at_ns)]
        judged = pd.concat([left_events, since], ignore_index=True)
        for name, found in check_prefix(table, judged, 5, KRAFT).items():
            violated[name] = violated.get(name, False) or found["valid"] is False
        left, left_events, seen_ns = left_for_later(table), events_left_for_later(judged), max(seen_ns, at_ns)
    return violated


def cut_points(draw_cuts: list[float], rows: int) -> list[int]:
    return sorted({int(share * rows) for share in draw_cuts})


@settings(max_examples=15, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES),
    seed=st.integers(0, 2**32 - 1),
    shares=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4),
)
def test_looks_over_the_rows_left_find_what_one_look_over_everything_finds(case, seed, shares):
    history, events, _ = simulated(case, seed)
    whole = {name: found["valid"] is False for name, found in check_prefix(history, events, 5, KRAFT).items()}
    assert looks(history, events, cut_points(shares, len(history))) == whole


@settings(max_examples=200, deadline=None)
@given(h=append_histories(), shares=st.lists(st.floats(0.0, 1.0), max_size=5))
def test_an_append_log_judged_in_pieces_is_judged_as_it_is_whole(h, shares):
    left, violated = h.iloc[0:0], False
    cuts = cut_points(shares, len(h))
    for start, end in zip([0, *cuts], [*cuts, len(h)]):
        table = pd.concat([left, h.iloc[start:end]], ignore_index=True)
        violated = violated or linearizable(table)["valid"] is False
        left = left_for_later(table)
    assert violated == (linearizable(h)["valid"] is False)


def test_settled_appends_leave_only_the_highest_and_the_waiting_ones_stay_whole():
    """Three appends answered in turn, then one still waiting: of the answered
    ones only the highest offset is left (with the first answer of each
    claim), and the waiting call stays."""
    rows = []
    for n, offset in enumerate([0, 2, 1]):
        rows += [
            {"time_ns": 10 * n, "process": n, "type": "invoke", "f": "append", "value": f'"{n}"'},
            {"time_ns": 10 * n + 5, "process": n, "type": "ok", "f": "append", "value": f'"{n}"', "offset": offset},
        ]
    rows.append({"time_ns": 40, "process": 9, "type": "invoke", "f": "append", "value": '"w"'})
    history = frame([{"index": i, **row} for i, row in enumerate(rows)], HISTORY_COLUMNS)
    left = left_for_later(history)
    assert left["index"].tolist() == [0, 1, 2, 3, 6]
    assert np.array_equal(left["offset"].dropna().to_numpy(dtype="int64"), [0, 2])


def test_a_nodes_epoch_gone_back_after_its_commits_were_left_out_is_found():
    """Commits of epoch 5, judged and left out but the first; then, in the
    next look, the node's log says epoch 4: gone back, as over every row."""
    commits = [{"time_ns": t, "node": "n1", "event": "commit", "epoch": 5, "hwm": t, "source": "log"} for t in range(4)]
    first = frame(commits, EVENTS_COLUMNS)
    left = events_left_for_later(first)
    assert left["time_ns"].tolist() == [0]
    back = frame(
        [{"time_ns": 9, "node": "n1", "event": "transition", "state": "candidate", "epoch": 4, "source": "log"}],
        EVENTS_COLUMNS,
    )
    judged = election_safety(pd.concat([left, back], ignore_index=True), KRAFT)
    assert judged["valid"] is False and judged == election_safety(pd.concat([first, back], ignore_index=True), KRAFT)
