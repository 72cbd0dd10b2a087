import os
import subprocess
import time


def test_sleeps():
    # With SUITE_CHILD_PIDFILE set it leaves a grandchild behind, to prove reruns that are
    # killed take their whole process tree with them.
    pidfile = os.environ.get("SUITE_CHILD_PIDFILE")
    if pidfile:
        child = subprocess.Popen(["sleep", "120"])
        with open(pidfile, "w") as handle:
            handle.write(str(child.pid))
    time.sleep(float(os.environ.get("SUITE_SLEEP", "0")))
