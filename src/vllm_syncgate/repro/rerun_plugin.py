"""pytest plugin that repeats selected tests in one session, for ``syncgate repro``.

It is loaded with ``-p`` into the pytest run that does the reruns (locally, or copied into a
container where syncgate may not be installed), so it imports only the standard library and
pytest. Its instructions come from a JSON plan named by ``SYNCGATE_REPRO_PLAN``:

``{"mode": "isolation"|"replay", "runs": N, "targets": [...], "blocks": [...],
"results": PATH, "settled": PATH, "broken_after": K, "min_runs": M, "shares": {...}}``

``shares`` (optional, ``syncgate repro --shard``) maps a target to the run indices this session
does; without it every target does runs 1..N.

- isolation: every target (a node id, or a file for per-file CI runners) is cloned N times,
  run r of all targets before run r+1, so xdist spreads the copies over workers.
- replay: every block ``{"target": t, "sequence": [pred, ..., t]}`` is cloned N times, in CI
  order; the engine runs it without xdist, one process per block, so nothing but the block's own
  predecessors can leave state behind. (xdist's ``loadgroup`` cannot pin copies here: with
  pytest 9 its node id suffix no longer reaches the scheduler.)

With ``"report_collected": true`` the session was given whole files (the engine's validation
and rerun in one session): every node id collected there is recorded once (``role: collected``)
before the targets are picked from them, so node ids from a log only ever meet the collected
ones in an equality test here and never reach pytest's argv.

Each copy runs with ``SYNCGATE_REPRO_RUN`` set to its run index. The controlling process writes
one JSON line per report to ``results`` (a failure with its signature: exception type and the
frame that raised it); once :func:`settled` says a target's verdict is in, it lists the target
in ``settled`` and workers skip its remaining copies (early stop).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
from collections.abc import Generator
from typing import Any

import pytest

PLAN_ENV = "SYNCGATE_REPRO_PLAN"
RUN_ENV = "SYNCGATE_REPRO_RUN"
_TARGET = "syncgate_target"
_RUN = "syncgate_run"
_COLLECTED = "syncgate_collected"
_LONGREPR_CHARS = 6000


def settled(failed: int, passed: int, plan: dict[str, Any]) -> bool:
    """The early-stop rule, also driven by :mod:`vllm_syncgate.repro.simulate` to prove it.

    Replay: one failure after the predecessors settles it. Isolation: ``broken_after`` failures
    and no pass settle "broken" (a test failing at rate p is called broken with chance
    p ** broken_after); both outcomes settle "flaky" only once ``min_runs`` runs are done, so the
    rate is never printed from fewer runs than that and the interval keeps its coverage.
    """
    if plan["mode"] == "replay":
        return failed >= 1
    if not passed:
        return failed >= int(plan["broken_after"])
    return failed > 0 and failed + passed >= int(plan.get("min_runs", 1))


def signature(report: pytest.TestReport, root: str) -> str:
    """Exception type and the frame that raised it: what "the same failure" means across runs."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:
        return f"{report.when} failure"
    kind = str(crash.message).split(":", 1)[0].split("\n", 1)[0].strip() or "failure"
    path = str(crash.path)
    if path.startswith(root.rstrip(os.sep) + os.sep):
        path = path[len(root.rstrip(os.sep)) + 1:]
    return f"{kind} at {path}:{crash.lineno}"


def _matches(nodeid: str, target: str) -> bool:
    """The target's own item, or every item of a target that is a whole file (a per-file CI
    runner's unit); a class or an unparametrized name matches nothing, as in triage."""
    return nodeid == target or ("::" not in target and nodeid.startswith(target + "::"))


def _clone(item: pytest.Item) -> pytest.Item:
    """A second, independent item for the same test function and parameters."""
    if not isinstance(item, pytest.Function):
        raise pytest.UsageError(f"syncgate repro: cannot repeat {item.nodeid} (not a function)")
    return pytest.Function.from_parent(
        item.parent,
        name=item.name,
        callspec=getattr(item, "callspec", None),
        fixtureinfo=item._fixtureinfo,
        originalname=item.originalname,
    )


def _worker_of(report: pytest.TestReport) -> str:
    """The xdist worker a report came from (crash reports only carry the worker's gateway)."""
    worker = getattr(report, "worker_id", None)
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    return str(worker or getattr(gateway, "id", None) or "main")


class ReproPlugin:
    """Collection-time cloning, run-index export, result recording and early stop."""

    def __init__(self, config: pytest.Config, plan: dict[str, Any]) -> None:
        self.config = config
        self.plan = plan
        self.is_worker = hasattr(config, "workerinput")
        self.settled: set[str] = set()
        self._settled_mtime = -1
        self.tally: dict[str, list[int]] = {}  # target -> [failed runs, passed runs]
        self._runs: dict[tuple[str, int], bool] = {}  # (target, run) -> failed so far
        self._crashes = 0  # crashed runs get run indices -1, -2, ...
        self._results = None
        self._collected_written = False
        if not self.is_worker:
            self._results = open(plan["results"], "a", encoding="utf-8")  # noqa: SIM115

    # -- collection --------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.plan.get("report_collected"):
            collected = sorted({it.nodeid for it in items})
            if self.is_worker:  # the controller writes the results: xdist carries it there
                self.config.workeroutput[_COLLECTED] = collected  # type: ignore[attr-defined]
            else:
                self._write_collected(collected)
        if self.plan["mode"] == "replay":
            units = [(block["target"], list(block["sequence"])) for block in self.plan["blocks"]]
        else:
            units = [(target, [target]) for target in self.plan["targets"]]
        every = list(range(1, int(self.plan["runs"]) + 1))
        shares = {target: set(self.plan.get("shares", {}).get(target, every))
                  for target, _ in units}
        by_nodeid: dict[str, list[pytest.Item]] = {}
        for wanted in {n for _, seq in units for n in seq}:
            by_nodeid[wanted] = [it for it in items if _matches(it.nodeid, wanted)]
        planned: list[pytest.Item] = []
        used: set[int] = set()
        for run in sorted(set().union(*shares.values())) if shares else []:
            for target, sequence in units:
                if run not in shares[target]:
                    continue
                for nodeid in sequence:
                    for original in by_nodeid[nodeid]:
                        copy = original if id(original) not in used else _clone(original)
                        used.add(id(original))
                        copy.user_properties.append((_TARGET, target))
                        copy.user_properties.append((_RUN, run))
                        copy.user_properties.append(("syncgate_role",
                                                     "target" if nodeid == target else "before"))
                        planned.append(copy)
        items[:] = planned

    def _write_collected(self, nodeids: list[str]) -> None:
        if self._results is not None and not self._collected_written:
            self._collected_written = True
            self._results.write(json.dumps({"role": "collected", "nodeids": nodeids}) + "\n")
            self._results.flush()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: a worker finished; the first one's collection is everyone's."""
        collected = getattr(node, "workeroutput", {}).get(_COLLECTED)
        if collected is not None:
            self._write_collected(list(collected))

    # -- running -----------------------------------------------------------------------------
    def _refresh_settled(self) -> None:
        path = self.plan.get("settled")
        if not path:
            return
        try:
            mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime != self._settled_mtime:
            self._settled_mtime = mtime
            with open(path, encoding="utf-8") as handle:
                self.settled = {line.rstrip("\n") for line in handle if line.strip()}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        props = dict(item.user_properties)
        self._refresh_settled()
        if props.get(_TARGET) in self.settled:
            return True  # early stop: the verdict is in, skip this copy without a report
        os.environ[RUN_ENV] = str(props.get(_RUN, 0))
        return None

    # -- recording (controller or single process only) ----------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._results is None:
            return
        props = dict(report.user_properties)
        target, run = props.get(_TARGET), props.get(_RUN)
        role = props.get("syncgate_role")
        if target is None and report.failed:
            # xdist's report for a worker that died mid-test (segfault, os._exit) carries none
            # of the item's properties: attribute it to its target as a run that crashed.
            target = self._target_of(report.nodeid)
            self._crashes -= 1
            run, role = self._crashes, "target"
        if target is None:
            return
        record = {
            "target": target,
            "run": run,
            "role": role,
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "worker": _worker_of(report),
            "duration": report.duration,
        }
        if report.failed:
            record["longrepr"] = str(report.longrepr)[-_LONGREPR_CHARS:]
            record["signature"] = signature(report, str(self.config.rootpath))
        self._results.write(json.dumps(record) + "\n")
        self._results.flush()
        if role == "target":
            self._account(str(target), int(run), report)

    def _target_of(self, nodeid: str) -> str | None:
        if self.plan["mode"] == "replay":
            wanted = [block["target"] for block in self.plan["blocks"]]
        else:
            wanted = list(self.plan["targets"])
        return next((t for t in wanted if _matches(nodeid, t)), None)

    def _account(self, target: str, run: int, report: pytest.TestReport) -> None:
        """Track run outcomes of single-test targets and publish settled verdicts."""
        if "::" not in target or not self.plan.get("settled"):
            return  # a whole file is one run only when all its tests are done: no early stop
        key = (target, run)
        if report.failed and not self._runs.get(key):
            self._runs[key] = True
            self.tally.setdefault(target, [0, 0])[0] += 1
        elif report.when == "teardown" and key not in self._runs:
            self._runs[key] = False
            self.tally.setdefault(target, [0, 0])[1] += 1
        failed, passed = self.tally.get(target, [0, 0])
        if settled(failed, passed, self.plan) and target not in self.settled:
            self.settled.add(target)
            tmp = self.plan["settled"] + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write("".join(t + "\n" for t in sorted(self.settled)))
            os.replace(tmp, self.plan["settled"])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(self) -> Generator[None, None, None]:
        yield
        if self._results is not None:
            self._results.close()


def _die_with_parent() -> None:
    """SIGKILL this process (the session or an xdist worker) when its parent dies.

    The same prctl as :func:`vllm_syncgate.lifeline.die_with_parent`, written out because this file
    also runs in containers where syncgate is not installed.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def pytest_configure(config: pytest.Config) -> None:
    _die_with_parent()
    path = os.environ.get(PLAN_ENV)
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        plan = json.load(handle)
    config.pluginmanager.register(ReproPlugin(config, plan), "syncgate-repro")
