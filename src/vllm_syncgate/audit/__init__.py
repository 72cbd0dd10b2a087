"""The sync ledger: what blocked the host, where, and in which step; budgets and verdicts.

Every level of syncgate reports in these terms. A backend (the simulated accelerator, or a live
CPU/CUDA/NPU backend inside ``vllm serve``) records :class:`SyncEvent` objects into a
:class:`Ledger`; a :class:`Budget` says how many of each kind a step may have; :func:`evaluate`
turns the two into a :class:`Verdict` that names the offending call sites, with the
:class:`Decision` on every event (counted, or allowed by which rule) that all reports read.
"""

from vllm_syncgate.audit.budgets import Budget, BudgetSet, load_budgets
from vllm_syncgate.audit.events import CallSite, StepKind, SyncEvent, SyncKind, caller_site
from vllm_syncgate.audit.ledger import Ledger, Step
from vllm_syncgate.audit.verdict import Breach, Decision, Verdict, decide, evaluate

__all__ = [
    "Breach",
    "Budget",
    "BudgetSet",
    "CallSite",
    "Decision",
    "Ledger",
    "Step",
    "StepKind",
    "SyncEvent",
    "SyncKind",
    "Verdict",
    "caller_site",
    "decide",
    "evaluate",
    "load_budgets",
]
