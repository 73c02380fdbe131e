"""`python -m harness.cli`: the `splitbrain` command."""

from harness.cli import entry

entry()
