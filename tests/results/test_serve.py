"""`splitbrain serve`, as a user opens it: the real command on 127.0.0.1, read
by headless Chromium. It lists 50 runs and a campaign, filters them by the
query a user's choices make, groups the failing ones by what they failed of
first (each group a link to its runs), sends `/latest` to the newest
report, and re-checks a run whose verdict.json no longer says what its
history shows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from checkers.models import cas_register
from results.importer import import_file
from tests.harness.test_cli import splitbrain
from tests.results.test_report import KNOSSOS, chromium

BUGS = ("none", "stale-read", "ack-before-commit")
VERDICTS = (True, True, False, "unknown")


def fake_run(folder: Path, number: int, option_set: str | None = None) -> Path:
    """A run directory as `splitbrain run` leaves it, as far as a listing reads it."""
    target = "etcd" if number % 5 == 0 else "kraft"
    bugs = [] if BUGS[number % 3] == "none" or target == "etcd" else [BUGS[number % 3]]
    run_dir = folder / run_id(number)
    run_dir.mkdir(parents=True)
    options = {"pre_vote": number % 7 != 0, **({"bugs": bugs} if target == "kraft" else {})}
    config = {
        "target": target,
        "backend": "local",
        "nodes": 3,
        "workload": "append",
        "nemesis": ["partition", "kill"],
        "time_limit_s": 20.0,
        "seed": number,
        "option_set": option_set,
    }
    # Runs recorded before targets declared their options kept them among the others.
    config.update({"options": options} if number % 2 else options)
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "config": config,
                "seed": number,
                "target": target,
                "start_time": f"2026-11-2{number // 10}T00:00:{number % 60:02d}+0000",
            }
        )
    )
    valid = VERDICTS[number % 4]
    checkers = {"committed-data-loss": {"valid": valid, "anomalies": []}}
    signed = [{"checker": "committed-data-loss", "kind": "lost-acknowledged-append", "fault": fault(number)}]
    verdict = {"valid": valid, "checkers": checkers, **({"signatures": signed} if valid is False else {})}
    (run_dir / "verdict.json").write_text(json.dumps(verdict))
    (run_dir / "report.html").write_text(f"<html><body><h1 id='which'>report {number}</h1></body></html>")
    os.utime(run_dir / "run.json", (1_800_000_000 + number, 1_800_000_000 + number))
    return run_dir


def fault(number: int) -> str:
    """The fault in force when a failing fake run failed: it tells two groups apart."""
    return "partition:leader-cut-off" if number % 3 == 1 else "kill:leader"


@pytest.fixture
def results(tmp_path):
    """40 runs of their own and a campaign of 10 (`matrix`, option sets `correct` and `stale`)."""
    root = tmp_path / "runs"
    for number in range(40):
        fake_run(root, number)
    campaign = root / "campaigns" / "matrix"
    for number in range(40, 50):
        fake_run(campaign, number, "stale" if number % 2 else "correct")
    (campaign / "campaign.json").write_text("{}")
    (campaign / "summary.html").write_text("<html><body>summary</body></html>")
    return root


@pytest.fixture
def served(results):
    """The real command, on a free port; its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", str(results), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line + process.stderr.read()
        yield url[0]
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def listed(url: str) -> list[str]:
    """The run ids a headless Chromium shows at `url`."""
    dom = chromium("--dump-dom", url).stdout
    shown = re.search(r'data-shown="(\d+)"', dom)
    rows = re.findall(r'<tr class="run".*?</tr>', dom, re.S)
    ids = [re.search(r'<td class="id">(?:<a [^>]*>)?([^<]+)', row)[1] for row in rows]
    assert shown and int(shown[1]) == len(ids), dom[:500]
    return ids


def run_id(number: int) -> str:
    return f"2026112{number // 10}T{number:06d}-append-s{number}-{number:04x}"


def test_lists_every_run_newest_first_and_filters_them(served):
    everything = listed(served)
    assert len(everything) == 50 and everything[0] == run_id(49) and everything[-1] == run_id(0)
    stale_reads = listed(served + "?" + urllib.parse.urlencode({"bugs": "stale-read", "verdict": "false"}))
    expected = [n for n in range(50) if n % 3 == 1 and n % 5 and VERDICTS[n % 4] is False]
    assert sorted(int(i.rsplit("-", 1)[1], 16) for i in stale_reads) == expected
    campaign = listed(served + "?campaign=matrix&option_set=stale&seed=41")
    assert [int(i.rsplit("-", 1)[1], 16) for i in campaign] == [41]
    # The option set and the target each in a column of its own (the option set stood in the target's).
    assert listed(served + "?option_set=stale&target=kraft&seed=41") == campaign
    assert listed(served + "?target=stale") == []
    assert len(listed(served + "?" + urllib.parse.urlencode({"options": "--no-pre-vote"}))) == len(
        [n for n in range(50) if n % 7 == 0]
    )
    assert listed(served + "?target=etcd&bugs=none&verdict=unknown") == [run_id(35), run_id(15)]


def test_failing_runs_are_grouped_and_a_group_is_a_link_to_its_runs(served):
    page = chromium("--dump-dom", served).stdout
    groups = re.findall(
        r'<tr class="group"><td><a href="/\?failure_group=([^"]+)">([^<]+)</a></td><td>(\d+)</td>', page
    )
    failing = [n for n in range(50) if VERDICTS[n % 4] is False]
    counts = {f: sum(fault(n) == f for n in failing) for f in ("partition:leader-cut-off", "kill:leader")}
    expected = sorted(((-count, f"committed-data-loss/lost-acknowledged-append/{f}") for f, count in counts.items()))
    assert [(-int(runs), name) for _, name, runs in groups] == expected, groups
    link, name, runs = groups[0]
    assert len(listed(served + "?failure_group=" + link)) == int(runs)
    assert "splitbrain shrink " in page


def test_latest_opens_the_newest_report_and_campaigns_link_their_summary(served):
    assert "report 49" in chromium("--dump-dom", served + "latest").stdout
    page = chromium("--dump-dom", served).stdout
    failed = sum(VERDICTS[n % 4] is False for n in range(40, 50))
    assert f'href="/campaigns/matrix/summary.html">matrix</a>: 10 runs, {failed} failed' in page
    assert "summary" in chromium("--dump-dom", served + "campaigns/matrix/summary.html").stdout


def test_re_check_rewrites_a_stale_verdict(results, served):
    run_dir = import_file(KNOSSOS / "bad" / "cas-failure.edn", "jepsen-edn", cas_register(0), results / "imported")
    assert splitbrain("check", str(run_dir)).returncode == 1
    verdict = json.loads((run_dir / "verdict.json").read_text())
    (run_dir / "verdict.json").write_text(json.dumps({**verdict, "valid": True}))
    form = urllib.parse.urlencode({"run": "imported/cas-failure"}).encode()
    with urllib.request.urlopen(urllib.request.Request(served + "recheck", data=form)) as answer:
        page = answer.read().decode()
    assert "re-checked cas-failure: valid false (was true)" in page
    assert json.loads((run_dir / "verdict.json").read_text())["valid"] is False
    form = urllib.parse.urlencode({"run": "../../etc"}).encode()
    with urllib.request.urlopen(urllib.request.Request(served + "recheck", data=form)) as answer:
        assert "not a run under" in answer.read().decode()


def test_a_screenshot_of_the_page(served, tmp_path):
    shot = tmp_path / "serve.png"
    chromium("--window-size=1400,900", f"--screenshot={shot}", served + "?bugs=stale-read")
    assert shot.stat().st_size > 20_000


def test_a_folder_that_is_not_there_or_a_taken_port_is_one_line(tmp_path, served):
    missing = splitbrain("serve", str(tmp_path / "nowhere"), "--port", "0")
    assert missing.returncode == 2 and "not a folder" in missing.stderr and len(missing.stderr.splitlines()) == 1
    port = urllib.parse.urlsplit(served).port
    taken = splitbrain("serve", str(tmp_path), "--port", str(port))
    assert taken.returncode == 2 and f"127.0.0.1:{port}" in taken.stderr and len(taken.stderr.splitlines()) == 1


def test_a_campaign_folder_served_itself_counts_its_runs(results):
    from results.run_index import scan

    runs, campaigns = scan(results / "campaigns" / "matrix")
    failed = sum(VERDICTS[n % 4] is False for n in range(40, 50))
    assert len(runs) == 10 and [(c["path"], c["runs"], c["failed"]) for c in campaigns] == [(".", 10, failed)]
