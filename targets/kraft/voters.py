"""The voter set as KRaft's KIP-853 keeps it: a record in the log.

A voter is a replica key, (node id, directory id). The directory id is made
when a data directory is first formatted, so a node whose disk was lost comes
back as a different replica and is not a voter until it is added again: that
is what keeps a wiped node from voting with a memory it no longer has.

A replica uses the latest voters record in its log, committed or not; a
truncation that drops a record brings back the one before it. The first
record of every bootstrapped log (offset 0, epoch 0) is the initial set.
A directory id of None matches any directory of that node: a voter set named
by node ids only, for clusters started without directory ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

VOTERS_OP = "voters"

ReplicaKey = tuple[str, "str | None"]


@dataclass(frozen=True)
class VoterSet:
    voters: tuple[ReplicaKey, ...] = ()

    @classmethod
    def of(cls, voters) -> VoterSet:
        return cls(tuple(sorted((str(node), directory) for node, directory in voters)))

    @classmethod
    def from_record(cls, data: dict) -> VoterSet:
        return cls.of((node, directory) for node, directory in data["voters"])

    def record(self) -> dict:
        return {"op": VOTERS_OP, "voters": [[node, directory] for node, directory in self.voters]}

    # Cached: the core asks these on every tick and message (a third of the
    # simulator's time went to building them again).
    @cached_property
    def ids(self) -> tuple[str, ...]:
        return tuple(node for node, _ in self.voters)

    @cached_property
    def _directories(self) -> dict[str, str | None]:
        return dict(self.voters)

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def directory_of(self, node: str) -> str | None:
        return self._directories.get(node)

    def has_node(self, node: str) -> bool:
        return node in self.ids

    def has(self, node: str, directory: str | None, ignore_directory: bool = False) -> bool:
        """Is (node, directory) a voter? `ignore_directory` is the planted bug
        `ignore-directory-id`: any directory of a voter's node id counts."""
        if not self.has_node(node):
            return False
        known = self.directory_of(node)
        return ignore_directory or same_directory(known, directory)

    def added(self, node: str, directory: str | None) -> VoterSet:
        return VoterSet.of((*self.voters, (node, directory)))

    def removed(self, node: str) -> VoterSet:
        return VoterSet(tuple(v for v in self.voters if v[0] != node))


def same_directory(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def is_voters_record(data: dict) -> bool:
    return data.get("op") == VOTERS_OP
