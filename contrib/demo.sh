#!/bin/bash
#
# srqud demo on a fresh Debian 12 machine: builds everything (as
# contrib/test.sh does), boots the Soft-RoCE VM and prints ucx_perftest
# results over srqud beside UCX's own ud_verbs, measured in the same run.
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}

"$ROOT/contrib/build.sh"
exec "$ROOT/contrib/softroce/vm-run" --timeout 1800 -- "$ROOT/contrib/bench/perftest-compare.sh" "$@"
