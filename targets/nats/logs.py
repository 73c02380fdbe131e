"""nats-server's debug log (`-D`, on stderr) as events rows, on Debian's
2.9.10 and on the releases from 2.10.25 on (`--target nats@VERSION`): the
Raft lines of the workload's group, each

    [pid] YYYY/MM/DD HH:MM:SS.micro [DBG] RAFT [<peer id> - <group>] <message>

in UTC (the node runs with TZ=UTC). The workload's group is the one named by
`Starting stream monitor for '$G > STREAM' [GROUP]` for the workload's
stream (`LOG`, or the register bucket's `KV_reg`). The messages read:

- `Sending out voteRequest {term:T ... candidate:ME ...}`: ME stands for
  election at T (a transition to candidate, which the checkers count as its
  own vote);
- `Received a voteRequest &{term:T ... candidate:C reply:R}`, then `Sending
  a voteResponse &{term:.. peer:ME granted:true} -> "R"`: ME voted for C at T
  (the response's own term is the voter's before the request, so the
  request's is taken, joined on the reply subject R; later releases add
  fields after `granted`, `empty:false` among them);
- `Switching to leader`: ME leads the term of its last vote request;
- `Switching to follower`: ME follows (NATS logs no term with it);
- `AppendEntry updating leader to "L"`: ME hears L lead (no term either).

Peer ids are the servers' names hashed (peers.py). No line names a term
for a follower or for a leader it hears, so those rows carry no epoch.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from .peers import names
from .streams import WORKLOAD_STREAMS

LINE = re.compile(r"^\[\d+\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) \[DBG\] RAFT \[(\w+) - ([\w-]+)\] (.*)$")
STAMPED = re.compile(r"^\[\d+\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) ")
MONITOR = re.compile(r"Starting stream monitor for '\$G > (\w+)' \[([\w-]+)\]")
SENT_REQUEST = re.compile(r"^Sending out voteRequest \{term:(\d+) .*candidate:(\w+)")
GOT_REQUEST = re.compile(r"^Received a voteRequest &\{term:(\d+) .*candidate:(\w+) reply:(\S+)\}")
GRANTED = re.compile(r'^Sending a voteResponse &\{term:\d+ peer:\w+ granted:true[^}]*\} -> "(\S+)"')
UPDATING = re.compile(r'^AppendEntry updating leader to "(\w+)"')
KNOWN_NODES = [f"n{i}" for i in range(1, 100)]


def wall_ns(stamp: str) -> int:
    moment = datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def line_wall_ns(line: str) -> int | None:
    """Any line's time (every line of the log starts `[pid] stamp`)."""
    match = STAMPED.match(line)
    return wall_ns(match.group(1)) if match else None


def workload_groups(text: str) -> set[str]:
    return {group for stream, group in MONITOR.findall(text) if stream in WORKLOAD_STREAMS}


def events(path: Path, node: str, to_run_ns) -> list[dict]:
    """The node's log as events rows (docs/organisation.md's events table)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    groups = workload_groups(text)
    peers = names([*KNOWN_NODES, node])
    requests: dict[str, tuple[int, str]] = {}  # reply subject -> (term, candidate)
    asked = 0  # the term of this node's last vote request
    rows = []
    state = None  # the last transition's
    for line in text.splitlines():
        match = LINE.match(line)
        if match is None or match.group(3) not in groups:
            continue
        stamp, me, _, message = match.groups()
        base = {"time_ns": to_run_ns(wall_ns(stamp)), "node": node, "source": "log", "directory_id": me}
        if found := SENT_REQUEST.match(message):
            asked = int(found.group(1))
            rows.append({**base, "event": "transition", "state": "candidate", "epoch": asked})
        elif found := GOT_REQUEST.match(message):
            requests[found.group(3)] = (int(found.group(1)), found.group(2))
        elif (found := GRANTED.match(message)) and found.group(1) in requests:
            term, candidate = requests.pop(found.group(1))
            rows.append({**base, "event": "vote", "epoch": term, "candidate": peers.get(candidate, candidate)})
        elif message == "Switching to leader":
            rows.append({**base, "event": "transition", "state": "leader", "epoch": asked, "leader": node})
        elif message == "Switching to follower" and state != "follower":  # a stepdown may log it many times
            rows.append({**base, "event": "transition", "state": "follower", "epoch": None})
        elif found := UPDATING.match(message):
            rows.append({**base, "event": "leader", "epoch": None, "leader": peers.get(found.group(1), found.group(1))})
        state = rows[-1]["state"] if rows and rows[-1]["event"] == "transition" else state
    return rows
