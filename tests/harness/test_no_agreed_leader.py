"""A cluster whose running nodes agree on no leader as a run starts is the
system's unavailability, judged by `progress` (`no-leader`, exit 1), not
an error of the backend (exit 2): a mutant or a replayed schedule that
keeps the first election from finishing counts as caught. A real
reference-quorum cluster whose election timeout outlasts the run's wait
for a leader stands in for such a cluster; the wait is shortened so the
test takes seconds, not the run's 20."""

from __future__ import annotations

import json

import harness.run
import targets
from harness.cli import main
from harness.cli.outcome import EXIT_INVALID


def test_a_cluster_that_elects_no_leader_as_it_starts_is_judged_with_no_load(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(harness.run, "QUIESCE_TIMEOUT_S", 2.0)
    monkeypatch.setattr(targets.get("kraft"), "settle_s", 2.0)
    code = main(
        ["run", "--target", "kraft", "--nemesis", "none", "--time-limit", "3", "--seed", "1",
         "--election-timeout-ms", "60000", "--results", str(tmp_path)]
    )  # fmt: skip
    said = capsys.readouterr().err
    assert code == EXIT_INVALID, said
    assert "the cluster came up with no agreed leader within 2.0 s" in said
    [run_dir] = [path for path in tmp_path.iterdir() if path.is_dir()]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    # Nor did it once the run ended: every node answering, it still had no leader (`no-recovery`, kraft declaring `recovers`).
    anomaly, ended = verdict["checkers"]["progress"]["anomalies"]
    assert anomaly["kind"] == "no-leader" and "n1: no leader" in anomaly["summary"]
    assert ended["kind"] == "no-recovery"
    assert verdict["checkers"]["progress"]["stats"]["quiet_calls"] == 0  # no load was offered
