"""The CI job summary never carries raw terminal escapes from a log (vllm_syncgate.ci_summary)."""

from __future__ import annotations

from vllm_syncgate.ci_summary import append_summary


def test_escapes_are_shown_not_sent(tmp_path):
    path = tmp_path / "summary.md"
    append_summary(path, "ok\n")
    append_summary(path, "env \x1b]0;owned\x07 python\n")
    assert path.read_text() == "ok\n\nenv \\x1b]0;owned\\x07 python\n\n"
