"""The Spark pipeline re-checks an archive with real PySpark (local mode) and
must give the pandas checkers' verdicts on the same runs: histories of the
simulated cluster, correct and with each planted safety bug, plus imported
Jepsen histories; a corrupt entry is named and left out."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

from checkers.models import cas_register
from checkers.verdict import check_tables
from harness.ports import free_port
from history.schema import EVENTS_COLUMNS, frame
from results import archive
from results.checking import check_run
from results.importer import import_file
from results.spark_pipeline import SAFETY, analyze
from targets.kraft.sim.simulation import SimSettings, random_steps, run_schedule
from tests.checkers.sim_histories import KRAFT, tables
from tests.checkers.test_checkers import KEYED, keyed_final
from tests.checkers.test_mutex import guarded, session
from tests.checkers.test_mutex import history as lock_history
from tests.checkers.test_on_simulated_histories import churn, lagging_loss
from tests.harness.test_cli import splitbrain

pytestmark = pytest.mark.slow

KNOSSOS = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories"


def voter_changes(rng):
    return random_steps(rng, 16, membership=True)


THREE, FIVE, JOINING = {"nodes": 3}, {"nodes": 5}, {"nodes": 3, "observers": 1, "auto_join": True}
# (name, planted bug, cluster, schedule, the checker that must catch it)
CASES = [
    ("correct", None, THREE, lambda rng: random_steps(rng, 20), None),
    ("stale-read", "stale-read", THREE, lambda rng: random_steps(rng, 20), "linearizable"),
    ("ack-before-commit", "ack-before-commit", THREE, lambda rng: random_steps(rng, 20), "committed-data-loss"),
    ("forget-vote", "forget-vote", FIVE, churn, "election-safety"),
    # A voter restarted in the epoch it voted in: its vote is gone (no second vote needed).
    ("forget-vote-restart", "forget-vote", FIVE, lambda rng: restart_voters(rng), "election-safety"),
    ("correct-membership", None, JOINING, voter_changes, None),
    ("multi-voter-change", "multi-voter-change", JOINING, voter_changes, "membership"),
    ("ignore-directory-id", "ignore-directory-id", JOINING, voter_changes, "membership"),
    ("ack-voter-early", "ack-voter-early", JOINING, voter_changes, "membership"),
    (
        "ignore-generation",
        "ignore-generation",
        {"nodes": 5, "flush_interval_ms": 100},
        lagging_loss,
        "committed-data-loss",
    ),
]


def restart_voters(rng: random.Random) -> list:
    return [("run", 0, 400), ("crash_leader", 0, 0), ("run", 0, 1500), ("bounce", rng.randrange(8), 0), ("run", 0, 400)]


def write_run(
    folder: Path,
    name: str,
    bug: str | None,
    seed: int,
    history,
    events,
    final,
    target="kraft-sim",
    capabilities: dict | None = None,
) -> Path:
    run_dir = folder / f"{name}-s{seed}"
    run_dir.mkdir(parents=True)
    history.to_parquet(run_dir / "history.parquet", index=False)
    events.to_parquet(run_dir / "events.parquet", index=False)
    final.to_parquet(run_dir / "final.parquet", index=False)
    config = {
        "options": {"bugs": [bug] if bug else [], "pre_vote": True},
        "workload": "append+register",
        "nemesis": ["simulated"],
    }
    meta = {
        "config": config,
        "seed": seed,
        "target": target,
        **({"capabilities": capabilities} if capabilities else {}),
    }
    (run_dir / "run.json").write_text(json.dumps(meta))
    return run_dir


def simulated_runs(folder: Path) -> list[Path]:
    """Two runs per case; for a bug, the first seeds whose history its checker flags."""
    runs = []
    for name, bug, cluster, steps, checker in CASES:
        found = 0
        for seed in range(300):
            sim = run_schedule(
                SimSettings(seed=seed, bugs=frozenset([bug] if bug else []), check_invariants=False, **cluster),
                steps(random.Random(seed)),
            )
            history, events, final = tables(sim)
            if (
                checker
                and check_tables(history, events, final, capabilities=KRAFT)["checkers"][checker]["valid"] is not False
            ):
                continue
            runs.append(write_run(folder, name, bug, seed, history, events, final, capabilities=KRAFT))
            found += 1
            if found == 2:
                break
        assert found == 2, f"{name}: the simulation gave too few flagged histories"
    return runs


def hand_made_runs(folder: Path) -> list[Path]:
    """etcd's kinds of history: lock runs, one with two holders at once, and
    keyed appends with one lost from a member's list."""
    no_events = frame([], EVENTS_COLUMNS)
    one_by_one = lock_history(*session(0, "lock/a", "1", 0, 0), *session(1, "lock/b", "2", 1, 200))
    at_once = lock_history(*session(0, "lock/a", "1", 0, 0, release_ms=500), *session(1, "lock/b", "2", 0, 200))
    lists = {"a0": ["1"], "a1": ["2", "3"]}
    return [
        write_run(folder, "lock", None, 1, one_by_one, no_events, guarded({"n1": ["1", "2"]}), "etcd-made"),
        write_run(folder, "lock", None, 2, at_once, no_events, guarded({"n1": ["2"]}), "etcd-made"),
        write_run(
            folder,
            "keyed",
            None,
            1,
            KEYED,
            no_events,
            keyed_final({"n1": lists, "n2": {"a0": ["1", "3"], "a1": ["2"]}}),
            "etcd-made",
        ),
    ]


def test_spark_verdicts_equal_the_pandas_checkers(tmp_path):
    runs = simulated_runs(tmp_path / "sim") + hand_made_runs(tmp_path / "hand")
    for name in ("good/memstress3-0.edn", "bad/cas-failure.edn"):
        runs.append(import_file(KNOSSOS / name, "jepsen-edn", cas_register(0), tmp_path / "imported"))
    store = tmp_path / "archive"
    archive.add(store, runs, check_run)
    found = analyze(store, out=tmp_path / "analysis")
    assert found["problems"] == [] and found["disagreements"].empty
    spark = {(r.run_id, r.checker): r.valid for r in found["verdicts"].itertuples(index=False)}
    pandas_verdicts = {}
    for run_dir in runs:
        checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
        for checker in SAFETY:
            if checker in checkers:
                pandas_verdicts[(archive.run_id(run_dir), checker)] = str(checkers[checker]["valid"]).lower()
    assert spark == pandas_verdicts
    kinds = {(r.run_id, r.checker): r.kinds for r in found["verdicts"].itertuples(index=False)}
    assert any("vote-forgotten" in kinds[(archive.run_id(r), "election-safety")] for r in runs if "restart" in r.name)
    assert (
        spark[("hand--lock-s1", "mutual-exclusion")] == "true"
        and spark[("hand--lock-s2", "mutual-exclusion")] == "false"
    )
    assert spark[("hand--keyed-s1", "committed-data-loss")] == "false"
    for checker in {checker for *_, checker in CASES if checker}:
        assert any(valid == "false" for (_, name), valid in spark.items() if name == checker), checker
    assert "server_version" in found["failure_rate"].columns  # findings grouped by the server's version too
    rates = found["failure_rate"].set_index(["target", "bugs"])
    assert rates.loc[("kraft-sim", "stale-read"), "failure_rate"] == 1.0
    assert "linearizable" in rates.loc[("kraft-sim", "stale-read"), "caught_by"]
    assert rates.loc[("kraft-sim", ""), "failure_rate"] == 0.0 and rates.loc[("import", ""), "failed"] == 1
    assert (tmp_path / "analysis" / "verdicts.parquet").exists()
    # A target this version does not know shows every option it recorded.
    written = json.loads((tmp_path / "analysis" / "failure_rate.json").read_text())
    shown = {row["options"] for row in written if row["target"] == "kraft-sim"}
    assert "bugs=['stale-read'] pre_vote=True" in shown and all(o.endswith(" pre_vote=True") for o in shown), written

    # A corrupt entry: named, left out, the rest still analysed.
    broken = archive.run_id(runs[0])
    (store / archive.RUNS / broken / "events.parquet").write_bytes(b"not parquet")
    again = analyze(store, out=tmp_path / "analysis2")
    assert again["problems"] == [f"{broken}: events.parquet: checksum differs from the manifest"]
    assert broken not in set(again["verdicts"]["run_id"]) and len(set(again["verdicts"]["run_id"])) == len(runs) - 1


def null_typed(run_dir: Path) -> None:
    """Rewrite the run's events as pandas writes an all-None column: Parquet's null type."""
    events = pd.read_parquet(run_dir / "events.parquet").astype(object)
    events["voted_for"] = None
    events.to_parquet(run_dir / "events.parquet", index=False)
    assert pq.read_schema(run_dir / "events.parquet").field("voted_for").type == pa.null()


def test_what_check_and_archive_accept_analyze_accepts(tmp_path):
    """Null-typed text columns, and an archive of imported runs only (no
    events table at all), are analysed; an archive whose only entry is
    corrupt is an error (exit 2) naming it, not a crash."""
    sim = run_schedule(SimSettings(seed=1, check_invariants=False), random_steps(random.Random(1), 12))
    run_dir = write_run(tmp_path / "sim", "correct", None, 1, *tables(sim))
    null_typed(run_dir)
    imported = [
        import_file(KNOSSOS / name, "jepsen-edn", cas_register(0), tmp_path / "imported")
        for name in ("good/memstress3-0.edn", "bad/cas-failure.edn")
    ]
    for store, runs in [(tmp_path / "mixed", [run_dir, *imported]), (tmp_path / "imports", imported)]:
        archive.add(store, runs, check_run)
        found = analyze(store, out=store / "analysis")
        expected = {
            (archive.run_id(r), name): str(result["valid"]).lower()
            for r in runs
            for name, result in json.loads((r / "verdict.json").read_text())["checkers"].items()
            if name in SAFETY
        }
        assert {(r.run_id, r.checker): r.valid for r in found["verdicts"].itertuples(index=False)} == expected
        assert found["problems"] == [] and found["disagreements"].empty
    # One corrupt entry, and one whose archived verdict the re-check contradicts.
    bad = tmp_path / "doctored" / imported[1].name
    shutil.copytree(imported[1], bad)
    verdict = json.loads((bad / "verdict.json").read_text())
    verdict["checkers"]["linearizable"]["valid"] = True
    (bad / "verdict.json").write_text(json.dumps(verdict))
    lone = tmp_path / "lone"
    archive.add(lone, [imported[0], bad], check_run)
    (lone / archive.RUNS / archive.run_id(imported[0]) / "history.parquet").write_bytes(b"garbage")
    done = splitbrain("analyze", "--quiet", str(lone))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"CORRUPT {lone}: {archive.run_id(imported[0])}: history.parquet: checksum differs" in done.stdout
    assert f"DISAGREES {archive.run_id(bad)}: linearizable: archived true, re-checked false" in done.stdout
    assert "Traceback" not in done.stderr + done.stdout


@pytest.fixture
def standalone_spark(tmp_path):
    """A Spark master and one worker started from pyspark's own scripts, on
    127.0.0.1. Their scratch and temporary folders are in `tmp_path`: killed,
    they leave nothing in /tmp."""
    home = Path(pyspark.__file__).parent
    scratch = tmp_path / "jvm-tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(scratch),
        "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={scratch}",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    port = free_port()
    spark_class = [str(home / "bin" / "spark-class")]
    started = []
    try:
        for command in (
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "2",
                "--memory",
                "2g",
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(tmp_path / "work"),
                f"spark://127.0.0.1:{port}",
            ],
        ):
            log = open(tmp_path / f"{command[0].rsplit('.', 1)[1]}.log", "wb")
            started.append(
                subprocess.Popen(
                    spark_class + command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            )
        deadline = time.monotonic() + 120
        while b"Successfully registered with master" not in (tmp_path / "Worker.log").read_bytes():
            assert time.monotonic() < deadline, (tmp_path / "Worker.log").read_text()[-2000:]
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_analyze_on_a_standalone_spark_cluster(tmp_path, standalone_spark):
    """Cluster mode is why Spark is here: the same verdicts from a real master and worker."""
    runs = [
        import_file(KNOSSOS / name, "jepsen-edn", cas_register(0), tmp_path / "imported")
        for name in ("good/memstress3-0.edn", "bad/cas-failure.edn")
    ]
    sim = run_schedule(
        SimSettings(seed=3, bugs=frozenset(["ack-before-commit"]), check_invariants=False),
        random_steps(random.Random(3), 20),
    )
    runs.append(write_run(tmp_path / "sim", "ack", "ack-before-commit", 3, *tables(sim)))
    store = tmp_path / "archive"
    archive.add(store, runs, check_run)
    done = splitbrain("analyze", "--quiet", "--master", standalone_spark, str(store))
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    rechecked = pd.read_parquet(store / "analysis" / "verdicts.parquet")
    expected = {
        (archive.run_id(r), name): str(result["valid"]).lower()
        for r in runs
        for name, result in json.loads((r / "verdict.json").read_text())["checkers"].items()
        if name in SAFETY
    }
    assert {(r.run_id, r.checker): r.valid for r in rechecked.itertuples(index=False)} == expected
