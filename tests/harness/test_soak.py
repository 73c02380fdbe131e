"""`splitbrain soak` end to end on the local backend (the correct node,
guided faults, short): its page is there to browse while it runs and
reloads itself; every sample of soak.jsonl counts the operations and
faults so far and the memory of the harness and of each node; at the end
the page holds the live verdict, renders in a real headless browser, and
the run is checked as any run."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.results.test_report import chromium

pytestmark = pytest.mark.slow

SECONDS = 20


def test_a_soak_shows_its_progress_while_it_runs_and_is_checked_at_the_end(tmp_path):
    command = [sys.executable, "-m", "harness.cli", "soak", "--quiet", "--results", str(tmp_path)]
    command += ["--time-limit", str(SECONDS), "--sample-every", "1", "--rate", "300", "--concurrency", "20"]
    command += ["--interval", "2", "--seed", "3"]
    soak = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    page_while_running = None
    deadline = time.monotonic() + 120
    while soak.poll() is None and time.monotonic() < deadline and page_while_running is None:
        pages = list(tmp_path.glob("*/soak.html"))
        page_while_running = pages[0].read_text() if pages else None
        time.sleep(0.5)
    out, err = soak.communicate(timeout=300)
    assert soak.returncode == 0, out + err[-2000:]
    assert page_while_running is not None and "http-equiv='refresh'" in page_while_running
    [run_dir] = [path for path in tmp_path.iterdir() if path.is_dir()]
    samples = [json.loads(line) for line in (run_dir / "soak.jsonl").read_text().splitlines()]
    assert len(samples) >= SECONDS // 2, len(samples)
    operations = [sample["operations"] for sample in samples]
    assert operations == sorted(operations) and operations[-1] > 1000, operations
    assert samples[-1]["faults"] > 0 and samples[-1]["violations"] == []
    assert all(sample["harness_mib"] > 0 for sample in samples)
    assert set(samples[-1]["nodes_mib"]) == {"n1", "n2", "n3"} and all(samples[-1]["nodes_mib"].values())
    page = (run_dir / "soak.html").read_text()
    assert "http-equiv='refresh'" not in page and "live verdict: valid=true" in page and page.count("<svg") == 3
    # The page's path while it runs (.partial) is gone once it ends: the line names both.
    assert f"splitbrain: soak: how it goes, while it runs: {run_dir}.partial/soak.html; once it ends: " in err
    assert f"once it ends: {run_dir / 'soak.html'}" in err and f"soak: {run_dir / 'soak.html'}" in out
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and json.loads((run_dir / "live.json").read_text())["valid"] is True
    dom = chromium("--dump-dom", (run_dir / "soak.html").as_uri())
    assert 'id="figures"' in dom.stdout and dom.stdout.count("<polyline") >= 6, dom.stderr[-500:]
    screenshot = tmp_path / "soak.png"
    chromium("--window-size=1000,1000", f"--screenshot={screenshot}", (run_dir / "soak.html").as_uri())
    assert screenshot.stat().st_size > 10_000
