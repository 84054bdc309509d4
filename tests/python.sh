#!/bin/sh
# The Python a test runs: $TRITON_EMBED_PYTHON when it is set (./dev.sh versions points it at
# another Triton's environment, as it does for the embedded interpreter), else the configured
# one, given first.
configured="$1"
shift
exec "${TRITON_EMBED_PYTHON:-$configured}" "$@"
