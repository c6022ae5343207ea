#!/bin/bash
#
# What bounds bi-directional bandwidth here: for each transport, Open MPI
# (pml ucx) uni- and bi-directional bandwidth of one size with the CPUs of
# the whole VM kept busy in the kernel during each phase (contrib/bench/
# mpi_bw.c -c, from /proc/stat): on Soft-RoCE the packets' work (posting,
# segmenting, copying, delivering) is kernel time. The ranks poll, so their
# user time fills whatever is left and is not a measure of work.
#
#   contrib/softroce/vm-run -- contrib/bench/bidir.sh [-r REPS] [-s SIZE]
#
# Interleaved repetitions (default 3), median and min..max; SIZE defaults
# to 4 MB. From the kernel time one MB costs bi-directionally it prints the
# bi-directional bandwidth the VM's CPUs could carry if they did nothing
# else, as a ratio to uni MB/s:
#   bound = CPUs / (kernel CPUs in bi / bi MB/s) / uni MB/s
# Two ranks on the VM's vCPUs: not oversubscribed, but every packet's
# kernel work runs on the same vCPUs. Table on stdout; CSV in
# $SRQUD_BUILD/bench/bidir.csv.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=3
SIZE=4194304
bench_getopts "r:REPS s:SIZE" "$@"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "-r: not a number: $REPS" >&2; exit 2; }
B=$RESULTS
if [ ! -x "$B/mpi_bw" ] || [ "$ROOT/contrib/bench/mpi_bw.c" -nt "$B/mpi_bw" ]; then
    mpicc.openmpi -O2 -Wall -o "$B/mpi_bw" "$ROOT/contrib/bench/mpi_bw.c" || exit 1
fi
CSV=$B/bidir.csv
TLA=(srqud ud_verbs rc_verbs)
T0=$SECONDS
rc=0
echo "tl,rep,uni_MBs,bi_MBs,kcpus_uni,kcpus_bi" > "$CSV"
for rep in $(seq 1 "$REPS"); do
    k=$(((rep - 1) % ${#TLA[@]}))
    for tl in "${TLA[@]:$k}" "${TLA[@]:0:$k}"; do
        tls=$(bench_ucx_tls "$tl")
        # shellcheck disable=SC2046 # the env list
        if out=$(bench_ompi 900 2 "$tls" $(bench_tl_env "$tl") -- \
                 "$B/mpi_bw" -c -m "$SIZE" -M "$SIZE" -i 40 2>&1); then
            echo "$out" | awk -v tl="$tl" -v rep="$rep" -v s="$SIZE" \
                '$1 == s && NF == 6 { print tl "," rep "," $3 "," $4 "," $5 "," $6 }' >> "$CSV"
        else
            echo "$tl: mpi_bw failed: $(echo "$out" | tail -n 3)" >&2
            rc=1
        fi
    done
    echo "   [$((SECONDS - T0)) s] repetition $rep of $REPS" >&2
done

awk -F, -v ncpu="$(nproc)" "$BENCH_MEDIAN_AWK"'
    NR > 1 {
        c = ++n[$1]; u[$1, c] = $3; b[$1, c] = $4; cu[$1, c] = $5; cb[$1, c] = $6
        # CPU-ms per MB, and the bound of this repetition
        mu[$1, c] = $5 / $3 * 1000; mb[$1, c] = $6 / $4 * 1000
        r[$1, c] = $4 / $3; bound[$1, c] = (ncpu / ($6 / $4)) / $3
        if (!($1 in seen)) { seen[$1] = 1; tl[++m] = $1 }
    }
    function med(a, t,    i, x) {
        for (i = 1; i <= n[t]; ++i) x[i] = a[t, i]
        return median(x, n[t])
    }
    function cell(a, t,    x) { x = med(a, t); return sprintf("%.3g (%.3g..%.3g)", x, LO, HI) }
    END {
        printf "%-9s %20s %20s %18s %16s %16s %14s %14s %18s\n", "tl", "uni MB/s", "bi MB/s",
               "bi/uni", "kernel CPUs uni", "kernel CPUs bi", "kernel ms/MB uni", "kernel ms/MB bi", "bi/uni bound"
        for (i = 1; i <= m; ++i) { t = tl[i]
            printf "%-9s %20s %20s %18s %16s %16s %14.2f %14.2f %18s\n", t, cell(u, t), cell(b, t),
                   cell(r, t), cell(cu, t), cell(cb, t), med(mu, t), med(mb, t), cell(bound, t)
        }
    }' "$CSV"
echo "kernel: system, irq and softirq time of all CPUs (Soft-RoCE's packet work); bi/uni bound: the bi-directional"
echo "rate all $(nproc) CPUs could carry at bi's kernel cost per MB doing nothing else, over uni's rate"
echo "CSV: $CSV; load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) vCPUs, 2 ranks, $((SECONDS - T0)) s"
exit $rc
