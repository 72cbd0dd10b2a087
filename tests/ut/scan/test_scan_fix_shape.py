"""The #13382-shaped fixture passes the gate; mutants of it fail with the right site."""

from __future__ import annotations

from pathlib import Path

ENTRIES = ("--entry", "NPUModelRunner.execute_model", "--entry", "NPUModelRunner.sample_tokens")


def mutate(path: Path, anchor: str, insert: str) -> int:
    """Insert ``insert`` after the line containing ``anchor``; returns the new line's number."""
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if anchor in line)
    indent = len(lines[index + 1]) - len(lines[index + 1].lstrip())
    lines.insert(index + 1, " " * indent + insert)
    path.write_text("\n".join(lines) + "\n")
    return index + 2


def test_fixed_runner_passes(scan_data, scan_json):
    code, report = scan_json(str(scan_data / "fix_shape"), *ENTRIES)
    assert code == 0
    wait = [f for f in report["findings"] if f["qualname"] == "NPUModelRunner._update_seq_lens_cpu"]
    assert [(f["kind"], f["guard"]) for f in wait] == [("event_sync", "speculation")]
    assert report["summary"]["failing"] == 0


def test_unguarded_synchronize_mutant_fails(fix_shape_copy, scan_json):
    line = mutate(
        fix_shape_copy / "npu_runner.py",
        "def _update_seq_lens_cpu",
        "self.num_computed_tokens_event.synchronize()",
    )
    code, report = scan_json(str(fix_shape_copy), *ENTRIES)
    assert code == 1
    failing = [f for f in report["findings"] if f["guard"] == "none"]
    assert [(f["line"], f["kind"], f["qualname"], f["entry"]) for f in failing] == [
        (line, "event_sync", "NPUModelRunner._update_seq_lens_cpu", "NPUModelRunner.execute_model")
    ]
    assert failing[0]["path"] == [
        "GPUModelRunner.execute_model",
        "NPUModelRunner.prepare_inputs",
        "NPUModelRunner._update_seq_lens_cpu",
    ]


def test_tolist_on_device_tensor_mutant_fails(fix_shape_copy, scan_json):
    line = mutate(
        fix_shape_copy / "npu_runner.py",
        "super().postprocess_sampled(sampled)",
        "_ = self.req_states.num_computed_tokens_gpu.tolist()",
    )
    code, report = scan_json(str(fix_shape_copy), *ENTRIES)
    assert code == 1
    failing = [(f["line"], f["kind"], f["api"]) for f in report["findings"] if f["guard"] == "none"]
    assert failing == [(line, "blocking_readback", "Tensor.tolist")]


def test_copy_made_unconditional_is_still_clean_but_wait_is_not(fix_shape_copy, scan_json):
    """The 'before' shape of #13382: the wait runs without a speculator."""
    source = fix_shape_copy / "npu_runner.py"
    text = source.read_text()
    before = text.replace(
        "        if self.speculator is not None:\n            self.num_computed_tokens_event",
        "        if True:\n            self.num_computed_tokens_event",
    )
    assert before != text
    source.write_text(before)
    code, report = scan_json(str(fix_shape_copy), *ENTRIES)
    assert code == 1
    assert [f["qualname"] for f in report["findings"] if f["guard"] == "none"] == [
        "NPUModelRunner._update_seq_lens_cpu"
    ]
