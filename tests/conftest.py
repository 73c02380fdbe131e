"""Suite-wide settings. Hypothesis's per-example deadline (200 ms) is off:
the suite runs on three workers sharing two cores beside real clusters, so
an example's time says how busy the machine is, not whether the code is
right; every property here asserts what the code does, and pytest-timeout
bounds a test that hangs."""

from hypothesis import settings

settings.register_profile("splitbrain", deadline=None)
settings.load_profile("splitbrain")
