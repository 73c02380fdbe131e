"""The versions a run directory records in run.json (`versions`): the
interpreter's and splitbrain's own, as installed, so a run says which code
made it (a target adds its software's)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version


def splitbrain_version() -> str:
    try:
        return version("splitbrain")
    except PackageNotFoundError:
        return "unknown (not installed)"


def recorded() -> dict[str, str]:
    return {"python": sys.version.split()[0], "splitbrain": splitbrain_version()}
