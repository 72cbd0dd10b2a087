"""``[tool.syncgate]`` in the scanned tree's pyproject.toml: a project's scan settings, kept
with its code, so CI and every developer scan it the same way.

Found by walking up from the first scanned path to the nearest pyproject.toml, never past the
tree's root: the root given (``check --source``), else the first folder with a ``.git``; with
neither, only the folder given is searched, so a pyproject.toml in a shared parent folder cannot
change a verdict. The settings stay in the tree: a pyproject.toml that is a symlink out of it is
refused, and every path in it is relative to that file, without ``..``, and resolves (symlinks
followed) inside the tree; nothing outside is read, so no error can echo it. A command-line
flag wins over the file; the settings in force are printed in every verdict. Keys::

    [tool.syncgate]
    device = "cuda"                       # the built-in budget whose allow rules apply
    budget = "syncgate-budget.toml"       # a budget file instead (extends = "cuda" ...)
    baseline = ".syncgate-baseline.json"  # known findings (syncgate scan --write-baseline)
    entry = ["GPUModelRunner.execute_model"]
    patterns = "scan-patterns.toml"       # the scan's patterns (default: the packaged ones)
    exclude = [{path = "gen/*.py", reason = "generated; checked by its generator's test"}]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from vllm_syncgate.audit.exclusions import Exclusion, parse_exclusions
from vllm_syncgate.errors import SettingsError
from vllm_syncgate.profiles import DEVICES
from vllm_syncgate.tomlfile import read_toml

_PATH_KEYS = ("budget", "baseline", "patterns")
_INSTALLED = ("site-packages", "dist-packages")  # an installed package's tree ends there
_KEYS = ("device", *_PATH_KEYS, "entry", "exclude")


@dataclass(frozen=True)
class Settings:
    source: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)  # as written, for the header
    searched: str = ""  # where the search looked, for the header when nothing was found
    exclude: tuple[Exclusion, ...] = ()

    def path(self, name: str) -> str | None:
        """A path setting, resolved against the pyproject.toml's directory (checked at load)."""
        value = self.values.get(name)
        if value is None or self.source is None:
            return None
        return str(self.source.parent / value)

    def header(self) -> str:
        if self.source is None:
            return f"settings: none ([tool.syncgate] not found in {self.searched or 'the tree'})"
        shown = ", ".join(f"{k} = {v!r}" for k, v in self.values.items()) or "(empty)"
        return f"settings: {self.source} [tool.syncgate]: {shown}"

    def to_json(self) -> dict[str, Any]:
        return {"source": None if self.source is None else str(self.source),
                "values": self.values, "searched": self.searched}


def search_folders(start: Path, root: Path | None = None) -> list[Path]:
    """The folders searched for pyproject.toml, nearest first: up to ``root`` (when ``start`` is
    inside it), else up to the first folder holding ``.git`` or an installed package's
    ``site-packages``, else ``start``'s folder alone."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    top = root.resolve() if root is not None else None
    chain: list[Path] = []
    for folder in (here, *here.parents):
        chain.append(folder)
        if folder == top or folder.name in _INSTALLED or (folder / ".git").exists():
            return chain
    return [here]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # outside, or a symlink loop
        return False
    return True


def find_pyproject(start: Path, root: Path | None = None) -> tuple[Path | None, Path]:
    """The nearest pyproject.toml within the tree, and the tree's root (the last folder searched)."""
    chain = search_folders(start, root)
    tree = chain[-1]
    for folder in chain:
        candidate = folder / "pyproject.toml"
        if candidate.is_symlink() and not _inside(candidate, tree):
            raise SettingsError(candidate, "<file>", "is a symlink out of the scanned tree; "
                                "settings are read only from inside it")
        if candidate.is_file():
            return candidate, tree
    return None, tree


def _tree_path(found: Path, tree: Path, where: str, value: Any) -> None:
    """A path setting must name a file inside the tree: relative, no ``..``, no symlink out."""
    problem = "must be a path relative to this file, inside the tree (no absolute path, no '..')"
    if not isinstance(value, str) or not value:
        raise SettingsError(found, where, problem)
    pure = PurePosixPath(value.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or Path(value).is_absolute() or ":" in pure.parts[0]:
        raise SettingsError(found, where, problem)
    if not _inside(found.parent / value, tree):
        raise SettingsError(found, where, "resolves out of the scanned tree (a symlink); "
                            "settings read files only from inside it")


def load_settings(paths: Sequence[str], root: Path | None = None) -> Settings:
    """The ``[tool.syncgate]`` table above the first scanned path, within the tree, validated."""
    if not paths:
        return Settings()
    found, tree = find_pyproject(Path(paths[0]), root)
    searched = f"{Path(paths[0]).resolve()} up to {tree}"
    if found is None:
        return Settings(searched=searched)
    table = read_toml(found, SettingsError).get("tool", {}).get("syncgate")
    if table is None:
        return Settings(searched=searched)
    if not isinstance(table, dict):
        raise SettingsError(found, "tool.syncgate", "must be a table")
    exclude: tuple[Exclusion, ...] = ()
    for key, value in table.items():
        where = f"tool.syncgate.{key}"
        if key == "device":
            if value not in DEVICES:
                raise SettingsError(found, where, f"must be one of {', '.join(DEVICES)}, got {value!r}")
        elif key in _PATH_KEYS:
            _tree_path(found, tree, where, value)
        elif key == "entry":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise SettingsError(found, where, "must be a list of 'Class.method' strings")
        elif key == "exclude":
            exclude = parse_exclusions(value, found, where, SettingsError)
        else:
            raise SettingsError(found, where, f"unknown key (expected {', '.join(_KEYS)})")
    return Settings(found, dict(table), searched, exclude)
