"""Faults as plain operations (partitions, pauses, kills, link toxics) and schedules of them."""

# The strategies that decide a run's faults (`--nemesis-strategy`): a schedule drawn from the seed
# before the run (schedule.py), the guided nemesis (guided.py), the novelty search (novelty.py),
# and the novelty search helped by the guided nemesis's risk tables and recipes.
STRATEGIES = ("random", "guided", "novelty", "novelty-priors")
# Those that aim at what earlier runs did not try (a campaign hands them its coverage so far),
# and those that learn across runs (a campaign hands them its memory): nemesis/strategy.py makes each.
AIMING = frozenset(STRATEGIES) - {"random"}
LEARNING = frozenset({"novelty", "novelty-priors"})
