#!/bin/bash
#
# Run an ucx_perftest server and client on loopback (inside the VM):
#   perftest-pair.sh [VAR=VALUE...] -- PERFTEST_ARGS...
# Exits 0 only if both sides exit 0. The client's output goes to stdout; on a
# failure the server's output follows on stderr, so a log holds both sides.
# PERFTEST_TIMEOUT=SECONDS: a pair still running after that long is stopped
# (default: never); with gdb at hand both sides' threads are printed first,
# since a hang is only understood from where each thread waits.
# PERFTEST_SERVER_ENV / PERFTEST_CLIENT_ENV="VAR=VALUE ...": settings of one
# side only (two hosts of the VM's wire: each its own UCX_NET_DEVICES).
# PERFTEST_SERVER_WRAP / PERFTEST_CLIENT_WRAP="CMD ARGS": that side runs
# under CMD (e.g. "strace -f -c -o FILE" to count its system calls).
#
# log (contrib/lib/common.sh): "perftest-pair: MSG" on stderr, stdout
# being the client's output that the callers parse
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh" || exit 1
LOG_PREFIX='' LOG_FD=2

envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
tmo=${PERFTEST_TIMEOUT:-0}
have_ss=0
command -v ss > /dev/null 2>&1 && have_ss=1

listening() {   # listening PORT: a socket listens on it
    [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# A port nobody listens on: another test's daemon (an MPI launcher) may hold
# one, and the client would talk to it
for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 20000))
    [ $have_ss = 0 ] && break
    listening $port || break
done

slog=$(mktemp /tmp/perftest-server.XXXXXX)
trap 'rm -f "$slog"' EXIT

# shellcheck disable=SC2086  # the side's settings are words
env "${envs[@]}" ${PERFTEST_SERVER_ENV:-} ${PERFTEST_SERVER_WRAP:-} ucx_perftest -p $port "$@" \
    > "$slog" 2>&1 &
spid=$!

# The client connects once: it starts when the server listens (a loaded VM
# may take seconds to load the libraries), not after a guess
if [ $have_ss = 1 ]; then
    waited=0
    while ! listening $port; do
        if ! kill -0 $spid 2>/dev/null || [ $waited -ge 600 ]; then
            log "the server did not listen on port $port ($((waited / 10)) s)"
            kill $spid 2>/dev/null
            wait $spid
            sed 's/^/[server] /' "$slog" >&2
            exit 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
else
    sleep 1.5
fi

# shellcheck disable=SC2086
env "${envs[@]}" ${PERFTEST_CLIENT_ENV:-} ${PERFTEST_CLIENT_WRAP:-} ucx_perftest 127.0.0.1 -p $port "$@" &
cpid=$!

watchdog=
if [ "$tmo" != 0 ]; then
    (
        # the sleep holds none of the caller's descriptors (a $(...) would
        # wait for it) and goes with the watchdog
        sleep "$tmo" < /dev/null > /dev/null 2>&1 &
        nap=$!
        trap 'kill $nap 2>/dev/null; wait $nap 2>/dev/null; exit 0' TERM
        wait $nap
        log "still running after $tmo s; stopping it"
        thread_stacks $cpid $spid >&2
        kill $cpid $spid 2>/dev/null
        sleep 5 < /dev/null > /dev/null 2>&1
        kill -9 $cpid $spid 2>/dev/null
    ) &
    watchdog=$!
fi

wait $cpid
crc=$?
wait $spid
src=$?
if [ -n "$watchdog" ]; then
    kill $watchdog 2>/dev/null
    wait $watchdog 2>/dev/null
fi
if [ $crc != 0 ] || [ $src != 0 ]; then
    log "client exit $crc, server exit $src; the server said:"
    sed 's/^/[server] /' "$slog" >&2
    exit 1
fi
exit 0
