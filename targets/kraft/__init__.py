"""The reference quorum: a KRaft-style Raft node with KIP-996 Pre-Vote, standard library only."""
