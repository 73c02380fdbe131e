"""The release gate: it passes only when every run meets the policy, names
each run and requirement that failed (also in JUnit XML), and fails, not
skips, a run it cannot read."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from checkers.models import cas_register
from history.schema import HISTORY_COLUMNS, frame
from results.gate import PolicyError, judge, judge_mutation, load_policy, mutation_reports
from results.importer import import_file
from results.recording import find_run_dirs
from tests.harness.test_cli import splitbrain

DATA = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories"

POLICY = """
required = ["election-safety", "linearizable"]
may_be_absent = ["election-safety"]

[availability.clients.quiet]
min_ok_rate = 0.9
"""


def policy(tmp_path, text=POLICY):
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def run(tmp_path, name, checkers):
    """A whole run: its settings, its history and its verdict."""
    run_dir = tmp_path / "runs" / name
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"run_id": name, "seed": 0}))
    frame([], HISTORY_COLUMNS).to_parquet(run_dir / "history.parquet", index=False)
    (run_dir / "verdict.json").write_text(json.dumps({"valid": True, "checkers": checkers}))
    return run_dir


def availability(ok_rate):
    return {"valid": True, "anomalies": [], "stats": {"clients": {"quiet": {"ok_rate": ok_rate}}}}


def test_thresholds_and_required_checkers(tmp_path):
    rules = load_policy(policy(tmp_path))
    good = run(tmp_path, "good", {"linearizable": {"valid": True}, "availability": availability(0.95)})
    slow = run(tmp_path, "slow", {"linearizable": {"valid": True}, "availability": availability(0.5)})
    bad = run(
        tmp_path,
        "bad",
        {"linearizable": {"valid": False, "anomalies": [{"summary": "stale read"}]}, "availability": availability(1.0)},
    )
    assert [c.failure for c in judge(good, rules)] == [None, None, None]
    assert [c.failure for c in judge(slow, rules)] == [None, None, "ok_rate = 0.5 < 0.9"]
    assert judge(bad, rules)[1].failure == "valid: False: stale read"


def test_a_policy_bounds_how_long_a_run_stood_stuck(tmp_path):
    rules = load_policy(policy(tmp_path, 'required = ["linearizable"]\n[availability]\nmax_stuck_ms = 3000\n'))
    stats = {"linearizable": {"valid": True}}
    stuck = run(tmp_path, "stuck", {**stats, "availability": {"valid": True, "stats": {"stuck_ms": 4988.8}}})
    moved = run(tmp_path, "moved", {**stats, "availability": {"valid": True, "stats": {"stuck_ms": 607.1}}})
    assert judge(stuck, rules)[1].failure == "stuck_ms = 4988.8 > 3000"
    assert judge(moved, rules)[1].failure is None


def test_unknown_and_missing_fail_unless_the_policy_allows_them(tmp_path):
    rules = load_policy(
        policy(tmp_path, 'required = ["linearizable", "committed-data-loss"]\nallow_unknown = ["linearizable"]')
    )
    undecided = run(tmp_path, "undecided", {"linearizable": {"valid": "unknown", "error": "budget"}})
    assert [c.failure for c in judge(undecided, rules)] == [None, "did not run"]


def test_unreadable_runs_fail_by_name(tmp_path):
    rules = load_policy(policy(tmp_path))
    empty = tmp_path / "runs" / "empty"
    empty.mkdir(parents=True)
    (empty / "run.json").write_text("{}")
    frame([], HISTORY_COLUMNS).to_parquet(empty / "history.parquet", index=False)
    torn = run(tmp_path, "torn", {})
    (torn / "verdict.json").write_text('{"valid": tr')
    assert find_run_dirs([tmp_path / "runs"]) == [empty, torn]
    assert judge(empty, rules)[0].failure.startswith("no verdict.json")
    assert judge(torn, rules)[0].failure.startswith("verdict.json unreadable")


@pytest.mark.parametrize(
    "damage, failure",
    [
        (lambda d: (d / "run.json").write_text('{"run_id": "cut'), "run.json unreadable"),
        (lambda d: (d / "run.json").unlink(), "no run.json"),
        (lambda d: (d / "history.parquet").unlink(), "no history"),
        (lambda d: (d / "history.parquet").write_bytes(b"PAR1 cut short"), "history.parquet unreadable"),
    ],
    ids=["run.json-truncated", "run.json-missing", "history-missing", "history-truncated"],
)
def test_a_run_that_is_not_whole_fails_the_gate(tmp_path, damage, failure):
    """A valid verdict beside a run.json cut short passed: the gate read the verdict alone."""
    rules = load_policy(policy(tmp_path, 'required = ["linearizable"]\n'))
    broken = run(tmp_path, "broken", {"linearizable": {"valid": True}})
    assert [c.failure for c in judge(broken, rules)] == [None]
    damage(broken)
    [check] = judge(broken, rules)
    assert check.name == "run" and check.failure.startswith(failure), check


@pytest.mark.parametrize(
    "text, message",
    [
        ("required = []", "'required' must list"),
        ('required = ["x"]\nrequird = 1', "unknown key 'requird'"),
        ('required = ["linearizable"]\n[availability]\nfastest = 1', "availability.fastest"),
        ("required = [", "policy.toml"),
        (
            'required = ["linearizable"]\nmay_be_absent = ["linearisable"]',
            "may_be_absent: unknown checker 'linearisable'",
        ),
        (
            'required = ["linearizable"]\n[availability]\nmax_nonsense = 3',
            "availability.max_nonsense: unknown figure 'nonsense'",
        ),
        (
            'required = ["linearizable"]\n[availability.clients.quiet]\nmin_ok = 1',
            "clients.quiet.min_ok: unknown figure 'ok'",
        ),
        (
            'required = ["linearizable"]\n[availability.quiet]\nmin_ok_rate = 1',
            "availability.quiet.min_ok_rate: thresholds go",
        ),
        ('required = ["linearizable"]\nmin_faults = -1', "min_faults: must be a whole number"),
        ('required = ["linearizable"]\nmin_faults = true', "min_faults: must be a whole number"),
        ('required = ["linearizable"]\n[mutation]\nmin_score = 60', "mutation.min_score: a share"),
        ('required = ["linearizable"]\n[mutation]\nmin_score = 0.6\nstrategy = "guided"', "unknown key 'strategy'"),
        ('required = ["linearizable"]\n[mutation]\nmin_score = 0.6\nstrategies = "guided"', "mutation.strategies"),
    ],
)
def test_bad_policies_are_named(tmp_path, text, message):
    with pytest.raises(PolicyError, match=message.replace("[", r"\[")):
        load_policy(policy(tmp_path, text))


def test_a_policy_with_an_unknown_figure_is_refused_in_one_line_exit_2(tmp_path):
    good = run(tmp_path, "good", {"linearizable": {"valid": True}, "availability": availability(0.95)})
    done = splitbrain(
        "gate",
        str(good),
        "--policy",
        str(policy(tmp_path, POLICY + "max_nonsense = 3\n")),
        "--junit",
        str(tmp_path / "gate.xml"),
    )
    assert done.returncode == 2 and "unknown figure 'nonsense'" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "gate.xml").exists()


def test_a_policy_can_require_that_faults_were_made(tmp_path):
    rules = load_policy(policy(tmp_path, 'required = ["linearizable"]\nmin_faults = 1'))
    checked = {"linearizable": {"valid": True}}
    quiet, faulted, old = (
        run(tmp_path, "quiet", checked),
        run(tmp_path, "faulted", checked),
        run(tmp_path, "old", checked),
    )
    (quiet / "verdict.json").write_text(json.dumps({"valid": True, "checkers": checked, "faults_made": 0}))
    (faulted / "verdict.json").write_text(json.dumps({"valid": True, "checkers": checked, "faults_made": 3}))
    assert [c.failure for c in judge(quiet, rules)] == [None, "no fault was made"]
    assert [c.failure for c in judge(faulted, rules)] == [None, None]
    assert judge(old, rules)[1].failure.startswith("the verdict does not count")


def mutation_report(folder: Path, caught: dict[str, int], counted: int = 4) -> Path:
    """A mutation.json as `splitbrain mutate` writes it: `counted` mutants
    that count, each strategy's catch, and the survivor of a strategy that
    missed one named (one is caught by the simulation, which counts for
    every strategy: real_for_all is false)."""
    outcomes = [
        {"change": "core.py:9:off-by-one: < -> <=", "simulation": "missed", "equivalent": False, "stillborn": False,
         "caught_by": [s for s, n in caught.items() if n == counted]},
        {"change": "core.py:12:drop-guard", "simulation": "caught", "equivalent": False, "stillborn": False,
         "caught_by": []},
        {"change": "core.py:20:negate-condition", "simulation": "equivalent", "equivalent": True, "stillborn": False,
         "caught_by": []},
    ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    report = {"settings": {"real_for_all": False}, "mutants": 5, "equivalent": 1, "stillborn": 0}
    survived = {s: [] if n == counted else [outcomes[0]["change"]] for s, n in caught.items()}
    report |= {"counted": counted, "caught": caught, "caught_by_simulation": 1, "outcomes": outcomes}
    report |= {"survived": survived}
    (folder / "mutation.json").write_text(json.dumps(report))
    return folder / "mutation.json"


def test_a_policy_can_hold_a_release_to_a_mutation_score(tmp_path):
    """`[mutation] min_score`: each strategy's share of the mutants caught, from
    a campaign folder's mutation/mutation.json or a folder of its own; below
    it, the gate fails naming the score and a survivor; no report fails by name."""
    text = 'required = ["linearizable"]\n[mutation]\nmin_score = 0.6\n'
    campaign = tmp_path / "campaign"
    run(campaign, "good", {"linearizable": {"valid": True}})
    report = mutation_report(campaign / "mutation", {"guided": 2, "novelty": 3})
    failures = {}
    for name, rules in (("all", text), ("novelty", text + 'strategies = ["novelty"]\n')):
        done = splitbrain("gate", str(campaign / "runs"), str(campaign), "--policy", str(policy(tmp_path, rules)),
                          "--junit", str(tmp_path / f"{name}.xml"))  # fmt: skip
        failures[name] = done
    assert failures["novelty"].returncode == 0, failures["novelty"].stdout + failures["novelty"].stderr
    done = failures["all"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == (
        f"FAIL {report}: mutation.guided: caught 2 of 4 (50%), below 60%; survived: core.py:9:off-by-one: < -> <="
    )
    cases = ElementTree.parse(tmp_path / "all.xml").getroot().findall("testcase")
    assert {c.get("name") for c in cases} == {"linearizable", "mutation.guided", "mutation.novelty"}
    # A folder of only a mutation report is gated on it; no report at all fails by name.
    alone = mutation_report(tmp_path / "measured", {"guided": 3})
    done = splitbrain("gate", str(alone.parent), "--policy", str(policy(tmp_path, text)),
                      "--junit", str(tmp_path / "alone.xml"))  # fmt: skip
    assert done.returncode == 0 and "1 checks, 0 failed" in done.stdout, done.stdout + done.stderr
    done = splitbrain("gate", str(campaign / "runs"), "--policy", str(policy(tmp_path, text)),
                      "--junit", str(tmp_path / "none.xml"))  # fmt: skip
    assert done.returncode == 1 and "FAIL mutation: mutation: no mutation.json among the results" in done.stdout


def test_an_unreadable_mutation_report_fails_by_name(tmp_path):
    rules = load_policy(policy(tmp_path, 'required = ["linearizable"]\n[mutation]\nmin_score = 0.5\n'))
    for name, text in (("torn", '{"caught": {'), ("odd", '{"caught": [], "counted": 2}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mutation.json").write_text(text)
        [check] = judge_mutation(mutation_reports([tmp_path / name]), rules)
        assert check.name == "mutation" and check.failure.startswith("mutation.json unreadable"), check


def test_the_gate_on_real_verdicts_passes_good_histories_and_fails_a_bad_one(tmp_path):
    """Knossos's histories, imported and checked, gated: one line per failure,
    JUnit XML with the failing run and checker, exit code 1 (0 without it)."""
    runs = tmp_path / "runs"
    for name in ("good/cas-register-bug.edn", "good/memstress3-0.edn", "bad/cas-failure.edn"):
        import_file(DATA / name, "jepsen-edn", cas_register(0), runs)
    assert splitbrain("check", "--quiet", *map(str, sorted(runs.iterdir()))).returncode == 1
    rules = policy(tmp_path, 'required = ["linearizable"]')
    junit = tmp_path / "gate.xml"
    done = splitbrain("gate", str(runs), "--policy", str(rules), "--junit", str(junit))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"FAIL {runs / 'cas-failure'}: linearizable: valid: False: no order")
    assert "gate: FAIL (3 runs, 3 checks, 1 failed in 1 runs" in done.stdout
    suite = ElementTree.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    [failed] = [case for case in suite if case.find("failure") is not None]
    assert failed.get("classname") == str(runs / "cas-failure") and failed.get("name") == "linearizable"
    shutil.rmtree(runs / "cas-failure")
    passed = splitbrain("gate", str(runs), "--policy", str(rules), "--junit", str(junit))
    assert passed.returncode == 0 and "gate: PASS (2 runs" in passed.stdout, passed.stdout + passed.stderr
    bad_policy = splitbrain("gate", str(runs), "--policy", str(tmp_path / "missing.toml"))
    assert bad_policy.returncode == 2 and bad_policy.stderr.count("\n") == 1
