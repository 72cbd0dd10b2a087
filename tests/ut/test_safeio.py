"""Bounded reading of user-named files (vllm_syncgate.safeio) and the TOML reader built on it."""

from __future__ import annotations

import json
import os

import pytest

from vllm_syncgate.errors import ConfigError
from vllm_syncgate.safeio import (
    NotRegularFile,
    TooLarge,
    append_regular,
    json_loads,
    keep_newest,
    open_regular,
    read_regular,
)
from vllm_syncgate.tomlfile import read_toml


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "x.toml"
    os.mkfifo(fifo)  # no writer: a plain open() would block forever
    with pytest.raises(NotRegularFile, match="not a regular file"):
        open_regular(fifo)
    with pytest.raises(ConfigError, match=r"x\.toml: <file>: cannot be read \(not a regular file\)"):
        read_toml(fifo)


def test_a_device_and_a_directory_are_refused(tmp_path):
    with pytest.raises(NotRegularFile):
        read_regular("/dev/zero")
    with pytest.raises(ConfigError, match="<file>: is a directory"):
        read_toml(tmp_path)


def test_size_is_capped(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    assert read_regular(big, limit=101) == b"x" * 101
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_regular(big, limit=100)


def test_deep_json_is_a_decode_error():
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        json_loads("[" * 200_000 + "]" * 200_000)
    assert json_loads(b'{"a": [1]}') == {"a": [1]}


@pytest.mark.parametrize(("text", "problem"), [
    ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("x = nan", "nan is not a finite number"),
    ("[a]\nb = -inf", "-inf is not a finite number"),
])
def test_toml_bombs_are_one_line_config_errors(tmp_path, text, problem):
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_toml(path)
    assert str(info.value) == f"{path}: <toml>: {problem}"
    assert read_toml(_write(tmp_path, "x = 1.5")) == {"x": 1.5}


def _write(tmp_path, text):
    path = tmp_path / "ok.toml"
    path.write_text(text)
    return path


def test_append_regular_appends_and_refuses_what_would_block(tmp_path):
    target = tmp_path / "summary.md"
    append_regular(target, b"a\n")
    append_regular(target, b"b\n")
    assert target.read_bytes() == b"a\nb\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):
        append_regular(fifo, b"x")  # no reader: refused at once, not ENXIO's wording
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(NotRegularFile):
            append_regular(fifo, b"x")  # a reader does not make it a file
    finally:
        os.close(reader)
    with pytest.raises(NotRegularFile):
        append_regular("/dev/null", b"x")
    with pytest.raises(IsADirectoryError):
        append_regular(tmp_path, b"x")


def test_keep_newest_removes_the_oldest_entries_only(tmp_path):
    for age, name in enumerate(["c.json", "b.json", "a.json"]):
        (tmp_path / name).write_text("{}")
        os.utime(tmp_path / name, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    (tmp_path / "files.json.keep").write_text("not an entry")
    keep_newest(tmp_path, "*.json", 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "c.json", "files.json.keep"]
    keep_newest(tmp_path / "missing", "*.json", 2)  # no folder yet: nothing to do
