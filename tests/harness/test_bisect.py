"""`splitbrain bisect`'s rule on simulated versions: it finds the two
releases on either side of one change in about log2(n) probes, stops when
the ends agree, counts a version found when any of its runs finds the
anomaly, and calls the evidence thin when a not-found version could have
had it at the found side's rate unseen. Bad ranges are one line."""

from __future__ import annotations

import math
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from harness.bisect import Probe, outcome, search

VERSIONS = [f"2.{minor}.{patch}" for minor in (10, 11, 12) for patch in range(8)]


@given(
    n=st.integers(2, len(VERSIONS)),
    change=st.data(),
    fixed_later=st.booleans(),
    runs=st.integers(1, 4),
)
def test_one_change_is_found_between_its_two_releases(n, change, fixed_later, runs):
    versions = VERSIONS[:n]
    first_other = change.draw(st.integers(1, n - 1))
    probed = []

    def probe(version: str) -> Probe:
        probed.append(version)
        bad = (versions.index(version) < first_other) == fixed_later
        return Probe(version, (1,) + (0,) * (runs - 1) if bad else (0,) * runs)

    done = search(versions, probe)
    assert (done.before.version, done.after.version) == (versions[first_other - 1], versions[first_other])
    assert done.before.found == fixed_later and done.after.found != fixed_later
    assert len(probed) <= 2 + math.ceil(math.log2(n)) and len(set(probed)) == len(probed)
    assert f"between {done.before.version} and {done.after.version}" in done.summary()


def test_ends_that_agree_stop_the_search():
    probed = []

    def probe(version: str) -> Probe:
        probed.append(version)
        return Probe(version, (0, 1, 0))

    done = search(VERSIONS, probe)
    assert done.agree and probed == [VERSIONS[0], VERSIONS[-1]]
    assert done.summary().startswith(
        "bisect: the ends agree (2.10.0: found (1 of 3 runs); 2.12.7: found (1 of 3 runs))"
    )


def test_a_rare_anomaly_makes_the_evidence_thin():
    """Found in 1 of 3 runs: a version as bad shows nothing in 3 runs with chance (2/3)^3, 30%."""
    done = search(["1", "2"], lambda v: Probe(v, (1, 0, 0) if v == "1" else (0, 0, 0)))
    assert abs(done.missed_chance() - (2 / 3) ** 3) < 1e-9 and "evidence thin" in done.summary()
    sure = search(["1", "2"], lambda v: Probe(v, (1, 1, 1) if v == "1" else (0, 0, 0)))
    assert sure.missed_chance() == 0 and "evidence thin" not in sure.summary()
    assert sure.as_json()["rule"] == "found: any run with a checker false; not found: none"


def test_a_named_checker_counts_only_its_own_false():
    """`--checker committed-data-loss`: a run whose verdict has only
    `availability` false does not find the anomaly; one that could not be
    judged (exit 2) stays so, whatever the rule."""
    verdict = {"committed-data-loss": True, "availability": False}
    assert outcome(1, verdict, None) == 1
    assert outcome(1, verdict, "committed-data-loss") == 0
    assert outcome(1, {**verdict, "committed-data-loss": False}, "committed-data-loss") == 1
    assert outcome(2, None, "committed-data-loss") == 2
    done = search(["1", "2"], lambda v: Probe(v, (1,) if v == "1" else (0,)))
    assert (
        done.as_json("committed-data-loss")["rule"] == "found: any run with committed-data-loss false; not found: none"
    )


def test_bad_ranges_are_one_line(tmp_path):
    campaign = tmp_path / "c.toml"
    campaign.write_text('[campaign]\ntarget = "nats"\nnemeses = ["kill"]\n')
    for versions, words in [
        ("2.12.1", "name OLDEST..NEWEST"),
        ("2.15.1..2.12.1", "the oldest must come before the newest"),
        ("2.12.1..9.9.9", "name OLDEST..NEWEST of nats's releases: 2.10.25"),
        ("2.12.1..2.15.1 --checker lost-data", "argument --checker: invalid choice: 'lost-data'"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "bisect", str(campaign), "--versions", *versions.split()],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode == 2 and words in done.stderr, (versions, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_campaign_with_a_versions_axis_is_refused(tmp_path):
    """bisect chooses the versions: a `versions` key is refused in one line
    (a campaign that names one release, `nats@2.15.1`, is taken: each
    probed release replaces it)."""
    campaign = tmp_path / "c.toml"
    campaign.write_text('[campaign]\ntarget = "nats"\nnemeses = ["kill"]\nversions = ["2.12.1", "2.15.1"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "bisect", str(campaign), "--versions", "2.12.1..2.15.1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "bisect takes one target" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
