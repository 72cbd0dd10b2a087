"""The four faces of one check result: terminal table, report.json, junit.xml, syncs_per_step.png.

JUnit uses the xunit1 shape with ``file`` and ``line`` on every testcase: a case that failed its
budget points at the offending call site (relative to the user's tree, :mod:`vllm_syncgate.sitepaths`),
so a CI annotation lands on the sync; other cases point at the scenario's source. Every budget
failure carries its fix (:mod:`vllm_syncgate.fixhints`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate import junit_writer
from vllm_syncgate.audit.events import LOGPROB_REQS, SYNC_KINDS, CallSite
from vllm_syncgate.audit.verdict import Breach, StepDecisions
from vllm_syncgate.check.judge import GroupVerdict, ScenarioVerdict
from vllm_syncgate.fixhints import fix_lines
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.sitepaths import split_site, user_path

_SHORT = {"device_sync": "dev", "stream_sync": "strm", "event_sync": "evt",
          "blocking_readback": "read", "blocking_copy": "copy"}


@dataclass
class CheckResult:
    env: dict[str, Any]
    profile: dict[str, Any]
    model: dict[str, Any]
    scenarios: list[ScenarioVerdict]
    groups: list[GroupVerdict]
    timings: dict[str, float] = field(default_factory=dict)
    rehearsal: dict[str, Any] | None = None  # a device profile rehearsed on the CPU stack

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.scenarios) and all(g.passed for g in self.groups)

    def observed_sites(self) -> set[CallSite]:
        """Where every recorded sync of every scenario happened, allowed or counted."""
        return {decision.event.site for scenario in self.scenarios if scenario.sync is not None
                for step in scenario.sync.steps for decision in step.decisions}

    @property
    def what(self) -> str:
        """``""``, or what a rehearsal is, for every face of the report to say."""
        if self.rehearsal is None:
            return ""
        return f"rehearsal of {self.rehearsal['device']} on {self.rehearsal['stack']}"


def table(result: CheckResult) -> str:
    """One row per scenario: parity, steps, decode syncs per step by kind, budget."""
    kinds = " ".join(f"{_SHORT[k]:>5}" for k in SYNC_KINDS)
    head = f"{'scenario':<38} {'gens':>4} {'parity':<10} {'steps':>5}  {kinds}  {'budget':<22} result"
    lines = [head, "-" * len(head)]
    if result.rehearsal is not None:
        lines.insert(0, f"REHEARSAL: the {result.rehearsal['device']} profile on the "
                        f"{result.rehearsal['stack']} stack; not a device verdict")
    for verdict in result.scenarios:
        run = verdict.run
        parity = "ok" if not (verdict.hf or verdict.peers) else (
            f"{len(verdict.hf)}hf/{len(verdict.peers)}peer")
        if verdict.tolerated and parity == "ok":
            parity = f"ok~{len(verdict.tolerated)}"
        means = _decode_means(verdict, with_allowed=True)
        syncs = " ".join(f"{means[k]:>5.2f}" for k in SYNC_KINDS)
        budget = verdict.budget.label if verdict.sync is None or verdict.sync.passed else (
            f"{len(verdict.sync.breaches)} breach(es)")
        if verdict.sync is None:
            budget = "no steps"
        lines.append(
            f"{run.key:<38} {len(run.outcome.generations):>4} {parity:<10} {len(run.steps):>5}  "
            f"{syncs}  {budget:<22} {'PASS' if verdict.passed else 'FAIL'}"
        )
    lines.append("(syncs: mean per decode step, allow-listed sites included)")
    served = [(v.run.key, _logprobs(v)) for v in result.scenarios]
    for key, logprobs in served:
        if logprobs["steps"]:
            lines.append(f"logprobs: {key}: {logprobs['steps']} step(s) served logprob requests; "
                         f"{sum(logprobs['allowed'].values())} sync(s) allowed only there "
                         f"({', '.join(logprobs['allowed']) or 'none'})")
    judged = [key for key, logprobs in served if not logprobs["steps"]]
    lines.append(f"logprobs: {len(judged)} budget-judged scenario(s) ran no step with logprobs")
    if result.rehearsal is not None:
        lines.append(f"{result.what}: replaced to serve on CPU: "
                     + ("; ".join(result.rehearsal["replaced"]) or "nothing"))
        for label, gaps in result.rehearsal["not_shown"].items():
            if any(v.budget.label == label for v in result.scenarios):
                lines += [f"{result.what}: budget {label}: not shown by the CPU stack: {gap}"
                          for gap in gaps]
    for group in result.groups:
        if not group.passed:
            lines.append(f"{group.run.profile_group.name} (between scenarios): FAIL")
    return "\n".join(lines)


def failure_lines(result: CheckResult) -> list[str]:
    lines = [] if result.rehearsal is None else [f"({result.what})"]
    for verdict in result.scenarios:
        lines += [f"{verdict.run.key}: {text}" for text in verdict.failures()]
    for group in result.groups:
        lines += [f"{group.run.profile_group.name}: {p}" for p in group.problems]
        lines += [f"{group.run.profile_group.name} (between scenarios): budget {group.budget.label}: "
                  f"{b.describe()}" for b in group.between.breaches]
    return lines if len(lines) > (result.rehearsal is not None) else []


def to_json(result: CheckResult) -> dict[str, Any]:
    scenarios = [_scenario_json(v) for v in result.scenarios]
    if result.rehearsal is not None:  # every budget verdict says what the CPU stack cannot show
        for shown in scenarios:
            shown["budget"] += f" ({result.what})"
            if shown["sync_verdict"] is not None:
                shown["sync_verdict"]["rehearsal"] = {
                    "what": result.what,
                    "not_shown": result.rehearsal["not_shown"].get(shown["sync_verdict"]["budget"], []),
                }
    return {
        "passed": result.passed,
        "rehearsal": result.rehearsal,
        "env": result.env,
        "profile": result.profile,
        "model": result.model,
        "timings_s": result.timings,
        "groups": [
            {
                "name": g.run.profile_group.name,
                "flags": g.run.flags,
                "note": g.run.profile_group.note,
                "runner": g.run.runner,
                "speculation": g.run.speculation,
                "budget": g.budget.label,
                "startup_s": round(g.run.startup_s, 2),
                "wall_s": round(g.run.wall_s, 2),
                "peak_rss_bytes": g.run.peak_rss,
                "log": str(g.run.log_path),
                "audit_dir": str(g.run.audit_dir),
                "between_scenarios": g.between.to_json(),
                "problems": g.problems,
                "passed": g.passed,
            }
            for g in result.groups
        ],
        "scenarios": scenarios,
    }


def _scenario_json(verdict: ScenarioVerdict) -> dict[str, Any]:
    run = verdict.run
    file, line = run.scenario.location
    return {
        "key": run.key,
        "group": run.group_name,
        "scenario": run.scenario.name,
        "summary": run.scenario.summary,
        "file": file,
        "line": line,
        "passed": verdict.passed,
        "duration_s": round(run.duration_s, 3),
        "problems": verdict.problems,
        "notes": run.outcome.notes,
        "parity": {
            "hf": [i.to_json() for i in verdict.hf],
            "peers": [i.to_json() for i in verdict.peers],
            "tolerated": [i.to_json() for i in verdict.tolerated],
        },
        "steps": {} if verdict.sync is None else verdict.sync.num_steps,
        "mean_syncs_per_decode_step": _decode_means(verdict, with_allowed=True),
        "mean_syncs_per_decode_step_counted": _decode_means(verdict, with_allowed=False),
        "budget": verdict.budget.label,
        "logprobs": _logprobs(verdict),
        "sync_verdict": None if verdict.sync is None else verdict.sync.to_json(),
        "generations": [g.to_json() for g in run.outcome.generations],
    }


def _decode_means(verdict: ScenarioVerdict, *, with_allowed: bool) -> dict[str, float]:
    """The verdict's mean syncs per decode step; zeros for a scenario without steps."""
    if verdict.sync is None:
        return dict.fromkeys(SYNC_KINDS, 0.0)
    return verdict.sync.decisions.mean_per_step_of("decode", with_allowed=with_allowed)


def _logprobs(verdict: ScenarioVerdict) -> dict[str, Any]:
    """Steps of the scenario that served logprob requests, and what only those steps allowed."""
    steps = sum(1 for step in verdict.run.steps if step.meta.get(LOGPROB_REQS))
    allowed: Counter[str] = Counter()
    if verdict.sync is not None:
        allowed.update(d.event.site.symbol for s in verdict.sync.steps for d in s.allowed
                       if d.rule is not None and d.rule.logprobs_only)
    return {"steps": steps, "allowed": dict(allowed)}


def _suite(result: CheckResult) -> str:
    """JUnit's suite and class prefix: a rehearsal says so in every test case's class."""
    if result.rehearsal is None:
        return "syncgate.check"
    return f"vllm_syncgate.check.rehearsal-{result.rehearsal['device']}-on-{result.rehearsal['stack']}"


def breach_fix(breach: Breach) -> list[str]:
    """The fix lines for a breach's most frequent call site."""
    site = next(iter(breach.sites.most_common(1)), ("", 0))[0]
    return fix_lines(breach.symbols.get(site, "<module>:<qualname>"), breach.kind)


def fix_hints(result: CheckResult) -> list[str]:
    """One fix per distinct breaching site and kind, for the terminal after the FAIL lines."""
    hints: dict[tuple[str, str], list[str]] = {}
    breaches = [b for v in result.scenarios if v.sync is not None for b in v.sync.breaches]
    breaches += [b for g in result.groups for b in g.between.breaches]
    for breach in breaches:
        site = next(iter(breach.sites.most_common(1)), ("", 0))[0]
        hints.setdefault((site, breach.kind), [f"{site} ({breach.kind})", *breach_fix(breach)])
    return [line for lines in hints.values() for line in lines]


def _call_site(breaches: Sequence[Breach]) -> tuple[str, int] | None:
    """The first breach's most frequent site as (path in the user's tree, line)."""
    for breach in breaches:
        for site, _ in breach.sites.most_common(1):
            where = split_site(site)
            if where is not None:
                return user_path(where[0]), where[1]
    return None


def junit(result: CheckResult) -> str:
    suite = junit_writer.new_suite(_suite(result))
    for verdict in result.scenarios:
        run = verdict.run
        breaches = verdict.sync.breaches if verdict.sync is not None else []
        file, line = _call_site(breaches) or run.scenario.location
        file = user_path(file)
        case = junit_writer.add_case(suite, f"{_suite(result)}.{run.group_name}", run.scenario.name,
                                     file=file, line=line, time=run.duration_s)
        failures = verdict.failures()
        if failures:
            fixes = [text for b in breaches for text in breach_fix(b)]
            ET.SubElement(case, "failure", message=failures[0][:500]).text = "\n".join(
                failures + fixes)
    for group in result.groups:
        if not group.passed:
            where = _call_site(group.between.breaches)
            case = junit_writer.add_case(suite, f"{_suite(result)}.{group.run.profile_group.name}",
                                         "between_scenarios", time=0,
                                         **({"file": where[0], "line": where[1]} if where else {}))
            lines = group.problems + [b.describe() for b in group.between.breaches]
            lines += [text for b in group.between.breaches for text in breach_fix(b)]
            ET.SubElement(case, "failure", message=lines[0][:500]).text = "\n".join(lines)
    return junit_writer.to_xml(suite)


def plot(result: CheckResult, path: Path) -> None:
    """Stacked syncs per runner step, one panel per group; each scenario's verdict beside it.

    Syncs the budget counts are coloured by kind on top of one light hatched layer of
    allow-listed (by-design) ones, so a breach stands out against the documented transfer wait.
    The budget's per-step limit is a dashed line, prefill (and mixed) steps are shaded, and the
    scenarios are numbered on the panel and listed with PASS/FAIL on its right, so no label
    can overlap another however few steps a scenario has. Titles are wrapped, never cut.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = result.groups or []
    heights = [max(2.6, 1.2 + 0.2 * len(g.scenarios)) for g in groups] or [2.6]
    total = sum(heights) + 0.8
    fig, axes = plt.subplots(len(heights), 1, figsize=(14, total), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, verdict in zip(axes[:, 0], groups, strict=False):
        _panel(ax, verdict, result)
    if not groups:
        axes[0, 0].text(0.5, 0.5, "no group ran", ha="center", va="center")
    axes[-1, 0].set_xlabel("runner step (worker journal order)")
    legend: dict[str, Any] = {}
    for ax in axes[:, 0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(legend.values(), legend.keys(), loc="upper left", ncol=4, fontsize=8,
               frameon=False, bbox_to_anchor=(0.01, 1.0))
    # the left 80% for the panels: each panel's scenario list is drawn to its right
    fig.tight_layout(rect=(0, 0, 0.8, 1 - 0.55 / total))
    fig.savefig(path, dpi=100)
    plt.close(fig)


_PREFILL_STRIP = "#2ca02c"
_COLOURS = {"allow-listed": "#d9d9d9", "device_sync": "#d62728", "stream_sync": "#9467bd",
            "event_sync": "#ff7f0e", "blocking_readback": "#1f77b4", "blocking_copy": "#8c564b"}


def _panel(ax: Any, verdict: GroupVerdict, result: CheckResult) -> None:
    import textwrap

    group = verdict.run
    judged = [_judged_steps(v) for v in verdict.scenarios]
    steps = [s for run in judged for s in run]
    xs = range(len(steps))
    bottom = [0] * len(steps)
    for name, layer in step_layers(steps).items():
        if any(layer):
            style = {"hatch": "///", "edgecolor": "#b0b0b0"} if name == "allow-listed" else {}
            ax.bar(xs, layer, bottom=bottom, width=1.0, label=name, color=_COLOURS.get(name),
                   linewidth=0, zorder=2, **style)
            bottom = [b + h for b, h in zip(bottom, layer, strict=True)]
    limits = [sum(verdict.budget.limit(s.kind, k) for k in SYNC_KINDS) for s in steps]
    top = max([*bottom, *limits, 1]) * 1.6
    strip = 0.09 * top  # below zero: which steps are prefill (or mixed); the rest are decode
    spans = [(at - 0.5, 1.0) for at, s in enumerate(steps) if s.kind.value in ("prefill", "mixed")]
    ax.broken_barh(spans, (-strip * 1.1, strip), color=_PREFILL_STRIP, zorder=2,
                   label="prefill / mixed step (strip below 0; none: decode)")
    if steps:
        ax.step(xs, limits, where="mid", color="black", linestyle="--", linewidth=1.4, zorder=4,
                label="budget: counted syncs allowed per step")
    ax.axhline(0, color="#606060", linewidth=0.6, zorder=3)
    ax.set_ylim(-strip * 1.25, top)
    ax.set_xlim(-0.5, max(len(steps), 1) - 0.5)
    at = 0
    listing = []
    for number, (scenario, run) in enumerate(zip(verdict.scenarios, judged, strict=True), 1):
        if at:
            ax.axvline(at - 0.5, color="grey", linewidth=0.6, zorder=1)
        ok = scenario.passed
        ax.text(at + len(run) / 2 - 0.5, top * (0.97 - 0.07 * (number % 3)), str(number),
                fontsize=7, ha="center", va="top", color="green" if ok else "red",
                fontweight="bold", zorder=4)
        counts = scenario.sync.num_steps if scenario.sync is not None else {}
        split = f"prefill {counts.get('prefill', 0) + counts.get('mixed', 0)} / decode {counts.get('decode', 0)}"
        listing.append((f"{number}. {'PASS' if ok else 'FAIL'}  {scenario.run.scenario.name}  ({split})",
                        "green" if ok else "red"))
        at += len(run)
    for row, (text, colour) in enumerate(listing):
        ax.text(1.01, 1 - row / max(len(listing), 8), text, transform=ax.transAxes, fontsize=7,
                va="top", color=colour, family="monospace")
    state = "PASS" if verdict.passed and all(v.passed for v in verdict.scenarios) else "FAIL"
    title = f"{group.profile_group.name} [{state}] ({verdict.budget.label}): {' '.join(group.flags)}"
    if result.rehearsal is not None:
        title = f"{result.what.upper()}: {title}"
    ax.set_title(textwrap.fill(title, 110), fontsize=8, loc="left")
    ax.set_ylabel("syncs / step")


def step_layers(steps: Sequence[StepDecisions]) -> dict[str, list[int]]:
    """Bar heights per step, as the verdict decided: allow-listed syncs, then counted ones by kind."""
    layers = {"allow-listed": [len(s.allowed) for s in steps]}
    counted = [s.kinds() for s in steps]
    layers.update({kind: [c[kind] for c in counted] for kind in SYNC_KINDS})
    return layers


def _judged_steps(verdict: ScenarioVerdict) -> Sequence[StepDecisions]:
    return () if verdict.sync is None else verdict.sync.steps


def write_reports(result: CheckResult, report_dir: Path) -> dict[str, Path]:
    """Write all three files or none (:func:`vllm_syncgate.reportfiles.write_all`)."""
    names = {"json": "report.json", "junit": "junit.xml", "png": "syncs_per_step.png"}
    write_all(report_dir, {
        names["json"]: json.dumps(to_json(result), indent=2) + "\n",
        names["junit"]: junit(result),
        names["png"]: lambda p: plot(result, p),
    }, create=False)  # the plan made it before the run (its logs/ are in it)
    return {key: report_dir / name for key, name in names.items()}
