#!/bin/bash
#
# 8-byte latency (issue 10's tag_lat goal): UCP tag_lat through srqud, srqud
# with its acknowledgements sent alone (UCX_SRQUD_BACK_ACK=n: srqud before
# they rode on replies), srqud signaling every send
# (UCX_SRQUD_TX_CQ_MODERATION=1: srqud before a ping-pong's sends went
# unsignaled), ud_verbs and rc_verbs, in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run --timeout 1800 -- contrib/bench/latency.sh [-r REPS] [-n ITERS] [-s "SERIES..."]
#
# REPS (default 9) interleaved repetitions, the order rotated every
# repetition; SERIES a subset of those above (srqud srqud-sig
# srqud-noback ud_verbs rc_verbs), all by default. Per series the median
# of ucx_perftest's typical half round trip and of its average, with
# min..max, the lower quartile of the typical ones, and the ratios of
# median and quartile to ud_verbs'. Two processes on 2 vCPUs (not
# oversubscribed); each busy-polls. Table on stdout, CSV and PNG (per
# repetition) in $SRQUD_BUILD/bench/latency.*.
#
# Why the quartile: here a repetition runs in one of two modes, about
# 18-21 us or 26-48 us typical for every transport, by where the kernel's
# rxe work lands on the 2 vCPUs; which mode a repetition gets is chance,
# and it decides a median of a dozen. The lower quartile compares the
# transports in the fast mode as long as a quarter of each series got it.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=9
ITERS=20000
SERIES_LIST="srqud srqud-sig srqud-noback ud_verbs rc_verbs"
bench_getopts "r:REPS n:ITERS s:SERIES_LIST" "$@"
CSV=$RESULTS/latency.csv
read -ra SERIES <<< "$SERIES_LIST"
echo "rep,series,typical_us,avg_us" > "$CSV"
t0=$(date +%s)
for rep in $(seq 1 "$REPS"); do
    echo "   [$(($(date +%s) - t0)) s] repetition $rep of $REPS" >&2
    k=$(((rep - 1) % ${#SERIES[@]}))
    for s in "${SERIES[@]:$k}" "${SERIES[@]:0:$k}"; do
        out=$(bench_perftest "$s" tag_lat 8 ucp "$ITERS")
        read -r typ avg _ <<< "$out"
        [ "$typ" = FAIL ] && { echo "$s: ucx_perftest failed (see $RESULTS)" >&2; continue; }
        echo "$rep,$s,$typ,$avg" >> "$CSV"
    done
done

awk -F, -v series="${SERIES[*]}" "$BENCH_MEDIAN_AWK"'
    NR > 1 { n[$2]++; t[$2, n[$2]] = $3; a[$2, n[$2]] = $4 }
    END {
        ns = split(series, S, " ")
        for (i = 1; i <= ns; ++i) {
            s = S[i]; c = n[s]
            for (j = 1; j <= c; ++j) { x[j] = t[s, j]; y[j] = a[s, j] }
            if (c == 0) { mt[s] = 0; continue }
            mt[s] = median(x, c); lt[s] = LO; ht[s] = HI
            qt[s] = x[int((c + 3) / 4)]   # x is sorted: nearest rank c/4
            ma[s] = median(y, c); la[s] = LO; ha[s] = HI
        }
        printf "%-14s %24s %24s %8s %10s %10s\n", "tag_lat 8 B",
               "typical us (min..max)", "average us (min..max)", "typ p25",
               "typ / ud", "p25 / ud"
        for (i = 1; i <= ns; ++i) {
            s = S[i]
            if (mt[s] == 0) { printf "%-14s %24s\n", s, "FAIL"; continue }
            printf "%-14s %8.1f (%5.1f..%5.1f) %8.1f (%5.1f..%5.1f) %8.1f %10.2f %10.2f\n",
                   s, mt[s], lt[s], ht[s], ma[s], la[s], ha[s], qt[s],
                   (mt["ud_verbs"] > 0) ? mt[s] / mt["ud_verbs"] : 0,
                   (qt["ud_verbs"] > 0) ? qt[s] / qt["ud_verbs"] : 0
        }
    }' "$CSV"
python3 "$ROOT/contrib/bench/plot.py" "$CSV" --x rep --y typical_us --series series \
    --title "UCP tag_lat 8 B, typical half round trip" --ylabel us \
    -o "$RESULTS/latency.png" >/dev/null || echo "no PNG (plot.py failed)" >&2
echo "CSV: $CSV; PNG: $RESULTS/latency.png"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) vCPUs, $(($(date +%s) - t0)) s"
