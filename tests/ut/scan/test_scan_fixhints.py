"""Fixes that fix (issue 21 item 3): every printed fix, applied literally to a runner with that
kind of sync, makes the scan pass; the budget stanza it prints is a whole file that
``syncgate doctor --budget`` accepts as pasted, for every kind and device."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from vllm_syncgate.audit.events import SYNC_KINDS
from vllm_syncgate.cli import main
from vllm_syncgate.fixhints import PATTERNS, fix_lines
from vllm_syncgate.profiles import DEVICES

#: One sync of each kind, on the line the fixture marks ``# SYNC``.
SYNCS = {
    "blocking_readback": "values = value.tolist()",
    "blocking_copy": "host_buf.copy_(value)",
    "device_sync": "torch.cuda.synchronize()",
    "stream_sync": "stream.synchronize()",
    "event_sync": "event.synchronize()",
}
#: A blocking copy the other way, host to device: its fix is the pinned staging buffer.
UPLOAD = "value = torch.tensor(data, device=value.device)"
INDENT = " " * 8


@pytest.fixture
def runner(scan_data: Path, tmp_path: Path):
    """A project holding the fixture runner with ``code`` on its sync line (a list of lines)."""

    def make(step: list[str], consumer: list[str] = ()) -> Path:
        root = tmp_path / "proj"
        shutil.rmtree(root, ignore_errors=True)
        (root / ".git").mkdir(parents=True)
        text = (scan_data / "fixhints" / "tiny_runner.py").read_text()
        text = text.replace(f"{INDENT}# SYNC\n", "".join(f"{INDENT}{line}\n" for line in step or ["pass"]))
        text = text.replace(f"{INDENT}# CONSUMER\n", "".join(f"{INDENT}{line}\n" for line in consumer))
        (root / "tiny_runner.py").write_text(text)
        return root

    return make


def printed_fix(run_scan, root: Path) -> tuple[int, list[str]]:
    """Scan ``root``; the exit code and the fix lines printed for its (one) failing site."""
    code, out, _ = run_scan(str(root))
    lines = out.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("fix:")), None)
    if start is None:
        return code, []
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return code, [line.strip() for line in lines[start:end]]


def told(fix: list[str], label: str) -> list[str]:
    line = next((line for line in fix if line.startswith(label)), None)
    if line is None or line.endswith("(nothing)"):
        return []
    return line[len(label):].strip().split("; ")


@pytest.mark.parametrize("kind", sorted(SYNCS))
def test_each_printed_fix_applied_literally_passes_the_scan(kind, runner, run_scan):
    code, fix = printed_fix(run_scan, runner([SYNCS[kind]]))
    assert code == 1
    assert fix[0].startswith("fix: ")
    step = told(fix, "in the step, instead of the sync:")
    consumer = told(fix, "where the value is consumed:")
    fixed = runner(step, consumer)
    assert run_scan(str(fixed))[0] == 0, (kind, step, consumer)


def test_an_upload_gets_the_staging_fix_and_it_passes_the_scan(runner, run_scan):
    code, fix = printed_fix(run_scan, runner([UPLOAD]))
    assert code == 1
    assert fix[0].startswith("fix: stage the host data in a host buffer")
    assert "only remedy" not in fix[0]  # nothing waits for a device value
    step = told(fix, "in the step, instead of the sync:")
    assert told(fix, "where the value is consumed:") == []
    assert run_scan(str(runner(step)))[0] == 0, step


@pytest.mark.parametrize("broken", ["non_blocking=True", "pin_memory"])
def test_the_staging_fix_without_its_pinned_queued_copy_fails(broken, runner, run_scan):
    """Broken variants: the upload queued without non_blocking, or staged in pageable memory."""
    _, fix = printed_fix(run_scan, runner([UPLOAD]))
    step = told(fix, "in the step, instead of the sync:")
    if broken == "non_blocking=True":
        step = [line.replace(", non_blocking=True", "") for line in step]
    else:
        step = ["host_buf = torch.empty(8, dtype=torch.int64)", *step]
    assert run_scan(str(runner(step)))[0] == 1, step


def test_the_json_fix_of_an_upload_and_of_a_readback_differ(runner, run_scan):
    """The direction travels with the finding to every format: JSON's ``fix`` and ``upload``."""
    found = {}
    for name, line in (("upload", UPLOAD), ("readback", SYNCS["blocking_copy"])):
        _, out, _ = run_scan(str(runner([line])), "--format", "json")
        (finding,) = [f for f in json.loads(out)["findings"] if "fix" in f]
        found[name] = finding
    assert found["upload"]["upload"] is True
    assert found["readback"]["upload"] is False
    assert found["upload"]["kind"] == found["readback"]["kind"] == "blocking_copy"
    assert "stage the host data" in found["upload"]["fix"]
    assert "stage the host data" not in found["readback"]["fix"]


@pytest.mark.parametrize("kind", sorted(k for k in SYNCS if PATTERNS[k].consumer))
def test_the_deferred_read_moved_back_into_the_step_fails(kind, runner, run_scan):
    """The broken variant: the consumer's wait done in the step is the sync the fix removes
    (what following 'synchronize that event where the host reads' in the step gives)."""
    _, fix = printed_fix(run_scan, runner([SYNCS[kind]]))
    step = told(fix, "in the step, instead of the sync:") + told(fix, "where the value is consumed:")
    assert run_scan(str(runner(step)))[0] == 1


@pytest.mark.parametrize("kind", sorted(SYNCS))
def test_where_only_an_allow_remedies_the_hint_says_so_and_both_allows_pass(kind, runner, run_scan, tmp_path):
    root = runner([SYNCS[kind]])
    _, fix = printed_fix(run_scan, root)
    assert "no sync-free form: the allow rule below is the only remedy" in fix[0]
    comment = re.search(r"`(# syncgate: allow\[\w+\]) <why>`", " ".join(fix)).group(1)
    inline = runner([f"{SYNCS[kind]}  {comment} read once per step by design"])
    assert run_scan(str(inline))[0] == 0
    start = next(i for i, line in enumerate(fix) if line.startswith("or, if by design, a budget"))
    stanza = "\n".join(fix[start + 1:])
    budget = tmp_path / "budget.toml"
    budget.write_text(stanza + "\n")
    assert run_scan(str(root), "--budget", str(budget))[0] == 0


def test_every_printed_budget_stanza_passes_doctor_as_pasted(tmp_path, capsys):
    files = []
    for device in DEVICES:
        for kind in SYNC_KINDS:
            lines = fix_lines("vllm.v1.worker.gpu_model_runner:GPUModelRunner.f", kind, inline=True,
                              device=device)
            stanza = [line.strip() for line in lines if line.startswith("      ")]
            path = tmp_path / f"{device}-{kind}.toml"
            path.write_text("\n".join(stanza) + "\n")
            files += ["--budget", str(path)]
    assert main(["doctor", *files]) == 0
    assert capsys.readouterr().out.count(": ok (") == len(DEVICES) * len(SYNC_KINDS)


def test_the_old_stanza_without_its_budget_table_fails_doctor(tmp_path, capsys):
    """The broken variant: ``extends`` then ``[[budget.allow]]`` alone, as printed before."""
    path = tmp_path / "old.toml"
    path.write_text('extends = "cuda"\n[[budget.allow]]\nsite = "m:C.f"\nkind = "event_sync"\n'
                    'reason = "x"\n')
    assert main(["doctor", "--budget", str(path)]) == 2
    assert "must be a non-empty array of tables" in capsys.readouterr().err
