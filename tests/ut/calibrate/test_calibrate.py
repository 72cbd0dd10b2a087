"""The simulator against the scenario list and the recorded H200; ``syncgate calibrate`` itself."""

import dataclasses
import json

import pytest
import torch

from vllm_syncgate.calibrate import agreement, physics
from vllm_syncgate.calibrate.agreement import recorded_h200, simulate
from vllm_syncgate.calibrate.scenarios import SCENARIOS
from vllm_syncgate.cli import main
from vllm_syncgate.fakedev import LatencyModel

SPIN_MS = agreement.SPIN_S * 1e3


@pytest.mark.parametrize("flavour", ["cuda", "npu"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_simulator_and_backend_do_what_each_scenario_expects(scenario, flavour):
    outcome = simulate(scenario, flavour)
    assert outcome.blocks(SPIN_MS) is scenario.blocks, outcome
    assert outcome.records == scenario.records


def test_every_recorded_h200_operation_is_a_scenario():
    recorded = recorded_h200()["ops"]["host_ms"]
    assert set(recorded) <= {s.name for s in SCENARIOS}
    assert {name for name, ms in recorded.items() if ms >= SPIN_MS / 2} == {
        s.name for s in SCENARIOS if s.blocks and s.name in recorded
    }


@pytest.mark.parametrize(
    ("table", "simulate_table"),
    [
        ("calling_thread_blocked_ms", physics.calling_thread_blocked_ms),
        ("other_thread_copy_ms", physics.other_thread_copy_ms),
    ],
)
def test_22754_tables_are_within_tolerance_of_the_h200(table, simulate_table):
    measured = recorded_h200()["physics_22754"][table]
    simulated = simulate_table()
    assert set(simulated) == set(measured)
    off = {k: (round(simulated[k], 2), v) for k, v in measured.items()
           if abs(simulated[k] - v) > physics.tolerance_ms(v)}
    assert off == {}


def test_a_simulator_without_the_cross_thread_hold_misses_the_22754_stall(monkeypatch):
    monkeypatch.setattr("vllm_syncgate.fakedev.streams.Clock.hold", lambda self, start, label: None)
    measured = recorded_h200()["physics_22754"]["other_thread_copy_ms"]
    simulated = physics.other_thread_copy_ms(LatencyModel())
    assert abs(simulated["tolist/pageable_d2h"] - measured["tolist/pageable_d2h"]) > 10


def test_calibrate_recorded_agrees_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "reports" / "calibrate.json"
    assert main(["calibrate", "--device", "cuda", "--recorded", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "pageable_copy_nonblocking" in printed
    assert printed.rstrip().endswith("agreement: yes")
    data = json.loads(out.read_text())
    assert data["agree"] is True
    assert data["provenance"]["torch"] == "2.11.0+cu130"
    assert len(data["physics_22754"]["calling_thread_blocked_ms"]) == 24
    assert len(data["physics_22754"]["other_thread_copy_ms"]) == 12
    assert [p.name for p in out.parent.iterdir()] == ["calibrate.json"]


def test_calibrate_exits_1_when_a_scenario_disagrees(monkeypatch, capsys):
    wrong = [dataclasses.replace(s, blocks=True) if s.name == "argmax" else s for s in SCENARIOS]
    monkeypatch.setattr(agreement, "SCENARIOS", tuple(wrong))
    assert main(["calibrate", "--device", "cuda", "--recorded"]) == 1
    printed = capsys.readouterr().out
    assert "argmax" in printed
    assert "NO: simulator is free, scenario expects blocks" in printed


def test_calibrate_exits_1_when_the_simulator_does_not_block_where_the_h200_did(monkeypatch, capsys):
    from vllm_syncgate.fakedev import tensors

    free_item = lambda acc, func, args, kwargs: tensors._host_op(func, args, kwargs)  # noqa: E731
    monkeypatch.setitem(tensors._HANDLERS, torch.Tensor.item, free_item)
    assert main(["calibrate", "--device", "cuda", "--recorded"]) == 1
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("item "))
    assert row.endswith("NO: simulator is free, device blocks")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device", "cuda"], "no cuda device: torch.cuda.is_available() is False"),
        (["--device", "npu", "--recorded"], "no recorded npu measurement: only the H200 (cuda) is recorded"),
    ],
)
def test_calibrate_without_the_device_exits_2_in_one_line(argv, message, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["calibrate", *argv, "--output", str(out)]) == 2
    assert capsys.readouterr().err == f"syncgate calibrate: error: {message}\n"
    assert not out.exists()


def test_calibrate_json_into_an_unwritable_place_exits_2_in_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["calibrate", "--device", "cuda", "--recorded", "--output", str(blocker / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "cannot write the calibration JSON" in err
