"""Histories nobody here wrote, with the verdicts other checkers give them:
all 228 files of the Porcupine (etcd, kv) and Knossos corpora are imported
with `splitbrain import`'s code and checked; every verdict must equal
`expected.csv`, with the compiled search and with the pure-Python reference.

The corpora are a verbatim copy of the project's shared data (tests/data/
outside, with their READMEs and licences), so a clean clone can run this;
when the shared folder is beside the repository, the copy is checked
against it byte for byte.
"""

from __future__ import annotations

import csv
import filecmp
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checkers.linearizable import linearizable
from checkers.models import make_model
from checkers.wgl import splitbrain_wgl
from results.checking import check_run
from results.importer import import_file
from results.recording import load_history

pytestmark = pytest.mark.slow

DATA = Path(__file__).parents[1] / "data" / "outside"
SHARED = Path(__file__).parents[3] / "shared" / "data"
# Porcupine's etcd logs start with an empty register; Knossos's tests with 0.
CORPORA = {"porcupine-histories": None, "knossos-histories": 0}


def corpus_files() -> list[tuple[str, dict]]:
    rows = []
    for corpus in CORPORA:
        with open(DATA / corpus / "expected.csv") as f:
            rows += [(corpus, row) for row in csv.DictReader(f)]
    return rows


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> dict[str, tuple[Path, bool]]:
    """Every file imported: file -> (run directory, expected verdict)."""
    runs = {}
    for corpus, row in corpus_files():
        path = DATA / corpus / row["file"]
        fmt = "jepsen-log" if path.suffix == ".log" else "jepsen-edn"
        model = make_model(row["model"], CORPORA[corpus])
        to = tmp_path_factory.mktemp(corpus.split("-")[0]) / Path(row["file"]).parent
        runs[f"{corpus}/{row['file']}"] = (import_file(path, fmt, model, to), row["linearizable"] == "true")
    return runs


def test_the_corpora_are_all_here_and_match_the_shared_copy():
    files = corpus_files()
    assert len(files) == 228 and sum(1 for _, row in files if row["linearizable"] == "true") == 26 + 113
    if SHARED.is_dir():
        for corpus in CORPORA:
            compared = filecmp.dircmp(SHARED / corpus, DATA / corpus)
            assert not compared.diff_files and not compared.left_only, corpus


def test_every_verdict_matches_the_outside_checkers(imported):
    wrong = {}
    for name, (run_dir, expected) in imported.items():
        verdict = check_run(run_dir)
        if verdict["valid"] is not expected:
            wrong[name] = verdict["checkers"]["linearizable"]
    assert not wrong, wrong


def test_the_pure_python_search_gives_the_same_verdicts(imported):
    for name, (run_dir, expected) in imported.items():
        spec = json.loads((run_dir / "run.json").read_text())["model"]
        verdict = linearizable(load_history(run_dir), make_model(spec["name"], spec.get("initial")), engine="python")
        assert verdict["valid"] is expected, (name, verdict)


def test_the_compiled_search_is_built():
    assert splitbrain_wgl is not None, "scripts/bootstrap.sh builds checkers/wgl_core"


def test_an_invalid_verdict_names_the_stuck_operation_and_the_longest_prefix(imported):
    run_dir, _ = imported["knossos-histories/bad/cas-failure.edn"]
    [anomaly] = check_run(run_dir)["checkers"]["linearizable"]["anomalies"]
    history = load_history(run_dir).set_index("index")
    assert history.loc[anomaly["index"], "type"] == "invoke"
    assert anomaly["index"] in anomaly["window"]
    prefix = anomaly["linearized_prefix"]
    assert prefix and len(set(prefix)) == len(prefix) and anomaly["index"] not in prefix
    assert f"row {anomaly['index']}" in anomaly["summary"] and f"{len(prefix)} operations" in anomaly["summary"]


def test_check_takes_many_runs_one_line_each_and_exits_with_the_worst(imported):
    kv_runs = sorted(str(run_dir) for name, (run_dir, _) in imported.items() if "/kv/" in name)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", *kv_runs], capture_output=True, text=True, timeout=300
    )
    lines = done.stdout.strip().split("\n")
    assert done.returncode == 1 and len(lines) == 6, done.stdout + done.stderr
    for line in lines:
        expected = "true" if line.split()[1].endswith("-ok") else "false"
        assert line.split()[0] == expected, line
    for run_dir in kv_runs:
        assert json.loads((Path(run_dir) / "verdict.json").read_text())["valid"] in (True, False)
