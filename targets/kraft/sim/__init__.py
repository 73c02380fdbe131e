"""The reference quorum's deterministic simulation (`splitbrain simulate`):
the node's sans-IO core (targets/kraft/core.py) under a simulated network,
disks and clocks, its safety invariants checked at every step, seeded
schedules of faults and the scenarios of the seed documents, and the
translation of a failing schedule into a real run (`replay.py`)."""
