"""Reading syncgate's TOML data files (budgets, profiles, recipes, scan and device tables).

Every reader reports the same problems the same way: a :class:`~vllm_syncgate.errors.ConfigError`
subtype naming the file and ``<file>`` or ``<toml>`` as the key, in one line.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ConfigError
from vllm_syncgate.safeio import read_regular


def read_toml(path: Path | Traversable, error: type[ConfigError] = ConfigError) -> dict[str, Any]:
    """The parsed table of ``path``; any problem raises ``error(path, key, problem)``.

    A file on disk must be a regular file of at most ``MAX_DATA_BYTES``; nesting too deep for
    the parser and ``nan``/``inf`` (no syncgate setting means anything with them) are errors too.
    """
    try:
        raw = read_regular(path) if isinstance(path, Path) else path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise error(path, "<file>", "does not exist") from None
    except IsADirectoryError:
        raise error(path, "<file>", "is a directory") from None
    except OSError as exc:
        raise error(path, "<file>", f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise error(path, "<file>", "is not UTF-8 text") from None
    try:
        return tomllib.loads(text, parse_float=_finite)
    except tomllib.TOMLDecodeError as exc:
        raise error(path, "<toml>", f"syntax error: {exc}") from None
    except _NotFinite as exc:
        raise error(path, "<toml>", f"{exc.args[0]} is not a finite number") from None
    except RecursionError:
        raise error(path, "<toml>", "nested too deeply") from None


class _NotFinite(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


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
