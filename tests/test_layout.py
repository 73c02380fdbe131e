"""The layout holds (docs/organisation.md). Outside `targets/`, code reaches a target
only through the registry (`targets`) and the interface
(`targets.interface`), never by importing a target's own package; and
checkers, below results and the harness, import neither."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The seam, and what targets share that names none of them (targets/log_lines.py: reading line logs as they
# grow; targets/releases.py: a server at a pinned release).
ALLOWED = {
    "targets",
    "targets.interface",
    "targets.options",
    "targets.packages",
    "targets.log_lines",
    "targets.releases",
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_no_target_package_is_imported_outside_targets():
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for folder in ("history", "harness", "nemesis", "workloads", "checkers", "results")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module in imported_modules(path)
        if (module == "targets" or module.startswith("targets.")) and module not in ALLOWED
    ]
    assert offending == []


def test_data_flows_one_way_checkers_import_no_results_or_harness():
    """docs/organisation.md: the history schema sits below checkers and results; checkers are pure."""
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "checkers").rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] in ("results", "harness", "nemesis", "workloads", "targets")
    ]
    assert offending == []


def test_the_ground_floor_stands_on_nothing_of_ours():
    """history/ (the errors, the schema, the fault catalogue, the cuts) is
    what every room stands on: it imports the standard library, pandas,
    numpy and pyarrow, and nothing of splitbrain but itself."""
    ours = {"checkers", "harness", "nemesis", "workloads", "results", "targets", "benchmarks"}
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "history").rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] in ours
    ]
    assert offending == []
    assert {path.stem for path in (ROOT / "history").glob("*.py")} >= {"errors", "schema", "faults", "cuts"}


def test_the_reference_quorums_node_runs_with_targets_alone_and_the_standard_library(tmp_path):
    """An SSH host gets targets/ and nothing else (`ssh_sources`): its node
    programs import nothing from the rest of splitbrain, nor from PyPI. A
    `history.errors` import in targets/__init__.py broke every SSH run."""
    import shutil
    import subprocess

    shutil.copytree(ROOT / "targets", tmp_path / "targets", ignore=shutil.ignore_patterns("__pycache__"))
    modules = "targets.kraft.node, targets.kraft.format, targets.kraft.server"
    done = subprocess.run(
        ["/usr/bin/python3", "-E", "-s", "-S", "-c", f"import {modules}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_no_function_outside_the_tests_is_60_lines_or_longer():
    """A hub function is what the next engineer reads slowest: the longest
    was build_parser at 173 lines; now the subcommands build their own."""
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for folder in ("history", "checkers", "harness", "nemesis", "results", "targets", "workloads", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "wgl_core" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 >= 60
    ]
    assert long == []


# Literals that spell a fault kind but mean something else, each with what it means.
NOT_A_FAULT = {
    ("checkers/membership.py", "membership"): "the membership checker's name",
    ("targets/kraft/framing.py", "membership"): "a kind of message (history/messages.py)",
    ("targets/nats/framing.py", "membership"): "a kind of message (history/messages.py)",
    ("harness/toxiproxy/toxics.py", "latency"): "Toxiproxy's toxic type",
    ("harness/toxiproxy/toxics.py", "bandwidth"): "Toxiproxy's toxic type",
    ("harness/cluster.py", "clock"): "the name of a node's libfaketime control file",
    ("harness/cluster.py", "lose-unfsynced"): "the filesystem's name in an error",
    ("harness/cluster.py", "disk-full"): "the operation's name in an error from the filesystem",
}


def test_no_module_outside_the_fault_families_names_a_fault_kind():
    """A fault's behaviour lives in its family (nemesis/faults/) and what it
    is in the catalogue (history/); elsewhere a fault kind is read from
    them (a constant, a flag of its row), never spelled out, so a branch
    on one fault cannot hide in a room that is not its own."""
    from history.faults import KINDS

    found = []
    for folder in ("checkers", "harness", "nemesis", "results", "targets", "workloads"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name.startswith("nemesis/faults/"):
                continue
            tree = ast.parse(path.read_text(), name)
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body
                and isinstance(node.body[0], ast.Expr)
            }
            found += [
                f"{name}:{node.lineno}: {node.value!r}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant)
                and node.value in KINDS
                and id(node) not in docstrings
                and (name, node.value) not in NOT_A_FAULT
            ]
    assert found == []


def test_checkers_are_imported_only_to_judge():
    """checkers/ holds judges alone: what the strategies, the targets and the
    workloads stand on (the catalogue, a cell's words, what a strategy
    observes and its abstract state) is the ground floor's. Only the rooms
    that judge or show judgements (results/, the harness's live verdicts,
    campaigns and commands, benchmarks) import a checker."""
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for folder in ("history", "nemesis", "targets", "workloads")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] == "checkers"
    ]
    assert offending == []


def test_the_reference_quorums_node_and_simulator_stand_on_the_interface_alone():
    """The node program and its storage import the standard library alone
    (and the interface); the simulator also the ground floor (history/). A
    strategy reaches the simulator as the shell hands it over
    (targets/interface.py's `SimulatedSearch`), never by its importing
    nemesis/; the adapter (`target.py`) and the client are the harness's side."""
    import sys

    kraft = ROOT / "targets" / "kraft"
    offending = []
    for path in sorted(kraft.rglob("*.py")):
        if path.parent == kraft and path.name in ("target.py", "client.py"):
            continue
        floor = ("history",) if path.parent.name == "sim" else ()
        for line, module in imported_modules(path):
            top = module.split(".")[0]
            if module != "targets.interface" and top not in sys.stdlib_module_names and top not in floor:
                offending.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert offending == []
