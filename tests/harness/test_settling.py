"""When a healed cluster has settled (harness/run.py's `wait_converged`):
high watermarks that meet; or, for a target that declares
`settled_apart_s`, high watermarks that stay apart and unmoving that long
(a NATS replica that no longer catches up); else one line naming each
node's high watermark. Where the target declares `recovers`, they must
meet at or above what the cluster had committed before (`floor`): met
below it is not settled, and says so. The nodes' answers here are a list of what each
poll gave, the deciding logic's input."""

from __future__ import annotations

import time

import pytest

from harness.run import wait_converged
from history.errors import ClusterError, Unsettled


class Answers:
    """A cluster's `ids` and `status`, from each node's high watermarks, one per poll (the last repeats)."""

    def __init__(self, **polls: list) -> None:
        self.ids = list(polls)
        self.polls = polls
        self.asked = dict.fromkeys(polls, 0)

    def status(self, node: str) -> dict | None:
        given = self.polls[node][min(self.asked[node], len(self.polls[node]) - 1)]
        self.asked[node] += 1
        return None if given is None else {"hwm": given}


def test_watermarks_that_meet_have_settled():
    wait_converged(Answers(n1=[3, 5], n2=[5], n3=[4, 5]), 2.0, None)


def test_watermarks_apart_and_unmoving_have_settled_apart_where_the_target_says_so(capsys):
    started = time.monotonic()
    wait_converged(Answers(n1=[170, 177], n2=[194], n3=[194]), 5.0, 0.3)
    assert 0.3 <= time.monotonic() - started < 2.0
    said = capsys.readouterr().err
    assert "stayed apart" in said and "(n1 177, n2 194, n3 194)" in said


def test_watermarks_apart_are_not_settled_where_the_target_does_not_say_so():
    with pytest.raises(ClusterError, match=r"did not converge in 1 s \(n1 177, n2 194, n3 194\)"):
        wait_converged(Answers(n1=[177], n2=[194], n3=[194]), 1.0, None)


def test_watermarks_that_still_move_or_a_node_that_does_not_answer_are_not_settled():
    moving = Answers(n1=list(range(1000)), n2=[2000], n3=[2000])
    with pytest.raises(ClusterError, match="did not converge"):
        wait_converged(moving, 1.0, 0.3)
    with pytest.raises(ClusterError, match=r"n1 no answer"):
        wait_converged(Answers(n1=[None], n2=[5], n3=[5]), 1.0, 0.3)


def test_watermarks_that_meet_below_what_was_committed_before_are_not_settled():
    # A leader elected again whose followers never take its records: every node answers 0.
    with pytest.raises(Unsettled, match=r"met at 0, below the 442 committed before, after 1 s") as raised:
        wait_converged(Answers(n1=[0], n2=[0], n3=[0]), 1.0, None, floor=442)
    assert raised.value.met_below
    with pytest.raises(Unsettled) as apart:
        wait_converged(Answers(n1=[441], n2=[0], n3=[0]), 1.0, None, floor=442)
    assert not apart.value.met_below
    wait_converged(Answers(n1=[0, 443], n2=[0, 443], n3=[443]), 2.0, None, floor=442)  # came back: settled
