"""`splitbrain bisect`: the first release of a target's server where a
campaign's verdict changes, by binary search over the releases it pins.

The rule, stated so a version that fails only sometimes is judged the same
way every time: a version is *found* (the anomaly is there) when any of its
runs ends with a checker false (`--checker NAME`: that checker false), and
*not found* when none does. The two
ends are probed first; where they agree there is nothing to bisect, and the
search stops, saying so. Otherwise the search assumes one change between
them and keeps the two releases on either side of it.

A version judged not found may still have the anomaly at a rate its runs
missed. With the found end's rate r (its runs that found it, of all), a
version as bad shows nothing in n runs with chance (1 - r)^n: the report
gives that chance for the boundary's not-found side, and calls the
evidence thin above `THIN` (run more with `--runs`).

`search` is pure (a `probe(version)` gives a version's exit codes), so
the rule is tested on simulated versions; the command probes real ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

EXIT_INVALID = 1
THIN = 0.1


@dataclass(frozen=True)
class Probe:
    """A version's runs: each run's outcome by the rule (1 found, 0 not, 2 not judged: the run's exit 2)."""

    version: str
    codes: tuple[int, ...]
    runs: tuple[dict, ...] = ()  # what each run found: its directory and its checkers false

    @property
    def found(self) -> bool:
        return EXIT_INVALID in self.codes

    @property
    def rate(self) -> float:
        return self.codes.count(EXIT_INVALID) / len(self.codes) if self.codes else 0.0

    def said(self) -> str:
        verdict = "found" if self.found else "not found"
        return f"{self.version}: {verdict} ({self.codes.count(EXIT_INVALID)} of {len(self.codes)} runs)"


@dataclass
class Bisection:
    probes: list[Probe] = field(default_factory=list)
    before: Probe | None = None  # the last release on the first end's side
    after: Probe | None = None  # the first release on the other side

    @property
    def agree(self) -> bool:
        return self.before is None

    def missed_chance(self) -> float | None:
        """The chance that the boundary's not-found side has the anomaly at the found side's rate, unseen."""
        if self.before is None or self.after is None:
            return None
        found, clean = (self.before, self.after) if self.before.found else (self.after, self.before)
        return (1 - found.rate) ** len(clean.codes)

    def summary(self) -> str:
        ends = f"{self.probes[0].said()}; {self.probes[1].said()}"
        if self.before is None or self.after is None:
            return f"bisect: the ends agree ({ends}): nothing to bisect"
        chance = self.missed_chance() or 0.0
        thin = f"; evidence thin (above {THIN:.0%}): run more with --runs" if chance > THIN else ""
        return (
            f"bisect: the verdict changes between {self.before.version} and {self.after.version} "
            f"({self.before.said()}; {self.after.said()}); a not-found version as bad as the found one would "
            f"show nothing in its runs with chance {chance:.1%}{thin}"
        )

    def as_json(self, checker: str | None = None) -> dict:
        def one(probe: Probe | None):
            return (
                None
                if probe is None
                else {
                    "version": probe.version,
                    "codes": list(probe.codes),
                    "found": probe.found,
                    "runs": list(probe.runs),
                }
            )

        return {
            "rule": f"found: any run with {'a checker' if checker is None else checker} false; not found: none",
            "probes": [one(p) for p in self.probes],
            "agree": self.agree,
            "before": one(self.before),
            "after": one(self.after),
            "missed_chance": self.missed_chance(),
        }


def outcome(code: int, checkers: dict[str, bool | None] | None, checker: str | None) -> int:
    """A run's outcome by the rule: its exit code (0 valid, 1 a checker
    false, 2 neither), or, where the rule names a checker, whether the
    run's verdict (`checkers`: each checker's valid) has that one false."""
    if checker is None or code not in (0, EXIT_INVALID) or checkers is None:
        return code
    return EXIT_INVALID if checkers.get(checker) is False else 0


def search(versions: list[str], probe: Callable[[str], Probe]) -> Bisection:
    """The two releases of `versions` (oldest first) on either side of the
    verdict's change, probing the ends first and then halving."""
    done = Bisection()

    def probed(index: int) -> Probe:
        found = probe(versions[index])
        done.probes.append(found)
        return found

    low, high = 0, len(versions) - 1
    first, last = probed(low), probed(high)
    if first.found == last.found:
        return done
    before, after = first, last
    while high - low > 1:
        middle = (low + high) // 2
        found = probed(middle)
        if found.found == first.found:
            low, before = middle, found
        else:
            high, after = middle, found
    done.before, done.after = before, after
    return done
