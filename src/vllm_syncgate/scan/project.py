"""A scan as a project runs it: its ``[tool.syncgate]`` settings, its budget (a built-in one, a
file, or a profile's), the scan, inline allow comments, then its baseline of known findings.

The command line only turns flags into :class:`ScanRequest` (a flag wins over the file) and
prints what :func:`scan_project` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllm_syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets
from vllm_syncgate.profiles import load_profile
from vllm_syncgate.scan.baseline import load_baseline, write_baseline
from vllm_syncgate.scan.callgraph import ScanResult, scan
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.inline import apply_inline_allows
from vllm_syncgate.scan.settings import Settings, load_settings
from vllm_syncgate.scan.sources import FileBudget


@dataclass(frozen=True)
class ScanRequest:
    paths: Sequence[str]
    entries: Sequence[str] = ()
    budget: str | None = None  # a budget file
    profile: str | None = None  # a profile TOML (its budget file)
    device: str | None = None  # a built-in budget
    baseline: str | None = None
    write_baseline: str | None = None
    patterns: str | None = None
    file_budget: FileBudget = field(default_factory=FileBudget)


@dataclass
class ProjectScan:
    result: ScanResult
    settings: Settings
    budget: str  # which budget's allow rules applied, for the header
    device: str  # the device whose code this is (a budget of your own extends its budget)
    fixed: list[dict[str, str]] = field(default_factory=list)  # baseline entries no longer found
    baseline_written: int | None = None


def tree_device(paths: Sequence[str]) -> str:
    """A vllm-ascend tree is NPU code; anything else is scanned as CUDA code."""
    return "npu" if any("vllm_ascend" in Path(p).resolve().parts for p in paths) else "cuda"


def _budget_file(request: ScanRequest, settings: Settings, device: str) -> tuple[Path, str]:
    """The budget file whose allow rules apply, and how it was chosen."""
    if request.budget is not None:
        return Path(request.budget), f"--budget {request.budget}"
    if request.profile is not None:  # an unknown file is a ProfileError: exit 2
        return load_profile(request.profile).budget_file, f"--profile {request.profile}"
    if request.device is None and settings.path("budget") is not None:
        return Path(str(settings.path("budget"))), f"[tool.syncgate] budget {settings.values['budget']}"
    return builtin_budget_path(device), f"built-in {device}"


def allow_rules(path: Path) -> list[AllowRule]:
    """Allow rules of the non-speculative budgets: the scan protects the non-speculative loop."""
    return list(load_budgets(path).all_allow_rules(speculation=False))


def scan_project(request: ScanRequest) -> ProjectScan:
    settings = load_settings(list(request.paths))
    device = request.device or settings.values.get("device") or tree_device(request.paths)
    budget_path, budget_label = _budget_file(request, settings, device)
    patterns = request.patterns or settings.path("patterns")
    result = scan(request.paths, entries=request.entries or settings.values.get("entry", ()),
                  allow=allow_rules(budget_path),
                  config=load_config(patterns) if patterns else None,
                  budget=request.file_budget)
    findings, warnings = apply_inline_allows(result.findings)
    result = replace(result, findings=findings, warnings=[*result.warnings, *warnings])
    project = ProjectScan(result, settings, budget_label, device)
    if request.write_baseline is not None:
        project.baseline_written = write_baseline(Path(request.write_baseline), result.findings)
        return project
    baseline = request.baseline or settings.path("baseline")
    if baseline is not None:
        findings, project.fixed = load_baseline(Path(baseline)).apply(result.findings)
        project.result = replace(result, findings=findings)
    return project
