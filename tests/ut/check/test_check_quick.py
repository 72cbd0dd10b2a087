"""``syncgate check --quick``: one server, the profile's quick scenarios, the same findings as the
full check for them (report_differences), and --help naming everything it leaves out."""

import copy

import pytest

from vllm_syncgate.check.compare import report_differences
from vllm_syncgate.check.plan import left_out_by_quick, make_plan
from vllm_syncgate.cli import main
from vllm_syncgate.errors import ProfileError, UsageError
from vllm_syncgate.profiles import builtin_profile_path, load_profile, parse_profile


def _base(**extra):
    return {"device": "cpu", "runner": "v1", "model": "llama", "budgets": "cpu",
            "parity": "exact", "seed": 0, "startup_timeout_s": 10, "request_timeout_s": 10,
            "serve": {"flags": []},
            "group": [{"name": "a", "scenarios": ["sequential", "batched", "abort"]},
                      {"name": "b", "scenarios": ["spec_ngram"]}], **extra}


def test_quick_plan_is_one_server_with_the_quick_scenarios(tmp_path):
    plan = make_plan("cpu", None, None, None, str(tmp_path), quick=True)
    [group] = plan.groups
    profile = load_profile(builtin_profile_path("cpu"))
    assert group.name == "baseline"
    assert set(group.scenarios) == set(profile.quick)
    assert group.flags == profile.groups[0].flags  # the same server as the full check's


def test_quick_with_scenarios_or_without_a_quick_set_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="drop --scenarios"):
        make_plan("cpu", None, None, ["sequential"], str(tmp_path), quick=True)
    path = tmp_path / "p.toml"
    path.write_text('device = "cpu"\nrunner = "v1"\nmodel = "llama"\nbudgets = "cpu"\n'
                    'parity = "exact"\nseed = 0\nstartup_timeout_s = 9\nrequest_timeout_s = 9\n'
                    '[serve]\nflags = []\n[[group]]\nname = "g"\nscenarios = ["sequential"]\n')
    with pytest.raises(UsageError, match="defines no quick scenarios"):
        make_plan(None, str(path), None, None, str(tmp_path / "r"), quick=True)


@pytest.mark.parametrize("quick", ["sequential", [1]])
def test_a_quick_set_that_is_not_a_list_of_names_names_the_key(quick):
    with pytest.raises(ProfileError) as info:
        parse_profile(_base(quick=quick), "x.toml")
    assert info.value.key == "quick"


@pytest.mark.parametrize("quick", ['["sequential", "spec_ngram"]', '["warp"]'])
def test_a_quick_set_that_is_not_one_groups_scenarios_is_refused_at_plan(quick, tmp_path):
    text = builtin_profile_path("cpu").read_text()
    start = text.index("quick = [")
    path = tmp_path / "p.toml"
    path.write_text(text[:start] + f"quick = {quick}" + text[text.index("\n", start):])
    with pytest.raises(ProfileError, match=r"p\.toml: quick: must name scenarios of one group"):
        make_plan(None, str(path), None, None, str(tmp_path / "r"))


def test_a_quick_set_of_one_group_loads_and_lists_what_it_leaves_out():
    profile = parse_profile(_base(quick=["batched", "sequential"]), "x.toml")
    assert profile.quick == ("batched", "sequential")
    assert left_out_by_quick(profile) == ["abort on a", "b group (spec_ngram)"]


def test_help_names_every_scenario_quick_leaves_out(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    quick_help = text[text.index("--quick serve"):text.index("--quiet no")]
    profile = load_profile(builtin_profile_path("cpu"))
    for group in profile.groups:
        for name in group.scenarios:
            assert name in quick_help, name


def _report():
    scenario = {
        "key": "baseline/sequential", "passed": True, "duration_s": 3.9,
        "steps": {"prefill": 16, "decode": 496, "empty": 16},
        "parity": {"hf": [], "peers": [], "tolerated": []}, "budget": "cpu/v1/spec-off",
        "mean_syncs_per_decode_step": {"event_sync": 1.0, "device_sync": 0.0},
        "sync_verdict": {"passed": True, "breaches": [], "allowed": {"x:_to_list": 512}},
        "generations": [{"label": "short[0]", "token_ids": [5, 6, 7]}],
    }
    other = copy.deepcopy(scenario) | {"key": "ngram/spec_ngram", "budget": "cpu/v1/spec-on"}
    return {"passed": True, "scenarios": [scenario, other]}


def test_the_same_findings_are_no_difference_whatever_the_durations():
    full = _report()
    quick = {"passed": True, "scenarios": [copy.deepcopy(full["scenarios"][0])]}
    quick["scenarios"][0]["duration_s"] = 0.5
    assert report_differences(full, quick) == []


@pytest.mark.parametrize(("break_it", "named"), [
    (lambda s: s["steps"].update(decode=495), "steps"),
    (lambda s: s.update(passed=False), "passed"),
    (lambda s: s["parity"]["hf"].append({"label": "short[0]", "index": 1}), "parity"),
    (lambda s: s["sync_verdict"]["breaches"].append({"kind": "device_sync"}), "sync_verdict"),
    (lambda s: s["generations"][0]["token_ids"].__setitem__(2, 8), "tokens differ (short[0])"),
    (lambda s: s.update(key="baseline/streaming"), "not in the larger report"),
])
def test_any_differing_finding_is_named(break_it, named):
    full = _report()
    quick = {"passed": True, "scenarios": [copy.deepcopy(full["scenarios"][0])]}
    break_it(quick["scenarios"][0])
    [line] = report_differences(full, quick)
    assert named in line


def test_steps_of_a_scenario_with_requests_in_flight_together_are_timing_not_findings():
    full = _report()
    full["scenarios"][0] |= {"key": "baseline/batched", "scenario": "batched"}
    quick = {"passed": True, "scenarios": [copy.deepcopy(full["scenarios"][0])]}
    quick["scenarios"][0]["steps"] = {"prefill": 15, "decode": 495, "mixed": 1, "empty": 16}
    quick["scenarios"][0]["sync_verdict"]["allowed"] = {"x:_to_list": 511}  # one step fewer
    assert report_differences(full, quick) == []
    quick["scenarios"][0]["generations"][0]["token_ids"][0] = 9  # what it found still counts
    [line] = report_differences(full, quick)
    assert "tokens differ" in line


def test_a_sync_allowed_only_in_one_run_of_a_batched_scenario_is_a_difference():
    full = _report()
    full["scenarios"][0] |= {"key": "baseline/batched", "scenario": "batched"}
    quick = {"passed": True, "scenarios": [copy.deepcopy(full["scenarios"][0])]}
    quick["scenarios"][0]["sync_verdict"]["allowed"] = {"x:_to_list": 511, "y:item": 3}
    [line] = report_differences(full, quick)
    assert line.startswith("baseline/batched: sync_verdict")


def test_an_empty_smaller_report_is_a_difference():
    assert report_differences(_report(), {"scenarios": []}) == [
        "the smaller report has no scenarios"]
