"""The `splitbrain` command. Exit codes everywhere: 0 valid, 1 invalid, 2 unknown or error."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import shlex
import sys

from pathlib import Path

from tqdm import tqdm

import targets
from checkers.errors import ClusterError, SettingError, SplitbrainError, UsageError
from checkers.models import MODELS
from harness import crash, limits
from harness.cluster import DEFAULT_TARGET
from harness.interrupts import interrupt_on_termination, quiet_exit
from harness.limits import raise_file_limit, setting_type
from checkers.faults import KINDS
from nemesis.schedule import TOPOLOGIES
from results.versions import splitbrain_version
from results.wording import counted
from targets import options as target_options
from targets.interface import Simulated
from workloads.generators import WORKLOADS

EXIT_VALID, EXIT_INVALID, EXIT_ERROR = 0, 1, 2
# The master URLs Spark takes (its "Master URLs"); anything else fails deep in Spark's start-up.
SPARK_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
                          r"|(spark|mesos|k8s)://\S+|yarn")


def add_target_options(parser: argparse.ArgumentParser) -> None:
    """The target, and every option some target declares (targets/options.py),
    as it spells it; a run refuses one its target does not declare. An option
    not given is left out, so the target's default stands."""
    parser.add_argument("--target", default=DEFAULT_TARGET, choices=targets.names(), help="the system under test")
    for declared in declarations().values():
        option, names = declared[0][1], [name for name, _ in declared]
        defaults = {str(o.default) for _, o in declared}
        default = "" if isinstance(option.default, (bool, tuple)) else "; default " + (
            defaults.pop() if len(defaults) == 1 else ", ".join(f"{o.default} on {name}" for name, o in declared))
        help = f"{option.help} ({', '.join(names)}{default})"
        common = dict(dest=option.name, default=argparse.SUPPRESS, help=help)
        if isinstance(option.default, bool):
            parser.add_argument(option.flag, action="store_false" if option.default else "store_true", **common)
        elif option.is_list:
            choices = sorted({c for _, o in declared for c in o.choices})
            parser.add_argument(option.flag, action="append", choices=choices, **common)
        else:
            parser.add_argument(option.flag, type=whole_number, metavar="N", **common)


def declarations() -> dict[str, list]:
    """Each option name's declarations, as (target, Option), in the registry's order."""
    found: dict[str, list] = {}
    for name in targets.names():
        for option in targets.get(name).options:
            found.setdefault(option.name, []).append((name, option))
    return found


def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None


def target_settings(args: argparse.Namespace) -> dict:
    """The target options given on the command line, as the target names them."""
    return {name: getattr(args, name) for name in declarations() if hasattr(args, name)}


def given_options(args: argparse.Namespace) -> dict:
    """The target options given, each one the chosen target declares with a value it takes; else a one-line UsageError."""
    target = targets.get(args.target)
    given = target_settings(args)
    refused = target_options.refusal(target.name, target.options, given)
    if refused:
        raise UsageError(f"{option_flag(refused[0])}: {refused[1]}")
    return given


def option_flag(name: str) -> str:
    """A setting as the command line spells it, for messages about it."""
    declared = declarations().get(name)
    return OPTIONS.get(name) or (declared[0][1].flag if declared else name)


def cmd_simulate(args: argparse.Namespace) -> int:
    """A seeded campaign of random fault schedules over the target's simulation."""
    target = targets.get(args.target)
    settings = {**given_options(args), "nodes": args.nodes, "observers": args.observers}

    def bar(items):
        return tqdm(items, desc="schedules", unit="run", disable=args.quiet)

    if not isinstance(target, Simulated):
        raise UsageError(f"--target: {target.name} has no simulator")
    verdict = target.simulate(settings, args.schedules, args.steps, args.seed, args.membership, args.keep_going, bar)
    json.dump(verdict, sys.stdout, indent=2)
    print()
    print(simulation_summary(verdict), file=sys.stderr)  # stdout stays one JSON document
    return exit_code(verdict)


def simulation_summary(verdict: dict) -> str:
    """`simulate`'s verdict in one line, as `run` ends: how many schedules, and the first violation with its seed."""
    result = verdict["checkers"]["simulation-invariants"]
    schedules = counted(result["stats"].get("schedules", 0), "schedule")
    anomalies = result.get("anomalies") or []
    first = f"; first: {anomalies[0].get('violation')} (seed {anomalies[0].get('seed')})" if anomalies else ""
    return f"valid: {verdict['valid']}  ({schedules}, {counted(len(anomalies), 'violation')}{first})"


def cmd_run(args: argparse.Namespace) -> int:
    from harness.run import RunConfig

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
        target=args.target,
        backend=args.backend,
        nodes=args.nodes,
        workload=args.workload,
        nemesis=kinds,
        time_limit_s=args.time_limit,
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
    )
    if args.backend == "ssh" and hosts.toxiproxy_url is None and {"partition", "latency"} & set(config.nemesis):
        raise UsageError(f"--nemesis partition/latency need a link proxy: add toxiproxy to {args.hosts}"
                         + ("" if args.nemesis else " (or name --nemesis without them)"))  # fmt: skip
    validated(config)
    codes = []
    for number in range(args.repeat):
        if number:
            config = dataclasses.replace(config, seed=fresh_seed() if args.seed is None else args.seed)
        if args.repeat > 1:
            print(f"run {number + 1} of {args.repeat}", file=sys.stderr)
        codes.append(execute(config)[1])
    if args.repeat > 1:
        print(f"repeat: {codes.count(EXIT_INVALID)} of {args.repeat} runs found a violation, "
              f"{sum(code == EXIT_ERROR for code in codes)} could not decide")  # fmt: skip
    return worst_code(codes)


def path_arg(text: str) -> Path:
    """A path option's value; an empty one would quietly mean the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name a file or folder")
    return Path(text)


def nemesis_kinds(text: str | None) -> list[str] | None:
    """--nemesis as a list of fault kinds: [] for `none`; None (the strategy's
    default) when not given. Empty is refused: it is no fault by accident."""
    if text is None:
        return None
    kinds = [kind.strip() for kind in text.split(",") if kind.strip()]
    if not kinds:
        raise UsageError(f"--nemesis {text!r}: names no fault; name faults (see --help), or none for a run without faults")
    return [kind for kind in kinds if kind != "none"]


def fresh_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def worst_code(codes: list[int]) -> int:
    """Many runs' exit code: 1 if any found a violation, else 2 if any could not decide, else 0."""
    return EXIT_INVALID if EXIT_INVALID in codes else max(codes, default=EXIT_VALID)


def validated(config) -> None:
    """A run's settings checked before anything is made: one line naming the option."""
    config.validate()
    if config.toxiproxy:
        reachable_toxiproxy(config.toxiproxy)
    writable_folder(config.results, "--results")


def execute(config) -> tuple[Path, int]:
    """One run from start to verdict: its directory and exit code."""
    from harness.run import Run

    raise_file_limit()
    print(f"seed: {config.seed}", file=sys.stderr)
    run = Run(config)
    try:
        run.execute()
    except BaseException:
        print(f"run directory: {run.dir}", file=sys.stderr)
        raise
    return report(run.dir)


def recorded_run(run_dir: Path, results: Path | None, quiet: bool):
    """A run directory's settings with the schedule it recorded (offsets from
    the start of load, faults aimed as they were: by role), ready to run
    again; a one-line UsageError for anything else."""
    from harness.run import RunConfig

    meta_path = run_dir / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
    except OSError as error:
        raise UsageError(f"{meta_path}: cannot read: {error.strerror or error} (is {run_dir} a run directory?)") from None
    except ValueError as error:
        raise UsageError(f"{meta_path}: not JSON: {error}") from None
    if isinstance(meta, dict) and "source" in meta:
        raise UsageError(f"{run_dir}: an imported history: there is no run to run again")
    try:
        config = RunConfig.from_json(meta["config"])
        start = meta.get("load_start_s", 0.0)
        # Offsets from the start of load again; rounding may put the last one a microsecond past the time limit.
        schedule = [{**op, "at_s": min(config.time_limit_s, round(max(0.0, op["at_s"] - start), 6))}
                    for op in meta.get("schedule", [])]
    except (KeyError, TypeError) as error:
        raise UsageError(f"{meta_path}: not a run description ({type(error).__name__}: {error})") from None
    config = dataclasses.replace(config, run_id=None, progress=not quiet, schedule=schedule,
                                 results=results or run_dir.resolve().parent)  # fmt: skip
    validated(config)
    return config


def cmd_replay(args: argparse.Namespace) -> int:
    """The run's settings, seed and recorded faults again; then whether the verdict came back."""
    from results.run_index import verdict_of

    config = recorded_run(args.run_dir, args.results, args.quiet)
    before = verdict_of(args.run_dir)
    run_dir, code = execute(config)
    now = verdict_of(run_dir)
    same = "reproduced" if now == before else "not reproduced"
    print(f"replay of {args.run_dir.name}: valid {before} then, valid {now} now: {same} ({run_dir})")
    return code


def cmd_shrink(args: argparse.Namespace) -> int:
    from harness.shrinking import failing_checkers, shrink_run

    if (args.run_dir / "verdict.json").exists() and not failing_checkers(args.run_dir):
        raise UsageError(f"{args.run_dir}: no checker failed in this run: nothing to shrink")
    if args.to is not None and not args.to.resolve().parent.is_dir():
        raise UsageError(f"--to: {args.to.parent} is not a folder")
    results = args.results or args.run_dir.resolve().parent / f"shrink-{args.run_dir.name}"
    config = recorded_run(args.run_dir, results, quiet=True)
    shrunk, toml = shrink_run(args.run_dir, config, args.trials, args.to, lambda c: execute(c)[0])
    print(f"shrunk: {counted(shrunk.faults, 'fault')}, {shrunk.time_limit_s:g} s, still failing; campaign: {toml} "
          f"(splitbrain campaign {toml}); trial runs in {results}")  # fmt: skip
    return EXIT_VALID


# Run settings as `splitbrain run` spells them, for messages about them.
OPTIONS = {"time_limit_s": "--time-limit", "interval_s": "--interval", "initial_voters": "--initial-voters",
           "down_at_join": "--down-at-join", "nemesis": "--nemesis", "topologies": "--topologies",
           "nemesis_strategy": "--nemesis-strategy", "workload": "--workload", "backend": "--backend", "net": "--net",
           "nodes": "--nodes", "target": "--target", "rate": "--rate", "concurrency": "--concurrency", "op_timeout_s": "--op-timeout",
           "seed": "--seed"}  # fmt: skip


def writable_folder(path: Path, option: str, make: bool = True) -> None:
    """A folder we can write in (made if missing, with `make`); else a
    one-line error naming the option."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: a file, not a folder")
    if not make and not path.exists():
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{option} {path}: {error.strerror or error}") from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: not a folder this user can write in")


def reachable_toxiproxy(url: str) -> None:
    """`--toxiproxy URL` answers its API, or a one-line error before the run starts."""
    from harness.links import ToxiproxyServer, wait_for_api

    try:
        wait_for_api(ToxiproxyServer(url), timeout_s=5.0)
    except (UsageError, ClusterError) as error:
        raise UsageError(f"--toxiproxy: {error}") from None


def cmd_check(args: argparse.Namespace) -> int:
    """Each run directory checked and its verdict written; one line per run; the
    worst exit code. A run that cannot be checked is an error line of its own
    (exit 2), and the others are still checked."""
    from results.checking import check_and_record
    from results.history import find_run_dirs

    try:
        run_dirs = find_run_dirs(args.run_dirs)
    except OSError as error:
        raise UsageError(str(error)) from None
    worst = EXIT_VALID
    for run_dir in tqdm(run_dirs, desc="runs", unit="run", disable=_no_bar(args, run_dirs)):
        try:
            verdict = check_and_record(run_dir, args.budget)
            for warning in verdict.get("warnings", []):
                tqdm.write(f"splitbrain: warning: {warning}", file=sys.stderr)
        except (UsageError, OSError) as error:
            tqdm.write(one_line(f"error   {run_dir}: {error}"), file=sys.stderr)
            worst = max(worst, EXIT_ERROR)
            continue
        except Exception as error:  # a bug of ours on this run: the others are still checked
            tqdm.write(one_line(f"error   {run_dir}: internal error: {type(error).__name__}: {error} "
                                f"(traceback in {crash.log(run_dir)})"), file=sys.stderr)  # fmt: skip
            worst = max(worst, EXIT_ERROR)
            continue
        tqdm.write(verdict_line(run_dir, verdict))
        worst = max(worst, exit_code(verdict))
    return worst


def cmd_campaign(args: argparse.Namespace) -> int:
    """The matrix of runs, resumable; one line per run as it finishes; the worst exit code."""
    from harness import campaign

    worst = EXIT_VALID

    def finished_run(run_dir: Path) -> None:
        nonlocal worst
        verdict = json.loads((run_dir / "verdict.json").read_text())
        tqdm.write(verdict_line(run_dir, verdict))
        worst = max(worst, exit_code(verdict))

    folder, run_dirs = campaign.execute(args.config, not args.quiet, args.results, finished_run)
    print(f"campaign: {counted(len(run_dirs), 'run')} in {folder}; summary: {folder / 'summary.html'}")
    return worst


def cmd_archive(args: argparse.Namespace) -> int:
    """Pack runs into an archive, or verify one: every problem named, exit 2 if any."""
    from results.checking import check_run
    from results import archive
    from results.history import find_run_dirs

    if args.verify:
        problems = archive.verify(args.verify)
        runs = len(archive.read_manifest(args.verify)["runs"])
        for problem in problems:
            print(f"{args.verify}: {problem}")
        print(f"archive {args.verify}: {runs} runs, {len(problems)} problems")
        return EXIT_ERROR if problems else EXIT_VALID
    if args.to is None or not args.runs:
        raise UsageError("archive: give --to ARCHIVE and run directories, or --verify ARCHIVE")
    added = archive.add(args.to, find_run_dirs(args.runs), check_run)
    print(f"archive {args.to}: {len(added)} runs added, index {args.to / archive.INDEX}")
    return EXIT_VALID


def cmd_analyze(args: argparse.Namespace) -> int:
    """The archive re-checked and summarised on Spark. Exit 2 when an entry is
    corrupt or the re-check contradicts an archived verdict (the archive
    cannot be trusted), else 1 when a run fails a safety checker."""
    from results.spark_pipeline import analyze

    if not (args.archive / "manifest.json").exists():
        raise UsageError(f"{args.archive}: not an archive (no manifest.json)")
    if not SPARK_MASTER.fullmatch(args.master):
        raise UsageError(f"--master {args.master}: not a Spark master URL (local, local[N], local[*], spark://HOST:PORT, "
                         "yarn, k8s://URL, mesos://HOST:PORT)")  # fmt: skip
    writable_folder(args.out or args.archive / "analysis", "--out")
    crash.write_here(args.out or args.archive / "analysis")
    with tqdm(desc="analyze", unit="run", disable=args.quiet) as bar:
        def step(name: str, done: int = 0, total: int | None = None) -> None:
            bar.set_postfix_str(name, refresh=False)
            if total is not None:
                bar.total = total
            bar.update(done - bar.n)

        found = analyze(args.archive, args.master, args.out, args.budget, step)
    for problem in found["problems"]:
        print(f"CORRUPT {args.archive}: {problem}")
    verdicts = found["verdicts"]
    failed = verdicts[verdicts["valid"] == "false"]
    print(f"analyze: {verdicts['run_id'].nunique()} runs re-checked on Spark, {failed['run_id'].nunique()} failing a safety checker")
    if len(found["failure_rate"]):
        print(found["failure_rate"].to_string(index=False))
    for row in found["flaky"].itertuples(index=False):
        print(f"FLAKY {row.failed} of {row.runs} runs failed: {', '.join(row.run_ids)}")
    for row in found["disagreements"].itertuples(index=False):
        print(f"DISAGREES {row.run_id}: {row.checker}: archived {row.archived}, re-checked {row.rechecked}")
    print(f"analysis written to {found['out']}")
    if found["problems"] or len(found["disagreements"]):
        return EXIT_ERROR
    return EXIT_INVALID if len(failed) else EXIT_VALID


def cmd_gate(args: argparse.Namespace) -> int:
    """Exit 0 only when every run meets the policy; JUnit XML either way."""
    from results.gate import judge, junit, load_policy
    from results.history import find_run_dirs

    policy = load_policy(args.policy)
    runs = find_run_dirs(args.results)
    if args.junit.is_dir():
        raise UsageError(f"--junit {args.junit}: a folder; name the XML file to write")
    checks = [check for run_dir in runs for check in judge(run_dir, policy)]
    writable_folder(args.junit.parent, "--junit")
    junit(checks, args.junit)
    failed = [c for c in checks if c.failure]
    for check in failed:
        print(f"FAIL {check.run}: {check.name}: {check.failure}")
    verdict = "FAIL" if failed else "PASS"
    failed_runs = len({c.run for c in failed})
    print(f"gate: {verdict} ({len(runs)} runs, {len(checks)} checks, {len(failed)} failed in {failed_runs} runs; "
          f"JUnit XML: {args.junit})")  # fmt: skip
    return EXIT_INVALID if failed else EXIT_VALID


def _no_bar(args: argparse.Namespace, items: list) -> bool | None:
    """A bar for many items, on a terminal only (None: tqdm decides by the tty),
    so errors piped elsewhere stay one line each."""
    return True if len(items) < 2 or args.quiet else None


def cmd_import(args: argparse.Namespace) -> int:
    from checkers.models import make_model
    from results.importer import ImportFormatError, import_file

    try:
        model = make_model(args.model, parse_initial(args.initial))
    except SettingError as error:
        raise UsageError(f"--model: {error.reason}") from None
    writable_folder(args.to, "--to", make=False)
    worst = EXIT_VALID
    for path in tqdm(args.files, desc="import", unit="file", disable=_no_bar(args, args.files)):
        try:
            run_dir = import_file(path, args.format, model, args.to, replace=args.replace, independent=args.independent)
        except ImportFormatError as error:
            tqdm.write(one_line(f"splitbrain: {error}"), file=sys.stderr)
            worst = EXIT_ERROR
            continue
        tqdm.write(f"imported {path} -> {run_dir}")
    return worst


def cmd_export(args: argparse.Namespace) -> int:
    from results.exporter import export_edn

    if not args.to.parent.is_dir():
        raise UsageError(f"--to: {args.to.parent} is not a folder")
    options = export_edn(args.run_dir, args.to)
    print(f"exported {args.run_dir} -> {args.to} (read back with: splitbrain import {options})")
    return EXIT_VALID


def cmd_serve(args: argparse.Namespace) -> int:
    from results.serve import server

    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: not a folder (the results folder `splitbrain run` writes in: runs/ unless --results)")
    try:
        httpd = server(args.dir, args.host, args.port)
    except OSError as error:
        raise UsageError(f"--port/--host: cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
    host, port = httpd.server_address[:2]
    print(f"serving {args.dir} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return EXIT_VALID


def parse_initial(text: str | None):
    """`--initial`: JSON (0, "", null) or EDN's nil."""
    if text is None or text == "nil":
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise UsageError(f"--initial: {text!r} is not a JSON value (or nil)") from None


def cmd_targets(args: argparse.Namespace) -> int:
    """Each target (or the one named): version, options, workloads, capabilities, faults."""
    from harness.target_listing import describe, text

    described = [describe(name) for name in ([args.name] if args.name else targets.names())]
    if args.json:
        print(json.dumps(described, indent=2))
    else:
        print("\n\n".join(text(d) for d in described))
    return EXIT_VALID


def cmd_cluster(args: argparse.Namespace) -> int:
    from harness import manual_cluster

    if args.action != "down" and (args.run or args.all):
        raise UsageError(f"cluster {args.action}: --run and --all are for `cluster down`")
    crash.write_here(args.state_dir)
    if args.action == "up":
        state = manual_cluster.up(args.state_dir, args.backend, args.nodes, given_options(args), args.target)
        print(json.dumps(state, indent=2))
        undo = shlex.join(["splitbrain", "cluster", "down", "--state-dir", str(args.state_dir.absolute())])
        print(f"cluster up: {len(state['clients'])} nodes; to remove them, from any folder: {undo}",
              file=sys.stderr)  # fmt: skip
    elif args.action == "status":
        for row in manual_cluster.status(args.state_dir):
            print(" ".join(f"{k}={row.get(k)}" for k in ("node", "state", "epoch", "leader", "log_end_offset", "hwm")))
    else:
        removed = cluster_down(args)
        for name in removed:
            print(f"removed {name}")
        if not removed:
            where = "on this machine" if args.all else f"of run {args.run}" if args.run else \
                f"recorded in {args.state_dir.absolute()}"
            print(f"cluster down: nothing of ours was running ({where}; a cluster up elsewhere: "
                  "--state-dir DIR, as `cluster up` printed it)")  # fmt: skip
    return EXIT_VALID


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


def report(run_dir: Path) -> tuple[Path, int]:
    """Check a run directory, write its verdict and report, give it its own
    name, print a line per checker; the exit code by verdict."""
    from results.checking import check_and_record
    from results.history import complete

    verdict = check_and_record(run_dir)
    run_dir = complete(run_dir)
    print(f"run directory: {run_dir}", file=sys.stderr)
    print(f"report: {run_dir / 'report.html'}")
    for name, result in verdict["checkers"].items():
        anomalies = result.get("anomalies", [])
        line = f"{name}: {result['valid']}"
        if anomalies:
            line += f" ({counted(len(anomalies), 'anomaly', 'anomalies')}; first: {anomalies[0].get('summary', anomalies[0])})"
        print(line)
    note = f", {verdict['note']}" if verdict.get("note") else ""
    print(f"valid: {verdict['valid']}{note}  ({run_dir})")
    return run_dir, exit_code(verdict)


def exit_code(verdict: dict) -> int:
    return {True: EXIT_VALID, False: EXIT_INVALID}.get(verdict["valid"], EXIT_ERROR)


def verdict_line(run_dir: Path, verdict: dict) -> str:
    """One line: the verdict, the run, and each checker that did not pass with its first anomaly."""
    details = []
    for name, result in verdict["checkers"].items():
        if result["valid"] is True:
            continue
        anomalies = result.get("anomalies", [])
        why = result.get("error") or (anomalies[0].get("summary", str(anomalies[0])) if anomalies else "")
        details.append(f"{name}: {result['valid']}" + (f" ({why})" if why else ""))
    if verdict.get("note"):
        details.append(verdict["note"])
    return f"{str(verdict['valid']).lower():<7} {run_dir}" + ("  " + "; ".join(details) if details else "")


def described(error: SplitbrainError) -> str:
    """An error as its user reads it: a run setting as its flag names it."""
    if isinstance(error, SettingError):
        return f"{option_flag(error.setting)}: {error.reason}"
    return str(error)


def one_line(text: object) -> str:
    """A message as one printable line: control characters and line breaks
    that came in with the input (a file's bytes, say) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class DefaultsShown(argparse.HelpFormatter):
    """Help that shows each option's default, where it has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        flag = action.nargs == 0  # --no-pre-vote's default True says the opposite of what the flag does
        if action.option_strings and not flag and action.default not in (None, False, argparse.SUPPRESS) and "default" not in text:
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (naming the option), exit 2;
    `--help` shows every default."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsShown)
        kwargs.setdefault("allow_abbrev", False)  # a typo is an error, never another option
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(EXIT_ERROR, one_line(f"{self.prog}: {message} (see {self.prog} --help)") + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="splitbrain", description=__doc__)
    parser.add_argument("--version", action="version", version=f"splitbrain {splitbrain_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    simulate = commands.add_parser("simulate", help="fault schedules over a simulated cluster of the reference quorum")
    simulate.add_argument("--nodes", type=limits.SIM_NODES.parse, default=3, help="nodes in the simulated cluster")
    simulate.add_argument("--schedules", type=limits.SCHEDULES.parse, default=200, help="schedules to run, one seed each")
    simulate.add_argument("--steps", type=limits.STEPS.parse, default=20, help="fault and load steps per schedule")
    simulate.add_argument("--seed", type=setting_type("seed"), default=0, help="the first schedule's seed")
    simulate.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    simulate.add_argument("--observers", type=limits.OBSERVERS.parse, default=0, help="replicas beyond the initial voters")
    simulate.add_argument(
        "--membership", action="store_true", help="schedules also lose disks and add and remove voters"
    )
    simulate.add_argument("--quiet", action="store_true", help="no progress bar")
    add_target_options(simulate)
    simulate.set_defaults(func=cmd_simulate)
    run = commands.add_parser("run", help="a nemesis campaign against a real cluster; writes a run directory")
    run.add_argument(
        "--backend", default="local", choices=["local", "docker", "ssh"],
        help="where nodes run: processes on 127.0.0.1, containers, or your hosts over SSH",
    )  # fmt: skip
    run.add_argument("--hosts", type=path_arg, help="the SSH backend's hosts file (see harness/ssh_hosts.py)")
    run.add_argument(
        "--net", choices=["proxy", "iptables"],
        help="cut links with link proxies or iptables (docker); default: iptables on docker for a target whose "
        "members dial one advertised peer URL (etcd), else proxy; run.json states the choice",
    )  # fmt: skip
    run.add_argument("--nodes", type=setting_type("nodes"), default=3, help=f"cluster size (at most {limits.MAX_NODES})")
    voters = run.add_mutually_exclusive_group()
    voters.add_argument(
        "--initial-voters", type=setting_type("initial_voters"), metavar="N", help="the first N nodes bootstrap the voter set, the rest observe"
    )
    voters.add_argument("--standalone", action="store_true", help="the first node bootstraps alone (N = 1)")
    run.add_argument(
        "--down-at-join", type=setting_type("down_at_join"), default=0, metavar="K", help="kill K voters (not the leader) before observers start"
    )
    run.add_argument(
        "--workload", default="append", choices=list(WORKLOADS),
        help="client load: log appends, a read/write/cas register, or a lock guarding a list (etcd)",
    )
    run.add_argument(
        "--nemesis", help=f"comma-separated faults: {','.join(KINDS)} (or none); default: every fault the guided strategy "
        "aims that the target and backend take, but wipe and membership; partition,kill,pause with --nemesis-strategy random"
    )
    run.add_argument("--topologies", help=f"comma-separated partition topologies to draw from: {','.join(TOPOLOGIES)}")
    run.add_argument(
        "--nemesis-strategy", default="guided", choices=["guided", "random"],
        help="guided (default): each fault chosen from the nodes' states for the least-tried coverage cell; "
        "random: a schedule drawn from the seed (repeats with --seed; takes churn)",
    )  # fmt: skip
    run.add_argument("--time-limit", type=setting_type("time_limit_s"), default=20.0, help="seconds of load and faults")
    run.add_argument("--interval", type=setting_type("interval_s"), default=3.0, help="seconds each fault lasts, and between faults")
    run.add_argument("--rate", type=setting_type("rate"), default=50.0, help="client operations per second, all clients together")
    run.add_argument("--concurrency", type=setting_type("concurrency"), default=4, help="client processes")
    run.add_argument(
        "--op-timeout", type=setting_type("op_timeout_s"), default=1.0,
        help="seconds a client waits for an answer (then: info, unknown); a lock waits this long to be granted",
    )  # fmt: skip
    run.add_argument(
        "--seed", type=setting_type("seed"),
        help="the seed of the fault schedule and the load (default: a fresh one, printed and kept in run.json)",
    )  # fmt: skip
    run.add_argument("--results", type=path_arg, default=Path("runs"), help="where run directories go")
    run.add_argument(
        "--repeat", type=limits.REPEAT.parse, default=1, metavar="N",
        help="run N times, each with a fresh seed (the same one with --seed); exit 1 if any run finds a violation",
    )  # fmt: skip
    run.add_argument("--toxiproxy", help="URL of a Toxiproxy server to use instead of starting splitbrain's")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_target_options(run)
    run.set_defaults(func=cmd_run)

    replay = commands.add_parser("replay", help="run a run again: its settings, seed, fault schedule and operations")
    replay.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="the run directory to replay")
    replay.add_argument("--results", type=path_arg, help="where the new run goes (default: beside RUN_DIR)")
    replay.add_argument("--quiet", action="store_true", help="no progress bar")
    replay.set_defaults(func=cmd_replay)

    shrink = commands.add_parser("shrink", help="fewer faults and a shorter run that still fail, as a campaign file")
    shrink.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="a failing run directory")
    shrink.add_argument("--trials", type=limits.TRIALS.parse, default=2, metavar="N",
                        help="runs per candidate schedule (it fails if any of them fails)")  # fmt: skip
    shrink.add_argument("--to", type=path_arg, help="the campaign file to write (default: beside the trial runs)")
    shrink.add_argument("--results", type=path_arg, help="where trial runs go (default: shrink-RUN beside RUN_DIR)")
    shrink.set_defaults(func=cmd_shrink)

    check = commands.add_parser("check", help="check run directories (also ones left by crashed runs or imported)")
    check.add_argument("run_dirs", type=path_arg, nargs="+", metavar="RUN_DIR", help="run directories, or folders of them")
    check.add_argument(
        "--budget", type=limits.BUDGET_S.parse, default=30.0, help="seconds the linearizability search may spend per run (then: unknown)"
    )
    check.add_argument("--quiet", action="store_true", help="no progress bar")
    check.set_defaults(func=cmd_check)

    campaign = commands.add_parser("campaign", help="a matrix of runs from a TOML file; resumable")
    campaign.add_argument("config", type=path_arg, metavar="CONFIG.toml", help="the matrix (keys: README, \"Campaign and policy files\")")
    campaign.add_argument("--results", type=path_arg, help="where the campaign folder goes (default: the file's results key)")
    campaign.add_argument("--quiet", action="store_true", help="no progress bar")
    campaign.set_defaults(func=cmd_campaign)

    archive = commands.add_parser(
        "archive", help="pack run directories into an archive folder, or verify one (exit 2 on any problem)"
    )
    archive.add_argument("runs", type=path_arg, nargs="*", metavar="RUN", help="run directories, or folders of them")
    archive.add_argument("--to", type=path_arg, metavar="ARCHIVE", help="the archive folder (made if missing)")
    archive.add_argument("--verify", type=path_arg, metavar="ARCHIVE", help="check every file against the manifest")
    archive.set_defaults(func=cmd_archive)

    analyze = commands.add_parser("analyze", help="re-check and summarise an archive on Spark (PySpark)")
    analyze.add_argument("archive", type=path_arg, metavar="ARCHIVE", help="an archive folder (splitbrain archive --to)")
    analyze.add_argument("--master", default="local[*]", help="a Spark master URL (default: local[*])")
    analyze.add_argument("--out", type=path_arg, help="where the summaries go (default: ARCHIVE/analysis)")
    analyze.add_argument("--budget", type=limits.BUDGET_S.parse, default=30.0, help="seconds of linearizability search per (run, key)")
    analyze.add_argument("--quiet", action="store_true", help="no progress bar")
    analyze.set_defaults(func=cmd_analyze)

    gate = commands.add_parser("gate", help="the release gate: verdicts of many runs against a policy (TOML)")
    gate.add_argument("results", type=path_arg, nargs="+", metavar="RESULTS", help="run directories, or folders of them")
    gate.add_argument("--policy", type=path_arg, required=True, help="see results/gate.py for its keys")
    gate.add_argument("--junit", type=path_arg, default=Path("gate-junit.xml"), help="where the JUnit XML goes")
    gate.set_defaults(func=cmd_gate)

    imports = commands.add_parser("import", help="histories recorded by other tools (Jepsen) as run directories")
    imports.add_argument("files", type=path_arg, nargs="+", metavar="FILE", help="history files, one run directory each")
    imports.add_argument(
        "--format", required=True, choices=["jepsen-edn", "jepsen-log"], help="Jepsen's EDN history, or old jepsen.util log lines"
    )
    imports.add_argument("--model", required=True, choices=sorted(MODELS), help="what the history ran against (checkers/models.py)")
    imports.add_argument("--initial", help="the model's initial value as JSON, or nil (default: nil; kv: \"\")")
    imports.add_argument("--to", type=path_arg, required=True, help="where run directories go: TO/<file stem>/")
    imports.add_argument("--replace", action="store_true", help="import over run directories that exist")
    imports.add_argument(
        "--independent", action="store_true", help="values are [key value] (jepsen.independent): one register per key"
    )
    imports.add_argument("--quiet", action="store_true", help="no progress bar")
    imports.set_defaults(func=cmd_import)

    export = commands.add_parser("export", help="a run's history for Jepsen's tools (Knossos reads it)")
    export.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="a run directory (register workload, or imported)")
    export.add_argument("--format", required=True, choices=["jepsen-edn"], help="Jepsen's EDN history, one op map a line")
    export.add_argument("--to", type=path_arg, required=True, metavar="FILE", help="the file to write")
    export.set_defaults(func=cmd_export)

    serve = commands.add_parser("serve", help="a local web page of every run and campaign: filter, open, re-check")
    serve.add_argument("dir", type=path_arg, nargs="?", default=Path("runs"), metavar="DIR", help="the results folder")
    serve.add_argument("--port", type=limits.PORT.parse, default=8080, help="the port (0: any free one)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (another exposes your runs)")
    serve.set_defaults(func=cmd_serve)

    listing = commands.add_parser("targets", help="each target's version, options, workloads, capabilities and faults")
    listing.add_argument("name", nargs="?", choices=targets.names(), help="only this target")
    listing.add_argument("--json", action="store_true", help="as JSON, one object per target")
    listing.set_defaults(func=cmd_targets)

    cluster = commands.add_parser("cluster", help="a cluster by hand: up, status, down")
    cluster.add_argument("action", choices=["up", "status", "down"], help="start a cluster, show its nodes, or remove it")
    cluster.add_argument("--backend", default="local", choices=["local", "docker"], help="where the nodes run")
    cluster.add_argument("--nodes", type=setting_type("nodes"), default=3, help="cluster size")
    cluster.add_argument(
        "--state-dir", type=path_arg, default=Path("runs/cluster"),
        help="where `up` records what it made; `down` removes what is recorded there (also a run directory's)",
    )  # fmt: skip
    scope = cluster.add_mutually_exclusive_group()
    scope.add_argument("--run", metavar="ID", help="down: remove one run's containers, networks and processes")
    scope.add_argument("--all", action="store_true", help="down: remove every splitbrain object on this machine, listed first")
    add_target_options(cluster)
    cluster.set_defaults(func=cmd_cluster)

    commands.add_parser("node", help="run one reference quorum node (see `splitbrain node --help`)", add_help=False)
    commands.add_parser("toxiproxy", help="serve the Toxiproxy-compatible link proxy API", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["node"]:
        return targets.get(DEFAULT_TARGET).main("node", argv[1:])
    if argv[:1] == ["toxiproxy"]:
        from harness.toxiproxy import server

        return server.main(argv[1:])
    args = build_parser().parse_args(argv)
    interrupt_on_termination()
    try:
        return args.func(args)
    except SplitbrainError as error:
        print(one_line(f"splitbrain: {described(error)}"), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("splitbrain: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # whoever read our output left (`splitbrain check runs/* | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so exiting flushes nowhere, not into the pipe
        return EXIT_ERROR
    except Exception as error:  # a bug of ours: exit 2 (never 1, "violation"), the traceback kept
        print(one_line(f"splitbrain: internal error: {type(error).__name__}: {error} (traceback in {crash.log()})"),
              file=sys.stderr)  # fmt: skip
        return EXIT_ERROR


def entry() -> None:
    """The `splitbrain` command's process: main's exit code, whatever signal comes as it exits."""
    quiet_exit(main())


if __name__ == "__main__":
    entry()
