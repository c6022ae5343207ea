#!/bin/bash
#
# UCP-level correctness of srqud beside UCX's ud_verbs and rc_verbs, in one
# run, inside the Soft-RoCE VM (contrib/vm-tests.sh runs it):
#
#   test/ucp/run.sh [-q] [-c] [-o DIR]
#
# Every check of srqud_ucp_check (RMA with worker/ep flush, explicit
# completion, close; get; fence; tag; AM; stream; peer failure; bounded
# progress) runs with UCP's protocols v1 and v2 (UCX_PROTO_ENABLE=n/y);
# srqud also with a passive target (never calls progress: its async thread
# must do the work) and with 5 % injected loss; and 3 threads x 3 peers
# (check threads) at every level of UCX_SRQUD_SHARE, under 2 % loss. The
# references show what UCX's own transports do in the same run: they do
# not decide the exit status, srqud's results do. Prints "RESULT <name> PASS|FAIL" per srqud
# variant and a table; -o DIR keeps the logs and table (default
# $SRQUD_BUILD/vm-logs/ucp). -q: srqud only (no references). -c: srqud's
# core variants only (CI): protocols v1 with and without a passive target
# and with loss, v2 with loss (the same checks as v2 without), threads
# under loss with a shared receive pool and with a thread domain each (the
# ends of UCX_SRQUD_SHARE); the others (v2 alone, v2 passive, threads
# without loss, SHARE=pd) with the full run.
#
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/contrib/lib/common.sh"
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
CHECK=${SRQUD_UCP_CHECK:-$SRQUD_BUILD/obj/test/ucp/srqud_ucp_check}
OUT=$SRQUD_BUILD/vm-logs/ucp
REFS=1
CORE=0
while getopts "qco:" c; do
    case $c in
    q) REFS=0 ;;
    c) CORE=1 ;;
    o) OUT=$OPTARG ;;
    *) echo "usage: $0 [-q] [-c] [-o DIR]" >&2; exit 2 ;;
    esac
done
mkdir -p "$OUT"
[ -x "$CHECK" ] || { echo "$CHECK not built" >&2; exit 1; }

RMA_CHECKS="-t put_worker_flush -t put_ep_flush -t put_explicit -t get_worker_flush -t get_ep_flush -t close_flush -t fence"
COMMON="UCX_WARN_UNUSED_ENV_VARS=n UCX_NET_DEVICES=rxe0:1"
# a dead peer is declared within seconds, not UCX's defaults
SRQUD="UCX_TLS=srqud,self UCX_SRQUD_TIMEOUT=3s"
UD="UCX_TLS=ud_verbs,self UCX_IB_GID_INDEX=2 UCX_UD_TIMEOUT=3s"
RC="UCX_TLS=rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=2 UCX_UD_TIMEOUT=3s"

FAILED=0
COLUMNS=()
declare -A CELL

# variant NAME KIND "ENV" [srqud_ucp_check args...]; KIND 0: srqud, core;
# 1: a reference (ud_verbs, rc_verbs); 2: srqud outside the core set (-c
# leaves it out)
variant() {
    local name=$1 ref=$2 envs=$3; shift 3
    if [ "$ref" = 2 ]; then
        [ $CORE = 1 ] && return 0
        ref=0
    fi
    local log=$OUT/$name.log t0=$SECONDS rc line check status
    COLUMNS+=("$name")
    echo "---- $name: $envs srqud_ucp_check $*" > "$log"
    env $COMMON $envs timeout --kill-after=10 900 "$CHECK" "$@" >> "$log" 2>&1
    rc=$?
    # (no process substitution: the VM has no /dev/fd)
    grep '^CHECK ' "$log" > "$log.checks"
    while read -r line; do
        check=$(echo "$line" | awk '{print $2}')
        status=$(echo "$line" | awk '{print $3}')
        CELL[$check,$name]=$status
    done < "$log.checks"
    rm -f "$log.checks"
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        echo "    [$name] timed out"
    fi
    if [ "$ref" = 0 ]; then
        if ! result "ucp_check_$name" $rc "($((SECONDS - t0)) s)"; then
            FAILED=1
            grep -E '^CHECK .* FAIL|timed out|Segmentation|Assertion' "$log" |
                head -20 | sed "s/^/    [$name] /"
        fi
    else
        echo "reference $name: exit $rc ($((SECONDS - t0)) s)"
    fi
}

B=16   # UCX_SRQUD_RX_MAX_POLL's default
for p in n y; do
    kind=0; [ $p = y ] && kind=2   # v2: outside the core set
    variant srqud_proto$p $kind "$SRQUD UCX_PROTO_ENABLE=$p" -B $B
    variant srqud_proto${p}_passive $kind "$SRQUD UCX_PROTO_ENABLE=$p" -P $RMA_CHECKS
    variant srqud_proto${p}_loss5 0 "$SRQUD UCX_PROTO_ENABLE=$p UCX_SRQUD_FAULT_TX_DROP=0.05 UCX_LOG_LEVEL=error" -B $B
    if [ $REFS = 1 ]; then
        variant ud_verbs_proto$p 1 "$UD UCX_PROTO_ENABLE=$p" -B $B -T 60
        variant rc_verbs_proto$p 1 "$RC UCX_PROTO_ENABLE=$p" -B $B -T 60
        # RDMA needs no target progress: the passive reference
        variant rc_verbs_proto${p}_passive 1 "$RC UCX_PROTO_ENABLE=$p" -P -T 60 $RMA_CHECKS
    fi
done

# N threads x M peers, a worker per thread (check threads): every level of
# UCX_SRQUD_SHARE under 2 % loss, and srq without; the references once
T="-t threads -W 3x3"
variant srqud_threads_srq 2 "$SRQUD" $T
for share in srq pd td; do
    kind=0; [ $share = pd ] && kind=2
    variant srqud_threads_${share}_loss2 $kind "$SRQUD UCX_SRQUD_SHARE=$share UCX_SRQUD_FAULT_TX_DROP=0.02 UCX_LOG_LEVEL=error" $T
done
if [ $REFS = 1 ]; then
    variant ud_verbs_threads 1 "$UD" $T -T 60
    variant rc_verbs_threads 1 "$RC" $T -T 60
fi

# The table: check x variant
{
    printf "%-18s" check
    for c in "${COLUMNS[@]}"; do printf " %s" "$c"; done
    echo
    for check in put_worker_flush put_ep_flush put_explicit get_worker_flush \
                 get_ep_flush close_flush fence tag am stream peer_failure \
                 progress_bound threads; do
        printf "%-18s" "$check"
        for c in "${COLUMNS[@]}"; do
            printf " %-*s" ${#c} "${CELL[$check,$c]:--}"
        done
        echo
    done
} | tee "$OUT/table.txt"
exit $FAILED
