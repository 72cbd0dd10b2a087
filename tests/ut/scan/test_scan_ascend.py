"""Real-world proof: vllm-ascend 0.23.0.post1 (before PR #13382) waits on
``num_computed_tokens_event`` every step of the V2 runner, without speculation."""

from __future__ import annotations

import pytest

from vllm_syncgate.scan.callgraph import scan

pytestmark = [pytest.mark.needs_sdist, pytest.mark.slow]


def test_update_seq_lens_cpu_event_wait_is_flagged(ascend_before_source, vllm_worker_dir):
    ascend_worker = ascend_before_source / "vllm_ascend" / "worker"
    result = scan(
        [str(ascend_worker), str(vllm_worker_dir)],
        entries=["NPUModelRunner.execute_model", "NPUModelRunner.sample_tokens"],
    )
    hits = [
        f for f in result.findings
        if f.qualname == "NPUModelRunner._update_seq_lens_cpu" and f.kind == "event_sync"
    ]
    assert len(hits) == 1
    finding = hits[0]
    assert finding.runner == "vllm_ascend.worker.v2.model_runner:NPUModelRunner"
    assert finding.guard == "none"
    assert finding.code == "self.num_computed_tokens_event.synchronize()"
    # reached from the V2 step that NPUModelRunner inherits from vLLM's MRV2 runner
    assert finding.path == (
        "GPUModelRunner.execute_model",
        "NPUModelRunner.prepare_inputs",
        "NPUModelRunner._update_seq_lens_cpu",
    )
    assert result.exit_code == 1


def test_shipped_npu_budget_does_not_allow_list_the_regression(
    ascend_before_source, vllm_worker_dir, scan_json
):
    ascend = ascend_before_source / "vllm_ascend"
    code, report = scan_json(
        str(ascend / "worker"), str(ascend / "compilation"), str(vllm_worker_dir),
        "--entry", "NPUModelRunner.execute_model", "--profile", "npu",
    )
    assert code == 1
    wait = [f for f in report["findings"] if f["qualname"] == "NPUModelRunner._update_seq_lens_cpu"]
    assert [f["guard"] for f in wait] == ["none"]
    # the by-design waits are not failures: the input-prep wait runs only with async scheduling
    prep = [f for f in report["findings"] if f["qualname"] == "GPUModelRunner.synchronize_input_prep"]
    assert {f["guard"] for f in prep} == {"async_scheduling"}
    # the FULL-graph replay sync, reached through run_model = partial(self.model, ...)
    replay = [f for f in report["findings"] if f["qualname"] == "ACLGraphWrapper.__call__"]
    assert [(f["kind"], f["guard"]) for f in replay] == [("stream_sync", "allowed")]
    assert replay[0]["path"][-2:] == ["NPUModelRunner._model_forward", "ACLGraphWrapper.__call__"]
