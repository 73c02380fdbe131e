"""Each replica's own copy around the place an anomaly names (a lost or
divergent record of committed-data-loss), so whoever reads the report sees
what every node holds there, place by place, and which node holds nothing
at all (a final row with no offset: its log or stream is gone)."""

from __future__ import annotations

import html
import json

import pandas as pd

# Places shown on each side of the one the anomaly names.
SPAN = 3
# Copies shown per report: the first anomalies' (each is a table of nodes x places).
MAX_SHOWN = 3
WIDTH = 48


def render_copies(final: pd.DataFrame, anomaly: dict, number: int) -> str:
    """A table: the places around the anomaly's offset (its own marked), a column per node."""
    offset = anomaly.get("offset")
    if not isinstance(offset, int):
        return ""
    key = anomaly.get("key")
    mine = final if key is None else final[final["key"] == key]
    nodes = sorted(final["node"].dropna().unique())
    placed = mine[mine["offset"].notna()]
    held = {(node, int(at)): value for node, at, value in zip(placed["node"], placed["offset"], placed["value"])}
    empty = set(nodes) - set(placed["node"])
    head = "".join(f"<th>{html.escape(node)}</th>" for node in nodes)
    rows = []
    for place in range(max(0, offset - SPAN), offset + SPAN + 1):
        cells = "".join(f"<td>{_shown(held.get((node, place)), node in empty)}</td>" for node in nodes)
        mark = " style='background:#fdecea'" if place == offset else ""
        rows.append(f"<tr{mark}><th>{place}</th>{cells}</tr>")
    where = f" of {html.escape(str(key))}" if key is not None else ""
    return (
        f"<h3 id='copies-{number}'>Each replica's copy around offset {offset}{where}</h3>"
        f"<table><tr><th>offset</th>{head}</tr>{''.join(rows)}</table>"
    )


def _shown(value, gone: bool) -> str:
    if gone:
        return "<i>holds nothing</i>"
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "–"
    text = value if isinstance(value, str) else json.dumps(value)
    return html.escape(text if len(text) <= WIDTH else text[: WIDTH - 1] + "…")
