"""A TOML file a user names (a campaign, a gate's policy), read whole or
refused in one line: a folder, a missing file, bytes that are not UTF-8 and
TOML that does not parse all name the file and say what is wrong with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from checkers.errors import SplitbrainError


def read_toml(path: Path, error: type[SplitbrainError]) -> dict:
    """The file's tables; else `error` naming the file."""
    try:
        return tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a TOML file") from None
    except OSError as problem:
        raise error(f"{path}: {problem.strerror or problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text (byte {problem.start}): TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as problem:
        raise error(f"{path}: not TOML: {problem}") from None
