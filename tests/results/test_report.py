"""report.html: every anomaly links to the rows that prove it, and a real run's
report renders in a real headless browser (Chromium, from Debian's packages)
with every operation drawn and the fault windows shaded."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checkers.models import cas_register
from results.importer import import_file
from tests.harness.test_cli import splitbrain

KNOSSOS = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories"


def chromium(*args: str) -> subprocess.CompletedProcess:
    browser = shutil.which("chromium")
    assert browser, "scripts/ensure-chromium.sh installs chromium"
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_anomalies_link_to_their_rows_and_back(tmp_path):
    run_dir = import_file(KNOSSOS / "bad" / "cas-failure.edn", "jepsen-edn", cas_register(0), tmp_path)
    assert splitbrain("check", str(run_dir)).returncode == 1
    page = (run_dir / "report.html").read_text()
    linked = set(re.findall(r"href='#row-(\d+)'", page))
    anchored = set(re.findall(r"<tr id='row-(\d+)'>", page))
    assert linked and linked <= anchored
    # Each named operation's completion is listed too (what it returned), and every row links back.
    assert len(anchored) > len(linked) and page.count(">timeline</a>") == len(anchored)
    back = set(re.findall(r"href='#op-(\d+)'", page))
    assert back <= set(re.findall(r"id='op-(\d+)'", page)) and back <= anchored
    assert "valid: False" in page and "no order of the operations" in page
    assert "href='#focus-0'>up close</a>" in page and "id='focus-0'" in page


def test_a_stale_read_is_explained_in_one_sentence_up_close(tmp_path):
    from tests.results.test_exporter import register_run

    run_dir = register_run(tmp_path, stale=True)
    assert splitbrain("check", str(run_dir)).returncode == 1
    page = (run_dir / "report.html").read_text()
    why = re.search(r"<p class='why'>(.*?)</p>", page)[1].replace("&#x27;", "'")
    assert why == (
        "Process 0's read of key k1 returned 2 (rows 8 and 9, node n1). Before it began, the write of 3 "
        "(row 6, process 1) had been acknowledged. Every write of 2 (row 4) had finished before the write "
        "of 3 began, so 2 was overwritten before this read began: the read is stale."
    )
    drawn = re.findall(r"<g class='focus-op'>.*?</rect><text [^>]*>([^<]*)</text></g>", page)
    assert drawn == ["w 2", "w 3", "r 2"]  # k1's writes before it, and the read; nothing of k0


@pytest.mark.slow
def test_a_real_runs_report_renders_in_a_headless_browser(tmp_path):
    done = splitbrain(
        "run",
        "--backend",
        "local",
        "--quiet",
        "--results",
        str(tmp_path),
        "--time-limit",
        "6",
        "--interval",
        "1.5",
        "--nemesis",
        "partition,pause",
        "--workload",
        "register",
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    [run_dir] = [d for d in tmp_path.iterdir() if d.is_dir()]
    report = run_dir / "report.html"
    assert f"report: {report}" in done.stdout
    page = report.read_text()
    drawn = page.count("class='op'")
    assert drawn > 20 and page.count("class='fault'") >= 3  # shaded in the timeline, latency and throughput plots
    dom = chromium("--dump-dom", report.as_uri())
    assert f'data-rendered="{drawn}"' in dom.stdout, dom.stderr[-500:]
    screenshot = tmp_path / "report.png"
    chromium("--window-size=1280,1600", f"--screenshot={screenshot}", report.as_uri())
    assert screenshot.stat().st_size > 20_000


def test_instant_faults_are_marked_on_the_timeline(tmp_path):
    """A bounce has no window to shade: it is a line at its moment, in the legend too."""
    from history.schema import HISTORY_COLUMNS, frame
    from results.report import write_report

    rows = [
        {"process": -1, "type": "invoke", "f": "bounce"},
        {"process": -1, "type": "ok", "f": "bounce", "node": '["n2"]'},
        {"process": 0, "type": "invoke", "f": "read", "key": "k"},
        {"process": 0, "type": "ok", "f": "read", "key": "k"},
    ]
    frame([{"index": i, "time_ns": (i + 1) * 10**9, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS).to_parquet(
        tmp_path / "history.parquet", index=False
    )
    (tmp_path / "verdict.json").write_text('{"valid": true, "checkers": {}}')
    page = write_report(tmp_path).read_text()
    assert page.count("<g class='instant'>") == 1 and "bounce [&quot;n2&quot;] at 2.00 s" in page
    assert "bounce (a line at its moment)" in page


def test_a_report_is_drawn_without_pandas_warnings(tmp_path):
    """An imported history whose processes' lanes were looked up by position
    printed pandas' FutureWarning on the console."""
    run_dir = import_file(KNOSSOS / "good" / "mongodb-v0-ack-rollback-.edn", "jepsen-edn", cas_register(0), tmp_path)
    done = subprocess.run(
        [sys.executable, "-W", "error::FutureWarning", "-m", "harness.cli", "check", "--quiet", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Warning" not in done.stderr, done.stderr
    assert "<svg" in (run_dir / "report.html").read_text()


def test_the_verdict_says_how_long_the_cluster_stood_stuck(tmp_path):
    """The availability figures a gate reads, under the verdict's table: the longest stuck span with its moment."""
    from history.schema import HISTORY_COLUMNS, frame
    from results.report import write_report

    rows = [
        {"process": 0, "type": "invoke", "f": "read", "key": "k"},
        {"process": 0, "type": "ok", "f": "read", "key": "k"},
    ]
    frame([{"index": i, "time_ns": (i + 1) * 10**9, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS).to_parquet(
        tmp_path / "history.parquet", index=False
    )
    stats = {
        "leader_elections": 5,
        "leaderless_ms": 5848.6,
        "disruptive_elections": 0,
        "stuck_ms": 4988.8,
        "stuck": [{"time_ns": 10_005_943_777, "ms": 4988.8, "nodes": ["n1", "n3"]}],
    }
    verdict = {"valid": True, "checkers": {"availability": {"valid": True, "stats": stats}}}
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    page = write_report(tmp_path).read_text()
    assert (
        "Availability: 5 leader elections; 5849 ms with no leader; 0 disruptive elections; stuck 4989 ms at the "
        "longest, from 10.006 s: n1, n3 up and hearing one another, and none leading." in page
    )
