#!/bin/bash
#
# One MPI call at one size, transports interleaved, with what srqud did for
# it: its counters (UCX_SRQUD_STATS_DUMP, summed over every rank's
# interface) per call and rank beside the call's time. For the question
# "does this cell cost srqud more packets, doorbells, acknowledgements or
# timer wakeups than it should", which the times alone do not answer. In
# the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/bench/mpi-counters.sh [-r REPS]
#       [-p NP] [-m MPI] [-t VARIANTS] [-c CALL] [-s SIZE] [-n ITERS]
#       [-W WARM_REPS] [-b BASE_MODULE] [-o NAME]
#
# Defaults: 4 repetitions, 2 ranks, MPICH, "srqud ud_verbs", sendrecv, 8 B,
# 3000 calls (mpi_calls.c; its 100 warm-up calls count in the counters,
# not in the times). Variants as in mpi-calls.sh (srqud-x+UCX_SRQUD_VAR=V),
# their order rotated each repetition. WARM_REPS (default 1) repetitions
# first, not recorded: the emulator translates code the first time a run
# takes it. -b BASE_MODULE adds a variant srqud-base, srqud with that
# build of its module (e.g. the commit before a change; bench_base_lib).
# Writes build/bench/NAME/counters.csv (rep, variant, avg_us, p50_us,
# p99_us, max_us, slow10x, over1ms, then each counter per call and rank)
# and prints per variant the median of the repetitions, the times with
# their spread (min-max). ud_verbs and rc_verbs have no such counters:
# theirs print as 0.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"

REPS=4
NP=2
MPI=mpich
VARIANTS="srqud ud_verbs"
CALL=sendrecv
SIZE=8
ITERS=3000
WARM=1
BASE=
NAME=mpi-counters
bench_getopts "r:REPS p:NP m:MPI t:VARIANTS c:CALL s:SIZE n:ITERS W:WARM b:BASE o:NAME" "$@"
bench_require_dev

WARMUP=100
COUNTERS="tx doorbells acks acks_ridden timer_sets async_progress async_busy
          timeouts retransmits fast_retransmits dups held tx_am_chains
          progress_quiet progress_early"
OUT=$RESULTS/$NAME
mkdir -p "$OUT"
CSV=$OUT/counters.csv
bench_mpi_cc "$ROOT/contrib/bench/mpi_calls.c" "$OUT/mpi_calls" "$MPI" || exit
bench_base_option "$BASE" "$OUT/base-lib" || exit
bench_ranks_on_cores "$NP"

# one VARIANT: one run; prints "avg p50 p99 max slow10x over1ms c1 c2 ..."
# (counters per call and rank), or nothing if the run failed
one() {
    local v=$1 tl err res cnt
    local -a envs
    tl=$(bench_tl "${v%%+*}")
    read -ra envs <<< "$(bench_variant_env "$v") $(bench_base_env "$v" "$OUT/base-lib")"
    err=$OUT/stderr.log
    res=$(bench_"$MPI" 900 "$NP" "$(bench_ucx_tls "$tl")" UCX_SRQUD_STATS_DUMP=y \
              "${envs[@]}" -- "$OUT/mpi_calls.$MPI" -c "$CALL" -s "$SIZE" \
              -n "$ITERS" -w "$WARMUP" 2> "$err" |
          awk -v c="$CALL" '$1 == c { print $3, $4, $5, $6, $7, $8 }')
    [ -n "$res" ] || { sed 's/^/    /' "$err" | tail -20 >&2; return 1; }
    # shellcheck disable=SC2086 # the counters' names are words
    cnt=$(srqud_counters "$err" $COUNTERS | tr ',' ' ')
    echo "$res $(echo "$cnt" | awk -v d=$((NP * (ITERS + WARMUP))) \
                     '{ for (i = 1; i <= NF; ++i) printf "%.4f ", $i / d }')"
}

read -ra vs <<< "$VARIANTS"
# shellcheck disable=SC2086 # the counters' names are words
echo "rep,variant,avg_us,p50_us,p99_us,max_us,slow10x,over1ms,$(printf '%s,' $COUNTERS | sed 's/,$//')" > "$CSV"
status=0
start=$SECONDS
total=$(( (WARM + REPS) * ${#vs[@]} ))
done_runs=0
for r in $(seq $((1 - WARM)) "$REPS"); do
    for i in "${!vs[@]}"; do
        v=${vs[$(( (i + r + WARM) % ${#vs[@]} ))]}
        line=$(one "$v") || { status=1; line=; }
        done_runs=$((done_runs + 1))
        echo "# $MPI $NP ranks $CALL $SIZE B, rep $r, $v: ${line:-FAIL}" \
             "($done_runs of $total, $((SECONDS - start)) s)"
        if [ "$r" -ge 1 ] && [ -n "$line" ]; then
            echo "$r,${v%%+*},$(echo "$line" | sed 's/ *$//; s/ /,/g')" >> "$CSV"
        fi
    done
done

echo "# $MPI, $NP ranks, $CALL $SIZE B, $ITERS calls: the median of $REPS repetitions"
/usr/bin/python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cols = [c for c in rows[0].keys() if c not in ('rep', 'variant')] if rows else []
timed = [c for c in cols if c.endswith('_us')]
counts = [c for c in cols if c not in timed]
def cell(vals, spread):
    m = '%.4g' % statistics.median(vals)
    return '%s (%.4g-%.4g)' % (m, min(vals), max(vals)) if spread else m
for v in dict.fromkeys(r['variant'] for r in rows):
    mine = [r for r in rows if r['variant'] == v]
    vals = lambda c: [float(r[c]) for r in mine]
    print('%s: %s' % (v, ', '.join('%s %s' % (c, cell(vals(c), True)) for c in timed)))
    print('%s  %s' % (' ' * len(v), ', '.join('%s %s' % (c, cell(vals(c), False))
                                               for c in counts)))
PY
echo "(counters per call and rank, the warm-up's included; $CSV)"
exit $status
