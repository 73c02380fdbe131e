"""One module per fault family: each holds, for its rows of the catalogue
(history/faults.py), how its faults are drawn, aimed, made, undone and
reported (`Family`, family.py). This package finds the modules and indexes
them, so the executor, the random schedule and the guided nemesis read a
fault's behaviour from its module. Adding a fault is its catalogue row, one
module here that declares `FAMILY`, and a test.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from history.errors import Defect
from history.faults import CATALOGUE

from .family import HEAL_ORDER, SIMULATED_HEAL_ORDER, Cell, Family, Make

MODULES = tuple(
    importlib.import_module(f"{__name__}.{info.name}")
    for info in pkgutil.iter_modules(__path__)
    if info.name != "family" and not info.ispkg  # (changers/: the families' helpers)
)
FAMILIES: tuple[Family, ...] = tuple(module.FAMILY for module in MODULES)


def _index() -> dict[str, Family]:
    """Each operation, and each `--nemesis` kind a recipe makes, -> its family (exactly one)."""
    found: dict[str, Family] = {}
    for family in FAMILIES:
        for name in (*family.makes, *family.recipe):
            if name in found and found[name] is not family:
                raise Defect(f"fault {name!r} is made by two families")
            found[name] = family
    return found


BY_OPERATION: Mapping[str, Family] = _index()
# How each operation is made.
OPERATIONS: Mapping[str, Make] = {name: make for family in FAMILIES for name, make in family.makes.items()}
# Second faults risky with a first in force, made at once or halfway through a turn (nemesis/guided.py).
AT_ONCE_RISK: Mapping[Cell, int] = {cell: risk for family in FAMILIES for cell, risk in family.at_once.items()}
HALFWAY_RISK: Mapping[Cell, int] = {cell: risk for family in FAMILIES for cell, risk in family.halfway.items()}


def _in_order(heals: list[tuple[str, Any]], order: tuple[str, ...]) -> tuple[Any, ...]:
    """The families' heals, each `(step, how)`, as `order` puts their steps."""
    return tuple(how for _, how in sorted(heals, key=lambda heal: order.index(heal[0])))


# How `heal-all` undoes what every family left in force, on a cluster (the executor's) and on a simulation.
HEALS = _in_order([heal for family in FAMILIES for heal in family.heals], HEAL_ORDER)
SIMULATED_HEALS = _in_order([heal for family in FAMILIES for heal in family.simulated_heals], SIMULATED_HEAL_ORDER)


def family_of(name: str) -> Family:
    family = BY_OPERATION.get(name)
    if family is None:
        known = sorted(fault.name for fault in CATALOGUE)
        raise Defect(f"no fault family makes {name!r}; the catalogue holds {known}")
    return family
