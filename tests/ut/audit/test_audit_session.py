"""LiveAudit and the post-import hook: journals per process, runner headers, lazy patching."""

import inspect
import json
import sys

import pytest

from vllm_syncgate.audit.backends.imports import PostImportHook
from vllm_syncgate.audit.backends.session import LiveAudit, process_role
from vllm_syncgate.audit.collect import load_audit_dir
from vllm_syncgate.errors import AuditDirError, UsageError


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    (tmp_path / "sg_hooked_mod.py").write_text("VALUE = 41\n\ndef answer():\n    return VALUE + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("sg_hooked_mod", None)


def test_post_import_hook_runs_after_the_module_body(module_dir):
    seen = []
    hook = PostImportHook(["sg_hooked_mod"], lambda m: seen.append(m.VALUE))
    hook.install()
    try:
        import sg_hooked_mod
    finally:
        hook.uninstall()
    assert seen == [41]
    assert "return VALUE + 1" in inspect.getsource(sg_hooked_mod.answer)
    assert hook not in sys.meta_path


def test_post_import_hook_calls_back_at_once_for_an_imported_module(module_dir):
    import sg_hooked_mod

    seen = []
    hook = PostImportHook(["sg_hooked_mod", "sg_never_imported"], seen.append)
    hook.install()
    hook.uninstall()
    assert seen == [sg_hooked_mod]


def test_process_role_is_api_in_the_main_process():
    assert process_role() == "api"


def test_live_audit_journals_runner_header_mutant_and_steps(
    tmp_path, keep_accelerator, vllm_cpu_runner_module, cpu_runner_module,
    make_scheduler_output,
):
    audit = LiveAudit(tmp_path / "audit", "cpu", mutant="sync_heavy_to_list").start()
    try:
        module = cpu_runner_module(vllm_cpu_runner_module)
        audit._on_runner_module(module)
        runner = module.CPUModelRunner()
        for output in (make_scheduler_output(prefill=["a"]), make_scheduler_output(decode=["a"])):
            assert runner.execute_model(output) is None
            runner.sample_tokens(None)
        assert all(step.events == [] for step in audit.ledger.steps), "written steps are dropped"
    finally:
        audit.stop()
    run = load_audit_dir(tmp_path / "audit")
    (worker,) = run.workers
    assert worker.header["mutant"] == "sync_heavy_to_list"
    assert (run.runner, run.speculation, run.device) == ("v1", False, "cpu")
    assert [s.kind.value for s in run.steps] == ["prefill", "decode"]
    assert [sorted(s.counts()) for s in run.steps] == [["blocking_readback", "device_sync"]] * 2
    first = json.loads((worker.path).read_text().splitlines()[0])
    assert first["role"] == "api", "the role before a runner was built in this process"


def test_bad_mutant_and_unwritable_directory(tmp_path):
    with pytest.raises(UsageError, match="mutant 'nope': unknown"):
        LiveAudit(tmp_path, "cpu", mutant="nope")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AuditDirError, match="cannot write audit journal"):
        LiveAudit(blocker / "audit", "cpu")
