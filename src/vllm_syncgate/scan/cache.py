"""A content-hash cache of scan results, like ruff's: an unchanged tree is not parsed again.

The key is everything a result depends on besides the files: syncgate's version and a digest
of the scan engine's own files, the scan's patterns, the allow rules of the budget, the entries,
the file budget, the operator table and the installed vLLM's opt-in switches. Under it sit the
scanned files' hashes (every file named or found under the paths, and every module followed
from their imports): a result is reused only when the same files still have the same bytes. The
cache lives in the user's cache folder (``$SYNCGATE_CACHE_DIR``, else ``~/.cache/syncgate``),
never in the tree being scanned; ``SYNCGATE_NO_CACHE=1`` turns it off. A cache that cannot be read or written is
no error: the scan runs as if there were none.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

from vllm_syncgate import __version__
from vllm_syncgate.reportfiles import user_cache_dir
from vllm_syncgate.safeio import keep_newest, read_regular, replace_atomically
from vllm_syncgate.scan.config import ScanConfig
from vllm_syncgate.scan.guards import (
    disabled_features,
    installed_defaults,
    installed_graph_mode,
    installed_opt_ins,
)
from vllm_syncgate.scan.rules import syncing_ops
from vllm_syncgate.scan.sources import FileBudget, collect_files

_FORMAT = 1
KEPT_ENTRIES = 256  # the newest results kept; older ones are removed as new ones are stored


def scan_cache_dir() -> Path | None:
    """``scan`` in the user's cache folder (``$SYNCGATE_CACHE_DIR`` or ``~/.cache/syncgate``);
    None when turned off. Never the working directory: a pull request could commit a planted
    entry there that reports its own sync-bearing files as clean."""
    if os.environ.get("SYNCGATE_NO_CACHE"):
        return None
    return user_cache_dir() / "scan"


def fingerprint(
    paths: Sequence[str], entries: Sequence[str], allow: Sequence[object], config: ScanConfig,
    budget: FileBudget,
) -> str:
    """The key of one scan request, files aside."""
    patterns = {name: value.globs if hasattr(value, "globs") else value
                for name, value in vars(config).items()}
    names, sized_by = syncing_ops()
    parts = [
        # the working directory too: findings show paths relative to it
        _FORMAT, __version__, _engine(), os.getcwd(), [str(Path(p).resolve()) for p in paths], list(entries),
        [repr(rule) for rule in allow], sorted(patterns.items()), asdict(budget),
        sorted(names), sorted(sized_by.items()),
        # the switches the scanned tree's config (else the installed vLLM's) defaults to off
        sorted(installed_opt_ins(config.config_sources)),
        sorted(disabled_features(config.config_sources)),
        sorted(installed_defaults(config.config_sources).items(), key=str),
        installed_graph_mode(config.config_sources),
    ]
    return hashlib.blake2b(json.dumps(parts, default=str).encode(), digest_size=16).hexdigest()


@cache
def _engine() -> str:
    """A digest of the scan's own code and data: a development tree whose version string did
    not change still gets fresh results after an edit of the engine."""
    here = Path(__file__).parent
    digest = hashlib.blake2b(digest_size=16)
    for file in sorted([*here.glob("*.py"), *here.glob("*.toml")]):
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def _digest(path: Path, limit: int) -> str | None:
    """The file's hash; None for what the scan cannot read either (a FIFO, too large)."""
    try:
        return hashlib.blake2b(read_regular(path, limit), digest_size=16).hexdigest()
    except OSError:  # TooLarge is one
        return None


class ScanCache:
    """One request's entry: ``load`` what an unchanged tree gave, ``store`` a fresh result."""

    def __init__(self, directory: Path, key: str, paths: Sequence[str], limit: int) -> None:
        self.file = directory / f"{key}.json"
        self.paths = list(paths)
        self.limit = limit  # the file budget's bytes: nothing larger is read for a hash either

    def _listed(self) -> list[str]:
        return sorted(str(path) for path, _display in collect_files(self.paths))

    def load(self) -> dict[str, Any] | None:
        try:
            entry = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("listed") != self._listed():
            return None  # a file was added or removed under the scanned paths
        hashes = entry.get("hashes", {})
        if not isinstance(hashes, dict) or any(_digest(Path(f), self.limit) != h for f, h in hashes.items()):
            return None
        return entry.get("result")

    def store(self, result: dict[str, Any], read: Sequence[Path]) -> None:
        listed = self._listed()
        hashes = {str(p): _digest(Path(p), self.limit) for p in {*listed, *map(str, read)}}
        entry = {"listed": listed, "hashes": hashes, "result": result}
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            replace_atomically(self.file, json.dumps(entry).encode())
        except OSError:
            return
        keep_newest(self.file.parent, "*.json", KEPT_ENTRIES)
