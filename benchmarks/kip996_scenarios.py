"""Figures for KIP-996's scenarios over the simulated reference quorum.

Run: .venv/bin/python benchmarks/kip996_scenarios.py [--seeds 50]
"""

from __future__ import annotations

import argparse
import statistics

from targets.kraft.sim.scenarios import flip_flop, isolated_leader_resigns, rejoining_follower, with_seed
from targets.kraft.sim.simulation import SimSettings

VARIANTS = {
    "pre-vote": {},
    "no pre-vote": {"pre_vote": False},
    "bug prevote-always": {
        "bugs": frozenset(["prevote-always"]),
        "check_invariants": False,
    },  # it breaks the Pre-Vote rule
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=50)
    seeds = range(parser.parse_args().seeds)
    print(f"{len(seeds)} seeds each; simulated election timeout 100 ms, fetch timeout 200 ms")
    for name, overrides in VARIANTS.items():
        rejoin = [rejoining_follower(with_seed(SimSettings(**overrides), s)) for s in seeds]
        flips = [flip_flop(with_seed(SimSettings(nodes=5, **overrides), s)) for s in seeds]
        print(
            f"{name:20} rejoining follower (3 nodes): elections caused in {sum(1 for r in rejoin if r)}/{len(seeds)} runs;"
            f" flip-flop topology (5 nodes, 5 s): {statistics.mean(flips):.1f} elections per run (max {max(flips)})"
        )
    for nodes in (3, 5):
        for check_quorum in (True, False):
            settings = SimSettings(nodes=nodes, check_quorum=check_quorum)
            delays = [isolated_leader_resigns(with_seed(settings, s), 2000) for s in seeds]
            resigned = [d for d in delays if d is not None]
            figure = f"resigned in {len(resigned)}/{len(seeds)} runs"
            if resigned:
                figure += f", after {min(resigned)}-{max(resigned)} ms (median {statistics.median(resigned)})"
            print(f"isolated leader, {nodes} nodes, check-quorum {'on' if check_quorum else 'off'}: {figure}")


if __name__ == "__main__":
    main()
