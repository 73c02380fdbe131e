"""NATS's Raft peer ids: each server's is derived from its name (sha256 of
the name, its first 8 bytes each taken mod 62 into 0-9A-Za-z), so the log's
ids map back to node names without asking the servers."""

from __future__ import annotations

import hashlib

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def peer_id(server_name: str) -> str:
    return "".join(DIGITS[byte % len(DIGITS)] for byte in hashlib.sha256(server_name.encode()).digest()[:8])


def names(nodes: list[str]) -> dict[str, str]:
    """Peer id -> node name, for these nodes."""
    return {peer_id(node): node for node in nodes}
