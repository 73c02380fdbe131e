"""`splitbrain serve [DIR]`: the results folder as a local web page, like
Jepsen's `serve`. `/` lists every run and campaign (newest first), the
failing runs' groups (what they failed of first), and filters the runs by
target, workload, bug set, seed, verdict, failure group and options;
`/latest` is the newest run's report; `POST /recheck` checks a run again and
rewrites its verdict and report; every other path is a file under DIR (the
reports themselves). It binds 127.0.0.1 unless told otherwise: the runs of a
shared machine are nobody else's business.

Filters are query parameters, so a filtered list is a link to share; the
page also works without JavaScript (it only submits the form on change).
"""

from __future__ import annotations

import html
import threading
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from .report import STYLE
from .run_index import FILTERS, failure_groups, matches, scan

PAGE_STYLE = (
    STYLE
    + """
body { max-width: none; } form.filters label { margin-right: 10px; } form.filters input { width: 7em; }
form.filters input[name=options] { width: 14em; } td form { margin: 0; } .note { background: #fff3b0; padding: 4px 8px; }
td.started, td.seed { white-space: nowrap; }
.verdict-false { color: #c62828; font-weight: bold; } .verdict-true { color: #2e7d32; } .verdict-unknown, .verdict-incomplete { color: #e08a1e; }
"""
)
COLUMNS = (
    "started",
    "id",
    "campaign",
    "option_set",
    "target",
    "workload",
    "bugs",
    "seed",
    "options",
    "verdict",
    "failing",
)


def _options(values: list[str], chosen: str) -> str:
    items = ["<option value=''>any</option>"]
    items += [f"<option{' selected' if value == chosen else ''}>{html.escape(value)}</option>" for value in values]
    return "".join(items)


def filters_form(runs: list[dict], wanted: dict[str, str]) -> str:
    fields = []
    for name in FILTERS:
        if name in ("seed", "options", "failure_group"):
            control = f"<input name='{name}' value='{html.escape(wanted.get(name, ''))}'>"
        else:
            values = sorted({v for row in runs for v in (row[name].split(",") if name == "bugs" else [row[name]]) if v})
            control = (
                f"<select name='{name}' onchange='this.form.submit()'>{_options(values, wanted.get(name, ''))}</select>"
            )
        fields.append(f"<label>{name.replace('_', ' ')} {control}</label>")
    return (
        f"<form class='filters' method='get' action='/'>{''.join(fields)}<button>filter</button> "
        "<a href='/'>clear</a></form>"
    )


def _cell(row: dict, column: str) -> str:
    value = html.escape(str(row[column]))
    if column == "id":
        where = quote(row["path"])
        return f"<a href='/{where}/report.html'>{value}</a>" if row["report"] else value
    if column == "started":  # 2026-11-24T03:59:22+0000 -> 2026-11-24 03:59:22
        return value[:19].replace("T", " ")
    if column == "verdict":
        return f"<span class='verdict-{value}'>{value}</span>"
    return value


def _recheck_button(row: dict) -> str:
    if row["partial"]:
        return ""
    return (
        f"<form method='post' action='/recheck'><input type='hidden' name='run' value='{html.escape(row['path'])}'>"
        "<button>re-check</button></form>"
    )


def groups_table(root: Path, runs: list[dict]) -> str:
    """The failure groups (run_index.failure_groups): each a link to its
    runs, its first and last run, and the command that shrinks the first."""
    rows = "".join(
        f"<tr class='group'><td><a href='/?{urlencode({'failure_group': g['failure_group']})}'>"
        f"{html.escape(g['failure_group'])}</a></td><td>{g['runs']}</td>"
        f"<td>{_cell(g['first'], 'id')}</td><td>{_cell(g['last'], 'id')}</td>"
        f"<td><code>splitbrain shrink {html.escape(str(root / g['first']['path']))}</code></td></tr>"
        for g in failure_groups(runs)
    )
    if not rows:
        return ""
    return (
        "<h2>Failure groups</h2><p>Failing runs grouped by what they failed of first: the checker, the kind of "
        "anomaly, and the fault it is put down to: the one in force when it happened, else the next one made (its kind "
        "and the role it hit).</p>"
        "<table class='groups'><tr><th>group</th><th>runs</th><th>first</th><th>last</th><th>shrink the first</th></tr>"
        f"{rows}</table>"
    )


def page(root: Path, wanted: dict[str, str], note: str = "") -> str:
    runs, campaigns = scan(root)
    shown = [row for row in runs if matches(row, wanted)]
    head = "".join(f"<th>{column.replace('_', ' ')}</th>" for column in COLUMNS) + "<th></th>"
    body = "".join(
        f"<tr class='run' data-verdict='{html.escape(row['verdict'])}'>"
        + "".join(f"<td class='{column}'>{_cell(row, column)}</td>" for column in COLUMNS)
        + f"<td>{_recheck_button(row)}</td></tr>"
        for row in shown
    )
    listed = "".join(
        f"<li><a href='/{quote(c['path'])}/summary.html'>{html.escape(c['name'])}</a>: {c['runs']} runs, {c['failed']} failed</li>"
        if c["summary"]
        else f"<li>{html.escape(c['name'])}: {c['runs']} runs (no summary yet)</li>"
        for c in campaigns
    )
    latest = "<a href='/latest'>latest run</a>" if runs else "no runs yet"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>splitbrain runs</title>"
        f"<style>{PAGE_STYLE}</style></head><body><h1>splitbrain runs in {html.escape(str(root))}</h1>"
        + (f"<p class='note'>{html.escape(note)}</p>" if note else "")
        + f"<p>{latest} · {len(runs)} runs, {sum(r['verdict'] == 'false' for r in runs)} failed</p>"
        + (f"<h2>Campaigns</h2><ul>{listed}</ul>" if campaigns else "")
        + groups_table(root, runs)
        + f"<h2>Runs</h2>{filters_form(runs, wanted)}"
        + f"<p id='shown' data-shown='{len(shown)}'>{len(shown)} of {len(runs)} runs</p>"
        + f"<table><tr>{head}</tr>{body}</table></body></html>"
    )


def recheck(root: Path, path: str) -> str:
    """Check one listed run again; a sentence saying what changed."""
    from results.checking import check_and_record
    from results.recording import HistoryError

    runs, _ = scan(root)
    row = next((r for r in runs if r["path"] == path), None)
    if row is None:
        return f"{path}: not a run under {root}"
    if row["partial"]:
        return f"{path}: still running or cut short; check it with `splitbrain check {root / path}`"
    run_dir = root / path
    try:
        verdict = check_and_record(run_dir)
    except (HistoryError, OSError, ValueError) as error:
        return f"{path}: cannot be checked: {error}"
    now = str(verdict["valid"]).lower()
    return f"re-checked {row['id']}: valid {now}" + ("" if now == row["verdict"] else f" (was {row['verdict']})")


class Handler(SimpleHTTPRequestHandler):
    """The listing, `/latest` and `/recheck`; files under the results folder otherwise."""

    root: Path
    # One re-check at a time: two of the same run would write the same files.
    checking = threading.Lock()

    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/":
            query = parse_qs(url.query)
            wanted = {name: query.get(name, [""])[0] for name in FILTERS}
            self._send_page(page(self.root, wanted, query.get("note", [""])[0]))
        elif url.path == "/latest":
            runs, _ = scan(self.root)
            done = [r for r in runs if r["report"]]
            self._redirect(f"/{quote(done[0]['path'])}/report.html" if done else "/")
        else:
            super().do_GET()

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/recheck":
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(min(length, 10_000)).decode("utf-8", "replace"))
        with self.checking:
            note = recheck(self.root, form.get("run", [""])[0])
        self._redirect("/?" + urlencode({"note": note}))

    def _send_page(self, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, where: str) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()


def server(root: Path, host: str = "127.0.0.1", port: int = 8080) -> ThreadingHTTPServer:
    """A server for `root`, bound and ready (`serve_forever` runs it); OSError if the port is taken."""
    root = Path(root).resolve()
    handler = type("RootHandler", (Handler,), {"root": root})
    return ThreadingHTTPServer((host, port), partial(handler, directory=str(root)))
