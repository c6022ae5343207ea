#!/bin/bash
#
# The device tests and the two-host wire's quick tier on a busy machine:
# a busy loop per core at normal priority runs on the host beside the VM
# for the whole time, and each tier runs N times (default 5). A test that
# passes only when the VM has the cores to itself fails here.
#
#   contrib/busy.sh [--runs N] [--hogs K | --compile] [--shuffle] [--no-wire]
#
# --hogs K: K busy loops instead of one per core. --compile: instead of
# the loops, srqud's module rebuilt over and over (make -j<cores> in a copy
# of the build's object directory), as CI's route a runs beside the
# AddressSanitizer build: a compiler's processes come and go and touch
# memory, which starved the VM in ways the loops did not (a device test
# failed 1 run in 4 so, none in 7 beside the loops;
# docs/notes/ci-failures.md). --shuffle: the device tests in a random
# order each run (gtest prints its seed: --gtest_random_seed=N repeats
# it). Prints a RESULT line per run and tier, then "busy: device P/N,
# wire P/N"; exit status 0 only when every run passed. Logs:
# $SRQUD_BUILD/busy/.
#
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
. "$ROOT/contrib/lib/common.sh"

RUNS=5
HOGS=$(nproc)
COMPILE=0
SHUFFLE=()
WIRE=1
while [ $# -gt 0 ]; do
    case $1 in
    --runs)    RUNS=${2:?--runs N}; shift 2 ;;
    --hogs)    HOGS=${2:?--hogs K}; shift 2 ;;
    --compile) COMPILE=1; shift ;;
    --shuffle) SHUFFLE=(--gtest_shuffle); shift ;;
    --no-wire) WIRE=0; shift ;;
    *)         die "usage: $0 [--runs N] [--hogs K | --compile] [--shuffle] [--no-wire]" ;;
    esac
done

VM_TEST=$SRQUD_BUILD/obj/test/gtest/srqud_vm_test
[ -x "$VM_TEST" ] || die "$VM_TEST not built (contrib/build.sh)"
LOGS=$SRQUD_BUILD/busy
mkdir -p "$LOGS"

HOG_PIDS=()
stop_hogs() {
    [ ${#HOG_PIDS[@]} -eq 0 ] || kill "${HOG_PIDS[@]}" 2>/dev/null
    wait 2>/dev/null
}
trap stop_hogs EXIT
if [ $COMPILE = 1 ]; then
    # a copy: the VM runs the tests of the build's own directory
    rm -rf "$LOGS/obj"
    cp -a "$SRQUD_BUILD/obj" "$LOGS/obj" || die "cannot copy $SRQUD_BUILD/obj"
    (
        dir=$LOGS/obj/src/uct/ib/srqud
        while :; do
            make -s -C "$dir" clean > /dev/null 2>&1
            make -s -C "$dir" -j"$(nproc)" > /dev/null 2>&1
        done
    ) &
    HOG_PIDS+=($!)
    log "srqud's module rebuilt over and over beside the VM (pid ${HOG_PIDS[*]}); load: $(uptime)"
else
    for _ in $(seq "$HOGS"); do
        bash -c 'while :; do :; done' &
        HOG_PIDS+=($!)
    done
    log "$HOGS busy loops beside the VM (pids ${HOG_PIDS[*]}); load: $(uptime)"
fi

START=$SECONDS
dev_pass=0
wire_pass=0
for i in $(seq "$RUNS"); do
    out=$LOGS/device-$i.log
    log "run $i/$RUNS: device tests (log $out, at $((SECONDS - START)) s)"
    "$ROOT/contrib/softroce/vm-run" --timeout 2400 -- "$VM_TEST" --gtest_color=no \
        "${SHUFFLE[@]}" > "$out" 2>&1
    rc=$?
    grep -E '^\[  (PASSED|FAILED) |seed of [0-9]+' "$out" | sed 's/^/   /'
    result "busy_device_$i" $rc && dev_pass=$((dev_pass + 1))
    [ $WIRE = 1 ] || continue
    out=$LOGS/wire-$i.log
    log "run $i/$RUNS: wire quick tier (log $out, at $((SECONDS - START)) s)"
    "$ROOT/contrib/softroce/vm-run" --wire --timeout 3000 -- \
        "$ROOT/test/wire/run.sh" --quick > "$out" 2>&1
    rc=$?
    grep -c '^RESULT .* PASS' "$out" | sed 's/^/   scenarios passed: /'
    grep '^RESULT .* FAIL' "$out" | sed 's/^/   /'
    result "busy_wire_$i" $rc && wire_pass=$((wire_pass + 1))
done
log "done in $((SECONDS - START)) s; load: $(uptime)"
summary="busy: device $dev_pass/$RUNS"
[ $WIRE = 1 ] && summary+=", wire $wire_pass/$RUNS"
echo "$summary"
[ $dev_pass = "$RUNS" ] && { [ $WIRE = 0 ] || [ $wire_pass = "$RUNS" ]; }
