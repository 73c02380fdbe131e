"""What runs on the nodes, one subpackage per target system, and the
registry through which everything outside `targets/` finds them: a target
is named (`--target NAME`), never imported by its package.

A name may choose the server too: `NAME@VERSION`, a release the target
pins (targets/releases.py), or `NAME@/PATH`, a build of the user's
(`--server-binary PATH`); `NAME` alone runs the server on PATH (Debian's)."""

from __future__ import annotations

import importlib

from targets.interface import Target

# name -> the module whose TARGET implements targets.interface.Target
REGISTRY = {"kraft": "targets.kraft.target", "etcd": "targets.etcd.target", "nats": "targets.nats.target"}
# The target a run takes when none is named (`--target`): the reference quorum.
DEFAULT = "kraft"
_chosen: dict[str, Target] = {}  # NAME@WHERE -> the target with that server, once fetched and checked


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def base(name: str) -> str:
    """The target a name names, its server's release or file left off."""
    return name.partition("@")[0]


def known(name: str) -> bool:
    """Whether `name` names a registered target (its release not yet fetched or checked)."""
    return base(name) in REGISTRY


def get(name: str) -> Target:
    """The target called `name`, its server at the release or file the name
    chooses; a SettingError naming the known ones, or saying why that server
    cannot be had, otherwise."""
    target_name, at, where = name.partition("@")
    if target_name not in REGISTRY:
        # Imported here: an SSH host's nodes import this package with targets/ alone beside them.
        from history.errors import SettingError

        raise SettingError("target", f"unknown target {target_name!r}; known: {', '.join(REGISTRY)}")
    target = importlib.import_module(REGISTRY[target_name]).TARGET
    if not at:
        return target
    if name not in _chosen:
        from history.errors import SettingError
        from targets.releases import ReleaseError

        try:
            _chosen[name] = target.at(where)
        except ReleaseError as error:
            raise SettingError("server_binary" if where.startswith("/") else "target", str(error)) from None
    return _chosen[name]
