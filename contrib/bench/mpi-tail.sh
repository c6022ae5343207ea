#!/bin/bash
#
# A broadcast stream's tail (contrib/bench/mpi_tail.c): the root goes
# computing after its last MPI_Bcast, and the other ranks time that last
# call. In the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/bench/mpi-tail.sh [-r REPS] [-p NPS]
#       [-m MPIS] [-t VARIANTS] [-b BASE_MODULE] [-n CALLS] [-R ROUNDS]
#       [-C COMPUTE_MS] [-o NAME]
#
# Defaults: 5 repetitions, 2 and 4 ranks, Open MPI and MPICH, srqud,
# ud_verbs and rc_verbs, 400 calls of 8 B a round, 20 rounds, 50 ms of
# computation. A variant is a transport, optionally with a suffix and
# settings for its ranks (srqud-h+UCX_SRQUD_TX_HOLD=250us). With -b, a variant srqud-base runs srqud with another build
# of its module (e.g. the commit before a change; bench_base_lib). The
# variants alternate within each repetition, their order rotating. Writes
# build/bench/NAME/tail.csv (rep, mpi, np, variant, tails, p50_us, p90_us,
# max_us, over1ms, other_p50_us: per run, over every non-root rank's
# rounds), prints per MPI, rank count and variant the median of the
# repetitions and their spread (min..max) and the sum of the tails above 1
# ms, and plots the medians (tail-p90.png, tail-max.png).
#
set -uo pipefail
. "$(dirname "$0")/common.sh"

REPS=5
NPS="2 4"
MPIS="ompi mpich"
VARIANTS="srqud ud_verbs rc_verbs"
BASE=
CALLS=400
ROUNDS=20
COMPUTE_MS=50
NAME=mpi-tail
bench_getopts "r:REPS p:NPS m:MPIS t:VARIANTS b:BASE n:CALLS R:ROUNDS C:COMPUTE_MS o:NAME" "$@"
bench_require_dev

OUT=$RESULTS/$NAME
mkdir -p "$OUT"
CSV=$OUT/tail.csv
bench_mpi_cc "$ROOT/contrib/bench/mpi_tail.c" "$OUT/mpi_tail" "$MPIS" || exit
bench_base_option "$BASE" "$OUT/base-lib" || exit
bench_ranks_on_cores "$NPS"

# one VARIANT MPI NP REP: one run, its line into the CSV
one() {
    local v=$1 m=$2 np=$3 rep=$4 tl out rc t0
    local -a envs
    tl=$(bench_tl "${v%%+*}")
    read -ra envs <<< "$(bench_variant_env "$v") $(bench_base_env "$v" "$OUT/base-lib")"
    t0=$SECONDS
    if [ "$m" = ompi ]; then
        out=$(bench_ompi 900 "$np" "$(bench_ucx_tls "$tl")" "${envs[@]}" -- \
              "$OUT/mpi_tail.$m" -n "$CALLS" -r "$ROUNDS" -c "$COMPUTE_MS" 2>&1)
    else
        out=$(bench_mpich 900 "$np" "$(bench_ucx_tls "$tl")" "${envs[@]}" -- \
              "$OUT/mpi_tail.$m" -n "$CALLS" -r "$ROUNDS" -c "$COMPUTE_MS" 2>&1)
    fi
    rc=$?
    echo "== rep $rep/$REPS $m np=$np $v: exit $rc, $((SECONDS - t0)) s" \
         "$(echo "$out" | grep '^tails ')"
    if [ $rc != 0 ]; then
        echo "$out" | tail -20 >&2
        return 1
    fi
    echo "$out" | awk -v p="$rep,$m,$np,$v" \
        '$1 == "tails" { print p "," $2 "," $4 "," $6 "," $8 "," $10 "," $12 }' >> "$CSV"
}

echo "rep,mpi,np,variant,tails,p50_us,p90_us,max_us,over1ms,other_p50_us" > "$CSV"
read -ra vs <<< "$VARIANTS"
rc=0
for rep in $(seq 1 "$REPS"); do
    for m in $MPIS; do
        for np in $NPS; do
            for k in $(seq 0 $((${#vs[@]} - 1))); do
                one "${vs[$(( (k + rep - 1) % ${#vs[@]} ))]}" "$m" "$np" "$rep" || rc=1
            done
        done
    done
done

python3 - "$CSV" "$OUT/summary.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = []
for r in rows:
    k = (r["mpi"], r["np"], r["variant"])
    if k not in keys:
        keys.append(k)
cols = ["p50_us", "p90_us", "max_us", "other_p50_us"]
print("%-6s %3s %-11s %4s  %-22s %-22s %-24s %7s  %s" %
      ("mpi", "np", "variant", "reps", "tail p50 us", "tail p90 us",
       "tail max us", ">1ms", "other calls p50 us"))
with open(sys.argv[2], "w") as f:
    f.write("mpi,np,variant,reps," + ",".join(cols) + ",over1ms,tails\n")
    for k in keys:
        sel = [r for r in rows if (r["mpi"], r["np"], r["variant"]) == k]
        med = {c: statistics.median(float(r[c]) for r in sel) for c in cols}
        spread = {c: "%.0f (%.0f..%.0f)" % (med[c], min(float(r[c]) for r in sel),
                                           max(float(r[c]) for r in sel))
                  for c in cols}
        over = sum(int(r["over1ms"]) for r in sel)
        tails = sum(int(r["tails"]) for r in sel)
        print("%-6s %3s %-11s %4d  %-22s %-22s %-24s %3d/%-4d %s" %
              (k[0], k[1], k[2], len(sel), spread["p50_us"], spread["p90_us"],
               spread["max_us"], over, tails, spread["other_p50_us"]))
        f.write("%s,%s,%s,%d,%s,%d,%d\n" % (k[0], k[1], k[2], len(sel),
                ",".join("%.1f" % med[c] for c in cols), over, tails))
PY
if [ "${MPI_TAIL_PLOTS:-1}" != 0 ]; then
    for col in p90_us max_us; do
        python3 "$ROOT/contrib/bench/plot.py" "$OUT/summary.csv" --x np \
            --y "$col" --series variant --facet mpi --logy \
            --title "A broadcast stream's last call, root computing: $col" \
            -o "$OUT/tail-${col%_us}.png" || rc=1
    done
fi
exit $rc
