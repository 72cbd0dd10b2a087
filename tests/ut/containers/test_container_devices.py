"""Device specs: the compose fields and docker run flags both come from devices.toml, and the
host check names what is missing instead of letting a container crash on it."""

import subprocess
import sys

import pytest

from vllm_syncgate.containers.devices import DeviceSpec, load_device_specs
from vllm_syncgate.errors import ConfigError


def test_packaged_specs_cover_every_device(specs):
    assert set(specs) == {"cpu", "cuda", "npu"}


def test_npu_run_args_follow_the_ascend_recipe(specs):
    args = specs["npu"].run_args(["0", "1"])
    devices = [args[i + 1] for i, a in enumerate(args) if a == "--device"]
    assert devices == ["/dev/davinci0", "/dev/davinci1", "/dev/davinci_manager", "/dev/devmm_svm",
                       "/dev/hisi_hdc"]
    assert "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64:ro" in args
    assert args[-2:] == ["--shm-size", "1gb"]


def test_cpu_run_args_keep_the_gate_offline(specs):
    assert specs["cpu"].run_args(["0"]) == ["--shm-size", "1gb", "--network=none"]


def test_cuda_run_args_reserve_exactly_the_ids(specs):
    assert specs["cuda"].run_args(["2", "3"]) == ["--gpus", '"device=2,3"', "--ipc=host"]


def test_compose_fields_take_the_id_from_the_environment(specs):
    fields = specs["npu"].compose_fields()
    assert fields["devices"][0] == "/dev/davinci${SYNCGATE_NPU_DEVICE:-0}:/dev/davinci${SYNCGATE_NPU_DEVICE:-0}"
    gpu = specs["cuda"].compose_fields()["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu == {"driver": "nvidia", "device_ids": ["${SYNCGATE_CUDA_DEVICE:-0}"],
                   "capabilities": ["gpu"]}


def test_missing_on_host_against_a_fake_root(specs, tmp_path):
    npu = specs["npu"]
    assert npu.missing_on_host(["0"], root=tmp_path) == [*npu.nodes(["0"]), *npu.mounts]
    for path in [*npu.nodes(["0"]), *npu.mounts]:
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    assert npu.missing_on_host(["0"], root=tmp_path) == []
    assert npu.missing_on_host(["0", "1"], root=tmp_path) == ["/dev/davinci1"]


def test_cuda_probe_paths_are_checked_but_not_passed(specs, tmp_path):
    assert specs["cuda"].missing_on_host(["1"], root=tmp_path) == ["/dev/nvidia1", "/dev/nvidiactl"]
    assert "devices" not in specs["cuda"].compose_fields()


@pytest.mark.parametrize(("text", "key", "problem"), [
    ('[npu]\nimage = "x"\ndockerfile = "D"\ndevice_nodes = ["dev/davinci0"]\n',
     "npu.device_nodes", "expected a list of absolute paths"),
    ('[npu]\nimage = "x"\n', "npu.dockerfile", "required string is missing"),
    ('[npu]\nimage = "x"\ndockerfile = "D"\nmount = ["/a"]\n', "npu.mount", "unknown key"),
    ("[npu\n", "<toml>", "syntax error"),
])
def test_bad_spec_files_name_the_key(tmp_path, text, key, problem):
    path = tmp_path / "devices.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_device_specs(path)
    assert err.value.key == key
    assert problem in err.value.problem


def test_spec_nodes_expand_each_id_in_order():
    spec = DeviceSpec("x", "i", "D", device_nodes=("/dev/a{id}", "/dev/ctl"))
    assert spec.nodes(["3", "1"]) == ["/dev/a3", "/dev/a1", "/dev/ctl"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vllm_syncgate.containers.devices", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_cli_check_fails_with_one_line_naming_the_missing_paths():
    result = _cli("check", "npu", "--ids", "7")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "missing /dev/davinci7" in lines[0]


def test_cli_check_passes_for_cpu_and_prints_run_args():
    assert _cli("check", "cpu").returncode == 0
    result = _cli("run-args", "cuda", "--ids", "0,1")
    assert result.returncode == 0
    assert result.stdout.strip() == "--gpus '\"device=0,1\"' --ipc=host"


@pytest.mark.parametrize(("args", "message"), [
    (("check", "tpu"), "device 'tpu': expected one of cpu, cuda, npu"),
    (("run-args", "npu", "--ids", "0,x"), "--ids '0,x': expected comma-separated integers"),
])
def test_cli_bad_input(args, message):
    result = _cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
