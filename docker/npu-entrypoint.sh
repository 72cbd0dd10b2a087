#!/bin/bash
# Entry point of the NPU image: load the CANN toolkit's environment (library paths, ASCEND_*),
# which only a login-style shell would otherwise get, then hand over to the gate. Without an NPU
# (ut-npu) the toolkit is still present, so sourcing it is harmless.
set -e
for env_script in /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh; do
  # shellcheck source=/dev/null
  [[ -f $env_script ]] && source "$env_script"
done
# SYNCGATE_CALIBRATE=npu (compose: e2e-npu, ut-npu): first say whether the simulated accelerator
# blocks where this runner's device does. It reports and never stops the gate; without an NPU it
# says so in one line (exit 2).
if [[ -n ${SYNCGATE_CALIBRATE:-} ]]; then
  python3 -m vllm_syncgate.cli calibrate --device "$SYNCGATE_CALIBRATE" \
    --output "${SYNCGATE_REPORT_DIR:-/reports}/calibrate-${SYNCGATE_CALIBRATE}.json" \
    || echo "syncgate-npu-entrypoint: calibrate exited $? (1: simulator disagrees, 2: no device); the gate runs regardless"
fi
exec /usr/local/bin/syncgate-gate "$@"
