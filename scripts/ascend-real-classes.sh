#!/usr/bin/env bash
# The NPU seq-lens sync property on the real NPUModelRunner classes of two vllm-ascend trees, on
# CPU, in the environment `scripts/setup-env.sh --ascend` builds (run that first):
#   before  vllm-ascend 0.23.0.post1 (the PyPI sdist, fetched and verified once) on vLLM 0.23.0:
#           must FAIL (an event synchronize and a device-to-host copy in every non-speculative step)
#   after   the tree at Dockerfile.npu's VLLM_ASCEND_REF on vLLM 0.27.1: must PASS. Give its path
#           (a checkout or `git archive` of that commit); it is not fetched here.
# Each run is the three-line upstream test (docs/unit.md) under pytest, --syncgate-ascend-mode import,
# JUnit in $SYNCGATE_REPORT_DIR (default reports/ascend-real). Exit 0 when both came out as
# expected, 1 otherwise, 2 on bad input.
#   usage: scripts/ascend-real-classes.sh AFTER_TREE
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${SYNCGATE_ASCEND_VENV:-.venv-ascend}"
reports="${SYNCGATE_REPORT_DIR:-reports/ascend-real}"
if [[ $# -ne 1 || ! -d "$1/vllm_ascend/worker/v2" ]]; then
  echo "usage: $0 AFTER_TREE (a vllm-ascend tree with vllm_ascend/worker/v2/)" >&2
  exit 2
fi
if [[ ! -x "$venv/bin/python" || ! -d "$venv/vllm-0.23.0" ]]; then
  echo "$0: error: no $venv with its vllm-0.23.0 overlay; run scripts/setup-env.sh --ascend" >&2
  exit 2
fi
after="$(cd "$1" && pwd)"
before="$("$venv/bin/python" -c 'from vllm_syncgate.upstream_sources import ascend_sdist; print(ascend_sdist("0.23.0.post1"))')"
mkdir -p "$reports"
status=0
run() {  # name expected-exit tree PYTHONPATH-prefix
  local name=$1 expected=$2 tree=$3 prefix=$4 started code
  started=$(date +%s)
  set +e
  PYTHONPATH="$prefix$tree" TORCH_DEVICE_BACKEND_AUTOLOAD=0 COMPILE_CUSTOM_KERNELS=0 \
    "$venv/bin/python" -m pytest tests/data/npu/upstream_example -q -p no:randomly \
    --syncgate-ascend-source "$tree" --syncgate-ascend-mode import \
    --junitxml "$reports/$name.xml" > "$reports/$name.log" 2>&1
  code=$?
  set -e
  local verdict=PASS; [[ $code -eq 1 ]] && verdict=FAIL; [[ $code -gt 1 ]] && verdict="ERROR($code)"
  local as_expected=yes; [[ $code -ne $expected ]] && { as_expected=NO; status=1; }
  printf '%-7s %-8s %4ss  expected %s: %s  (%s)\n' "$name" "$verdict" "$(( $(date +%s) - started ))" \
    "$([[ $expected -eq 0 ]] && echo PASS || echo FAIL)" "$as_expected" "$tree"
  grep -m1 -o 'no_seq_lens_sync_without_speculation[^"]*model_runner.py:[0-9]*:[a-z_]*' \
    "$reports/$name.log" || true
}
run before 1 "$before" "$venv/vllm-0.23.0:"
run after 0 "$after" ""
exit $status
