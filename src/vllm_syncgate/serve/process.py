"""A server child process whose whole tree dies with it.

``vllm serve`` forks an EngineCore, which spawns a worker; when the API server dies first those
are reparented to init and keep the CPU (and an accelerator) busy. So the child starts in its own
session (its process group names every descendant that did not leave it), asks the kernel to
SIGTERM it if syncgate dies (``PR_SET_PDEATHSIG``), a :class:`~vllm_syncgate.lifeline.Reaper` SIGKILLs
its group if syncgate is killed outright, and teardown snapshots the tree with psutil before
signalling, so reparented grandchildren are still found.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import psutil
import requests

from vllm_syncgate.errors import PortInUseError, ServerError, ServerStartError, ServerTimeoutError
from vllm_syncgate.lifeline import Reaper, die_with_parent

LOOPBACK = "127.0.0.1"
_ERROR_LINE = re.compile(r"error|exception|traceback", re.IGNORECASE)

Progress = Callable[[float], None]


_handed_out: set[int] = set()


def free_port(host: str = LOOPBACK) -> int:
    """A port nobody listens on now and this process has not handed out before.

    Remembering earlier answers matters when several servers are launched before any has bound.
    """
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def ensure_port_free(port: int, host: str = LOOPBACK) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            raise PortInUseError(f"port {port} on {host} is already in use") from None


def tree(pid: int) -> list[psutil.Process]:
    """``pid``, its descendants and every process left in its process group, zombies excluded."""
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        found[root.pid] = root
        for child in root.children(recursive=True):
            found[child.pid] = child
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) == pid:
                found.setdefault(proc.pid, proc)
    return [p for p in found.values() if _running(p)]


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def listening(pid: int) -> list[tuple[str, int]]:
    """``(address, port)`` of every TCP socket the tree of ``pid`` listens on."""
    found = set()
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr:
                    found.add((conn.laddr.ip, conn.laddr.port))
    return sorted(found)


def tree_rss(pid: int) -> int:
    """Resident memory of the whole tree in bytes (``/usr/bin/time`` sees only the root)."""
    total = 0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


# A unix socket's path has at most 107 bytes and vLLM names its IPC sockets by a 36-character
# uuid, so a folder holding them must be at most 70 bytes long.
PRIVATE_DIR_MAX = 70


def private_dir() -> Path:
    """A new folder for one server tree's temp files: in the temp dir, or in ``/tmp`` when the
    temp dir's path is too long for the sockets the tree makes there (a test's ``TMPDIR``)."""
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + len(b"/sg-12345678") > PRIVATE_DIR_MAX and os.path.isdir("/tmp"):
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="sg-", dir=base))


def log_tail(path: Path, lines: int = 20) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]


def _headline(tail: Sequence[str]) -> str:
    """The most telling log line: the last one that looks like an error, else the last one."""
    for line in reversed(tail):
        if _ERROR_LINE.search(line) and "Traceback" not in line:
            return line.strip()
    return tail[-1].strip() if tail else "(empty log)"


class ManagedServer:
    """A child process that serves HTTP on ``port``; use as a context manager.

    ``argv`` must make the child listen on ``port`` (the caller put it there); ``health_path``
    must answer 200 once it is ready.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        port: int,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        name: str = "server",
        health_path: str = "/health",
        startup_timeout_s: float = 240.0,
        stop_timeout_s: float = 15.0,
        private_dir_env: Sequence[str] = (),
    ) -> None:
        self.argv = list(argv)
        self.port = port
        self.log_path = Path(log_path)
        self.env = dict(os.environ if env is None else env)
        self.name = name
        self.health_url = f"http://{LOOPBACK}:{port}{health_path}"
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._reaper: Reaper | None = None
        self._launched = 0.0
        self._log_offset = 0  # the log is appended to; this launch's lines start here
        self.startup_s: float | None = None
        # a directory of its own per launch, named to the child by these variables and removed
        # at stop: what a killed tree leaves there (unix sockets, rendezvous files) goes with it
        self.private_dir_env = tuple(private_dir_env)
        self.private_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise ServerError(f"server {self.name!r} is not running")
        return self._proc.pid

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, progress: Progress | None = None) -> float:
        """Launch and wait for health; on any failure nothing is left running."""
        self.launch()
        return self.wait_healthy(progress)

    def launch(self) -> None:
        """Start the child without waiting, so several servers can boot side by side."""
        ensure_port_free(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._launched = time.monotonic()
        self.startup_s = None
        env = self.env
        if self.private_dir_env:
            self.private_dir = private_dir()
            env = {**env, **dict.fromkeys(self.private_dir_env, str(self.private_dir))}
        try:
            with open(self.log_path, "ab") as log:
                self._log_offset = log.tell()
                self._proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
        except BaseException:
            self._remove_private_dir()
            raise
        self._reaper = Reaper(self._proc.pid, [self.private_dir] if self.private_dir else [])

    def wait_healthy(self, progress: Progress | None = None) -> float:
        """Block until ``/health`` answers 200; returns seconds since launch."""
        while not self.ready(progress):
            time.sleep(0.5)
        assert self.startup_s is not None
        return self.startup_s

    def ready(self, progress: Progress | None = None) -> bool:
        """One look without blocking: healthy (and bound to loopback only) or still booting.

        A server that died or ran out of start-up time is stopped and raised here, so several
        booting servers can be watched in turn.
        """
        if self.startup_s is not None:
            return True
        try:
            healthy = self._look(progress)
            if healthy:
                self.check_bind()
        except BaseException:
            self.stop()
            raise
        if healthy:
            self.startup_s = time.monotonic() - self._launched
        return healthy

    def _look(self, progress: Progress | None) -> bool:
        if self._proc is None:
            raise ServerError(f"server {self.name!r} is not running")
        code = self._proc.poll()
        if code is not None:
            error = ServerStartError(self._death_message(f"exited with code {code} during start-up"))
            error.log_tail = self.tail()  # type: ignore[attr-defined]
            raise error
        if self.healthy():
            return True
        now = time.monotonic()
        if now >= self._launched + self.startup_timeout_s:
            raise ServerTimeoutError(
                f"server {self.name!r} not healthy at {self.health_url} after "
                f"{self.startup_timeout_s:.0f} s (log: {self.log_path})"
            )
        if progress is not None:
            progress(now - self._launched)
        return False

    def check_bind(self) -> None:
        """Fail unless every socket the tree listens on is a loopback address.

        Profiles cannot set ``--host`` (:mod:`vllm_syncgate.serve.flags`); this catches whatever
        else could make a server reachable from the network.
        """
        for ip, port in listening(self.pid):
            if not ipaddress.ip_address(ip.split("%", 1)[0]).is_loopback:
                raise ServerError(f"server {self.name!r} listens on {ip}:{port}; syncgate serves "
                                  f"on {LOOPBACK} only (log: {self.log_path})")

    def healthy(self) -> bool:
        try:
            return requests.get(self.health_url, timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def check_alive(self) -> None:
        """Raise with the log's telling line if the server died after start-up."""
        if self._proc is not None and self._proc.poll() is not None:
            error = ServerError(self._death_message(f"exited with code {self._proc.returncode}"))
            error.log_tail = self.tail()  # type: ignore[attr-defined]
            raise error

    def _death_message(self, what: str) -> str:
        return f"server {self.name!r} {what}: {_headline(self.tail())} (log: {self.log_path})"

    def tail(self, lines: int = 20) -> list[str]:
        return log_tail(self.log_path, lines)

    def launch_log(self, limit: int = 1 << 20) -> str:
        """What this launch has logged so far (its first ``limit`` bytes): boot phase markers."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._log_offset)
                return fh.read(limit).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM the root, give vLLM its graceful shutdown, then SIGKILL whatever is left."""
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        members = tree(proc.pid)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(self.stop_timeout_s)
        survivors = [p for p in members + tree(proc.pid) if _running(p)]
        for member in survivors:
            with contextlib.suppress(psutil.Error):
                member.terminate()
        _, alive = psutil.wait_procs(survivors, timeout=3)
        for member in alive:
            with contextlib.suppress(psutil.Error):
                member.kill()
        psutil.wait_procs(alive, timeout=3)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(3)
        if self._reaper is not None:
            self._reaper.release()
            self._reaper = None
        self._remove_private_dir()

    def _remove_private_dir(self) -> None:
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)
            self.private_dir = None

    def __enter__(self) -> ManagedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
