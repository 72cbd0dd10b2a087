"""The CPU image: build time and size (issue target: < 4 GiB) and the e2e-cpu container run time.

One row per build: ``--no-cache`` (what a fresh CI machine pays; the debootstrap base image is
not included, ci/docker-up.sh builds it once) and, with ``--warm``, a second build after touching
nothing but syncgate's source layer (what a CI run pays on a machine that keeps Docker's cache).
Then one ``compose up --exit-code-from e2e-cpu e2e-cpu`` run, timed.

Needs a Docker engine: sudo bash ci/docker-up.sh first (and ci/docker-down.sh after).
Run: .venv/bin/python benchmarks/bench_container_cpu.py [--no-cold] [--warm]
     (writes benchmarks/results/container_cpu.json, and the docker output to container_cpu.log)
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

from _table import RESULTS, emit
from vllm_syncgate.containers.local_docker import Engine

REPO = Path(__file__).resolve().parents[1]
TAG = "syncgate-cpu:local"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cold", action="store_true", help="skip the --no-cache build")
    parser.add_argument("--warm", action="store_true", help="also time a cached rebuild")
    args = parser.parse_args()
    engine = Engine.find()
    rows = []
    RESULTS.mkdir(exist_ok=True)
    log = RESULTS / "container_cpu.log"  # kept: the build and the gate's output, for a failure
    log.write_text("")
    with tempfile.TemporaryDirectory(prefix="bench-container-") as tmp:
        work = Path(tmp)
        builds = [] if args.no_cold else [("no-cache", True)]
        if args.warm or not builds:  # --no-cold alone still builds, from the cache
            builds.append(("cached", False))
        for name, no_cache in builds:
            seconds = engine.build(REPO, TAG, no_cache=no_cache, log=log)
            rows.append({"step": f"build ({name})", "seconds": round(seconds, 1),
                         "GiB": round(engine.image_size(TAG) / 2**30, 3), "exit": 0})
        shared = {}
        for sub in ("reports", "cache"):
            (work / sub).mkdir()
            (work / sub).chmod(0o1777)  # the container runs as uid 1000
            shared[sub] = str(work / sub)
        env = {"SYNCGATE_REPORTS": shared["reports"], "SYNCGATE_MODEL_CACHE": shared["cache"]}
        project = f"syncgate-bench-{uuid.uuid4().hex[:8]}"
        try:
            code, seconds = engine.up(REPO, "e2e-cpu", project=project, env=env, log=log)
        finally:
            engine.down(REPO, project=project, env=env, log=log)
        rows.append({"step": "compose up e2e-cpu", "seconds": round(seconds, 1),
                     "GiB": None, "exit": code})
        size = engine.image_size(TAG)
    emit("container_cpu", rows, {"image_GiB": round(size / 2**30, 3),
                                 "under_4_GiB": size < 4 * 2**30, "e2e_cpu_exit": code})


if __name__ == "__main__":
    main()
