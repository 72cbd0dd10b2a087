"""Reading syncgate's TOML data files (budgets, profiles, recipes, scan and device tables).

Every reader reports the same problems the same way: a :class:`~syncgate.errors.ConfigError`
subtype naming the file and ``<file>`` or ``<toml>`` as the key, in one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import tomllib

from syncgate.errors import ConfigError


def read_toml(path: Path | Traversable, error: type[ConfigError] = ConfigError) -> dict[str, Any]:
    """The parsed table of ``path``; any problem raises ``error(path, key, problem)``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(path, "<file>", "does not exist") from None
    except IsADirectoryError:
        raise error(path, "<file>", "is a directory") from None
    except OSError as exc:
        raise error(path, "<file>", f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise error(path, "<file>", "is not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(path, "<toml>", f"syntax error: {exc}") from None


def reject_unknown_keys(
    table: dict[str, Any],
    allowed: Iterable[str],
    *,
    where: str,
    source: object,
    error: type[ConfigError] = ConfigError,
    problem: str = "unknown key",
) -> None:
    """Raise ``error`` naming the first key of ``table`` (under ``where``) that is not ``allowed``."""
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise error(source, f"{where}.{unknown[0]}" if where else unknown[0], problem)
