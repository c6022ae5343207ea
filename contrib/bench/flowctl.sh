#!/bin/bash
#
# Flow control under a burst (Sur et al., Fig. 10), in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/bench/flowctl.sh [-s SRQ] [-c COMPUTE_MS]
#
# The receiver posts SRQ receive buffers (srqud) or an RQ of the same depth
# (ud_verbs), computes for COMPUTE_MS without progressing while the sender
# bursts N messages (N = 1..10 x SRQ), then waits for all of them. Variants,
# in the same run:
#   srqud            the watermark (UCX_SRQUD_SRQ_LIMIT=auto) and async progress
#   srqud-nolimit    SRQ limit event off (UCX_SRQUD_SRQ_LIMIT=0), async progress on
#   srqud-noflow     limit off and no async progress (tick = RTO = 2 s): no
#                    flow control at all, only retransmission
#   ud_verbs         UCX's UD (its own async progress), RX_QUEUE_LEN = SRQ
# Table on stdout; CSV in $SRQUD_BUILD/bench/flowctl.csv.
#
set -euo pipefail
. "$(dirname "$0")/common.sh"
SRQ=128
COMPUTE=300
bench_getopts "s:SRQ c:COMPUTE" "$@"
bench_build
BIN=$RESULTS/flowctl
OUT=$RESULTS/flowctl.csv
export UCX_IB_GID_INDEX=2
# the sender may have the whole burst in flight
SEND="UCX_SRQUD_TX_WINDOW=16384 UCX_SRQUD_TX_QUEUE_LEN=1024"
RXQ="RX_UCX_SRQUD_SRQ_SIZE=$SRQ RX_UCX_SRQUD_SRQ_MAX_SIZE=$((SRQ * 8))"

echo "variant,n,wait_ms,received,bad,in_order,drops,retransmits,limit_events,refilled" > "$OUT"
printf "%-15s %6s %10s %9s %7s %8s %8s %8s\n" variant N wait_ms received drops retx events refilled
for n in $SRQ $((SRQ * 2)) $((SRQ * 4)) $((SRQ * 8)) $((SRQ * 10)); do
    for v in srqud srqud-nolimit srqud-noflow ud_verbs; do
        case $v in
        srqud)         envs="$SEND $RXQ"; tl=srqud ;;
        srqud-nolimit) envs="$SEND $RXQ RX_UCX_SRQUD_SRQ_LIMIT=0"; tl=srqud ;;
        srqud-noflow)  envs="$SEND $RXQ RX_UCX_SRQUD_SRQ_LIMIT=0 RX_UCX_SRQUD_ASYNC_TICK=2s RX_UCX_SRQUD_RTO_MIN=2s RX_UCX_SRQUD_RTO_MAX=2s"; tl=srqud ;;
        ud_verbs)      envs="RX_UCX_UD_VERBS_RX_QUEUE_LEN=$SRQ"; tl=ud_verbs ;;
        esac
        line=$(env $envs "$BIN" -t $tl -d "$BENCH_DEV" -n $n -c $COMPUTE) || {
            echo "flowctl: $v n=$n failed: $line" >&2; exit 1; }
        read -r _ _ wait rcv bad ord drops retx ev refill <<< "$line"
        echo "$v,$n,$wait,$rcv,$bad,$ord,$drops,$retx,$ev,$refill" >> "$OUT"
        [ "$drops" = -1 ] && drops=n/a && retx=n/a
        printf "%-15s %6s %10s %9s %7s %8s %8s %8s\n" $v $n $wait $rcv $drops $retx $ev $refill
    done
done
echo "csv: $OUT"
