#!/bin/bash
#
# sucg integration test: sucg_launch over several transports and rank
# counts, plus a negative test proving the checker detects corruption.
# Loopback only: tcp is pinned to "lo" (UCX_NET_DEVICES=lo).
#
#   test/sucg/integration/run.sh [path/to/sucg_launch]
#   QUICK=0 for the full size list (slower; default: quick subset)
#
# Prints "RESULT sucg_launch_<run> PASS|FAIL" per run, then "ALL PASSED" or
# "SOME FAILED"; exit status 1 on any failure (automake's test driver
# reads that).
#
set -u
# log ("== sucg-integration: MSG"), result
# shellcheck source-path=SCRIPTDIR source=../../../contrib/lib/common.sh
. "$(dirname "$0")/../../../contrib/lib/common.sh"
LOG_NAME=sucg-integration
LAUNCH=${1:-${SUCG_TEST_LAUNCH:-$(dirname "$0")/../../../build/sucg-dev/sucg_launch}}
export UCX_NET_DEVICES=lo
export UCX_WARN_UNUSED_ENV_VARS=n
Q=-q
[ "${QUICK:-1}" = 0 ] && Q=
fail=0

run() {   # run NAME DESC CMD...: a RESULT line sucg_launch_NAME
    local name=$1 desc=$2
    shift 2
    log "$desc"
    "$@"
    result "sucg_launch_$name" $? || fail=1
}

for tls in tcp,self sm,self; do
    for n in 2 3 5 8; do
        # bounded runtime: at most 16 MB of results per rank for n <= 3,
        # 4 MB above (8 processes share the cores and busy-poll)
        m=$((16 << 20)); [ $n -gt 3 ] && [ -n "$Q" ] && m=$((4 << 20))
        # staged steps: active messages over tcp (its puts are messages),
        # stores into the peer's mapped buffer over shared memory
        s=am; [ $tls = sm,self ] && s=put
        run "${tls%%,*}_n$n" "UCX_TLS=$tls n=$n" env UCX_TLS=$tls "$LAUNCH" -n $n $Q -m $m \
            -S $s -t 150
    done
done
# 8 MB per rank on 2 ranks (the top of the size range), both RDMA algorithms
run sm_n2_8MB "UCX_TLS=sm,self n=2 8MB" env UCX_TLS=sm,self "$LAUNCH" -n 2 -m $((16 << 20)) \
    -a recursive_doubling -a ring -t 150
# staged steps as puts, a fence and a flag over tcp too (the path of a
# context without active messages)
run tcp_n5_staged_puts "UCX_TLS=tcp,self n=5 staged steps as puts" \
    env UCX_TLS=tcp,self SUCG_STAGED_STEP=put "$LAUNCH" -n 5 -q -m $((4 << 20)) -S put -t 150
# staged steps as one put with the flag last (SUCG_STAGED_STEP=tail): over
# shared memory stores into the mapped buffer, with an extra rank; over tcp,
# whose puts are messages, the senders keep active messages (the receivers
# watch both); both algorithms, every byte checked
run sm_n3_staged_tail "UCX_TLS=sm,self n=3 staged steps as tail stores" \
    env UCX_TLS=sm,self SUCG_STAGED_STEP=tail "$LAUNCH" -n 3 -q -m $((4 << 20)) \
    -a recursive_doubling -a ring -S tail -t 150
run tcp_n5_staged_tail_keeps_am "UCX_TLS=tcp,self n=5 tail asked, messages kept" \
    env UCX_TLS=tcp,self SUCG_STAGED_STEP=tail "$LAUNCH" -n 5 -q -m $((4 << 20)) \
    -a recursive_doubling -a ring -S am -t 150
# zero-copy steps by tag (what a group over srqud or tcp takes when the
# caller gives its endpoints): staged steps, then tagged sends into posted
# receives, no registration; both RDMA algorithms, every byte checked
run tcp_n5_zcopy_by_tag "UCX_TLS=tcp,self n=5 zero-copy steps by tag" \
    env UCX_TLS=tcp,self SUCG_ZCOPY_STEP=tag "$LAUNCH" -n 5 -q -m $((4 << 20)) \
    -a recursive_doubling -a ring -S am -t 150
run sm_n4_zcopy_by_tag "UCX_TLS=sm,self n=4 zero-copy steps by tag" \
    env UCX_TLS=sm,self SUCG_ZCOPY_STEP=tag "$LAUNCH" -n 4 -q -m $((4 << 20)) \
    -a recursive_doubling -a ring -S put -t 150
# a tiny threshold: recursive doubling switches to zero-copy mid-way
run tcp_n6_zcopy_thresh_64 "UCX_TLS=tcp,self n=6 MT=64" env UCX_TLS=tcp,self SUCG_ALLGATHER_ZCOPY_THRESH=64 \
    "$LAUNCH" -n 6 -q -m 1000000 -a recursive_doubling -t 150
# no staging at all and no registration cache
run sm_n7_no_staging_no_rcache "UCX_TLS=sm,self n=7 no staging, no rcache" env UCX_TLS=sm,self \
    SUCG_GROUP_BUFFER_SIZE=0 SUCG_RCACHE_MAX_ENTRIES=0 \
    "$LAUNCH" -n 7 -q -m 1000000 -a recursive_doubling -a ring -t 150
# a receive buffer that cannot be registered on one rank (every call), then
# on any rank now and then: zero-copy steps to it go by tagged messages,
# nobody waits forever, every byte checked
run sm_n5_reg_fail_rank3 "UCX_TLS=sm,self n=5 rank 3 cannot register" env UCX_TLS=sm,self \
    "$LAUNCH" -n 5 -q -m 4000000 -a recursive_doubling -a ring -R 3 -t 150
run tcp_n4_reg_fail_30pct "UCX_TLS=tcp,self n=4 30 % of registrations fail" env UCX_TLS=tcp,self \
    SUCG_FAULT_REG_FAIL=30 SUCG_RCACHE_MAX_ENTRIES=0 \
    "$LAUNCH" -n 4 -q -m 4000000 -a recursive_doubling -a ring -t 150

# the checker must catch a flipped byte
log "negative: corrupted byte must be detected"
if env UCX_TLS=tcp,self "$LAUNCH" -n 3 -q -m 100000 -a ring -C 1 -t 60 \
        >/dev/null 2>&1; then
    result sucg_launch_corruption_detected FAIL "(corruption not detected)"
    fail=1
else
    result sucg_launch_corruption_detected PASS
fi

[ $fail = 0 ] && echo "ALL PASSED" || echo "SOME FAILED"
exit $fail
