"""The method-level loader: what it loads, what it refuses, and how it says so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from vllm_syncgate.errors import EnvironmentProblem, UnsupportedLayoutError
from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.npu.driver import check_seq_lens_sync, run_scenario
from vllm_syncgate.npu.harness import (
    SEQ_LENS_METHODS,
    AscendSource,
    bind,
    cuda_mapped_to_npu,
    load_runner_class,
)
from vllm_syncgate.npu.parent import SimulatedGPUModelRunner
from vllm_syncgate.npu.scheduler import AddRequest, Schedule
from vllm_syncgate.npu.state import RunnerSpec

RUNNER = Path("vllm_ascend/worker/v2/model_runner.py")


def _tree(tmp_path: Path, runner_source: str | None, version: str = "9.9.9") -> AscendSource:
    (tmp_path / "vllm_ascend").mkdir()
    (tmp_path / "PKG-INFO").write_text(f"Metadata-Version: 2.4\nVersion: {version}\n")
    if runner_source is not None:
        path = tmp_path / RUNNER
        path.parent.mkdir(parents=True)
        path.write_text(textwrap.dedent(runner_source))
    return AscendSource.at(tmp_path)


def _refusal(source: AscendSource, **kwargs) -> str:
    with pytest.raises(UnsupportedLayoutError) as caught:
        load_runner_class(source, SimulatedGPUModelRunner, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_loads_upstream_methods_with_their_file_and_lines(after_fix_source):
    cls = load_runner_class(after_fix_source, SimulatedGPUModelRunner)
    path = after_fix_source.module_file()
    lines = path.read_text().splitlines()
    for name in SEQ_LENS_METHODS:
        code = vars(cls)[name].__code__
        assert code.co_filename == str(path)
        assert lines[code.co_firstlineno - 1].strip().startswith(f"def {name}(")
    assert issubclass(cls, SimulatedGPUModelRunner)
    assert vars(cls)["__module__"] == "vllm_ascend.worker.v2.model_runner"


def test_version_comes_from_the_tree(after_fix_source, tmp_path):
    assert after_fix_source.version == "0.0.0+syncgate.after-fix"
    (tmp_path / "vllm_ascend").mkdir()
    (tmp_path / "vllm_ascend" / "_version.py").write_text(
        "__version__ = version = '0.25.1.dev7+gbaed935'\n"
    )
    assert AscendSource.at(tmp_path).version == "0.25.1.dev7+gbaed935"
    (tmp_path / "vllm_ascend" / "_version.py").unlink()
    assert AscendSource.at(tmp_path).version == "unknown"


def test_not_a_vllm_ascend_tree(tmp_path):
    expected = r"^unsupported vllm-ascend layout: no vllm_ascend/"
    with pytest.raises(UnsupportedLayoutError, match=expected):
        AscendSource.at(tmp_path)


def test_missing_runner_module(tmp_path):
    message = _refusal(_tree(tmp_path, None))
    assert message == (
        "unsupported vllm-ascend layout: no vllm_ascend/worker/v2/model_runner.py (version 9.9.9)"
    )


def test_missing_class(tmp_path):
    message = _refusal(_tree(tmp_path, "class GPUModelRunnerV2:\n    pass\n"))
    assert message == (
        "unsupported vllm-ascend layout: no class NPUModelRunner in"
        " vllm_ascend.worker.v2.model_runner (version 9.9.9)"
    )


def test_missing_method(tmp_path):
    source = _tree(tmp_path, """
        class NPUModelRunner:
            def postprocess_sampled(self, *args):
                pass

            def _copy_num_computed_tokens_to_cpu(self):
                pass
    """, version="0.30.0")
    assert _refusal(source) == (
        "unsupported vllm-ascend layout: NPUModelRunner has no method _update_seq_lens_cpu"
        " (version 0.30.0)"
    )


def test_unparsable_module(tmp_path):
    assert "model_runner.py does not parse (line 1)" in _refusal(_tree(tmp_path, "class (:\n"))


def test_method_needing_names_the_harness_lacks(tmp_path):
    source = _tree(tmp_path, """
        class NPUModelRunner:
            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                with get_forward_context():
                    return np.asarray(req_ids)
    """)
    assert _refusal(source, methods=["_update_seq_lens_cpu"]) == (
        "unsupported vllm-ascend layout: NPUModelRunner._update_seq_lens_cpu uses names the"
        " harness cannot provide: get_forward_context (version 9.9.9)"
    )


def test_methods_under_a_version_branch_are_found(tmp_path):
    source = _tree(tmp_path, """
        import torch
        from vllm.v1.core.sched.output import SchedulerOutput

        class NPUModelRunner(object):
            if vllm_version_is("0.27.1"):
                def _update_seq_lens_cpu(self, scheduler_output: SchedulerOutput, req_ids) -> None:
                    return "old"
            else:
                def _update_seq_lens_cpu(self, scheduler_output: SchedulerOutput, req_ids) -> None:
                    return "new"
    """)
    cls = load_runner_class(source, SimulatedGPUModelRunner, methods=["_update_seq_lens_cpu"])
    # Annotations are dropped (they name vLLM types); the last definition wins, as at run time.
    assert bind(cls, {})._update_seq_lens_cpu(None, []) == "new"


def test_bind_skips_init_and_sets_exactly_the_state(after_fix_source):
    cls = load_runner_class(after_fix_source, SimulatedGPUModelRunner)
    runner = bind(cls, {"speculator": None})
    assert vars(runner) == {"speculator": None}


def test_import_mode_needs_an_importable_tree(after_fix_source):
    with pytest.raises(EnvironmentProblem, match="not importable"):
        load_runner_class(after_fix_source, SimulatedGPUModelRunner, mode="import")


def test_cuda_is_npu_inside_and_restored_after():
    original = torch.cuda.current_stream
    with simulated_accelerator("npu"):
        with cuda_mapped_to_npu():
            assert torch.cuda.current_stream is torch.npu.current_stream
            assert torch.cuda.Event is torch.npu.Event
        assert torch.cuda.current_stream is original
    assert torch.cuda.current_stream is original


def test_decorator_needing_names_the_harness_lacks(tmp_path):
    source = _tree(tmp_path, """
        class NPUModelRunner:
            @support_torch_compile
            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                pass
    """)
    assert _refusal(source, methods=["_update_seq_lens_cpu"]) == (
        "unsupported vllm-ascend layout: NPUModelRunner (decorators) uses names the harness"
        " cannot provide: support_torch_compile (version 9.9.9)"
    )


def test_state_the_spec_lacks_is_a_layout_error_not_an_attribute_error(tmp_path):
    source = _tree(tmp_path, """
        class NPUModelRunner:
            def postprocess_sampled(self, *args):
                pass

            def _copy_num_computed_tokens_to_cpu(self):
                pass

            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                self.input_batch.seq_lens_np[:1] = 0
    """, version="0.40.0")
    runner = load_runner_class(source, SimulatedGPUModelRunner)
    with pytest.raises(UnsupportedLayoutError) as caught:
        run_scenario(runner, RunnerSpec(2), [AddRequest(3), Schedule()])
    assert str(caught.value) == (
        "unsupported vllm-ascend layout: NPUModelRunner methods read NPUModelRunner.input_batch,"
        " which syncgate's runner state does not have (version 0.40.0)"
    )


# The after-fix tree with a local stand-in for vLLM's parent: the import path without vLLM.
LIGHT_PARENT = (
    "from vllm.v1.worker.gpu.model_runner import GPUModelRunner",
    "class GPUModelRunner:\n"
    "    def postprocess_sampled(self, *args):\n"
    "        raise AssertionError",
)


def test_import_mode_splices_the_simulated_parent_under_the_real_class(
    mutant_source, on_import_path
):
    source = mutant_source(*LIGHT_PARENT)
    on_import_path(source.root)
    cls = load_runner_class(source, SimulatedGPUModelRunner, mode="import")
    real = cls.__mro__[1]
    assert real.__module__ == "vllm_ascend.worker.v2.model_runner"
    assert real.__name__ == "NPUModelRunner"
    # super() in the real methods reaches the simulation before the real parent (which raises).
    assert cls.__mro__.index(SimulatedGPUModelRunner) < cls.__mro__.index(real.__base__)
    for spec_steps in (0, 2):
        result = run_scenario(cls, RunnerSpec(3, spec_steps), [
            AddRequest(4), AddRequest(2), Schedule((3,)), Schedule((3,), (2,), (1,), 1),
            Schedule((3,), (2,), (2,), 2),
        ])
        assert check_seq_lens_sync(result.records) == []
        assert result.device_counts == result.truth


def test_import_mode_refuses_a_class_without_the_method(mutant_source, on_import_path):
    source = mutant_source("    def _update_seq_lens_cpu(", "    def _update_seq_lens(")
    light = source.module_file()
    light.write_text(light.read_text().replace(*LIGHT_PARENT))
    on_import_path(source.root)
    expected = "NPUModelRunner has no method _update_seq_lens_cpu"
    with pytest.raises(UnsupportedLayoutError, match=expected):
        load_runner_class(source, SimulatedGPUModelRunner, mode="import")


@pytest.mark.parametrize(("body", "what"), [
    ("open('/etc/passwd').read()", "open"),
    ("__import__('os').system('true')", "__import__"),
    ("eval('1')", "eval"),
    ("exec('x = 1')", "exec"),
    ("getattr(self, 'x')", "getattr"),
    ("compile('1', 'f', 'eval')", "compile"),
])
def test_source_mode_offers_no_way_to_the_host(tmp_path, body, what):
    """The restricted namespace: a builtin the harness does not list is refused before compiling."""
    source = _tree(tmp_path, f"""
        class NPUModelRunner:
            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                return {body}
    """)
    assert _refusal(source, methods=["_update_seq_lens_cpu"]) == (
        "unsupported vllm-ascend layout: NPUModelRunner._update_seq_lens_cpu uses names the"
        f" harness cannot provide: {what} (version 9.9.9)")


@pytest.mark.parametrize("body", [
    "().__class__.__mro__[1].__subclasses__()",
    "self.__dict__",
    "torch.__builtins__",
])
def test_source_mode_refuses_attribute_escapes(tmp_path, body):
    source = _tree(tmp_path, f"""
        class NPUModelRunner:
            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                return {body}
    """)
    message = _refusal(source, methods=["_update_seq_lens_cpu"])
    assert message.startswith("unsupported vllm-ascend layout: NPUModelRunner touches __")
    assert "which the harness does not run" in message


def test_loaded_methods_run_with_only_the_listed_builtins(tmp_path):
    source = _tree(tmp_path, """
        class NPUModelRunner:
            def _update_seq_lens_cpu(self, scheduler_output, req_ids):
                return len(req_ids), sorted(req_ids)
    """)
    cls = load_runner_class(source, SimulatedGPUModelRunner, methods=["_update_seq_lens_cpu"])
    assert cls._update_seq_lens_cpu(None, None, [3, 1]) == (2, [1, 3])
    builtins_seen = cls._update_seq_lens_cpu.__globals__["__builtins__"]
    assert "open" not in builtins_seen
    assert "__import__" not in builtins_seen
