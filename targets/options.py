"""A target's own settings, declared where the target is: name, kind,
range, default and help. The command line's flags, campaign files' keys,
run.json's `config.options`, `replay`, `simulate` and `splitbrain targets`
all come from these declarations, so adding a target adds its options
without touching the harness, and a run names only options its target
declares (`refusal`).

An option's kind is its default's: a switch (bool), a whole number within
[least, most], or a list of names from `choices` (planted bugs). Two targets
may declare the same name (both etcd and the reference quorum have Pre-Vote);
they then share its flag, and each checks the value by its own declaration.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    name: str
    default: bool | int | tuple[str, ...]
    help: str
    least: int = 0
    most: int = 600_000
    choices: tuple[str, ...] = ()
    # The command line's spelling where it is not derived from the name
    # (`--bug`, repeated, for the list `bugs`).
    spelling: str = ""

    @property
    def flag(self) -> str:
        """`--read-lease-ms`; a switch on by default is turned off (`--no-pre-vote`)."""
        if self.spelling:
            return self.spelling
        dashed = self.name.replace("_", "-")
        return f"--no-{dashed}" if self.default is True else f"--{dashed}"

    @property
    def is_list(self) -> bool:
        return isinstance(self.default, tuple)

    def normal(self, value):
        """A value as run.json and the target take it (a list, not a tuple)."""
        return list(value) if self.is_list and isinstance(value, (list, tuple)) else value

    def problem(self, value) -> str | None:
        """Why `value` is not one this option takes, or None."""
        if isinstance(self.default, bool):
            return None if isinstance(value, bool) else f"must be true or false, not {value!r}"
        if self.is_list:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                return f"must be a list of names, not {value!r}"
            unknown = sorted(set(value) - set(self.choices))
            if unknown:
                return f"unknown {', '.join(unknown)}; known: {', '.join(self.choices) or 'none'}"
            twice = sorted({v for v in value if list(value).count(v) > 1})
            return f"{', '.join(twice)} named more than once" if twice else None
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, not {value!r}"
        if not self.least <= value <= self.most:
            return f"must be between {self.least} and {self.most}, not {value}"
        return None

    def shown(self, value) -> str:
        """The option as a person would type it, with `value`."""
        if isinstance(self.default, bool):
            return self.flag if value != self.default else ""
        if self.is_list:
            return " ".join(f"{self.flag} {v}" for v in value)
        return f"{self.flag} {value}"


def defaults(declared: tuple[Option, ...]) -> dict:
    return {option.name: option.normal(option.default) for option in declared}


def settings(declared: tuple[Option, ...], given: dict) -> dict:
    """Every declared option's value: the given ones, else its default."""
    by_name = _by_name(declared)
    return {**defaults(declared), **{name: by_name[name].normal(v) for name, v in given.items() if name in by_name}}


def refusal(target: str, declared: tuple[Option, ...], given: dict, keys: bool = False) -> tuple[str, str] | None:
    """The first given option `target` does not declare or whose value it
    cannot take, as (name, why), the options it takes named as flags, or
    with `keys` as a campaign file's keys; None when all are fine."""
    by_name = _by_name(declared)
    for name, value in given.items():
        if name not in by_name:
            return name, f"{target} does not take it; its options: {listing(declared, keys)}"
        problem = by_name[name].problem(value)
        if problem:
            return name, problem
    return None


def listing(declared: tuple[Option, ...], keys: bool = False) -> str:
    return ", ".join(option.name if keys else option.flag for option in declared) or "none"


def changed(declared: tuple[Option, ...], values: dict) -> list[str]:
    """The options whose value is not their default, as a person types them."""
    by_name = _by_name(declared)
    return [
        by_name[name].shown(value)
        for name, value in values.items()
        if name in by_name and by_name[name].normal(value) != by_name[name].normal(by_name[name].default)
    ]


def _by_name(declared: tuple[Option, ...]) -> dict[str, Option]:
    return {option.name: option for option in declared}
