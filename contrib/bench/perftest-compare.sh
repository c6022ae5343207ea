#!/bin/bash
#
# Inside the Soft-RoCE VM: ucx_perftest over srqud, ud_verbs and rc_verbs,
# same sizes, same run, one server/client pair per figure. Prints a table
# with a legend; with --csv FILE also writes the numbers.
#
#   perftest-compare.sh [--tls "srqud ud_verbs rc_verbs"] [--iter N]
#                       [--warmup N] [--csv FILE]
#
#   --tls LIST   transports, in this order (default "srqud ud_verbs rc_verbs")
#   --iter N     iterations per figure (default 2000, or $ITER)
#   --warmup N   iterations of each discarded warm-up run (default 2000; 0:
#                no warm-up)
#   --csv FILE   also write every ucx_perftest figure to FILE
#   --rows LIST  the figures instead of the default table, each
#                LAYER:TEST:SIZE, e.g. "ucp:tag_lat:8 ucp:ucp_put_lat:8"
#                (what a put can save against a message, on each transport)
#   --rc         accepted for old command lines (rc_verbs is in the default)
#
# Takes about 2.5 minutes in the TCG VM with the three transports.
#
# What the table shows: latency rows (am_lat, tag_lat) give ucx_perftest's
# "typical" latency, the median of the last 2048 iterations, which for a
# ping-pong is half a round trip, in microseconds. Bandwidth rows (am_bw,
# tag_bw) give its "overall" bandwidth: bytes sent over the whole timed run,
# MB/s with 1 MB = 2^20 bytes. The other columns (average latency, which
# retransmission stalls inflate; the time per message of a bandwidth test)
# go to the CSV only.
#
# Warm-up: ucx_perftest's own warm-up stops after 0.1 s whatever -w says
# (UCX 1.13), and the first runs in a fresh TCG VM are slower still (the
# emulator translates code on first use), so one am_lat and one tag_lat run
# per transport go first and are discarded.
#
# ud_verbs/rc_verbs need UCX_IB_GID_INDEX=2 on rxe over lo (their default,
# index 0, is a link-local GID that lo does not have); srqud picks it alone.
# At the UCP level rc_verbs runs as UCX_TLS=rc_verbs,ud_verbs,self (UCP needs
# ud beside rc for connection setup; the data goes over rc).
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
ITER=${ITER:-2000}
WARMUP=2000
CSV=""
ROWS_ARG=""
TLS="srqud ud_verbs rc_verbs"
while [ $# -gt 0 ]; do
    case "$1" in
    --csv)    CSV=${2:?--csv needs a file}; shift 2 ;;
    --rc)     case " $TLS " in *" rc_verbs "*) ;; *) TLS="$TLS rc_verbs" ;; esac; shift ;;
    --tls)    TLS=${2:?--tls needs a list}; shift 2 ;;
    --rows)   ROWS_ARG=${2:?--rows needs a list}; shift 2 ;;
    --iter)   ITER=${2:?--iter needs a number}; shift 2 ;;
    --warmup) WARMUP=${2:?--warmup needs a number}; shift 2 ;;
    -h|--help) bench_usage; exit 0 ;;
    *) echo "unknown option $1" >&2; bench_usage; exit 2 ;;
    esac
done
read -r -a TLA <<< "${TLS//,/ }"   # "a b" or "a,b"
[[ $ITER =~ ^[1-9][0-9]*$ ]] || { echo "--iter: not a number: $ITER" >&2; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "--warmup: not a number: $WARMUP" >&2; exit 2; }

human_size() {   # 8 -> "8 B", 65536 -> "64 KB"
    if [ "$1" -ge 1024 ] && [ $(($1 % 1024)) = 0 ]; then echo "$(($1 / 1024)) KB"
    else echo "$1 B"; fi
}

# the figures (layer test size), in the order of the table
ROWS=("uct am_lat 8" "uct am_lat 64" "uct am_lat 1024"
      "uct am_bw 64" "uct am_bw 1024" "uct am_bw 4000"
      "ucp tag_lat 8" "ucp tag_lat 1024"
      "ucp tag_bw 1024" "ucp tag_bw 65536")
if [ -n "$ROWS_ARG" ]; then
    ROWS=()
    for r in $ROWS_ARG; do
        [[ $r =~ ^(uct|ucp):[a-z_]+:[1-9][0-9]*$ ]] ||
            { echo "--rows: not LAYER:TEST:SIZE: $r" >&2; exit 2; }
        ROWS+=("${r//:/ }")
    done
fi
NTL=${#TLA[@]}

if grep -q 'QEMU TCG' /proc/cpuinfo 2>/dev/null; then
    WHERE="Soft-RoCE (rdma_rxe: RDMA done by the kernel in software) on lo, in a QEMU VM with TCG, no KVM: every instruction is emulated"
elif [ -d "/sys/class/infiniband/${BENCH_DEV%%:*}/ports" ] &&
     [[ $BENCH_DEV = rxe* ]]; then
    WHERE="Soft-RoCE (rdma_rxe: RDMA done by the kernel in software) on lo"
else
    WHERE=""
fi
if [ -n "$WHERE" ]; then
    echo "Emulated figures: $WHERE."
    echo "Absolute numbers are not hardware numbers; compare the transports by their ratios within one run (runs differ by tens of percent)."
else
    echo "Device $BENCH_DEV."
fi
echo

rc=0
rm -f "$RESULTS"/perftest-fail-*.log
if [ "$WARMUP" -gt 0 ]; then
    echo "warming up (about $((NTL * 7)) s): am_lat and tag_lat 8 B once per transport, results discarded"
    for tl in "${TLA[@]}"; do
        bench_perftest "$tl" am_lat 8 uct "$WARMUP" >/dev/null
        bench_perftest "$tl" tag_lat 8 ucp "$WARMUP" >/dev/null
    done
fi
echo "measuring ${#ROWS[@]} figures x $NTL transports, one ucx_perftest pair each (about $(( (${#ROWS[@]} * NTL * 4 + 59) / 60 )) min); rows appear as they finish:"
echo

hdr=$(printf "%-5s %-8s %6s  %-14s|" layer test size figure)
for tl in "${TLA[@]}"; do hdr+=$(printf " %10s" "$tl"); done
echo "$hdr"
echo "$hdr" | tr -c '|\n' '-' | tr '|' '+'
[ -n "$CSV" ] && echo "layer,test,size,tl,lat_typical_us,lat_avg_us,bw_MBs,msgrate" > "$CSV"

FAILS=0
for row in "${ROWS[@]}"; do
    read -r layer test size <<< "$row"
    case $test in
    *_lat) what="latency us" ;;
    *)     what="bandwidth MB/s" ;;
    esac
    line=$(printf "%-5s %-8s %6s  %-14s|" "$layer" "$test" "$(human_size "$size")" "$what")
    for tl in "${TLA[@]}"; do
        r=$(bench_perftest "$tl" "$test" "$size" "$layer" "$ITER")
        if [ "$r" = FAIL ]; then
            rc=1
            FAILS=$((FAILS + 1))
            line+=$(printf " %10s" FAIL)
            continue
        fi
        read -r lat_typ lat_avg bw msgrate <<< "$r"
        if [ "$what" = "latency us" ]; then
            line+=$(printf " %10.1f" "$lat_typ")
        else
            line+=$(printf " %10.2f" "$bw")
        fi
        [ -n "$CSV" ] && echo "$layer,$test,$size,$tl,$lat_typ,$lat_avg,$bw,$msgrate" >> "$CSV"
    done
    echo "$line"
done

echo
echo "latency us     = half a round trip, median (ucx_perftest \"typical\") of the last 2048 iterations, microseconds; lower is better"
echo "bandwidth MB/s = bytes sent / time of the whole timed run (ucx_perftest \"overall\"), 1 MB = 2^20 bytes; higher is better"
echo "uct = one UCT transport alone (-x TL -d $BENCH_DEV, bcopy above 100 B); ucp = UCP (tag_*: tag matching, ucp_am_*: active messages, ucp_put_*/ucp_get: RMA) with UCX_TLS=TL,self (rc_verbs: rc_verbs,ud_verbs,self)"
echo "$ITER iterations per figure after a discarded warm-up; emulated figures: compare ratios within one run, not with hardware"
[ -n "$CSV" ] && echo "CSV: $CSV"
if [ $FAILS -gt 0 ]; then
    echo
    echo "$FAILS figure(s) FAILED; their ucx_perftest output:"
    for f in "$RESULTS"/perftest-fail-*.log; do
        [ -f "$f" ] || continue
        echo "--- $f (last lines)"
        tail -n 8 "$f"
    done
fi
exit $rc
