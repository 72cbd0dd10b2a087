"""Two ``report.json`` files of ``syncgate check`` that must tell the same story.

A faster run (``--quick``, servers booting together, a newer revision) may change how long things
take, never what is found: for every scenario of the smaller run, the verdict, the steps by kind,
the parity findings, the sync verdict and the tokens generated must equal the larger run's.
Durations, ports and paths are left out: they differ on every run. So do the steps by kind of a
scenario with several requests in flight: whether a late request's prefill lands in a step of its
own or joins a decode step (a ``mixed`` one) is arrival timing, not a finding; so is how many
times an allowed sync ran there (one per step), while which syncs were allowed is still compared.
"""

from __future__ import annotations

from typing import Any

from vllm_syncgate.serve.scenarios import SCENARIOS

# what a scenario's result is made of, in report.json; everything else is how it was obtained
_SAME = ("passed", "steps", "parity", "budget", "mean_syncs_per_decode_step")


def _one_at_a_time(scenario: dict[str, Any]) -> bool:
    known = SCENARIOS.get(scenario.get("scenario") or scenario["key"].rpartition("/")[2])
    return known is not None and known.one_at_a_time


def _fields(scenario: dict[str, Any]) -> tuple[str, ...]:
    if _one_at_a_time(scenario):
        return _SAME
    return tuple(f for f in _SAME if f != "steps")


def _verdict(scenario: dict[str, Any]) -> Any:
    sync = scenario.get("sync_verdict")
    if sync is None:
        return None
    allowed = sync.get("allowed")
    if allowed is not None and not _one_at_a_time(scenario):
        allowed = sorted(allowed)
    return {"passed": sync.get("passed"), "breaches": sync.get("breaches"), "allowed": allowed}


def _tokens(scenario: dict[str, Any]) -> list[tuple[str, list[int]]]:
    return [(g["label"], g["token_ids"]) for g in scenario.get("generations", [])]


def report_differences(whole: dict[str, Any], part: dict[str, Any]) -> list[str]:
    """One line per way ``part``'s scenarios differ from the same scenarios in ``whole``."""
    by_key = {s["key"]: s for s in whole.get("scenarios", [])}
    out = []
    if not part.get("scenarios"):
        out.append("the smaller report has no scenarios")
    for mine in part.get("scenarios", []):
        key = mine["key"]
        theirs = by_key.get(key)
        if theirs is None:
            out.append(f"{key}: not in the larger report")
            continue
        for field in _fields(mine):
            if mine.get(field) != theirs.get(field):
                out.append(f"{key}: {field} {mine.get(field)!r} != {theirs.get(field)!r}")
        if _verdict(mine) != _verdict(theirs):
            out.append(f"{key}: sync_verdict {_verdict(mine)!r} != {_verdict(theirs)!r}")
        if _tokens(mine) != _tokens(theirs):
            differing = [a[0] for a, b in zip(_tokens(mine), _tokens(theirs), strict=False)
                         if a != b] or ["(count)"]
            out.append(f"{key}: generated tokens differ ({', '.join(differing)})")
    return out
