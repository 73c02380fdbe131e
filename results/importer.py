"""`splitbrain import`: a history recorded by another tool becomes an ordinary
run directory (docs/organisation.md), so every checker and report reads it like our own.

What the records mean (the verdicts depend on it):
- `ok`: happened, with the completion's value (a read: the value read).
- `fail` in `jepsen-edn`: did not happen (Jepsen's meaning today, also for a
  compare-and-set that found another value). Stored as `fail` with the op's
  `:error`, so the checkers drop it.
- `fail :cas` in `jepsen-log`: the compare ran and failed, so the register did
  not hold the expected value then (how Porcupine reads the etcd logs). Stored
  as `fail` with error `cas-mismatch`, the observation our own histories use.
  Any other `fail` in a log (`:fail :read :timed-out`) had no result and
  constrains nothing.
- `info`, and an invocation never completed: indeterminate, may take effect
  at any point after the invocation, or never.
- `ok :read nil` in `jepsen-edn`: no value was read (Knossos's register
  models accept it in any state), so it is stored as an `info` read with
  error `read-without-value` and constrains nothing. In `jepsen-log` it
  means the register was empty (Porcupine's reading of the etcd logs).
- `--independent`: every client operation's value is `[key value]`, as
  `jepsen.independent` writes keyed histories (and `splitbrain export` too);
  each key is a register of its own.
- `:process :nemesis` (or any non-integer process): a nemesis operation,
  process -1; the register checkers ignore it.

Row times are Jepsen's `:time` when every op has one and they never go
back; otherwise the position in the file, so the history's order decides.
A malformed input raises `ImportFormatError` naming file and line, and no
run directory is left behind.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path

from checkers.models import Model
from history.schema import HISTORY_COLUMNS, NEMESIS_PROCESS, frame
from results.versions import recorded

from .jepsen_formats import FORMATS, READERS, ImportFormatError, Record

TYPES = ("invoke", "ok", "fail", "info")
EXPORTED = "; read back with: splitbrain import "  # what `splitbrain export` writes on a file's first line


def history_rows(path: Path, fmt: str, records: list[Record], model: Model, independent: bool = False) -> list[dict]:
    """History rows of the records, checked: every completion has its invocation."""
    if not records:
        raise ImportFormatError(f"{path}: no operations in this file")
    if independent:
        records = [_unwrap_key(path, record) for record in records]
    times = [r.time for r in records if r.time is not None]
    use_time = len(times) == len(records) and all(a <= b for a, b in zip(times, times[1:]))
    pending: dict[int, Record] = {}
    rows = []
    for index, record in enumerate(records):
        where = f"{path}: line {record.line}"
        if record.type not in TYPES:
            raise ImportFormatError(f"{where}: unknown :type :{record.type} (known: {', '.join(TYPES)})")
        row = {
            "index": index,
            "time_ns": record.time if use_time else index,
            "f": record.f,
            "key": None if record.key is None else str(record.key),
            "value": None if record.value is None else json.dumps(record.value),
        }
        if not isinstance(record.process, int) or isinstance(record.process, bool):
            rows.append({**row, "process": NEMESIS_PROCESS, "type": record.type, "node": None})
            continue
        if record.f not in model.fs:
            raise ImportFormatError(
                f"{where}: unknown :f :{record.f} for the {model.name} model (known: {', '.join(sorted(model.fs))})"
            )
        row.update(process=record.process, type=record.type)
        if record.type == "invoke":
            if record.process in pending:
                earlier = pending[record.process].line
                raise ImportFormatError(
                    f"{where}: process {record.process} invokes again before completing line {earlier}"
                )
            pending[record.process] = record
        else:
            call = pending.pop(record.process, None)
            if call is None:
                raise ImportFormatError(f"{where}: :{record.type} from process {record.process} with no invocation")
            if call.f != record.f:
                raise ImportFormatError(f"{where}: completes :{call.f} (line {call.line}) with :f :{record.f}")
            row["error"] = _error(fmt, record)
            if fmt == "jepsen-edn" and record.type == "ok" and record.value is None and record.f in model.inert_unknown:
                # Knossos's register models accept any state for a read of nil: no value was read.
                row.update(type="info", error="read-without-value")
        rows.append(row)
    return rows


def _unwrap_key(path: Path, record: Record) -> Record:
    """A client record's `[key value]` as its key and value (`--independent`)."""
    if not isinstance(record.process, int) or isinstance(record.process, bool):
        return record
    if not (isinstance(record.value, list) and len(record.value) == 2):
        raise ImportFormatError(
            f"{path}: line {record.line}: --independent: the value must be [key value], "
            f"not {json.dumps(record.value)[:60]}"
        )
    key, value = record.value
    return Record(record.line, record.process, record.type, record.f, key, value, record.error, record.time)


def _error(fmt: str, record: Record) -> str | None:
    if record.type == "ok":
        return None
    if fmt == "jepsen-log" and record.type == "fail" and record.f == "cas" and isinstance(record.value, list):
        return "cas-mismatch"
    error = record.error if record.error is not None else (record.value if fmt == "jepsen-log" else None)
    if error is None:
        return record.type
    return error if isinstance(error, str) else json.dumps(error)


def export_hint(path: Path) -> str:
    """The options `splitbrain export` named on the file's first line to read
    it back with (`EXPORTED`); "" for a file it did not write. Read without
    them, a keyed history is one register, and linearizability fails falsely."""
    try:
        with open(path, "rb") as file:
            first = file.readline(4096).decode("utf-8", errors="replace")
    except OSError:
        return ""  # (the reader names what is wrong with the file)
    return first.partition(EXPORTED)[2].strip() if first.startswith("; exported by splitbrain") else ""


def import_file(path: Path, fmt: str, model: Model, to: Path, replace: bool = False, independent: bool = False) -> Path:
    """Write `to/<file stem>/` (history.parquet, run.json) from `path`; all or nothing."""
    if fmt not in FORMATS:
        raise ImportFormatError(f"--format: unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    path = Path(path)
    if not independent and "--independent" in export_hint(path).split():
        raise ImportFormatError(
            f"{path}: its values are [key value] (its first line, splitbrain export's, says so): "
            "import it with --independent"
        )
    rows = history_rows(path, fmt, READERS[fmt](path), model, independent)
    target = Path(to) / path.stem
    if target.exists() and not replace:
        raise ImportFormatError(f"{target}: already exists (--replace to import over it)")
    Path(to).mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.stem}.importing-", dir=to))
    try:
        frame(rows, HISTORY_COLUMNS).to_parquet(staging / "history.parquet", index=False)
        meta = {
            "run_id": path.stem,
            "source": {"file": str(path.resolve()), "format": fmt, "sha256": _sha256(path)},
            "model": model.describe(),
            "independent": independent,
            "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "operations": sum(1 for r in rows if r["process"] >= 0 and r["type"] == "invoke"),
            "versions": recorded(),
        }
        (staging / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
