"""`splitbrain cluster`: a cluster by hand: up, status, down."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from harness import crash
from harness.limits import setting_type
from history.errors import UsageError

from .arguments import add_target_options, chosen_target, given_options, path_arg
from .outcome import EXIT_VALID

DEFAULT_STATE_DIR = Path("runs/cluster")
NAME = "cluster"
HELP = "a cluster by hand: up, status, down"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=["up", "status", "down"], help="start a cluster, show its nodes, or remove it"
    )
    parser.add_argument("--backend", default="local", choices=["local", "docker"], help="where the nodes run")
    parser.add_argument("--nodes", type=setting_type("nodes"), default=3, help="cluster size")
    parser.add_argument(
        "--state-dir",
        type=path_arg,
        help=f"where `up` records what it made; `down` removes what is recorded there (also a run directory's) "
        f"(default: {DEFAULT_STATE_DIR})",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--run", metavar="ID", help="down: remove one run's containers, networks and processes")
    scope.add_argument(
        "--all", action="store_true", help="down: remove every splitbrain object on this machine, listed first"
    )
    add_target_options(parser)


def command(args: argparse.Namespace) -> int:
    from harness import manual_cluster

    if args.action != "down" and (args.run or args.all):
        raise UsageError(f"cluster {args.action}: --run and --all are for `cluster down`")
    named, args.state_dir = args.state_dir is not None, args.state_dir or DEFAULT_STATE_DIR
    if args.state_dir.exists() and not args.state_dir.is_dir():
        raise UsageError(f"--state-dir {args.state_dir}: a file, not a folder")
    if args.action == "down" and named and not (args.run or args.all):
        _a_state_dir(args.state_dir)
    crash.write_here(args.state_dir)
    if args.action == "up":
        state = manual_cluster.up(args.state_dir, args.backend, args.nodes, given_options(args), chosen_target(args))
        print(json.dumps(state, indent=2))
        undo = shlex.join(["splitbrain", "cluster", "down", "--state-dir", str(args.state_dir.absolute())])
        print(f"cluster up: {len(state['clients'])} nodes; to remove them, from any folder: {undo}", file=sys.stderr)
    elif args.action == "status":
        for row in manual_cluster.status(args.state_dir):
            print(" ".join(f"{k}={row.get(k)}" for k in ("node", "state", "epoch", "leader", "log_end_offset", "hwm")))
    else:
        removed = cluster_down(args)
        for name in removed:
            print(f"removed {name}")
        if not removed:
            where = (
                "on this machine"
                if args.all
                else f"of run {args.run}"
                if args.run
                else f"recorded in {args.state_dir.absolute()}"
                + ("" if args.state_dir.exists() else ": no such folder")
            )
            print(
                f"cluster down: nothing of ours was running ({where}; a cluster up elsewhere: "
                "--state-dir DIR, as `cluster up` printed it)"
            )
    return EXIT_VALID


def _a_state_dir(path: Path) -> None:
    """A --state-dir named to `cluster down` holds what `cluster up` or a run
    recorded; a missing or unrelated folder is not taken for a clean one."""
    from harness import ownership

    if not path.exists():
        raise UsageError(f"--state-dir {path}: no such folder")
    if not ownership.find_ledgers(path):
        raise UsageError(
            f"--state-dir {path}: no record of anything splitbrain made here ({ownership.LEDGER}, "
            "as `cluster up` or a run writes it)"
        )


def cluster_down(args: argparse.Namespace) -> list[str]:
    """`cluster down`: the state directory's records, one run by id, or (listed first) everything."""
    from harness import manual_cluster

    if args.all:
        listed = manual_cluster.everything()
        for line in listed:
            print(f"found {line}")
        return manual_cluster.down_all() if listed else []
    if args.run:
        return manual_cluster.down_run(args.run)
    return manual_cluster.down(args.state_dir)
