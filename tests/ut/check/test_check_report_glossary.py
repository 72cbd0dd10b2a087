"""docs/report-json.md names every field a real report.json has, and the schema it carries."""

import json
import re
from pathlib import Path

from vllm_syncgate.check.judge import judge
from vllm_syncgate.check.levels import PASS, LevelCase, LevelResult
from vllm_syncgate.check.levels_report import SCHEMA, write_level_reports
from vllm_syncgate.check.report import CheckResult
from vllm_syncgate.parity import Tolerance

GLOSSARY = Path(__file__).resolve().parents[3] / "docs" / "report-json.md"


def _keys(value, prefix=""):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            if key not in ("env", "profile", "model", "timings_s", "sites", "symbols", "allowed",
                           "steps", "num_steps", "mean_per_step", "mean_per_step_with_allowed",
                           "mean_syncs_per_decode_step", "mean_syncs_per_decode_step_counted",
                           "levels"):
                yield from _keys(inner)
            elif key == "levels":
                for level in inner.values():
                    yield from _keys(level)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def test_glossary_names_every_field_of_a_real_report(judge_kit, tmp_path):
    k = judge_kit
    runs = [k["scenario_run"]("g", "sequential", [], k["mutant_steps"]()),
            k["scenario_run"]("g", "batched", [], k["clean_steps"]())]
    scenarios, groups = judge([k["group_run"]("g", runs)], k["NoReference"](), k["budgets"], mode="exact",
                              tolerance=Tolerance(), default_runner="v1")
    result = CheckResult({"device": "cpu"}, {}, {}, scenarios, groups)
    levels = [LevelResult("scan", PASS, cases=[LevelCase("R.execute_model", True, "ok")]),
              LevelResult("serve", "fail")]
    paths = write_level_reports(tmp_path, levels, result, {})
    doc = json.loads(paths["json"].read_text())
    assert doc["schema"] == SCHEMA
    glossary = GLOSSARY.read_text()
    assert f"`{SCHEMA}`" in glossary
    documented = {part for name in re.findall(r"`([a-z_.\[\]]+)`", glossary)
                  for part in re.split(r"[.\[\]]+", name) if part}
    missing = sorted(set(_keys(doc)) - documented)
    assert missing == []
