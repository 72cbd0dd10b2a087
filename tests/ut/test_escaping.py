"""Each output format's escaping rule, on the function itself (the CLI probes are in hostile/)."""

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from vllm_syncgate.escaping import (
    command_data,
    command_property,
    each_text,
    json_safe,
    md_code,
    md_text,
    terminal,
    terminal_block,
)
from vllm_syncgate.scan.sources import Problem

ANY = st.text(st.characters(exclude_categories=()), max_size=30)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def test_terminal_shows_escapes_and_undecodable_bytes_as_hex():
    name = b"\x1b]0;owned\x07\r\n\xe9.py".decode("utf-8", "surrogateescape")
    assert terminal(name) == "\\x1b]0;owned\\x07\\x0d\\x0a\\xe9.py"
    assert terminal("\x9b2J\u2028") == "\\x9b2J\\u2028"
    assert terminal_block("a\tb\nc\rd\x1b") == "a\tb\nc\\x0dd\\x1b"


def test_workflow_command_escapes():
    assert command_data("50%\r\n::stop-commands::T\x1b") == "50%25%0D%0A::stop-commands::T\\x1b"
    assert command_property("a:b,c") == "a%3Ab%2Cc"


def test_markdown_code_span_and_text():
    assert md_code("a`b|c") == "``a`b\\|c``"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("a\\|b") == "`a\\x5c\\|b`"
    # renders as a_b |c| <i>\x0a: the backslash of \x0a is escaped too
    assert md_text("a_b |c| <i>\n") == "a\\_b \\|c\\| \\<i\\>\\\\x0a"


def test_each_text_escapes_every_string_of_a_dataclass():
    assert each_text([Problem("x\n.py", "r\x1b")], terminal) == [Problem("x\\x0a.py", "r\\x1b")]


@given(ANY)
def test_property_one_line_no_control(text):
    for escape in (terminal, command_data, command_property, md_text, md_code):
        out = escape(text)
        assert not _CONTROL.search(out), (escape, out)
        out.encode("utf-8")


@given(ANY)
def test_property_properties_cannot_end_early(text):
    assert not set(command_property(text)) & {",", ":", "\n", "\r"}


@given(ANY)
def test_property_json_safe_is_utf8(text):
    json.dumps(json_safe({text: [text]}), ensure_ascii=False).encode("utf-8")
