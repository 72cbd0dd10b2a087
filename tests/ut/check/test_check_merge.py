"""`check --groups` shares merged by `check merge` give the single run's verdict and report.

The groups' runs are recorded data (journaled steps with real call sites, generations with
token ids) judged by the real judge against the cpu profile and its budgets; the reference is a
table with a real (tiny, word-level) HF tokenizer, so divergences are described as the HF
reference would describe them. One run judges all groups at once; each share judges its own and
writes fanout.json; the merge of the shares must equal the one run: report.json (timings aside),
junit.xml and the PNG's pixels. A generation of the ngram group that differs from its baseline
peer is the case that only the merge can see (each share alone passes it).
"""

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from vllm_syncgate.check import env_header, make_plan
from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.levels import FAIL, NOT_RUN, PASS, LevelCase, LevelResult
from vllm_syncgate.check.levels_report import write_level_reports
from vllm_syncgate.check.merge import FANOUT, merge, select_groups, write_fanout
from vllm_syncgate.check.report import CheckResult
from vllm_syncgate.cli import main
from vllm_syncgate.errors import UsageError
from vllm_syncgate.parity.reference import ReferenceOutput

ARGS = {"device": "cpu", "profile_path": None, "scenarios": None, "rehearse": False,
        "quick": False}
PROMPT_A, PROMPT_B = [1, 2, 3], [4, 5]
HF = {(1, 2, 3): [6, 7, 8, 9], (4, 5): [9, 8, 7, 6]}
WORDS = ["<unk>", "the", "cat", "sat", "on", "a", "warm", "mat", "today", "again"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(path)
    return path


class Reference:
    """The HF reference's interface (generate, decode, outputs) over a table and a tokenizer."""

    def __init__(self, tokenizer_dir):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self.asked = {}

    def generate(self, prompt_ids, max_new_tokens):
        key = tuple(prompt_ids)
        tokens = HF[key][:max_new_tokens]
        if len(tokens) > len(self.asked.get(key, ReferenceOutput([], [])).token_ids):
            self.asked[key] = ReferenceOutput(tokens, [])
        return ReferenceOutput(tokens, [])

    def decode(self, ids):
        return self.tokenizer.decode(list(ids))

    def outputs(self):
        return dict(self.asked)


def recorded_runs(kit, ngram_tokens):
    """One run per group of the cpu profile, with the scenario names the profile gives them."""
    group_run, scenario_run, gen, clean_steps = (kit[k] for k in ("group_run", "scenario_run",
                                                                   "gen", "clean_steps"))
    baseline = group_run("baseline", [
        scenario_run("baseline", "sequential", [gen("short[0]", PROMPT_A, HF[(1, 2, 3)])],
                     clean_steps()),
        scenario_run("baseline", "batched", [gen("short[1]", PROMPT_B, HF[(4, 5)][:3],
                                                 max_tokens=3)], clean_steps(4)),
    ])
    chunked = group_run("async-chunked-preempt", [
        scenario_run("async-chunked-preempt", "chunked_prefill",
                     [gen("long[0]", PROMPT_B, HF[(4, 5)])], clean_steps(5)),
    ])
    ngram = group_run("ngram", [
        scenario_run("ngram", "spec_ngram", [gen("short[0]", PROMPT_A, ngram_tokens,
                                                 prefix_ok=True)], clean_steps(2)),
    ], speculation=True, worker_speculation=True)
    return [baseline, chunked, ngram]


def levels_for(result):
    scan = LevelResult("scan", PASS, duration_s=1.0, notes=["vllm: 12 entry points"],
                       cases=[LevelCase("vllm: entry points", True, "0 failing"),
                              LevelCase("vllm: odd.py", True, "not read", error=True)],
                       scan=[{"tree": "vllm", "findings": []}])
    return [scan, LevelResult("serve", PASS if result.passed else FAIL, duration_s=30.0)]


def write_run(plan, runs, reference, report_dir):
    scenarios, groups = judge(runs, reference, plan.budgets, mode=plan.profile.parity,
                              tolerance=plan.profile.tolerance, default_runner=plan.profile.runner)
    result = CheckResult(env=env_header(plan), profile=plan.profile.to_json(),
                         model={"path": "/models/tiny"}, scenarios=scenarios, groups=groups,
                         timings={f"group:{g.name}": 10.0 for g in plan.groups})
    write_level_reports(report_dir, levels_for(result), result, result.env)
    return result


def shares(kit, tmp_path, tokenizer_dir, ngram_tokens,
           split=(("baseline",), ("async-chunked-preempt", "ngram"))):
    """The single run's report dir, and one report dir per share of ``split``."""
    single = make_plan("cpu", None, None, None, str(tmp_path / "single"), need_device=False)
    runs = {r.profile_group.name: r for r in recorded_runs(kit, ngram_tokens)}
    runs = [replace(r, profile_group=next(g for g in single.groups if g.name == name))
            for name, r in runs.items()]
    write_run(single, runs, Reference(tokenizer_dir), single.report_dir)
    dirs = []
    for i, names in enumerate(split):
        plan = make_plan("cpu", None, None, None, str(tmp_path / f"share{i}"), need_device=False)
        part = select_groups(plan, ",".join(names))
        reference = Reference(tokenizer_dir)
        own = [r for r in runs if r.profile_group.name in names]
        result = write_run(part, own, reference, part.report_dir)
        write_fanout(part.report_dir, ARGS, plan.groups, part, result, reference, tokenizer_dir)
        dirs.append(part.report_dir)
    return single.report_dir, dirs


def report(path):
    doc = json.loads((path / "report.json").read_text())
    doc.pop("timings_s")
    for level in doc["levels"].values():
        level.pop("duration_s")
    return doc


def pixels(path):
    from matplotlib.image import imread

    return imread(path / "syncs_per_step.png").tolist()


@pytest.mark.parametrize("ngram_tokens", [HF[(1, 2, 3)][:3], [6, 7, 2]],
                         ids=["all-pass", "ngram-diverges-from-its-baseline-peer"])
def test_merged_shares_equal_the_single_run(judge_kit, tmp_path, tokenizer_dir, ngram_tokens,
                                            capsys):
    single, dirs = shares(judge_kit, tmp_path, tokenizer_dir, ngram_tokens)
    out = tmp_path / "merged"
    code = main(["check", "merge", *map(str, dirs), "--report-dir", str(out)])
    single_doc = report(single)
    assert code == (0 if single_doc["passed"] else 1)
    assert report(out) == single_doc
    assert ET.tostring(ET.parse(out / "junit.xml").getroot()) == ET.tostring(
        ET.parse(single / "junit.xml").getroot())
    assert pixels(out) == pixels(single)
    timings = json.loads((out / "report.json").read_text())["timings_s"]
    assert {"group:baseline", "group:async-chunked-preempt", "group:ngram"} <= set(timings)
    assert f"syncgate check: {'PASS' if code == 0 else 'FAIL'}" in capsys.readouterr().out


def test_only_the_merge_sees_a_divergence_across_shares(judge_kit, tmp_path, tokenizer_dir):
    _, dirs = shares(judge_kit, tmp_path, tokenizer_dir, [6, 7, 2])
    alone = json.loads((dirs[1] / "report.json").read_text())
    [ngram_alone] = [s for s in alone["scenarios"] if s["group"] == "ngram"]
    assert ngram_alone["parity"]["peers"] == []  # its baseline peer ran in the other share
    merged = merge(dirs, str(tmp_path / "merged"))
    assert merged.result is not None
    [failing] = [v for v in merged.result.scenarios if not v.passed]
    assert failing.run.key == "ngram/spec_ngram"
    [peer] = failing.peers
    assert peer.against == "baseline/sequential:short[0]"
    # described with the recorded tokenizer, as the single run's HF tokenizer did
    assert peer.divergence.text == {"context": "warm mat", "expected": "today", "actual": "cat"}


def test_a_share_that_never_arrived_fails_the_gate_and_is_named(judge_kit, tmp_path, tokenizer_dir,
                                                                 capsys):
    _, dirs = shares(judge_kit, tmp_path, tokenizer_dir, HF[(1, 2, 3)][:3],
                     split=(("baseline",), ("async-chunked-preempt",), ("ngram",)))
    out = tmp_path / "merged"
    code = main(["check", "merge", str(dirs[0]), str(dirs[1]), "--report-dir", str(out)])
    assert code == 1
    doc = json.loads((out / "report.json").read_text())
    assert doc["passed"] is False
    assert doc["levels"]["serve"]["status"] == "fail"
    assert any("ngram" in note for note in doc["levels"]["serve"]["notes"])
    # what arrived is judged: both groups' scenarios are in the report and pass
    assert {s["group"] for s in doc["scenarios"]} == {"baseline", "async-chunked-preempt"}
    assert all(s["passed"] for s in doc["scenarios"])
    assert "no report of group(s) ngram" in capsys.readouterr().out


def test_bad_merges_are_one_line_and_exit_2(judge_kit, tmp_path, tokenizer_dir, capsys):
    _, dirs = shares(judge_kit, tmp_path, tokenizer_dir, HF[(1, 2, 3)][:3])
    out = str(tmp_path / "merged")
    assert main(["check", "merge", str(dirs[0]), str(dirs[0]), "--report-dir", out]) == 2
    assert "group 'baseline' is also in" in capsys.readouterr().err
    doc = json.loads((dirs[1] / FANOUT).read_text())
    del doc["runs"]
    (dirs[1] / FANOUT).write_text(json.dumps(doc))
    assert main(["check", "merge", str(dirs[0]), str(dirs[1]), "--report-dir", out]) == 2
    assert "fanout.json: incomplete (no runs)" in capsys.readouterr().err
    (dirs[1] / FANOUT).unlink()
    assert main(["check", "merge", str(dirs[0]), str(dirs[1]), "--report-dir", out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no fanout.json" in err


def test_groups_selects_in_profile_order_and_refuses_unknown_names(tmp_path):
    plan = make_plan("cpu", None, None, None, str(tmp_path), need_device=False)
    assert [g.name for g in select_groups(plan, "ngram,baseline").groups] == ["baseline", "ngram"]
    with pytest.raises(UsageError, match=r"unknown group 'nope'.*known: baseline"):
        select_groups(plan, "baseline,nope")
    assert main(["check", "--groups", "nope", "--levels", "scan",
                 "--report-dir", str(tmp_path)]) == 2


def test_a_share_whose_serve_level_did_not_run_cannot_pass(judge_kit, tmp_path, tokenizer_dir):
    """One job's unit level failed, so it started no server: the merged serve level is not run
    (not the other job's pass) and the gate fails."""
    _, dirs = shares(judge_kit, tmp_path, tokenizer_dir, HF[(1, 2, 3)][:3])
    plan = make_plan("cpu", None, None, None, str(dirs[1]), need_device=False)
    part = select_groups(plan, "async-chunked-preempt,ngram")
    unit = LevelResult("unit", FAIL, duration_s=2.0,
                       cases=[LevelCase("probe", False, "a sync in the decode loop")])
    levels = [levels_for(CheckResult({}, {}, {}, [], []))[0], unit,
              LevelResult("serve", NOT_RUN, "not run: the unit level failed")]
    write_level_reports(part.report_dir, levels, None, env_header(part))
    write_fanout(part.report_dir, ARGS, plan.groups, part, None, None, None)
    merged = merge(dirs, str(tmp_path / "merged"))
    assert merged.result is None
    status = {lv.name: lv.status for lv in merged.levels}
    assert status == {"scan": PASS, "unit": FAIL, "serve": NOT_RUN}
