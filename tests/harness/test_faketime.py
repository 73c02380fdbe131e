"""A node's clock under libfaketime (Debian's libfaketime, really preloaded):
a rewrite of the control file moves its monotonic clock at once, and the
event stamps of the reference node stay on the machine's true time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import faketime

pytestmark = pytest.mark.skipif(not faketime.LIBRARY.exists(), reason="scripts/bootstrap.sh installs libfaketime")

PROBE = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from harness.faketime import set_offset
    from targets.kraft.wallclock import true_time_ns
    seen = []
    for offset in (0, -5000, 1250, 0):
        set_offset(Path(sys.argv[1]), offset)
        seen.append([time.monotonic_ns(), true_time_ns()])
    print(json.dumps(seen))
    """
)


def test_the_control_file_moves_the_clock_and_event_stamps_stay_true(tmp_path):
    control = tmp_path / "clock"
    faketime.set_offset(control, 0)
    env = {"PATH": "/usr/bin:/bin", **faketime.environment(str(control))}
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(control), root],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    seen = json.loads(out.stdout)
    # The faked clock minus the true one: the offset written, to a few ms of work between the calls.
    shown = [(faked - true) / 1e6 for faked, true in seen]
    for got, wanted in zip(shown, (0, -5000, 1250, 0)):
        assert abs((got - shown[0]) - wanted) < 50, shown
