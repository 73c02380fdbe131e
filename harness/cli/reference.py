"""The command reference, `docs/reference.md`, written from the parsers the
command itself runs, so the page cannot say what the command does not take.
`python -m harness.cli.reference > docs/reference.md` writes it, and a test
fails while the committed page differs from what this prints."""

from __future__ import annotations

import argparse
import os
import sys

# Help is wrapped at the terminal's width: one width, whoever writes the page.
WIDTH = "100"


def page(parser: argparse.ArgumentParser) -> str:
    """Markdown: each subcommand's one line, then its whole `--help`."""
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    out = [
        "# Command reference",
        "",
        "Every command of `splitbrain`, as its `--help` prints it. Written by",
        "`python -m harness.cli.reference > docs/reference.md` from the command's",
        "own parsers; a test fails while this page differs from them.",
        "[Commands in depth](commands.md) says what each is for.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for name, sub in commands.choices.items():
        out += ["", f"## splitbrain {name}", "", f"{helps[name]}."]
        if sub.add_help:
            out += ["", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(out) + "\n"


def main() -> int:
    os.environ["COLUMNS"] = WIDTH
    from harness.cli import build_parser

    sys.stdout.write(page(build_parser()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
