"""A parameter's fallback (``if max_len is None: max_len = int(lengths.max().item())``) does not
run from a caller whose every call passes a value that is never None there: a number built of
builtins, a size, a shape (vLLM-Omni's GLM-TTS ``make_pad_mask``, whose one caller passes the
frame count; audits 8 and 9). A caller that passes an attribute, its own parameter or nothing
keeps the fallback, and so does a function that rebinds the parameter before testing it. The
mirror: a branch that needs the parameter (``if mask is not None:``) does not run from a caller
that leaves it at its None default or passes None (vLLM's Voxtral calls its language model's
``embed_input_ids(input_ids)`` with no multimodal mask; audit 11). Fixture:
tests/data/scan/passedparams. Broken variants: with no passed value taken as never None, the
two dead fallbacks come back; with every passed value taken as never None, the attribute's and
the parameter's fallbacks are lost (the rebound one and the mirror's stay); with no parameter
taken as left out, the dead mask readback comes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph

ENTRY: list[str] = []


@pytest.fixture
def passedparams(scan_data: Path) -> Path:
    return scan_data / "passedparams"


@pytest.fixture
def expected(passedparams: Path, expected_sites) -> set[tuple[str, int, str, str]]:
    found = expected_sites(passedparams)
    assert len(found) == 4
    return found


def test_fallbacks_every_call_fills_do_not_run(sites_of, passedparams, expected):
    assert sites_of(passedparams, ENTRY, "cuda") == expected


def test_broken_variant_nothing_never_none(sites_of, passedparams, expected, line_of,
                                           monkeypatch):
    monkeypatch.setattr(callgraph, "never_none", lambda node, scope, depth=3: False)
    runner = passedparams / "pad_runner.py"
    dead = {(runner.name, line_of(runner, "the one caller passes an int"), "blocking_readback",
             "none"),
            (runner.name, line_of(runner, "the caller passes a shape"), "blocking_readback",
             "none")}
    assert sites_of(passedparams, ENTRY, "cuda") == expected | dead


def test_broken_variant_everything_never_none(sites_of, passedparams, line_of, monkeypatch):
    monkeypatch.setattr(callgraph, "never_none", lambda node, scope, depth=3: node is not None)
    runner = passedparams / "pad_runner.py"
    kept = {(runner.name, line_of(runner, "keep = int(codes.max().item())"),
             "blocking_readback", "none"),
            (runner.name, line_of(runner, "return codes[: int(mask.sum().item())]  # expect"),
             "blocking_readback", "none")}
    assert sites_of(passedparams, ENTRY, "cuda") == kept


def test_broken_variant_nothing_left_out(sites_of, passedparams, expected, line_of, monkeypatch):
    monkeypatch.setattr(callgraph, "_passes_all", lambda call: False)
    runner = passedparams / "pad_runner.py"
    dead = (runner.name, line_of(runner, "the one caller leaves the mask out"),
            "blocking_readback", "none")
    assert sites_of(passedparams, ENTRY, "cuda") == expected | {dead}
