"""The launcher leaves nothing behind: normal stop, stubborn server, timeout, crash at start-up,
port in use, Ctrl-C, SIGTERM and a SIGKILLed launcher."""

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vllm_syncgate.errors import PortInUseError, ServerError, ServerStartError, ServerTimeoutError
from vllm_syncgate.serve.process import LOOPBACK, ensure_port_free, listening, tree


def test_healthy_server_tree_is_gone_after_stop(fake_server, gone):
    server = fake_server("healthy")
    server.start()
    time.sleep(0.5)
    pids = [p.pid for p in tree(server.pid)]
    assert len(pids) >= 3  # root, "EngineCore", "worker"
    assert server.healthy()
    server.stop()
    assert gone(pids, timeout=5) == []


def test_stubborn_server_is_killed(fake_server, gone):
    server = fake_server("stubborn", stop_timeout_s=1)
    server.start()
    time.sleep(0.5)
    pids = [p.pid for p in tree(server.pid)]
    server.stop()
    assert gone(pids, timeout=5) == []


def test_never_healthy_times_out_and_cleans_up(fake_server, gone):
    server = fake_server("never", startup_timeout_s=2)
    server.launch()
    time.sleep(0.5)
    pids = [p.pid for p in tree(server.pid)]
    with pytest.raises(ServerTimeoutError) as info:
        server.wait_healthy()
    assert "not healthy" in str(info.value)
    assert "\n" not in str(info.value)
    assert not server.alive()
    assert gone(pids, timeout=5) == []


def test_exit_during_startup_reports_the_log_line(fake_server):
    server = fake_server("exit")
    with pytest.raises(ServerStartError) as info:
        server.start()
    message = str(info.value)
    assert "exited with code 2 during start-up" in message
    assert "unrecognized arguments: --bogus-flag" in message
    assert "\n" not in message
    assert any("bogus" in line for line in info.value.log_tail)
    assert not server.alive()


def test_port_in_use_is_refused_before_starting(fake_server):
    with socket.socket() as busy:
        busy.bind((LOOPBACK, 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port}"):
            ensure_port_free(port)
        server = fake_server("healthy", port=port)
        with pytest.raises(PortInUseError):
            server.start()
        assert not server.alive()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "launcher-crash"])
def test_launcher_interrupted_or_killed_leaves_no_process(launch_driver, tmp_path, gone, how):
    driver, fake = launch_driver
    proc = subprocess.Popen([sys.executable, str(driver), str(fake), "healthy",
                             str(tmp_path / "server.log")], stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(proc.stdout.readline())
        pids, private = started["pids"], Path(started["private_dir"])
        assert len(pids) >= 3
        assert [p.name for p in private.iterdir()]  # the tree's IPC socket is there
        proc.send_signal(how)
        proc.wait(20)
        assert gone(pids, timeout=10) == []
        assert _gone(private)
    finally:
        proc.kill()
        proc.wait()


def test_killed_launcher_takes_a_server_that_ignores_sigterm_down(launch_driver, tmp_path, gone):
    """PDEATHSIG's SIGTERM is ignored by this server (vLLM's graceful shutdown can take 30 s);
    the reaper SIGKILLs its process group the moment the launcher is gone."""
    driver, fake = launch_driver
    proc = subprocess.Popen([sys.executable, str(driver), str(fake), "stubborn",
                             str(tmp_path / "server.log")], stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(proc.stdout.readline())
        proc.kill()
        proc.wait(20)
        assert gone(started["pids"], timeout=5) == []
        assert _gone(Path(started["private_dir"]))
    finally:
        proc.kill()
        proc.wait()


def test_a_server_listening_beyond_loopback_fails_and_is_stopped(fake_server, gone):
    server = fake_server("anyhost")
    with pytest.raises(ServerError, match=r"listens on 0\.0\.0\.0:\d+; syncgate serves on 127\.0\.0\.1"):
        server.start()
    assert not server.alive()


def test_a_loopback_server_passes_the_bind_check(fake_server):
    server = fake_server("healthy")
    server.start()
    assert ("127.0.0.1", server.port) in listening(server.pid)
    server.check_bind()


def test_launch_log_is_this_launchs_lines_only(fake_server, tmp_path):
    """The log is appended to; boot phases must not be read from an earlier run's lines."""
    server = fake_server("healthy")
    server.log_path.write_text("(EngineCore pid=1) an earlier run's line\n")
    server.start()
    text = server.launch_log()
    assert "fake server pid=" in text
    assert "earlier run" not in text
    assert "earlier run" in server.log_path.read_text()


def _gone(path: Path, timeout: float = 5.0) -> bool:
    """The reaper removes a killed launcher's folders just after its SIGKILL: allow it a moment."""
    deadline = time.monotonic() + timeout
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not path.exists()


def test_the_private_folder_and_its_sockets_go_with_the_server(fake_server, gone):
    """vLLM leaves its IPC sockets behind when its tree is killed; they live in a folder of the
    launch's own, removed at stop (without one they pile up in the temp dir)."""
    server = fake_server("stubborn", private_dir_env=["VLLM_RPC_BASE_PATH"], stop_timeout_s=1)
    server.start()
    private = server.private_dir
    assert private is not None
    assert private.parent == Path(tempfile.gettempdir())
    deadline = time.monotonic() + 5
    while not list(private.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p.is_socket() for p in private.iterdir()] == [True]
    server.stop()
    assert not private.exists()
    assert server.private_dir is None


def test_vllm_servers_get_a_private_temp_dir_but_keep_the_kernel_cache(tmp_path):
    from vllm_syncgate.serve.vllm import vllm_server

    server = vllm_server(tmp_path, [], env={}, log_path=tmp_path / "l", name="g")
    assert set(server.private_dir_env) == {"TMPDIR", "VLLM_RPC_BASE_PATH"}
    cache = Path(server.env["TORCHINDUCTOR_CACHE_DIR"])
    assert cache.parent == Path(tempfile.gettempdir())
    assert cache.name.startswith("torchinductor_")
    mine = vllm_server(tmp_path, [], env={"TORCHINDUCTOR_CACHE_DIR": "/c"}, log_path=tmp_path / "l",
                       name="g")
    assert mine.env["TORCHINDUCTOR_CACHE_DIR"] == "/c"  # the user's choice stands


def test_a_private_dir_is_short_enough_for_vllms_sockets_whatever_the_temp_dir(monkeypatch, tmp_path):
    """vLLM's IPC socket is <folder>/<36-char uuid>, and a unix socket path has at most 107
    bytes: under a long TMPDIR (a pytest tmp_path) the folder goes to /tmp instead, or vLLM
    cannot boot ("ipc path ... is longer than 107 characters")."""
    from vllm_syncgate.serve.process import PRIVATE_DIR_MAX, private_dir

    long_temp = tmp_path / ("t" * 60)
    long_temp.mkdir()
    for temp, expected_parent in ((long_temp, Path("/tmp")), (Path("/tmp"), Path("/tmp"))):
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        made = private_dir()
        try:
            assert made.parent == expected_parent
            assert len(str(made)) <= PRIVATE_DIR_MAX
            assert len(str(made)) + len("/12345678-1234-1234-1234-123456789012") <= 107
        finally:
            made.rmdir()
