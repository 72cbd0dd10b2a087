#!/bin/bash
# Entry point of the NPU image: load the CANN toolkit's environment (library paths, ASCEND_*),
# which only a login-style shell would otherwise get, then hand over to the gate. Without an NPU
# (ut-npu) the toolkit is still present, so sourcing it is harmless.
set -e
for env_script in /usr/local/Ascend/ascend-toolkit/set_env.sh /usr/local/Ascend/nnal/atb/set_env.sh; do
  # shellcheck source=/dev/null
  [[ -f $env_script ]] && source "$env_script"
done
exec /usr/local/bin/syncgate-gate "$@"
