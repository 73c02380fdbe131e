"""Command line of the reference quorum node: `python -m targets.kraft.node`.

Standard library only, so it runs in a bare container. A file of the data
directory that cannot be read ends the process with one line naming it and
exit code 2. The voter set comes from the data directory (see `format.py`):
a node started on an unformatted directory is an observer, which with
`--auto-join` asks the leader to make it a voter.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from .core import BUGS, RaftConfig
from .server import NodeOptions, NodeServer, halt_as_built
from .storage import StorageError


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def parse_peer(text: str) -> tuple[str, tuple[str, int]]:
    peer, sep, address = text.partition("=")
    if not sep or not peer:
        raise argparse.ArgumentTypeError(f"expected ID=HOST:PORT, got {text!r}")
    return peer, parse_address(address)


def parse_interval_ms(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of milliseconds, 0 or more, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kraft-node", description="A KRaft-style quorum node with KIP-996 Pre-Vote.")
    parser.add_argument("--id", required=True, help="this node's id")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--raft-listen", required=True, type=parse_address, help="HOST:PORT for peers")
    parser.add_argument("--client-listen", required=True, type=parse_address, help="HOST:PORT for clients")
    parser.add_argument(
        "--peer", action="append", default=[], type=parse_peer, help="ID=HOST:PORT where this node reaches a peer"
    )
    parser.add_argument("--election-timeout-ms", type=int, default=500)
    parser.add_argument("--fetch-timeout-ms", type=int, default=1000)
    parser.add_argument("--fetch-max-wait-ms", type=int, default=200)
    parser.add_argument("--request-timeout-ms", type=int, default=400)
    parser.add_argument("--tick-ms", type=int, default=10)
    parser.add_argument("--auto-join", action="store_true", help="an observer asks the leader to add it as a voter")
    parser.add_argument(
        "--ack-when-committed-always",
        action="store_true",
        help="auto-join asks with AckWhenCommitted=true (the behaviour before KIP-1186)",
    )
    parser.add_argument("--voter-change-timeout-ms", type=int, default=2000)
    parser.add_argument(
        "--flush-interval-ms",
        type=parse_interval_ms,
        default=0,
        help="followers fsync their log every N ms, not per write (0: per write)",
    )
    parser.add_argument(
        "--read-lease-ms",
        type=parse_interval_ms,
        default=0,
        help="the leader answers reads from its state while a majority fetched within N ms of its "
        "clock; under the fetch timeout (0: reads go through the log)",
    )
    parser.add_argument(
        "--fetch-max-records",
        type=int,
        default=RaftConfig.max_fetch_records,
        help="records a fetch answer carries at most",
    )
    parser.add_argument("--no-pre-vote", dest="pre_vote", action="store_false")
    parser.add_argument("--no-check-quorum", dest="check_quorum", action="store_false")
    parser.add_argument("--bug", action="append", default=[], choices=sorted(BUGS))
    parser.add_argument("--seed", type=int, default=None, help="seed of the election timeouts")
    parser.add_argument("--event-log", type=Path, help="JSON-lines event log (default: DATA_DIR/events.jsonl)")
    return parser


def options_from(args: argparse.Namespace) -> NodeOptions:
    peers = dict(args.peer)
    config = RaftConfig(
        node_id=args.id,
        peers=tuple(sorted(peers)),
        auto_join=args.auto_join,
        ack_when_committed_always=args.ack_when_committed_always,
        voter_change_timeout_ms=args.voter_change_timeout_ms,
        election_timeout_ms=args.election_timeout_ms,
        fetch_timeout_ms=args.fetch_timeout_ms,
        fetch_max_wait_ms=args.fetch_max_wait_ms,
        request_timeout_ms=args.request_timeout_ms,
        pre_vote=args.pre_vote,
        check_quorum=args.check_quorum,
        bugs=frozenset(args.bug),
        flush_interval_ms=args.flush_interval_ms,
        read_lease_ms=args.read_lease_ms,
        max_fetch_records=args.fetch_max_records,
    )
    return NodeOptions(
        config=config,
        data_dir=args.data_dir,
        raft_listen=args.raft_listen,
        client_listen=args.client_listen,
        peers=peers,
        event_log=args.event_log or args.data_dir / "events.jsonl",
        tick_ms=args.tick_ms,
        seed=args.seed,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        options = options_from(args)
    except ValueError as error:  # settings that do not fit together, as RaftConfig names them
        print(f"kraft-node: {error}", file=sys.stderr)
        return 2
    try:
        server = NodeServer(options)
    except (StorageError, OSError) as error:
        print(f"kraft-node: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # its own code broke: a halt, as one while it serves is
        print(f"kraft-node: halted: {halt_as_built(options, error)}", file=sys.stderr)
        return 2
    try:
        asyncio.run(server.serve())
    except OSError as error:
        print(f"kraft-node: {error}", file=sys.stderr)
        return 2
    if server.halted is not None:
        print(f"kraft-node: halted: {server.halted}; nothing unwritten was acknowledged", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
