"""A stand-in for `vllm serve` in launcher tests: same process shape, instant start-up.

Usage: fake_server.py PORT MODE, MODE one of
  healthy  - serve /health 200 after spawning a child that spawns a grandchild (like vLLM's
             API server -> EngineCore -> worker); on SIGTERM kill the children and exit
  never    - serve /health 503 forever (never becomes healthy)
  exit     - print an argparse-like error and exit 2 (an invalid flag)
  stubborn - like healthy, but ignore SIGTERM (teardown must escalate to SIGKILL)
  anyhost  - like healthy, but listen on all interfaces (0.0.0.0), as a leaked --host would

With VLLM_RPC_BASE_PATH set, the server binds a unix socket there and never removes it, as
vLLM's IPC endpoints are left behind when its tree is killed.
"""

import http.server
import os
import signal
import socket
import subprocess
import sys
import time

port, mode = int(sys.argv[1]), sys.argv[2]

if mode == "child":
    # the "EngineCore": spawns a "worker" grandchild and sleeps
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    time.sleep(600)
    sys.exit(0)

if mode == "exit":
    print("usage: vllm serve [options]", flush=True)
    print("vllm serve: error: unrecognized arguments: --bogus-flag", flush=True)
    sys.exit(2)

child = subprocess.Popen([sys.executable, __file__, "0", "child"])
if os.environ.get("VLLM_RPC_BASE_PATH"):
    ipc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ipc.bind(os.path.join(os.environ["VLLM_RPC_BASE_PATH"], f"engine-{os.getpid()}"))
print(f"fake server pid={os.getpid()} child={child.pid}", flush=True)


def _terminate(signum, frame):
    # like vLLM's API server on SIGTERM: take the whole tree down with it
    os.killpg(os.getpgid(0), signal.SIGKILL)


if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, _terminate)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 503 if mode == "never" else 200
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok" if code == 200 else b"starting")

    def log_message(self, *args):
        pass


http.server.HTTPServer(("0.0.0.0" if mode == "anyhost" else "127.0.0.1", port),
                       Handler).serve_forever()
