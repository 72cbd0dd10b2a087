"""``syncgate doctor``: versions, devices and plugins of this machine; validates budget files."""

from __future__ import annotations

import argparse
import json

from vllm_syncgate.audit.budgets import load_budgets
from vllm_syncgate.environment import collect

HELP = "show versions, devices and plugin registration; validate budget files"

EXAMPLES = """
  syncgate doctor                          # versions, devices, plugins
  syncgate doctor --json > env.json
  syncgate doctor --budget my-budget.toml  # exit 2 with one line naming the bad key
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.add_argument(
        "--budget", action="append", default=[], metavar="FILE", help="validate a budget file (repeatable)"
    )


def run(args: argparse.Namespace) -> int:
    budgets = [load_budgets(path) for path in args.budget]  # a bad file raises BudgetError: exit 2
    env = collect()
    if args.json:
        print(json.dumps(env.to_json(), indent=2, sort_keys=True))
        return 0
    print(f"syncgate {env.syncgate}   python {env.python}   {env.platform}")
    if env.image:
        print(f"image     {env.image}")
    for name, version in env.packages.items():
        print(f"  {name:<14} {version or '-'}")
    devices = env.devices
    print(f"devices   cpu x{devices.get('cpu')}   cuda x{devices.get('cuda')}   npu x{devices.get('npu')}"
          f"{'   (npu-smi found)' if devices.get('npu_smi') else ''}")
    if "torch_error" in devices:
        print(f"  torch: {devices['torch_error']}")
    for plugin in env.plugins:
        state = "loads" if plugin.loads else (f"FAILS: {plugin.error}" if plugin.registered else "NOT registered")
        print(f"plugin    {plugin.group}:{plugin.name} -> {plugin.target or '-'} ({state})")
    for budget_set in budgets:
        labels = ", ".join(b.label for b in budget_set.budgets)
        print(f"budget    {budget_set.source}: ok ({labels})")
    return 0
