"""A scan as a project runs it: its ``[tool.syncgate]`` settings, its budget (a built-in one, a
file, or a profile's), the scan, inline allow comments, then its baseline of known findings.

This is the one verdict engine: ``syncgate scan`` and check's scan level both call
:func:`scan_project`, so the same tree gets the same entry points, settings, baseline, allows,
device default and findings from either. The command lines only turn flags into
:class:`ScanRequest` (a flag wins over the file) and print what it returns.

Besides the failing syncs, a gate fails on what it could not judge: in gate mode (``check``,
``scan --strict``) a file under the scanned paths that could not be read or parsed, unless the
budget or settings exclude it with a reason; with ``strict`` also an allow (budget rule of your
own file, inline comment, baseline entry) that matched nothing, as ruff's unused-noqa check does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllm_syncgate.audit.budgets import AllowRule, builtin_budget_path, load_budgets
from vllm_syncgate.audit.exclusions import Exclusion
from vllm_syncgate.profiles import load_profile
from vllm_syncgate.scan.baseline import describe, load_baseline, write_baseline
from vllm_syncgate.scan.cache import scan_cache_dir
from vllm_syncgate.scan.callgraph import Finding, ScanResult, scan
from vllm_syncgate.scan.config import load_config
from vllm_syncgate.scan.guards import Guard
from vllm_syncgate.scan.inline import apply_inline_allows
from vllm_syncgate.scan.settings import Settings, load_settings
from vllm_syncgate.scan.sources import FileBudget, Problem, collect_files


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
    root: Path | None = None  # the tree's root: the settings search stops there
    gate: bool = False  # an unread file fails (check; scan --strict)
    strict: bool = False  # also an allow that matched nothing fails (scan --strict)


@dataclass
class ProjectScan:
    result: ScanResult
    settings: Settings
    budget: str  # which budget's allow rules applied, for the header
    device: str  # the device whose code this is (a budget of your own extends its budget)
    fixed: list[dict[str, str]] = field(default_factory=list)  # baseline entries no longer found
    baseline_written: int | None = None
    unused: list[str] = field(default_factory=list)  # allows that matched nothing
    unread: list[Problem] = field(default_factory=list)  # files not read or parsed, not excluded
    excluded: list[tuple[Problem, str]] = field(default_factory=list)  # with the exclusion's reason
    gate: bool = False
    strict: bool = False

    @property
    def gate_failures(self) -> list[str]:
        """What fails the gate besides failing syncs: unread files (gate mode), unused allows
        (strict)."""
        out = [f"not read: {p.file}: {p.reason}" for p in self.unread] if self.gate else []
        return out + (self.unused if self.strict else [])

    @property
    def passed(self) -> bool:
        return not self.result.failing and not self.gate_failures

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def header(self) -> list[str]:
        """The settings and budget in force, printed with every verdict."""
        return [self.settings.header(), f"budget: {self.budget} (device {self.device})"]

    def verdict_lines(self) -> list[str]:
        """Unread files, exclusions and unused allows, each named, and whether they fail."""
        failing = "FAIL" if self.gate else "warning"
        lines = [f"{failing}: not read: {p.file}: {p.reason}" for p in self.unread]
        lines += [f"excluded: {p.file}: {p.reason} (excluded: {why})" for p, why in self.excluded]
        lines += [f"{'FAIL' if self.strict else 'warning'}: {u}" for u in self.unused]
        return lines


def tree_device(paths: Sequence[str]) -> str:
    """A vllm-ascend tree is NPU code; anything else is scanned as CUDA code."""
    return "npu" if any("vllm_ascend" in Path(p).resolve().parts for p in paths) else "cuda"


def _budget_file(request: ScanRequest, settings: Settings, device: str) -> tuple[Path, str, bool]:
    """The budget file whose allow rules apply, how it was chosen, and whether it is the user's."""
    if request.budget is not None:
        return Path(request.budget), f"--budget {request.budget}", True
    if request.profile is not None:  # an unknown file is a ProfileError: exit 2
        return load_profile(request.profile).budget_file, f"--profile {request.profile}", True
    if request.device is None and settings.path("budget") is not None:
        return (Path(str(settings.path("budget"))),
                f"[tool.syncgate] budget {settings.values['budget']}", True)
    return builtin_budget_path(device), f"built-in {device}", False


def allow_rules(path: Path) -> list[AllowRule]:
    """Allow rules of the non-speculative budgets: the scan protects the non-speculative loop."""
    return list(load_budgets(path).all_allow_rules(speculation=False))


def _unused_rules(rules: Sequence[AllowRule], own: str, findings: Sequence[Finding]) -> list[str]:
    """The rules written in the user's budget file ``own`` that allowed no finding."""
    allowed = {(f.reason, f.kind) for f in findings if f.guard == Guard.ALLOWED.value}
    return [f"{own}: unused allow rule: site = {r.site!r}" + (f" kind = {r.kind!r}" if r.kind else "")
            + " matched no sync" for r in rules if r.source == own
            and not any(reason == r.reason and r.kind in (None, kind) for reason, kind in allowed)]


def _split_unread(result: ScanResult, exclude: Sequence[Exclusion]
                  ) -> tuple[list[Problem], list[tuple[Problem, str]]]:
    unread, excluded = [], []
    for problem in [*result.problems, *result.skipped]:
        rule = next((e for e in exclude if e.matches(problem.file)), None)
        if rule is None:
            unread.append(problem)
        else:
            excluded.append((problem, rule.reason))
    return unread, excluded


def scan_project(request: ScanRequest) -> ProjectScan:
    settings = load_settings(list(request.paths), request.root)
    device = request.device or settings.values.get("device") or tree_device(request.paths)
    budget_path, budget_label, own = _budget_file(request, settings, device)
    patterns = request.patterns or settings.path("patterns")
    rules = allow_rules(budget_path)
    result = scan(request.paths, entries=request.entries or settings.values.get("entry", ()),
                  allow=rules, config=load_config(patterns) if patterns else None,
                  budget=request.file_budget, cache_dir=scan_cache_dir(),
                  dispatch=load_budgets(budget_path).dispatch, device=device)
    unread_files = {p.file for p in [*result.problems, *result.skipped]}
    scanned = [display for _, display in collect_files(list(request.paths))
               if display not in unread_files]
    findings, warnings = apply_inline_allows(result.findings, scanned)
    result = replace(result, findings=findings)
    project = ProjectScan(result, settings, budget_label, device, gate=request.gate or request.strict,
                          strict=request.strict)
    exclude = [*settings.exclude, *load_budgets(budget_path).exclude]
    project.unread, project.excluded = _split_unread(result, exclude)
    project.unused = [w for w in warnings if ": unused allow: " in w]
    project.result.warnings = [*result.warnings, *(w for w in warnings if w not in project.unused)]
    if own:
        project.unused += _unused_rules(rules, str(budget_path), findings)
    if request.write_baseline is not None:
        project.baseline_written = write_baseline(Path(request.write_baseline), result.findings)
        return project
    baseline = request.baseline or settings.path("baseline")
    if baseline is not None:
        findings, project.fixed = load_baseline(Path(baseline)).apply(result.findings)
        project.result = replace(project.result, findings=findings)
        project.unused += [f"{baseline}: unused baseline entry: {describe(e)} matched no failing "
                           "sync (fixed? remove it)" for e in project.fixed]
    return project
