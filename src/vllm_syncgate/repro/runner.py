"""Where reruns execute: a local pytest subprocess (this module) or a container (container.py).

A runner only knows how to run ``python -m pytest ARGS`` with a rerun plan and hand back the
plugin's JSON records; the engine decides what to run. Arguments are always an argv list, never
a shell string, and the pytest process tree is killed as a whole on timeout, Ctrl-C, SIGTERM,
SIGHUP or error, and by a :class:`~vllm_syncgate.lifeline.Reaper` if syncgate itself is SIGKILLed. Its
temp dir carries syncgate's pid, so one left by a killed syncgate is removed at the next start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vllm_syncgate.errors import RerunError
from vllm_syncgate.lifeline import Reaper, die_with_parent
from vllm_syncgate.safeio import read_regular

PLUGIN_MODULE = "vllm_syncgate.repro.rerun_plugin"
TEMP_PREFIX = "syncgate-repro-"
CONFIG_BYTES = 1 << 20  # a pytest config file larger than this is ignored
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-")


@dataclass
class PytestResult:
    """What one pytest session returned: its exit code, output, and the plugin's records."""

    exit_code: int
    output: str
    records: list[dict[str, Any]] = field(default_factory=list)


class Runner(Protocol):
    """Runs pytest somewhere that has the project's test tree as its working directory."""

    description: str
    concurrent: bool  # may several pytest sessions run at once (replay parallelism)

    def pytest(self, args: list[str], plan: dict[str, Any] | None = None) -> PytestResult:
        """Run ``python -m pytest *args``; with a plan, load the rerun plugin and return records."""

    def has_module(self, name: str) -> bool:
        """Whether the runner's Python can import ``name`` (xdist, pytest_randomly)."""

    def existing(self, paths: list[str]) -> set[str]:
        """The subset of relative ``paths`` that exist in the runner's working directory."""

    def config_texts(self, names: tuple[str, ...]) -> dict[str, str]:
        """The text of each of ``names`` that is a regular file at the tree's root."""


def read_records(text: str) -> list[dict[str, Any]]:
    """Parse the plugin's JSONL results (a half-written last line is dropped)."""
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def check_exit(result: PytestResult, where: str) -> PytestResult:
    """pytest exit codes 3 (internal error) and 4 (usage error) mean the session itself broke."""
    if result.exit_code in (3, 4):
        tail = " | ".join(line for line in result.output.strip().splitlines()[-3:] if line)
        raise RerunError(f"pytest in {where} exited with code {result.exit_code}: {tail}")
    return result


class LocalRunner:
    """pytest in a subprocess of this machine's Python, in ``rootdir``."""

    def __init__(self, rootdir: Path, python: str = sys.executable,
                 timeout: float | None = None) -> None:
        self.rootdir = rootdir
        self.python = python
        self.timeout = timeout
        self.description = f"local {rootdir}"
        self.concurrent = True

    def has_module(self, name: str) -> bool:
        return importlib.util.find_spec(name) is not None

    def existing(self, paths: list[str]) -> set[str]:
        return {p for p in paths if (self.rootdir / p).exists()}

    def config_texts(self, names: tuple[str, ...]) -> dict[str, str]:
        texts = {}
        for name in names:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                texts[name] = read_regular(self.rootdir / name, CONFIG_BYTES).decode("utf-8")
        return texts

    def pytest(self, args: list[str], plan: dict[str, Any] | None = None) -> PytestResult:
        with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
            env = dict(os.environ)
            # always loaded: it sets PDEATHSIG in the session and in every xdist worker; pytest's
            # own temp dirs go inside ours, so they go with it
            argv = [self.python, "-m", "pytest", "-p", PLUGIN_MODULE,
                    f"--basetemp={Path(tmp, 'basetemp')}"]
            if plan is not None:
                plan = {**plan, "results": str(Path(tmp, "results.jsonl")),
                        "settled": str(Path(tmp, "settled.txt")) if plan.get("early_stop")
                        else None}
                Path(tmp, "plan.json").write_text(json.dumps(plan), encoding="utf-8")
                Path(plan["results"]).touch()
                from vllm_syncgate.repro import rerun_plugin  # imports pytest: only when rerunning

                env[rerun_plugin.PLAN_ENV] = str(Path(tmp, "plan.json"))
            output_path = Path(tmp, "output.txt")
            with output_path.open("wb") as output:
                code = run_tree([*argv, *args], self.rootdir, env, output, self.timeout)
            text = output_path.read_text(encoding="utf-8", errors="replace")
            records = (read_records(Path(plan["results"]).read_text(encoding="utf-8"))
                       if plan is not None else [])
        return PytestResult(code, text, records)


def run_tree(argv: list[str], cwd: Path, env: dict[str, str], output: Any,
             timeout: float | None) -> int:
    """Run ``argv`` in its own process group; kill the whole group on any way out but success."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=lambda: die_with_parent(signal.SIGKILL))
    reaper = Reaper(process.pid)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RerunError(f"pytest in {cwd} ran past {timeout:.0f}s and was killed") from exc
    finally:
        if process.poll() is None or _group_alive(process.pid):
            _kill_group(process)
        reaper.release()


def remove_stale_temp_dirs(root: str | None = None) -> list[Path]:
    """Remove ``syncgate-repro-<pid>-*`` dirs whose syncgate is gone (it was SIGKILLed)."""
    removed = []
    base = Path(root or tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for path in base.iterdir():
            match = _TEMP_NAME.match(path.name)
            if (match and path.is_dir() and not path.is_symlink()
                    and path.stat().st_uid == os.getuid() and not _pid_alive(int(match.group(1)))):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=5)
            if not _group_alive(process.pid):
                break
        except subprocess.TimeoutExpired:
            continue
