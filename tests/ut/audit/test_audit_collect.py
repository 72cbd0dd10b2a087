"""collect.py: journals written by several processes come back as one run with a verdict."""

import json

import pytest

from vllm_syncgate.audit.budgets import parse_budgets
from vllm_syncgate.audit.collect import load_audit_dir
from vllm_syncgate.audit.events import CallSite, StepKind, SyncKind
from vllm_syncgate.audit.journal import JournalWriter, journal_name
from vllm_syncgate.audit.ledger import Ledger
from vllm_syncgate.errors import AuditDirError

SITE = CallSite(
    "runner.py", 10, "_to_list", "vllm.v1.worker.gpu_model_runner", "GPUModelRunner._to_list"
)
BAD = CallSite(
    "runner.py",
    20,
    "execute_model",
    "vllm.v1.worker.gpu_model_runner",
    "GPUModelRunner.execute_model",
)

BUDGETS = parse_budgets(
    {
        "profile": "cpu",
        "budget": [
            {
                "runner": "v1",
                "speculation": False,
                "limits": {"default": {}},
                "allow": [
                    {"site": "*:*._to_list", "kind": "event_sync", "reason": "transfer wait"}
                ],
            }
        ],
    }
)


def _journal(directory, role, pid, extra=None):
    journal = JournalWriter(directory / journal_name(role, pid), role=role, pid=pid, device="cpu")
    if extra:
        journal.write_header(**extra)
    return journal


def _worker(directory, pid=300, bad_step=None, steps=4):
    journal = _journal(
        directory, "worker", pid, {"role": "worker", "runner": "v1", "speculation": False}
    )
    ledger = Ledger(on_step_end=journal)
    for i in range(steps):
        with ledger.step(StepKind.PREFILL if i == 0 else StepKind.DECODE):
            ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=SITE)
            if i == bad_step:
                ledger.record(SyncKind.DEVICE_SYNC, "torch.accelerator.synchronize", site=BAD)
    journal.close()


def test_run_merges_processes_and_passes_within_budget(tmp_path):
    _journal(tmp_path, "api", 100).close()
    _journal(tmp_path, "engine", 200).close()
    _worker(tmp_path)
    run = load_audit_dir(tmp_path)
    assert [p.role for p in run.processes] == ["api", "engine", "worker"]
    assert (run.runner, run.speculation, run.device) == ("v1", False, "cpu")
    assert run.num_steps() == {"prefill": 1, "decode": 3}
    assert run.mean_per_step()["decode"]["event_sync"] == 1.0
    verdict = run.verdict(run.select_budget(BUDGETS))
    assert verdict.passed
    assert verdict.allowed["vllm.v1.worker.gpu_model_runner:GPUModelRunner._to_list"] == 4


def test_breach_names_step_kind_and_site(tmp_path):
    _worker(tmp_path, bad_step=2)
    verdict = load_audit_dir(tmp_path).verdict(BUDGETS.select("v1", False))
    assert not verdict.passed
    (breach,) = verdict.breaches
    assert (breach.step_kind, breach.kind, breach.steps) == (StepKind.DECODE, "device_sync", [2])
    assert "runner.py:20:execute_model" in breach.describe()


def test_torn_last_line_is_dropped(tmp_path):
    _worker(tmp_path)
    path = tmp_path / "worker-300.jsonl"
    with path.open("a") as fh:
        fh.write('{"type": "step", "index": 4, "ki')
    run = load_audit_dir(tmp_path)
    assert run.workers[0].torn
    assert len(run.steps) == 4


def test_broken_middle_line_is_an_error(tmp_path):
    _worker(tmp_path)
    path = tmp_path / "worker-300.jsonl"
    lines = path.read_text().splitlines()
    lines.insert(2, "not json")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(AuditDirError, match=r"worker-300.jsonl:3: not a syncgate journal record"):
        load_audit_dir(tmp_path)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: d.rmdir(), "does not exist"),
        (lambda d: None, "no journals"),
        (lambda d: (d / "x.jsonl").write_text(json.dumps({"type": "note"}) + "\n"), "no header"),
    ],
)
def test_bad_directories(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(AuditDirError, match=message):
        load_audit_dir(tmp_path)


def test_runner_unknown_without_worker_journal(tmp_path):
    _journal(tmp_path, "api", 100).close()
    with pytest.raises(AuditDirError, match="no worker journal"):
        _ = load_audit_dir(tmp_path).runner


def test_workers_disagreeing_is_an_error(tmp_path):
    _worker(tmp_path, pid=1)
    _journal(tmp_path, "worker", 2, {"runner": "v2", "speculation": False}).close()
    with pytest.raises(AuditDirError, match="disagree on runner"):
        _ = load_audit_dir(tmp_path).runner
