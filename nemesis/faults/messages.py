"""Faults on single messages (history/faults.py's `message-drop`,
`message-hold`, `message-duplicate` and `message-reorder`), for a target
that declares its framing (`Capabilities.framing`) on links through the
proxies (harness/toxiproxy/messages.py does the deed).

The simulator loses, delays and repeats single messages, and found bugs
that faults acting for seconds did not. Here one message is the unit: the
next message of a kind (a vote request, a fetch's answer, or any) that a
node sends is dropped, held back while later ones
pass (for `hold_ms`, or until a message of kind `until` passes), sent
twice, or swapped with the one after it. The link's TCP connection stays
up throughout, so nothing else of a cut happens (no reconnection, no lost
bytes of other messages).

`message-loss` is the lasting kind, a simulated schedule's lossy network
replayed: every message on the links (of a kind, or any) dropped at a rate
(`per_mille`) until a heal; its `ok` names the links it went on, and the
heal that ends it names each message it dropped.

A message fault may wait for a moment the messages show
(history/messages.py's `MOMENTS`: a vote in flight, a leader newly
elected, a read index in flight): it acts only on messages that pass
while the moment lasts. The search and the draw choose moments among those
the target's framing can show, an election's only while the nodes show one
open or a leader was just lost, never for one bug's recipe.

A single-message fault waits for its message up to `within_ms`; it is over once it acted
(instant in the catalogue), and its row names what it acted on: each
message's link, kind, ordinal on the link, and what the framing read of it
(its epoch, offsets). A fault no message of its kind met acted on nothing,
as a partition that cut no link. Pure and seeded where it draws.
"""

from __future__ import annotations

import importlib
import random
import time
import uuid
from typing import Any

from history.messages import ANY, IN_ELECTION, MOMENTS

from .brief import log_uniform
from .family import Aiming, Choice, Drawing, Family

ACTIONS = {
    "message-drop": "drop",
    "message-hold": "hold",
    "message-duplicate": "duplicate",
    "message-reorder": "reorder",
}
KINDS = tuple(ACTIONS)
LOSS = "message-loss"
# The rates a drawn loss drops messages at (the simulator's lossy networks': 5% and 20%).
LOSS_PER_MILLE = (50, 200)
# Whose messages: every node's (the next of its kind anywhere), or a role's.
AIMS = ("any", "leader", "follower")
POLL_S = 0.02
# How many messages of its kind a fault acts on; 0: every one for its
# `within_ms` (a link silent for one kind of message, its connection up).
COUNTS = (1, 1, 1, 3, 0)


def framed_kinds(framing: str) -> tuple[str, ...]:
    """The kinds of message a target's framing module names (its `KINDS`
    mapping, each type of message to its kind), in order; none for none."""
    if not framing:
        return ()
    return tuple(dict.fromkeys(importlib.import_module(framing).KINDS.values()))


def moments_of(framed: tuple[str, ...], electing: bool = True) -> tuple[str, ...]:
    """The moments a target's messages can show: those one of whose opening
    kinds its framing names; those an election opens (IN_ELECTION's kinds
    open them) only while one is open or opening (`electing`): elsewhere a
    fault waiting for a vote in a steady cluster waits in vain."""
    return tuple(
        name
        for name, (opens, _) in MOMENTS.items()
        if set(opens) & set(framed) and (electing or not set(opens) <= IN_ELECTION)
    )


def problem(args: dict[str, Any], framed: tuple[str, ...]) -> str | None:
    """What is wrong with a message fault's arguments (from a schedule
    given) for a target whose framing names `framed`; None if nothing."""
    for key, known in (("message", (ANY, *framed)), ("until", ("", ANY, *framed)), ("moment", moments_of(framed))):
        if key in args and args[key] not in known:
            return f"{key} {args[key]!r} is none of the target's: {', '.join(known)}"
    return None


def drawn(kind: str, drawing: Drawing) -> dict[str, Any]:
    return draw(kind, drawing.rng, drawing.timeout_ms, drawing.framed)


def draw(kind: str, rng: random.Random, timeout_ms: int, messages: tuple[str, ...] = ()) -> dict[str, Any]:
    """A message fault's arguments: whose messages (any node's, or a
    role's), of which kind (among the target's, `messages`, or
    any), how long it waits for them, how many (COUNTS), and for a hold
    how long it holds each,
    on a log scale from a tenth of an election timeout to twice it. The
    random schedule knows nothing of the cluster's state: it waits for no
    election's moment."""
    if kind == LOSS:
        return {"per_mille": rng.choice(LOSS_PER_MILLE), "message": ANY}
    target, seed, message = rng.choice(AIMS), rng.randrange(2**31), rng.choice((ANY, *messages))
    count = rng.choice(COUNTS)
    aiming = aimed(kind, message, rng, timeout_ms, messages, electing=False)
    return {**aiming, "target": target, "seed": seed, "count": count}


def aimed(
    kind: str, message: str, rng: random.Random, timeout_ms: int, framed: tuple[str, ...], electing: bool
) -> dict[str, Any]:
    """A search's message fault: the next message of kind `message` anywhere
    (the search names the kind, not the node), at any time or in a moment
    the framing can show now (moments_of), even odds between any time and
    one of the moments, but not one its own kind opens (that would leave
    it a second such message only: in three nodes, one lost, a vote asked
    has no second); held, where it is, as the random draw holds it."""
    args: dict[str, Any] = {"target": "any", "message": message, "within_ms": 3 * timeout_ms, "count": 1}
    moments = tuple(moment for moment in moments_of(framed, electing) if message not in MOMENTS[moment][0])
    moment = rng.choice(moments) if moments and rng.random() < 0.5 else ""
    if moment:
        args["moment"] = moment
    if kind == "message-hold":
        args["hold_ms"] = log_uniform(rng, timeout_ms / 10, 2 * timeout_ms)
    return args


def make(nemesis: Any, f: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The fault on the links named in `links`, or on those out of the
    aimed node; waits up to `within_ms` for `count` messages of its kind on
    them together (0: acts on all for `within_ms`), and takes it off them
    all; the messages it acted on."""
    links = _links(nemesis, args)
    if not links:
        return []
    count = int(args.get("count", 1))
    attributes = {
        "action": ACTIONS[f],
        "kind": args.get("message", ANY),
        "count": count,
        "skip": int(args.get("skip", 0)),
        "hold_ms": int(args.get("hold_ms", args.get("within_ms", 1000))),
        "until": args.get("until", ""),
        "group": f"{f}-{uuid.uuid4().hex[:12]}",  # `count`, `skip` and the moment are over all its links together
        **_window(args.get("moment", "")),
    }
    mesh = nemesis.links
    mesh.add_toxic(links, "message", attributes, name=f)
    try:
        deadline = time.monotonic() + args.get("within_ms", 1000) / 1000
        while True:
            acted = mesh.applied(links, f)
            if count and sum(map(len, acted.values())) >= count:
                break  # (its group acts on no more)
            if time.monotonic() > deadline:
                # Stopped before the last reading, so that a message it acted on after it is named too.
                mesh.update_toxic(links, f, {"per_mille": 0})
                acted = mesh.applied(links, f)
                break
            time.sleep(POLL_S)
    finally:
        mesh.remove_toxic(links, f)
    return [{"link": list(link), **message} for link, messages in acted.items() for message in messages]


def _window(moment: str) -> dict[str, str]:
    """The proxy's attributes for a moment (none: any time)."""
    if not moment:
        return {}
    opens, closes = MOMENTS[moment]
    return {"after": ",".join(opens), "before": ",".join(closes)}


def lose(nemesis: Any, f: str, args: dict[str, Any]) -> list[list[str]]:
    """A lasting loss on the links named in `links` (else every link): each
    message of its kind dropped at `per_mille` until a heal; the links. A
    loss in force takes the new rate and kind instead (as the simulator's
    network changes), what it dropped so far kept for the heal to name."""
    attributes = {"kind": args.get("message", ANY), "per_mille": int(args["per_mille"])}
    if nemesis.losses:
        for links, name in nemesis.losses:
            nemesis.links.update_toxic(links, name, attributes)
        return [list(link) for links, _ in nemesis.losses for link in links]
    links = [(nemesis.named(a), nemesis.named(b)) for a, b in args["links"]] if "links" in args else nemesis.links.links
    name = f"{f}-{uuid.uuid4().hex[:12]}"
    nemesis.faulty_links = True  # (what a run's end heals)
    made = nemesis.links.add_toxic(links, "message", {"action": "drop", "count": 0, **attributes}, name=name)
    nemesis.losses.append((made, name))
    return [list(link) for link in made]


def healed(nemesis: Any) -> list[dict[str, Any]]:
    """The messages the losses in force dropped, read before a heal takes them away (and forgotten)."""
    dropped = [
        {"link": list(link), **message}
        for links, name in nemesis.losses
        for link, messages in nemesis.links.applied(links, name).items()
        for message in messages
    ]
    nemesis.losses.clear()
    return sorted(dropped, key=lambda message: message["wall_ns"])


def _links(nemesis: Any, args: dict[str, Any]) -> list[tuple[str, str]]:
    """The links named, every link (aimed at `any`), or every link out of
    the aimed node (what it sends to whom depends on its role, which the
    draw does not know)."""
    if "links" in args:
        return [(nemesis.named(src), nemesis.named(dst)) for src, dst in args["links"]]
    if args.get("target") == "any":
        return list(nemesis.links.links)
    senders = nemesis.aimed(args, random.Random(args.get("seed")))
    return [(senders[0], node) for node in nemesis.cluster.ids if node != senders[0]] if senders else []


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    """One per kind of message aimed at (a message fault cuts no link: it
    may join any fault in force); an election's kinds (a vote asked or
    given, a new leader's notice) only while one is open or opening: in a
    steady cluster none passes, and a fault waiting for one acts on nothing."""
    return [
        Choice(
            (kind, message, aiming.context),
            kind,
            aimed(kind, message, aiming.rng, aiming.timeout_ms, aiming.framed, aiming.electing),
        )
        for message in aiming.framed
        if aiming.electing or message not in IN_ELECTION
    ]


FAMILY = Family(
    makes={**dict.fromkeys(KINDS, make), LOSS: lose},
    draw=drawn,
    choices=choices,
    # A leader lost (cut off, muted, killed or paused) opens an election: a
    # message fault made at once lands on what is in flight then, a vote
    # asked for or given, or the new leader's notice (history/messages.py's
    # moment, not any one bug's message).
    at_once={
        (first, fault, kind): 1
        for first in ("leader-cut-off", "leader-mute", "leader")
        for fault in KINDS
        for kind in IN_ELECTION
    },
)
