"""Hostile profiles, models and options against ``syncgate check``: refused before any server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

PROFILE = """\
device = "cpu"
runner = "v1"
model = "llama"
budgets = "cpu"
parity = "exact"
seed = 0
startup_timeout_s = {startup}
request_timeout_s = 120
{extra}
[serve]
flags = ["--dtype", "float32"]

[[group]]
name = "baseline"
flags = {flags}
scenarios = ["sequential"]
"""


def _profile(work: Path, flags: str = "[]", startup: str = "240", extra: str = "") -> list[str]:
    (work / "p.toml").write_text(PROFILE.format(flags=flags, startup=startup, extra=extra))
    return ["--profile", "p.toml"]


def _raw(work: Path, data: bytes) -> list[str]:
    (work / "p.toml").write_bytes(data)
    return ["--profile", "p.toml"]


def _fifo(work: Path) -> list[str]:
    os.mkfifo(work / "p.toml")
    return ["--profile", "p.toml"]


def _model_dir(work: Path, marker: str | None) -> list[str]:
    model = work / "m"
    model.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        (model / name).write_text("{}")
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    if marker is not None:
        (model / "syncgate-model.json").write_text(marker)
    return ["--model", "m"]


# (id, make the inputs -> args, last stderr line)
PROBES = [
    ("flag-host-abbreviated", lambda w: _profile(w, '["--hos", "0.0.0.0"]'),
     r"group\[0\]\.flags: --hos would set --host"),
    ("flag-host-equals", lambda w: _profile(w, '["--ho=0.0.0.0"]'), r"would set --host"),
    ("flag-host-dotted", lambda w: _profile(w, '["--host.x", "1"]'), r"would set --host"),
    ("flag-port-abbreviated", lambda w: _profile(w, '["--por", "80"]'), r"would set --port"),
    ("flag-api-key-underscore", lambda w: _profile(w, '["--api_key", "k"]'),
     r"would set --api-key"),
    ("flag-served-model-name", lambda w: _profile(w, '["--served-model", "x"]'),
     r"would set --served-model-name"),
    ("flag-config-file", lambda w: _profile(w, '["--config", "c.yaml"]'),
     r"a --config file could set the host or port"),
    ("startup-timeout-nan", lambda w: _profile(w, startup="nan"), r"<toml>: nan is not a finite"),
    ("startup-timeout-inf", lambda w: _profile(w, startup="inf"), r"<toml>: inf is not a finite"),
    ("startup-timeout-negative", lambda w: _profile(w, startup="-1"),
     r"startup_timeout_s: must be positive"),
    ("tolerance-wrong-type", lambda w: _profile(w, extra='tolerance = {max_rank = "x"}'),
     r"tolerance\.max_rank: must be an integer"),
    ("unknown-key", lambda w: _profile(w, extra='colour = "red"'), r"colour: unknown key"),
    ("nested-deep", lambda w: _raw(w, b"x = " + b"[" * 5000 + b"]" * 5000),
     r"p\.toml: <toml>: nested too deeply"),
    ("profile-fifo", _fifo, r"p\.toml: <file>: cannot be read \(not a regular file\)"),
    ("profile-dev-zero", lambda w: ["--profile", "/dev/zero"], r"/dev/zero: <file>: cannot be read"),
    ("profile-directory", lambda w: ["--profile", "."], r"\.: <file>: is a directory"),
    ("profile-not-utf8", lambda w: _raw(w, b"device = '\xff'\n"), r"<file>: is not UTF-8 text"),
    ("profile-missing", lambda w: ["--profile", "nope.toml"], r"nope\.toml: <file>: does not exist"),
    ("scenario-unknown", lambda w: ["--scenarios", "bogus"], r"unknown scenario 'bogus'"),
    ("device-unknown", lambda w: ["--device", "tpu"], r"--device: invalid choice: 'tpu'"),
    ("report-under-a-file", lambda w: [*_report_file(w), "--report-dir", "f/r"],
     r"f/r: report directory is not writable"),
    ("model-missing", lambda w: ["--model", "nowhere"], r"nowhere: model directory does not exist"),
    ("model-marker-not-json", lambda w: _model_dir(w, "{not json"),
     r"syncgate-model\.json: not valid JSON"),
    ("model-marker-without-keys", lambda w: _model_dir(w, '{"recipe": "llama"}'),
     r"not a syncgate model marker \(no 'digest'\)"),
    ("model-marker-nested-deep", lambda w: _model_dir(w, "[" * 100_000 + "]" * 100_000),
     r"syncgate-model\.json: not valid JSON \(nested too deeply"),
]


def _report_file(work: Path) -> list[str]:
    (work / "f").write_text("a file")
    return []


@pytest.mark.parametrize(("make", "stderr"), [p[1:] for p in PROBES], ids=[p[0] for p in PROBES])
def test_hostile_check_input(sandbox, handled, make, stderr):
    args = make(sandbox.work)
    made = set(os.listdir(sandbox.work))
    outcome = sandbox.run(["check", "--report-dir", "reports/check", *args], timeout=120)
    handled(outcome, 2, stderr)
    assert set(os.listdir(sandbox.work)) == made  # no report dir for a run that never started
