"""Checker throughput on generated histories.

Run: .venv/bin/python benchmarks/checker_speed.py [--rows 10000000] [--lin 1000,10000,100000]

The first three checkers run on a generated valid history of `--rows` rows
(history, events and final tables built with numpy, no Python loop per
row); the linearizability checker on that history's appends (the log,
decided by offset order) and on register histories of N operations from 8
concurrent clients of a linearizable register. Each figure has its goal
(issue "check at the speed of the data") beside it.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
import pandas as pd

from checkers.data_loss import committed_data_loss
from checkers.elections import election_safety, single_leader_per_epoch
from checkers.linearizable import linearizable
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, TEXT, frame

NODES = np.array(["n1", "n2", "n3", "n4", "n5"])


def append_history(ops: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`ops` acknowledged appends (2 rows each) and the 5 nodes' final logs."""
    i = np.arange(2 * ops)
    op = i // 2
    epoch = 1 + op // 100_000
    leader = NODES[(epoch - 1) % len(NODES)]
    completed = (i % 2).astype(bool)
    history = pd.DataFrame(
        {
            "index": i,
            "time_ns": i * 1000,
            "process": op % 64,
            "type": pd.array(np.where(completed, "ok", "invoke"), dtype=TEXT),
            "f": pd.array(np.full(len(i), "append"), dtype=TEXT),
            "key": pd.array([None] * len(i), dtype=TEXT),
            "value": pd.array(op.astype(str), dtype=TEXT),
            "node": pd.array(leader, dtype=TEXT),
            "epoch": pd.array(np.where(completed, epoch, None), dtype="Int64"),
            "leader": pd.array(np.where(completed, leader, None), dtype=TEXT),
            "offset": pd.array(np.where(completed, op, None), dtype="Int64"),
            "error": pd.array([None] * len(i), dtype=TEXT),
        }
    )
    offsets = np.tile(np.arange(ops), len(NODES))
    final = pd.DataFrame(
        {
            "node": pd.array(np.repeat(NODES, ops), dtype=TEXT),
            "key": pd.array([None] * len(offsets), dtype=TEXT),
            "offset": pd.array(offsets, dtype="Int64"),
            "epoch": pd.array(1 + offsets // 100_000, dtype="Int64"),
            "value": pd.array(offsets.astype(str), dtype=TEXT),
        }
    )
    return history, final


def with_every_column(table: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """The table with the schema's other columns added, empty, in the schema's order."""
    missing = {name: pd.array([None] * len(table), dtype=kind) for name, kind in columns.items() if name not in table}
    return table.assign(**missing)[list(columns)]


def status_events(rows: int) -> pd.DataFrame:
    """Status polls and log events of 5 nodes: epochs rise, one leader an epoch, one vote a voter an epoch."""
    i = np.arange(rows)
    node = NODES[i % len(NODES)]
    epoch = 1 + i // 200_000
    leader = NODES[(epoch - 1) % len(NODES)]
    kinds = np.where(np.isin(i % 1000, (7, 8, 9)), "vote", np.where(i % 1000 == 3, "transition", "status"))
    state = np.where(node == leader, "leader", "follower")
    return with_every_column(
        pd.DataFrame(
            {
                "time_ns": i * 100,
                "node": pd.array(node, dtype=TEXT),
                "generation": pd.array(np.ones(rows, dtype=np.int64), dtype="Int64"),
                "event": pd.array(kinds, dtype=TEXT),
                "state": pd.array(np.where(kinds == "vote", None, state), dtype=TEXT),
                "epoch": pd.array(epoch, dtype="Int64"),
                "leader": pd.array(np.where(kinds == "vote", None, leader), dtype=TEXT),
                "voted_for": pd.array([None] * rows, dtype=TEXT),
                "candidate": pd.array(np.where(kinds == "vote", leader, None), dtype=TEXT),
                "offset": pd.array(i, dtype="Int64"),
                "hwm": pd.array(i, dtype="Int64"),
                "directory_id": pd.array([None] * rows, dtype=TEXT),
                "voters": pd.array([None] * rows, dtype=TEXT),
                "source": pd.array(np.where(kinds == "status", "poll", "log"), dtype=TEXT),
            }
        ),
        EVENTS_COLUMNS,
    )


def register_history(ops: int, seed: int = 0) -> pd.DataFrame:
    """8 clients on 1 key; each op takes effect inside its interval, so the history is linearizable."""
    rng = random.Random(seed)
    clocks = [0] * 8
    effects = []
    for n in range(ops):
        process = n % 8
        start = clocks[process] + rng.randint(0, 3)
        point = start + rng.randint(1, 20)
        end = point + rng.randint(1, 20)
        clocks[process] = end
        effects.append((point, process, start, end, rng.random(), n))
    rows, state = [], None
    for _point, process, start, end, roll, n in sorted(effects):
        if roll < 0.5:
            f, value, done = "read", None, state
        else:
            f, value, done = "write", n, n
            state = n
        rows.append(
            {
                "time_ns": start,
                "process": process,
                "type": "invoke",
                "f": f,
                "key": "k",
                "value": json.dumps(value) if value is not None else None,
            }
        )
        rows.append({"time_ns": end, "process": process, "type": "ok", "f": f, "key": "k", "value": json.dumps(done)})
    rows.sort(key=lambda r: (r["time_ns"], r["type"] == "invoke"))
    return frame([{"index": i, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS)


GOAL_ROWS_S = 2_000_000
GOAL_REGISTER_100K_S = 5.0


def timed(name: str, rows: int, fn) -> None:
    start = time.perf_counter()
    verdict = fn()
    seconds = time.perf_counter() - start
    assert verdict["valid"] is True, (name, verdict["anomalies"][:1], verdict.get("error"))
    print(f"{name:26} {rows:>11,} rows  {seconds:7.2f} s  {rows / seconds:>12,.0f} rows/s  (goal {GOAL_ROWS_S:,})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--lin", default="1000,10000,100000")
    args = parser.parse_args()
    events = status_events(args.rows)
    history, final = append_history(args.rows // 2)
    timed("election-safety", len(events), lambda: election_safety(events))
    timed("single-leader-per-epoch", len(events) + len(history), lambda: single_leader_per_epoch(events, history))
    empty = events.iloc[0:0]
    timed("committed-data-loss", len(history) + len(final), lambda: committed_data_loss(history, final, empty))
    timed("linearizable (log)", len(history), lambda: linearizable(history, budget_s=600))
    for ops in (int(n) for n in args.lin.split(",")):
        register = register_history(ops)
        start = time.perf_counter()
        verdict = linearizable(register, budget_s=600)
        seconds = time.perf_counter() - start
        goal = f"  (goal for 100,000: {GOAL_REGISTER_100K_S:g} s)" if ops == 100_000 else ""
        print(f"linearizable {ops:>9,} ops (8 clients): {seconds:7.2f} s  valid={verdict['valid']}{goal}")


if __name__ == "__main__":
    main()
