"""``--shard I/N`` and ``repro merge``: shares, shard files, verdicts across runners, refusals."""

import copy
import json
import xml.etree.ElementTree as ET

import pytest

from vllm_syncgate.cli import main
from vllm_syncgate.errors import LogParseError, UsageError
from vllm_syncgate.repro.judge import ReproVerdict
from vllm_syncgate.repro.shardfile import SCHEMA, merge, merge_documents
from vllm_syncgate.repro.shards import Shard, parse_shard, shard_from_env

SUITE_TESTS = {
    "case_broken.py::TestAlways::test_broken": ReproVerdict.BROKEN,
    "case_flaky.py::test_flaky_third": ReproVerdict.FLAKY,
    "case_order.py::test_victim": ReproVerdict.ORDER_DEPENDENT,
    "case_runner.py::test_runner_quirk": ReproVerdict.ENV_DEPENDENT,
}
QUIRK_SHARD = 2


@pytest.mark.parametrize("count", [1, 3, 4, 7])
def test_shares_partition_every_test_s_runs(count):
    shares = [Shard(i, count).runs_of("digest", "t.py::test_a", 59) for i in range(1, count + 1)]
    flat = sorted(r for share in shares for r in share)
    assert flat == list(range(1, 60))  # every run once, on exactly one shard
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    # a different log moves the split, the same log never does
    assert shares[0] == Shard(1, count).runs_of("digest", "t.py::test_a", 59)
    assert Shard(1, 1).seed("a") != Shard(1, 1).seed("b")


@pytest.mark.parametrize(
    ("env", "count", "expected"),
    [({"SYNCGATE_SHARD": "3/4", "BUILDKITE_PARALLEL_JOB": "0"}, None, (3, 4)),
     ({"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, None, (1, 5)),
     ({"JOB_COMPLETION_INDEX": "6"}, 8, (7, 8)),
     ({"JOB_COMPLETION_INDEX": "0", "SYNCGATE_SHARD_COUNT": "2"}, None, (1, 2))],
)
def test_shard_auto_reads_github_buildkite_and_kubernetes(env, count, expected):
    shard = shard_from_env(env, count)
    assert (shard.index, shard.count) == expected


@pytest.mark.parametrize(
    ("argv", "env", "problem"),
    [(["--shard", "0/4"], {}, "--shard '0/4': expected I/N"),
     (["--shard", "5/4"], {}, "--shard '5/4'"),
     (["--shard", "two/4"], {}, "--shard 'two/4'"),
     (["--shard", "auto"], {}, "no shard index in the environment"),
     (["--shard", "auto"], {"SYNCGATE_SHARD": "4"}, "$SYNCGATE_SHARD '4'"),
     (["--shard", "auto"], {"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
      "$BUILDKITE_PARALLEL_JOB=4 is not below the shard count 4"),
     (["--shard", "auto"], {"BUILDKITE_PARALLEL_JOB": "-1", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
      "$BUILDKITE_PARALLEL_JOB='-1' is not an integer"),
     (["--shard", "auto"], {"BUILDKITE_PARALLEL_JOB": "\u0661", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
      "is not an integer"),  # an Arabic-Indic one: int() takes it, an index must not
     (["--shard", "auto"], {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "\u00b2"},
      "is not an integer"),  # superscript two: isdigit() but int() raises
     (["--shard", "auto"], {"BUILDKITE_PARALLEL_JOB": "1"}, "BUILDKITE_PARALLEL_JOB_COUNT is not"),
     (["--shard", "auto"], {"JOB_COMPLETION_INDEX": "1"}, "needs the job's completions"),
     (["--shard", "auto", "--shard-count", "0"], {"JOB_COMPLETION_INDEX": "0"},
      "--shard-count must be at least 1"),
     (["--shard-count", "3"], {}, "--shard-count needs --shard auto")],
)
def test_bad_shard_values_exit_2_with_one_line(repro_logs, monkeypatch, capsys, argv, env,
                                               problem):
    for name in ("SYNCGATE_SHARD", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT",
                 "JOB_COMPLETION_INDEX", "SYNCGATE_SHARD_COUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["repro", str(repro_logs / "shard_suite.txt"), *argv]) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


def test_parse_shard_accepts_the_documented_form():
    assert parse_shard(" 2 / 4 ") == Shard(2, 4)
    with pytest.raises(UsageError):
        Shard(0, 0)


@pytest.fixture(scope="module")
def four_shards(tmp_path_factory):
    """The four-verdict suite, 4 shards run for real by the CLI; shard 2 has the quirk."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "data" / "repro"
    out = tmp_path_factory.mktemp("shards")
    for index in range(1, 5):
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("SUITE_RUNNER_QUIRK", raising=False)
            mp.setenv("SYNCGATE_SHARD", f"{index}/4")
            if index == QUIRK_SHARD:
                mp.setenv("SUITE_RUNNER_QUIRK", "1")
            code = main(["repro", str(data / "logs" / "shard_suite.txt"), "--shard", "auto",
                         "--rootdir", str(data / "suite"), "--runs", "20", "-n", "1",
                         "--replay-order", "--report-dir", str(out)])
        assert code == 0
    return out


def _docs(directory):
    return {p: json.loads(p.read_text()) for p in sorted(directory.glob("repro-shard-*.json"))}


@pytest.mark.slow
def test_four_shards_merge_into_exactly_the_four_verdicts(four_shards, tmp_path, capsys):
    docs = _docs(four_shards)
    assert [p.name for p in docs] == [f"repro-shard-{i}-of-4.json" for i in range(1, 5)]
    one = docs[four_shards / "repro-shard-1-of-4.json"]
    assert (one["schema"], one["complete"], one["shard"]) == (SCHEMA, True,
                                                             {"index": 1, "count": 4})
    for key in ("host", "syncgate", "torch", "vllm", "vllm_ascend", "device", "driver", "cann",
                "image_digest", "env_set"):
        assert key in one["header"]
    broken = next(t for t in one["tests"] if "test_broken" in t["nodeid"])
    run = broken["runs"][0]
    assert run["signature"] == "AssertionError at case_broken.py:3"
    assert {"run", "outcome", "duration", "order", "longrepr"} <= set(run)

    reports = tmp_path / "out"
    code = main(["repro", "merge", str(four_shards), "--report-dir", str(reports)])
    out = capsys.readouterr().out
    assert code == 1  # something is broken
    data = json.loads((reports / "report.json").read_text())
    by_id = {t["nodeid"]: t for t in data["tests"]}
    assert {n: ReproVerdict(t["verdict"]) for n, t in by_id.items()} == SUITE_TESTS
    assert all(t["runs"] == 20 for t in by_id.values())  # 5 runs on each of 4 shards
    quirk = by_id["case_runner.py::test_runner_quirk"]
    assert quirk["split"]["field"] == "env_set.SUITE_RUNNER_QUIRK"
    assert (quirk["split"]["value"], quirk["split"]["others"]) == ("set", ["unset"])
    assert "fails only where env_set.SUITE_RUNNER_QUIRK = set: 5/5 runs there, 0/15" in out
    flaky = by_id["case_flaky.py::test_flaky_third"]
    assert flaky["interval"][0] < 0.3 < flaky["interval"][1]
    assert data["notes"] == []
    # JUnit: the flaky test passes with one flakyFailure per failed run, message and traceback
    suite = ET.parse(reports / "junit.xml").getroot()
    case = next(c for c in suite.iter("testcase") if c.get("name") == "test_flaky_third")
    failures = case.findall("flakyFailure")  # isolation and CI-order replay failures alike
    assert len(failures) == flaky["failures"] + flaky["replay_failures"] > flaky["failures"] > 0
    assert case.find("failure") is None
    assert all(f.get("message").endswith("AssertionError: coin came up tails") for f in failures)
    assert all("fails(\"flaky_third\", 0.3)" in f.find("stackTrace").text for f in failures)


def _verdicts(docs):
    return {v.nodeid: v.verdict for v in merge_documents(docs).verdicts}


def _test(doc, name):
    return next(t for t in doc["tests"] if name in t["nodeid"])


@pytest.mark.slow
@pytest.mark.parametrize(("name", "mutate", "becomes"), [
    # broken: one run passes somewhere -> it is flaky, not broken
    ("test_broken", lambda docs: _test(next(iter(docs.values())), "test_broken")["runs"][0]
     .update(outcome="passed"), ReproVerdict.FLAKY),
    # flaky: its failed runs (alone and in CI order) pass -> not reproduced
    ("test_flaky_third", lambda docs: [r.update(outcome="passed") for d in docs.values()
                                       for t in [_test(d, "test_flaky_third")]
                                       for r in t["runs"] + t["replays"]],
     ReproVerdict.NOT_REPRODUCED),
    # order-dependent: without the CI-order replays nothing fails
    ("test_victim", lambda docs: [_test(d, "test_victim").update(replays=[])
                                  for d in docs.values()], ReproVerdict.NOT_REPRODUCED),
    # environment-dependent: another runner has the quirk too and passes -> just flaky
    ("test_runner_quirk", lambda docs: [d["header"]["env_set"].append("SUITE_RUNNER_QUIRK")
                                        for d in docs.values()
                                        if d["shard"]["index"] != QUIRK_SHARD],
     ReproVerdict.FLAKY),
])
def test_each_verdict_fails_on_a_broken_variant(four_shards, name, mutate, becomes):
    docs = _docs(four_shards)
    nodeid = next(n for n in SUITE_TESTS if n.endswith(name))
    assert _verdicts(docs)[nodeid] is SUITE_TESTS[nodeid]
    mutant = copy.deepcopy(docs)
    mutate(mutant)
    assert _verdicts(mutant)[nodeid] is becomes


@pytest.mark.slow
def test_missing_and_truncated_shards_are_named_and_judged_on_what_arrived(four_shards, tmp_path,
                                                                          capsys):
    partial = tmp_path / "partial"
    partial.mkdir()
    for index in (1, 2):
        (partial / f"repro-shard-{index}-of-4.json").write_bytes(
            (four_shards / f"repro-shard-{index}-of-4.json").read_bytes())
    whole = (four_shards / "repro-shard-3-of-4.json").read_bytes()
    (partial / "repro-shard-3-of-4.json").write_bytes(whole[: len(whole) // 2])  # cut copy
    # shard 4 never arrived (its job was killed)
    merged = merge([partial])
    assert merged.notes == [
        f"shard file {partial / 'repro-shard-3-of-4.json'} is truncated (shard 3/4): left out",
        "shard 4/4 missing: the verdicts rest on the runs that arrived"]
    full = merge([four_shards])
    for name in ("test_broken", "test_flaky_third"):
        part = next(v for v in merged.verdicts if name in v.nodeid)
        all_ = next(v for v in full.verdicts if name in v.nodeid)
        assert part.verdict is all_.verdict
        assert len(part.runs) == 10
        assert part.interval[1] - part.interval[0] > all_.interval[1] - all_.interval[0]
    assert main(["repro", "merge", str(partial)]) == 1
    out = capsys.readouterr().out
    assert "NOTE: shard 4/4 missing" in out
    assert "repro-shard-3-of-4.json is truncated (shard 3/4)" in out


@pytest.mark.slow
@pytest.mark.parametrize(("edit", "problem"), [
    (lambda d: d["log"].update(digest="0" * 64), "has log digest"),
    (lambda d: d.update(syncgate="9.9.9"), "has syncgate version '0.1.0', "),
    (lambda d: d["settings"].update(runs=99), "has settings"),
    (lambda d: d["shard"].update(count=5), "has shard count 4, "),
    (lambda d: d["shard"].update(index=1), "shard 1/4 given twice"),
])
def test_shards_that_do_not_belong_together_refuse_to_merge(four_shards, tmp_path, capsys, edit,
                                                            problem):
    odd = json.loads((four_shards / "repro-shard-2-of-4.json").read_text())
    edit(odd)
    other = tmp_path / "odd.json"
    other.write_text(json.dumps(odd))
    assert main(["repro", "merge", str(four_shards / "repro-shard-1-of-4.json"),
                 str(other)]) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("content", "problem"), [
    (b'{"schema": "something/1"}', "not a syncgate repro shard file (schema 'something/1'"),
    (b"[1, 2", "not a syncgate repro shard file"),
    (b'{"schema": "syncgate.repro.shard/1", "tests": [', "no complete shard file among 1"),
])
def test_a_file_that_is_no_shard_is_exit_2(tmp_path, capsys, content, problem):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    assert main(["repro", "merge", str(path)]) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1
    with pytest.raises((LogParseError, UsageError)):
        merge([path])


def test_merge_needs_shards_and_a_run_needs_one_log(tmp_path, capsys):
    assert main(["repro", "merge"]) == 2
    assert "name at least one shard file" in capsys.readouterr().err
    assert main(["repro", "merge", str(tmp_path)]) == 2
    assert "no repro-shard-I-of-N.json files" in capsys.readouterr().err
    assert main(["repro", "a.log", "b.log"]) == 2
    assert "expected one LOG" in capsys.readouterr().err


@pytest.mark.slow
def test_one_machine_and_merged_shards_give_the_same_verdict_for_the_same_runs(
        repro_logs, suite_dir, tmp_path, capsys):
    """The suite's outcomes depend only on the run index, so one machine doing runs 1..8 and
    two shards doing 4 each produce the same records, and must get the same verdicts."""
    log = str(repro_logs / "shard_suite.txt")
    common = ["--rootdir", str(suite_dir), "--runs", "8", "-n", "1", "--no-early-stop"]
    assert main(["repro", log, *common, "--report-dir", str(tmp_path / "one")]) == 1
    for index in (1, 2):
        assert main(["repro", log, *common, "--shard", f"{index}/2",
                     "--report-dir", str(tmp_path / "shards")]) == 0
    assert main(["repro", "merge", str(tmp_path / "shards"),
                 "--report-dir", str(tmp_path / "merged")]) == 1
    capsys.readouterr()

    def summary(name):
        data = json.loads((tmp_path / name / "report.json").read_text())
        return {t["nodeid"]: (t["verdict"], t["failures"], t["runs"], t["interval"],
                              t["upper_bound"], [(r["run"], r["outcome"]) for r in t["results"]])
                for t in data["tests"]}

    one, merged = summary("one"), summary("merged")
    assert one == merged
    assert one["case_flaky.py::test_flaky_third"][0] == "flaky"
