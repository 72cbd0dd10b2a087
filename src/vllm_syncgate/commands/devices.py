"""``syncgate devices``: does this host have what a device's container needs?"""

from __future__ import annotations

import argparse

from vllm_syncgate.containers.devices import host_command

HELP = "check a host's device nodes and driver paths for a container, or print its docker run flags"

EXAMPLES = """
  syncgate devices check npu --ids 0       # exit 2 naming the first missing node or path
  syncgate devices run-args cuda --ids 0,1  # the matching docker run flags
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("check", "run-args"),
                        help="check: the host is ready; run-args: print docker run flags")
    parser.add_argument("device", help="a device of containers/devices.toml (cuda, npu)")
    parser.add_argument("--ids", default="0", help="comma-separated device ids")


def run(args: argparse.Namespace) -> int:
    print(host_command(args.action, args.device, args.ids))
    return 0
