"""Which completion answers which invocation: one definition for the
checkers that read client operations (linearizability, availability) and the
report. A client process waits for each answer, so a completion answers the
invocation just before it among its process's rows; an invocation whose next
row of its process is not a completion was never answered.

Paired with arrays (a stable sort by process, then a look at each row's
neighbour), not a join: on a 2M-row history this is a few hundred
milliseconds where `merge_asof` took over a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from history.schema import holds


@dataclass(frozen=True)
class Pairs:
    """Row positions into the history (not its `index` column)."""

    call: np.ndarray  # each answered invocation, in the order of its answer
    done: np.ndarray  # the answer, in history order
    pending: np.ndarray  # invocations never answered, in history order


def pair(history: pd.DataFrame) -> Pairs:
    process = history["process"].to_numpy(dtype="int64")
    client = np.flatnonzero(process >= 0)
    key = process[client]
    if len(key) and key.max() < 2**15:
        key = key.astype(np.int16)  # numpy's stable sort of 16-bit integers is a radix sort: 10x faster
    by_process = np.argsort(key, kind="stable")
    order = client[by_process]  # by process, then history order
    invoke = holds(history["type"], ["invoke"])[order]
    key = key[by_process]
    next_same = np.zeros(len(order), dtype=bool)  # the next row is of the same process
    next_same[:-1] = key[1:] == key[:-1]
    answered = invoke & next_same
    answered[:-1] &= ~invoke[1:]
    call = order[answered]
    done = order[np.flatnonzero(answered) + 1]
    by_time = np.argsort(done, kind="stable")
    return Pairs(call[by_time], done[by_time], np.sort(order[invoke & ~answered]))
