#!/bin/bash
#
# Soak across the two-host wire (issue 16), outside CI:
#
#   contrib/softroce/vm-run --wire --timeout 2700 -- test/wire/soak.sh [-t SECONDS]
#
# For SECONDS (default 1800) under 1 % loss with reordering on both ends of
# the wire (netem loss 1% delay 2ms reorder 25% 50%):
#   - one long-lived Open MPI job, a rank on each host, repeating
#     test/mpi/srqud_mpi_test's phases (point-to-point 0 B - 4 MiB,
#     any-source, 64 outstanding, collectives; every byte checked) and
#     reporting every rank's VmRSS after each round;
#   - beside it, srqud_ucp_check pairs one after another (tag, AM, 4 MiB
#     puts and gets, checksummed), new processes each time.
# Four processes on 2 vCPUs: oversubscribed. Passes if every check passed,
# the job ended by itself, and no rank's VmRSS grew by more than 10 % from
# the round at a tenth of the run to the last: pools and caches warm up over
# the first minutes (the first soak: +38 % in its first 30 rounds as
# zero-copy pool QPs and receive buffers were added under loss, then flat
# for 25 minutes); a leak keeps growing. Round 2, the peak and the last
# are printed too.
# Prints the rounds, the counters (srqud's, netem's) and a verdict,
# "RESULT wire_soak PASS|FAIL"; logs in
# $SRQUD_BUILD/vm-logs/soak.
#
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/contrib/lib/common.sh"   # log, result; srqud_counters (counters.sh)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
CHECK=$SRQUD_BUILD/obj/test/ucp/srqud_ucp_check
WIRE=$ROOT/contrib/softroce/wire
OUT=$SRQUD_BUILD/vm-logs/soak
SECS=1800
while getopts "t:" c; do
    case $c in
    t) SECS=$OPTARG ;;
    *) echo "usage: $0 [-t SECONDS]" >&2; exit 2 ;;
    esac
done
[ "${SRQUD_WIRE:-}" = 1 ] || { echo "soak.sh: run it with vm-run --wire" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.log

QDISC="netem loss 1% delay 2ms reorder 25% 50%"
for d in wA wB; do
    tc qdisc del dev $d root 2>/dev/null
    # shellcheck disable=SC2086
    tc qdisc add dev $d root $QDISC || exit 1
done
log "$SECS s, '$QDISC' on wA and wB, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) vCPUs, 4 processes (oversubscribed)"

export UCX_WARN_UNUSED_ENV_VARS=n UCX_SRQUD_STATS_DUMP=y UCX_SRQUD_TIMEOUT=60s
MPI_TEST_TIMEOUT=$((SECS + 900)) "$ROOT/contrib/mpi-tests.sh" --wire --mpi ompi --np 2 -- \
    -m 4194304 -i 1 -o 64 -T "$SECS" > "$OUT/mpi.log" 2>&1 &
mpi=$!

pairs=0 bad=0 t0=$SECONDS
while kill -0 $mpi 2>/dev/null; do
    SRQUD_CHECK_INIT_DEVICES=rxeA:1 SRQUD_CHECK_TARGET_DEVICES=rxeB:1 UCX_TLS=srqud,self \
        timeout 900 "$CHECK" -T 600 -t tag -t am -t put_worker_flush -t get_worker_flush \
        -L 4194304 -n 2 >> "$OUT/ucp.log" 2>&1 || bad=$((bad + 1))
    pairs=$((pairs + 1))
    if [ $((pairs % 10)) = 0 ]; then
        echo "   $((SECONDS - t0)) s: $pairs UCP pairs ($bad failed), MPI: $(grep '^soak round' "$OUT/mpi.log" | tail -n 1)"
    fi
done
wait $mpi
mrc=$?

grep '^soak round' "$OUT/mpi.log" | sed 's/^/   /'
grep -E 'srqud_mpi_test:|RESULT' "$OUT/mpi.log" | sed 's/^/   /'
# VmRSS of each rank: the round at a tenth of the run against the last
grep '^soak round' "$OUT/mpi.log" | awk -F'VmRSS kB: ' '{ print $2 }' > "$OUT/rss.txt"
rounds=$(wc -l < "$OUT/rss.txt")
base=$(( rounds / 10 > 2 ? rounds / 10 : 2 ))
rss=$(awk -v base="$base" '
    NR == 2    { split($0, r2, " ") }
    NR == base { n = split($0, first, " ") }
    { m = split($0, last, " "); for (i = 1; i <= m; ++i) if ($i > peak[i]) peak[i] = $i }
    END {
        worst = 0
        for (i = 1; i <= n && i <= m; ++i) {
            g = (last[i] - first[i]) / first[i] * 100
            if (g > worst) worst = g
            printf "   rank %d VmRSS kB: round 2 %d, round %d %d, peak %d, last %d\n",
                   i - 1, r2[i], base, first[i], peak[i], last[i]
        }
        printf "%.1f\n", (NR >= 3) ? worst : 999
    }' "$OUT/rss.txt")
echo "$rss" | sed '$d'
growth=$(echo "$rss" | tail -n 1)
c=$(cat "$OUT/mpi.log" "$OUT/ucp.log" | srqud_counters /dev/stdin tx retransmits fast_retransmits timeouts held reorder_dropped dups failures)
drops=$(( $($WIRE drops wA) + $($WIRE drops wB) ))
echo "   srqud tx,retransmits,fast_retransmits,timeouts,held,reorder_dropped,dups,failures: $c"
echo "   netem dropped $drops packets; UCP pairs $pairs, $bad failed; VmRSS growth (round $base of $rounds -> last) ${growth} %"
if [ $mrc = 0 ] && [ $bad = 0 ] && [ "$pairs" -gt 0 ] && awk -v g="$growth" 'BEGIN { exit !(g <= 10) }'; then
    result wire_soak PASS
else
    result wire_soak FAIL "(mpi exit $mrc, $bad UCP pairs failed, VmRSS growth $growth %)"
    exit 1
fi
