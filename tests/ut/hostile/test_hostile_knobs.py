"""Test knobs out of production (issue 24, item 7).

A ``SYNCGATE_MUTANT`` left in a shell or a CI environment turned a PASS into a FAIL and was named
nowhere. Mutants now run only when the test suite asks (``syncgate check --mutant NAME``, hidden
from ``--help``), and the servers get the name from ``check`` itself, never from the environment
``check`` inherited.
"""

from __future__ import annotations

import pytest

from vllm_syncgate.check.run import GroupSession
from vllm_syncgate.profiles import builtin_profile_path, load_profile


@pytest.fixture
def session_env(tmp_path):
    """The environment a group's vLLM server would start with (nothing is launched)."""
    profile = load_profile(builtin_profile_path("cpu"))

    def env(**kwargs) -> dict[str, str]:
        session = GroupSession(profile, profile.groups[0], tmp_path / "model", tmp_path, **kwargs)
        return session.server.env

    return env


@pytest.mark.parametrize("leftover", ["sync_heavy_to_list", "wrapping_to_list", "nope"])
def test_a_leftover_mutant_in_the_environment_never_reaches_the_server(session_env, monkeypatch,
                                                                       leftover):
    monkeypatch.setenv("SYNCGATE_MUTANT", leftover)
    assert "SYNCGATE_MUTANT" not in session_env()


def test_the_mutant_check_asks_for_is_handed_to_the_server(session_env, monkeypatch):
    monkeypatch.setenv("SYNCGATE_MUTANT", "sync_heavy_to_list")  # the asked-for one wins
    assert session_env(mutant="wrapping_to_list")["SYNCGATE_MUTANT"] == "wrapping_to_list"


def test_an_unknown_mutant_flag_is_one_line_exit_2(sandbox, handled):
    outcome = sandbox.run(["check", "--levels", "scan", "--mutant", "nope", "--report-dir", "rep"])
    handled(outcome, 2, r"mutant 'nope': unknown \(known: sync_heavy_to_list, wrapping_to_list\)")


def test_the_mutant_flag_is_not_in_the_help(sandbox, handled):
    """A guard, not a base failure: the flag is for the test suite only."""
    outcome = sandbox.run(["check", "--help"])
    handled(outcome, 0)
    assert "--mutant" not in outcome.stdout
    assert "--levels" in outcome.stdout
