"""Bad input to `syncgate check` and to profiles: one line, exit 2, nothing started or written."""

from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import builtin_budget_path
from vllm_syncgate.check.plan import make_plan
from vllm_syncgate.check.rehearsal import device_problem
from vllm_syncgate.cli import main
from vllm_syncgate.errors import ProfileError, UsageError
from vllm_syncgate.parity import Tolerance
from vllm_syncgate.profiles import builtin_profile_path, load_profile, parse_profile


def _run(capsys, *args):
    code = main(["check", *args])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda t: ["--model", str(t / "missing")], "model directory does not exist"),
        (lambda t: ["--model", str(t)], "not a model directory (missing config.json"),
        (lambda t: ["--scenarios", "warp_speed"], "unknown scenario 'warp_speed'"),
        (lambda t: ["--device", "npu", "--profile", str(builtin_profile_path("cpu"))],
         "--device npu contradicts"),
        (lambda t: ["--profile", str(t / "nope.toml")], "nope.toml: <file>: does not exist"),
    ],
    ids=["missing-model", "invalid-model", "unknown-scenario", "device-contradiction",
         "missing-profile"],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, make_args, message):
    code, err = _run(capsys, *make_args(tmp_path), "--report-dir", str(tmp_path / "report"))
    assert code == 2
    assert len([line for line in err if line.startswith("syncgate check: error:")]) == 1
    assert message in err[-1]
    assert not (tmp_path / "report" / "logs").exists()  # no server was started


def test_unwritable_report_dir_is_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, err = _run(capsys, "--report-dir", str(blocker / "report"))
    assert code == 2
    assert err == [f"syncgate check: error: {blocker / 'report'}: report directory is not "
                   "writable (Not a directory)"]


def test_scenario_selection_keeps_only_needed_groups(tmp_path):
    plan = make_plan("cpu", None, None, ["sequential", "spec_ngram"], str(tmp_path))
    assert [(g.name, g.scenarios) for g in plan.groups] == [
        ("baseline", ("sequential",)), ("ngram", ("spec_ngram",))]
    assert plan.recipe == "llama"
    assert plan.budgets.profile == "cpu"


def test_unknown_scenario_in_a_profile_names_file_and_key(tmp_path):
    text = builtin_profile_path("cpu").read_text().replace('"batched", "concurrent"',
                                                           '"bached", "concurrent"', 1)
    (tmp_path / "p.toml").write_text(text)
    with pytest.raises(ProfileError, match=r"p\.toml: group\[0\]\.scenarios: unknown scenario"):
        make_plan(None, str(tmp_path / "p.toml"), None, None, str(tmp_path / "r"))


@pytest.mark.parametrize("device", ["cpu", "cuda", "npu"])
def test_builtin_profiles_load_and_plan(device, tmp_path):
    profile = load_profile(builtin_profile_path(device))
    assert profile.device == device
    assert {s for g in profile.groups for s in g.scenarios} >= {"sequential", "spec_ngram"}
    assert any(g.speculation for g in profile.groups)
    # a device profile without its device here is refused unless rehearsed on the CPU stack
    absent = device_problem(device) is not None
    make_plan(device, None, None, None, str(tmp_path), rehearse=absent)


def _base():
    return {"device": "cpu", "runner": "v1", "model": "llama", "budgets": "cpu",
            "parity": "exact", "seed": 0, "startup_timeout_s": 10, "request_timeout_s": 10,
            "serve": {"flags": []}, "group": [{"name": "g", "scenarios": ["sequential"]}]}


@pytest.mark.parametrize(
    ("mutate", "key", "problem"),
    [
        (lambda d: d.update(colour="red"), "colour", "unknown key"),
        (lambda d: d.update(device="tpu"), "device", "must be one of"),
        (lambda d: d.update(parity="fuzzy"), "parity", "must be one of"),
        (lambda d: d.pop("serve"), "serve", "missing"),
        (lambda d: d["serve"].update(flags=["--port", "80"]), "serve.flags", "set by syncgate"),
        (lambda d: d["group"][0].update(flags=["--host=0.0.0.0"]), "group[0].flags",
         "set by syncgate"),
        (lambda d: d["group"][0].update(scenarios=[]), "group[0].scenarios", "non-empty"),
        (lambda d: d["group"].append({"name": "g", "scenarios": ["batched"]}), "group[1].name",
         "duplicate"),
        (lambda d: d.update(startup_timeout_s=0), "startup_timeout_s", "must be positive"),
        (lambda d: d.update(seed="zero"), "seed", "must be an integer"),
        (lambda d: d.update(prestart=True), "prestart", "non-negative integer"),
        (lambda d: d.update(env={"A": 1}), "env", "string values"),
        (lambda d: d.update(budgets="tpu"), "budgets", "no built-in budget 'tpu'"),
        (lambda d: d.update(tolerance={"max_rank": 1.5}), "tolerance.max_rank",
         "must be an integer"),
        (lambda d: d.update(tolerance={"max_gap": "big"}), "tolerance.max_gap", "must be a number"),
    ],
)
def test_profile_errors_name_the_key(mutate, key, problem):
    data = _base()
    mutate(data)
    with pytest.raises(ProfileError) as info:
        parse_profile(data, "x.toml")
    assert info.value.key == key
    assert problem in info.value.problem


def test_usage_error_for_unknown_selection_lists_known(tmp_path):
    with pytest.raises(UsageError, match="known: abort, async_scheduling"):
        make_plan("cpu", None, None, ["nope"], str(tmp_path))


def test_profile_resolves_paths_budgets_and_tolerance_at_load(tmp_path):
    data = _base() | {"model": "models/tiny", "budgets": "mine.toml",
                      "tolerance": {"max_rank": 3}}
    profile = parse_profile(data, str(tmp_path / "p.toml"))
    assert (profile.recipe, profile.model_dir) == (None, tmp_path / "models" / "tiny")
    assert profile.budget_file == tmp_path / "mine.toml"
    assert profile.tolerance == Tolerance(max_rank=3, max_gap=0.1)
    assert isinstance(profile.tolerance.max_rank, int)
    builtin = parse_profile(_base() | {"model": "/abs/model"}, str(tmp_path / "p.toml"))
    assert builtin.model_dir == Path("/abs/model")
    assert builtin.budget_file == builtin_budget_path("cpu")
    assert parse_profile(_base(), "x.toml").recipe == "llama"
