"""Range reads of a remote wheel: only the wanted members come, each CRC-checked, in a few
requests; a server that ignores ranges or a corrupted member is an error, not a bad tree."""

from __future__ import annotations

import io
import random
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.release_files import ReleaseFile, fetch_members, tree_digest

WANTED = {"pkg/v1/worker/runner.py": "def step(x):\n    return x.item()\n",
          "pkg/v1/worker/sub/helper.py": "VALUE = 1\n",
          "pkg/v1/outputs.py": "class Out: ...\n"}
UNWANTED = {"pkg/other.py": b"x = 2\n", "pkg/v1/worker/data.bin": b"binary",
            "pkg/big.so": random.Random(0).randbytes(3_000_000)}  # incompressible


def _wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in {**UNWANTED, **WANTED}.items():
            archive.writestr(name, text)
    return buffer.getvalue()


class _Server:
    def __init__(self, payload: bytes, ranges: bool = True) -> None:
        self.payload, self.ranges, self.requests, self.sent = payload, ranges, 0, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                body, status = server.payload, 200
                spec = self.headers.get("Range")
                if spec and server.ranges:
                    first, _, last = spec.removeprefix("bytes=").partition("-")
                    end = int(last) + 1 if last else len(body)
                    body, status = body[int(first):end], 206
                server.sent += len(body)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/pkg-1.0-py3-none-any.whl"


@pytest.fixture
def serve() -> Iterator:
    servers: list[_Server] = []

    def start(payload: bytes, ranges: bool = True) -> _Server:
        server = _Server(payload, ranges)
        server.thread.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.httpd.shutdown()
        server.httpd.server_close()


def _release(server: _Server) -> ReleaseFile:
    return ReleaseFile("pkg", "1.0", "pkg-1.0-py3-none-any.whl", server.url, "",
                       len(server.payload))


def test_only_the_wanted_sources_come_in_few_requests(serve, tmp_path: Path):
    server = serve(_wheel())
    root = fetch_members(_release(server), ["pkg/v1/worker/", "pkg/v1/outputs.py"], tmp_path / "t")
    got = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
    assert got == WANTED
    assert server.requests <= 3  # the directory, then one run of adjacent members
    assert server.sent < len(server.payload) / 10  # the 3 MB member never travels
    assert tree_digest(root) != tree_digest(tmp_path)


def test_a_cached_tree_is_reused(serve, tmp_path: Path):
    server = serve(_wheel())
    fetch_members(_release(server), ["pkg/v1/outputs.py"], tmp_path / "t")
    before = server.requests
    fetch_members(_release(server), ["pkg/v1/outputs.py"], tmp_path / "t")
    assert server.requests == before


def test_a_server_without_ranges_is_refused(serve, tmp_path: Path):
    server = serve(_wheel(), ranges=False)
    with pytest.raises(EnvironmentProblem, match="ignores range requests"):
        fetch_members(_release(server), ["pkg/v1/worker/"], tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_a_corrupted_member_is_refused(serve, tmp_path: Path):
    payload = bytearray(_wheel())
    at = payload.find(b"def step")
    if at < 0:  # deflated: flip a byte inside the member's compressed data instead
        with zipfile.ZipFile(io.BytesIO(bytes(payload))) as archive:
            info = archive.getinfo("pkg/v1/worker/runner.py")
        at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
    payload[at] ^= 0xFF
    server = serve(bytes(payload))
    with pytest.raises(EnvironmentProblem):
        fetch_members(_release(server), ["pkg/v1/worker/"], tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_nothing_wanted_is_an_error(serve, tmp_path: Path):
    server = serve(_wheel())
    with pytest.raises(EnvironmentProblem, match="nothing under"):
        fetch_members(_release(server), ["elsewhere/"], tmp_path / "t")
