"""`splitbrain serve`: a local web page of every run and campaign."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import limits
from history.errors import UsageError

from .arguments import path_arg
from .outcome import EXIT_VALID

NAME = "serve"
HELP = "a local web page of every run and campaign: filter, open, re-check"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=path_arg, nargs="?", default=Path("runs"), metavar="DIR", help="the results folder")
    parser.add_argument("--port", type=limits.PORT.parse, default=8080, help="the port (0: any free one)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (another exposes your runs)")


def command(args: argparse.Namespace) -> int:
    from results.serve import server

    if not args.dir.is_dir():
        raise UsageError(
            f"{args.dir}: not a folder (the results folder `splitbrain run` writes in: runs/ unless --results)"
        )
    try:
        httpd = server(args.dir, args.host, args.port)
    except OSError as error:
        raise UsageError(
            f"--port/--host: cannot listen on {args.host}:{args.port}: {error.strerror or error}"
        ) from None
    address, port = httpd.server_address[:2]
    host = address.decode() if isinstance(address, bytes) else str(address)
    print(f"serving {args.dir} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return EXIT_VALID
