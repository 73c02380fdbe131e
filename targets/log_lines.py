"""What targets share in reading their nodes' logs: a JSON-lines log (the
reference quorum's events.jsonl, etcd's zap output) holds a record a line,
and a torn last line, cut short by a kill, is none. The live checks read
the run's own history.jsonl as it is written the same way (`NewLines`)."""

from __future__ import annotations

import json
import os
from array import array
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
    of a node's log reads each line once, however long the log grows, and a
    last line not yet ended waits for the next call. A log replaced (a wiped
    node's new file) is read from its start. A log whose end changed under
    the reader (a disk lost what was not fsynced, then the node wrote on)
    is read again, and the lines that are still those read before (by a
    hash of each) are left out: none is given twice, none is missed.
    `append_only`: a file nothing but appends to (the run's own
    history.jsonl), whose lines need no hash (8 bytes a line, for hours)."""

    def __init__(self, path: Path, append_only: bool = False) -> None:
        self.path, self.at, self.last = Path(path), 0, b""
        self.inode: int | None = None
        self.append_only = append_only
        self.hashes = array("q")  # of every whole line given, in order

    def __call__(self) -> list[str]:
        return self.whole().decode("utf-8", errors="replace").splitlines()

    def whole(self) -> bytes:
        """The new whole lines as they are written, newlines and all."""
        with open(self.path, "rb") as log:
            stat = os.fstat(log.fileno())
            if stat.st_ino != self.inode:
                self.at, self.last, self.inode, self.hashes = 0, b"", stat.st_ino, array("q")
            if stat.st_size >= self.at:
                log.seek(self.at - len(self.last))
                text = log.read()
                if text.startswith(self.last):
                    return self._given(text[len(self.last) :])
            log.seek(0)
            return self._again(log.read())

    def _given(self, text: bytes) -> bytes:
        whole = text[: text.rfind(b"\n") + 1]
        self.at += len(whole)
        if self.append_only:
            self.last = whole[whole.rfind(b"\n", 0, len(whole) - 1) + 1 :] if whole else self.last
            return whole
        lines = whole.splitlines(keepends=True)
        self.hashes.extend(hash(line) for line in lines)
        self.last = lines[-1] if lines else self.last
        return whole

    def _again(self, text: bytes) -> bytes:
        """The log read whole after its end changed: the lines past those that are as they were given."""
        lines = text[: text.rfind(b"\n") + 1].splitlines(keepends=True)
        same = 0
        while same < min(len(lines), len(self.hashes)) and hash(lines[same]) == self.hashes[same]:
            same += 1
        del self.hashes[same:]
        self.at = sum(len(line) for line in lines[:same])
        self.last = lines[same - 1] if same else b""
        return self._given(b"".join(lines[same:]))
