"""What the set-up installs for the targets: `python -m targets.packages
debian` lists every target's Debian packages (Target.image_packages),
`python -m targets.packages python` their client packages
(Target.python_packages), one a line, for scripts/bootstrap.sh and
scripts/lock.sh. Adding a target adds its packages here without a change to
the set-up scripts."""

from __future__ import annotations

import sys

import targets

KINDS = {"debian": "image_packages", "python": "python_packages"}


def listed(kind: str) -> list[str]:
    return list(dict.fromkeys(p for name in targets.names() for p in getattr(targets.get(name), KINDS[kind])))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in KINDS:
        print(f"usage: python -m targets.packages {{{','.join(KINDS)}}}", file=sys.stderr)
        return 2
    for package in listed(argv[0]):
        print(package)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
