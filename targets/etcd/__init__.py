"""etcd 3.4 (Debian's etcd-server) as a target: a production Raft with
Pre-Vote as a flag, check-quorum always on, and a JSON gateway for clients."""
