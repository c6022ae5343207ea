#!/bin/bash
#
# The cost of a progress call that finds nothing, in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/bench/progress-cost.sh [-r REPS]
#       [-n CALLS]
#
# A rank waiting for a message makes such calls over and over; where ranks
# share the cores each one is time taken from a rank with work (issue 38).
# Variants, each one process with one idle interface (progress_cost.c),
# the order rotated every repetition:
#   srqud      the defaults: up to UCX_SRQUD_QUIET_POLLS (4) calls in a row
#              look at the receive CQ only
#   srqud-q0   UCX_SRQUD_QUIET_POLLS=0: every call reads the clock and
#              looks at everything
#   ud_verbs, rc_verbs
# REPS repetitions (default 5) of 5 loops of CALLS calls (default 400000);
# a repetition's figure is the median of its loops. Output: per variant
# the median over the repetitions with (min..max), and its ratio to
# rc_verbs within each repetition (median, min..max); CSV
# $RESULTS/progress-cost.csv (rep,variant,ns_per_call,quiet_calls,
# early_calls), the table in progress-cost.txt, a PNG of every repetition
# in progress-cost.png. Exit status 1 if a run failed.
#
set -euo pipefail
. "$(dirname "$0")/common.sh"
REPS=5
CALLS=400000
bench_getopts "r:REPS n:CALLS" "$@"
bench_build
BIN=$RESULTS/progress_cost
CSV=$RESULTS/progress-cost.csv
TXT=$RESULTS/progress-cost.txt
VARIANTS=(srqud srqud-q0 ud_verbs rc_verbs)

echo "rep,variant,ns_per_call,quiet_calls,early_calls" > "$CSV"
start=$SECONDS
for ((rep = 1; rep <= REPS; ++rep)); do
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; ++i)); do
        v=${VARIANTS[$(((i + rep - 1) % n))]}
        case $v in
        srqud-q0) envs="UCX_SRQUD_QUIET_POLLS=0" ;;
        *)        envs="" ;;
        esac
        # shellcheck disable=SC2046,SC2086 # word lists
        out=$(env $(bench_tl_env "$v") $envs "$BIN" -t "$(bench_tl "$v")" \
              -d "$BENCH_DEV" -n "$CALLS" -r 5) || {
            echo "progress-cost: $v failed: $out" >&2; exit 1; }
        # the median loop of the five
        echo "$out" | sort -k2 -g | sed -n 3p |
            awk -v rep="$rep" -v v="$v" '{print rep "," v "," $2 "," $3 "," $4}' >> "$CSV"
    done
    echo "# repetition $rep of $REPS done, $((SECONDS - start)) s"
done

awk -F, -v order="${VARIANTS[*]}" "$BENCH_MEDIAN_AWK"'
NR > 1 { ns[$2, $1] = $3; reps[$1] = 1; q[$2] += $4; e[$2] += $5 }
function range(a, k, fmt,    lo, hi, i) {
    lo = a[1]; hi = a[1]
    for (i = 2; i <= k; ++i) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
    return sprintf(fmt ".." fmt, lo, hi)
}
END {
    nv = split(order, vs, " ")
    printf "%-10s %8s %12s %10s %14s %12s %12s\n", "variant", "ns/call",
           "(min..max)", "/ rc_verbs", "(min..max)", "quiet calls", "early calls"
    for (i = 1; i <= nv; ++i) {
        v = vs[i]; k = 0
        for (r in reps) { ++k; a[k] = ns[v, r]; b[k] = ns[v, r] / ns["rc_verbs", r] }
        ra = range(a, k, "%.0f"); rb = range(b, k, "%.2f")
        printf "%-10s %8.1f %12s %10.2f %14s %12d %12d\n", v, median(a, k),
               "(" ra ")", median(b, k), "(" rb ")", q[v], e[v]
    }
}' "$CSV" | tee "$TXT"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg); one process at a time on $(nproc) cores"

/usr/bin/python3 "$ROOT/contrib/bench/plot.py" "$CSV" --x rep --y ns_per_call \
    --series variant --title "A progress call that finds nothing (Soft-RoCE, TCG)" \
    --xlabel repetition --ylabel "ns per call" -o "$RESULTS/progress-cost.png"
echo "csv: $CSV"
