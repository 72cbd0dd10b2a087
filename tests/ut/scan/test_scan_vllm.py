"""The scan on the installed vLLM 0.32.0 sources: the known sync sites of the non-speculative
decode path of GPUModelRunner, with the right guards, and few others."""

from __future__ import annotations

import shutil

import pytest

from vllm_syncgate.audit.budgets import load_budgets
from vllm_syncgate.scan.callgraph import ScanResult, scan

RUNNER = "vllm.v1.worker.gpu_model_runner:GPUModelRunner"
pytestmark = pytest.mark.slow  # each scan of vllm/v1/worker: ~2 s of CPU


@pytest.fixture(scope="module")
def gpu_runner(vllm_worker_dir, scan_data) -> ScanResult:
    budgets = load_budgets(scan_data / "vllm_allow.toml")
    allow = budgets.all_allow_rules(speculation=False)
    # vLLM's own runner on its own device: CUDA fills a number stored through a mask in place
    result = scan([str(vllm_worker_dir)], allow=allow, device="cuda")
    result.findings = [f for f in result.findings if f.runner == RUNNER]
    return result


def site(result: ScanResult, qualname: str, api: str, via: str | None = None):
    hits = [
        f for f in result.findings
        if f.qualname == qualname and f.api == api and (via is None or via in f.path)
    ]
    assert hits, f"{qualname} {api} via {via} not reported"
    return hits[0]


def test_to_list_event_wait_only_under_sync_scheduling(gpu_runner):
    """Sync scheduling is the default mode: the wait is not guarded; it passes through the allow
    rule naming _to_list, not through the gpu_sync_allowed() region around its call."""
    finding = site(gpu_runner, "GPUModelRunner._to_list", "Event.synchronize")
    assert finding.guard == "allowed"
    assert finding.reason.startswith("the documented transfer wait")
    assert any("with gpu_sync_allowed()" in c for c in finding.conditions)
    assert any(c.endswith("not self.use_async_scheduling") for c in finding.conditions)
    assert finding.path[-2:] == ("GPUModelRunner._bookkeeping_sync", "GPUModelRunner._to_list")
    assert finding.entry == "GPUModelRunner.sample_tokens"


def test_input_prep_event_wait_is_per_step_and_allow_listed(gpu_runner):
    finding = site(gpu_runner, "GPUModelRunner.synchronize_input_prep", "Event.synchronize")
    assert finding.guard == "async_scheduling"  # the event exists only with async scheduling
    assert finding.entry == "GPUModelRunner.execute_model"


def test_prompt_logprobs_device_sync_is_reported_through_its_caller(gpu_runner):
    finding = site(gpu_runner, "GPUModelRunner._sync_device", "torch.accelerator.synchronize",
                   via="GPUModelRunner._get_prompt_logprobs_dict")
    assert finding.kind == "device_sync"
    assert finding.guard == "allowed"


def test_speculative_waits_are_guarded_by_speculation(gpu_runner):
    for qualname in ("GPUModelRunner._get_draft_token_ids_cpu",
                     "GPUModelRunner._get_valid_sampled_token_count",
                     "GPUModelRunner._prepare_inputs"):
        assert site(gpu_runner, qualname, "Event.synchronize").guard == "speculation"


def test_calls_on_objects_the_runner_builds_are_followed(gpu_runner):
    """``self.input_batch.update_async_output_token_ids()``: the input batch is an InputBatch the
    runner constructs, and its lazy wait on the previous step's copy is a per-step sync — in async
    scheduling only: the copy it waits for is handed over by set_async_sampled_token_ids, which
    the runner calls only after ``if not self.use_async_scheduling: return``."""
    finding = site(gpu_runner, "InputBatch.update_async_output_token_ids", "Event.synchronize")
    assert finding.path[-2:] == ("GPUModelRunner._sample", "InputBatch.update_async_output_token_ids")
    assert finding.guard == "async_scheduling"


def test_nan_count_readback_is_sync_scheduling_only(gpu_runner):
    finding = site(gpu_runner, "GPUModelRunner._get_nans_in_logits", "Tensor.tolist")
    assert finding.guard == "opt_in"  # VLLM_COMPUTE_NANS_IN_LOGITS, and gpu_sync_allowed()


def test_no_unguarded_site_remains_after_the_allow_list(gpu_runner):
    """The DP padding ``num_tokens_across_dp[dp_rank].item()`` is not a finding: the tensor is
    a CPU tensor returned through two helper functions, which the scan follows."""
    assert gpu_runner.failing == []
    # the drafters and samplers the runner imports are followed: their guarded sites count too
    # (42: with the two decode-context-parallel copies in the DeepSeek V3.2 indexer that the
    # pageable-result rule takes for host uploads; guarded opt_in, labelled not_sync in the corpus)
    assert len(gpu_runner.findings) <= 42


def test_without_the_allow_list_the_gate_fails_on_the_by_design_sites(vllm_worker_dir):
    result = scan([str(vllm_worker_dir)], entries=["GPUModelRunner.execute_model",
                                                   "GPUModelRunner.sample_tokens"])
    failing = sorted(
        {(f.qualname, f.api, f.path[-2]) for f in result.failing if f.runner == RUNNER}
    )
    assert failing == [
        ("GPUModelRunner._sync_device", "torch.accelerator.synchronize",
         "GPUModelRunner._get_prompt_logprobs_dict"),
        # inside gpu_sync_allowed(): no free pass without a rule naming the site
        ("GPUModelRunner._to_list", "Event.synchronize", "GPUModelRunner._bookkeeping_sync"),
    ]
    assert result.exit_code == 1


def test_model_runner_v2_has_no_per_step_sync_and_a_mutant_is_caught(vllm_worker_dir, tmp_path):
    source = vllm_worker_dir / "gpu" / "model_runner.py"
    clean = scan([str(source)], entries=["GPUModelRunner.execute_model",
                                         "GPUModelRunner.sample_tokens"])
    assert clean.failing == []
    text = source.read_text()
    anchor = "        # Update the number of computed tokens.\n        output_bin_counts = None\n"
    assert text.count(anchor) == 1
    mutant = tmp_path / "model_runner.py"
    mutant.write_text(text.replace(
        anchor, anchor + "        _ = num_sampled.tolist()\n"
    ))
    result = scan([str(mutant)], entries=["GPUModelRunner.execute_model",
                                          "GPUModelRunner.sample_tokens"])
    assert {(f.qualname, f.api) for f in result.failing} == {
        ("GPUModelRunner.postprocess_sampled", "Tensor.tolist")
    }
    assert "GPUModelRunner.sample_tokens" in {f.entry for f in result.failing}


def test_v1_sampler_forward_is_reached_without_naming_its_package(vllm_worker_dir, tmp_path):
    """Only ``vllm/v1/worker`` is named: ``self.sampler(...)`` reaches V1's ``Sampler.forward``
    through the runner's imports and nn.Module's ``__call__``, so a readback put there fails."""
    v1 = vllm_worker_dir.parent
    tree = tmp_path / "vllm"
    for package in ("worker", "sample", "spec_decode"):
        shutil.copytree(v1 / package, tree / "v1" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(v1 / "outputs.py", tree / "v1" / "outputs.py")
    for init in (tree / "__init__.py", tree / "v1" / "__init__.py"):
        init.write_text("")
    sampler = tree / "v1" / "sample" / "sampler.py"
    text = sampler.read_text()
    anchor = "        predict_bonus_token: bool = False,\n"
    anchor += "        logprobs_mode_override: LogprobsMode | None = None,\n"
    anchor += "    ) -> SamplerOutput:\n"
    assert text.count(anchor) == 1  # forward's signature
    sampler.write_text(text.replace(anchor, anchor + "        _ = logits.max().item()\n"))
    result = scan([str(tree / "v1" / "worker")], entries=["GPUModelRunner.execute_model",
                                                          "GPUModelRunner.sample_tokens"])
    forward = [f for f in result.failing if f.qualname == "Sampler.forward"]
    assert forward
    assert forward[0].symbol == "vllm.v1.sample.sampler:Sampler.forward"
    assert forward[0].path[-2:] == ("GPUModelRunner._sample", "Sampler.forward")
