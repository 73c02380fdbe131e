"""What targets share in reading their nodes' logs: a JSON-lines log (the
reference quorum's events.jsonl, etcd's zap output) holds a record a line,
and a torn last line, cut short by a kill, is none. The live checks read
the run's own history.jsonl as it is written the same way (`NewLines`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def json_field(line: str, name: str) -> Any:
    """The field `name` of a line's JSON object; None for a line that is not
    one (a torn last line) or that lacks it."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record.get(name) if isinstance(record, dict) else None


class NewLines:
    """The whole lines written to a log since the last call: a live reader
    of a node's log reads each line once, however long the log grows. A log
    replaced (a wiped node's new file) or cut shorter is read from its start;
    a last line not yet ended waits for the next call."""

    def __init__(self, path: Path) -> None:
        self.path, self.at = Path(path), 0
        self.inode: int | None = None

    def __call__(self) -> list[str]:
        return self.whole().decode("utf-8", errors="replace").splitlines()

    def whole(self) -> bytes:
        """The new whole lines as they are written, newlines and all."""
        with open(self.path, "rb") as log:
            stat = os.fstat(log.fileno())
            if stat.st_ino != self.inode or stat.st_size < self.at:
                self.at, self.inode = 0, stat.st_ino
            log.seek(self.at)
            text = log.read()
        whole = text.rfind(b"\n") + 1
        self.at += whole
        return text[:whole]
