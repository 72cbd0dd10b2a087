import sys
import time
from pathlib import Path

import psutil
import pytest

from vllm_syncgate.serve.process import ManagedServer, free_port

DATA = Path(__file__).resolve().parents[2] / "data" / "serve"


@pytest.fixture
def fake_server(tmp_path):
    """Factory: a ManagedServer over tests/data/serve/fake_server.py in the given mode."""
    made = []

    def make(mode, **kwargs):
        port = kwargs.pop("port", None) or free_port()
        server = ManagedServer([sys.executable, str(DATA / "fake_server.py"), str(port), mode],
                               port=port, log_path=tmp_path / f"{mode}.log", name=f"fake-{mode}",
                               **kwargs)
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


@pytest.fixture
def launch_driver():
    return DATA / "launch_driver.py", DATA / "fake_server.py"


def running(pids):
    """The pids that are still alive and not zombies."""
    alive = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def wait_gone(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running(pids)


@pytest.fixture
def gone():
    return wait_gone
