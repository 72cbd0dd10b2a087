"""The held-out split (tests/data/scan/heldout/): labels written from upstream diffs before any
scan of them, kept apart from the in-sample corpus, and the figures benchmarks/bench_heldout.py
wrote for them agree with the labels. The commits need a vllm-ascend clone (not in CI); the
held-out releases come from the package index, so the slow test re-scans them and fails when
they fail on more sites than the recorded figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_syncgate.errors import EnvironmentProblem
from vllm_syncgate.scan.corpus import load_corpus, scan_tree
from vllm_syncgate.scan.sweep import failing_sites, find, release_root
from vllm_syncgate.tomlfile import read_toml

DATA = Path(__file__).parents[2] / "data"
LABELS = read_toml(DATA / "scan/heldout/labels.toml")
RESULTS_FILE = DATA / "scan/heldout/results.toml"
KINDS = {"device_sync", "stream_sync", "event_sync", "blocking_readback", "blocking_copy"}
SHA = re.compile(r"^[0-9a-f]{40}$")


def test_the_split_is_recorded():
    split = LABELS["split"]
    assert split["labelled_at"]
    assert SHA.match(split["mirror_head"])
    assert split["in_sample"]
    assert split["held_out_releases"]


def test_every_commit_is_labelled_from_its_diff():
    commits = LABELS["commit"]
    assert len(commits) >= 12
    assert len({c["sha"] for c in commits}) == len(commits)
    for commit in commits:
        assert SHA.match(commit["sha"]), commit["pr"]
        assert SHA.match(commit["parent"]), commit["pr"]
        assert commit["site"], commit["pr"]
        for site in commit["site"]:
            assert site["kind"] in KINDS, site
            assert site["label"] in {"default", "mode"}, site
            assert all(site[key] for key in ("why", "code", "function")), site
    defaults = [s for c in commits for s in c["site"] if s["label"] == "default"]
    assert len(defaults) >= 5


def test_held_out_is_disjoint_from_the_corpus():
    corpus = load_corpus(DATA / "scan-corpus/labels.toml")
    corpus_sources = {r.source for r in corpus}
    assert not corpus_sources & set(LABELS["split"]["held_out_releases"])
    assert {r["source"] for r in LABELS["release"]} == set(LABELS["split"]["held_out_releases"])
    in_sample = " ".join(LABELS["split"]["in_sample"]) + " " + " ".join(r.note for r in corpus)
    for commit in LABELS["commit"]:
        assert f"#{commit['pr']}" not in in_sample
        assert commit["sha"][:10] not in in_sample


def _results() -> dict:
    if not RESULTS_FILE.is_file():
        pytest.skip("no held-out figures recorded yet (benchmarks/bench_heldout.py --write)")
    return read_toml(RESULTS_FILE)


def test_recorded_figures_follow_from_their_rows():
    for tag, block in _results().items():
        rows = [r for r in block["rows"] if r["kind"] in ("commit", "release")]
        labelled = sorted((f"#{c['pr']} {c['sha'][:10]}", s["function"])
                          for c in LABELS["commit"] for s in c["site"])
        recorded = sorted((r["item"], r["site"].split(" ", 1)[1]) for r in rows
                          if r["kind"] == "commit")
        assert recorded == labelled, tag
        tp = sum(r["outcome"] == "tp" for r in rows)
        fp = sum(r.get("fp_sites", 1) for r in rows if r["outcome"] == "fp")
        fn = sum(r["outcome"] == "fn" for r in rows)
        held = block["summary"]["held_out"]
        assert (held["tp"], held["fp"], held["fn"]) == (tp, fp, fn), tag
        for row in rows:
            if row["kind"] == "commit" and row["label"] == "default":
                assert row["outcome"] == ("tp" if row["parent_fails"] and not row["fix_fails"]
                                          else "fn"), row


@pytest.mark.slow
def test_held_out_releases_fail_on_no_more_sites_than_recorded():
    block = _results().get("after")
    if block is None:
        pytest.skip("no figures for the current scanner recorded")
    recorded = {r["item"]: int(r["site"].split()[0]) for r in block["rows"] if r["kind"] == "release"}
    for release in LABELS["release"]:
        project, _, version = release["source"].partition("==")
        try:
            root = release_root(find(project, version))
        except EnvironmentProblem as exc:
            pytest.skip(f"{release['source']} unavailable (package index unreachable?): {exc}")
        tree = scan_tree(root, tuple(release["paths"]), release["profile"])
        assert len(failing_sites(tree.sites, root)) <= recorded[release["source"]], release["source"]
