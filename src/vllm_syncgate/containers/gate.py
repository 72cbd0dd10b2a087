"""The gate every syncgate image runs: print the environment header, then become one job.

A CI log is only reproducible if it says where it ran, so the header (the line ``syncgate repro``
reads back) is printed before anything can fail. ``syncgate check -v`` prints its own, fuller one
(flags, seed, model) as its first line, so for that job the gate leaves it to check: one header
per run, never two that disagree. The job then replaces this process
(``os.execvp``): its exit code is the container's, which is what
``docker compose up --exit-code-from SERVICE`` propagates to the CI runner.

Jobs: ``check [ARGS]`` runs ``syncgate check`` for the image's device into the report dir (only
the server groups of ``$SYNCGATE_GROUPS`` when set: several runners share one gate, and
``syncgate check merge`` joins their report dirs);
``ut [ARGS]`` runs the unit level under pytest with a JUnit file in the report dir;
``repro-shard LOG [ARGS]`` runs one shard of ``syncgate repro LOG`` (see :func:`claim_shard`);
anything else is run as given (a shell, ``syncgate repro ...``).
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllm_syncgate.environment import IMAGE_ENV, format_header, header
from vllm_syncgate.errors import EXIT_USAGE, UsageError
from vllm_syncgate.profiles import DEVICES

#: The shell's code for "command not found", so a typo'd job reads the same as in a shell.
EXIT_NOT_FOUND = 127
#: Where the replicas of a scaled shard service claim their index, under the shared report dir.
CLAIMS = ".shard-claims"


@dataclass(frozen=True)
class GateSettings:
    """What the image's environment says about this run (``SYNCGATE_*`` variables)."""

    device: str
    report_dir: str
    ut_paths: tuple[str, ...]
    image: str | None
    groups: str | None = None  # NAME[,NAME]: this runner's share of the profile's server groups
    shard_count: int | None = None  # replicas of a scaled repro-shard service

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
            groups=env.get("SYNCGATE_GROUPS") or None,
            shard_count=_count(env.get("SYNCGATE_SHARD_COUNT")),
        )


def _count(text: str | None) -> int | None:
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise UsageError(f"SYNCGATE_SHARD_COUNT={text!r}: expected a whole number >= 1")
    return int(text)


def claim_shard(report_dir: str, count: int, owner: str) -> int:
    """The first shard index (1-based) no other replica has claimed, claimed for ``owner``.

    ``docker compose up --scale SERVICE=N`` starts N identical containers and tells none its
    index; they share the report dir, so each takes the first free ``CLAIMS/I`` file (created
    exclusively: two replicas cannot both win it). Use a fresh report dir per run.
    """
    claims = os.path.join(report_dir, CLAIMS)
    os.makedirs(claims, exist_ok=True)
    for index in range(1, count + 1):
        try:
            fd = os.open(os.path.join(claims, str(index)), os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                         0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(owner + "\n")
        return index
    raise UsageError(f"{claims}: all {count} shard indices are claimed (a fresh report dir "
                     "per run, or a larger SYNCGATE_SHARD_COUNT)")


def env_header(settings: GateSettings) -> dict[str, object]:
    """The header's fields, from package metadata only (importing torch here would be slow)."""
    return header(image=settings.image, device=settings.device)


def job_argv(job: Sequence[str], settings: GateSettings) -> list[str]:
    """The command line the gate runs for ``job`` (the container's arguments)."""
    name, *rest = job or ["check"]
    if name == "check":
        groups = [] if settings.groups is None else ["--groups", settings.groups]
        return ["syncgate", "check", "-v", "--device", settings.device,
                "--report-dir", settings.report_dir, *groups, *rest]
    if name == "repro-shard":
        if settings.shard_count is None or not rest:
            raise UsageError("repro-shard LOG [ARGS]: needs the log and SYNCGATE_SHARD_COUNT")
        index = claim_shard(settings.report_dir, settings.shard_count, socket.gethostname())
        return ["syncgate", "repro", rest[0], "--shard", f"{index}/{settings.shard_count}",
                "--report-dir", settings.report_dir, *rest[1:]]
    if name == "ut":
        junit = os.path.join(settings.report_dir, f"junit-ut-{settings.device}.xml")
        return [sys.executable, "-m", "pytest", *settings.ut_paths, f"--junitxml={junit}", *rest]
    return [name, *rest]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the header, then exec the job; returns only when the job cannot start."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = GateSettings.from_env(os.environ)
        command = job_argv(args, settings)
    except UsageError as exc:
        print(f"syncgate-gate: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if command[:2] != ["syncgate", "check"]:
        print(format_header(env_header(settings)), flush=True)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"syncgate-gate: error: cannot run {command[0]!r}: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
