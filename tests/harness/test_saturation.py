"""Knowing when to stop: Good–Turing's chance that the next run hits a
coverage cell never hit (checkers/coverage.py's `unseen_chance`) on
hand-made coverage, the stopping rule's settings refused in one line, and a
real campaign under `--until-saturated` that adds runs with fresh seeds,
says the chance after each run, stops by itself, and on a second call
resumes without running anything again."""

from __future__ import annotations

import json
import re

import pytest

from checkers.coverage import unseen_chance
from harness.campaign import CampaignError, another, load, stopping_rule
from tests.harness.test_cli import splitbrain


def cell(fault: str, role: str = "leader", count: int = 1) -> dict:
    return {"fault": fault, "role": role, "with": "alone", "count": count}


def test_the_chance_of_a_new_cell_is_the_cells_hit_by_one_run_only_per_run():
    assert unseen_chance([]) is None
    assert unseen_chance([[]]) == 0.0  # a run with no fault: nothing new to expect
    assert unseen_chance([[cell("kill"), cell("pause")]]) == 1.0  # two new cells in one run: at most 1
    runs = [
        [cell("kill", count=5)],
        [cell("kill"), cell("pause")],
        [cell("kill")],
        [cell("kill"), cell("pause", "follower")],
    ]
    assert unseen_chance(runs) == 2 / 4  # pause-leader and pause-follower were each hit by one run
    assert unseen_chance(runs + [[cell("pause"), cell("pause", "follower")]] * 2) == 0.0


CAMPAIGN = """
[campaign]
name = "saturating"
results = "{results}"
backend = "local"
time_limit_s = 4
interval_s = 1
nemesis_strategy = "random"
workloads = ["append"]
nemeses = ["kill"]
seeds = [7]
{extra}
[targets.correct]
"""


@pytest.mark.parametrize(
    "extra, message",
    [
        ("until_saturated = 0", "campaign.until_saturated must be more than 0, not 0"),
        ("until_saturated = 2.0", "campaign.until_saturated must be at most 1, not 2.0"),
        ('max_runs = "ten"', "campaign.max_runs must be an integer, not 'ten'"),
    ],
)
def test_a_bad_stopping_rule_is_named(tmp_path, extra, message):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(results=tmp_path, extra=extra))
    with pytest.raises(CampaignError, match=re.escape(message)):
        stopping_rule(path)


def test_more_runs_take_the_matrix_in_turn_with_seeds_no_run_had(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(results=tmp_path, extra="").replace("seeds = [7]", "seeds = [7, 3]"))
    _, planned = load(path)
    planned.append(another(planned, 2))
    planned.append(another(planned, 2))
    assert [p.run_id for p in planned] == [f"correct-append-kill-s{seed}-r0" for seed in (7, 3, 8, 9)]
    assert [p.config.seed for p in planned[2:]] == [8, 9] and planned[3].config.run_id == planned[3].run_id


@pytest.mark.slow
def test_a_campaign_adds_runs_until_no_new_cell_is_likely_and_resumes(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(results=tmp_path / "runs", extra="until_saturated = 0.5\nmax_runs = 4"))
    first = splitbrain("campaign", "--quiet", str(path))
    assert first.returncode == 0, first.stdout + first.stderr
    chances = [int(c) / 100 for c in re.findall(r"coverage cell never hit: (\d+)%", first.stdout)]
    runs = sorted(p.name for p in (tmp_path / "runs" / "saturating").iterdir() if p.name.startswith("correct-"))
    assert len(chances) == len(runs) and 2 <= len(runs) <= 4, first.stdout
    assert chances[0] == 1.0 and all(chance >= 0.5 for chance in chances[:-1])
    assert chances[-1] < 0.5 or len(runs) == 4
    assert runs == sorted(f"correct-append-kill-s{seed}-r0" for seed in range(7, 7 + len(runs)))
    listed = json.loads((tmp_path / "runs" / "saturating" / "campaign.json").read_text())["runs"]
    assert sorted(r["run_id"] for r in listed) == runs
    again = splitbrain("campaign", "--quiet", str(path))
    assert again.returncode == 0 and "campaign: " in again.stdout
    assert sorted(p.name for p in (tmp_path / "runs" / "saturating").iterdir() if p.name.startswith("correct-")) == runs


@pytest.mark.slow
def test_max_runs_alone_cuts_the_matrix_to_its_first_runs(tmp_path):
    """`--max-runs N` without the stopping rule was ignored: the whole matrix ran."""
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(results=tmp_path / "runs", extra="").replace("seeds = [7]", "seeds = [7, 8, 9]"))
    done = splitbrain("campaign", "--quiet", "--max-runs", "1", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    runs = sorted(p.name for p in (tmp_path / "runs" / "saturating").iterdir() if p.name.startswith("correct-"))
    assert runs == ["correct-append-kill-s7-r0"], done.stdout
    assert "the first 1 run of the matrix's 3" in done.stdout + done.stderr
