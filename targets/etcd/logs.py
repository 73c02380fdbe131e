"""etcd 3.4's zap JSON log (one object a line, on stderr) as events rows.

The lines read (the `msg` field; member ids in hex, configuration ids in
decimal):

- `X became (leader|candidate|pre-candidate|follower) at term T`: a
  transition; `became candidate` is also X's vote for itself at T (etcd
  never logs that vote as "cast"; the checkers count a candidate's
  transition as its own vote).
- `X [...] cast MsgVote for Y [...] at term T`: a vote, T the election's term.
- `X [...] cast MsgPreVote for Y [...] at term T`: a pre-vote; T is X's term,
  one below the one proposed, so it is not a vote.
- `raft.node: X elected leader Y at term T`: who X follows at T.
- `X switched to configuration voters=(d1 d2 ...) [learners=(...)]`: the
  voter set in force (`configuration`), and the learners (`learners`).

X, the writer's own member id, is each row's `directory_id`: a member
removed and added back is a new member (its log, appended to the same
file, starts again at term 0), as a wiped disk is a new directory id on the
reference quorum.

Member ids become node names through the log itself: the `initial-cluster`
of "starting an etcd server" maps peer URLs to names, and "added member"
maps ids to peer URLs. Lines that are not JSON (etcd's warning about a data
directory's mode uses the old format) are skipped.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from targets.log_lines import json_field

BECAME = re.compile(r"^(\w+) became (leader|candidate|pre-candidate|follower) at term (\d+)$")
CAST = re.compile(r"^(\w+) \[.*\] cast (MsgVote|MsgPreVote) for (\w+) \[.*\] at term (\d+)$")
ELECTED = re.compile(r"^raft\.node: (\w+) elected leader (\w+) at term (\d+)$")
SWITCHED = re.compile(r"^(\w+) switched to configuration voters=\(([\d ]*)\)(?: learners=\(([\d ]*)\))?")
STATES = {"pre-candidate": "prospective"}  # the reference quorum's name for the same state


def read_records(path: Path) -> list[dict]:
    records = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("msg"), str):
            records.append(record)
    return records


def member_names(records: list[dict]) -> dict[str, str]:
    """Hex member id -> node name, from the log's own start-up lines."""
    by_url: dict[str, str] = {}
    names: dict[str, str] = {}
    for record in records:
        if record["msg"] == "starting an etcd server":
            for member in str(record.get("initial-cluster", "")).split(","):
                name, _, url = member.partition("=")
                if url:
                    by_url[url] = name
        elif record["msg"] == "added member":
            for url in record.get("added-peer-peer-urls") or []:
                if url in by_url:
                    names[record["added-peer-id"]] = by_url[url]
    return names


def wall_ns(timestamp: str) -> int:
    """zap's ISO 8601 time (millisecond precision) in nanoseconds since the epoch."""
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000) * 1_000_000


def line_wall_ns(line: str) -> int | None:
    """A zap line's `ts`; None for a line that is not one (a torn last line)."""
    stamp = json_field(line, "ts")
    return wall_ns(stamp) if isinstance(stamp, str) else None


def events(path: Path, node: str, to_run_ns) -> list[dict]:
    """The node's log as events rows (docs/organisation.md's events table)."""
    records = read_records(path)
    names = member_names(records)

    def name(member: str) -> str:
        return names.get(member, member)

    decimal = {str(int(member, 16)): node_name for member, node_name in names.items()}

    def members(ids: str) -> str:
        return json.dumps([[decimal.get(member, member), None] for member in ids.split()])

    rows = []
    for record in records:
        message = record["msg"]
        base = {"time_ns": to_run_ns(wall_ns(record["ts"])), "node": node, "source": "log"}
        # Each line read starts with the writer's own member id: a wiped
        # member added back is a new member, so its epochs start again.
        if match := BECAME.match(message):
            me, state, term = match.groups()
            # A candidate's transition is also its vote for itself (the checkers count it so).
            row = {"event": "transition", "state": STATES.get(state, state), "epoch": int(term)}
        elif match := CAST.match(message):
            me, kind, candidate, term = match.groups()
            row = {
                "event": "vote" if kind == "MsgVote" else "prevote",
                "epoch": int(term),
                "candidate": name(candidate),
            }
        elif match := ELECTED.match(message):
            me, leader, term = match.groups()
            row = {"event": "leader", "epoch": int(term), "leader": name(leader)}
        elif match := SWITCHED.match(message):
            me, voters, learners = match.groups()
            rows.append({**base, "directory_id": me, "event": "configuration", "voters": members(voters)})
            if learners:  # members that replicate but do not vote
                rows.append({**base, "directory_id": me, "event": "learners", "voters": members(learners)})
            continue
        else:
            continue
        rows.append({**base, "directory_id": me, **row})
    return rows
