"""`splitbrain export --format jepsen-edn`: a run's history as Jepsen writes
one, so Knossos (and anything else that reads Jepsen histories) can check it
beside us.

One op map a line, in history order, with `:index`, `:time` (the history's
nanoseconds), `:process`, `:type`, `:f`, `:value` and `:error`:
- keyed operations (our register workload) are written the way
  `jepsen.independent` writes them, `:value [key value]`, and import back with
  `splitbrain import --independent`;
- nemesis rows (process -1) become `:process :nemesis` with type `:info`,
  as Jepsen records its nemesis.

Two meanings change on the way, because Jepsen's histories cannot say them:
- a compare-and-set that ran and found another value (our `fail` with
  `cas-mismatch`) is a Jepsen `:fail`, which means "did not happen";
- an `ok` read of nil (an empty register) is, for Knossos, a read that
  returned nothing, and constrains nothing.

Histories whose order lives in log offsets (`append`) or in lock grants
(`lock`) have no form Jepsen's register checkers read, and are refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import edn_format
import pandas as pd

from history.errors import UsageError

from .checking import run_meta
from .importer import EXPORTED
from .recording import HistoryError, load_history

K = edn_format.Keyword
REGISTER_FS = frozenset({"read", "write", "cas"})
# The models an imported run may name and still be exported as it came in.
EXPORTABLE_MODELS = ("register", "cas-register", "kv")


class ExportError(UsageError):
    """A run that cannot be exported; the message names it and why."""


def edn_value(value):
    """A JSON value as EDN: objects become maps with keyword keys, arrays vectors."""
    if isinstance(value, dict):
        return {K(str(k)): edn_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [edn_value(v) for v in value]
    return value


def model_of(run_dir: Path, history: pd.DataFrame) -> dict:
    """The model the history is checked against (name and initial value), or ExportError."""
    try:
        meta = run_meta(run_dir)
    except HistoryError as error:
        raise ExportError(str(error)) from None
    if "source" in meta:
        name = meta.get("model", {}).get("name")
        if name not in EXPORTABLE_MODELS:
            raise ExportError(
                f"{run_dir}: imported against the {name} model; export takes {', '.join(EXPORTABLE_MODELS)}"
            )
        return meta["model"]
    client_fs = set(history.loc[history["process"] >= 0, "f"].dropna().unique())
    if not client_fs or not client_fs <= REGISTER_FS:
        raise ExportError(
            f"{run_dir}: a history of {', '.join(sorted(client_fs)) or 'no client operations'}; "
            "export takes register histories (read, write, cas)"
        )
    return {"name": "cas-register", "initial": None}


def op_map(row) -> dict:
    value = None if pd.isna(row.value) else edn_value(json.loads(row.value))
    if row.process < 0:
        op = {K("process"): K("nemesis"), K("type"): K("info"), K("f"): K(row.f), K("value"): value}
    else:
        keyed = not pd.isna(row.key)
        op = {
            K("process"): int(row.process),
            K("type"): K(row.type),
            K("f"): K(row.f),
            K("value"): [row.key, value] if keyed else value,
        }
    if not pd.isna(row.error):
        op[K("error")] = row.error
    return {K("index"): int(row.index), K("time"): int(row.time_ns), **op}


def export_edn(run_dir: Path, to: Path) -> str:
    """Write `run_dir`'s history to `to`; returns the `splitbrain import` options that read it back."""
    run_dir = Path(run_dir)
    if not (run_dir / "history.parquet").exists() and not (run_dir / "history.jsonl").exists():
        raise ExportError(f"{run_dir}: not a run directory (no history)")
    try:
        history = load_history(run_dir)
    except HistoryError as error:
        raise ExportError(str(error)) from None
    model = model_of(run_dir, history)
    keys = history.loc[history["process"] >= 0, "key"]
    keyed = bool(keys.notna().any())
    if keyed and keys.isna().any():
        raise ExportError(f"{run_dir}: some client operations have a key and some do not; Jepsen cannot say that")
    options = f"--format jepsen-edn --model {model['name']}"
    if model.get("initial") is not None:
        options += f" --initial '{json.dumps(model['initial'])}'"
    options += " --independent" if keyed else ""
    lines = [f"; exported by splitbrain from {run_dir.name}{EXPORTED}{options}"]
    lines += [edn_format.dumps(op_map(row)) for row in history.itertuples(index=False)]
    try:
        Path(to).write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as error:
        raise ExportError(f"{to}: cannot write: {error.strerror or error}") from None
    return options
