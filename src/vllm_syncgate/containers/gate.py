"""The gate every syncgate image runs: print the environment header, then become one job.

A CI log is only reproducible if it says where it ran, so the header (the line ``syncgate repro``
reads back) is printed before anything can fail. ``syncgate check`` prints its own, fuller one
(flags, seed, model) as its first line, so for that job the gate leaves it to check: one header
per run, never two that disagree. The job then replaces this process
(``os.execvp``): its exit code is the container's, which is what
``docker compose up --exit-code-from SERVICE`` propagates to the CI runner.

Jobs: ``check [ARGS]`` runs ``syncgate check`` for the image's device into the report dir;
``ut [ARGS]`` runs the unit level under pytest with a JUnit file in the report dir; anything
else is run as given (a shell, ``syncgate repro ...``).
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllm_syncgate.environment import IMAGE_ENV, format_header, header
from vllm_syncgate.errors import EXIT_USAGE, UsageError
from vllm_syncgate.profiles import DEVICES

#: The shell's code for "command not found", so a typo'd job reads the same as in a shell.
EXIT_NOT_FOUND = 127


@dataclass(frozen=True)
class GateSettings:
    """What the image's environment says about this run (``SYNCGATE_*`` variables)."""

    device: str
    report_dir: str
    ut_paths: tuple[str, ...]
    image: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GateSettings:
        device = env.get("SYNCGATE_DEVICE", "cpu")
        if device not in DEVICES:
            raise UsageError(f"SYNCGATE_DEVICE={device!r}: expected one of {', '.join(DEVICES)}")
        return cls(
            device=device,
            report_dir=env.get("SYNCGATE_REPORT_DIR", "/reports"),
            ut_paths=tuple(env.get("SYNCGATE_UT_PATHS", "tests/ut").split()),
            image=env.get(IMAGE_ENV) or None,
        )


def env_header(settings: GateSettings) -> dict[str, object]:
    """The header's fields, from package metadata only (importing torch here would be slow)."""
    return header(image=settings.image, device=settings.device)


def job_argv(job: Sequence[str], settings: GateSettings) -> list[str]:
    """The command line the gate runs for ``job`` (the container's arguments)."""
    name, *rest = job or ["check"]
    if name == "check":
        return ["syncgate", "check", "--device", settings.device,
                "--report-dir", settings.report_dir, *rest]
    if name == "ut":
        junit = os.path.join(settings.report_dir, f"junit-ut-{settings.device}.xml")
        return [sys.executable, "-m", "pytest", *settings.ut_paths, f"--junitxml={junit}", *rest]
    return [name, *rest]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the header, then exec the job; returns only when the job cannot start."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = GateSettings.from_env(os.environ)
    except UsageError as exc:
        print(f"syncgate-gate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    command = job_argv(args, settings)
    if command[:2] != ["syncgate", "check"]:
        print(format_header(env_header(settings)), flush=True)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"syncgate-gate: error: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
