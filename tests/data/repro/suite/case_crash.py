import os


def test_crashes_sometimes():
    # Runs 2 and 3 take the whole worker process down, as a segfault in native code would.
    if os.environ.get("SYNCGATE_REPRO_RUN") in ("2", "3"):
        os._exit(139)
