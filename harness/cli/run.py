"""`splitbrain run`: a nemesis campaign against a real cluster: the run settings from the command line, one run directory each."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from harness import limits
from harness.limits import setting_type
from history.errors import UsageError
from history.faults import KINDS, ON_MESSAGES, of_kind
from nemesis import STRATEGIES
from nemesis.schedule import TOPOLOGIES
from workloads.generators import WORKLOADS

from .arguments import add_target_options, chosen_target, given_options, path_arg
from .outcome import EXIT_ERROR, EXIT_INVALID, worst_code
from .runs import execute, fresh_seed, validated

NAME = "run"
HELP = "a nemesis campaign against a real cluster; writes a run directory"


def arguments(parser: argparse.ArgumentParser) -> None:
    """The run's settings in RunConfig's groups: the cluster (and the target's options), the load, the faults, the output."""
    _cluster(parser.add_argument_group("the cluster"))
    add_target_options(parser.add_argument_group("the target's options (splitbrain targets lists them)"))
    _load(parser.add_argument_group("the load"))
    _faults(parser.add_argument_group("the faults"))
    _output(parser.add_argument_group("the output"))


def _cluster(group: argparse._ActionsContainer) -> None:
    group.add_argument(
        "--backend",
        default="local",
        choices=["local", "docker", "ssh"],
        help="where nodes run: processes on 127.0.0.1, containers, or your hosts over SSH",
    )
    group.add_argument("--hosts", type=path_arg, help="the SSH backend's hosts file (see harness/ssh_hosts.py)")
    group.add_argument(
        "--net",
        choices=["proxy", "iptables"],
        help="cut links with link proxies or iptables (docker); default: iptables on docker for a target whose "
        "members dial one advertised peer URL (etcd), else proxy; run.json states the choice",
    )
    group.add_argument(
        "--nodes", type=setting_type("nodes"), default=3, help=f"cluster size (at most {limits.MAX_NODES})"
    )
    voters = group.add_mutually_exclusive_group()
    voters.add_argument(
        "--initial-voters",
        type=setting_type("initial_voters"),
        metavar="N",
        help="the first N nodes bootstrap the voter set, the rest observe",
    )
    voters.add_argument("--standalone", action="store_true", help="the first node bootstraps alone (N = 1)")
    group.add_argument(
        "--down-at-join",
        type=setting_type("down_at_join"),
        default=0,
        metavar="K",
        help="kill K voters (not the leader) before observers start",
    )
    group.add_argument("--toxiproxy", help="URL of a Toxiproxy server to use instead of starting splitbrain's")


def _load(group: argparse._ActionsContainer) -> None:
    group.add_argument(
        "--workload",
        default="append",
        choices=list(WORKLOADS),
        help="client load: log appends, a read/write/cas register, or a lock guarding a list (etcd)",
    )
    group.add_argument(
        "--time-limit",
        type=setting_type("time_limit_s"),
        default=20.0,
        help="seconds of the run: load and faults, then its lull (--lull)",
    )
    group.add_argument(
        "--lull",
        type=setting_type("lull_s"),
        metavar="SECONDS",
        help="the run's last seconds, within the time limit: every fault healed and no client calls, the nodes "
        f"watched for a leader that cannot keep its followers without writes (default: {limits.LULL_S:g} where "
        f"the time limit is at least {limits.LULL_FROM_S:g}, else 0)",
    )
    group.add_argument(
        "--rate", type=setting_type("rate"), default=50.0, help="client operations per second, all clients together"
    )
    group.add_argument("--concurrency", type=setting_type("concurrency"), default=4, help="client processes")
    group.add_argument(
        "--op-timeout",
        type=setting_type("op_timeout_s"),
        default=1.0,
        help="seconds a client waits for an answer (then: info, unknown); a lock waits this long to be granted",
    )
    group.add_argument(
        "--seed",
        type=setting_type("seed"),
        help="the seed of the fault schedule and the load (default: a fresh one, printed and kept in run.json)",
    )


def _faults(group: argparse._ActionsContainer) -> None:
    group.add_argument(
        "--nemesis",
        help=f"comma-separated faults: {','.join(KINDS)} (or none); default: every fault the guided strategy "
        "aims that the target and backend take, but wipe and membership; partition,kill,pause with --nemesis-strategy random",
    )
    group.add_argument(
        "--topologies", help=f"comma-separated partition topologies to draw from: {','.join(TOPOLOGIES)}"
    )
    group.add_argument(
        "--nemesis-strategy",
        default="guided",
        choices=STRATEGIES,
        help="guided (default): each fault chosen from the nodes' states for the least-tried coverage cell; "
        "random: a schedule drawn from the seed (repeats with --seed; takes churn); "
        "novelty: each step chosen for the cluster states it leads to, learning which are new "
        "(novelty-priors: helped by guided's risk tables)",
    )
    group.add_argument(
        "--interval", type=setting_type("interval_s"), default=3.0, help="seconds each fault lasts, and between faults"
    )


def _output(group: argparse._ActionsContainer) -> None:
    group.add_argument("--results", type=path_arg, default=Path("runs"), help="where run directories go")
    group.add_argument(
        "--repeat",
        type=limits.REPEAT.parse,
        default=1,
        metavar="N",
        help="run N times, each with a fresh seed (the same one with --seed); exit 1 if any run finds a violation",
    )
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    group.add_argument(
        "--check-live",
        action="store_true",
        help="judge the run while it goes: a violation is said when found, and the live verdict when load ends",
    )
    group.add_argument(
        "--stop-on-violation",
        action="store_true",
        help="end the load at the first violation found live (then heal and check as ever); implies --check-live",
    )


def command(args: argparse.Namespace) -> int:
    config = config_of(args)
    codes = []
    for number in range(args.repeat):
        if number:
            config = dataclasses.replace(config, seed=fresh_seed() if args.seed is None else args.seed)
        if args.repeat > 1:
            print(f"run {number + 1} of {args.repeat}", file=sys.stderr)
        codes.append(execute(config)[1])
    if args.repeat > 1:
        print(
            f"repeat: {codes.count(EXIT_INVALID)} of {args.repeat} runs found a violation, "
            f"{sum(code == EXIT_ERROR for code in codes)} could not decide"
        )
    return worst_code(codes)


def config_of(args: argparse.Namespace, **more):
    """The run's settings from the command line (and `more`), checked: a one-line UsageError or SettingError."""
    from harness.run import RunConfig, unless_none

    # None: the strategy's default (RunConfig.default_nemesis).
    kinds = nemesis_kinds(args.nemesis)
    if args.backend == "ssh":
        from harness.ssh_hosts import load_hosts

        if args.hosts is None:
            raise UsageError("--backend ssh needs --hosts FILE")
        hosts = load_hosts(args.hosts)
        args.nodes = len(hosts.nodes)
    if args.net == "iptables" and args.backend != "docker":
        raise UsageError("--net iptables needs --backend docker")
    config = RunConfig(
        topologies=[t.strip() for t in args.topologies.split(",")] if args.topologies else None,
        nemesis_strategy=args.nemesis_strategy,
        target=chosen_target(args),
        backend=args.backend,
        nodes=args.nodes,
        workload=args.workload,
        **unless_none(nemesis=kinds),
        time_limit_s=args.time_limit,
        lull_s=args.lull,
        interval_s=args.interval,
        rate=args.rate,
        concurrency=args.concurrency,
        op_timeout_s=args.op_timeout,
        seed=fresh_seed() if args.seed is None else args.seed,
        options=given_options(args),
        initial_voters=1 if args.standalone else args.initial_voters,
        down_at_join=args.down_at_join,
        results=args.results,
        toxiproxy=args.toxiproxy,
        net=args.net,
        hosts=args.hosts,
        progress=not args.quiet,
        check_live=args.check_live,
        stop_on_violation=args.stop_on_violation,
        **more,
    )
    proxied = [kind for kind in config.nemesis if kind in of_kind("link") and kind not in ON_MESSAGES]
    if args.backend == "ssh" and hosts.toxiproxy_url is None and proxied:
        raise UsageError(
            f"--nemesis {', '.join(proxied)} need a link proxy: add toxiproxy to {args.hosts}"
            + ("" if args.nemesis else " (or name --nemesis without them)")
        )
    validated(config)
    return config


def nemesis_kinds(text: str | None) -> list[str] | None:
    """--nemesis as a list of fault kinds: [] for `none`; None (the strategy's
    default) when not given. Empty is refused: it is no fault by accident."""
    if text is None:
        return None
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    if not kinds:
        raise UsageError(
            f"--nemesis {text!r}: names no fault; name faults (see --help), or none for a run without faults"
        )
    return [kind for kind in kinds if kind != "none"]
