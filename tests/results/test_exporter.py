"""`splitbrain export --format jepsen-edn`: a round trip through `import`
keeps the verdict and the operations, for Knossos's own histories and for
keyed register runs of ours (written the way jepsen.independent writes
them); what has no Jepsen form is refused in one line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

from checkers.models import cas_register
from history.schema import HISTORY_COLUMNS, frame
from results.checking import check_run
from results.exporter import export_edn
from results.importer import import_file
from tests.harness.test_cli import splitbrain

KNOSSOS = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories"
CLIENT = ["process", "type", "f", "key", "value", "time_ns"]


def round_trip(run_dir: Path, tmp_path: Path) -> Path:
    """Export `run_dir`, then import the file with the options the export names."""
    edn = tmp_path / f"{run_dir.name}.edn"
    options = shlex.split(export_edn(run_dir, edn))
    assert edn.read_text().startswith("; exported by splitbrain")
    initial = json.loads(options[options.index("--initial") + 1]) if "--initial" in options else None
    model = cas_register(initial) if initial is not None else cas_register()
    return import_file(edn, "jepsen-edn", model, tmp_path / "back", independent="--independent" in options)


def clients(run_dir: Path) -> pd.DataFrame:
    history = pd.read_parquet(run_dir / "history.parquet")
    return history.loc[history["process"] >= 0, CLIENT].reset_index(drop=True)


@pytest.mark.parametrize("name, valid", [("good/memstress3-0.edn", True), ("bad/cas-failure.edn", False)])
def test_knossos_histories_come_back_with_their_verdict(tmp_path, name, valid):
    first = import_file(KNOSSOS / name, "jepsen-edn", cas_register(0), tmp_path / "first")
    again = round_trip(first, tmp_path)
    assert check_run(first)["valid"] is valid and check_run(again)["valid"] is valid
    pd.testing.assert_frame_equal(clients(first), clients(again))


def register_run(tmp_path: Path, stale: bool) -> Path:
    """A keyed register run of ours: k0 written then read; on k1, 2 then 3
    written, and a read after both that sees 2 when `stale`."""
    ops = [
        (0, "write", "k0", 1, 1),
        (1, "read", "k0", None, 1),
        (0, "write", "k1", 2, 2),
        (1, "write", "k1", 3, 3),
        (0, "read", "k1", None, 2 if stale else 3),
    ]
    rows, t = [], 0
    for process, f, key, value, result in ops:
        rows.append({"process": process, "type": "invoke", "f": f, "key": key, "value": value and json.dumps(value)})
        rows.append({"process": process, "type": "ok", "f": f, "key": key, "value": json.dumps(result), "node": "n1"})
    rows.append({"process": -1, "type": "invoke", "f": "partition", "value": json.dumps({"topology": "isolate"})})
    for index, row in enumerate(rows):
        row.update(index=index, time_ns=(t := t + 1_000_000))
    run_dir = tmp_path / ("stale" if stale else "fresh")
    run_dir.mkdir()
    frame(rows, HISTORY_COLUMNS).to_parquet(run_dir / "history.parquet", index=False)
    (run_dir / "run.json").write_text(json.dumps({"target": "kraft", "seed": 0}))
    return run_dir


@pytest.mark.parametrize("stale", [False, True])
def test_keyed_register_runs_go_as_jepsen_independent_tuples(tmp_path, stale):
    run_dir = register_run(tmp_path, stale)
    edn = tmp_path / "h.edn"
    export_edn(run_dir, edn)
    assert '{:index 0 :time 1000000 :process 0 :type :invoke :f :write :value ["k0" 1]}' in edn.read_text()
    assert ':process :nemesis :type :info :f :partition :value {:topology "isolate"}' in edn.read_text()
    again = round_trip(run_dir, tmp_path)
    ours, theirs = check_run(run_dir)["checkers"]["linearizable"], check_run(again)["checkers"]["linearizable"]
    assert ours["valid"] is theirs["valid"] is (not stale)
    if stale:
        assert ours["anomalies"][0]["summary"] == theirs["anomalies"][0]["summary"]
    pd.testing.assert_frame_equal(clients(run_dir), clients(again))


def test_what_jepsen_cannot_read_is_one_line_and_exit_2(tmp_path):
    appends = tmp_path / "appends"
    appends.mkdir()
    rows = [{"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "append", "value": "1"}]
    frame(rows, HISTORY_COLUMNS).to_parquet(appends / "history.parquet", index=False)
    for run_dir, message in [
        (appends, "export takes register histories"),
        (tmp_path / "nothing", "not a run directory"),
    ]:
        result = splitbrain("export", "--format", "jepsen-edn", "--to", str(tmp_path / "out.edn"), str(run_dir))
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and message in result.stderr, (
            result.stderr
        )
    result = splitbrain("export", "--format", "jepsen-edn", "--to", str(tmp_path / "no" / "out.edn"), str(appends))
    assert result.returncode == 2 and "--to" in result.stderr


def test_a_keyed_export_imported_without_independent_is_refused(tmp_path):
    """Imported as one register, the fresh run's keyed history was judged
    not linearizable by `check`: a false alarm. Its first line names the flag."""
    edn = tmp_path / "h.edn"
    export_edn(register_run(tmp_path, stale=False), edn)
    done = splitbrain(
        "import", "--quiet", "--format", "jepsen-edn", "--model", "cas-register", "--to", str(tmp_path / "in"), str(edn)
    )
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "import it with --independent" in done.stderr
    assert not (tmp_path / "in" / "h").exists()
