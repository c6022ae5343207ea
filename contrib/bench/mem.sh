#!/bin/bash
#
# Memory of one process against its number of peers (Sur et al., Fig. 7-9),
# srqud against ud_verbs and rc_verbs, in one VM run, and the analytical
# model of contrib/bench/mem_model.py against the measurement:
#
#   contrib/softroce/vm-run --mem 8192 -- contrib/bench/mem.sh [-n MAX_PEERS] [-p PROCS] [-r RC_MAX_PEERS]
#
# The peers are interfaces (each its own QP) in PROCS child processes,
# configured small (PEER_UCX_*); the measured process uses the defaults.
# Output: per-step table, model parameters and error, extrapolation to 16K
# peers; CSV in $SRQUD_BUILD/bench/mem.csv.
#
set -euo pipefail
. "$(dirname "$0")/common.sh"
N=1024
P=4
# rc_verbs stops at 512 peers: in the VM the step to 1024 RC connections
# (2048 RC QPs on one Soft-RoCE device) did not finish in 20 minutes
RC_N=512
bench_getopts "n:N p:P r:RC_N" "$@"
bench_build
B=$RESULTS
CSV=$B/mem.csv
ulimit -n 65536 2>/dev/null || true
export UCX_IB_GID_INDEX=2
# small peers: only the measured process keeps the defaults
export PEER_UCX_SRQUD_SRQ_SIZE=16 PEER_UCX_SRQUD_SRQ_MAX_SIZE=16 \
       PEER_UCX_SRQUD_TX_QUEUE_LEN=16 PEER_UCX_SRQUD_RX_POST_BATCH=8 \
       PEER_UCX_SRQUD_STALLED_MAX=16 \
       PEER_UCX_UD_VERBS_RX_QUEUE_LEN=64 PEER_UCX_UD_VERBS_TX_QUEUE_LEN=128 \
       PEER_UCX_RC_VERBS_RX_QUEUE_LEN=64 PEER_UCX_RC_VERBS_TX_QUEUE_LEN=128

echo "tl,peers,rss_kb,pin_kb,qmap_kb,qmap_rss_kb" > "$CSV"
for tl in srqud ud_verbs rc_verbs; do
    n=$N
    [ $tl = rc_verbs ] && [ "$RC_N" -lt "$N" ] && n=$RC_N
    echo "== $tl: $n peers in $P processes" >&2
    "$B/mem_peers" -t $tl -d "$BENCH_DEV" -n "$n" -p "$P" | tr ' ' ',' >> "$CSV"
done
"$B/mem_sizes" > "$B/mem_sizes.txt"
ucx_info -c -f > "$B/ucx_config.txt"
/usr/bin/python3 "$ROOT/contrib/bench/mem_model.py" "$CSV" "$B/mem_sizes.txt" "$B/ucx_config.txt" --png "$B/mem.png"
