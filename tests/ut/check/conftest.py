from pathlib import Path

import pytest

from vllm_syncgate.audit.budgets import parse_budgets
from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind
from vllm_syncgate.audit.ledger import Step
from vllm_syncgate.check.run import GroupRun, ScenarioRun
from vllm_syncgate.profiles import Group
from vllm_syncgate.serve.scenarios import SCENARIOS, Generation, Outcome

RUNNER_SITE = CallSite("/x/vllm/v1/worker/cpu_model_runner.py", 135, "_to_list",
                       "vllm.v1.worker.cpu_model_runner", "CPUModelRunner._to_list")
MUTANT_SITE = CallSite("/x/syncgate/audit/mutants.py", 27, "_to_list", "vllm_syncgate.audit.mutants",
                       "SyncHeavyRunner._to_list")


class TableReference:
    """A stand-in for the HF model in judge tests: greedy outputs looked up per prompt."""

    def __init__(self, outputs):
        self.outputs = {tuple(k): list(v) for k, v in outputs.items()}

    def generate(self, prompt_ids, max_new_tokens):
        from vllm_syncgate.parity.reference import ReferenceOutput

        return ReferenceOutput(self.outputs[tuple(prompt_ids)][:max_new_tokens], [])

    def decode(self, ids):
        return "".join(chr(ord("a") + i % 26) for i in ids)


class NoReference:
    """A stand-in for the HF model where no generation is compared (budget-only scenarios)."""

    def generate(self, prompt_ids, max_new_tokens):
        raise AssertionError("no generation to compare")

    def decode(self, ids):
        return ""


def step(index, kind, *events):
    s = Step(index=index, kind=kind)
    s.events = [SyncEvent(k, api, site, index, kind) for k, api, site in events]
    return s


def clean_steps(n=3):
    """A prefill then decode steps, each with the allow-listed transfer wait only."""
    return [step(i, StepKind.PREFILL if i == 0 else StepKind.DECODE,
                 (SyncKind.EVENT_SYNC, "transfer_event.synchronize", RUNNER_SITE))
            for i in range(n)]


def mutant_steps(n=3):
    return [step(i, StepKind.PREFILL if i == 0 else StepKind.DECODE,
                 (SyncKind.DEVICE_SYNC, "torch.accelerator.synchronize", MUTANT_SITE),
                 (SyncKind.BLOCKING_READBACK, "Tensor.tolist", MUTANT_SITE))
            for i in range(n)]


BUDGETS = parse_budgets({
    "profile": "cpu",
    "budget": [
        {"runner": "v1", "speculation": False, "limits": {"default": {}},
         "allow": [{"site": "vllm.v1.worker.cpu_model_runner:CPUModelRunner._to_list",
                    "kind": "event_sync", "reason": "the documented transfer wait"}]},
        {"runner": "v1", "speculation": True, "limits": {"default": {"event_sync": 2}}},
    ],
})


def group_run(name, runs, speculation=False, worker_speculation=False):
    group = Group(name, (), tuple(r.scenario.name for r in runs), speculation)
    return GroupRun(group, [], Path(f"/tmp/{name}.log"), Path(f"/tmp/{name}"), scenarios=runs,
                    runner="v1", speculation=worker_speculation)


def scenario_run(group, name, generations, steps=(), problems=()):
    return ScenarioRun(group, SCENARIOS[name], Outcome(list(generations), list(problems)), 0.5,
                       steps=list(steps))


def gen(label, prompt, tokens, max_tokens=None, prefix_ok=False):
    return Generation(label, list(prompt), list(tokens), "", "length",
                      max_tokens or len(tokens), prefix_ok)


@pytest.fixture
def judge_kit():
    return {"Reference": TableReference, "NoReference": NoReference, "budgets": BUDGETS, "clean_steps": clean_steps,
            "mutant_steps": mutant_steps, "group_run": group_run, "scenario_run": scenario_run,
            "gen": gen}


@pytest.fixture
def branch(data_dir, tmp_path):
    """The runner-shaped fixture package (tests/data/check/untested) as the installed build, a
    copy of it as a branch, and ``edit(path, old, new)`` replacing one line in the copy."""
    import shutil

    installed = data_dir / "check" / "untested" / "vllm"
    tree = tmp_path / "branch" / "vllm"
    shutil.copytree(installed, tree)

    def edit(path, old, new):
        text = (tree / path).read_text()
        assert text.count(old) == 1
        (tree / path).write_text(text.replace(old, new))
        return tree

    return installed, tree, edit
