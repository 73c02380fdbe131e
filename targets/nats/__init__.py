"""NATS JetStream 2.9.10 (Debian's `nats-server`) as a target: a stream or a
key-value bucket of three replicas, each its own Raft group ("NRG")."""
