from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "repro"


@pytest.fixture
def repro_logs() -> Path:
    """CI log fixtures, all of one CI run of the synthetic suite."""
    return DATA / "logs"


@pytest.fixture
def suite_dir() -> Path:
    """The synthetic suite with known failure behaviour (files named case_*.py)."""
    return DATA / "suite"


@pytest.fixture
def suite_outcome(suite_dir, monkeypatch):
    """``(test name, probability, run index) -> failed?`` exactly as the synthetic suite draws it."""
    monkeypatch.syspath_prepend(str(suite_dir))
    import suite_chance

    def failed(name: str, probability: float, run: int) -> bool:
        monkeypatch.setenv("SYNCGATE_REPRO_RUN", str(run))
        return suite_chance.fails(name, probability)

    return failed


class FakeDockerEngine:
    """A Docker Engine API served over a unix socket, for the real ``docker`` package to talk to.

    Containers are records; ``exec`` really runs the command on this machine (the "container"
    shares the host's filesystem, like a bind mount), and ``archive`` really copies files. The
    SDK's own HTTP, exec-stream demultiplexing and tar code paths all run unmodified.
    """

    def __init__(self, socket_path):
        self.socket_path = socket_path
        self.containers = {}
        self.execs = {}
        self.images = set()

    def add_container(self, cid, service, workdir, env=()):
        self.containers[cid] = {
            "Id": cid, "Name": f"/proj-{service}-1", "State": {"Status": "running", "Running": True},
            "Config": {"Labels": {"com.docker.compose.service": service}, "Env": list(env),
                       "WorkingDir": str(workdir), "Image": "syncgate:cpu"},
            "Image": "sha256:feed",
        }


def _make_handler(engine):
    import base64
    import http.server
    import io
    import json
    import os
    import re
    import struct
    import subprocess
    import tarfile
    import time
    import urllib.parse

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status, body=b"", ctype="application/json", headers=()):
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _route(self):
            url = urllib.parse.urlsplit(self.path)
            path = re.sub(r"^/v[\d.]+", "", url.path)
            return path, urllib.parse.parse_qs(url.query)

        def _body(self):
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def do_HEAD(self):
            self._send(200)

        def do_GET(self):
            path, query = self._route()
            if path == "/_ping":
                return self._send(200, b"OK", "text/plain")
            if path == "/version":
                return self._send(200, {"ApiVersion": "1.41", "MinAPIVersion": "1.12",
                                        "Version": "fake", "Os": "linux", "Arch": "amd64"})
            if path == "/containers/json":
                filters = json.loads(query.get("filters", ["{}"])[0])
                out = []
                for c in engine.containers.values():
                    labels = c["Config"]["Labels"]
                    wanted = filters.get("label", [])
                    if all(labels.get(w.split("=", 1)[0]) == w.split("=", 1)[1] for w in wanted):
                        out.append({"Id": c["Id"], "Names": [c["Name"]], "Labels": labels,
                                    "State": "running", "Image": "syncgate:cpu"})
                return self._send(200, out)
            m = re.match(r"^/containers/([^/]+)/json$", path)
            if m:
                c = engine.containers.get(m.group(1))
                return self._send(200, c) if c else self._send(404, {"message": "no such"})
            m = re.match(r"^/images/(.+)/json$", path)
            if m:
                return self._send(404, {"message": f"No such image: {m.group(1)}"})
            m = re.match(r"^/exec/([^/]+)/json$", path)
            if m:
                e = engine.execs[m.group(1)]
                return self._send(200, {"ID": m.group(1), "Running": False,
                                        "ExitCode": e["exit_code"]})
            m = re.match(r"^/containers/([^/]+)/archive$", path)
            if m:
                target = query["path"][0]
                if not os.path.exists(target):
                    return self._send(404, {"message": f"Could not find the file {target}"})
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w") as tar:
                    tar.add(target, arcname=os.path.basename(target))
                stat = base64.b64encode(json.dumps(
                    {"name": os.path.basename(target), "size": os.path.getsize(target),
                     "mode": 0o644, "mtime": "2026-01-01T00:00:00Z", "linkTarget": ""}).encode())
                return self._send(200, buffer.getvalue(), "application/x-tar",
                                  [("X-Docker-Container-Path-Stat", stat.decode())])
            return self._send(404, {"message": f"fake engine: no GET {path}"})

        def do_PUT(self):
            path, query = self._route()
            m = re.match(r"^/containers/([^/]+)/archive$", path)
            if not m:
                return self._send(404, {"message": f"fake engine: no PUT {path}"})
            with tarfile.open(fileobj=io.BytesIO(self._body())) as tar:
                tar.extractall(query["path"][0], filter="data")
            return self._send(200)

        def do_POST(self):
            path, _query = self._route()
            body = self._body()
            m = re.match(r"^/containers/([^/]+)/exec$", path)
            if m:
                spec = json.loads(body)
                eid = f"exec{len(engine.execs)}"
                engine.execs[eid] = {"container": m.group(1), "spec": spec, "exit_code": None}
                return self._send(201, {"Id": eid})
            m = re.match(r"^/exec/([^/]+)/start$", path)
            if m:
                return self._start(engine.execs[m.group(1)])
            return self._send(404, {"message": f"fake engine: no POST {path}"})

        def _start(self, record):
            spec = record["spec"]
            container = engine.containers[record["container"]]
            self.wfile.write(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: "
                             b"application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
                             b"Upgrade: tcp\r\n\r\n")
            self.wfile.flush()
            time.sleep(0.05)  # the SDK reads the stream from the raw socket after the headers
            env = dict(os.environ)
            env.update(e.split("=", 1) for e in container["Config"]["Env"])
            env.update(e.split("=", 1) for e in spec.get("Env") or [])
            proc = subprocess.run(spec["Cmd"], cwd=spec.get("WorkingDir")
                                  or container["Config"]["WorkingDir"], env=env,
                                  capture_output=True, check=False)
            record["exit_code"] = proc.returncode
            for stream, data in ((1, proc.stdout), (2, proc.stderr)):
                if data:
                    self.wfile.write(struct.pack(">BxxxL", stream, len(data)) + data)
            self.wfile.flush()
            self.close_connection = True

    return Handler


@pytest.fixture
def fake_docker_engine(tmp_path_factory):
    """A fake Docker engine on a unix socket; yields the :class:`FakeDockerEngine` record."""
    import socketserver
    import threading

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    sock = tmp_path_factory.mktemp("docker") / "docker.sock"
    engine = FakeDockerEngine(sock)
    server = Server(str(sock), _make_handler(engine))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield engine
    server.shutdown()
    server.server_close()
