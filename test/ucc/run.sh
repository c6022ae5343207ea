#!/bin/bash
#
# Tests of sucg's UCC TL (tl/sucg, issue 12), with real UCC and Open MPI:
#
#   test/ucc/run.sh [--net host|srqud|rc] [--quick]
#
#   info      ucc_info lists tl/sucg, its default score and algorithms
#   default   without tuning, tl/sucg takes allgathers of 2 ranks over shared
#             memory (the benchmark's ranges); 3 ranks, and over srqud or
#             rc_verbs any team, stay with UCC's own (tl/ucp)
#   ucc_test  UCC's own ucc_test_mpi, allgather, every algorithm forced in
#             turn (UCC_TL_SUCG_TUNE=allgather:inf:@ALG): teams world, half,
#             reverse, odd_even; int8, int32, float64; 2 B .. 8 MiB per
#             rank, x4 steps (1 MiB in the VM); in place and persistent both ways;
#             every element checked by ucc_test_mpi, and every allgather
#             must have run in tl/sucg (UCC_COLL_TRACE)
#   perftest  UCC's ucc_perftest, allgather 1 B .. 256 KiB per rank, rd and
#             ring forced: every size timed, every allgather in tl/sucg
#   ompi      MPI_Allgather through Open MPI 4.1.4's coll/ucc
#             (contrib/build-coll-ucc.sh) into tl/sucg, checked byte by
#             byte by sucg_mpi_allgather_test (test/sucg/mpi)
#   bad       bad input (ucc_bad_input.c): counts that are no allgather,
#             teams whose group cannot be created on any rank (UCC's own
#             algorithm takes over, the context stays usable), a team of 1
#   reg_fail  one rank cannot register its receive buffers (fault
#             injection): every element still checked, no rank waits for
#             ever, one log line on that rank
#
# --net host: shared memory (the TL's UCP and UCC's tl/ucp alike); srqud
# and rc: inside the Soft-RoCE VM, the TL's worker on that transport.
# Open MPI's own traffic: pml ucx on the same transport. Needs
# contrib/build.sh --ucc. Prints "RESULT ucc_tl_<test> PASS|FAIL (detail)"
# per test, then "ucc-tests: N passed, M failed"; exit status 1 on any
# failure. Its callers count the whole run as one check (contrib/test.sh's
# step, contrib/vm-tests.sh's run).
#
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# result, die ("ucc-tests: MSG" on stderr)
. "$ROOT/contrib/lib/common.sh"
LOG_NAME=ucc-tests
B=${SRQUD_BUILD:-$ROOT/build}
NET=host
QUICK=0
while [ $# -gt 0 ]; do
    case $1 in
    --net)   NET=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "usage: $0 [--net host|srqud|rc] [--quick]" >&2; exit 2 ;;
    esac
done

. "$ROOT/test/sucg/mpi/mpirun.sh"
sucg_net "$NET" || { echo "error: --net $NET: host, srqud or rc" >&2; exit 2; }
UCC=$(ls -d "$B"/ucc-[0-9]*/ 2>/dev/null | head -1)
UCC=${UCC%/}
UCX_PREFIX=$B/ucx-1.18.1
COLL_UCC=$B/coll-ucc-4.1.4/lib
BAD=$B/obj-1.18.1/test/ucc/ucc_bad_input
ALLGATHER_TEST=$B/obj/test/sucg/sucg_mpi_allgather_test_ompi
for f in "$UCC/bin/ucc_test_mpi" "$UCC/lib/ucc/libucc_tl_sucg.so" \
         "$COLL_UCC/mca_coll_ucc.so" "$BAD" "$ALLGATHER_TEST"; do
    [ -e "$f" ] || die "missing $f (contrib/build.sh --ucc; contrib/build-coll-ucc.sh)"
done
# one libucp per process: UCC's UCX for MPI's pml too
export LD_LIBRARY_PATH=$UCX_PREFIX/lib:$UCC/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ "$NET" = host ] && UCX_ENV+=(UCX_TLS=sm,self)
UCX_ENV+=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" UCC_CL_BASIC_TLS=ucp,sucg,self)

LOG=$(mktemp -d /tmp/ucc-tests.XXXXXX)
pass=0
fail=0
# ucc_result NAME STATUS DETAIL: the RESULT line of test NAME (log in
# $LOG/NAME.out), counted for the summary line
ucc_result() {
    if [ "$2" = 0 ]; then
        pass=$((pass + 1)); result "ucc_tl_$1" PASS "($3)"
    else
        fail=$((fail + 1)); result "ucc_tl_$1" FAIL "($3; log $LOG/$1.out)"
    fi
}

# coll_init lines of UCC_COLL_TRACE: allgathers in tl/sucg, and any other
# component but the no-op UCC uses for zero-size collectives (read without
# process substitution: the VM has no /dev/fd)
trace_count() {   # trace_count FILE -> "SUCG OTHER"
    echo "$(grep 'coll_init: Allgather' "$1" | grep -c 'TL_SUCG}')" \
         "$(grep 'coll_init: Allgather' "$1" | grep -v 'TL_SUCG}' | grep -vc 'NoOp')"
}

# A ucc_test_mpi run (its output FILE, its exit status RC): every check
# passed, at least one ran, and every allgather ran in tl/sucg. Sets rc,
# passed, failed, ns, no for the caller's message.
ucc_test_ok() {   # ucc_test_ok FILE RC
    local counts
    rc=$2
    counts=$(trace_count "$1"); ns=${counts% *}; no=${counts#* }
    passed=$(sed -n 's/^passed: *//p' "$1")
    failed=$(sed -n 's/^failed: *//p' "$1")
    [ "$rc" = 0 ] && [ "${failed:-x}" = 0 ] && [ "${passed:-0}" -gt 0 ] &&
        [ "$ns" -gt 0 ] && [ "$no" = 0 ]
}

# --- info ---------------------------------------------------------------
out=$LOG/info.out
{ "$UCC/bin/ucc_info" -s; "$UCC/bin/ucc_info" -A; } > "$out" 2>&1
grep -q 'sucg=5' "$out" && grep -q 'tl/sucg algorithms' "$out" &&
    grep -qE '^ +2 : +ring' "$out"
ucc_result info $? "$(grep -o 'Default TLs scores.*' "$out")"

# --- default: where the benchmark found tl/sucg faster --------------------
# Untuned, tl/sucg takes a team's allgathers only when every peer is reached
# over shared memory and for the team sizes measured (2, 4, 8); otherwise,
# and over srqud or rc_verbs, UCC's tl/ucp keeps them
for np in 2 3; do
    name=default_np$np
    out=$LOG/$name.out
    sucg_ompi UCC_COLL_TRACE=info "$np" --mca coll ^ucc "$UCC/bin/ucc_test_mpi" \
        -c allgather -t world -d int32 -m 8:4096:8 > "$out" 2>&1
    rc=$?
    counts=$(trace_count "$out"); ns=${counts% *}; no=${counts#* }
    if [ "$NET" = host ] && [ "$np" = 2 ]; then
        want="tl/sucg only"; [ $rc = 0 ] && [ "$ns" -gt 0 ] && [ "$no" = 0 ]
    else
        want="tl/ucp only"; [ $rc = 0 ] && [ "$ns" = 0 ] &&
            grep 'coll_init: Allgather' "$out" | grep -q 'TL_UCP}'
    fi
    ucc_result "$name" $? "rc $rc, untuned: tl/sucg ran $ns allgathers, others $no; wanted $want"
done

# --- ucc_test_mpi, every algorithm --------------------------------------
if [ "$NET" = host ]; then NPS="2 3 4 5 8" MAXM=8388608; else NPS="2 3 4" MAXM=1048576; fi
[ $QUICK = 1 ] && NPS="2 5"
[ $QUICK = 1 ] && [ "$NET" != host ] && NPS="3"
for alg in auto rd ring p2p_rd p2p_ring; do
    for np in $NPS; do
        name=ucc_test_${alg}_np$np
        out=$LOG/$name.out
        sucg_ompi UCC_TL_SUCG_TUNE="allgather:inf:@$alg" UCC_COLL_TRACE=info \
            "$np" --mca coll ^ucc "$UCC/bin/ucc_test_mpi" -c allgather \
            -t world,half,reverse,odd_even -M host -d int8,int32,float64 \
            -m 2:$MAXM:4 -Z $((MAXM * 16)) -I 2 -P 2 > "$out" 2>&1
        ucc_test_ok "$out" $?
        ucc_result "$name" $? "rc $rc, ucc_test_mpi passed ${passed:-?} failed ${failed:-?}, tl/sucg ran $ns allgathers, other TLs $no"
    done
done

# --- ucc_perftest: UCC's own benchmark through tl/sucg ------------------
# It checks no data (ucc_test_mpi above does): what is asserted is that it
# runs to its end, prints a row for every size, and that every allgather
# it timed ran in tl/sucg
np=$([ "$NET" = host ] && echo 4 || echo 3)
for alg in rd ring; do
    name=ucc_perftest_${alg}_np$np
    out=$LOG/$name.out
    sucg_ompi UCC_TL_SUCG_TUNE="allgather:inf:@$alg" UCC_COLL_TRACE=info SUCG_ZCOPY_STEP=put "$np" \
        --mca coll ^ucc "$UCC/bin/ucc_perftest" -c allgather -d uint8 \
        -b 1 -e 262144 -n 10 -w 2 > "$out" 2>&1
    rc=$?
    # one row per size: 1, 2, 4, .., 262144 elements (19; UCC 1.8's
    # ucc_perftest always doubles, whatever -f says)
    rows=$(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' "$out")
    counts=$(trace_count "$out"); ns=${counts% *}; no=${counts#* }
    [ $rc = 0 ] && [ "$rows" = 19 ] && [ "$ns" -gt 0 ] && [ "$no" = 0 ]
    ucc_result "$name" $? "rc $rc, $rows of 19 sizes timed, tl/sucg ran $ns allgathers, other TLs $no"
done

# --- Open MPI coll/ucc --------------------------------------------------
sucg_ompi_component_args "$COLL_UCC"
for np in $([ $QUICK = 1 ] && echo 4 || echo "2 4 5"); do
    name=ompi_coll_ucc_np$np
    out=$LOG/$name.out
    sucg_ompi UCC_TL_SUCG_TUNE=allgather:inf UCC_COLL_TRACE=info "$np" \
        "${SUCG_OMPI_COMPONENT_ARGS[@]}" --mca coll_ucc_enable 1 \
        --mca coll_ucc_priority 100 \
        "$ALLGATHER_TEST" -b $([ "$NET" = host ] && echo 1048576 || echo 262144) > "$out" 2>&1
    rc=$?
    counts=$(trace_count "$out"); ns=${counts% *}; no=${counts#* }
    line=$(grep -o 'allgather_test: np=.*errors' "$out")
    [ $rc = 0 ] && [ "$ns" -gt 0 ] && echo "$line" | grep -q ' 0 errors'
    ucc_result "$name" $? "rc $rc, ${line:-no summary}; tl/sucg ran $ns allgathers"
done

# --- bad input ----------------------------------------------------------
for np in 1 3; do
    name=bad_input_np$np
    out=$LOG/$name.out
    sucg_ompi UCC_TL_SUCG_TUNE=allgather:inf UCC_COLL_TRACE=info "$np" \
        --mca coll ^ucc "$BAD" > "$out" 2>&1
    rc=$?
    line=$(grep -o 'ucc_bad_input: .*' "$out" | tail -1)
    counts=$(trace_count "$out"); ns=${counts% *}; no=${counts#* }
    # np >= 2: the team without a group must have run UCC's own allgather
    # after sucg said why it could not create the group
    fell_back=1
    [ "$np" = 1 ] || { grep -q 'SUCG_GROUP_BUFFER_SIZE differs' "$out" &&
                       grep 'coll_init: Allgather' "$out" | grep -q 'TL_UCP}'; } ||
        fell_back=0
    [ $rc = 0 ] && echo "$line" | grep -q ' 0 failed' && [ "$ns" -gt 0 ] &&
        [ $fell_back = 1 ]
    ucc_result "$name" $? "rc $rc, ${line:-no summary}; tl/sucg ran $ns allgathers, UCC's own $no"
done

# --- a receive buffer that cannot be registered, on one rank -------------
# Rank 1's registrations of user buffers fail (SUCG_FAULT_REG_FAIL=100 set
# in its environment only). The TL must not fail that rank's collective
# (its peers would wait for ever): the zero-copy steps towards rank 1 go by
# tagged messages, every element is checked, and rank 1 says so in one line.
# Zero-copy steps by put (SUCG_ZCOPY_STEP=put): over srqud they would go by
# tag anyway, registering nothing, and this path would not run.
np=$([ "$NET" = host ] && echo 4 || echo 3)
for alg in rd ring; do
    name=reg_fail_${alg}_np$np
    out=$LOG/$name.out
    # shellcheck disable=SC2016
    sucg_ompi UCC_TL_SUCG_TUNE="allgather:inf:@$alg" UCC_COLL_TRACE=info SUCG_ZCOPY_STEP=put "$np" \
        --mca coll ^ucc /bin/sh -c '[ "$OMPI_COMM_WORLD_RANK" = 1 ] &&
            export SUCG_FAULT_REG_FAIL=100; exec "$0" "$@"' \
        "$UCC/bin/ucc_test_mpi" -c allgather -t world -M host -d int32 \
        -m 2:$MAXM:4 -Z $((MAXM * 16)) -I 2 > "$out" 2>&1
    ucc_test_ok "$out" $?; ok=$?
    warned=$(grep -c 'registering a receive buffer .* failed' "$out")
    [ $ok = 0 ] && [ "$warned" = 1 ]
    ucc_result "$name" $? "rc $rc, ucc_test_mpi passed ${passed:-?} failed ${failed:-?}, tl/sucg ran $ns allgathers, other TLs $no, $warned log line(s) of the failed registrations"
done

echo "ucc-tests: $pass passed, $fail failed (net $NET; logs in $LOG)"
[ $fail = 0 ] && [ $pass -gt 0 ]
