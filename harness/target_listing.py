"""`splitbrain targets`: what each target is and takes, read off its
declarations (targets/options.py, its capabilities) and the fault catalogue
(history/faults.py): its detected version, its options with their defaults,
its workloads, its capabilities, and the faults it takes on each backend, as
a run's validation decides them."""

from __future__ import annotations

import targets
from harness.run import CHOICES, RunConfig
from history.faults import KINDS
from targets.releases import cache_home, ordered


def describe(name: str) -> dict:
    """One target as data (what `splitbrain targets --json` prints)."""
    target = targets.get(name)
    capabilities = target.capabilities.as_json()
    return {
        "name": name,
        "versions": target.versions(),
        "workloads": capabilities.pop("workloads"),
        "capabilities": {k: v for k, v in capabilities.items() if v not in (False, None)},
        "options": [
            {
                "name": o.name,
                "flag": o.flag,
                "default": o.normal(o.default),
                "help": o.help,
                **({"choices": list(o.choices)} if o.is_list else {}),
                **({"least": o.least, "most": o.most} if type(o.default) is int else {}),
            }
            for o in target.options
        ],
        "faults": {backend: taken(name, backend) for backend in CHOICES["backend"]},
        **({"releases": releases(target.releases)} if target.releases is not None else {}),
    }


def releases(declared) -> dict:
    """The releases of its server a target pins (`--target NAME@VERSION`), and those in this machine's cache."""
    known = ordered(declared.pins())
    return {"known": known, "installed": [v for v in known if declared.installed(v)], "cache": str(cache_home())}


def taken(name: str, backend: str) -> list[str]:
    """The fault kinds a run of target `name` on `backend` takes (the random strategy draws them all)."""
    base = RunConfig(target=name, backend=backend, nodes=3, nemesis=[], nemesis_strategy="random")
    return [kind for kind in KINDS if base.takes(kind)]


def text(described: dict) -> str:
    """One target as a person reads it."""
    capabilities = ", ".join(k if v is True else f"{k}={v}" for k, v in described["capabilities"].items())
    lines = [
        f"{described['name']}: " + ", ".join(f"{k} {v}" for k, v in described["versions"].items()),
        f"  workloads: {', '.join(described['workloads'])}",
        f"  capabilities: {capabilities or 'none'}",
        "  options:",
    ]
    for option in described["options"]:
        default = option["default"]
        shown = ", ".join(default) or "none" if isinstance(default, list) else str(default).lower()
        limits = f"; {option['least']} to {option['most']}" if "least" in option else ""
        names = f"; one of {', '.join(option['choices'])}" if option.get("choices") else ""
        lines.append(
            f"    {option['flag']:<28} {option['help']} (campaign key {option['name']}, default {shown}{limits}{names})"
        )
    if not described["options"]:
        lines.append("    none")
    if "releases" in described:
        found = described["releases"]
        lines.append(
            f"  releases (--target {described['name']}@VERSION): {', '.join(found['known'])}; "
            f"installed: {', '.join(found['installed']) or 'none'} (in {found['cache']})"
        )
    lines.append("  faults:")
    lines += [f"    {backend}: {', '.join(kinds) or 'none'}" for backend, kinds in described["faults"].items()]
    return "\n".join(lines)
