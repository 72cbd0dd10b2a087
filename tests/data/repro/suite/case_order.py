import os


def test_polluter():
    # Leaves state behind in the worker process, as a careless test would.
    os.environ["SUITE_POLLUTED"] = "1"


def test_victim():
    polluted = os.environ.get("SUITE_POLLUTED") == "1"
    assert not polluted, "state left by test_polluter"
