"""What runs on the nodes, one subpackage per target system, and the
registry through which everything outside `targets/` finds them: a target
is named (`--target NAME`), never imported by its package."""

from __future__ import annotations

import importlib

from targets.interface import Target

# name -> the module whose TARGET implements targets.interface.Target
REGISTRY = {"kraft": "targets.kraft.target", "etcd": "targets.etcd.target", "nats": "targets.nats.target"}
# The target a run takes when none is named (`--target`): the reference quorum.
DEFAULT = "kraft"


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> Target:
    """The target called `name`; a SettingError naming the known ones otherwise."""
    if name not in REGISTRY:
        # Imported here: an SSH host's nodes import this package with targets/ alone beside them.
        from checkers.errors import SettingError

        raise SettingError("target", f"unknown target {name!r}; known: {', '.join(REGISTRY)}")
    return importlib.import_module(REGISTRY[name]).TARGET
