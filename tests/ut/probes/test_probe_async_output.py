"""``AsyncGPUModelRunnerOutput`` copies on its side stream and waits on one event; mutants do not."""

import pytest
import torch

from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.probes import ProblemCode, probe_async_output


@pytest.fixture(scope="module")
def upstream():
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput

    return AsyncGPUModelRunnerOutput, ModelRunnerOutput


def _runner_output(model_runner_output_cls, n):
    ids = [f"req-{i}" for i in range(n)]
    return model_runner_output_cls(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)})


def _probe(output_cls, model_runner_output_cls, acc):
    sampled = torch.tensor([[11], [12], [13], [14]])
    return probe_async_output(
        output_cls, _runner_output(model_runner_output_cls, 4), acc, sampled=sampled, invalid_req_indices=[2]
    )


def test_upstream_async_output_never_waits_on_the_main_stream(upstream):
    output_cls, mro_cls = upstream
    with simulated_accelerator("cuda") as acc:
        result = _probe(output_cls, mro_cls, acc)
    assert result.passed, result.describe()
    assert result.counts == {"event_sync": 1}
    assert result.value == [[11], [12], [], [14]]


def test_mutant_copy_without_wait_stream_is_caught(upstream):
    output_cls, mro_cls = upstream

    class NoWaitStream(output_cls):
        def __init__(self, model_runner_output, sampled_token_ids, logprobs_tensors, invalid_req_indices,
                     async_output_copy_stream, vocab_size):
            self._model_runner_output = model_runner_output
            self._invalid_req_indices = invalid_req_indices
            self.async_copy_ready_event = torch.cuda.Event(blocking=True)
            self._sampled_token_ids = sampled_token_ids
            self.vocab_size = vocab_size
            self._logprobs_tensors = self._logprobs_tensors_cpu = None
            self._num_nans = self._num_nans_cpu = self._has_fault = None
            with torch.cuda.stream(async_output_copy_stream):
                self.sampled_token_ids_cpu = sampled_token_ids.to("cpu", non_blocking=True)
                self.async_copy_ready_event.record()

    with simulated_accelerator("cuda") as acc:
        result = _probe(NoWaitStream, mro_cls, acc)
    assert result.codes == {ProblemCode.WRONG_STREAM}


def test_mutant_blocking_copy_in_the_step_is_caught(upstream):
    output_cls, mro_cls = upstream

    class BlockingCopy(output_cls):
        def __init__(self, model_runner_output, sampled_token_ids, *args, **kwargs):
            super().__init__(model_runner_output, sampled_token_ids, *args, **kwargs)
            self.sampled_token_ids_cpu = sampled_token_ids.cpu()

    with simulated_accelerator("cuda") as acc:
        result = _probe(BlockingCopy, mro_cls, acc)
    assert ProblemCode.UNEXPECTED_SYNC in result.codes
    assert any("blocking_readback" in p.message for p in result.problems)
