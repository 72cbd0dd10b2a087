"""Progress lines: one per message, no carriage return (a pipe stays readable), none when quiet."""

import io
import subprocess
import sys
import time

from vllm_syncgate.progress import make_say, ticking


def test_say_writes_whole_lines_and_escapes_control_characters():
    out = io.StringIO()
    say = make_say(out, started=time.monotonic())
    say("booting\r 50%")
    say("two\nlines")
    say("title \x1b]0;owned\x07 \udcff")
    text = out.getvalue()
    assert "\r" not in text
    assert "\x1b" not in text
    assert [line.split("] ", 1)[1] for line in text.splitlines()] == [
        "booting\\x0d 50%", "two\\x0alines", "title \\x1b]0;owned\\x07 \\xff"]
    assert text.endswith("\n")


def test_quiet_says_nothing():
    out = io.StringIO()
    say = make_say(out, quiet=True)
    say("anything")
    with ticking(say, "waiting", first_s=0.01, every_s=0.01):
        time.sleep(0.1)
    assert out.getvalue() == ""


def test_ticking_speaks_only_for_waits_longer_than_first_s():
    said = []
    with ticking(said.append, "model: preparing", first_s=0.05, every_s=0.05):
        time.sleep(0.3)
    assert len(said) >= 2
    assert all(s.startswith("model: preparing (") for s in said)
    quiet_ones = []
    with ticking(quiet_ones.append, "fast", first_s=5.0):
        pass
    assert quiet_ones == []


def test_check_progress_through_a_pipe_has_no_carriage_return(tmp_path):
    """The real CLI, stderr a pipe: every progress line is a line (scan level only, no server)."""
    done = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate.cli", "check", "--levels", "scan",
         "--report-dir", str(tmp_path / "r")],
        capture_output=True, text=False, timeout=300,
    )
    assert b"\r" not in done.stderr
    assert b"\r" not in done.stdout
    assert [line for line in done.stderr.splitlines() if line.startswith(b"[")]
    quiet = subprocess.run(
        [sys.executable, "-m", "vllm_syncgate.cli", "check", "--levels", "scan", "--quiet",
         "--report-dir", str(tmp_path / "q")],
        capture_output=True, text=True, timeout=300,
    )
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("[")]
