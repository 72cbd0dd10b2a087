"""Build the CPU image and run a compose service on a local Docker engine, timed.

Used by the real container test (tests/e2e/test_container_cpu.py) and its benchmark. It follows
the registry-less recipe of ci/docker-up.sh: Debian's own docker client (BuildKit without buildx),
host networking for the build, the machine's torch wheel from the wheel server, the host CA
bundle as an optional build secret, and Debian's docker-compose v1 (or compose v2 where present).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from vllm_syncgate.errors import EnvironmentProblem

DEFAULT_STATE_DIR = Path("/tmp/syncgate-docker")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


@dataclass(frozen=True)
class Engine:
    """A Docker engine that answers, with the tools to build for and run on it."""

    docker: str
    compose: tuple[str, ...]
    build_env: Mapping[str, str]

    @classmethod
    def find(cls, state_dir: Path = DEFAULT_STATE_DIR) -> Engine:
        """The local engine, or :class:`EnvironmentProblem` saying what is missing."""
        docker = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else shutil.which("docker")
        if docker is None:
            raise EnvironmentProblem("no docker client (ci/docker-up.sh installs Debian's)")
        try:
            answered = subprocess.run([docker, "info"], capture_output=True, timeout=20,
                                      check=False).returncode == 0
        except subprocess.TimeoutExpired:
            answered = False
        if not answered:
            raise EnvironmentProblem("no Docker engine answers (start one with ci/docker-up.sh)")
        if subprocess.run([docker, "compose", "version"], capture_output=True,
                          check=False).returncode == 0:
            compose: tuple[str, ...] = (docker, "compose")
        elif shutil.which("docker-compose"):
            compose = ("docker-compose",)
        else:
            raise EnvironmentProblem("neither `docker compose` nor docker-compose is installed")
        build_env: dict[str, str] = {}
        env_file = state_dir / "env"
        if env_file.exists():
            for line in env_file.read_text(encoding="utf-8").splitlines():
                key, sep, value = line.partition("=")
                if sep:
                    build_env[key.strip()] = value.strip()
        return cls(docker=docker, compose=compose, build_env=build_env)

    def build(self, repo: Path, tag: str, *, dockerfile: str = "docker/Dockerfile.cpu",
              target: str | None = "runtime", no_cache: bool = False, log: Path,
              timeout_s: float = 1800) -> float:
        """Build ``tag``; returns the wall time. Output goes to ``log``."""
        args = [self.docker, "build", "--network", "host", "--force-rm", "-f", dockerfile,
                "-t", tag]
        if target:
            args += ["--target", target]
        if no_cache:
            args.append("--no-cache")
        wheels = self.build_env.get("SYNCGATE_WHEELS_URL")
        if wheels:
            args += ["--build-arg", f"PIP_FIND_LINKS={wheels}"]
        if CA_BUNDLE.exists():
            args += ["--secret", f"id=cabundle,src={CA_BUNDLE}"]
        return _timed([*args, "."], repo, {"DOCKER_BUILDKIT": "1"}, log, timeout_s)

    def image_size(self, tag: str) -> int:
        """Bytes of ``tag`` as the engine reports them."""
        out = subprocess.run([self.docker, "image", "inspect", "--format", "{{.Size}}", tag],
                             capture_output=True, text=True, check=True, timeout=60)
        return int(out.stdout.strip())

    def up(self, repo: Path, service: str, *, project: str, env: Mapping[str, str], log: Path,
           timeout_s: float = 900) -> tuple[int, float]:
        """``compose up --exit-code-from SERVICE`` of an already-built image.

        Returns the service's exit code and the wall time. Always pair with :meth:`down`.
        """
        args = [*self.compose, "-p", project, "up", "--no-build", "--exit-code-from", service,
                service]
        start = time.monotonic()
        code = _run(args, repo, env, log, timeout_s)
        return code, time.monotonic() - start

    def run(self, repo: Path, service: str, args: Sequence[str], *, project: str,
            env: Mapping[str, str], log: Path, timeout_s: float = 900) -> tuple[int, float]:
        """``compose run --rm SERVICE ARGS``: the service's container with other gate arguments.

        Returns the exit code and the wall time. Always pair with :meth:`down`.
        """
        start = time.monotonic()
        code = _run([*self.compose, "-p", project, "run", "--rm", service, *args], repo, env,
                    log, timeout_s)
        return code, time.monotonic() - start

    def up_scaled(self, repo: Path, service: str, replicas: int, *, project: str,
                  env: Mapping[str, str], log: Path, detach: bool = False,
                  timeout_s: float = 900) -> tuple[int, float]:
        """``compose up --scale SERVICE=N``: N replicas of one service (the repro shards).

        Attached, it returns when every replica has exited (compose's own exit code: 0 unless
        compose failed; each replica's is :meth:`exit_code`). Always pair with :meth:`down`.
        """
        args = [*self.compose, "-p", project, "up", "--no-build", "--scale",
                f"{service}={replicas}", *(["-d"] if detach else []), service]
        start = time.monotonic()
        code = _run(args, repo, env, log, timeout_s)
        return code, time.monotonic() - start

    def run_detached(self, repo: Path, service: str, args: Sequence[str], *, project: str,
                     env: Mapping[str, str], set_env: Mapping[str, str], log: Path) -> str:
        """``compose run -d -e K=V SERVICE ARGS``: one more container of the service with its own
        variables (one odd runner among the replicas); returns its name."""
        flags = [item for key, value in set_env.items() for item in ("-e", f"{key}={value}")]
        out = subprocess.run([*self.compose, "-p", project, "run", "-d", *flags, service, *args],
                             cwd=repo, env={**os.environ, **env}, capture_output=True, text=True,
                             timeout=120, check=False)
        with log.open("a", encoding="utf-8") as sink:
            sink.write(out.stdout + out.stderr)
        if out.returncode != 0 or not out.stdout.strip():
            raise EnvironmentProblem(f"compose run -d {service} failed: {out.stderr.strip()}")
        return out.stdout.strip().splitlines()[-1]

    def containers(self, project: str, service: str) -> list[str]:
        """Ids of the project's containers of ``service``, running or exited."""
        out = subprocess.run([self.docker, "ps", "-a", "-q", "--no-trunc",
                              "--filter", f"label=com.docker.compose.project={project}",
                              "--filter", f"label=com.docker.compose.service={service}"],
                             capture_output=True, text=True, check=True, timeout=60)
        return out.stdout.split()

    def exit_code(self, container: str, timeout_s: float = 900) -> int:
        """Wait for ``container`` to exit; its exit code."""
        out = subprocess.run([self.docker, "wait", container], capture_output=True, text=True,
                             check=True, timeout=timeout_s)
        return int(out.stdout.strip())

    def timestamps(self, container: str) -> dict[str, float]:
        """When the engine created, started and finished ``container``, in epoch seconds."""
        out = subprocess.run([self.docker, "inspect", "--format",
                              "{{.Created}} {{.State.StartedAt}} {{.State.FinishedAt}}",
                              container], capture_output=True, text=True, check=True, timeout=60)
        keys = ("created", "started", "finished")
        return {k: _epoch(v) for k, v in zip(keys, out.stdout.split(), strict=True)}

    def processes(self, container: str) -> str:
        """``docker top``: the command lines running in ``container`` ('' once it has exited)."""
        out = subprocess.run([self.docker, "top", container], capture_output=True, text=True,
                             check=False, timeout=60)
        return out.stdout if out.returncode == 0 else ""

    def kill(self, container: str) -> None:
        """SIGKILL: a runner lost mid-job, nothing flushed."""
        subprocess.run([self.docker, "kill", container], capture_output=True, check=True,
                       timeout=60)

    def down(self, repo: Path, *, project: str, env: Mapping[str, str], log: Path) -> None:
        """Remove the project's containers, network and volumes (never images)."""
        _run([*self.compose, "-p", project, "down", "--volumes", "--remove-orphans",
              "--timeout", "10"], repo, env, log, 120)


def _epoch(stamp: str) -> float:
    """Docker's RFC 3339 time with nanoseconds (``2026-12-01T11:30:00.123456789Z``) as epoch s."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp() + float(f"0.{frac or 0}")


def _run(args: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path,
         timeout_s: float) -> int:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        try:
            return subprocess.run(list(args), cwd=cwd, env={**os.environ, **env}, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout_s,
                                  check=False).returncode
        except subprocess.TimeoutExpired as exc:
            raise EnvironmentProblem(f"{args[0]} {args[1]} took over {timeout_s:.0f} s "
                                     f"(log: {log})") from exc


def _timed(args: Sequence[str], cwd: Path, env: Mapping[str, str], log: Path,
           timeout_s: float) -> float:
    start = time.monotonic()
    code = _run(args, cwd, env, log, timeout_s)
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-5:]
        raise EnvironmentProblem(f"docker build failed with exit code {code}: "
                                 f"{' | '.join(tail)} (log: {log})")
    return time.monotonic() - start
