"""The gate fanned out: ``check --groups`` runs some server groups, ``check merge`` joins them.

A CI matrix gives each job a few of the profile's server groups. Peer parity compares scenarios
*across* groups and the verdict covers all of them, so the jobs' report.json files cannot simply
be concatenated: each job also writes ``fanout.json``, the raw material of its serve level (every
group's steps and generations, the HF reference outputs its judge used, the tokenizer that
described divergences, the plan's arguments), and :func:`merge` judges all groups again, in
profile order, exactly as one run would. The merged report is written by the same writer as a
single run's, so it is the same report: only the timings say the groups ran apart.

A group no directory covers (a job that died) fails the serve level and is named; the rest is
judged on what arrived.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.levels import (
    ERROR,
    FAIL,
    LEVELS,
    NOT_RUN,
    PASS,
    SKIPPED,
    LevelCase,
    LevelResult,
)
from vllm_syncgate.check.levels_report import NAMES
from vllm_syncgate.check.plan import Plan, make_plan
from vllm_syncgate.check.report import CheckResult
from vllm_syncgate.check.run import GroupRun, ScenarioRun
from vllm_syncgate.errors import ReportDirError, UsageError
from vllm_syncgate.parity.reference import ReferenceOutput
from vllm_syncgate.profiles import Group
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.serve.scenarios import SCENARIOS, Generation, Outcome

FANOUT = "fanout.json"
SCHEMA = "syncgate.check.fanout/1"
_KEYS = {"plan", "planned", "groups", "runs", "timings_s", "reference", "tokenizer"}
#: the tokenizer files a divergence's text is decoded with (text files; copied when present)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.json", "merges.txt")
#: worst first: the status a level takes when the fanned-out jobs disagree (a serve level one
#: job did not run cannot pass, whatever the others did)
_RANK = {ERROR: 0, FAIL: 0, NOT_RUN: 1, SKIPPED: 2, PASS: 3}


def select_groups(plan: Plan, names: str) -> Plan:
    """The plan with only the named groups (``a,b``), profile order kept; unknown: usage error."""
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = [g.name for g in plan.groups]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise UsageError(f"--groups {names!r}: unknown group {unknown[0]!r} for profile "
                         f"{plan.profile.device} (known: {', '.join(known)})" if unknown else
                         f"--groups {names!r}: name at least one group ({', '.join(known)})")
    return replace(plan, groups=tuple(g for g in plan.groups if g.name in wanted))


def plan_arguments(args: Any) -> dict[str, Any]:
    """What :func:`make_plan` needs to settle the same plan again at merge time."""
    return {"device": args.device, "profile_path": args.profile, "scenarios": args.scenarios,
            "rehearse": args.rehearse, "quick": args.quick}


def write_fanout(report_dir: Path, arguments: dict[str, Any], planned: Sequence[Group],
                 plan: Plan, result: CheckResult | None, reference: Any,
                 model_dir: Path | None) -> Path:
    """This job's share of a fanned-out gate: its groups' raw runs and the reference it used.

    ``reference`` is the HF reference after judging (its ``outputs()``), or None when the serve
    level did not run; ``planned`` are the groups the whole gate runs.
    """
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "plan": arguments,
        "planned": [g.name for g in planned],
        "groups": [g.name for g in plan.groups],
        "runs": None if result is None else [_group_json(g.run) for g in result.groups],
        "timings_s": {} if result is None else result.timings,
        "reference": [] if reference is None else [
            {"prompt": list(prompt), "token_ids": out.token_ids,
             "top_logprobs": [list(top.items()) for top in out.top_logprobs]}
            for prompt, out in reference.outputs().items()],
        "tokenizer": {} if model_dir is None else {
            name: (model_dir / name).read_text(encoding="utf-8")
            for name in TOKENIZER_FILES if (model_dir / name).is_file()},
    }
    write_all(report_dir, {FANOUT: json.dumps(doc) + "\n"}, create=False)
    return report_dir / FANOUT


def _group_json(run: GroupRun) -> dict[str, Any]:
    return {
        "name": run.profile_group.name, "flags": run.flags, "log": str(run.log_path),
        "audit_dir": str(run.audit_dir), "startup_s": run.startup_s, "wall_s": run.wall_s,
        "peak_rss": run.peak_rss, "runner": run.runner, "speculation": run.speculation,
        "unattributed": [s.to_json() for s in run.unattributed],
        "scenarios": [{
            "scenario": s.scenario.name, "duration_s": s.duration_s, "error": s.error,
            "problems": s.outcome.problems, "notes": s.outcome.notes,
            "generations": [{**g.to_json(), "top_logprobs": None if g.top_logprobs is None else
                             [list(top.items()) for top in g.top_logprobs]}
                            for g in s.outcome.generations],
            "steps": [step.to_json() for step in s.steps],
        } for s in run.scenarios],
    }


def _group_run(data: dict[str, Any], group: Group) -> GroupRun:
    run = GroupRun(group, list(data["flags"]), Path(data["log"]), Path(data["audit_dir"]),
                   startup_s=data["startup_s"], wall_s=data["wall_s"], peak_rss=data["peak_rss"],
                   unattributed=[Step.from_json(s) for s in data["unattributed"]],
                   runner=data["runner"], speculation=data["speculation"])
    for s in data["scenarios"]:
        gens = [Generation(g["label"], g["prompt_token_ids"], g["token_ids"], g["text"],
                           g["finish_reason"], g["max_tokens"], g["prefix_ok"],
                           _tops(g["top_logprobs"]))
                for g in s["generations"]]
        run.scenarios.append(ScenarioRun(group.name, SCENARIOS[s["scenario"]],
                                         Outcome(gens, list(s["problems"]), list(s["notes"])),
                                         s["duration_s"], [Step.from_json(x) for x in s["steps"]],
                                         s["error"]))
    return run


def _tops(pairs: list[list[list[Any]]] | None) -> list[dict[int, float]] | None:
    return None if pairs is None else [{int(k): float(v) for k, v in top} for top in pairs]


class RecordedReference:
    """The HF reference as the jobs recorded it: the longest greedy output per prompt (a greedy
    output of n tokens is the first n of a longer one), decoded with the recorded tokenizer."""

    def __init__(self, outputs: dict[tuple[int, ...], ReferenceOutput],
                 tokenizer: dict[str, str]) -> None:
        self._outputs = outputs
        self._tokenizer_files = tokenizer

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int) -> ReferenceOutput:
        out = self._outputs.get(tuple(prompt_ids))
        if out is None or len(out.token_ids) < max_new_tokens:
            raise ReportDirError(f"{FANOUT}: no recorded HF reference of {max_new_tokens} tokens "
                                 f"for prompt {list(prompt_ids)[:8]}...")
        return ReferenceOutput(out.token_ids[:max_new_tokens], out.top_logprobs[:max_new_tokens])

    def decode(self, token_ids: Sequence[int]) -> str:
        if self._tokenizer is None:
            return f"<token ids {' '.join(map(str, token_ids))}>"
        return str(self._tokenizer.decode(list(token_ids)))

    @cached_property
    def _tokenizer(self) -> Any:
        if "tokenizer.json" not in self._tokenizer_files:
            return None
        from transformers import AutoTokenizer

        with tempfile.TemporaryDirectory(prefix="syncgate-tokenizer-") as tmp:
            for name, text in self._tokenizer_files.items():
                (Path(tmp) / name).write_text(text, encoding="utf-8")
            return AutoTokenizer.from_pretrained(tmp)


@dataclass
class _Share:
    """One directory's report.json and fanout.json."""

    path: Path
    report: dict[str, Any]
    fanout: dict[str, Any]


def _load(path: Path) -> _Share:
    docs = []
    for name in (NAMES["json"], FANOUT):
        try:
            docs.append(json.loads((path / name).read_text(encoding="utf-8")))
        except FileNotFoundError:
            hint = " (run the job with syncgate check --groups)" if name == FANOUT else ""
            raise ReportDirError(f"{path}: no {name}{hint}") from None
        except (OSError, ValueError) as exc:
            raise ReportDirError(f"{path / name}: not readable JSON ({exc})") from None
    if not isinstance(docs[1], dict) or docs[1].get("schema") != SCHEMA:
        found = docs[1].get("schema") if isinstance(docs[1], dict) else type(docs[1]).__name__
        raise ReportDirError(f"{path / FANOUT}: schema {found!r}, expected {SCHEMA!r}")
    absent = sorted(_KEYS - set(docs[1]))
    if absent or not isinstance(docs[0], dict) or "env" not in docs[0]:
        raise ReportDirError(f"{path / FANOUT}: incomplete (no {', '.join(absent)})"
                             if absent else f"{path / NAMES['json']}: not a check report")
    return _Share(path, docs[0], docs[1])


@dataclass
class Merged:
    """What a single run has at its end, joined from the fanned-out jobs."""

    plan: Plan
    levels: list[LevelResult]
    result: CheckResult | None
    env: dict[str, Any]
    missing: list[str]


def merge(dirs: Sequence[Path], report_dir: str) -> Merged:
    """Join the jobs' report directories into one run's levels, serve result and header."""
    if not dirs:
        raise UsageError("check merge: name at least one report directory")
    shares = [_load(Path(d)) for d in dirs]
    first = shares[0]
    for share in shares[1:]:
        if share.fanout["plan"] != first.fanout["plan"] or share.fanout["planned"] != first.fanout["planned"]:
            raise ReportDirError(f"{share.path}: another gate than {first.path} (plan "
                                 f"{share.fanout['plan']} vs {first.fanout['plan']})")
    owner: dict[str, Path] = {}
    for share in shares:
        for name in share.fanout["groups"]:
            if name in owner:
                raise ReportDirError(f"{share.path}: group {name!r} is also in {owner[name]}")
            owner[name] = share.path
    plan = make_plan(model=None, report_dir=report_dir, need_device=False,
                     **first.fanout["plan"])
    missing = [name for name in first.fanout["planned"] if name not in owner]
    ran = [s for s in shares if s.fanout["runs"] is not None]
    levels = [_level(name, shares, missing) for name in LEVELS
              if any(name in s.report.get("levels", {}) for s in shares)]
    result = _judge(plan, shares, ran) if ran and len(ran) == len(shares) else None
    serve = next((lv for lv in levels if lv.name == "serve"), None)
    if serve is not None and result is not None:
        serve.status = PASS if result.passed and not missing else FAIL
    env = {**first.report["env"], "flags": {}}
    for group in plan.groups:
        for share in shares:
            if group.name in share.report["env"].get("flags", {}):
                env["flags"][group.name] = share.report["env"]["flags"][group.name]
    if result is not None:
        result.env = env
    return Merged(replace(plan, groups=tuple(g for g in plan.groups if g.name in owner)),
                  levels, result, env, missing)


def _level(name: str, shares: Sequence[_Share], missing: Sequence[str]) -> LevelResult:
    """One level joined: scan and unit ran alike in every job (the worst one stands); the serve
    level takes the longest job's time and names the groups no job covered."""
    found = [s.report["levels"][name] for s in shares if name in s.report.get("levels", {})]
    worst = min(found, key=lambda lv: _RANK.get(lv["status"], 0))
    known = {f.name for f in fields(LevelResult)} - {"name", "cases", "duration_s"}
    level = LevelResult(name, cases=[LevelCase(**c) for c in worst["cases"]],
                        duration_s=max(lv["duration_s"] for lv in found),
                        **{k: v for k, v in worst.items() if k in known})
    if name == "serve" and missing:
        level.status = FAIL
        level.notes.append(f"no report of group(s) {', '.join(missing)}: their job did not "
                           "finish or was not merged")
    return level


def _judge(plan: Plan, shares: Sequence[_Share], ran: Sequence[_Share]) -> CheckResult:
    by_name = {g.name: g for g in plan.groups}
    runs = [_group_run(data, by_name[data["name"]]) for s in ran for data in s.fanout["runs"]]
    runs.sort(key=lambda run: plan.groups.index(run.profile_group))
    outputs: dict[tuple[int, ...], ReferenceOutput] = {}
    for share in ran:
        for item in share.fanout["reference"]:
            out = ReferenceOutput(item["token_ids"], _tops(item["top_logprobs"]) or [])
            key = tuple(item["prompt"])
            if len(out.token_ids) > len(outputs.get(key, ReferenceOutput([], [])).token_ids):
                outputs[key] = out
    tokenizer = next((s.fanout["tokenizer"] for s in ran if s.fanout["tokenizer"]), {})
    scenarios, groups = judge(runs, RecordedReference(outputs, tokenizer), plan.budgets,
                              mode=plan.profile.parity, tolerance=plan.profile.tolerance,
                              default_runner=plan.profile.runner)
    first = shares[0].report
    return CheckResult(env=first["env"], profile=first["profile"], model=first["model"],
                       scenarios=scenarios, groups=groups, timings=_timings(ran),
                       rehearsal=first.get("rehearsal"))


def _timings(shares: Sequence[_Share]) -> dict[str, float]:
    """Per-group timings as they were; whole-run ones (total, model, ...) the longest job's."""
    timings: dict[str, float] = {}
    for share in shares:
        for key, value in share.fanout["timings_s"].items():
            timings[key] = max(timings.get(key, value), value)
    return timings
