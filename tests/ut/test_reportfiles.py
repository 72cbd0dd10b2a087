"""All-or-nothing report writing and control-byte escaping (vllm_syncgate.reportfiles)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vllm_syncgate import __version__
from vllm_syncgate.environment import parse_header
from vllm_syncgate.errors import ReportDirError
from vllm_syncgate.reportfiles import CACHE_DIR, default_report_dir, printable, write_all


def test_every_file_is_written_and_no_temporary_stays(tmp_path):
    out = tmp_path / "a" / "b"
    written = write_all(out, {"x.md": "x\n", "y.bin": b"\x00\x01",
                              "z.txt": lambda p: p.write_text("z")})
    assert [p.name for p in written] == ["x.md", "y.bin", "z.txt"]
    assert (out / "y.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in out.iterdir()) == ["x.md", "y.bin", "z.txt"]


def test_a_failing_writer_leaves_nothing_new(tmp_path):
    def boom(path):
        path.write_text("half")
        raise OSError(28, "No space left on device", str(path))

    out = tmp_path / "new" / "dir"
    with pytest.raises(ReportDirError, match="No space left on device"):
        write_all(out, {"a.md": "a", "b.json": boom})
    assert list(tmp_path.iterdir()) == []


def test_a_failure_keeps_the_previous_report_untouched(tmp_path):
    (tmp_path / "a.md").write_text("old")
    (tmp_path / "b.xml").mkdir()  # a directory where a report file should go
    with pytest.raises(ReportDirError, match=r"b\.xml: cannot write the report \(exists and is not"):
        write_all(tmp_path, {"a.md": "new", "b.xml": "<x/>"})
    assert (tmp_path / "a.md").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.xml"]


def test_an_existing_directory_is_required_without_create(tmp_path):
    with pytest.raises(ReportDirError, match="cannot write reports"):
        write_all(tmp_path / "gone", {"a": "a"}, what="reports", create=False)
    assert list(tmp_path.iterdir()) == []


def test_control_bytes_become_visible_text():
    assert printable("a\x1b[31mb\x07c\td\n\x9b\ufffe") == "a\\x1b[31mb\\x07c\td\n\\x9b\\ufffe"
    assert printable("plain ünïcode") == "plain ünïcode"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask_not_mkstemp(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        [path] = write_all(tmp_path / "new", {"report.json": "{}"})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o777 & ~umask


def test_the_default_report_dir_lives_in_a_folder_git_ignores(tmp_path):
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = default_report_dir("check", base=repo)
    assert out == repo / CACHE_DIR / "check"
    write_all(out, {"report.json": "{}\n"})
    assert (repo / CACHE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                            check=True, capture_output=True, text=True).stdout
    assert status == ""
    # the broken variant: the same report in a plain folder shows up for `git add`
    write_all(repo / "reports" / "check", {"report.json": "{}\n"})
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                            check=True, capture_output=True, text=True).stdout
    assert status.split() == ["??", "reports/check/report.json"]


def test_a_deleted_gitignore_is_written_again_and_a_file_in_the_way_is_one_error(tmp_path):
    default_report_dir("check", base=tmp_path)
    (tmp_path / CACHE_DIR / ".gitignore").unlink()
    default_report_dir("check", base=tmp_path)
    assert (tmp_path / CACHE_DIR / ".gitignore").is_file()
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / CACHE_DIR).write_text("not a folder")
    with pytest.raises(ReportDirError, match=r"\.syncgate_cache: cannot write the report cache \(exists and is not"):
        default_report_dir("check", base=blocked)


@pytest.mark.slow
def test_check_leaves_the_checkout_clean_and_prints_the_header_only_under_verbose(tmp_path):
    """``syncgate check`` run inside a git checkout: reports in the cache, ``git status`` clean."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    def check(*flags: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "vllm_syncgate", "check", "--levels", "scan",
                               "--quiet", *flags], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    lines = check()
    assert lines[0].startswith("== scan: ")
    assert not [line for line in lines if "syncgate-env:" in line]
    report = json.loads((tmp_path / CACHE_DIR / "check" / "report.json").read_text())
    assert report["env"]["syncgate"] == __version__  # the header lives in the report
    status = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                            check=True, capture_output=True, text=True).stdout
    assert status == ""
    assert parse_header(check("-v")[0]) == report["env"]  # the same header, first, under -v
