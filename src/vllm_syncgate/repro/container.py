"""``--in SERVICE``: rerun inside a compose service's container (or a throwaway one from an image).

Driven through the Docker SDK for Python, so it works against any engine the SDK reaches
(``DOCKER_HOST``, the default socket). A running container labelled
``com.docker.compose.service=SERVICE`` (compose v1 and v2 both set it) is used as is; otherwise
SERVICE is taken as an image name and a container is started from it and removed afterwards.

The rerun plugin is copied in (``put_archive``) with the plan, so the image needs pytest but not
syncgate; results come back with ``get_archive``. Commands are argv lists; node ids reach the
container only as arguments, never through a shell.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import uuid
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ContainerError, RerunError
from vllm_syncgate.repro.runner import PytestResult, read_records

COMPOSE_LABEL = "com.docker.compose.service"
PLUGIN_NAME = "syncgate_repro_plugin"
_EXISTS = "import os,sys\nfor p in sys.argv[1:]:\n    os.path.exists(p) and print(p)"
_CONFIGS = ("import json,os,sys\nout={}\nfor p in sys.argv[1:]:\n    if os.path.isfile(p):\n"
            "        with open(p,encoding='utf-8',errors='replace') as f: out[p]=f.read(1<<20)\n"
            "print(json.dumps(out))")
_HAS_MODULE = "import importlib.util,sys\nsys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
# Record the pytest pid so an interrupted rerun can be killed inside the container; "$@" keeps
# every argument a separate word, so no node id is ever parsed by the shell.
_LAUNCH = 'echo $$ > "$0/pid"; exec "$@"'
_KILL = 'kill -TERM "$(cat "$0/pid")" 2>/dev/null; sleep 1; kill -KILL "$(cat "$0/pid")" 2>/dev/null'


def _docker() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise ContainerError("--in needs the Docker SDK for Python: pip install "
                             "'vllm-syncgate[repro]'") from exc
    return docker


class DockerRunner:
    """Runs pytest inside one container through the Docker engine API."""

    concurrent = False  # one exec at a time: the SDK client is not shared across threads here

    def __init__(self, client: Any, container: Any, owned: bool, workdir: str | None,
                 python: str, timeout: float | None, description: str) -> None:
        self.client = client
        self.container = container
        self.owned = owned
        self.workdir = workdir
        self.python = python
        self.timeout = timeout
        self.description = description

    @classmethod
    def connect(cls, service: str, workdir: str | None = None, python: str = "python3",
                timeout: float | None = None, client: Any = None) -> DockerRunner:
        """Find the service's running container, or start one from the image ``service``."""
        docker = _docker()
        try:
            client = client or docker.from_env()
            client.ping()
        except (docker.errors.DockerException, OSError) as exc:  # requests errors are OSErrors
            raise ContainerError(f"--in {service}: Docker engine not reachable ({exc})") from exc
        try:
            running = client.containers.list(filters={"label": f"{COMPOSE_LABEL}={service}",
                                                      "status": "running"})
            if running:
                container = running[0]
                return cls(client, container, False, workdir, python, timeout,
                           f"container {container.name} (compose service {service})")
            try:
                image = client.images.get(service)
            except docker.errors.ImageNotFound:
                services = sorted({c.labels.get(COMPOSE_LABEL) for c in client.containers.list()
                                   if c.labels.get(COMPOSE_LABEL)})
                known = ", ".join(services) or "none"
                raise ContainerError(f"--in {service}: no running compose service and no image "
                                     f"of that name (running services: {known})") from None
            container = client.containers.run(image, ["sleep", "infinity"], detach=True,
                                              working_dir=workdir, network_mode="host",
                                              labels={"syncgate.repro": "1"})
        except docker.errors.APIError as exc:
            raise ContainerError(f"--in {service}: Docker engine refused: "
                                 f"{exc.explanation or exc}") from exc
        return cls(client, container, True, workdir, python, timeout,
                   f"container {container.short_id} (image {service})")

    # -- Runner protocol ---------------------------------------------------------------------
    def has_module(self, name: str) -> bool:
        code, _ = self._exec([self.python, "-c", _HAS_MODULE, name])
        return code == 0

    def existing(self, paths: list[str]) -> set[str]:
        code, out = self._exec([self.python, "-c", _EXISTS, *paths])
        if code != 0:
            raise ContainerError(f"{self.description}: cannot run {self.python}: "
                                 f"{out.strip()[-200:]}")
        return set(out.splitlines()) & set(paths)

    def config_texts(self, names: tuple[str, ...]) -> dict[str, str]:
        code, out = self._exec([self.python, "-c", _CONFIGS, *names])
        try:
            texts = json.loads(out) if code == 0 else {}
        except ValueError:
            texts = {}
        return {k: v for k, v in texts.items() if k in names and isinstance(v, str)}

    def pytest(self, args: list[str], plan: dict[str, Any] | None = None) -> PytestResult:
        stage = f"/tmp/syncgate-repro-{uuid.uuid4().hex[:12]}"
        files = {}
        env = {}
        argv = [self.python, "-m", "pytest"]
        if plan is not None:
            from vllm_syncgate.repro import rerun_plugin  # imports pytest: only when rerunning

            plan = {**plan, "results": f"{stage}/results.jsonl",
                    "settled": f"{stage}/settled.txt" if plan.get("early_stop") else None}
            files[f"{PLUGIN_NAME}.py"] = Path(rerun_plugin.__file__).read_bytes()
            files["plan.json"] = json.dumps(plan).encode()
            env = {"PYTHONPATH": self._pythonpath(stage),
                   rerun_plugin.PLAN_ENV: f"{stage}/plan.json"}
            argv += ["-p", PLUGIN_NAME]
        self._stage(stage, files)
        launch = ["sh", "-c", _LAUNCH, stage]
        if self.timeout:
            launch += ["timeout", "-s", "KILL", str(int(self.timeout))]
        try:
            code, output = self._exec([*launch, *argv, *args], env)
            if self.timeout and code in (124, 137):
                raise RerunError(f"pytest in {self.description} ran past {self.timeout:.0f}s "
                                 "and was killed")
            records = read_records(self._get(f"{stage}/results.jsonl")) if plan else []
        except BaseException:
            self._quietly(["sh", "-c", _KILL, stage])
            raise
        finally:
            self._quietly(["rm", "-rf", stage])
        return PytestResult(code, output, records)

    def close(self) -> None:
        """Remove the container if this runner started it."""
        if self.owned:
            try:
                self.container.remove(force=True)
            except _docker().errors.APIError:
                pass

    # -- plumbing ----------------------------------------------------------------------------
    def _quietly(self, cmd: list[str]) -> None:
        """Best-effort cleanup: a failure here must not hide the error being handled."""
        with contextlib.suppress(ContainerError):
            self._exec(cmd)

    def _pythonpath(self, stage: str) -> str:
        env = (self.container.attrs.get("Config") or {}).get("Env") or []
        current = next((e.split("=", 1)[1] for e in env if e.startswith("PYTHONPATH=")), "")
        return f"{stage}:{current}" if current else stage

    def _exec(self, cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
        docker = _docker()
        try:
            result = self.container.exec_run(cmd, environment=env or None, workdir=self.workdir,
                                             demux=False)
        except docker.errors.APIError as exc:
            raise ContainerError(f"{self.description}: exec failed: "
                                 f"{exc.explanation or exc}") from exc
        output = (result.output or b"").decode("utf-8", errors="replace")
        return int(result.exit_code if result.exit_code is not None else -1), output

    def _stage(self, directory: str, files: dict[str, bytes]) -> None:
        """Make ``directory`` as the container's own user (so pytest can write results there),
        then copy ``files`` in, readable by that user."""
        code, out = self._exec(["mkdir", "-m", "700", directory])
        if code != 0:
            raise ContainerError(f"{self.description}: cannot create {directory}: {out.strip()}")
        if not files:
            return
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive(directory, buffer.getvalue()):
            raise ContainerError(f"{self.description}: could not copy the rerun plan in")

    def _get(self, path: str) -> str:
        docker = _docker()
        try:
            stream, _stat = self.container.get_archive(path)
        except docker.errors.NotFound:
            return ""
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            handle = tar.extractfile(member) if member is not None else None
            return handle.read().decode("utf-8", errors="replace") if handle else ""
