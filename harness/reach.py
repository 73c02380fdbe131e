"""Whether a mutant's change ran at all (`splitbrain mutate`): each mutant's
copy carries a probe at the place it changed (harness/mutants.py), which
calls `reached()`. The first call in a process touches the file that
`SPLITBRAIN_REACHED` names; later calls only answer True, so the probe
costs a function call and changes nothing the code computes.

A mutant whose change never ran in its simulation or in any of its real
runs was not told from the original by them, whatever it would do where
it runs (PIT and Stryker report such mutants as having no coverage).
"""

from __future__ import annotations

import os

ENV = "SPLITBRAIN_REACHED"
_touched = False


def reached() -> bool:
    global _touched
    if not _touched:
        _touched = True
        path = os.environ.get(ENV)
        if path:
            with open(path, "a"):
                pass
    return True
