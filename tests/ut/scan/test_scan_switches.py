"""Guards judged per release (issue 20 item 4), on a runner of our own (tests/data/scan/switches):
a switch's default comes from the SCANNED tree's own config (``vllm/config/*.py``), so one
runner is guarded where its release turns the shared-prefix (cascade) path off by default and
fails where an older release has it on; a value only decode context parallel fills and a
decode length above 1 (speculation only) guard their branches, and so does an environment
variable the tree's ``envs.py`` leaves unset (``VLLM_X: str | None = None``). Each part is broken on purpose
and shown to lose its lines.

Markers: ``# expect: KIND GUARD FAMILY``.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from vllm_syncgate.scan import callgraph, guards
from vllm_syncgate.scan.callgraph import scan
from vllm_syncgate.scan.config import Patterns, load_config

ENTRY = ["SwitchModelRunner.execute_model"]


@pytest.fixture
def switches(scan_data: Path) -> Path:
    return scan_data / "switches"


def _reported(root: Path, config=None) -> set[tuple[str, int, str, str]]:
    result = scan([str(root / "vllm" / "v1" / "worker")], entries=ENTRY, config=config)
    return {(Path(f.file).name, f.line, f.kind, f.guard) for f in result.findings}


def _older_release(switches: Path, tmp_path: Path) -> Path:
    """The same runner in a release whose config leaves cascade attention on by default."""
    root = tmp_path / "older"
    shutil.copytree(switches, root)
    model = root / "vllm" / "config" / "model.py"
    model.write_text(model.read_text().replace("disable_cascade_attn: bool = True",
                                               "disable_cascade_attn: bool = False"))
    return root


def test_switches_fixture_reports_exactly_the_marked_sites(switches, marked_families):
    expected = marked_families(switches)
    assert set(expected.values()) == {"cascade", "dcp", "spec", "trace"}
    assert _reported(switches) == set(expected)


def test_a_release_with_the_feature_on_by_default_fails_on_it(switches, tmp_path,
                                                              marked_families):
    cascade = next(site for site, family in marked_families(switches).items()
                   if family == "cascade")
    reported = _reported(_older_release(switches, tmp_path))
    assert (*cascade[:3], "none") in reported
    assert cascade not in reported


def test_the_trees_own_config_is_read(switches, tmp_path):
    older = _older_release(switches, tmp_path)
    sources = guards.tree_config_sources([str(older / "vllm" / "v1" / "worker")])
    assert Path(sources[0]).parent == older / "vllm" / "config"
    assert "disable_cascade_attn" not in guards.disabled_features(sources)
    assert guards.tree_config_sources([str(tmp_path)]) == ()  # no vLLM tree: the installed one


# Each part broken on purpose: (variant tree or not, config change, the line it must get wrong)
BROKEN = {
    # the installed vLLM's config judges every release: the older release's cascade path is
    # taken for opt-in and its failure is lost
    "the scanned tree's config": (
        lambda m: m.setattr(callgraph, "tree_config_sources", lambda paths: ()), True, {},
        ("switch_runner.py", 26, "blocking_copy", "opt_in")),
    # no value tied to the switch: the runner's prefix length is not known to be 0 by default
    "switched values": (lambda m: None, False, {"switched": ()},
                        ("switch_runner.py", 26, "blocking_copy", "none")),
    # no decode-context-parallel names: its rank offset fails the gate
    "dcp names": (lambda m: None, False, {"opt_in": "dcp"},
                  ("switch_runner.py", 30, "blocking_copy", "none")),
    # a decode length above 1 not known as speculation-only
    "decode length": (lambda m: None, False, {"one_without_speculation": Patterns(())},
                      ("switch_runner.py", 34, "blocking_readback", "none")),
    # no variable envs.py leaves unset is known off: the step trace fails the gate
    "unset variables": (lambda m: (m.setattr(guards, "_OFF_ENV", re.compile("(?!)")),
                                   m.setattr(guards, "installed_opt_ins",
                                             guards.installed_opt_ins.__wrapped__)),
                        False, {}, ("switch_runner.py", 41, "blocking_readback", "none")),
}


@pytest.mark.parametrize("part", sorted(BROKEN))
def test_a_broken_part_fails_the_switches_fixture(switches, tmp_path, monkeypatch, part):
    breaks, older, changes, wrong = BROKEN[part]
    breaks(monkeypatch)
    config = load_config()
    if changes.get("opt_in") == "dcp":
        changes = {"opt_in": Patterns(tuple(g for g in config.opt_in.globs if "dcp" not in g))}
    root = _older_release(switches, tmp_path) if older else switches
    assert wrong in _reported(root, dataclasses.replace(config, **changes)), part
