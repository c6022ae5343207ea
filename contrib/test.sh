#!/bin/bash
#
# Run every test of srqud on a fresh Debian 12 machine (root, no RDMA
# hardware): installs what it needs (apt), builds, runs the host unit tests,
# then boots the Soft-RoCE VM and runs the device tests with UCX's module
# loading (route a) and with LD_PRELOAD on the stock UCX (route b), and
# faults on the two-host wire (test/wire/run.sh --quick).
#
# Then the same transport against UCX 1.18.1 (SRQUD_CI_UCX="..." to
# choose): UCX built from source, host unit tests, loading and refusal of
# foreign modules both ways, and UCC, sucg's UCC TL and Open MPI's
# coll/ucc, tested on the host (test/ucc/run.sh --net host). UCX 1.22.0
# (built from its tag, srqud a drop-in plugin) and the other versions'
# device tests in the VM (srqud_vm_test, loss, MPI, the UCC TL over srqud;
# UCX's UCT conformance suite of that version with --full) run with --ucx
# VERSION or --full: CI runs the default version's (SRQUD_CI_VM_UCX=1.18.1
# and SRQUD_CI_UCX="1.18.1 1.22.0" put them back).
#
#   contrib/test.sh --ucx VERSION [--full]
#       only that version; with --full its UCT conformance suite, every
#       case (the documented command for what does not fit in CI; results
#       in NEWS)
#   contrib/test.sh --full
#       everything, with the parts CI leaves out: the other versions'
#       longest conformance cases and the UCP checks' ud_verbs/rc_verbs
#       references
#   contrib/test.sh --matrix [--full]
#       every UCX of contrib/ucx-versions.txt and the devel commit: per
#       version its build, host unit tests, UCX's UCT conformance suite
#       of that version and the device tests in the VM (--full: every
#       conformance case), then loading and refusal across all of them
#       (the documented tier whose results go in NEWS; about 20 min a
#       version when nothing is cached)
#   contrib/test.sh --matrix --ucx VERSION [--full]
#       that version's row of the matrix, loading and refusal against
#       the default version
#   contrib/test.sh --clean-cache
#       empty the build cache ($SRQUD_CACHE, contrib/lib/common.sh) and
#       stop
#
# Sources come from Debian's archive, a directory of local git mirrors
# (SRQUD_GIT_MIRRORS) or the code host; a build whose source cannot be had
# is reported "NOTRUN" with the variable to set, and so are the tests that
# need it: not a pass, not a failure.
#
# Exit status is non-zero if anything failed; a test that could not run for
# another reason counts as failed. The last line is "tests: N passed, M
# failed, K not run".
#
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
cd "$ROOT" || exit 1
. "$ROOT/contrib/lib/common.sh"
. "$ROOT/contrib/ucx-versions.sh"

ONLY_UCX=
FULL=0
MATRIX=0
while [ $# -gt 0 ]; do
    case $1 in
    --ucx)    ONLY_UCX=${2:?--ucx VERSION}; shift 2 ;;
    --full)   FULL=1; shift ;;
    --matrix) MATRIX=1; shift ;;
    --clean-cache)
        log "emptying the build cache $SRQUD_CACHE ($(du -sh "$SRQUD_CACHE" 2>/dev/null | cut -f1 || echo empty))"
        rm -rf "${SRQUD_CACHE:?}"/*
        exit 0 ;;
    *)      echo "usage: $0 [--ucx VERSION] [--full] | --matrix [--ucx VERSION] [--full] | --clean-cache" >&2; exit 2 ;;
    esac
done
# 1.22.0's build, unit tests and loading (5 min) are left to --full for CI's time
other_default=1.18.1; [ $FULL = 1 ] && other_default="1.18.1 1.22.0"
OTHER_UCX=${SRQUD_CI_UCX-$other_default}
# Of those, the ones whose device tests (a VM boot: srqud_vm_test, loss,
# MPI, for 1.18.1 the UCC TL over srqud) CI runs: none by default, as
# 1.18.1's (9 min) would take CI past its time; they are left to --full and --ucx VERSION, while the builds, unit tests, loading
# and the UCC TL's host tests stay in CI
CI_VM_UCX=${SRQUD_CI_VM_UCX-}

PASSED=0
FAILED=0
FAILED_NAMES=()
# The lines that say why a check failed, repeated at the end of the run:
# CI shows only the run's last lines, and a VM's checks print theirs long
# before (a failed check's output tail, "    [name] ...", vm-tests.sh)
FAILURE_DIGEST=$(mktemp)
digest_failures() { # digest_failures < OUTPUT: its failures' lines, appended
    awk '/^RESULT [^ ]+ FAIL/ { print; next }
         /^    \[[^]]*\] / {
             if ($0 ~ /Failure$|\[  FAILED  \]|never arrived|[Ee]rror|Expected|Which is|Value of|Actual:/) {
                 print; more = 3; next
             }
             if (more > 0) { print; more-- }
         }' | head -80 >> "$FAILURE_DIGEST"
}
NOTRUN_NAMES=()

count_results() {   # reads "RESULT name PASS|FAIL" lines (result, contrib/lib/common.sh)
    local line name status
    while IFS= read -r line; do
        case "$line" in
        RESULT\ *)
            name=$(echo "$line" | awk '{print $2}')
            status=$(echo "$line" | awk '{print $3}')
            case $status in
            PASS)   PASSED=$((PASSED + 1)) ;;
            NOTRUN) NOTRUN_NAMES+=("$name") ;;
            *)      FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name") ;;
            esac
            ;;
        esac
    done
}

T0=$(date +%s)
elapsed() {         # minutes:seconds since the start, for the CI time budget
    local t=$(( $(date +%s) - T0 ))
    printf '%d:%02d' $((t / 60)) $((t % 60))
}

# SRQUD_TIME_BUDGET=S (seconds; .ci/run sets 5100, CI stops a run at
# 5400): no part starts past S, no VM runs past S (vm-run's timeout and
# its wait for the VM lock), and a run stopped so ends with "time_budget
# FAIL" and the results it has instead of being killed without them. The
# parts on the host are not cut: CI's margin beyond S (5 min) is for the
# short ones; a VM needs 5 min left to start, the packages' installation
# and checks 5, UCX 1.18.1's part 10
BUDGET=${SRQUD_TIME_BUDGET:-0}
case $BUDGET in
''|*[!0-9]*) echo "$0: SRQUD_TIME_BUDGET='$BUDGET' is not a number of seconds" >&2
             exit 2 ;;
esac
budget_left() {     # seconds left of the budget (a large number without one)
    if [ "$BUDGET" -gt 0 ]; then
        echo $((BUDGET - ($(date +%s) - T0)))
    else
        echo 999999
    fi
}
over_budget() {     # over_budget WHAT [SECONDS]: ends the run unless SECONDS (1) are left for WHAT
    [ "$(budget_left)" -ge "${2:-1}" ] && return 0
    echo "RESULT time_budget FAIL (SRQUD_TIME_BUDGET=$BUDGET s: at $(elapsed) too little left for $1; it and what follows not run)"
    FAILED=$((FAILED + 1)); FAILED_NAMES+=("time_budget")
    finish
}
machine_load
starting() {        # starting NAME [SECONDS]: its line, with the time and the load; ends the run unless SECONDS (1) are left
    machine_load
    echo "== $1 (at $(elapsed); $MACHINE_LOAD)"
    over_budget "$1" "${2:-1}"
}

step() {            # step NAME CMD... : one result for the whole command
    local name=$1 rc=0 out tee_fd tee_pid; shift
    starting "$name"
    # its output shown as it comes and kept for the digest, the command run
    # in this shell (a step's function may set what finish needs, such as
    # PACKAGES_INSTALLED), not in a pipeline's subshell
    out=$(mktemp)
    exec {tee_fd}> >(tee "$out")
    tee_pid=$!
    "$@" >&"$tee_fd" 2>&1 || rc=$?
    exec {tee_fd}>&-
    # tee ends at the pipe's end; a process the command left behind that
    # holds the pipe must not hold the run: 5 s at most
    for _ in $(seq 50); do
        kill -0 "$tee_pid" 2>/dev/null || break
        sleep 0.1
    done
    case $rc in
    0)  result "$name" PASS
        PASSED=$((PASSED + 1)) ;;
    "$NOSOURCE_STATUS")
        # its source cannot be had here (the line above says what to set)
        echo "RESULT $name NOTRUN (source not available)"
        NOTRUN_NAMES+=("$name") ;;
    *)  result "$name" FAIL
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name")
        { echo "$name: exit $rc, its last lines:"
          tail -n 15 "$out" | sed 's/^/    /'; } >> "$FAILURE_DIGEST" ;;
    esac
    rm -f "$out"
    return $rc
}

# A build on the host beside the VM run that follows it (the VM keeps
# about one of the 2 cores busy; the device tests and the wire pass
# beside a busy loop per core, contrib/busy.sh): its output and result
# come at bg_join
bg_start() {        # bg_start NAME CMD...
    BG_NAME=$1; shift
    BG_OUT=$(mktemp)
    starting "$BG_NAME, beside the VM run that follows (its output after it)"
    ( "$@" > "$BG_OUT" 2>&1; echo $? > "$BG_OUT.rc" ) &
    BG_PID=$!
}
bg_join() {         # bg_join: bg_start's part, finished; its status
    local rc
    wait "$BG_PID"
    rc=$(cat "$BG_OUT.rc" 2>/dev/null || echo 1)
    echo "== $BG_NAME (started beside the VM run; done at $(elapsed))"
    cat "$BG_OUT"
    rm -f "$BG_OUT" "$BG_OUT.rc"
    if [ "$rc" = 0 ]; then
        result "$BG_NAME" PASS
        PASSED=$((PASSED + 1))
    else
        result "$BG_NAME" FAIL
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("$BG_NAME")
    fi
    return "$rc"
}

notrun() {          # notrun NAME...: needs what a step before could not build
    local name
    for name in "$@"; do
        echo "RESULT $name NOTRUN (needs a build whose source is not available)"
        NOTRUN_NAMES+=("$name")
    done
}

finish() {
    # a run stopped by its budget between installing the packages and
    # removing them: coll/sucg would be in every Open MPI job after it
    if [ "${PACKAGES_INSTALLED:-0}" = 1 ]; then
        "$ROOT/contrib/build-packages.sh" --remove || FAILED=$((FAILED + 1))
    fi
    echo
    if [ -s "$FAILURE_DIGEST" ]; then
        echo "why (the failed checks' own lines, printed above in full):"
        head -120 "$FAILURE_DIGEST"
    fi
    rm -f "$FAILURE_DIGEST"
    [ ${#FAILED_NAMES[@]} -gt 0 ] && echo "failed: ${FAILED_NAMES[*]}"
    [ ${#NOTRUN_NAMES[@]} -gt 0 ] &&
        echo "not run (a source not available here; set SRQUD_GIT_MIRRORS): ${NOTRUN_NAMES[*]}"
    echo "tests: $PASSED passed, $FAILED failed, ${#NOTRUN_NAMES[@]} not run ($(elapsed) min)"
    [ $FAILED = 0 ] && [ $PASSED -gt 0 ]
    exit $?
}

# Device tests in the VM: one boot per route
run_vm() {   # run_vm [vm-run options] -- args for vm-tests.sh
    local out args=() left wrap=()
    # within the budget: a VM needs minutes to boot and report; its
    # timeout is cut to what is left, and a wait for the VM lock or the
    # kernel's download before it is bounded too
    starting "vm-run $*" 300
    left=$(budget_left)
    [ "$BUDGET" -gt 0 ] && wrap=(timeout -k 30 "$left")
    while [ $# -gt 0 ]; do
        if [ "$1" = --timeout ] && [ "$2" -gt "$((left - 30))" ]; then
            echo "== vm-run: --timeout $2 cut to $((left - 30)) s (SRQUD_TIME_BUDGET)"
            args+=(--timeout "$((left - 30))"); shift 2
        else
            args+=("$1"); shift
        fi
    done
    out=$(mktemp)
    "${wrap[@]}" "$ROOT/contrib/softroce/vm-run" "${args[@]}" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]}
    count_results < "$out"
    digest_failures < "$out"
    if ! grep -q "^RESULT " "$out"; then
        # the VM did not run the tests at all: that is a failure
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("vm-run ${args[*]}")
    elif [ "$rc" != 0 ] && ! grep -q "^RESULT [^ ]* FAIL" "$out"; then
        # it stopped part way (a timeout, the VM killed): the checks after
        # it never ran
        FAILED=$((FAILED + 1)); FAILED_NAMES+=("vm-run ${args[*]} (exit $rc)")
    fi
    rm -f "$out"
    return $rc
}

# counted NAME [--expect "N..."] CMD...: CMD prints a RESULT line per
# check, each counted; a run that printed none (with --expect: one of
# those names missing) is a failure of NAME (of each missing name)
counted() {
    local name=$1 expect='' out n
    shift
    if [ "$1" = --expect ]; then
        expect=$2
        shift 2
    fi
    starting "$name"
    out=$(mktemp)
    "$@" | tee "$out"
    count_results < "$out"
    digest_failures < "$out"
    if [ -z "$expect" ]; then
        grep -q "^RESULT " "$out" || { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$name"); }
    fi
    for n in $expect; do
        grep -q "^RESULT $n " "$out" || { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$n"); }
    done
    rm -f "$out"
}

# How each built version loads srqud, and refuses the others' modules
load_tests() {  # load_tests VERSION...
    counted "load$*" "$ROOT/test/compat/load.sh" "$@"
}

# Another UCX version: build, host tests, VM tests
test_other_ucx() {  # test_other_ucx VERSION
    local v=$1 n
    n=$(echo "$v" | tr . _)
    echo "== UCX $v"
    # 1.18.1 is UCC's UCX here: with it, UCC, the UCC TL and Open MPI's
    # coll/ucc (issue 12), tested on the host (shared memory) and in the VM
    local build_args=(--ucx "$v")
    [ "$v" = 1.18.1 ] && [ $MATRIX = 0 ] && build_args=(--ucc)
    local rc=0
    step build_ucx_$n "$ROOT/contrib/build.sh" "${build_args[@]}" || rc=$?
    if [ $rc != 0 ]; then
        [ $rc = "$NOSOURCE_STATUS" ] && notrun host_unit_tests_ucx_$n device_tests_ucx_$n
        return 1
    fi
    step host_unit_tests_ucx_$n sh -c "make -C '$SRQUD_BUILD/obj-$v' check > '$SRQUD_BUILD/unit-$v.out' 2>&1"
    # its UCT conformance suite (a build of ~3 min, ~12 min in the VM) is
    # left to --full and --matrix: CI runs the default version's
    if [ $FULL = 1 ] || [ $MATRIX = 1 ]; then
        step build_ucx_uct_gtest_$n "$ROOT/contrib/build-ucx-gtest.sh" --ucx "$v"
    fi
    if [ "$v" = 1.18.1 ] && [ $MATRIX = 0 ]; then
        step build_coll_ucc "$ROOT/contrib/build-coll-ucc.sh" &&
            step host_ucc_tl_tests "$ROOT/test/ucc/run.sh" --net host --quick
    fi
    if [ $MATRIX = 1 ]; then
        echo "== device tests and UCT conformance suite, UCX $v"
        SRQUD_UCX=$v SRQUD_FULL=$FULL SRQUD_MATRIX=1 run_vm --mem 8192 --timeout 3600 -- \
            "$ROOT/contrib/vm-tests.sh" --ucx "$v"
        return 0
    fi
    if [ $FULL = 0 ] && [ -z "$ONLY_UCX" ] && [[ " $CI_VM_UCX " != *" $v "* ]]; then
        echo "== device tests, UCX $v: with --full or --ucx $v (CI time)"
        return 0
    fi
    echo "== device tests, UCX $v"
    SRQUD_UCX=$v SRQUD_FULL=$FULL run_vm --mem 8192 --timeout 3600 -- \
        "$ROOT/contrib/vm-tests.sh" --ucx "$v"
}

if [ $MATRIX = 1 ]; then
    # the default version's build first: its module takes part in the
    # loading tests, and the others' refusals are checked against it
    if [ -n "$ONLY_UCX" ] && ! ucx_versions --devel | grep -qx "$ONLY_UCX"; then
        echo "$0: UCX $ONLY_UCX is not a row of contrib/ucx-versions.txt" >&2
        exit 2
    fi
    step build "$ROOT/contrib/build.sh" || finish
    built=(1.13.1)
    for v in $(ucx_versions --devel); do
        [ "$v" = 1.13.1 ] && continue
        [ -n "$ONLY_UCX" ] && [ "$v" != "$ONLY_UCX" ] && continue
        test_other_ucx "$v" && built+=("$v")
    done
    load_tests "${built[@]}"
    finish
fi

if [ -n "$ONLY_UCX" ] && [ "$ONLY_UCX" != 1.13.1 ]; then
    # the UCC TL's tests check MPI_Allgather with the default build's checker
    [ "$ONLY_UCX" = 1.18.1 ] && { step build "$ROOT/contrib/build.sh" || finish; }
    test_other_ucx "$ONLY_UCX"
    # with the default version's module when it is built: refusals both ways
    if [ -e "$SRQUD_BUILD/obj/src/uct/ib/srqud/.libs/libuct_srqud.so.0" ]; then
        load_tests 1.13.1 "$ONLY_UCX"
    else
        load_tests "$ONLY_UCX"
    fi
    finish
fi

# packages left installed by an interrupted run would put coll/sucg into
# every Open MPI job of the tests below
if dpkg-query -W -f='${db:Status-Status}' libsucg0 2>/dev/null | grep -q installed; then
    counted packages_left_removed "$ROOT/contrib/build-packages.sh" --remove
fi

# --full runs LAMMPS across the two hosts of the wire (test/wire/lammps.sh)
[ $FULL = 1 ] && export EXTRA_PACKAGES="${EXTRA_PACKAGES:-} lammps"
step build "$ROOT/contrib/build.sh" || finish

# Host unit tests (googletest), through automake's test driver
unit_tests() {
    make -C "$SRQUD_BUILD/obj" check > "$SRQUD_BUILD/unit.out" 2>&1
    local rc=$?
    local log=$SRQUD_BUILD/obj/test/gtest/srqud_unit.log
    grep -E "^\[  (PASSED|FAILED)|tests ran" "$log" 2>/dev/null || true
    if [ $rc != 0 ]; then
        # why: the failed assertions, or the build's error (no log then)
        if grep -q "Failure$" "$log" 2>/dev/null; then
            grep -E -A4 "Failure$" "$log" | head -40
        else
            tail -n 15 "$SRQUD_BUILD/unit.out"
        fi
    fi
    return $rc
}
step host_unit_tests unit_tests
# calls go down the layers of contrib/layers.txt, no circle, and the
# picture and table in docs/design.md are the code's
step host_layers /usr/bin/python3 "$ROOT/contrib/layers.py"
# the benchmarks' models (pure logic): mlx5's uUAR accounting against the
# paper's figures (contrib/bench/threads_model.py)
step host_model_uuar /usr/bin/python3 "$ROOT/contrib/bench/threads_model.py" --check

# libFuzzer, bounded (20 s each, --full 300 s; SRQUD_FUZZ_SECONDS to
# change): fuzz_rx over the receive-side logic (header check, selective
# repeat, zero-copy ranges and chunk tracker), fuzz_sucg_am over sucg's
# step message (its check and the handler's writes), fuzz_path over the
# whole receive path (srqud's files over fake verbs, with fake peers and
# the user's operations interleaved); a RESULT line each, and a run that
# printed one not is a failure
fuzz_s=20; [ $FULL = 1 ] && fuzz_s=300
counted host_fuzz --expect "fuzz_rx fuzz_sucg_am fuzz_path" "$ROOT/test/fuzz/run.sh" \
    "${SRQUD_FUZZ_SECONDS:-$fuzz_s}"

# sucg in MPI on the host (UCX of build/ucx over shared memory and tcp on
# lo): Open MPI + mca_coll_sucg.so and MPICH + libsucg_pmpi.so, 2..8 ranks,
# 1 B..8 MiB, in place, datatypes, every byte and the sucg path checked
sucg_mpi_tests() {
    # CI: 2, 3, 4 and 8 ranks (and 7 for each algorithm); --full 2 to 8
    local nps=(--np "2 3 4 8"); [ $FULL = 1 ] && nps=()
    (. "$ROOT/contrib/env.sh" && "$ROOT/test/sucg/mpi/run.sh" "${nps[@]}")
}
step host_sucg_mpi_tests sucg_mpi_tests

# the Allgather benchmark end to end on the host (shared memory, one short
# repetition of both MPIs): its runs check every byte and each call's path,
# and every cell must have its mean and p99 (a drift between the program's
# columns and the script's fails here, not in an hour's VM run)
bench_sucg_tune() {
    local out=$SRQUD_BUILD/bench/ci-sucg-tune
    rm -rf "$out"
    (. "$ROOT/contrib/env.sh" &&
     "$ROOT/contrib/bench/sucg-tune.sh" -r 1 -n host -m "ompi mpich" -p 2 \
         -s 4,32K -i 20 -k "native sucg sucg-tail+SUCG_STAGED_STEP=tail" \
         -o ci-sucg-tune) || return 1
    /usr/bin/python3 - "$out/summary.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = ('native_us', 'sucg_us', 'sucg-tail_us', 'native_p99_us', 'sucg_p99_us',
        'sucg-tail_p99_us')
bad = [r for r in rows if not all(float(r[c] or 0) > 0 for c in cols)]
print('%d cells, %d without a mean or p99' % (len(rows), len(bad)))
sys.exit(1 if len(rows) != 4 or bad else 0)
PY
}
step host_bench_sucg_tune bench_sucg_tune

# UCX's UCT conformance suite (test/ucx-gtest), run in the VM by route a
if [ -x "$ROOT/contrib/build-ucx-gtest.sh" ]; then
    step build_ucx_uct_gtest "$ROOT/contrib/build-ucx-gtest.sh"
fi

# Route a runs UCX's UCT suite, whose peer_failure_multiple case needs more
# than 4 GB of guest memory
echo "== device tests, route a (UCX dlopens libuct_srqud)"
# --full: MPICH rebuilt with VCIs (about 6 min), a UCP worker per thread's
# communicator, which route a then runs over srqud
[ $FULL = 1 ] && step build_mpich_vci "$ROOT/contrib/build-mpich-vci.sh"
# An AddressSanitizer build of the module, its device tests and the UCP
# checks, run by route b over the attack tests and UCP's force close
# (built beside route a); --full: a ThreadSanitizer build too, run over
# the threaded tests
bg_start build_asan "$ROOT/contrib/build-san.sh" address
SRQUD_FULL=$FULL run_vm --mem 8192 --timeout 3600 -- "$ROOT/contrib/vm-tests.sh"
bg_join
[ $FULL = 1 ] && step build_tsan "$ROOT/contrib/build-san.sh" thread
echo "== device tests, route b (stock UCX + LD_PRELOAD)"
SRQUD_FULL=$FULL run_vm --timeout 1800 --stock -- "$ROOT/contrib/vm-tests.sh" --stock

# Two hosts on a real wire (issue 16): rxeA on wA <-> wB with rxeB, faults
# put on the wire by netem/tbf and by taking the link down, killing a
# peer; checksummed UCP and MPI traffic. CI runs the quick tier; --full
# every fault, the ud_verbs/rc_verbs anchors, MPICH, 2 ranks per host, the
# UCG Allgather tests and LAMMPS across the hosts
echo "== two-host wire (vm-run --wire)"
wire_tier=--quick; [ $FULL = 1 ] && wire_tier=
# CI builds the Debian packages (below) beside it; --full the RPMs too
# (rpmbuild, its %check the same make check as the Debian build's)
rpms=; [ $FULL = 1 ] && rpms=--rpm
bg_start packages_build "$ROOT/contrib/build-packages.sh" $rpms
run_vm --wire --timeout 3000 -- "$ROOT/test/wire/run.sh" $wire_tier

# The packages a site installs: the release tarball (make dist), the .debs
# (dpkg-buildpackage, lintian) and with --full the RPMs (rpmbuild) built from it,
# the .debs installed into this machine and checked through the installed
# files (on the host; in the VM ucx_info -d and a perftest by route b on
# Debian's UCX), then removed: while libsucg0 is installed every Open MPI
# job of the machine finds coll/sucg, so this comes after the MPI tests
echo "== packages"
# (installed, checked and removed: about 1 min, 3 on a slow machine)
if bg_join && over_budget packages 300; then
    PACKAGES_INSTALLED=1
    counted packages_install "$ROOT/contrib/build-packages.sh" --no-deb --install
    run_vm --stock --timeout 900 -- "$ROOT/contrib/build-packages.sh" --device-check
    counted packages_remove "$ROOT/contrib/build-packages.sh" --remove
    PACKAGES_INSTALLED=0
fi

[ -n "$ONLY_UCX" ] && finish   # --ucx 1.13.1: the default version only

# The other UCX versions, then loading across all of them
built=(1.13.1)
# (UCX 1.18.1's builds, unit tests, UCC TL tests and loading: about 5 min,
# 12 on a slow machine)
[ -n "$OTHER_UCX" ] && over_budget "UCX $OTHER_UCX" 600
for v in $OTHER_UCX; do
    test_other_ucx "$v" && built+=("$v")
done
load_tests "${built[@]}"

finish
