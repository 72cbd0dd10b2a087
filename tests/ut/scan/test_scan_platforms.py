"""A plugin platform's config hook as a guard (issue 20 item 4; MetaX's platform forces cascade
attention off in ``check_and_update_config`` although its vLLM release has it on by default):
a bool the scanned hook stores in a config field, outside any condition but the config being
there, is that field's default for the scan. The shared-prefix code after an ``if`` whose
branches all return runs only when its test was false. Fixture: tests/data/scan/platforms
(a release config with the feature on, a runner, a plugin platform). Broken variants lose it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, rules
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.guards import config_overrides

ENTRY = ["PrefixModelRunner.execute_model"]


@pytest.fixture
def platforms(scan_data: Path) -> Path:
    return scan_data / "platforms"


def _reported(root: Path, *extra: str) -> set[tuple[str, int, str, str]]:
    paths = [str(root / "vllm" / "v1" / "worker"), *(str(root / e) for e in extra)]
    return {(Path(f.file).name, f.line, f.kind, f.guard)
            for f in scan(paths, entries=ENTRY, device="cuda").findings}


def test_the_plugins_override_guards_the_marked_site(platforms, expected_sites):
    expected = expected_sites(platforms / "vllm" / "v1" / "worker")
    assert len(expected) == 1
    assert _reported(platforms, "plugin/platform.py") == expected


def test_without_the_plugin_the_release_default_runs_it(platforms, expected_sites):
    (site,) = expected_sites(platforms / "vllm" / "v1" / "worker")
    assert _reported(platforms) == {(*site[:3], "none")}


def test_only_unconditional_bools_in_the_hook_are_read(platforms):
    tree = ast.parse((platforms / "plugin" / "platform.py").read_text())
    hook = next(n for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name == "check_and_update_config")
    # worker_cls is no bool; enable_prefix_caching is forced only for MLA models
    assert config_overrides([hook]) == (("disable_cascade_attn", True),)
    assert config_overrides([hook, hook]) == (("disable_cascade_attn", True),)


def test_broken_variant_without_the_hooks_overrides(platforms, monkeypatch, expected_sites):
    monkeypatch.setattr(callgraph, "config_overrides", lambda hooks: ())
    (site,) = expected_sites(platforms / "vllm" / "v1" / "worker")
    assert _reported(platforms, "plugin/platform.py") == {(*site[:3], "none")}


def test_broken_variant_an_if_else_that_returns_is_no_early_exit(platforms, monkeypatch,
                                                                expected_sites):
    monkeypatch.setattr(rules, "_exits", lambda body: isinstance(body[-1], ast.Return))
    (site,) = expected_sites(platforms / "vllm" / "v1" / "worker")
    assert _reported(platforms, "plugin/platform.py") == {(*site[:3], "none")}
