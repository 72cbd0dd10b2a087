#!/bin/sh
# The gate entry point every syncgate image runs (ENTRYPOINT). The logic lives in
# syncgate.containers.gate so it is unit-tested; this file only finds the image's Python.
#   syncgate-gate check [ARGS]   environment header, then `syncgate check` for $SYNCGATE_DEVICE
#   syncgate-gate ut [ARGS]      environment header, then the unit level under pytest
#   syncgate-gate CMD [ARGS]     environment header, then CMD (a shell, `syncgate repro ...`)
exec python3 -m syncgate.containers.gate "$@"
