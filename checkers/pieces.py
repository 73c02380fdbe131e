"""A run too long to hold, checked in pieces of its history (`splitbrain
check` on a long run: results/pieces.py reads the pieces).

The history is given piece by piece, in its order. Each piece is judged
with what the pieces before it left (checkers/carried.py, as a live look
is): the rows any later violation could still involve, which stand for the
rest. Only `linearizable` must see every settled operation once, so it
judges each piece; every other checker reads of the history only rows the
pieces leave (leadership claims, voter changes, nemesis rows, operations of
registers and locks), so it judges once, at the end, `history()`: the rows
left, the run's first and last rows (its span) and whatever rows the
caller adds (those the anomalies name). What needs every client operation
is added up as pieces pass: availability's client figures
(`ClientTally`) and whatever else `on_pairs` is given (the report's
drawing). `committed-data-loss` reads the final logs, in windows of places
(checkers/data_loss.py's `committed_data_loss_in_windows`).

So memory grows with the piece's length, the concurrency and what the
rows left hold, not with the run's length (but for registers' and locks'
histories, which are left whole, as their search needs them whole).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from history.schema import FINAL_COLUMNS, frame

from .availability import ClientTally
from .carried import left_for_later
from .checker import Result, Tables
from .linearizable import linearizable
from .mutex import LOCK_FS
from .pairing import pair


class InPieces:
    """The history's pieces, added in order; `windows` the run's fault
    windows (checkers/availability.py's `fault_windows` of its nemesis rows),
    by which client operations are tallied."""

    def __init__(
        self,
        windows: pd.DataFrame,
        budget_s: float,
        on_pairs: Iterable[Callable[[pd.DataFrame, np.ndarray, np.ndarray], None]] = (),
    ) -> None:
        self.windows = windows
        self.budget_s = budget_s
        self.on_pairs = list(on_pairs)
        self.clients = ClientTally()
        self.client_fs: set[str] = set()
        self.left: pd.DataFrame | None = None
        self.waiting: pd.DataFrame | None = None  # invocations whose answer may be in the next piece
        self.ends: list[pd.DataFrame] = []  # the first row, and the last so far
        self.linearizable: Result | None = None
        self.spent_s = 0.0
        self.pieces = 0
        self.rows = 0

    def add(self, piece: pd.DataFrame) -> None:
        if piece.empty:
            return
        self.pieces += 1
        self.rows += len(piece)
        self.ends = [self.ends[0] if self.ends else piece.iloc[:1], piece.iloc[-1:]]
        self.client_fs |= set(piece.loc[piece["process"] >= 0, "f"].dropna().unique())
        self._pair(piece)
        work = piece if self.left is None else pd.concat([self.left, piece], ignore_index=True)
        if self.client_fs and not self.client_fs & LOCK_FS:
            began = time.monotonic()
            judged = linearizable(work, None, max(self.budget_s - self.spent_s, 0.0))
            self.spent_s += time.monotonic() - began
            self.linearizable = _kept(self.linearizable, judged)
        self.left = left_for_later(work)

    def _pair(self, piece: pd.DataFrame) -> None:
        """Pair the piece's client rows with the invocations still waiting;
        tally what was answered; keep waiting those not yet answered whose
        process has no later row (one with a later row was never answered)."""
        rows = piece if self.waiting is None else pd.concat([self.waiting, piece], ignore_index=True)
        pairs = pair(rows)
        self.clients.add(rows, self.windows, pairs)
        for listener in self.on_pairs:
            listener(rows, pairs.call, pairs.done)
        process = rows["process"].to_numpy(dtype="int64")
        last = np.zeros(len(rows), dtype=bool)
        _, from_end = np.unique(process[::-1], return_index=True)
        last[len(rows) - 1 - from_end] = True
        self.waiting = rows.take(pairs.pending[last[pairs.pending]]).reset_index(drop=True)

    def history(self, named: pd.DataFrame | None = None) -> pd.DataFrame:
        """The rows the checkers that judge once read: what the pieces left,
        the run's first and last rows, and `named` (rows the caller read back,
        such as those anomalies name), once each, in the history's order."""
        parts = [part for part in [self.left, *self.ends, named] if part is not None and len(part)]
        if not parts:
            return frame([], {})
        rows = pd.concat(parts, ignore_index=True).drop_duplicates(subset=["index"])
        return rows.sort_values("index", kind="stable").reset_index(drop=True)

    def client_figures(self) -> dict[str, Any]:
        """Availability's client figures, once every piece is in (the tally's latencies are let go)."""
        return self.clients.figures()

    def never_answered(self) -> pd.DataFrame:
        """The invocations still waiting once every piece is in."""
        return self.waiting if self.waiting is not None else frame([], {})

    def tables(
        self,
        events: pd.DataFrame,
        capabilities: Any,
        named: pd.DataFrame | None = None,
        final_of: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    ) -> Tables:
        """What the checkers that judge once read: the rows left, the client
        figures tallied over every piece, and the final copies `final_of` the
        rows left reads (what of them those rows need: none if not given),
        read only if a checker asks for them."""
        history = self.history(named)
        return Tables(
            history,
            events,
            partial(final_of, history) if final_of else frame([], FINAL_COLUMNS),
            capabilities,
            self.budget_s,
            frozenset(self.client_fs),
            self.client_figures(),
        )


def _kept(before: Result | None, now: Result) -> Result:
    """A checker's result over the pieces so far: the first violation found
    stays (a later piece no longer holds the rows that showed it); else an
    undecided piece leaves the whole undecided; else the latest."""
    if before is None:
        return now
    if before["valid"] is False or (before["valid"] == "unknown" and now["valid"] is not False):
        return before
    return now
