"""One error tree (history/errors.py): every exception class splitbrain
defines derives from its root, but those of the programs that run on the
nodes; nothing takes a message apart again; a run setting keeps its name and
reason apart, and each front end spells the setting its own way."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run import RunConfig
from history.errors import SettingError, SplitbrainError, UsageError

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("history", "checkers", "harness", "nemesis", "results", "targets", "workloads")
# Programs of their own, run where only the standard library is: the
# reference quorum's node and our Toxiproxy server. Their errors stay there.
NODE_PROGRAMS = (
    "targets/kraft/core.py",
    "targets/kraft/messages.py",
    "targets/kraft/server.py",
    "targets/kraft/storage.py",
    "targets/kraft/log_index.py",
    "targets/kraft/wallclock.py",
    "targets/kraft/sim/invariants.py",
    "targets/kraft/quorum_state.py",
    "harness/toxiproxy/proxy.py",
    "harness/toxiproxy/server.py",
    "harness/toxiproxy/toxics.py",
    "harness/toxiproxy/messages.py",
    "targets/etcd/framing.py",
    "targets/nats/framing.py",
)
BUILT_IN = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


def defined_exceptions() -> dict[str, tuple[str, list[str]]]:
    """Each class defined in the code (outside the node programs) whose
    bases look like exceptions: name -> (where, its bases' names)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(), where)):
                if isinstance(node, ast.ClassDef):
                    bases = [
                        b.id if isinstance(b, ast.Name) else b.attr
                        for b in node.bases
                        if isinstance(b, (ast.Name, ast.Attribute))
                    ]
                    classes[node.name] = (where, bases)
    return classes


def test_every_exception_defined_derives_from_the_root():
    classes = defined_exceptions()

    def rooted(name: str) -> bool | None:
        """True under SplitbrainError, False under a built-in exception only, None: not an exception."""
        if name == "SplitbrainError":
            return True
        if name not in classes:
            return False if name in BUILT_IN else None
        found = [rooted(base) for base in classes[name][1]]
        return True if True in found else False if False in found else None

    outside = sorted(
        f"{where}: {name}"
        for name, (where, _) in classes.items()
        if where not in NODE_PROGRAMS and rooted(name) is False
    )
    assert outside == []
    assert rooted("HistoryError") and rooted("SshError") and rooted("NotSent")


def test_the_trees_drawing_names_every_error_under_its_root():
    """history/errors.py draws the tree a reader looks for; a class left out of it is one they cannot find."""
    import history.errors

    drawing = history.errors.__doc__ or ""
    classes = defined_exceptions()

    def under_root(name: str) -> bool:
        return name == "SplitbrainError" or any(under_root(base) for base in classes.get(name, ("", []))[1])

    missing = sorted(name for name in classes if under_root(name) and f" {name} " not in drawing.replace("\n", " "))
    assert missing == []


def test_nothing_outside_the_node_programs_raises_a_built_in_exception():
    """A ValueError raised for a user's setting reached them as "internal
    error"; one raised for our own broken rule was caught as a setting."""
    raised = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(), where)):
                if (
                    isinstance(node, ast.Raise)
                    and isinstance(node.exc, ast.Call)
                    and isinstance(node.exc.func, ast.Name)
                ):
                    if node.exc.func.id in BUILT_IN and where not in NODE_PROGRAMS:
                        raised.append(f"{where}:{node.lineno}: {node.exc.func.id}")
    assert raised == []


def test_no_message_is_taken_apart():
    found = subprocess.run(["grep", "-rn", 'partition(": ")', *FOLDERS], cwd=ROOT, capture_output=True, text=True)
    assert found.stdout == ""


def test_a_setting_keeps_its_name_and_reason_and_the_command_line_spells_its_flag(tmp_path):
    with pytest.raises(SettingError) as raised:
        RunConfig(nodes=3, initial_voters=5).validate()
    assert raised.value.setting == "initial_voters" and isinstance(raised.value, UsageError)
    assert str(raised.value) == f"initial_voters: {raised.value.reason}"
    results = tmp_path / "runs"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--nodes",
            "3",
            "--initial-voters",
            "5",
            "--results",
            str(results),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr == f"splitbrain: --initial-voters: {raised.value.reason}\n"
    assert not results.exists()


def test_each_usage_error_is_one_line_and_exit_2(tmp_path):
    """A file error from deep inside (a campaign's, an archive's, a policy's)
    reaches the user through the one root, with no wrapping of its own."""
    campaign = tmp_path / "c.toml"
    campaign.write_text("[campaign]\nname = 1\n")
    policy = tmp_path / "p.toml"
    policy.write_text("required = 3\n")
    for argv in (
        ["campaign", str(campaign)],
        ["archive", "--verify", str(tmp_path)],
        ["gate", str(tmp_path), "--policy", str(policy)],
    ):
        done = subprocess.run([sys.executable, "-m", "harness.cli", *argv], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "internal error" not in done.stderr, (
            argv,
            done.stderr,
        )
        assert done.stderr.startswith("splitbrain: ") and str(tmp_path) in done.stderr, done.stderr
    assert issubclass(UsageError, SplitbrainError)
