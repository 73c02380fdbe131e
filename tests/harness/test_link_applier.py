"""Every link applier subclasses the protocol the nemesis relies on
(harness/link_applier.py) and implements each of its methods itself, so
that none inherits a stub that does nothing; every backend is in the
registry `bring_up` reads, and an unknown one is refused in one line."""

from __future__ import annotations

import contextlib

import pytest

from harness.attributed_links import AttributedLinks
from harness.backends import BACKENDS, bring_up
from harness.iptables_links import DirectLinks, IptablesLinks
from harness.link_applier import LinkApplier
from harness.mesh import LinkMesh
from history.errors import UsageError

METHODS = ("cut", "add_toxic", "heal", "remove")


@pytest.mark.parametrize("applier", [LinkMesh, IptablesLinks, DirectLinks, AttributedLinks])
def test_each_applier_implements_every_method_of_the_protocol(applier):
    assert LinkApplier in applier.__mro__
    assert all(getattr(applier, name) is not getattr(LinkApplier, name) for name in METHODS), applier


def test_the_backends_are_a_registry(tmp_path):
    assert set(BACKENDS) == {"local", "docker", "ssh"}
    with (
        contextlib.ExitStack() as stack,
        pytest.raises(UsageError, match="--backend: 'vm' is not one of local, docker, ssh"),
    ):
        bring_up(stack, "vm", tmp_path, "test-backends", reaper=False)
    assert list(tmp_path.iterdir()) == []  # refused before anything is made
