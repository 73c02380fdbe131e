"""Each node's latest value of something it logs, as of any moment: a node's
state (coverage) or the size of its voter set in force (election-safety).
Its rows are sorted once and looked up by a search in their times, not
filtered and sorted again for every moment asked (or joined `as of`, which
costs more than the rules that ask)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


class Latest:
    """From `table`'s `time_ns` and `node` columns and one value per row
    (`values`, in the table's order): a row at the moment asked counts, and
    among rows at one moment the later in the table wins."""

    def __init__(self, table: pd.DataFrame, values: list[Any]) -> None:
        order = np.argsort(table["time_ns"].to_numpy(dtype="int64"), kind="stable")
        times, nodes = table["time_ns"].to_numpy(dtype="int64")[order], table["node"].to_numpy(dtype=object)[order]
        values = [values[k] for k in order]
        self.by_node: dict[str, tuple[np.ndarray, list[Any]]] = {}
        for node in sorted(set(nodes)):
            mine = np.flatnonzero(nodes == node)
            self.by_node[node] = (times[mine], [values[k] for k in mine])

    def of(self, node: str, time_ns: int, default: Any = None) -> Any:
        """`node`'s latest value at `time_ns`, or `default` where it had none yet."""
        times, values = self.by_node.get(node, ((), ()))
        known = int(np.searchsorted(times, time_ns, side="right"))
        return values[known - 1] if known else default

    def at(self, time_ns: int) -> dict[str, Any]:
        """Every node's latest value at `time_ns` (nodes in name order; those with none yet left out)."""
        found = ((node, self.of(node, time_ns, _NOTHING)) for node in self.by_node)
        return {node: value for node, value in found if value is not _NOTHING}


_NOTHING = object()
