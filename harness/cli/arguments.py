"""How the command line reads its arguments: one line and exit 2 for a bad one, every default shown, each target's options, and a setting named as its flag."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import targets
from history.errors import SettingError, SplitbrainError, UsageError
from targets import DEFAULT
from targets import options as target_options

from .outcome import EXIT_ERROR, one_line


class DefaultsShown(argparse.HelpFormatter):
    """Help that shows each option's default, where it has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        flag = action.nargs == 0  # --no-pre-vote's default True says the opposite of what the flag does
        if (
            action.option_strings
            and not flag
            and action.default not in (None, False, argparse.SUPPRESS)
            and "default" not in text
        ):
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


def path_arg(text: str) -> Path:
    """A path option's value; an empty one would quietly mean the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name a file or folder")
    return Path(text)


def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None


def target_name(text: str) -> str:
    """`--target`: a registered target, with a release of its server or not
    (the release is fetched and checked when the run is validated)."""
    if not targets.known(text) or text.endswith("@"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: choose from {', '.join(targets.names())}, each with @VERSION or not"
        )
    return text


def chosen_target(args: argparse.Namespace) -> str:
    """The target as a run names it: `--server-binary PATH` is NAME@/abs/path."""
    if getattr(args, "server_binary", None) is None:
        return args.target
    if "@" in args.target:
        raise UsageError(f"--server-binary: runs one build; --target {args.target} names a release too")
    return f"{args.target}@{args.server_binary.absolute()}"


def add_target_options(parser: argparse._ActionsContainer) -> None:
    """The target, and every option some target declares (targets/options.py),
    as it spells it; a run refuses one its target does not declare. An option
    not given is left out, so the target's default stands."""
    parser.add_argument(
        "--target",
        default=DEFAULT,
        type=target_name,
        metavar="NAME[@VERSION]",
        help=f"the system under test, one of {', '.join(targets.names())}; @VERSION runs a release of its server "
        "that it pins (`splitbrain targets NAME` lists them), fetched at first use into a cache of its own",
    )
    parser.add_argument(
        "--server-binary",
        type=path_arg,
        metavar="PATH",
        help="run this build of the target's server (it must answer --version as the server does); "
        "run.json names it by its version and sha256",
    )
    for declared in declarations().values():
        option, names = declared[0][1], [name for name, _ in declared]
        defaults = {str(o.default) for _, o in declared}
        default = (
            ""
            if isinstance(option.default, (bool, tuple))
            else "; default "
            + (defaults.pop() if len(defaults) == 1 else ", ".join(f"{o.default} on {name}" for name, o in declared))
        )
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


def target_settings(args: argparse.Namespace) -> dict:
    """The target options given on the command line, as the target names them."""
    return {name: getattr(args, name) for name in declarations() if hasattr(args, name)}


def given_options(args: argparse.Namespace) -> dict:
    """The target options given, each one the chosen target declares with a value it takes; else a one-line UsageError."""
    target = targets.get(targets.base(args.target))
    given = target_settings(args)
    refused = target_options.refusal(target.name, target.options, given)
    if refused:
        raise UsageError(f"{option_flag(refused[0])}: {refused[1]}")
    return given


# Run settings as `splitbrain run` spells them, for messages about them.
OPTIONS = {
    "time_limit_s": "--time-limit",
    "lull_s": "--lull",
    "interval_s": "--interval",
    "initial_voters": "--initial-voters",
    "down_at_join": "--down-at-join",
    "nemesis": "--nemesis",
    "topologies": "--topologies",
    "nemesis_strategy": "--nemesis-strategy",
    "workload": "--workload",
    "backend": "--backend",
    "hosts": "--hosts",
    "server_binary": "--server-binary",
    "net": "--net",
    "nodes": "--nodes",
    "target": "--target",
    "rate": "--rate",
    "concurrency": "--concurrency",
    "op_timeout_s": "--op-timeout",
    "seed": "--seed",
}


def option_flag(name: str) -> str:
    """A setting as the command line spells it, for messages about it."""
    declared = declarations().get(name)
    return OPTIONS.get(name) or (declared[0][1].flag if declared else name)


def described(error: SplitbrainError) -> str:
    """An error as its user reads it: a run setting as its flag names it."""
    if isinstance(error, SettingError):
        return f"{option_flag(error.setting)}: {error.reason}"
    return str(error)


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
