"""compose.yaml agrees with devices.toml, the images' environment and the device profiles.

Every mutant below (a dropped driver mount, a wrong image, an env override, a lost volume, a
wrong device) must be named by the check, or the real files passing it would mean nothing.
"""

import copy
import dataclasses

import pytest

from vllm_syncgate.containers.consistency import dockerfile_env, service_problems
from vllm_syncgate.profiles import DEVICES, builtin_profile_path, load_profile


@pytest.fixture(scope="module")
def profiles():
    return {d: load_profile(builtin_profile_path(d)) for d in DEVICES}


@pytest.fixture(scope="module")
def image_env(repo, specs):
    return {d: dockerfile_env((repo / specs[d].dockerfile).read_text()) for d in DEVICES}


def problems(compose_doc, specs, image_env, profiles, device, service=None, profile=None):
    name = f"e2e-{device}"
    return service_problems(name, service or compose_doc["services"][name], specs[device],
                            image_env[device], profile or profiles[device])


@pytest.mark.parametrize("device", DEVICES)
def test_e2e_service_agrees(compose_doc, specs, image_env, profiles, device):
    assert problems(compose_doc, specs, image_env, profiles, device) == []


def _mutant(compose_doc, device):
    return copy.deepcopy(compose_doc["services"][f"e2e-{device}"])


def test_dropped_driver_mount_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "npu")
    service["volumes"].remove("/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64:ro")
    found = problems(compose_doc, specs, image_env, profiles, "npu", service)
    assert found == ["services.e2e-npu.volumes: missing "
                     "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64:ro"]


def test_hardcoded_device_id_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "npu")
    service["devices"][0] = "/dev/davinci3:/dev/davinci3"
    found = problems(compose_doc, specs, image_env, profiles, "npu", service)
    assert any("${SYNCGATE_NPU_DEVICE:-0}" in p for p in found)


def test_gpu_reservation_drift_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "cuda")
    service["deploy"]["resources"]["reservations"]["devices"][0]["count"] = 1
    found = problems(compose_doc, specs, image_env, profiles, "cuda", service)
    assert len(found) == 1
    assert found[0].startswith("services.e2e-cuda.deploy:")


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("image", "syncgate-cpu:old", "services.e2e-cpu.image: 'syncgate-cpu:old'"),
    ("command", ["ut"], "services.e2e-cpu.command: ['ut']"),
    ("shm_size", "64mb", "services.e2e-cpu.shm_size: '64mb'"),
    ("network_mode", "host", "services.e2e-cpu.network_mode: 'host'"),
])
def test_service_field_drift_is_named(compose_doc, specs, image_env, profiles, key, value,
                                      expected):
    service = _mutant(compose_doc, "cpu")
    service[key] = value
    found = problems(compose_doc, specs, image_env, profiles, "cpu", service)
    assert len(found) == 1
    assert found[0].startswith(expected)


def test_env_override_of_the_profile_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "cpu")
    service["environment"]["VLLM_CPU_KVCACHE_SPACE"] = "8"
    found = problems(compose_doc, specs, image_env, profiles, "cpu", service)
    assert len(found) == 1
    assert "VLLM_CPU_KVCACHE_SPACE='8' overrides the profile's '1'" in found[0]


def test_image_env_that_contradicts_the_profile_is_named(compose_doc, specs, image_env,
                                                         profiles):
    profile = dataclasses.replace(profiles["cpu"], env={"VLLM_CPU_KVCACHE_SPACE": "4"})
    found = problems(compose_doc, specs, image_env, profiles, "cpu", profile=profile)
    assert len(found) == 1
    assert "overrides the profile's '4'" in found[0]


def test_wrong_device_for_the_profile_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "cuda")
    service["environment"]["SYNCGATE_DEVICE"] = "cpu"
    found = problems(compose_doc, specs, image_env, profiles, "cuda", service)
    assert found == ["services.e2e-cuda: SYNCGATE_DEVICE is 'cpu', the cuda profile runs there"]


def test_lost_report_volume_is_named(compose_doc, specs, image_env, profiles):
    service = _mutant(compose_doc, "cpu")
    service["volumes"] = [v for v in service["volumes"] if not v.endswith(":/reports")]
    found = problems(compose_doc, specs, image_env, profiles, "cpu", service)
    assert found == ["services.e2e-cpu.volumes: nothing is mounted at SYNCGATE_REPORT_DIR="
                     "/reports, so reports are lost with the container"]


def test_model_path_outside_every_mount_is_named(compose_doc, specs, image_env, profiles):
    profile = dataclasses.replace(profiles["npu"], model="/models/qwen")
    found = problems(compose_doc, specs, image_env, profiles, "npu", profile=profile)
    assert found == ["services.e2e-npu.volumes: the profile's model /models/qwen is on no mount"]
    profile = dataclasses.replace(profiles["npu"], model="/var/cache/syncgate/models/qwen")
    assert problems(compose_doc, specs, image_env, profiles, "npu", profile=profile) == []


def test_ut_npu_keeps_the_unit_level_contract(compose_doc, image_env):
    # The NPU unit level relies on these: no torch_npu autoload, no kernel build, and the
    # vllm-ascend source where the image put it. It runs the levels of `syncgate check` that
    # need no NPU on that tree (issue 14), no longer syncgate's own tests/ut/npu.
    env = compose_doc["services"]["ut-npu"]["environment"]
    assert env["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"
    assert env["COMPILE_CUSTOM_KERNELS"] == "0"
    assert env["SYNCGATE_ASCEND_SOURCE"] == image_env["npu"]["SYNCGATE_ASCEND_SOURCE"]
    assert compose_doc["services"]["ut-npu"]["command"] == [
        "check", "--levels", "scan,unit", "--source", env["SYNCGATE_ASCEND_SOURCE"]]


@pytest.mark.parametrize("service", ["ut", "e2e-cpu", "e2e-cuda", "e2e-npu", "ut-npu", "repro"])
def test_every_service_runs_the_gate_with_init(compose_doc, service):
    # init: PID 1 forwards SIGTERM; without it `down` waits 10 s and the gate cannot clean up.
    assert compose_doc["services"][service]["init"] is True


def test_dockerfile_env_reads_continuations_and_later_values():
    text = 'ENV A=1 \\\n    B="two words" \\\n    C=3\n# ENV D=4\nENV A=5\n'
    assert dockerfile_env(text) == {"A": "5", "B": "two words", "C": "3"}
