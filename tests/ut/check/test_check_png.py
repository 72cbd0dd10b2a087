"""syncs_per_step.png explains itself: budget line, prefill/decode split, PASS/FAIL per scenario,
labels that do not overlap, titles wrapped and never cut."""

import random

import matplotlib
import pytest

from vllm_syncgate.audit.events import StepKind
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.report import CheckResult, plot
from vllm_syncgate.parity import Tolerance

matplotlib.use("Agg")
import matplotlib.figure

LONG_FLAGS = ["--dtype", "float32", "--max-model-len", "512", "--enforce-eager", "--seed", "0",
              "--async-scheduling", "--max-num-batched-tokens", "64", "--num-gpu-blocks-override",
              "5", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, '
              '"prompt_lookup_max": 4, "prompt_lookup_min": 2}']


def realistic_result(kit, seed=0):
    """Three groups like the cpu profile's; one scenario has a breach, one has only 2 steps."""
    rng = random.Random(seed)

    def steps(n, broken=False):
        made = kit["mutant_steps"](n) if broken else kit["clean_steps"](n)
        for i, step in enumerate(made):
            step.index = i
            step.kind = StepKind.PREFILL if i % 17 == 0 else StepKind.DECODE
        return made

    names = {"baseline": ["sequential", "batched", "concurrent", "streaming", "stop_and_max_tokens",
                          "abort"],
             "async-chunked-preempt": ["async_scheduling", "chunked_prefill", "preemption"],
             "ngram": ["spec_ngram"]}
    groups = []
    for group, scenarios in names.items():
        runs = [kit["scenario_run"](group, name,
                                    [], steps(2 if name == "streaming" else rng.randint(20, 90),
                                              broken=name == "batched"))
                for name in scenarios]
        run = kit["group_run"](group, runs)
        run.flags = LONG_FLAGS
        groups.append(run)
    scenarios, verdicts = judge(groups, kit["NoReference"](), kit["budgets"], mode="exact",
                                tolerance=Tolerance(), default_runner="v1")
    return CheckResult({"device": "cpu"}, {}, {}, scenarios, verdicts)


@pytest.fixture
def figure(monkeypatch):
    """The figure plot() saves, kept open for inspection."""
    kept = {}
    save = matplotlib.figure.Figure.savefig

    def spy(self, path, *args, **kwargs):
        kept["fig"] = self
        return save(self, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    monkeypatch.setattr("matplotlib.pyplot.close", lambda fig=None: None)
    return kept


def _texts(fig):
    return [t for ax in fig.axes for t in ax.texts] + list(fig.texts)


def test_png_has_budget_line_split_verdicts_and_full_titles(judge_kit, figure, tmp_path):
    result = realistic_result(judge_kit)
    plot(result, tmp_path / "s.png")
    fig = figure["fig"]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert "budget: counted syncs allowed per step" in legend
    assert any(t.startswith("prefill / mixed step") for t in legend)
    listed = [t.get_text() for t in _texts(fig) if ". PASS" in t.get_text() or ". FAIL" in t.get_text()]
    assert len(listed) == 10
    assert any(t.startswith("2. FAIL  batched  (prefill ") for t in listed)
    assert sum(". FAIL" in t for t in listed) == 1
    for ax in fig.axes:  # whole flags in the title, wrapped onto lines
        title = ax.get_title(loc="left")
        assert title.replace("\n", " ").endswith('"prompt_lookup_min": 2}')
        assert all(len(line) <= 110 for line in title.splitlines())
        assert any(c.get_label().startswith("prefill") for c in ax.collections)  # the step-kind strip


def test_png_labels_do_not_overlap(judge_kit, figure, tmp_path):
    plot(realistic_result(judge_kit), tmp_path / "s.png")
    fig = figure["fig"]
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig) if t.get_text()]
    boxes += [(ax.get_title(loc="left"), ax.title.get_window_extent(renderer)) for ax in fig.axes]
    boxes += [(f"title of {ax.get_title(loc='left')[:20]}", ax._left_title.get_window_extent(renderer))
              for ax in fig.axes]
    overlapping = [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
                   if box_a.overlaps(box_b) and box_a.width and box_b.width]
    assert overlapping == []
    width = fig.get_figwidth() * fig.dpi
    assert all(box.x1 <= width + 1 for _, box in boxes)  # nothing drawn off the image
