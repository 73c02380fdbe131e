"""`soak.html`: a soak's progress as a page that can be browsed while it
runs (it reloads itself until the load ends): the figures so far, the
violations found live, and curves over the soak's time of the operations a
second, the faults made and each process's memory. Self-contained (inline
SVG, no network), as report.html is."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

SOAK_PAGE = "soak.html"
WIDTH, HEIGHT, LEFT, RIGHT, TOP = 900, 200, 70, 110, 12
COLOURS = ("#1f5fbf", "#d62f2f", "#2e9e4f", "#e08a1e", "#7b4fa0", "#8c564b", "#17becf", "#7f7f7f")
RELOAD_S = 10


def write_soak_page(
    run_dir: Path,
    settings: dict[str, Any],
    samples: list[dict[str, Any]],
    found: dict[str, dict[str, Any]],
    ended: dict[str, Any] | None,
) -> Path:
    """Write soak.html (whole, then moved into place: a reader never sees half a page)."""
    path = Path(run_dir) / SOAK_PAGE
    staged = path.with_suffix(".html.part")
    staged.write_text(render(settings, samples, found, ended), encoding="utf-8")
    staged.replace(path)
    return path


def render(
    settings: dict[str, Any],
    samples: list[dict[str, Any]],
    found: dict[str, dict[str, Any]],
    ended: dict[str, Any] | None,
) -> str:
    last = samples[-1] if samples else {"elapsed_s": 0, "operations": 0, "faults": 0, "rate": 0}
    reload = "" if ended else f"<meta http-equiv='refresh' content='{RELOAD_S}'>"
    state = (
        f"load ended; live verdict: valid={html.escape(json.dumps(ended['live_verdict']))}; "
        "the batch verdict is in <a href='report.html'>report.html</a> once the run is checked"
        if ended
        else f"running: this page reloads every {RELOAD_S} s"
    )
    minutes = [s["elapsed_s"] / 60 for s in samples]
    memory = {"harness": [s["harness_mib"] for s in samples]}
    for node in sorted({node for s in samples for node in s["nodes_mib"]}):
        memory[node] = [s["nodes_mib"].get(node) for s in samples]
    return f"""<!doctype html>
<html><head><meta charset='utf-8'>{reload}<title>soak: {html.escape(settings["target"])}</title>
<style>body{{font-family:sans-serif;margin:24px}} td,th{{padding:2px 10px;text-align:left}} svg{{display:block;margin:6px 0 18px}}</style>
</head><body>
<h1>Soak of {html.escape(settings["target"])}: {settings["nodes"]} nodes, {html.escape(settings["workload"])}</h1>
<p id='state'>{state}</p>
<table id='figures'>
<tr><th>time</th><td>{last["elapsed_s"] / 60:.1f} of {settings["time_limit_s"] / 60:.1f} min</td></tr>
<tr><th>operations answered</th><td>{last["operations"]:,} ({last["rate"]:,}/s at the last sample; asked {settings["rate"]:,.0f}/s of {settings["concurrency"]} clients)</td></tr>
<tr><th>faults made</th><td>{last["faults"]:,} ({html.escape(", ".join(settings["nemesis"]) or "none")}, {html.escape(settings["nemesis_strategy"])})</td></tr>
<tr><th>violations found live</th><td>{_found(found)}</td></tr>
</table>
<h2>Operations a second</h2>{_chart(minutes, {"answered": [s["rate"] for s in samples]}, "/s")}
<h2>Faults made</h2>{_chart(minutes, {"faults": [s["faults"] for s in samples]}, "")}
<h2>Memory (resident)</h2>{_chart(minutes, memory, " MiB")}
</body></html>
"""


def _found(found: dict[str, dict[str, Any]]) -> str:
    if not found:
        return "none"
    items = [
        f"<li><b>{html.escape(name)}</b> at {first['found_at_s']:.1f} s: "
        f"{html.escape(str((first['first'] or [{}])[0].get('summary', '')))}</li>"
        for name, first in found.items()
    ]
    return f"<ul>{''.join(items)}</ul>"


def _chart(minutes: list[float], series: dict[str, list[Any]], unit: str) -> str:
    """Lines of each series over the soak's minutes, from 0 to the highest value."""
    values = [v for line in series.values() for v in line if v is not None]
    top = max(values, default=0) or 1
    span = max(minutes[-1] if minutes else 0, 1e-9)

    def x(minute: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * minute / span

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - 20) * (1 - value / top)

    body = [
        f"<line x1='{LEFT}' y1='{y(0):.1f}' x2='{WIDTH - RIGHT}' y2='{y(0):.1f}' stroke='#999'/>",
        f"<text x='{LEFT - 6}' y='{y(top) + 4:.1f}' text-anchor='end'>{top:,.0f}{unit}</text>",
        f"<text x='{LEFT - 6}' y='{y(0) + 4:.1f}' text-anchor='end'>0</text>",
        f"<text x='{WIDTH - RIGHT}' y='{HEIGHT - 4}' text-anchor='end'>{span:.1f} min</text>",
        f"<text x='{LEFT}' y='{HEIGHT - 4}'>0 min</text>",
    ]
    for (name, line), colour in zip(series.items(), COLOURS):
        points = " ".join(f"{x(m):.1f},{y(v):.1f}" for m, v in zip(minutes, line) if v is not None)
        body.append(
            f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{points}'><title>{html.escape(name)}</title></polyline>"
        )
        last = next((v for v in reversed(line) if v is not None), None)
        if last is not None:
            body.append(
                f"<text x='{WIDTH - RIGHT + 6}' y='{y(last) + 4:.1f}' fill='{colour}'>{html.escape(name)}</text>"
            )
    return f"<svg class='chart' width='{WIDTH}' height='{HEIGHT}'>{''.join(body)}</svg>"
