"""The `splitbrain` command. Exit codes everywhere: 0 valid, 1 invalid, 2 unknown or error.

Each subcommand is a module of this package with its NAME, HELP, its
`arguments(parser)` and its `command(args)`; `build_parser` adds them in
COMMANDS's order. What they share: `arguments` (the parser, path and target
options, a setting named as its flag), `outcome` (verdict lines and exit
codes) and `runs` (a run from settings to verdict)."""

from __future__ import annotations

import os
import sys

import targets
from harness import crash
from harness.interrupts import interrupt_on_termination, quiet_exit
from history.errors import Defect, SplitbrainError
from results.versions import splitbrain_version
from targets.interface import OwnCommands

from . import (
    analyze,
    archive,
    bisect,
    campaign,
    check,
    cluster,
    export,
    gate,
    imports,
    listing,
    mutate,
    replay,
    run,
    run_settings,
    serve,
    shrink,
    simulate,
    soak,
)
from .arguments import Parser, described
from .outcome import EXIT_ERROR, one_line

COMMANDS = (
    simulate,
    run,
    replay,
    shrink,
    check,
    campaign,
    soak,
    archive,
    analyze,
    gate,
    imports,
    export,
    serve,
    listing,
    cluster,
    mutate,
    bisect,
    run_settings,
)
# Programs of their own, with their own arguments: the reference quorum's node, and our link proxy server.
PASSED_ON = {
    "node": "run one reference quorum node (see `splitbrain node --help`)",
    "toxiproxy": "serve the Toxiproxy-compatible link proxy API",
}


def build_parser() -> Parser:
    """Every subcommand's parser, each from its own module."""
    parser = Parser(prog="splitbrain", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"splitbrain {splitbrain_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        sub = commands.add_parser(module.NAME, help=module.HELP)
        module.arguments(sub)
        sub.set_defaults(func=module.command)
    for name, help in PASSED_ON.items():
        commands.add_parser(name, help=help, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["node"]:
        default = targets.get(targets.DEFAULT)
        assert isinstance(default, OwnCommands)  # the reference quorum runs its own nodes
        return default.main("node", argv[1:])
    if argv[:1] == ["toxiproxy"]:
        from harness.toxiproxy import server

        return server.main(argv[1:])
    args = build_parser().parse_args(argv)
    interrupt_on_termination()
    try:
        return args.func(args)
    except Defect as error:  # a rule of our own broken: a bug of ours, as below
        return internal_error(error)
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
        return internal_error(error)


def internal_error(error: Exception) -> int:
    """A bug of ours: one line naming it and where its traceback went; exit 2, never 1 ("violation")."""
    print(
        one_line(f"splitbrain: internal error: {type(error).__name__}: {error} (traceback in {crash.log()})"),
        file=sys.stderr,
    )
    return EXIT_ERROR


def entry() -> None:
    """The `splitbrain` command's process: main's exit code, whatever signal comes as it exits."""
    quiet_exit(main())
