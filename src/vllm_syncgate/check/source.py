"""Which runner source ``syncgate check`` judges: a checkout given with ``--source``, told apart by
its layout, or the installed ``vllm`` and ``vllm_ascend``.

Nothing is imported: ``importlib.util.find_spec`` locates an installed package without running
it, so a tree that cannot import here (another vLLM version) is still found and scanned.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from vllm_syncgate.errors import UsageError

VLLM = "vllm"
ASCEND = "vllm-ascend"
# The package directory each kind of tree has at its root, and where its runners live in it.
_LAYOUTS = {VLLM: ("vllm", ("v1", "worker")), ASCEND: ("vllm_ascend", ("worker",))}


@dataclass(frozen=True)
class RunnerSource:
    """A vLLM or vllm-ascend tree: ``root`` holds the package directory."""

    kind: str
    root: Path
    installed: bool

    @property
    def package(self) -> str:
        return _LAYOUTS[self.kind][0]

    @property
    def worker_dir(self) -> Path:
        package, parts = _LAYOUTS[self.kind]
        return self.root.joinpath(package, *parts)

    def describe(self) -> str:
        return f"{'installed ' if self.installed else ''}{self.kind} at {self.root}"


def detect_source(path: str | Path) -> RunnerSource:
    """The tree at ``path`` (its root, or its package directory); :class:`UsageError` naming
    what was looked for when it is neither."""
    given = Path(path).expanduser()
    if not given.is_dir():
        raise UsageError(f"--source {path}: not a directory")
    for candidate in (given, given.parent):
        for kind in (ASCEND, VLLM):
            source = RunnerSource(kind, candidate.resolve(), installed=False)
            if source.worker_dir.is_dir() and (candidate == given or given.name == source.package):
                return source
    raise UsageError(
        f"--source {path}: neither a vLLM tree (no vllm/v1/worker/) nor a vllm-ascend tree "
        "(no vllm_ascend/worker/)"
    )


def installed_sources() -> list[RunnerSource]:
    """The installed vLLM, then the installed vllm-ascend; those not installed are left out."""
    found = []
    for kind, (package, _) in _LAYOUTS.items():
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            source = RunnerSource(kind, Path(spec.origin).resolve().parent.parent, installed=True)
            if source.worker_dir.is_dir():
                found.append(source)
    return found
