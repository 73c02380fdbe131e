"""What targets share in reading their nodes' logs: a JSON-lines log (the
reference quorum's events.jsonl, etcd's zap output) holds a record a line,
and a torn last line, cut short by a kill, is none."""

from __future__ import annotations

import json
from typing import Any


def json_field(line: str, name: str) -> Any:
    """The field `name` of a line's JSON object; None for a line that is not
    one (a torn last line) or that lacks it."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get(name) if isinstance(record, dict) else None
