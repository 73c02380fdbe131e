"""A node's late tick (its process stopped, or its loop held up) comes
after the messages that reached it meanwhile, as the simulator has it: it
delivers the messages due before any node ticks. On a real node the
order was a race, and a paused follower, resumed, stood for election
before it answered the pre-votes waiting for it, where the simulation had
it answer them first (docs/simulator.md, `prevote-always`)."""

from __future__ import annotations

import asyncio
import json
import time

from targets.kraft.core import RaftConfig
from targets.kraft.messages import VoteRequest, encode
from targets.kraft.server import NodeOptions, NodeServer


def options(tmp_path) -> NodeOptions:
    config = RaftConfig(node_id="n1", bootstrap=(("n1", None),), peers=("n1",), directory_id=None)
    return NodeOptions(config, tmp_path / "data", ("127.0.0.1", 0), ("127.0.0.1", 0), {}, tmp_path / "events.jsonl")


def test_a_late_tick_comes_after_the_messages_that_waited_for_the_node(tmp_path):
    async def held_up(stalls: int) -> list[list[str]]:
        server = NodeServer(options(tmp_path))
        order: list[str] = []
        step, tick = server.core.step, server.core.tick
        server.core.step = lambda msg, now: (order.append("step"), step(msg, now))[1]  # type: ignore[method-assign]
        server.core.tick = lambda now: (order.append("tick"), tick(now))[1]  # type: ignore[method-assign]
        peers = await asyncio.start_server(server._serve_peer, "127.0.0.1", 0)
        _, writer = await asyncio.open_connection(*peers.sockets[0].getsockname()[:2])
        ticker = asyncio.create_task(server._tick_forever())
        line = (json.dumps(encode(VoteRequest("n2", "n1", 0, 0, 1, True))) + "\n").encode()
        seen = []
        for _ in range(stalls):
            await asyncio.sleep(0.03)  # (ticking)
            order.clear()
            writer.write(line)  # sent at once: it waits in the node's socket while the loop is held up
            time.sleep(0.05)  # the loop held up, five ticks' time, as a stopped process's is
            await asyncio.sleep(0.03)
            seen.append(order[:2])
        ticker.cancel()
        writer.close()
        peers.close()
        server.events.close()
        return seen

    # The race went either way from one stall to the next: every one of them, the message first.
    assert all(first == ["step", "tick"] for first in asyncio.run(held_up(20)))
