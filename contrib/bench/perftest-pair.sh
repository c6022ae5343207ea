#!/bin/bash
#
# Run an ucx_perftest server and client on loopback (inside the VM):
#   perftest-pair.sh [VAR=VALUE...] -- PERFTEST_ARGS...
# Exits 0 only if both sides exit 0. The client's output goes to stdout.
# PERFTEST_TIMEOUT=SECONDS kills each side after that long (default: never).
# PERFTEST_SERVER_ENV / PERFTEST_CLIENT_ENV="VAR=VALUE ...": settings of one
# side only (two hosts of the VM's wire: each its own UCX_NET_DEVICES).
# PERFTEST_SERVER_WRAP / PERFTEST_CLIENT_WRAP="CMD ARGS": that side runs
# under CMD (e.g. "strace -f -c -o FILE" to count its system calls).
#
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
port=$((20000 + RANDOM % 20000))
tmo=${PERFTEST_TIMEOUT:-0}
# shellcheck disable=SC2086  # the side's settings are words
env "${envs[@]}" ${PERFTEST_SERVER_ENV:-} timeout "$tmo" ${PERFTEST_SERVER_WRAP:-} ucx_perftest -p $port "$@" \
    > /dev/null 2>&1 &
spid=$!
sleep 1.5
# shellcheck disable=SC2086
env "${envs[@]}" ${PERFTEST_CLIENT_ENV:-} timeout "$tmo" ${PERFTEST_CLIENT_WRAP:-} ucx_perftest 127.0.0.1 -p $port "$@"
crc=$?
wait $spid
src=$?
[ $crc = 0 ] && [ $src = 0 ]
