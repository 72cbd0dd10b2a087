"""Shard files: what one ``syncgate repro --shard I/N`` job leaves, and their merge.

A shard file is one self-describing JSON object (schema :data:`SCHEMA`): the log it reran (its
sha256 digest, so shards of different logs never mix), the settings, this runner's environment
header (versions, host, image digest, device, driver/CANN, chosen environment variables and the
names of all set ones), and every run record (test, run index, outcome, failure signature,
traceback, duration, order). It is written atomically and ends with ``"complete": true``; a
killed job leaves no file, a cut copy fails to parse, and either is reported by name while the
merge judges what arrived. The merge re-judges all runs of a test with the same
:func:`~vllm_syncgate.repro.judge.judge` a single machine uses.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vllm_syncgate import __version__
from vllm_syncgate.environment import VERSION_FIELDS, detect_devices, header
from vllm_syncgate.errors import LogParseError, UsageError
from vllm_syncgate.reportfiles import write_all
from vllm_syncgate.repro.judge import ReproVerdict, RunResult, TestVerdict, judge
from vllm_syncgate.repro.model import CiFailure, CiLog, CiOutcome
from vllm_syncgate.repro.shards import Shard
from vllm_syncgate.safeio import TooLarge, json_loads, read_regular

SCHEMA = "syncgate.repro.shard/1"
DIGEST_ENV = "SYNCGATE_IMAGE_DIGEST"  # the image's digest, set by whoever starts the container
RECORD_ENV = "SYNCGATE_RECORD_ENV"  # comma-separated names whose values the header keeps
#: Variables whose values say which runner this is (never secrets); others: names only.
RUNNER_ENV = ("RUNNER_NAME", "RUNNER_OS", "RUNNER_ARCH", "BUILDKITE_AGENT_NAME", "NODE_NAME",
              "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")
MAX_SHARD_BYTES = 1 << 30
_VALUE_CHARS = 200
_DRIVER_FILES = {
    "driver": ("/proc/driver/nvidia/version", "/usr/local/Ascend/driver/version.info"),
    "cann": ("/usr/local/Ascend/ascend-toolkit/latest/version.cfg",
             "/usr/local/Ascend/ascend-toolkit/latest/compiler/version.info"),
}
_SHARD_NAME = re.compile(r"repro-shard-(\d+)-of-(\d+)\.json$")


def _first_line(paths: Iterable[str]) -> str | None:
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.strip():
                        return line.strip()[:_VALUE_CHARS]
        except OSError:
            continue
    return None


def _device(devices: dict[str, Any]) -> str:
    if devices.get("npu"):
        return f"npu x{devices['npu']}"
    if devices.get("cuda"):
        names = sorted(set(devices.get("cuda_names", [])))
        return f"cuda x{devices['cuda']}" + (f" ({', '.join(names)})" if names else "")
    return "cpu"


def runner_header(record_env: Iterable[str] = ()) -> dict[str, Any]:
    """This runner's environment header: :func:`vllm_syncgate.environment.header` and more."""
    names = {*RUNNER_ENV, *record_env,
             *(n.strip() for n in os.environ.get(RECORD_ENV, "").split(",") if n.strip())}
    return {
        **header(device=_device(detect_devices())),
        "host": socket.gethostname(),
        "image_digest": os.environ.get(DIGEST_ENV),
        **{key: _first_line(paths) for key, paths in _DRIVER_FILES.items()},
        "env": {n: os.environ[n][:_VALUE_CHARS] for n in sorted(names) if n in os.environ},
        "env_set": sorted(os.environ),
    }


def _run_json(r: RunResult) -> dict[str, Any]:
    out = asdict(r)
    del out["shard"], out["replay"]
    return out


def shard_document(shard: Shard, log: CiLog, digest: str, settings: dict[str, Any],
                   head: dict[str, Any], where: str, verdicts: Sequence[TestVerdict],
                   wall_s: float) -> dict[str, Any]:
    """The shard file's content (``complete`` last)."""
    return {
        "schema": SCHEMA, "syncgate": __version__,
        "shard": {"index": shard.index, "count": shard.count},
        "log": {"source": log.source, "format": log.format, "digest": digest, "seed": log.seed,
                "env": log.env, "truncated": log.truncated, "counts": log.counts},
        "settings": settings, "header": head, "where": where, "wall_s": round(wall_s, 3),
        "tests": [{"nodeid": v.nodeid,
                   "ci": {"outcome": v.ci.outcome.value, "job": v.ci.job,
                          "worker": v.ci.worker, "detail": v.ci.detail},
                   "settled": None if v.runs or v.replays or v.verdict in (
                       ReproVerdict.NOT_REPRODUCED, ReproVerdict.ORDER_DEPENDENT)
                   else v.verdict.value,
                   "detail": v.detail, "predecessors": list(v.predecessors),
                   "runs": [_run_json(r) for r in v.runs],
                   "replays": [_run_json(r) for r in v.replays]} for v in verdicts],
        "complete": True,
    }


def write_shard(directory: Path, shard: Shard, document: dict[str, Any]) -> Path:
    """Write the shard file atomically into ``directory``; returns its path."""
    [path] = write_all(directory, {shard.filename: json.dumps(document) + "\n"},
                       what="the shard file")
    return path


@dataclass
class Merged:
    """The merge's result: one verdict per test, the log, and what did not arrive."""

    log: CiLog
    verdicts: list[TestVerdict]
    where: str
    runs: int
    confidence: float
    headers: dict[int, dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def _shard_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory stands for the ``repro-shard-*.json`` files under it."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("repro-shard-*-of-*.json"))
            if not found:
                raise UsageError(f"{path}: no repro-shard-I-of-N.json files in this directory")
            out += found
        else:
            out.append(path)
    return out


def load_shard(path: Path) -> dict[str, Any] | None:
    """A shard document, or ``None`` if the file is cut short (reported, not fatal)."""
    try:
        data = read_regular(path, MAX_SHARD_BYTES)
    except TooLarge as exc:
        raise LogParseError(f"{path}: shard file larger than {MAX_SHARD_BYTES} bytes") from exc
    except OSError as exc:
        raise LogParseError(f"{path}: cannot read the shard file ({exc.strerror})") from exc
    try:
        doc = json_loads(data)
    except (ValueError, UnicodeDecodeError):
        if data.lstrip().startswith(b'{"schema": "' + SCHEMA.encode()):
            return None
        raise LogParseError(f"{path}: not a syncgate repro shard file") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise LogParseError(f"{path}: not a syncgate repro shard file (schema "
                            f"{doc.get('schema') if isinstance(doc, dict) else None!r}, "
                            f"expected {SCHEMA})")
    return doc if doc.get("complete") is True else None


def _same(docs: dict[Path, dict[str, Any]], what: str, get: Any) -> Any:
    values = {json.dumps(get(d), sort_keys=True): (p, get(d)) for p, d in docs.items()}
    if len(values) > 1:
        (p1, v1), (p2, v2) = list(values.values())[:2]
        raise UsageError(f"shards do not belong together: {p1} has {what} {v1!r}, "
                         f"{p2} has {v2!r}")
    return next(iter(values.values()))[1]


def _runs(raw: list[dict[str, Any]], shard: int, replay: bool) -> list[RunResult]:
    return [RunResult(**r, replay=replay, shard=shard) for r in raw]


def merge(paths: Sequence[Path]) -> Merged:
    """Join shard files into one verdict per test; refuse shards that do not belong together."""
    docs: dict[Path, dict[str, Any]] = {}
    cut: list[Path] = []
    for path in _shard_paths(paths):
        doc = load_shard(path)
        if doc is None:
            cut.append(path)
        else:
            docs[path] = doc
    return merge_documents(docs, cut)


def merge_documents(docs: dict[Path, dict[str, Any]], cut: Sequence[Path] = ()) -> Merged:
    """:func:`merge` of documents already read (``cut``: files that were truncated)."""
    if not docs:
        raise LogParseError(f"no complete shard file among {len(cut)} given "
                            f"({', '.join(map(str, cut))})")
    _same(docs, "log digest", lambda d: d["log"]["digest"])
    _same(docs, "syncgate version", lambda d: d["syncgate"])
    settings = _same(docs, "settings", lambda d: d["settings"])
    count = _same(docs, "shard count", lambda d: d["shard"]["count"])
    by_index: dict[int, dict[str, Any]] = {}
    for path, doc in docs.items():
        index = doc["shard"]["index"]
        if index in by_index:
            raise UsageError(f"shard {index}/{count} given twice ({path})")
        by_index[index] = doc
    notes = [f"shard file {p} is truncated{_name_of(p)}: left out" for p in cut]
    named = {m.group(1) for p in cut if (m := _SHARD_NAME.search(p.name))}
    notes += [f"shard {i}/{count} missing: the verdicts rest on the runs that arrived"
              for i in range(1, count + 1) if i not in by_index and str(i) not in named]
    first = by_index[min(by_index)]
    return Merged(_log(first), _judge_all(by_index, settings), _where(by_index, count),
                  settings["runs"], settings["confidence"],
                  {i: d["header"] for i, d in by_index.items()}, notes)


def _name_of(path: Path) -> str:
    match = _SHARD_NAME.search(path.name)
    return f" (shard {match.group(1)}/{match.group(2)})" if match else ""


def _log(doc: dict[str, Any]) -> CiLog:
    log = doc["log"]
    return CiLog(source=log["source"], format=log["format"], seed=log["seed"], env=log["env"],
                 truncated=log["truncated"], counts=log["counts"])


def _where(by_index: dict[int, dict[str, Any]], count: int) -> str:
    hosts = ", ".join(f"{i}: {by_index[i]['header'].get('host')}" for i in sorted(by_index))
    return f"{len(by_index)} of {count} shards ({hosts})"


def _judge_all(by_index: dict[int, dict[str, Any]], settings: dict[str, Any],
               ) -> list[TestVerdict]:
    tests: dict[str, dict[str, Any]] = {}
    for index in sorted(by_index):
        for test in by_index[index]["tests"]:
            entry = tests.setdefault(test["nodeid"], {"test": test, "runs": [], "replays": []})
            entry["runs"] += _runs(test["runs"], index, replay=False)
            entry["replays"] += _runs(test["replays"], index, replay=True)
    headers = {i: d["header"] for i, d in by_index.items()}
    verdicts = []
    for nodeid, entry in tests.items():
        test = entry["test"]
        ci = CiFailure(nodeid, CiOutcome(test["ci"]["outcome"]), test["ci"]["job"],
                       test["ci"]["worker"], detail=test["ci"]["detail"])
        if test["settled"] and not entry["runs"]:
            verdicts.append(TestVerdict(nodeid, ReproVerdict(test["settled"]), ci,
                                        detail=test["detail"]))
            continue
        runs = sorted(entry["runs"], key=lambda r: r.run)
        replays = sorted(entry["replays"], key=lambda r: r.run)
        verdicts.append(judge(nodeid, ci, runs, replays, confidence=settings["confidence"],
                              interval_kind=settings["interval"],
                              predecessors=tuple(test["predecessors"]), headers=headers))
    return verdicts


def version_fields(head: dict[str, Any]) -> dict[str, Any]:
    """The part of a shard header that compares with a CI log's ``syncgate-env`` header."""
    return {k: head[k] for k in VERSION_FIELDS if head.get(k) is not None}
