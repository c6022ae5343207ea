#!/bin/bash
#
# What a small message costs a transport in instructions, counted rather
# than timed: in the Soft-RoCE VM,
#
#   contrib/softroce/vm-run -- contrib/bench/instr-count.sh [-t VARIANTS]
#       [-c TESTS] [-n "SHORT LONG"] [-s SIZE] [-x CHECK] [-o NAME]
#
# The emulated machine's speed changes by 2x within minutes, so a timed
# difference of a few percent between transports is not resolved; an
# instruction count moves little with it (srqud's by up to 8 %: its
# acknowledgements and timers go by time). Each TEST (default "uct:am_lat
# ucp:tag_lat": ucx_perftest's UCT active message and UCP tag ping-pong,
# SIZE bytes, default 8) runs for each VARIANT (default srqud, ud_verbs,
# rc_verbs; srqud-x+UCX_SRQUD_VAR=VALUE as in mpi-calls.sh) twice, SHORT
# and LONG iterations (default 1000 and 6000), with the client under
# valgrind's callgrind. contrib/bench/instr_count.py subtracts the short
# profile from the long one (start-up and tear-down cancel out) and
# divides by the iterations between them: the instructions the client
# executes per iteration (one message sent, one received, and the polls
# between, few since the client under callgrind is the slow side), in all
# and by library (the transport's module, UCT/UCS, UCP, the verbs
# provider, libc, the test itself), and the transport's own functions.
# Instructions are not time (a clock read or a lock's atomic costs more
# than an add, and the kernel's part is not counted): this is the
# user-space software of a message, which the transports differ in.
#
# CHECK (e.g. srqud:ud_verbs:1.5, repeatable as a space-separated list):
# exit status 1 where the first variant takes more than that many times
# the second's instructions in a test, or where either has no profile
# there (a regression guard; CI runs it). Under valgrind UCX's async lock
# is a mutex (UCS_ASYNC_THREAD_LOCK_TYPE), natively a spin lock: the
# "locks" column counts spin locks only.
# Output in $SRQUD_BUILD/bench/NAME (default instr-count): the profiles,
# table.txt (also printed), instr-count.csv, instr-count.png. Exit status 1
# if a run failed or a check did not hold, 2 for a wrong option or without
# valgrind.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"

VARIANTS="srqud ud_verbs rc_verbs"
TESTS="uct:am_lat ucp:tag_lat"
ITERS="1000 6000"
SIZE=8
CHECK=
NAME=instr-count
bench_getopts "t:VARIANTS c:TESTS n:ITERS s:SIZE x:CHECK o:NAME" "$@"

read -r SHORT LONG <<< "$ITERS"
if ! [[ "${SHORT:-}" =~ ^[0-9]+$ && "${LONG:-}" =~ ^[0-9]+$ ]] ||
   [ "$LONG" -le "$SHORT" ]; then
    echo "instr-count: -n \"SHORT LONG\", two counts, the second larger" >&2
    exit 2
fi
if ! command -v valgrind > /dev/null; then
    echo "instr-count: no valgrind" >&2
    exit 2
fi
OUT=$RESULTS/$NAME
rm -rf "$OUT" && mkdir -p "$OUT"
PATH=$SRQUD_BUILD/ucx/bin:$PATH

status=0
start=$SECONDS
runs=$(( $(wc -w <<< "$TESTS") * $(wc -w <<< "$VARIANTS") * 2 ))
done_runs=0
for t in $TESTS; do
    layer=${t%%:*} test=${t#*:}
    for v in $VARIANTS; do
        for n in $SHORT $LONG; do
            name=${v%%+*}
            out=$OUT/cg-$layer-$test-$name-$n.out
            # the variant's settings (srqud-x+VAR=VALUE), its
            # transport's among them, which bench_perftest sets again
            res=$(
                for kv in $(bench_variant_env "$v"); do
                    export "${kv?}"
                done
                PERFTEST_TIMEOUT=900 \
                PERFTEST_CLIENT_WRAP="valgrind -q --tool=callgrind --callgrind-out-file=$out" \
                    bench_perftest "$name" "$test" "$SIZE" "$layer" "$n" -w 100) ||
                status=1
            done_runs=$((done_runs + 1))
            echo "# $layer $test $name $n iterations: ${res:-FAIL}" \
                 "($done_runs of $runs, $((SECONDS - start)) s)"
            if [ "$res" = FAIL ] || [ ! -s "$out" ]; then
                status=1
            fi
        done
    done
done

checks=()
for c in $CHECK; do
    checks+=(--check "$c")
done
python3 "$ROOT/contrib/bench/instr_count.py" --short "$SHORT" --long "$LONG" \
    --csv "$OUT/instr-count.csv" --png "$OUT/instr-count.png" "${checks[@]}" \
    "$OUT" | tee "$OUT/table.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
exit $status
