"""What a run's first part leaves for the checks of its later parts, so that
a live look (`run --check-live`, harness/live.py) judges the rows recorded
since the last look and these, not the whole run so far: a look's work then
grows with the load's rate and concurrency, not with the run's length.

The rows left are every row the checkers that judge a run so far
(each checker's `so_far`, checkers/checker.py) could still need to find a violation the
whole run's rows show:
- every nemesis row (few: the faults and operator changes `membership` reads);
- every operation not yet settled: still waiting for its answer, or answered
  after the earliest call still waiting (it is concurrent with an operation
  whose answer is still to come);
- of the settled ones, every operation but the unkeyed appends (registers
  and keyed appends are searched, and what is searched needs all of it);
- of the settled unkeyed appends, the one acknowledged at the highest
  offset. An append answered later constrains them only through it: any
  later call comes after every settled answer, so it must take an offset
  above all of theirs (`models.offsets_order`), that is above this one's;
- and the first answer of each kind of leadership claim (`single-leader-per-epoch`:
  each epoch, leader named, answering node, and whether it was ok), and the
  first operation of each function (so the same checkers apply).

Each operation is kept whole (its call and its answer), in the history's
order, so pairing reads the rows left as it reads the whole history.

Of the events, the many `commit`s (a node logs one per commit) and
`status` polls (a few a second per node) are judged once: a commit's
generation rule (`committed-data-loss`) reads only the generation events
logged before it, which stay; what else reads them reads the first of
each node's epoch (and leadership claim, as above), of each kind. That is enough to compare a node's epochs in turn
(`election-safety`): an epoch gone back is found against the last epoch
before it, and each epoch's first commit stands for its later ones but where
another epoch came between, which was itself found going back or forward.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from history.schema import holds

from .pairing import pair

# The events a run logs many of, whose epoch, leader, node and state are all the checks that
# judge a run so far read of them (a commit's generations are judged when it is first seen).
MANY_EVENTS = ("commit", "status")


def left_for_later(history: pd.DataFrame) -> pd.DataFrame:
    """The rows of `history` (a run so far, in its order) a later look still
    needs, in the same order, with a fresh row index."""
    if history.empty:
        return history
    pairs = pair(history)
    times = history["time_ns"].to_numpy(dtype="int64")
    keep = (history["process"] < 0).to_numpy()
    keep[pairs.pending] = True
    # Settled: answered before the earliest call still waiting for its answer.
    waiting_since = times[pairs.pending].min() if len(pairs.pending) else np.iinfo("int64").max
    settled = times[pairs.done] < waiting_since
    ops = np.zeros(len(pairs.done), dtype=bool)  # the answered operations kept whole
    ops[~settled] = True
    offset = history["offset"]
    log_append = (history["key"].isna().to_numpy() & holds(history["f"], ["append"]))[pairs.call]
    ops[settled & ~log_append] = True
    answered = offset.notna().to_numpy() & holds(history["type"], ["ok", "fail"])  # as `LogColumns.order` places them
    placed = np.flatnonzero(settled & log_append & answered[pairs.done])
    if len(placed):
        offsets = offset.to_numpy(dtype="int64", na_value=0)[pairs.done[placed]]
        ops[placed[np.argmax(offsets)]] = True
    ops[_firsts(history, pairs.done, settled)] = True
    keep[pairs.call[ops]] = True
    keep[pairs.done[ops]] = True
    return history[keep].reset_index(drop=True)


def events_left_for_later(events: pd.DataFrame) -> pd.DataFrame:
    """The events (a run so far, in time order) a later look still needs, in
    the same order, with a fresh row index."""
    many = holds(events["event"], MANY_EVENTS)
    if not many.any():
        return events
    keep = ~many
    keep[np.flatnonzero(many)[_distinct(events[many], ["event", "epoch", "leader", "node", "state"])]] = True
    return events[keep].reset_index(drop=True)


def _firsts(history: pd.DataFrame, done: np.ndarray, settled: np.ndarray) -> np.ndarray:
    """Positions (into `done`) of the first settled answer of each leadership
    claim and of each function."""
    answers = history.take(done[settled])
    claims = answers[["epoch", "leader", "node"]].assign(ok=holds(answers["type"], ["ok"]))
    firsts = _distinct(claims, list(claims)) & answers["epoch"].notna().to_numpy()
    firsts |= _distinct(answers, ["f"])
    positions: np.ndarray = np.flatnonzero(settled)[firsts]
    return positions


def _distinct(table: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Which rows are the first of their values in `columns`, nulls alike
    (each column coded as integers, null a code of its own, and the codes
    combined column by column: a tenth of comparing the values as objects)."""
    codes = np.zeros(len(table), dtype="int64")
    for name in columns:
        column, values = pd.factorize(table[name], use_na_sentinel=False)
        codes, _ = pd.factorize(codes * (len(values) + 1) + column)
    _, first = np.unique(codes, return_index=True)
    distinct: np.ndarray = np.zeros(len(table), dtype=bool)
    distinct[first] = True
    return distinct
