"""``[tool.syncgate]`` in the scanned tree's pyproject.toml: a project's scan settings, kept
with its code, so CI and every developer scan it the same way.

Found by walking up from the first scanned path to the nearest pyproject.toml (stopping at a
repository root). Paths in it are relative to that file. A command-line flag wins over the
file; whatever the file set is printed in the scan's header, so a run says where its settings
came from. Keys::

    [tool.syncgate]
    device = "cuda"                       # the built-in budget whose allow rules apply
    budget = "syncgate-budget.toml"       # a budget file instead (extends = "cuda" ...)
    baseline = ".syncgate-baseline.json"  # known findings (syncgate scan --write-baseline)
    entry = ["GPUModelRunner.execute_model"]
    patterns = "scan-patterns.toml"       # the scan's patterns (default: the packaged ones)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import SettingsError
from vllm_syncgate.profiles import DEVICES
from vllm_syncgate.tomlfile import read_toml

_PATH_KEYS = ("budget", "baseline", "patterns")


@dataclass(frozen=True)
class Settings:
    source: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)  # as written, for the header

    def path(self, name: str) -> str | None:
        """A path setting, resolved against the pyproject.toml's directory."""
        value = self.values.get(name)
        if value is None or self.source is None:
            return None
        return str(self.source.parent / value)

    def header(self) -> str:
        if self.source is None:
            return "settings: none ([tool.syncgate] not found)"
        shown = ", ".join(f"{k} = {v!r}" for k, v in self.values.items()) or "(empty)"
        return f"settings: {self.source} [tool.syncgate]: {shown}"


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``, not beyond a repository root."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def load_settings(paths: list[str]) -> Settings:
    """The ``[tool.syncgate]`` table above the first scanned path, validated."""
    found = find_pyproject(Path(paths[0])) if paths else None
    if found is None:
        return Settings()
    table = read_toml(found, SettingsError).get("tool", {}).get("syncgate")
    if table is None:
        return Settings()
    if not isinstance(table, dict):
        raise SettingsError(found, "tool.syncgate", "must be a table")
    for key, value in table.items():
        where = f"tool.syncgate.{key}"
        if key == "device":
            if value not in DEVICES:
                raise SettingsError(found, where, f"must be one of {', '.join(DEVICES)}, got {value!r}")
        elif key in _PATH_KEYS:
            if not isinstance(value, str) or not value:
                raise SettingsError(found, where, "must be a path (relative to this file)")
        elif key == "entry":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise SettingsError(found, where, "must be a list of 'Class.method' strings")
        else:
            raise SettingsError(found, where, "unknown key (expected device, budget, baseline, "
                                "entry, patterns)")
    return Settings(found, dict(table))
