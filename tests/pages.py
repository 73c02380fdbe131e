"""README and the docs' pages, and the command lines their ```sh blocks show:
what the tests of the documentation read."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def shown_commands() -> list[tuple[str, str]]:
    """(page, line) for each line of the pages' ```sh blocks, its comment left off."""
    found = []
    for page in PAGES:
        for block in re.findall(r"^ *```sh\n(.*?)^ *```", page.read_text(), re.M | re.S):
            for line in block.splitlines():
                if line.split("  #")[0].strip():
                    found.append((str(page.relative_to(ROOT)), line.split("  #")[0].strip()))
    return found
