import os


def test_runner_quirk():
    # Fails on the runner where SUITE_RUNNER_QUIRK is set (one bad CI machine), nowhere else.
    assert "SUITE_RUNNER_QUIRK" not in os.environ, "this runner has the quirk"
