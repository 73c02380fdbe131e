"""A file a user names (a campaign, a gate's policy, an SSH hosts file, a
run's settings), read whole or refused in one line: a folder, a missing
file, bytes that are not UTF-8 and text that does not parse all name the
file and say what is wrong with it."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from history.errors import SplitbrainError


def read_toml(path: Path, error: type[SplitbrainError]) -> dict:
    """The file's tables; else `error` naming the file."""
    return _parsed(path, error, "TOML", tomllib.loads, tomllib.TOMLDecodeError)


def read_json(path: Path, error: type[SplitbrainError]) -> Any:
    """The file's JSON value; else `error` naming the file."""
    return _parsed(path, error, "JSON", json.loads, json.JSONDecodeError)


def _parsed(path: Path, error: type[SplitbrainError], kind: str, parse: Callable[[str], Any], fails) -> Any:
    try:
        return parse(Path(path).read_bytes().decode("utf-8"))
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a {kind} file") from None
    except OSError as problem:
        raise error(f"{path}: {problem.strerror or problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text (byte {problem.start}): {kind} files are UTF-8") from None
    except fails as problem:
        where = f"line {problem.lineno}: {problem.msg}" if isinstance(problem, json.JSONDecodeError) else problem
        raise error(f"{path}: not {kind}: {where}") from None
