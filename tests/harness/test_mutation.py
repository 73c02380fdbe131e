"""`splitbrain mutate` (harness/mutants.py, harness/mutation.py): each
operator makes the change it names at one place and nothing else; the
planted bugs' switches are left alone; mutants are drawn by seed; and, on
the reference quorum's real code, a mutant that crashes the core is caught
by the simulation, one the simulation cannot tell from the original is
equivalent, one whose core never stops producing work hangs it; each
strategy is scored by its runs alone and with the simulation first; a
mutant's probe computes what the mutant does and marks whether its change
ran, and a mutant whose change never ran is named so and left out of the
score over changes that ran; and the command judges two mutants end to
end."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness import reach
from harness.cli.mutate import CHANGE_SHOWN, by_file_and_operator, score_line
from harness.limits import LULL_FROM_S
from harness.mutants import OPERATORS, mutants, sample
from harness.mutation import (
    ROOT,
    Outcome,
    RealRuns,
    Settings,
    copy_project,
    original_problem,
    run_in_copy,
    simulated,
    summary,
)
from results.recording import find_run_dirs

SOURCE = """
def step(self, msg):
    if msg.epoch < self.epoch:
        return
    if Bug.FORGET_VOTE in self.config.bugs:
        self.voted = None
    if self.offset >= msg.offset:
        self.data.write_election_state(self.state)
    self.writer.write(b"x")
"""


def by_operator(source: str = SOURCE) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for mutant in mutants("x.py", source):
        ast.parse(mutant.source)  # every mutant is still Python
        found.setdefault(mutant.operator, []).append(mutant.describe())
    return found


def test_each_operator_makes_its_change_and_leaves_the_planted_switches_alone():
    found = by_operator()
    assert found["negate-condition"] == [
        "x.py:3:negate-condition: msg.epoch < self.epoch -> not (msg.epoch < self.epoch)",
        "x.py:7:negate-condition: self.offset >= msg.offset -> not (self.offset >= msg.offset)",
    ]
    assert found["drop-guard"] == ["x.py:3:drop-guard: if msg.epoch < self.epoch:\n        return -> pass"]
    assert found["off-by-one"] == ["x.py:3:off-by-one: < -> <=", "x.py:7:off-by-one: >= -> >"]
    assert found["epoch-compare"] == ["x.py:3:epoch-compare: < -> >"]
    # The election state's write is persistence; a socket's write is not.
    assert found["skip-persistence"] == ["x.py:8:skip-persistence: self.data.write_election_state(self.state) -> pass"]
    assert not any(":5:" in change for changes in found.values() for change in changes)


def test_each_clause_of_a_compound_guard_is_dropped_on_its_own():
    source = (
        "def f(a, b, c):\n    if a and (b or c):\n        return 1\n    if (a and\n            b):\n        return 2\n"
    )
    found = [m for m in mutants("x.py", source) if m.operator == "drop-clause"]
    assert [m.describe() for m in found] == [
        "x.py:2:drop-clause: a -> True",
        "x.py:2:drop-clause: b or c -> True",
        "x.py:2:drop-clause: b -> False",
        "x.py:2:drop-clause: c -> False",
        "x.py:4:drop-clause: a -> True",
        "x.py:4:drop-clause: b -> True",
    ]
    for mutant in found:  # still Python, its lines where they were, and probed as it computes
        assert mutant.source.count("\n") == source.count("\n") and mutant.probed is not None
        plain, probed = defined(mutant.source)["f"], defined(mutant.probed)["f"]
        cases = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
        assert [probed(*case) for case in cases] == [plain(*case) for case in cases]
    assert [defined(m.source)["f"](0, 1, 0) for m in found[:2]] == [1, None]


def test_raft_s_commit_rule_dropped_is_among_the_core_s_mutants():
    """Figure 8 of the Raft paper: a leader that commits an earlier epoch's record by counting replicas."""
    source = (ROOT / "targets/kraft/core.py").read_text()
    [mutant] = [
        m
        for m in mutants("targets/kraft/core.py", source)
        if m.operator == "drop-clause" and m.before == "self.log.epoch_at(candidate - 1) == self.epoch"
    ]
    assert mutant.source.splitlines()[mutant.line - 1].strip() == "if candidate > self.hwm and True:"


def test_a_parenthesised_operand_keeps_its_parenthesis():
    [mutant] = [m for m in mutants("x.py", "ok = (a.epoch) < b\n") if m.operator == "off-by-one"]
    assert mutant.source == "ok = (a.epoch) <= b\n"


BRANCHES = """
def compare(a, b, epoch):
    if a < b:
        return "below"
    if epoch != a:
        sync()
    return "not below"


def never_called(a, b):
    return a <= b
"""


def defined(source: str) -> dict:
    namespace: dict = {"sync": lambda: None}
    exec(compile(source, "x.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("mutant", mutants("x.py", BRANCHES), ids=lambda m: m.name)
def test_a_probed_mutant_computes_what_the_mutant_does_and_marks_whether_its_change_ran(mutant, tmp_path, monkeypatch):
    marker = tmp_path / "reached"
    monkeypatch.setenv(reach.ENV, str(marker))
    monkeypatch.setattr(reach, "_touched", False)
    assert mutant.probed is not None and mutant.probed.count("\n") == mutant.source.count("\n")
    plain, probed = defined(mutant.source), defined(mutant.probed)
    cases = [(1, 2, 1), (2, 2, 3), (3, 2, 3)]
    assert [probed["compare"](*case) for case in cases] == [plain["compare"](*case) for case in cases]
    assert marker.exists() == (mutant.line < 9)  # `never_called`'s change never runs
    assert probed["never_called"](1, 2) == plain["never_called"](1, 2)
    assert marker.exists()


def test_a_change_inside_an_f_string_is_not_probed():
    [mutant] = [m for m in mutants("x.py", 'x = f"{a < b}"\n') if m.operator == "off-by-one"]
    assert mutant.source == 'x = f"{a <= b}"\n' and mutant.probed is None


def test_mutants_are_drawn_by_seed_from_every_operator_in_turn():
    found = mutants("core.py", (ROOT / "targets/kraft/core.py").read_text())
    assert {m.operator for m in found} >= set(OPERATORS) - {"skip-persistence"}
    picked = sample(found, 8, seed=3)
    assert picked == sample(found, 8, seed=3) and picked != sample(found, 8, seed=4)
    assert len({m.operator for m in picked}) == 8  # the core has no persistence call of its own: nine operators


def one(line: str, operator: str, path: str = "targets/kraft/core.py", after: str = ""):
    """The mutant of the reference quorum's `path` (its core) by `operator` on
    the line that begins so (the first such after the line that begins with `after`)."""
    source = (ROOT / path).read_text()
    lines = source.splitlines()
    since = next(n for n, text in enumerate(lines, 1) if text.strip().startswith(after)) if after else 0
    found = [
        m
        for m in mutants(path, source)
        if m.operator == operator and m.line > since and lines[m.line - 1].strip().startswith(line)
    ]
    if after:
        return found[0]
    [mutant] = found
    return mutant


@pytest.mark.slow
def test_the_simulation_catches_a_mutant_whose_core_raises_and_sets_an_equivalent_one_apart(tmp_path):
    original = copy_project(tmp_path / "original")
    baseline = simulated(original, "kraft", 4, 1)
    assert baseline[0] == "missed" and baseline[1]
    assert simulated(copy_project(tmp_path / "unchanged"), "kraft", 4, 1) == baseline  # no change, no difference
    # A follower that takes an EndQuorumEpoch of another epoch or sender: the core raises on the
    # state it finds, which halts the node, a violation of the schedule (as `node-crashes` on a real run).
    crash = one("if msg.epoch != self.epoch or not isinstance(state, FollowerState)", "drop-guard")
    # The state machine rebuilt when a truncation cuts exactly at what it applied, not only below: the same state again.
    same = one("if offset < self.applied:", "off-by-one")
    for name, mutant in (("crash", crash), ("same", same)):
        copy = copy_project(tmp_path / name)
        (copy / mutant.path).write_text(mutant.source)
        verdict, digest = simulated(copy, "kraft", 4, 1)
        if mutant is crash:
            assert verdict == "caught", verdict
        else:
            assert (verdict, digest) == baseline  # equivalent by the rule


def test_every_mutant_run_for_real_is_scored_by_the_runs_alone_and_with_the_simulation_first():
    outcomes = [
        Outcome("a", "a", True, "caught", {"guided": [0], "novelty": [1]}),  # the simulation and novelty's run
        Outcome("b", "b", True, "missed", {"guided": [1], "novelty": [0]}),  # guided's run alone
        Outcome("c", "c", True, "caught", {"guided": [0], "novelty": [0]}),  # the simulation alone
        Outcome("d", "d", True, "missed", {"guided": [2], "novelty": [2]}),  # stillborn: set apart
        Outcome("e", "e", False, "", {"guided": [0], "novelty": [0]}),  # survived
        Outcome("f", "f", True, "hung", {"guided": [2], "novelty": [2]}),  # a core that spins: no run came up
    ]
    report = summary(Settings(strategies=("guided", "novelty"), real_for_all=True), outcomes)
    assert report["counted"] == 5 and report["stillborn"] == 1
    assert report["score"] == {"guided": 0.2, "novelty": 0.2}
    assert report["score_with_simulation"] == {"guided": 0.8, "novelty": 0.6}
    assert summary(Settings(strategies=("guided", "novelty")), outcomes)["score"] == report["score_with_simulation"]


def test_a_mutant_whose_change_never_ran_is_named_so_and_left_out_of_the_score_over_changes_that_ran():
    outcomes = [
        Outcome("a", "a", True, "caught", {"guided": [0]}, reached=True),
        Outcome("b", "b", False, "", {"guided": [1]}, reached=True),
        Outcome("c", "c", False, "", {"guided": [0]}, reached=True),  # ran, and survived
        Outcome("d", "d", False, "", {"guided": [0]}, reached=False),  # never ran
        Outcome("e", "e", True, "missed", {"guided": [0]}, reached=None),  # not probed: counted as run
    ]
    report = summary(Settings(strategies=("guided",)), outcomes)
    assert report["counted"] == 5 and report["unreached"] == 1
    assert report["score"] == {"guided": 0.4} and report["score_reached"] == {"guided": 0.5}
    assert [o["unreached"] for o in report["outcomes"]] == [False, False, False, True, False]


def test_a_run_that_breaks_the_policy_catches_its_mutant_and_the_original_must_keep_it():
    gated = Outcome("a", "a", False, "", {"guided": [0], "novelty": [0]}, gated={"guided": ["seed 1: stuck"]})
    report = summary(Settings(strategies=("guided", "novelty"), policy="gate.toml"), [gated])
    assert report["caught"] == {"guided": 1, "novelty": 0}
    assert report["outcomes"][0]["gated"] == {"guided": ["seed 1: stuck"]}
    assert original_problem(RealRuns([0, 0], [], [])) is None
    assert original_problem(RealRuns([0, 1], [], ["seed 1: stuck"])) == "seed 2: a checker false"
    assert original_problem(RealRuns([0], [], ["seed 1: stuck"])) == "seed 1: stuck"
    assert original_problem(RealRuns([2, 0], ["no leader"], [])) == "no leader"


def test_a_core_that_never_stops_producing_work_hangs_its_simulation(tmp_path):
    spins = one("or self.log.dirty_from < self.flushed_end", "off-by-one")  # has_ready for ever
    copy = copy_project(tmp_path / "spins")
    (copy / spins.path).write_text(spins.source)
    assert simulated(copy, "kraft", 2, 1, timeout_s=10) == ("hung", "")


@pytest.mark.slow
def test_mutate_judges_two_mutants_end_to_end(tmp_path):
    gate = tmp_path / "gate.toml"  # one the original keeps: its run must pass it before any mutant's counts
    gate.write_text('required = ["election-safety"]\n[availability]\nmax_stuck_ms = 60000\n')
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mutate", "--mutants", "2", "--schedules", "3", "--strategies", "random"]
        + ["--time-limit", "6", "--results", str(tmp_path / "mutation"), "--quiet", "--policy", str(gate)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "mutation" / "mutation.json").read_text())
    assert report["mutants"] == 2 and len(report["outcomes"]) == 2
    assert report["counted"] == 2 - report["equivalent"] - report["stillborn"]
    assert set(report["score"]) == {"random"} and report["settings"]["policy"] == str(gate)
    assert find_run_dirs([tmp_path / "mutation" / "original" / "random" / "s1"])  # the original ran first
    assert len(report["survived"]["random"]) == report["counted"] - report["caught"]["random"]
    for outcome in report["outcomes"]:
        assert (
            outcome["simulation"] in ("caught", "missed", "equivalent", "hung")
            or outcome["simulation"].startswith("crashed")
            or not outcome["simulated"]
        )
        assert outcome["change"][:CHANGE_SHOWN] in done.stdout
        if outcome["caught_by_simulation"] and outcome["simulation"] == "caught":
            assert outcome["reached"], outcome  # what the simulation told apart ran its change
    assert Path(tmp_path / "mutation").is_dir()


def failing_run(mutant, tmp_path: Path) -> Path:
    """The run directory of an 8 s run (seed 1) of a copy of the project with
    `mutant` in it, which must end with a checker false (exit 1)."""
    copy = copy_project(tmp_path / "copy")
    (copy / mutant.path).write_text(mutant.source)
    done = run_in_copy(
        copy, ["run", "--time-limit", "8", "--seed", "1", "--quiet", "--results", str(tmp_path / "runs")], 300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    [run_dir] = (tmp_path / "runs").iterdir()
    return run_dir


@pytest.mark.slow
def test_a_node_whose_core_breaks_mid_run_halts_and_the_run_says_so(tmp_path):
    """A real run of a mutant whose core raises while it serves (a voter
    change's bookkeeping read with none in flight): the node halts on its
    internal error (fail-stop) and `node-crashes` finds it; before, the node
    logged the error and went on, and the run was valid."""
    mutant = one("if self._change_in_flight is None or self._change_in_flight[0] != peer:", "drop-guard")
    run_dir = failing_run(mutant, tmp_path)
    crashes = json.loads((run_dir / "verdict.json").read_text())["checkers"]["node-crashes"]
    assert crashes["valid"] is False
    assert any("internal error: TypeError" in a["summary"] for a in crashes["anomalies"]), crashes


@pytest.mark.slow
def test_a_node_whose_code_breaks_as_it_is_built_halts_and_the_run_says_so(tmp_path):
    """A mutant whose node raises as it is built, before it serves (its
    log's voter set read back with a statement gone): each node's event log
    says it halted on an internal error, and the run is judged
    (`node-crashes`, exit 1) with no load, as the simulation counts the
    same raise a halt; before, the node's exit stopped the run with a
    backend error (exit 2)."""
    mutant = one(
        "offset = self.voter_offsets[-1] if self.voter_offsets else None", "delete-statement", "targets/kraft/log.py"
    )
    run_dir = failing_run(mutant, tmp_path)
    crashes = json.loads((run_dir / "verdict.json").read_text())["checkers"]["node-crashes"]
    assert crashes["valid"] is False
    assert any("internal error: NameError" in a["summary"] for a in crashes["anomalies"]), crashes


@pytest.mark.slow
def test_a_cluster_that_never_recovers_once_healed_is_caught(tmp_path):
    """A mutant whose log's truncation drops nothing where it should drop
    records (a follower keeps a tail the leader does not hold and asks to
    truncate it again and again): once healed, the cluster's high
    watermarks never meet, every node answering. `progress` fails it
    (`no-recovery`: the reference quorum declares `recovers`); before, the
    run ended `unknown` (exit 2), its final copies unread, and the mutant
    survived the default run."""
    mutant = one("if dropped:", "negate-condition", "targets/kraft/log.py")
    run_dir = failing_run(mutant, tmp_path)
    progress = json.loads((run_dir / "verdict.json").read_text())["checkers"]["progress"]
    assert progress["valid"] is False, progress
    assert "no-recovery" in [a["kind"] for a in progress["anomalies"]], progress


# The leader killed for 8 s, longer than the reference quorum elects within (6 s).
LEADER_KILLED = """
[campaign]
name = "leader-killed"
backend = "local"
nodes = 3
workloads = ["append"]
nemeses = ["kill"]
time_limit_s = 13
seeds = [1]
schedule = [{at_s = 2.0, f = "kill", args = {target = "leader", seed = 1}},
            {at_s = 10.0, f = "start", args = {}},
            {at_s = 13.0, f = "heal-all", args = {}}]

[targets.kraft]
"""


@pytest.mark.slow
def test_a_majority_that_waits_for_a_lost_leader_to_come_back_is_caught_stuck(tmp_path):
    """A survivor of the default run (seed 11's draw, 2026-12-07): a
    pre-vote counted with `>` for `>=`, so every voter's grant is needed.
    With the leader killed, the two left stand again and again and elect
    no one until it is back; `no-progress` excuses that, a fault being in
    force. The reference quorum declares the time it elects within, and
    `progress` fails the majority left stuck longer (`stuck`); before,
    the run was valid (exit 0). The correct node, under the same schedule,
    elects among the two left and is valid."""
    granted = "if len(state.granted) + 1 >= self._votes_needed(state):"
    mutant = one(granted, "off-by-one", after="if isinstance(state, ProspectiveState) and resp.pre_vote:")
    campaign = tmp_path / "leader-killed.toml"
    campaign.write_text(LEADER_KILLED)
    copy = copy_project(tmp_path / "copy")
    (copy / mutant.path).write_text(mutant.source)
    for project, runs, exit_code in ((copy, "mutant", 1), (ROOT, "correct", 0)):
        done = run_in_copy(project, ["campaign", "--quiet", "--results", str(tmp_path / runs), str(campaign)], 300)
        assert done.returncode == exit_code, done.stdout + done.stderr
    [verdict] = (tmp_path / "mutant").rglob("verdict.json")
    progress = json.loads(verdict.read_text())["checkers"]["progress"]
    assert [a["kind"] for a in progress["anomalies"]] == ["stuck"], progress
    assert progress["anomalies"][0]["ms"] > 6000, progress


@pytest.mark.slow
def test_a_leader_that_refuses_its_own_epochs_fetches_is_caught_making_no_progress(tmp_path):
    """A mutant survivor of the safety checkers (2026-11-28, seed 2): a
    leader that serves fetches of every epoch but its own. It is elected and
    nothing ever commits, so no write is acknowledged, faults or none: every
    safety checker passes it, and `progress` fails it. Its followers' fetches
    refused, its leaders also resign with no fault made (check-quorum)."""
    mutant = one("if not isinstance(state, LeaderState) or req.epoch != self.epoch:", "epoch-compare")
    run_dir = failing_run(mutant, tmp_path)
    checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
    assert checkers["progress"]["valid"] is False, checkers["progress"]
    kinds = [a["kind"] for a in checkers["progress"]["anomalies"]]
    assert "no-progress" in kinds and set(kinds) <= {"no-progress", "unprovoked-step-down"}, kinds
    assert all(result["valid"] is True for name, result in checkers.items() if name != "progress"), checkers


@pytest.mark.slow
def test_a_leader_that_keeps_no_follower_without_writes_is_caught_in_the_lull(tmp_path):
    """A mutant no real run caught (sim_to_real, 2026-12-07: 0 of 3; the
    simulation under 12 of 12 timings): a follower's wait for its fetch's
    answer with `-` made `+`, so it fetches every tick, and each fetch
    takes the held one's place at the leader. While writes come every
    fetch is answered; with none, none is, and the followers stand again
    and again. A run's lull (its last LULL_S seconds healed, with no load)
    shows it, and `progress` fails the leaders so unseated with nothing
    wrong (`unprovoked-step-down`), all of them in the lull; before, a
    leader unseated by a later epoch was not judged, the load ran to the
    end, and the run was valid. The correct node, the same run, is valid."""
    mutant = one("and self.now_ms - state.fetch_in_flight_ms < self.config.request_timeout_ms", "arithmetic")
    copy = copy_project(tmp_path / "copy")
    (copy / mutant.path).write_text(mutant.source)
    run = ["run", "--nemesis", "none", "--time-limit", str(LULL_FROM_S), "--seed", "1", "--quiet", "--results"]
    for project, runs, exit_code in ((copy, "mutant", 1), (ROOT, "correct", 0)):
        done = run_in_copy(project, [*run, str(tmp_path / runs)], 300)
        assert done.returncode == exit_code, done.stdout + done.stderr
    [verdict] = (tmp_path / "mutant").rglob("verdict.json")
    progress = json.loads(verdict.read_text())["checkers"]["progress"]
    assert progress["anomalies"] and {a["kind"] for a in progress["anomalies"]} == {"unprovoked-step-down"}, progress
    [history] = (tmp_path / "mutant").rglob("history.parquet")
    load_ends_ns = pd.read_parquet(history)["time_ns"].max()  # (no fault: the last client row)
    assert all(a["time_ns"] > load_ends_ns and "was unseated by" in a["summary"] for a in progress["anomalies"])


def test_the_score_line_says_what_it_counts():
    """`--real-for-all` printed `{"guided": 0.0}` alone on stderr, which read
    as "nothing caught" where the simulation had caught every mutant."""
    outcomes = [Outcome(name, name, True, "caught", {"guided": [0]}) for name in "ab"]
    line = score_line(summary(Settings(strategies=("guided",), real_for_all=True), outcomes))
    assert line == (
        "score, caught by its real runs alone (--real-for-all), of 2 counted: guided 0%; "
        "with the simulation first: guided 100%"
    )
    assert score_line(summary(Settings(strategies=("guided",)), outcomes)) == (
        "score, caught by its real runs, or the simulation first, of 2 counted: guided 100%"
    )


def test_the_score_is_broken_down_by_file_and_operator():
    outcomes = [
        Outcome("targets/kraft/log.py:3:constant", "", True, "caught", {"guided": [0]}),
        Outcome("targets/kraft/log.py:9:constant", "", True, "missed", {"guided": [1]}),
        Outcome("targets/kraft/storage.py:4:delete-statement", "", False, "", {"guided": [0]}),
    ]
    report = summary(Settings(strategies=("guided",)), outcomes)
    assert report["by_file_and_operator"] == {
        "targets/kraft/log.py": {"constant": {"counted": 2, "simulation": 1, "guided": 1}},
        "targets/kraft/storage.py": {"delete-statement": {"counted": 1, "simulation": 0, "guided": 0}},
    }
    assert by_file_and_operator(report) == [
        "targets/kraft/log.py constant: simulation 1, guided 1 of 2",
        "targets/kraft/storage.py delete-statement: simulation 0, guided 0 of 1",
    ]


STANDARD = """
def advance(self, offset, epoch):
    log.info("advancing %s to %s", offset, epoch)
    self.hwm = max(offset + 1, self.hwm)
    self.count -= 1
    self.ready = True
    self.notify(epoch, offset)
"""


def test_the_standard_kinds_swap_arguments_turn_arithmetic_bump_constants_and_delete_statements():
    found = by_operator(STANDARD)
    assert found["swap-arguments"] == [
        "x.py:7:swap-arguments: epoch, offset -> offset, epoch",
    ]  # never a log call's, nor max's (either order gives the same: an equivalent mutant)
    assert found["arithmetic"] == ["x.py:4:arithmetic: + -> -", "x.py:5:arithmetic: self.count -= 1 -> self.count += 1"]
    assert found["constant"] == ["x.py:4:constant: 1 -> 2", "x.py:5:constant: 1 -> 2", "x.py:6:constant: True -> False"]
    assert [change.split(": ", 1)[1] for change in found["delete-statement"]] == [
        "self.hwm = max(offset + 1, self.hwm) -> pass",
        "self.count -= 1 -> pass",
        "self.ready = True -> pass",
        "self.notify(epoch, offset) -> pass",
    ]  # the log call is left in


@pytest.mark.parametrize(
    "mutant", [m for m in mutants("x.py", STANDARD) if m.operator not in OPERATORS[:6]], ids=lambda m: m.name
)
def test_a_standard_kind_s_probed_mutant_does_what_the_mutant_does(mutant, tmp_path, monkeypatch):
    marker = tmp_path / "reached"
    monkeypatch.setenv(reach.ENV, str(marker))
    monkeypatch.setattr(reach, "_touched", False)
    assert mutant.probed is not None and mutant.probed.count("\n") == mutant.source.count("\n") == STANDARD.count("\n")

    class Node:
        hwm, count, ready, notified = 5, 3, False, None

        def notify(self, *args):
            self.notified = args

    def after(source: str) -> dict:
        namespace = {"log": __import__("logging").getLogger("x")}
        exec(compile(source, "x.py", "exec"), namespace)
        node = Node()
        namespace["advance"](node, 7, 2)
        return {name: getattr(node, name) for name in ("hwm", "count", "ready", "notified")}

    assert after(mutant.probed) == after(mutant.source)  # (max's arguments swapped change nothing: equivalent)
    assert marker.exists()


def test_the_reference_quorum_offers_its_log_election_state_and_storage_to_mutate():
    import targets

    sources = targets.get("kraft").mutation_sources()
    assert {path: simulated for path, simulated in sources.items() if path != "targets/kraft/core.py"} == {
        "targets/kraft/log.py": True,
        "targets/kraft/quorum_state.py": True,
        "targets/kraft/server.py": False,
        "targets/kraft/storage.py": False,
    }
    for path in sources:
        found = mutants(path, (ROOT / path).read_text())
        assert {"swap-arguments", "arithmetic", "constant", "delete-statement"} <= {m.operator for m in found}, path
        for mutant in found:
            ast.parse(mutant.source)
            assert mutant.probed is None or ast.parse(mutant.probed)
