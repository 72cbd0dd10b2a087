"""The unit level as pytest fixtures: the README's three-line upstream test passes on the
after-fix tree and fails on a mutant of it, naming the call site."""

import shutil

import pytest

EXAMPLE = "npu/upstream_example/test_syncgate_seq_lens_sync.py"
RUNNER = "vllm_ascend/worker/v2/model_runner.py"


@pytest.fixture
def example(pytester, data_dir):
    pytester.makepyfile(test_example=(data_dir / EXAMPLE).read_text())
    return pytester


def test_example_passes_on_the_after_fix_tree(example, data_dir):
    result = example.runpytest_subprocess("-p", "no:randomly",
                               f"--syncgate-ascend-source={data_dir / 'npu' / 'after_fix'}")
    result.assert_outcomes(passed=1)


def test_example_fails_on_a_tree_that_copies_every_step(example, data_dir, tmp_path):
    tree = tmp_path / "copy-always"
    shutil.copytree(data_dir / "npu" / "after_fix", tree)
    runner = tree / RUNNER
    runner.write_text(runner.read_text().replace(
        "        if self.speculator is not None:\n            self._copy_num_computed_tokens_to_cpu()",
        "        self._copy_num_computed_tokens_to_cpu()"))
    result = example.runpytest_subprocess("-p", "no:randomly", f"--syncgate-ascend-source={tree}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*no_seq_lens_sync_without_speculation*{runner}:*"
                                 "_copy_num_computed_tokens_to_cpu*"])


def test_marker_points_one_test_at_another_tree(pytester, data_dir, tmp_path):
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.syncgate_ascend_source({str(tmp_path)!r})
        def test_it(syncgate_npu_property):
            syncgate_npu_property()
    """)
    result = pytester.runpytest_subprocess("-p", "no:randomly",
                                f"--syncgate-ascend-source={data_dir / 'npu' / 'after_fix'}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*no vllm_ascend/ package under {tmp_path}*"])
