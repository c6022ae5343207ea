#!/bin/bash
#
# MPI+threads message rate (issue 11): MPICH with VCIs, a communicator and
# so a UCP worker per thread, srqud beside ud_verbs and rc_verbs, in the
# Soft-RoCE VM:
#
#   contrib/build-mpich-vci.sh            # once, on the host (~6 min)
#   contrib/softroce/vm-run --timeout 3600 -- contrib/bench/mpi_threads.sh [-r REPS] [-T "1 2 4 8"] [-n MSGS] [-s SIZE]
#
#   -r REPS   interleaved repetitions (default 3), the order of the
#             transports rotating
#   -T LIST   threads per rank (default "1 2 4 8")
#   -n MSGS   messages per run, over all threads (default 40000)
#   -s SIZE   message size in bytes (default 8)
#   -R 1      no runs: the table and plot again from mpi-threads-raw.csv
#
# Series (contrib/bench/mpi_threads_rate.c: a window of 64 MPI_Isend per
# thread to the other rank's thread, an empty answer per window):
#   vci/srqud-srq   MPICH with T+1 VCIs (one per thread's communicator),
#                   srqud's interfaces sharing one receive pool
#   vci/srqud-pd    the same, each interface its own SRQ and buffers
#   vci/ud_verbs, vci/rc_verbs   UCX's transports, T+1 VCIs
#   1vci/srqud-srq  the same MPICH with one VCI: every thread through one
#                   worker under MPICH's lock (what Debian's MPICH gives)
#
# 2 ranks of T threads on 2 vCPUs: from 2 threads on, the threads exceed the
# cores (said in the table); rates are those of an emulated machine: ratios
# only. Output: table on stdout; $SRQUD_BUILD/bench/mpi-threads-raw.csv,
# mpi-threads.csv (medians), mpi-threads.png.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=3
THREADS="1 2 4 8"
MSGS=40000
SIZE=8
REPORT=
bench_getopts "r:REPS T:THREADS n:MSGS s:SIZE R:REPORT" "$@"
B=$RESULTS
RAW=$B/mpi-threads-raw.csv
CSV=$B/mpi-threads.csv
SERIES="vci/srqud-srq vci/srqud-pd vci/ud_verbs vci/rc_verbs 1vci/srqud-srq"
nseries=$(echo $SERIES | wc -w)
PY=${PYTHON:-/usr/bin/python3}
T0=$SECONDS
fails=0

if [ -z "$REPORT" ]; then
bench_require_dev
MPICH=$SRQUD_BUILD/mpich-vci/prefix/
[ -x "${MPICH}bin/mpicc" ] || { echo "no MPICH with VCIs in $SRQUD_BUILD: run contrib/build-mpich-vci.sh on the host" >&2; exit 1; }
PROG=$B/mpi_threads_rate
"${MPICH}bin/mpicc" -O2 -Wall -o "$PROG" "$ROOT/contrib/bench/mpi_threads_rate.c" -lpthread || exit 1
echo "MPICH $("${MPICH}bin/mpichversion" | sed -n 's/^MPICH Version:[[:space:]]*//p') in \$SRQUD_BUILD/$(basename "$MPICH"):" \
     "$("${MPICH}bin/mpichversion" | grep -o -e '--enable-thread-cs=[a-z-]*' -e '--with-ch4-max-vcis=[0-9]*' | tr '\n' ' ')"
echo "series,threads,rep,size,msgs,seconds,rate_mmps,vcis,ifaces" > "$RAW"
series=($SERIES)
nruns=$((REPS * nseries * $(echo $THREADS | wc -w)))
run=0
for rep in $(seq 1 "$REPS"); do
    for t in $THREADS; do
        for ((k = 0; k < nseries; ++k)); do
            s=${series[$(( (k + rep - 1) % nseries ))]}
            run=$((run + 1))
            vcis=$((t + 1))
            [ "${s%%/*}" = 1vci ] && vcis=1
            case ${s#*/} in
            srqud-*) envs=(-genv UCX_TLS srqud,self -genv UCX_SRQUD_SHARE "${s#*srqud-}"
                           -genv UCX_SRQUD_STATS_DUMP y) ;;
            ud_verbs) envs=(-genv UCX_TLS ud_verbs,self -genv UCX_IB_GID_INDEX 2) ;;
            rc_verbs) envs=(-genv UCX_TLS rc_verbs,ud_verbs,self -genv UCX_IB_GID_INDEX 2) ;;
            esac
            echo "   [$((SECONDS - T0)) s] run $run/$nruns: $s, $t threads, rep $rep" >&2
            if out=$(timeout 300 "${MPICH}bin/mpiexec" -iface lo -np 2 \
                    -genv MPIR_CVAR_CH4_NUM_VCIS $vcis -genv UCX_NET_DEVICES "$BENCH_DEV" \
                    -genv UCX_WARN_UNUSED_ENV_VARS n "${envs[@]}" \
                    "$PROG" -t "$t" -n "$MSGS" -s "$SIZE" 2>"$B/mpi-threads-last.err"); then
                # srqud's interfaces in both ranks (a line each at close):
                # one per VCI, which shows MPICH gave each thread a worker
                ifaces=-
                [ "${s#*/srqud}" != "$s" ] && ifaces=$(grep -c '^srqud .* retransmits ' "$B/mpi-threads-last.err")
                echo "$out" | awk -F, -v s="$s" -v r="$rep" -v i="$ifaces" 'NF == 6 {
                    printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", s, $1, r, $2, $3, $4, $5, $6, i }' >> "$RAW"
            else
                echo "   FAIL: $s $t threads (rep $rep): $(tail -3 "$B/mpi-threads-last.err")" >&2
                fails=$((fails + 1))
            fi
        done
    done
done
fi

# medians and spread per series and thread count
awk -F, "$BENCH_MEDIAN_AWK"'
NR > 1 {
    k = $1 SUBSEP $2
    if (!(k in n)) { keys[++nk] = k }
    r[k, ++n[k]] = $7
    if (!(k in mn) || $7 < mn[k]) mn[k] = $7
    if (!(k in mx) || $7 > mx[k]) mx[k] = $7
    v[k] = $8; f[k] = $9
}
END {
    print "series,threads,rate_mmps,rate_min,rate_max,runs,vcis,ifaces"
    for (i = 1; i <= nk; ++i) {
        k = keys[i]; split(k, kk, SUBSEP)
        for (j = 1; j <= n[k]; ++j) x[j] = r[k, j]
        printf "%s,%s,%.4f,%.4f,%.4f,%d,%s,%s\n", kk[1], kk[2], median(x, n[k]), mn[k], mx[k], n[k], v[k], f[k]
    }
}' "$RAW" > "$CSV.tmp"
{ head -1 "$CSV.tmp"; tail -n +2 "$CSV.tmp" | sort -t, -k1,1 -k2,2n; } > "$CSV"
rm -f "$CSV.tmp"

echo
echo "MPI message rate of ${SIZE} B (Mmsg/s, both ranks' threads), median [min..max]; 2 ranks on $(nproc) vCPUs"
printf "%-15s %8s %5s %7s %28s\n" series threads vcis ifaces "rate median [min..max]"
tail -n +2 "$CSV" | while IFS=, read -r s t m lo hi n v f; do
    over=""; [ $((2 * t)) -gt "$(nproc)" ] && over="*"
    printf "%-15s %7s%1s %5s %7s %10.4f [%.4f..%.4f]\n" "$s" "$t" "$over" "$v" "$f" "$m" "$lo" "$hi"
done
echo "ifaces: srqud interfaces opened in both ranks (UCX_SRQUD_STATS_DUMP), a UCP worker each"
echo "* the threads of the 2 ranks exceed the $(nproc) vCPUs"
awk -F, 'NR > 1 { m[$1, $2] = $3; t[$2] = 1 }
END {
    for (n = 1; n <= 64; n *= 2) {
        if (!(n in t)) continue
        line = sprintf("%2d threads: vci/srqud-srq /", n)
        split("vci/srqud-pd vci/ud_verbs vci/rc_verbs 1vci/srqud-srq", o, " ")
        for (i = 1; i <= 4; ++i)
            if (m[o[i], n] > 0) line = line sprintf(" %s %.2fx", o[i], m["vci/srqud-srq", n] / m[o[i], n])
        print line
    }
    if (m["vci/srqud-srq", 1] > 0 && m["vci/srqud-srq", 2] > 0)
        printf "vci/srqud-srq: 2 threads / 1 = %.2fx\n", m["vci/srqud-srq", 2] / m["vci/srqud-srq", 1]
}' "$CSV"
"$PY" "$ROOT/contrib/bench/plot.py" "$CSV" --x threads --y rate_mmps --series series \
    --logx --title "MPICH+threads, ${SIZE} B message rate (2 ranks, 2 vCPUs)" \
    --ylabel "Mmsg/s" -o "$B/mpi-threads.png" || fails=$((fails + 1))
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $fails failed runs; $((SECONDS - T0)) s"
[ $fails = 0 ]
