"""Hostile names in every output format (issue 24, items 3 and 8).

A pull request controls its file names, and so the text ``syncgate scan`` and ``syncgate check``
repeat. Each probe scans a tree whose runner file has one hostile name and checks the invariants
of one format: nothing from the name starts a line (``::stop-commands::`` / ``::add-mask::`` at
column 0 turn GitHub's annotations off or hide text), no control character reaches a terminal
(ESC/OSC, CR, C1), a Markdown table row stays one row with its cells, JSON and SARIF are valid
UTF-8 strings, an undecodable byte is shown, never a crash, and the exit code is the verdict's.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_syncgate.containers.annotate import Annotation
from vllm_syncgate.scan.callgraph import Finding, ScanResult
from vllm_syncgate.scan.report import to_github, to_json, to_markdown, to_sarif
from vllm_syncgate.scan.terminal import to_terminal

RUNNER = b"class GPUModelRunner:\n    def execute_model(self):\n        torch.cuda.synchronize()\n"

#: (id, file name bytes): each must survive every format it is probed in.
NAMES = {
    "newline-stop-commands": b"x\n::stop-commands::TOKEN42\n.py",
    "newline-add-mask": b"x\n::add-mask::TOKEN42\n.py",
    "osc-title": b"TOKEN42\x1b]0;owned\x07.py",
    "clear-screen": b"TOKEN42\x1b[2J\x1b[H.py",
    "carriage-return": b"TOKEN42\rFAIL.py",
    "c1-csi": "TOKEN42\x9b31m".encode() + b".py",
    "line-separator": "TOKEN42\u2028::add-mask::x".encode() + b".py",
    "backtick-pipe": b"TOKEN42`|`b|.py",
    "not-utf8": b"TOKEN42caf\xe9\xff.py",
}

# Control characters no terminal line may carry (newline aside, between lines), the Unicode line
# separators included; lone surrogates cannot be in text decoded strictly.
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_OWN = ("::error ", "::error::", "::warning ", "::warning::", "::notice ", "::notice::")


def _tree(work: Path, name: bytes, content: bytes = RUNNER) -> Path:
    tree = work / "src"
    tree.mkdir(exist_ok=True)
    fd = os.open(os.path.join(os.fsencode(tree), name), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, content)
    os.close(fd)
    return tree


def _verdict(outcome, code: int, files: list[str] | tuple[str, ...] = ()) -> None:
    """A verdict, not a crash: the exit code, no traceback, no file or process left behind
    (stderr may carry the scan's settings lines)."""
    assert "Traceback" not in outcome.stdout + outcome.stderr, outcome.stderr[-2000:]
    assert outcome.code == code, outcome.stderr[-2000:]
    assert sorted(outcome.new_files) == sorted(files), outcome.new_files
    assert outcome.survivors == []


def _strict(raw: str) -> str:
    """The harness decodes with 'replace': a U+FFFD means the program wrote bytes that are not
    UTF-8 (or a lone surrogate)."""
    assert "\ufffd" not in raw, raw[-500:]
    return raw


def _terminal_safe(text: str) -> None:
    bad = _BAD.findall(_strict(text))
    assert not bad, (bad, text[-800:])


def _no_injected_line(text: str) -> None:
    """Nothing but the program's own commands starts with ``::``; the name stays on one line."""
    for line in text.splitlines():
        assert not line.startswith("::") or line.startswith(_OWN), line
    assert not any(line.startswith(("::stop-commands", "::add-mask")) for line in text.splitlines())


def _one_line(text: str) -> None:
    assert any("TOKEN42" in line and ".py" in line for line in text.splitlines()), text[-800:]


TEXT = ["newline-stop-commands", "newline-add-mask", "osc-title", "clear-screen",
        "carriage-return", "c1-csi", "line-separator", "not-utf8"]


@pytest.mark.parametrize("key", TEXT)
def test_scan_text_shows_a_hostile_name_escaped_on_one_line(sandbox, key):
    _tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["scan", "src", "--device", "cuda"])
    _verdict(outcome, 1)
    _terminal_safe(outcome.stdout + outcome.stderr)
    _no_injected_line(outcome.stdout)
    _one_line(outcome.stdout)


GITHUB = ["osc-title", "clear-screen", "c1-csi", "line-separator", "not-utf8"]


@pytest.mark.parametrize("key", GITHUB)
def test_scan_github_commands_carry_no_control_character(sandbox, key):
    _tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--format", "github"])
    _verdict(outcome, 1)
    _terminal_safe(outcome.stdout + outcome.stderr)
    _no_injected_line(outcome.stdout + outcome.stderr)
    assert outcome.stdout.startswith("::error file="), outcome.stdout


@pytest.mark.parametrize("key", ["newline-stop-commands", "newline-add-mask", "osc-title"])
def test_scan_github_unreadable_file_warning_cannot_start_a_command(sandbox, key):
    """An unparsable file is named on stderr, which GitHub also reads for commands."""
    _tree(sandbox.work, b"runner.py")
    _tree(sandbox.work, NAMES[key], b"def broken(:\n")
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--format", "github"])
    _verdict(outcome, 1)
    _terminal_safe(outcome.stdout + outcome.stderr)
    _no_injected_line(outcome.stdout + outcome.stderr)


@pytest.mark.parametrize("key", ["newline-stop-commands", "osc-title", "not-utf8"])
def test_scan_stale_baseline_entry_cannot_start_a_command(sandbox, key):
    """A baseline is a file of the tree: its stale entries are printed as 'fixed'."""
    _tree(sandbox.work, b"runner.py")
    written = sandbox.run(["scan", "src", "--device", "cuda", "--write-baseline", "known.json"])
    assert written.code == 0, written.stderr
    known = sandbox.work / "known.json"
    doc = json.loads(known.read_text())
    doc["findings"].append({**doc["findings"][0],
                            "file": os.fsdecode(NAMES[key]), "qualname": "Q\x1b[2J"})
    known.write_text(json.dumps(doc))
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--format", "github",
                           "--baseline", "known.json"])
    _verdict(outcome, 0)
    _terminal_safe(outcome.stdout + outcome.stderr)
    _no_injected_line(outcome.stdout + outcome.stderr)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
@pytest.mark.parametrize("key", ["not-utf8"])
def test_scan_json_and_sarif_strings_are_valid_utf8(sandbox, fmt, key):
    _tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--format", fmt])
    _verdict(outcome, 1)
    doc = json.loads(_strict(outcome.stdout))
    assert "TOKEN42" in _utf8_strings(doc)


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_scan_output_file_with_an_undecodable_name(sandbox, fmt):
    _tree(sandbox.work, NAMES["not-utf8"])
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--format", fmt,
                           "--output", "out.txt"])
    _verdict(outcome, 1, files=["work/out.txt"])
    written = (sandbox.work / "out.txt").read_bytes().decode("utf-8")  # strict
    _terminal_safe(written)
    assert re.search(r"TOKEN42caf\\+xe9\\+xff\.py", written), written  # JSON doubles the \\


def _utf8_strings(doc: object) -> str:
    """``doc`` as UTF-8 text: fails on a lone surrogate (an undecodable byte passed through)."""
    text = json.dumps(doc, ensure_ascii=False)
    text.encode("utf-8")
    return text


def _rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def _cells(row: str) -> int:
    """Cells of a table row as GitHub splits it: ``\\`` and any escaped character are skipped."""
    count, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        count += row[i] == "|"
        i += 1
    return count - 1


MARKDOWN = ["newline-stop-commands", "newline-add-mask", "line-separator", "backtick-pipe",
            "not-utf8"]


@pytest.mark.parametrize("key", MARKDOWN)
def test_scan_job_summary_row_stays_one_row_of_four_cells(sandbox, key):
    _tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["scan", "src", "--device", "cuda", "--github-summary", "sum.md"])
    _verdict(outcome, 1, files=["work/sum.md"])
    summary = (sandbox.work / "sum.md").read_bytes().decode("utf-8")  # strict
    _terminal_safe(summary)
    rows = _rows(summary)
    assert len(rows) == 3, summary  # header, rule, the one failing site
    assert [_cells(row) for row in rows] == [4, 4, 4], rows
    assert "TOKEN42" in rows[2]


def _vllm_tree(work: Path, name: bytes) -> str:
    """A vLLM tree whose root folder has the hostile name (``check`` names its --source root in
    its progress, sections and summary); the name, as the command line gets it."""
    root = name.removesuffix(b".py")
    worker = os.path.join(os.fsencode(work), root, b"vllm", b"v1", b"worker")
    os.makedirs(worker)
    with open(os.path.join(worker, b"gpu_model_runner.py"), "wb") as fh:
        fh.write(RUNNER)
    return os.fsdecode(root)


@pytest.mark.parametrize("key", ["newline-stop-commands", "osc-title", "clear-screen", "c1-csi",
                                 "not-utf8"])
def test_check_terminal_shows_a_hostile_source_root_escaped(sandbox, key):
    root = _vllm_tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["check", "--levels", "scan", "--source", root, "--report-dir", "rep"])
    assert "Traceback" not in outcome.stderr, outcome.stderr[-2000:]
    assert outcome.code == 1, outcome.stderr[-2000:]
    _terminal_safe(outcome.stdout + outcome.stderr)
    _no_injected_line(outcome.stdout + outcome.stderr)
    assert "TOKEN42" in outcome.stdout + outcome.stderr


@pytest.mark.parametrize("key", ["line-separator", "not-utf8"])
def test_check_job_summary_of_a_hostile_source_root(sandbox, key):
    root = _vllm_tree(sandbox.work, NAMES[key])
    outcome = sandbox.run(["check", "--levels", "scan", "--source", root, "--report-dir", "rep",
                           "--github-summary", "sum.md"])
    assert "Traceback" not in outcome.stderr, outcome.stderr[-2000:]
    assert outcome.code == 1, outcome.stderr[-2000:]
    summary = (sandbox.work / "sum.md").read_bytes().decode("utf-8")  # strict
    _terminal_safe(summary)
    rows = _rows(summary)
    assert [_cells(row) for row in rows] == [4] * len(rows), rows


# --- property tests: random text through each formatter, in process ---------------------------

_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.binary(
    max_size=40).map(lambda b: b.decode("utf-8", "surrogateescape"))


def _result(file: str, qualname: str, api: str) -> ScanResult:
    finding = Finding(file=file, line=3, qualname=qualname, kind="device_sync", api=api,
                      guard="none", entry=qualname, path=(qualname,), runner="GPUModelRunner",
                      symbol=f"m:{qualname}", code=api)
    return ScanResult(findings=[finding], files=1, lines=3, entries=[qualname])


_PROPERTY = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(_TEXT, _TEXT, _TEXT)
def test_property_terminal_text(file, qualname, api):
    out = to_terminal(_result(file, qualname, api))
    _terminal_safe(out)
    out.encode("utf-8")
    assert len(out.splitlines()) == len(to_terminal(_result("f", "q", "a")).splitlines())


@_PROPERTY
@given(_TEXT, _TEXT, _TEXT)
def test_property_github_commands(file, qualname, api):
    out = to_github(_result("f" + file, qualname, api))
    out.encode("utf-8")
    lines = out.split("\n")
    assert len(lines) == 2
    assert lines[0].startswith("::error file=")
    _terminal_safe(out)
    # a property ends at ',' or '::': neither may come from the input
    props = lines[0].split("::")[1]
    assert props.count(",") == 2, props


@_PROPERTY
@given(_TEXT, _TEXT, _TEXT)
def test_property_markdown_summary(file, qualname, api):
    out = to_markdown(_result(file, qualname, api))
    out.encode("utf-8")
    _terminal_safe(out)
    rows = _rows(out)
    assert [_cells(row) for row in rows] == [4, 4, 4], rows


@_PROPERTY
@given(_TEXT, _TEXT, _TEXT)
def test_property_json_and_sarif(file, qualname, api):
    for render in (to_json, to_sarif):
        out = render(_result(file, qualname, api))
        _utf8_strings(json.loads(out))


@_PROPERTY
@given(_TEXT, _TEXT, _TEXT)
def test_property_annotation_command(title, message, file):
    out = Annotation(title=title, message=message, file=file or None, line=1).command()
    out.encode("utf-8")
    assert "\n" not in out
    assert out.startswith("::error")
    _terminal_safe(out)
