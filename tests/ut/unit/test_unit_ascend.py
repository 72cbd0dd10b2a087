"""The shipped NPU property: the after-fix shape passes, 'before' and mutants fail their rule."""

import pytest

from vllm_syncgate.npu.harness import AscendSource
from vllm_syncgate.unit.ascend import RULES, npu_property

RUNNER_FILE = "vllm_ascend/worker/v2/model_runner.py"


def _by_name(report):
    return {c.name: c for c in report.checks}


def test_after_fix_tree_passes_all_three_checks(data_dir):
    report = npu_property(AscendSource.at(data_dir / "npu" / "after_fix"), mode="ast")
    assert report.passed, report.describe()
    assert [c.name for c in report.checks] == list(RULES.values())
    assert "ast mode" in report.notes


def test_copy_always_mutant_fails_only_the_no_sync_rule_at_its_line(ascend_mutant):
    source = ascend_mutant("        if self.speculator is not None:\n"
                           "            self._copy_num_computed_tokens_to_cpu()",
                           "        self._copy_num_computed_tokens_to_cpu()")
    checks = _by_name(npu_property(source, mode="ast"))
    assert not checks["no_seq_lens_sync_without_speculation"].passed
    assert checks["seq_lens_equal_reference"].passed
    assert checks["no_read_before_event"].passed
    site = checks["no_seq_lens_sync_without_speculation"].site
    assert site.startswith(f"{source.root / RUNNER_FILE}:")
    assert site.endswith(":_copy_num_computed_tokens_to_cpu")


def test_no_wait_mutant_reads_before_the_event(ascend_mutant):
    source = ascend_mutant("            self.num_computed_tokens_event.synchronize()\n", "")
    checks = _by_name(npu_property(source, mode="ast"))
    assert not checks["no_read_before_event"].passed
    assert not checks["seq_lens_equal_reference"].passed  # the early read is poison
    assert checks["no_seq_lens_sync_without_speculation"].passed


def test_a_tree_without_the_methods_fails_every_check_naming_the_layout(ascend_mutant):
    source = ascend_mutant("def _update_seq_lens_cpu(", "def _renamed_update(")
    report = npu_property(source)
    assert not report.passed
    assert all("has no method _update_seq_lens_cpu" in c.detail for c in report.checks)


@pytest.mark.needs_sdist
def test_before_version_fails_the_no_sync_rule(ascend_before_source):
    checks = _by_name(npu_property(AscendSource.at(ascend_before_source)))
    failed = checks["no_seq_lens_sync_without_speculation"]
    assert not failed.passed
    assert failed.site.endswith(":_update_seq_lens_cpu") or failed.site.endswith(
        ":_copy_num_computed_tokens_to_cpu")
    assert checks["seq_lens_equal_reference"].passed
    assert checks["no_read_before_event"].passed
