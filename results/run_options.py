"""A run's target options as run.json recorded them, for listings, reports,
the archive's index and analysis. A run records them under `config.options`
(every option its target declares, targets/options.py); a run recorded
before targets declared their options kept them among its other settings,
and those of its target's declared names are its options."""

from __future__ import annotations

import targets
from targets import options as target_options


def recorded(meta: dict) -> dict:
    """The target options of a run's run.json (empty for an imported history or an unknown target)."""
    config = meta.get("config") or {}
    if isinstance(config.get("options"), dict):
        return config["options"]
    declared = _declared(meta)
    return {option.name: config[option.name] for option in declared if option.name in config}


def changed(meta: dict) -> str:
    """The options that differ from their target's defaults, as the command line spells them ("" for none)."""
    values = recorded(meta)
    declared = _declared(meta)
    if not declared:  # a target this version does not know: every option, as recorded
        return " ".join(f"{name}={value}" for name, value in sorted(values.items()))
    return " ".join(target_options.changed(declared, values))


def planted(meta: dict) -> list[str]:
    """The names a run's list options hold (the bugs planted), sorted."""
    return sorted(name for value in recorded(meta).values() if isinstance(value, list) for name in value)


def _declared(meta: dict) -> tuple:
    name = meta.get("target") or (meta.get("config") or {}).get("target")
    return targets.get(name).options if name in targets.names() else ()
