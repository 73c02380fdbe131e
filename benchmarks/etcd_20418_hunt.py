"""The hunt for etcd #20418 (issue 39), read back from its campaign folder:
`splitbrain campaign examples/etcd-20418.toml` runs it (two hours); this
prints what it covered. Per option set (guided, novelty): runs and their
verdicts, hours of load, linearizable reads answered by a follower and by a
leader (the node's role by the status polls at the read's completion),
pauses of a leader that lasted past etcd's 500 ms ReadIndex retry (the
bug's shape) with reads in flight at a follower meanwhile, the single
messages the message faults acted on by raft type (the hunt with them:
examples/etcd-20418-messages.toml), coverage cells and abstract states
reached, and every anomaly any checker named.

    .venv/bin/python benchmarks/etcd_20418_hunt.py [runs/campaigns/etcd-20418]
    .venv/bin/python benchmarks/etcd_20418_hunt.py runs/campaigns/etcd-20418-messages
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from checkers.latest import Latest  # noqa: E402
from history.coverage import role_of  # noqa: E402
from history.faults import ON_MESSAGES  # noqa: E402

RETRY_NS = 500_000_000


def leader_pauses(history: pd.DataFrame, roles: Latest) -> list[tuple[int, int]]:
    """(start, end) of each pause (or stall) of a node that led when it was made, lasting past the retry."""
    nemesis = history[(history["process"] == -1) & (history["type"] == "ok")]
    found, open_pause = [], {}
    for t, f, node in nemesis[["time_ns", "f", "node"]].itertuples(index=False):
        touched = json.loads(node) if isinstance(node, str) else []
        if f in ("pause", "stall"):
            for n in touched:
                if isinstance(n, str) and role_of(roles.of(n, int(t))) == "leader":
                    open_pause[n] = int(t)
        if f in ("resume", "heal-all", "stall"):
            for n, start in list(open_pause.items()):
                if int(t) - start > RETRY_NS:
                    found.append((start, int(t)))
                del open_pause[n]
    return found


def one_run(run_dir: Path, tally: dict) -> None:
    verdict = json.loads((run_dir / "verdict.json").read_text())
    tally["verdicts"][str(verdict["valid"]).lower()] += 1
    history = pd.read_parquet(run_dir / "history.parquet")
    events = pd.read_parquet(run_dir / "events.parquet")
    known = events[events["state"].notna() & events["node"].notna()]
    roles = Latest(known, known["state"].tolist())
    reads = history[(history["process"] >= 0) & (history["f"] == "read") & (history["type"] == "ok")]
    for t, node in reads[["time_ns", "node"]].itertuples(index=False):
        tally["reads"][role_of(roles.of(node, int(t)))] += 1
    pauses = leader_pauses(history, roles)
    invoked = history[(history["process"] >= 0) & (history["f"] == "read") & (history["type"] == "invoke")]
    tally["pauses"] += len(pauses)
    for start, end in pauses:
        during = invoked[(invoked["time_ns"] > start) & (invoked["time_ns"] < end)]
        tally["reads_in_pauses"] += sum(
            role_of(roles.of(n, int(t))) == "follower" for t, n in during[["time_ns", "node"]].itertuples(index=False)
        )
    tally["seconds"] += (history["time_ns"].max() - history["time_ns"].min()) / 1e9
    made = history[(history["process"] == -1) & (history["type"] == "ok") & history["f"].isin(ON_MESSAGES)]
    for f, node, value in made[["f", "node", "value"]].itertuples(index=False):
        tally["message_faults"] += 1
        acted = json.loads(node or "[]")
        tally["messages"].update(f"{f} {message.get('type', message['kind'])}" for message in acted)
        moment = json.loads(value or "{}").get("moment") or "any time"
        tally["moments"][moment] += len(acted)
        tally["moment_faults"][moment] += 1
    covered = verdict.get("coverage") or {}
    tally["cells"].update((c["fault"], c["role"], c["with"]) for c in covered.get("cells", []))
    tally["states"].update((covered.get("states") or {}).keys())
    for name, checker in verdict["checkers"].items():
        for anomaly in checker.get("anomalies") or []:
            tally["anomalies"].append(f"{run_dir.name}: {name}: {anomaly.get('summary', anomaly.get('kind'))}")


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/campaigns/etcd-20418")
    tallies: dict[str, dict] = defaultdict(
        lambda: {"verdicts": Counter(), "reads": Counter(), "pauses": 0, "reads_in_pauses": 0, "seconds": 0.0,
                 "message_faults": 0, "messages": Counter(), "moments": Counter(), "moment_faults": Counter(),
                 "cells": set(), "states": set(), "anomalies": []}
    )  # fmt: skip
    for run_dir in sorted(p for p in folder.iterdir() if (p / "verdict.json").exists()):
        option_set = json.loads((run_dir / "run.json").read_text())["config"].get("option_set") or "?"
        one_run(run_dir, tallies[option_set])
    for option_set, t in sorted(tallies.items()):
        runs = sum(t["verdicts"].values())
        print(f"{option_set}: {runs} runs ({dict(t['verdicts'])}), {t['seconds'] / 3600:.2f} h of load")
        print(f"  linearizable reads answered: {dict(t['reads'])}")
        print(f"  leader pauses past 500 ms: {t['pauses']}, follower reads invoked during them: {t['reads_in_pauses']}")
        acted = ", ".join(f"{what} {n}" for what, n in t["messages"].most_common())
        print(f"  message faults made: {t['message_faults']}, acting on: {acted or 'none'}")
        moments = ", ".join(
            f"{m} {t['moment_faults'][m]} faults, {t['moments'][m]} messages" for m in t["moment_faults"]
        )
        print(f"  by moment: {moments or 'none'}")
        print(f"  coverage cells: {len(t['cells'])}, abstract states: {len(t['states'])}")
        print(f"  anomalies: {len(t['anomalies'])}")
        for line in t["anomalies"][:20]:
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
