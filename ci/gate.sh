#!/bin/sh
# The gate entry point every syncgate image runs (ENTRYPOINT). The logic lives in
# vllm_syncgate.containers.gate so it is unit-tested; this file only finds the image's Python.
#   syncgate-gate check [ARGS]   `syncgate check` for $SYNCGATE_DEVICE: every level that can run
#                                (scan, unit, serve), one verdict, its exit code the container's
#   syncgate-gate ut [ARGS]      environment header, then syncgate's own tests under pytest
#   syncgate-gate CMD [ARGS]     environment header, then CMD (a shell, `syncgate repro ...`)
exec python3 -m vllm_syncgate.containers.gate "$@"
