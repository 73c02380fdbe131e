"""A simulated schedule as a real run's faults, so that what the simulator
finds the real run can reach: `splitbrain simulate --write-schedules DIR`
writes each failing schedule as a run description that `splitbrain replay`
runs on a real cluster.

A random schedule is replayed shrunk: the steps its violation needs in
the simulation (`shrunk`, the simulator's search drops each step the same
kind of violation survives without), so that a real run makes only faults
that matter to it. Each step becomes the nemesis operation (history/faults.py's vocabulary)
that does the same to real nodes, at the same point of the schedule on a
clock stretched by `scale`: the real node's election timeout over the
simulator's (300 ms against 100 ms by default, so three times), so that a
fault lands at the same point of an election or a fetch timeout. Named
nodes stay named (`n2` is `n2`); the leader is aimed at as the leader, who
ever it is then.

Messages take as long as the simulator's do, stretched the same way:
latency on every link (the proxies' toxic) from before the nodes start, so
that the first election runs under it as the simulation's does (a
negative `at_s`), the delay a `network` step sets after it, and again
after each heal (which, on a real mesh, takes toxics away too), but not
after the last (`_ended`). A `network` step's drops carry over as they
are: each message on every link dropped at the step's rate
(`message-loss`: the link proxies cut the node's JSON lines into messages,
targets/kraft/framing.py, so one is dropped whole and the connection lives
on), until the next `network` step changes the rate, and again after a heal.

What does not carry over, and why:
- a leader cut off at a moment (`--moments`: as it is elected, as it first
  commits): the simulator cuts it between its disk write and its messages,
  and a real nemesis sees the nodes through their probes, a few times a
  second; the step is left out;
- voter changes and lost disks (`--membership`) that the simulation did not
  make (a wipe or a removal waits there for healthy voters; `made_changes`
  says which it made): the others become a wipe, a removal (`shrink` of the
  node named) and an addition (`rejoin` of it), as the real nemesis makes
  them (nemesis/faults/changers/voters.py);
- the load: the simulator's (an append and a write or compare-and-set every
  20 ms, reads at every node that leads) becomes the workload whose checkers
  see what broke (`workload_for`), with clients kept beside a node cut off
  alone (`READERS_BESIDE`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from history.faults import BOUNCE, CLOCK, KILL, LATENCY, LOSE_UNFSYNCED, MESSAGE_LOSS, PARTITION, PAUSE, WIPE

from .invariants import InvariantViolation
from .simulation import (
    CLOCK_ACTIONS,
    CLOCK_OFFSETS,
    DROP_RATES,
    LOAD_BEFORE_STEPS_MS,
    LoadedRun,
    SimSettings,
    Simulation,
    Step,
    run_schedule,
)

# A schedule's operations at this offset are made before the nodes start (harness/run.py).
BEFORE_START_S = -1.0
# Seconds a real run goes on after the last step, with every fault healed, before its time limit.
TAIL_S = 2.0
# Steps with an operation of their own: (the operation, aimed at the leader where the step says so).
NODE_STEPS = {
    PAUSE: PAUSE,
    "pause_leader": PAUSE,
    "resume": "resume",
    "crash": KILL,
    "crash_leader": KILL,
    "start": "start",
    BOUNCE: BOUNCE,
    "lose_unsynced": LOSE_UNFSYNCED,
    "lose_leader": LOSE_UNFSYNCED,
}
# Membership steps, as the real nemesis makes them for a node it names.
MEMBERSHIP = {WIPE: WIPE, "remove_voter": "shrink", "add_voter": "rejoin"}
# The simulator's load reads at every node that believes it leads, a node
# cut off alone too; a real run's clients find the new leader within a
# second, so this many stay beside a node cut off alone (the executor's
# `clients`), as the simulator's reader does.
READERS_BESIDE = 2
# A real node's restart takes a moment (its interpreter started, its log
# read: about 0.6 s) where the simulator's takes none, so a node the
# simulation bounced and had back before its peers' timeouts ran out comes
# back as they run out: a leader bounced and at once elected again,
# answering a stale read from its state not yet rebuilt, came back in 0 of 6
# replays at the default timeouts, its election raced by a follower's. A
# schedule that bounces a node runs on real nodes whose timeouts are this
# many times their defaults (and its moments stretched as much), so that a
# restart is as short beside them as in the simulation. Only a bounce: after
# a power loss the node's unclean start waits ten fetch timeouts for a
# leader, which stretched outlasted the 20 s a run waits for its cluster to
# settle, and a node crashed and started later was down a while anyway:
# a schedule that also loses power runs at the defaults (ack-before-fsync's
# bounced and lost power, and stretched it never settled in 3 of 3 replays).
RESTART_STRETCH = 10
TIMEOUTS = ("election_timeout_ms", "fetch_timeout_ms")
# The simulator's steps, and the search's operation, that lose a node's unfsynced writes.
POWER_LOSS = {"lose_unsynced", "lose_leader", LOSE_UNFSYNCED}


def scale_of(settings: dict[str, Any], real_ms: int) -> float:
    """How much longer a real moment is than a simulated one: the real
    nodes' election timeout (`real_ms`) over the simulator's. A timeout given
    to `simulate` ran the simulation, and goes to the real run too (where
    `timeouts_for` does not stretch it): the same on both sides."""
    if settings.get("election_timeout_ms") is not None:
        return 1.0
    return real_ms / SimSettings.election_timeout_ms


def timeouts_for(settings: dict[str, Any], violation: dict[str, Any], defaults: dict[str, Any]) -> dict[str, int]:
    """The real nodes' timeouts (target options) for a violation's schedule:
    the defaults stretched by RESTART_STRETCH where it bounces a node, loses
    no node's power and `simulate` was given no timeout of its own; else none."""
    if settings.get("election_timeout_ms") is not None:
        return {}
    # The novelty search's operations, or the random schedule's steps.
    made = [op["f"] for op in violation["ops"]] if "ops" in violation else [step[0] for step in replayed(violation)]
    stretched = BOUNCE in made and not POWER_LOSS & set(made)
    return {name: defaults[name] * RESTART_STRETCH for name in TIMEOUTS} if stretched else {}


def replayed(violation: dict[str, Any]) -> list[Step]:
    """The steps of a random schedule's violation that a replay makes: the
    schedule shrunk to the steps the violation needs in the simulation (each
    one left is needed there; none, for a bug that needs no fault), or all
    of them where it was not shrunk."""
    return [tuple(step) for step in violation["shrunk" if "shrunk" in violation else "steps"]]


def lasting(ops: list[dict[str, Any]], limit_s: float, violation: dict[str, Any], scale: float) -> float:
    """The time limit a replay needs: its schedule's, or, where the
    simulation broke later (`t=...ms` in its violation: a liveness one
    waits out its span with no fault left, a schedule shrunk to none ends at
    once), that moment stretched by `scale` and TAIL_S more; the last
    `heal-all` moved there."""
    broke = re.match(r"t=(\d+)ms: ", violation["violation"])
    needed = float(math.ceil(int(broke.group(1)) * scale / 1000 + TAIL_S)) if broke else 0.0
    if needed <= limit_s:
        return limit_s
    ops[-1]["at_s"] = needed
    return needed


def lease_for(settings: dict[str, Any], timeouts: dict[str, int], defaults: dict[str, Any]) -> dict[str, int]:
    """The real nodes' read lease, where `simulate` had one: the same share
    of the real fetch timeout as it was of the simulated one (a lease of
    100 ms beside a stretched fetch timeout of 6 s is not the lease that
    went stale)."""
    lease = settings.get("read_lease_ms")
    if not lease:
        return {}
    simulated = settings.get("fetch_timeout_ms") or SimSettings.fetch_timeout_ms
    real = timeouts.get("fetch_timeout_ms") or settings.get("fetch_timeout_ms") or defaults["fetch_timeout_ms"]
    return {"read_lease_ms": round(lease * real / simulated)}


def _aim(action: str, node: str) -> dict[str, Any]:
    return {"target": "leader", "only_a_leader": True} if action.endswith("_leader") else {"nodes": [node]}


def _op(action: str, ids: list[str], index: int, amount: int, scale: float) -> dict[str, Any] | None:
    """The operation (f and args) one fault step makes; None for one that does not carry over."""
    node, other = ids[index % len(ids)], ids[amount % len(ids)]
    if action in NODE_STEPS:
        return {"f": NODE_STEPS[action], "args": _aim(action, node)}
    if action == "isolate":
        cut = [[a, b] for a in ids for b in ids if a != b and node in (a, b)]
        return {"f": PARTITION, "args": {"links": cut, "clients": READERS_BESIDE}}
    if action == "isolate_leader":
        return {
            "f": PARTITION,
            "args": {"topology": "isolate-leader", "only_a_leader": True, "clients": READERS_BESIDE},
        }
    if action == "cut":
        return {"f": PARTITION, "args": {"links": [[node, other]]}} if other != node else None
    if action in ("heal", "resume_all"):
        return {"f": "heal" if action == "heal" else "resume", "args": {}}
    if action in CLOCK_ACTIONS:
        delta = round(CLOCK_OFFSETS[amount % len(CLOCK_OFFSETS)] * scale)
        return {"f": CLOCK, "args": {**_aim(action, node), "shape": "jump", "delta_ms": delta}}
    if action in MEMBERSHIP:
        return {"f": MEMBERSHIP[action], "args": {"nodes": [node]}}
    return None


def _loss(drop_rate: float) -> dict[str, Any]:
    """Every message on every link dropped at the simulator's rate (0: a loss in force stops dropping)."""
    return {"f": MESSAGE_LOSS, "args": {"per_mille": round(drop_rate * 1000), "message": "any"}}


def _latency(delay_ms: tuple[int, int], scale: float) -> dict[str, Any]:
    """Latency on every link that delays a message as the simulator's delay range does, stretched by `scale`."""
    low, high = delay_ms
    return {
        "f": LATENCY,
        "args": {"latency_ms": round(scale * (low + high) / 2), "jitter_ms": round(scale * (high - low) / 2)},
    }


def workload_for(violation: str) -> str:
    """The workload whose checkers see what broke: a stale read, registers
    (linearizable); anything else (a lost record, two leaders, logs that
    disagree), appends (committed-data loss, and the elections' checkers,
    which any workload has)."""
    return "register" if "stale read" in violation else "append"


def made_changes(settings: SimSettings, steps: list[Step]) -> set[int]:
    """The membership steps the simulation made (until the violation)."""
    changed: set[int] = set()
    try:
        run_schedule(settings, steps, changed)
    except InvariantViolation:
        pass
    return changed


def first_leader(settings: SimSettings) -> str | None:
    """The node that leads in the simulation when its steps begin (its load
    has run for a while); None where none does, or where the simulation broke
    before them (a node that halts at once: the real run starts as it starts)."""
    try:
        sim = Simulation(settings)  # (which starts the nodes)
        LoadedRun(sim).run(LOAD_BEFORE_STEPS_MS)
    except InvariantViolation:
        return None
    return sim.leader()


def real_schedule(
    steps: list[Step],
    nodes: int,
    scale: float,
    leader: str | None = None,
    changed: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[dict[str, Any]], float]:
    """The operations of `steps` on a real cluster of `nodes` (`at_s` from
    the start of load, as a replay takes them), ending with `heal-all`, and
    the time limit they need. `leader`: the simulation's when its steps
    began, put on the real one (`rename`) so that named nodes keep their
    roles; `changed`: the membership steps it made (the others are left out)."""
    ids = [f"n{i}" for i in range(1, nodes + 1)]
    at_ms = 0.0
    delay_ms = (SimSettings.min_delay_ms, SimSettings.max_delay_ms)
    drop_rate = 0.0
    ops: list[dict[str, Any]] = [{"at_s": BEFORE_START_S, **_latency(delay_ms, scale)}]
    if leader:
        ops.append({"at_s": 0.0, "f": "rename", "args": {"leader": leader}})
    for at, (action, index, amount) in enumerate(steps):
        if action == "run":
            at_ms += amount * scale
            continue
        if action in MEMBERSHIP and at not in changed:
            continue
        at_s = round(at_ms / 1000, 3)
        if action == "network":
            delay_ms = (1, (5, 20, 60)[amount % 3])
            if drop_rate or DROP_RATES[amount % 3]:  # (a loss in force takes the new rate, 0 too)
                ops.append({"at_s": at_s, **_loss(DROP_RATES[amount % 3])})
            drop_rate = DROP_RATES[amount % 3]
        made = _latency(delay_ms, scale) if action == "network" else _op(action, ids, index, amount, scale)
        if made is not None and made["f"] == "shrink" and ops[-1]["f"] == "shrink" and ops[-1]["at_s"] == at_s:
            # Removals at one instant go together (one request for both, as the simulator's reach the leader).
            ops[-1]["args"]["nodes"] = [*ops[-1]["args"]["nodes"], *made["args"]["nodes"]]
        elif made is not None:
            ops.append({"at_s": at_s, **made})
        if action == "heal":  # a real heal takes every toxic away: the messages' delay and loss come back at once
            ops.append({"at_s": at_s, **_latency(delay_ms, scale)})
            if drop_rate:
                ops.append({"at_s": at_s, **_loss(drop_rate)})
    return _ended(ops, round(at_ms / 1000, 3))


def _ended(ops: list[dict[str, Any]], end_s: float) -> tuple[list[dict[str, Any]], float]:
    """`ops`, then every node healed and started at `end_s` (as the simulator
    does once its steps end), and again at the time limit, TAIL_S later.
    The links stay as fast as they are: the simulator's messages keep their
    delay, but a real run's latency is a fault in force, and a cluster that
    commits nothing with none in force is what `progress` fails (a mutant
    that never commits a record of its leader's epoch, replayed with its
    latency back after the heal, was valid in 3 of 3)."""
    limit_s = float(math.ceil(end_s + TAIL_S))
    ops += [{"at_s": end_s, "f": "heal-all", "args": {}}, {"at_s": limit_s, "f": "heal-all", "args": {}}]
    return ops, limit_s


def searched_schedule(ops: list[dict[str, Any]], scale: float) -> tuple[list[dict[str, Any]], float]:
    """The novelty search's operations on the simulation (nemesis operations
    already, aimed by role) on a real cluster: their moments and their brief
    faults' spans stretched by `scale`, messages delayed as the simulator's
    are, every node healed and started after the last, as `real_schedule`."""
    base = _latency((SimSettings.min_delay_ms, SimSettings.max_delay_ms), scale)
    made: list[dict[str, Any]] = [{"at_s": BEFORE_START_S, **base}]
    for op in ops:
        at_s = round(op["at_s"] * scale, 3)
        args = {k: round(v * scale) if k.endswith("_ms") and k != "delta_ms" else v for k, v in op["args"].items()}
        made.append({"at_s": at_s, "f": op["f"], "args": args})
        if op["f"] in ("heal", "heal-all"):
            made.append({"at_s": at_s, **base})
    return _ended(made, max(0.0, made[-1]["at_s"]))
