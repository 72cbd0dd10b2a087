"""Runs a ManagedServer over fake_server.py the way `syncgate check` does, then waits forever.

Prints one JSON line with the pids of the server tree and its private folder once it is healthy,
so a test can signal or kill this driver and then check that none of them survive.
"""

import json
import sys
import time
from pathlib import Path

from vllm_syncgate.lifeline import signals_as_interrupt
from vllm_syncgate.serve.process import ManagedServer, free_port, tree

fake, mode, log = sys.argv[1], sys.argv[2], Path(sys.argv[3])
port = free_port()
server = ManagedServer([sys.executable, fake, str(port), mode], port=port, log_path=log,
                       startup_timeout_s=30, stop_timeout_s=2,
                       private_dir_env=["VLLM_RPC_BASE_PATH"])
with signals_as_interrupt(), server:
    server.start()
    time.sleep(0.5)  # let the fake spawn its grandchild
    print(json.dumps({"pids": [p.pid for p in tree(server.pid)],
                      "private_dir": str(server.private_dir)}), flush=True)
    time.sleep(600)
