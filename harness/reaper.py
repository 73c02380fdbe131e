"""`python -m harness.reaper LEDGER`: one run's watchdog, in the style of
testcontainers' Ryuk. It waits for its standard input, a pipe that only the
harness holds open, to close; that happens when the harness exits, whether it
tore down itself or was SIGKILLed. Then it sweeps the run's ledger
(`harness.ownership.sweep`): whatever the harness left running is removed,
and what it already removed is skipped.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from harness.ownership import sweep


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.reaper LEDGER", file=sys.stderr)
        return 2
    # A terminal's Ctrl-C or hang-up is for the harness, which then tears down itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    for name in sweep(Path(argv[0])):
        print(f"reaper: removed {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
