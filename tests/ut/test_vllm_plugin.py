"""The vLLM general plugin: inert unless SYNCGATE_AUDIT_DIR is set, lazy when it is.

Each check runs in a fresh interpreter, because arming patches process-global state (torch,
sys.meta_path) exactly as it does inside ``vllm serve``.
"""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from vllm_syncgate.audit.journal import ENV_AUDIT_DIR, journal_name

PROBE = r"""
import json, sys, torch
before = (torch.Tensor.tolist, list(sys.meta_path))
from vllm_syncgate.vllm_plugin import register
register(); register()
report = {
    "hooked": sys.meta_path != before[1],
    "tolist_untouched": torch.Tensor.tolist is before[0],
    "backend_loaded": "vllm_syncgate.audit.backends.cpu" in sys.modules,
}
if len(sys.argv) > 1:
    import vllm.v1.worker.cpu_model_runner as cpu
    from vllm_syncgate.audit.backends.base import is_counted
    report["wrapped"] = sorted(
        name for name in ("__init__", "_to_list", "_sync_device", "execute_model", "sample_tokens")
        for cls in (cpu.CPUModelRunner, cpu.GPUModelRunner)
        if name in vars(cls) and is_counted(vars(cls)[name])
    )
    report["tolist_wrapped"] = torch.Tensor.tolist is not before[0]
print(json.dumps(report))
"""


def _probe(tmp_path, env_update, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCGATE_")}
    env.update(env_update)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1]), done


def test_entry_point_is_declared():
    (plugin,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "syncgate"]
    assert plugin.value == "vllm_syncgate.vllm_plugin:register"


def test_inert_without_audit_dir(tmp_path):
    report, _ = _probe(tmp_path, {})
    assert report == {"hooked": False, "tolist_untouched": True, "backend_loaded": False}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_armed_process_journals_and_patches_only_when_a_runner_loads(tmp_path):
    audit = tmp_path / "audit"
    report, _ = _probe(tmp_path, {ENV_AUDIT_DIR: str(audit)})
    assert report["hooked"]
    assert report["tolist_untouched"], "no runner imported: torch stays untouched (API server)"
    (journal,) = audit.iterdir()
    header = json.loads(journal.read_text())
    assert (header["type"], header["role"], header["device"]) == ("header", "api", "cpu")
    assert journal.name == journal_name("api", header["pid"])

    report, _ = _probe(tmp_path, {ENV_AUDIT_DIR: str(audit)}, "import-runner")
    assert report["tolist_wrapped"]
    assert report["wrapped"] == [
        "__init__", "__init__", "_sync_device", "_sync_device", "_to_list",
        "execute_model", "sample_tokens",
    ]


def test_bad_mutant_fails_the_process_with_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCGATE_")}
    env.update({ENV_AUDIT_DIR: str(tmp_path), "SYNCGATE_MUTANT": "nope"})
    done = subprocess.run(
        [sys.executable, "-c", "from vllm_syncgate.vllm_plugin import register; register()"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode != 0
    assert "UsageError: mutant 'nope': unknown (known: sync_heavy_to_list, wrapping_to_list)" in (
        done.stderr
    )
