"""Clock faults end to end (libfaketime, really preloaded into the nodes):
one seed of `examples/lease-reads.toml`'s lease-clock option set. The
leader's clock set back as it is cut off stretches its read lease, and
`linearizable` catches the stale reads; every clock is set right at the end,
and the history holds each clock fault with its shape."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness import faketime

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not faketime.LIBRARY.exists(), reason="bootstrap installs libfaketime"),
]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lease-reads.toml"


def test_a_leader_clock_set_back_stretches_its_lease_into_stale_reads(tmp_path):
    text = re.sub(
        r"\[targets\.lease\]\n(?:(?!\[).*\n?)*|\[targets\.clock-no-lease\]\n(?:(?!\[).*\n?)*", "", EXAMPLE.read_text()
    )
    config = tmp_path / "campaign.toml"
    config.write_text(text.replace("seeds = [1, 2, 3]", "seeds = [1]"))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--results", str(tmp_path / "runs"), str(config)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    [run] = (tmp_path / "runs" / "lease-reads").glob("lease-clock-*")
    checkers = json.loads((run / "verdict.json").read_text())["checkers"]
    assert checkers["linearizable"]["valid"] is False
    assert all(result["valid"] is True for name, result in checkers.items() if name != "linearizable")
    history = pd.read_parquet(run / "history.parquet")
    moved = history[(history["process"] == -1) & (history["type"] == "ok") & (history["f"] == "clock")]
    assert len(moved) == 2 and all(json.loads(value)["shape"] == "jump" for value in moved["value"])
    for node in ("n1", "n2", "n3"):
        assert (run / "cluster" / node / "clock").read_text().strip() == "+0.000"
