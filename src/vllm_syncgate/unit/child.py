"""The vLLM probes in a child process that imports vLLM from one known place.

``syncgate check``'s unit level runs here, not in its own process: the child starts with ``-P``
(no working directory on ``sys.path``) and, for a ``--source`` tree, the overlay first on
``PYTHONPATH``; it refuses to probe a ``vllm`` imported from anywhere but the expected directory.

``python -P -m vllm_syncgate.unit.child FLAVOUR OUT.json EXPECTED_DIR [--trace]``: writes the report
(or the one-line reason vLLM could not be loaded) to ``OUT.json``; with ``--trace`` the report also
lists the functions of that ``vllm`` the probes ran (:mod:`vllm_syncgate.unit.ran`).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from vllm_syncgate.unit.result import UnitCheck, UnitReport

TIMEOUT_S = 900.0


class LoadError(Exception):
    """The probed vLLM could not be imported from the expected place (one line)."""


def probe_in_child(flavour: str, expected: Path, env: Mapping[str, str],
                   trace: bool = False) -> UnitReport:
    """The probes on the ``vllm`` under ``expected``, run by a child with ``env``; ``trace``:
    the report's ``ran`` lists the functions of that ``vllm`` they ran."""
    with tempfile.TemporaryDirectory(prefix="syncgate-unit-") as tmp:
        out = Path(tmp) / "unit.json"
        argv = [sys.executable, "-P", "-m", "vllm_syncgate.unit.child", flavour, str(out),
                str(expected), *(["--trace"] if trace else [])]
        done = subprocess.run(argv, env=dict(env), cwd=tmp, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        if not out.is_file():
            tail = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            raise LoadError(f"the unit child exited with code {done.returncode}: "
                            f"{tail[-1] if tail else '(no output)'}")
        doc = json.loads(out.read_text(encoding="utf-8"))
    if "error" in doc:
        raise LoadError(doc["error"])
    ran = doc.get("ran")
    return UnitReport([UnitCheck(**c) for c in doc["checks"]], doc["notes"],
                      None if ran is None else [(file, name) for file, name in ran])


def _main(flavour: str, out: Path, expected: Path, trace: bool = False) -> int:
    logging.getLogger("vllm").setLevel(logging.WARNING)  # vLLM's INFO lines are not the report
    try:
        import vllm

        # the folders are real in an overlay (only its files are links into the tree)
        where = Path(vllm.__file__).parent.resolve()
        if where != expected.resolve():
            raise LoadError(f"vllm was imported from {where}, not from {expected}")
        from vllm_syncgate.unit.ran import FunctionsRun
        from vllm_syncgate.unit.vllm_probes import probe_vllm

        if trace:  # as imported: the overlay's files are links, their paths are the overlay's
            with FunctionsRun(Path(vllm.__file__).parent) as ran:
                report = probe_vllm(flavour)
            report.ran = ran.functions()
        else:
            report = probe_vllm(flavour)
    except (ImportError, AttributeError, LoadError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        doc: dict[str, object] = {"error": f"vLLM does not load from {expected}: "
                                           f"{type(exc).__name__}: {first}"}
    else:
        report.notes.insert(0, f"vllm imported from {where}")
        doc = {"checks": [c.to_json() for c in report.checks], "notes": report.notes}
        if report.ran is not None:
            doc["ran"] = report.ran
    out.write_text(json.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:] == ["--trace"]))
