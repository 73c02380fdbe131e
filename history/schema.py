"""The history's tables, as docs/organisation.md defines them ("The history"): their
columns and types, and rows made into a typed DataFrame. This sits below
both the checkers (which read the tables) and results (which write and load
run directories), so data flows one way: checkers import nothing of results.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# Text columns are Arrow-backed: the checkers' string work stays vectorised.
TEXT = "string[pyarrow]"

HISTORY_COLUMNS = {
    "index": "int64",
    "time_ns": "int64",
    "process": "int64",
    "type": TEXT,
    "f": TEXT,
    "key": TEXT,
    "value": TEXT,
    "node": TEXT,
    "epoch": "Int64",
    "leader": TEXT,
    "offset": "Int64",
    "error": TEXT,
}
EVENTS_COLUMNS = {
    "time_ns": "int64",
    "node": TEXT,
    "generation": "Int64",
    "event": TEXT,
    "state": TEXT,
    "epoch": "Int64",
    "leader": TEXT,
    "voted_for": TEXT,
    "candidate": TEXT,
    "offset": "Int64",
    "hwm": "Int64",
    "directory_id": TEXT,
    "voters": TEXT,
    "source": TEXT,
    # For the membership checker: the directory id
    # a vote request named for the voter (`vote`, `prevote`), and the mode of
    # an answered voter change (`voter-change-answered`).
    "as_directory": TEXT,
    "ack_when_committed": "boolean",
    # For the generation rule (KIP-380), as JSON: [node, generation, offset]
    # per replica a `commit` counted, or the later life a `generation` event heard.
    "replicas": TEXT,
    # Why a node stopped on its own (`halted`: its own error; `exited`: seen by the harness).
    "reason": TEXT,
    # Where a status poll says it: the end of the node's log that is on disk
    # (fsynced), for the abstract state's fsync lag.
    "synced": "Int64",
}
# `key`: the list an append went to where appends are keyed (etcd); null for
# the reference quorum's one log.
FINAL_COLUMNS = {"node": TEXT, "offset": "Int64", "epoch": "Int64", "value": TEXT, "key": TEXT}
OP_TYPES = ("invoke", "ok", "fail", "info")
# The history's process of the nemesis (docs/organisation.md): its faults and voter changes.
NEMESIS_PROCESS = -1


def frame(rows: list[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    """Rows as a DataFrame with exactly `columns`, typed (missing values are null)."""
    df = pd.DataFrame.from_records(rows, columns=list(columns))
    for name, dtype in columns.items():
        if dtype == TEXT:
            df[name] = df[name].map(_as_text)
        elif dtype == "Int64" and df[name].dtype == np.float64 and df[name].abs().max() >= 2**53:
            # Integers and nulls came as floats, which hold integers exactly only below 2^53: from the rows again.
            df[name] = pd.array([row.get(name) for row in rows], dtype=dtype)
        df[name] = df[name].astype(dtype)
    return df


def _as_text(value: object) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, str) else json.dumps(value)


def nemesis_done(history: pd.DataFrame) -> pd.DataFrame:
    """The faults the nemesis (process -1) confirmed, in history order. Its
    rows are found by the integer process column first: comparing every
    client row's `type` as text cost a checker more than the rest it does."""
    rows = np.flatnonzero(history["process"].to_numpy(dtype="int64") == NEMESIS_PROCESS)
    confirmed = holds(history["type"].iloc[rows], ["ok"])
    return history.iloc[rows[confirmed]]


def columns(table: pd.DataFrame, *names: str) -> Iterator[tuple[Any, ...]]:
    """The rows as tuples of these columns' values (a null as `pd.NA`), for
    the loops that walk a table row by row: `itertuples` makes a tuple type
    at each call and takes every column (about a millisecond, most of a
    small run's check when every checker does it)."""
    return zip(*(table[name].tolist() for name in names))


def arrow(column: pd.Series) -> pa.Array | pa.ChunkedArray:
    """A column's Arrow data: the array itself where the column is Arrow-backed
    (as the contract's text columns are), else converted."""
    data = column.array
    return data.__arrow_array__() if hasattr(data, "__arrow_array__") else pa.array(column, from_pandas=True)


def holds(column: pd.Series, values: Iterable[str]) -> np.ndarray:
    """Which rows hold one of `values` (a null holds none), compared in Arrow:
    pandas' `isin` and `==` cost a quarter of a millisecond a call, which on
    a small history is more than the comparing."""
    found = pc.is_in(arrow(column), value_set=pa.array(list(values), type=pa.large_string()))
    held: np.ndarray = pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    return held


def named_nodes(node: object) -> list[Any]:
    """What a nemesis row's `node` names (a JSON list: nodes, links, or a
    damaged file's description); empty for anything else."""
    if not isinstance(node, str):
        return []
    try:
        value = json.loads(node)
    except ValueError:
        return []
    return value if isinstance(value, list) else []
