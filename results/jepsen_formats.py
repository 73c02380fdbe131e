"""Readers of the histories other tools record, as `Record`s (one per op map
or log line, with its line number); what the records mean is decided in
`results/importer.py`, the same for every format.

- `jepsen-edn`: Jepsen's EDN, a vector of op maps or one map per line, read
  with a real EDN reader (edn_format), the whole file at once (the reader
  costs ~1 ms a call to set up). A `;` comment line may come first.
- `jepsen-log`: Jepsen's old log lines, `INFO  jepsen.util - PROCESS TYPE F
  VALUE` (tabs or spaces between fields; the value may hold spaces, `[1 2]`),
  as in the etcd histories Porcupine checks.

What `:fail` means differs between the two (see `results/importer.py`); the
readers only say which format a record came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import edn_format

from history.errors import UsageError

FORMATS = ("jepsen-edn", "jepsen-log")


class ImportFormatError(UsageError):
    """Input that cannot be imported; the message names the file and line."""


@dataclass
class Record:
    line: int
    process: Any  # an int, or a name such as "nemesis"
    type: str
    f: str
    key: Any
    value: Any
    error: Any
    time: int | None


def plain(value):
    """An EDN value as plain Python (keywords and symbols by name), storable as JSON."""
    if isinstance(value, (edn_format.Keyword, edn_format.Symbol)):
        return value.name
    if isinstance(value, (list, tuple, edn_format.ImmutableList)):
        return [plain(v) for v in value]
    if isinstance(value, (frozenset, set)):
        return sorted((plain(v) for v in value), key=repr)
    if isinstance(value, (dict, edn_format.ImmutableDict)):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    return value


def read_edn(path: Path) -> list[Record]:
    """The op maps of a Jepsen EDN history, each with the line it starts on."""
    text = _text(path)
    try:
        forms = edn_format.loads_all(text)
    except edn_format.EDNDecodeError as error:
        raise ImportFormatError(f"{path}: line {_error_line(text, error)}: not EDN: {error}") from None
    if len(forms) == 1 and isinstance(forms[0], (list, tuple, edn_format.ImmutableList)):
        forms = list(forms[0])
    lines = _map_lines(text, len(forms))
    records = []
    for ordinal, op in enumerate(forms, start=1):
        line = lines[ordinal - 1] if lines else ordinal
        where = f"line {line}" if lines else f"operation {ordinal}"
        if not isinstance(op, (dict, edn_format.ImmutableDict)):
            raise ImportFormatError(f"{path}: {where}: not an op map: {edn_format.dumps(op)[:80]}")
        fields = {str(plain(k)): v for k, v in op.items()}
        missing = [k for k in ("process", "type", "f") if k not in fields]
        if missing:
            raise ImportFormatError(f"{path}: {where}: op map without :{', :'.join(missing)}")
        time = fields.get("time")
        records.append(
            Record(
                line,
                plain(fields["process"]),
                plain(fields["type"]),
                plain(fields["f"]),
                plain(fields.get("key")),
                plain(fields.get("value")),
                plain(fields.get("error")),
                time if isinstance(time, int) else None,
            )
        )
    return records


def _map_lines(text: str, count: int) -> list[int]:
    """The line each op map starts on, when the file has the usual layout (one
    map per line); empty when it does not, and ops are named by position."""
    starts = [n for n, line in enumerate(text.split("\n"), start=1) if line.lstrip(" \t[").startswith("{")]
    return starts if len(starts) == count else []


_LEXPOS = re.compile(r"lexpos (\d+)|LexToken\([^,]+,.*,\d+,(\d+)\)")


def _error_line(text: str, error: Exception) -> str:
    """Where the EDN reader stopped: its position when it gives one, else the
    first line that does not read alone (the usual layout has one op map a
    line); "?" when every line does."""
    match = _LEXPOS.search(str(error))
    if match:
        return str(text.count("\n", 0, int(match[1] or match[2])) + 1)
    for number, line in enumerate(text.split("\n"), start=1):
        form = line.strip()
        form = form[1:] if form.startswith("[{") else form
        form = form[:-1] if form.endswith("}]") else form
        try:
            edn_format.loads_all(form)
        except edn_format.EDNDecodeError:
            return str(number)
    return "?"


_LOG_LINE = re.compile(r"^\S+\s+jepsen\.util - (?P<rest>.*)$")
_INTEGER = re.compile(r"^-?\d+$")


def read_log(path: Path) -> list[Record]:
    """The op lines of an old Jepsen log (other log lines are an error: they
    would mean this is not the format the user named)."""
    records = []
    for number, line in enumerate(_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        match = _LOG_LINE.match(line)
        fields = match["rest"].split(None, 3) if match else []
        if len(fields) < 3:
            raise ImportFormatError(f"{path}: line {number}: not a jepsen.util op line (PROCESS TYPE F VALUE)")
        process, type_, f, value = (*fields, "nil")[:4]
        records.append(
            Record(
                number,
                _log_value(path, number, process),
                _keyword(path, number, type_, ":type"),
                _keyword(path, number, f, ":f"),
                None,
                _log_value(path, number, value),
                None,
                None,
            )
        )
    return records


def _keyword(path: Path, number: int, text: str, what: str) -> str:
    if not text.startswith(":") or len(text) < 2:
        raise ImportFormatError(f"{path}: line {number}: {what} must be a keyword, not {text!r}")
    return text[1:]


def _log_value(path: Path, number: int, text: str):
    text = text.strip()
    if text == "nil":
        return None
    if _INTEGER.match(text):
        return int(text)
    try:
        return plain(edn_format.loads(text))
    except edn_format.EDNDecodeError:
        raise ImportFormatError(f"{path}: line {number}: value {text!r} is not EDN") from None


def _text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ImportFormatError(f"{path}: cannot read: {error}") from None


READERS = {"jepsen-edn": read_edn, "jepsen-log": read_log}
