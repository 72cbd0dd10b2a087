"""``syncgate calibrate``: does the simulator block where this device (or the recorded H200) does?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_syncgate.commands.flags import renamed
from vllm_syncgate.errors import EXIT_GATE_FAILED, EXIT_OK, UsageError
from vllm_syncgate.reportfiles import write_all

if TYPE_CHECKING:  # torch is imported only when calibrate runs: every other command starts fast
    from vllm_syncgate.calibrate.agreement import Calibration

HELP = "compare the simulated accelerator with a real device: which operations block the host"

EXAMPLES = """
  syncgate calibrate --device cuda             # on a machine with a CUDA device
  syncgate calibrate --device cuda --recorded  # against the recorded H200 numbers, anywhere
  syncgate calibrate --device npu --output calibration.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", required=True, help="the device to calibrate against (cuda, npu)")
    parser.add_argument(
        "--recorded", action="store_true",
        help="compare with the recorded H200 measurement instead of a device here (cuda only)",
    )
    parser.add_argument("--output", metavar="FILE", dest="output",
                        help="also write the agreement as JSON to FILE")
    renamed(parser, "--json", "--output", "output", metavar="FILE")


def run(args: argparse.Namespace) -> int:
    from vllm_syncgate.calibrate.agreement import calibrate
    from vllm_syncgate.fakedev import FLAVOURS

    if args.device not in FLAVOURS:
        raise UsageError(f"--device {args.device!r}: must be one of {', '.join(FLAVOURS)}")
    result = calibrate(args.device, recorded=args.recorded)
    _print(result)
    if args.output:
        _write_json(Path(args.output), result)
    return EXIT_OK if result.agree else EXIT_GATE_FAILED


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print(result: Calibration) -> None:
    side = "H200 ms" if result.against != "device" else f"{result.device} ms"
    print(f"calibrate {result.device} against {result.against}")
    print(f"{'scenario':<26} {side:>8} {'sim ms':>8}  {'live backend':<18} {'sim backend':<18} agree")
    for row in result.rows:
        print(
            f"{row.scenario:<26} {_ms(row.device.blocked_ms):>8} {_ms(row.simulator.blocked_ms):>8}  "
            f"{row.device.records or '-':<18} {row.simulator.records or '-':<18} "
            f"{'yes' if row.agree else 'NO: ' + row.why}"
        )
    for table, cells in result.physics.items():
        print(f"#22754 {table}: {'cell':<52} {'sim':>7} {'H200':>7}")
        for key, cell in cells.items():
            print(f"  {key:<60} {cell['simulated']:>7.2f} {cell['measured']:>7.2f}")
    print(f"agreement: {'yes' if result.agree else 'NO'}")


def _write_json(path: Path, result: Calibration) -> None:
    """Whole or not at all, readable as the umask says (:func:`vllm_syncgate.reportfiles.write_all`)."""
    write_all(path.parent, {path.name: json.dumps(result.to_json(), indent=2, sort_keys=True)},
              what="the calibration JSON")
