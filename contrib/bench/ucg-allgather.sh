#!/bin/bash
#
# MPI_Allgather benchmarks of srqud UCG against the MPI libraries' own
# Allgather, over one UCX transport, in one run (Sur et al., HiPC'05):
#
#   1. latency against message size for each np (default 2 4 8):
#      Open MPI's default (coll/tuned) | Open MPI + coll/sucg, one column per
#      UCG algorithm (recursive_doubling ring p2p_rd p2p_ring) | MPICH's
#      default | MPICH + libsucg_pmpi.so, each UCG algorithm
#   2. the same with a new buffer every call (mode "fresh": new mmap()ed
#      pages, no registration to reuse; the paper's no-buffer-reuse case)
#   3. the distributed matrix multiplication example (sucg_matmul, N=256),
#      MPI default against UCG (auto algorithm), buffers reused and fresh
#
#   contrib/bench/ucg-allgather.sh [--net host|srqud|rc] [--np "2 4 8"]
#       [--sizes LIST] [--iters N] [--modes "reuse fresh"] [--mpi both|ompi|mpich]
#       [--algos "recursive_doubling ring p2p_rd p2p_ring"] [--matmul-np "8"]
#       [--matmul-iters N] [--no-matmul] [--out DIR]
#
#   --net host   UCX_TLS=sm,self for the MPI and for UCG (default)
#   --net srqud  in the Soft-RoCE VM: UCX_TLS=srqud,self on rxe0
#   --net rc     in the VM: UCX_TLS=rc_verbs,ud_verbs,self, UCX_IB_GID_INDEX=2
#   e.g. contrib/softroce/vm-run --timeout 3000 -- contrib/bench/ucg-allgather.sh \
#            --net rc --np "2 4" --iters 20 --matmul-np 4 --matmul-iters 10
#
# Output in DIR (default build/bench/ucg-allgather-NET): allgather.csv,
# matmul.csv, allgather-reuse.png, allgather-fresh.png, matmul.png and
# tables.txt (also printed). Every number is labelled with the path its
# calls really took (UCG counters of the glue); a run whose path is not the
# intended one, or whose result check fails, makes the script exit 1.
# Not run by CI (minutes on the host, much longer in the VM).
#
set -u
. "$(dirname "$0")/common.sh"
B=$SRQUD_BUILD
NET=host
NPS="2 4 8"
SIZES="4,16,64,256,1K,4K,16K,32K,64K,256K,1M"
ITERS=100
MODES="reuse fresh"
WHICH=both
ALGOS="recursive_doubling ring p2p_rd p2p_ring"
MM_NPS="8"
MM_ITERS=50
MATMUL=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
    --net)          NET=$2; shift 2 ;;
    --np)           NPS=$2; shift 2 ;;
    --sizes)        SIZES=$2; shift 2 ;;
    --iters)        ITERS=$2; shift 2 ;;
    --modes)        MODES=$2; shift 2 ;;
    --mpi)          WHICH=$2; shift 2 ;;
    --algos)        ALGOS=$2; shift 2 ;;
    --matmul-np)    MM_NPS=$2; shift 2 ;;
    --matmul-iters) MM_ITERS=$2; shift 2 ;;
    --no-matmul)    MATMUL=0; shift ;;
    --out)          OUT=$2; shift 2 ;;
    *) bench_usage; exit 2 ;;
    esac
done
# shellcheck source=../../test/sucg/mpi/mpirun.sh
. "$ROOT/test/sucg/mpi/mpirun.sh"
# shellcheck source=sucg-run.sh
. "$ROOT/contrib/bench/sucg-run.sh"
sucg_net "$NET" || { echo "error: --net $NET: host, srqud or rc" >&2; exit 2; }
# the same transport for both MPIs and UCG; on the host: shared memory
[ "$NET" = host ] && UCX_ENV=(UCX_TLS=sm,self "${UCX_ENV[@]}")
case "$WHICH" in both|ompi|mpich) ;; *) echo "error: --mpi $WHICH: both, ompi or mpich" >&2; exit 2 ;; esac
for m in $MODES; do
    case "$m" in reuse|fresh) ;; *) echo "error: --modes: reuse and/or fresh, not '$m'" >&2; exit 2 ;; esac
done
for a in $ALGOS; do
    case "$a" in recursive_doubling|ring|p2p_rd|p2p_ring) ;;
    *) echo "error: --algos: unknown UCG algorithm '$a'" >&2; exit 2 ;; esac
done
OUT=${OUT:-$RESULTS/ucg-allgather-$NET}
mkdir -p "$OUT"
COMPONENT_DIR=$B/install/lib/openmpi
PMPI_LIB=$B/install/lib/libsucg_pmpi.so
EX=$B/obj/src/sucg/examples
for f in "$COMPONENT_DIR/mca_coll_sucg.so" "$PMPI_LIB" "$EX/sucg_allgather_bench_ompi" \
         "$EX/sucg_allgather_bench_mpich" "$EX/sucg_matmul_ompi" "$EX/sucg_matmul_mpich"; do
    [ -e "$f" ] || { echo "error: $f missing: run contrib/build.sh" >&2; exit 1; }
done
sucg_ompi_component_args "$COMPONENT_DIR"
# per mpirun: the VM is slow
SUCG_MPI_TMO=${TMO:-3600}
PLOT=$ROOT/contrib/bench/plot.py
# Debian's python3 has python3-matplotlib (contrib/build.sh installs it)
PYTHON=${PYTHON:-/usr/bin/python3}
ERRORS=0

impls() {
    local a
    if [ $WHICH != mpich ]; then
        echo ompi-tuned
        for a in $ALGOS; do echo ompi-ucg-$a; done
    fi
    if [ $WHICH != ompi ]; then
        echo mpich-default
        for a in $ALGOS; do echo mpich-ucg-$a; done
    fi
}

ACSV=$OUT/allgather.csv
MCSV=$OUT/matmul.csv
echo "net,mode,impl,np,bytes,iters,lat_us,p99_us,path" > "$ACSV"
echo "== MPI_Allgather latency (us, mean per call, max over ranks), ${UCX_ENV[*]}"
echo "   Open MPI $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p'), MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:\s*//p')"
t0=$(date +%s)
for mode in $MODES; do
    fl=""; [ $mode = fresh ] && fl=-f
    for np in $NPS; do
        for impl in $(impls); do
            sucg_run "$impl" "$np" "$EX/sucg_allgather_bench" -s "$SIZES" -i "$ITERS" -l "$impl" $fl \
                > "$OUT/.run" || ERRORS=$((ERRORS + 1))
            sed "s/^/$NET,$mode,/" "$OUT/.run" >> "$ACSV"
            printf '.' >&2
        done
        echo " $mode np=$np done ($(( $(date +%s) - t0 )) s)" >&2
    done
done

if [ $MATMUL = 1 ]; then
    echo "net,mode,impl,np,n,iters,iter_us,allgather_us,max_err,path" > "$MCSV"
    for mode in $MODES; do
        fl=""; [ $mode = fresh ] && fl=-f
        for np in $MM_NPS; do
            for impl in $( [ $WHICH != mpich ] && echo ompi-tuned ompi-ucg-auto
                           [ $WHICH != ompi ] && echo mpich-default mpich-ucg-auto); do
                sucg_run "$impl" "$np" "$EX/sucg_matmul" -n 256 -i "$MM_ITERS" $fl \
                    > "$OUT/.run" || ERRORS=$((ERRORS + 1))
                sed "s/^/$NET,$mode,$impl,/" "$OUT/.run" >> "$MCSV"
            done
        done
    done
fi

# ---- tables, ratios, plots ---------------------------------------------------
{
    echo "# srqud UCG MPI_Allgather benchmark, ${UCX_ENV[*]}, $(date -u +%FT%TZ)"
    echo "# command: contrib/bench/$(basename "$0") --net $NET --np \"$NPS\" --sizes $SIZES --iters $ITERS --modes \"$MODES\""
    for mode in $MODES; do
        echo
        echo "## latency (us), mode=$mode (columns: implementation; rows: bytes per rank)"
        "$PYTHON" "$PLOT" "$ACSV" --x bytes --y lat_us --series impl --facet np \
            --where mode=$mode --table
    done
    "$PYTHON" - "$ACSV" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lat = {(r["mode"], r["np"], r["impl"], int(r["bytes"])): float(r["lat_us"]) for r in rows}
nps = sorted({int(r["np"]) for r in rows})
modes = [m for m in ("reuse", "fresh") if any(r["mode"] == m for r in rows)]
def pct(a, b):
    return "%+.0f %%" % ((a / b - 1) * 100)
print("## ratios (paper, 32 processes, MVAPICH RDMA vs point-to-point Allgather: "
      "-17 % at 4 B, -30 % at 32 KB; no buffer reuse: 4.75x at 32 KB)")
for mode in modes:
    for mpi, native in (("ompi", "ompi-tuned"), ("mpich", "mpich-default")):
        for np in nps:
            for size in (4, 32768):
                k = lambda impl: (mode, str(np), impl, size)
                rd, p2p = k(mpi + "-ucg-recursive_doubling"), k(mpi + "-ucg-p2p_rd")
                nat = k(native)
                if rd not in lat:
                    continue
                parts = []
                if p2p in lat:
                    parts.append("RDMA rd vs p2p rd %s" % pct(lat[rd], lat[p2p]))
                if nat in lat:
                    parts.append("RDMA rd vs %s %s (%.2fx)" %
                                 (native, pct(lat[rd], lat[nat]), lat[nat] / lat[rd]))
                print("  %-5s %-5s np=%d %6d B: %s" % (mode, mpi, np, size, "; ".join(parts)))
EOF
    if [ $MATMUL = 1 ]; then
        echo
        echo "## matrix multiplication, N=256 (us per iteration: allgather + local product)"
        column -t -s, "$MCSV"
    fi
} | bench_filter | tee "$OUT/tables.txt"

for mode in $MODES; do
    "$PYTHON" "$PLOT" "$ACSV" --x bytes --y lat_us --series impl --facet np --where mode=$mode \
        --logx --logy --xlabel "bytes per rank" --ylabel "latency (us)" \
        --title "MPI_Allgather, mode=$mode, ${UCX_ENV[0]}" -o "$OUT/allgather-$mode.png" ||
        ERRORS=$((ERRORS + 1))
done
if [ $MATMUL = 1 ]; then
    "$PYTHON" "$PLOT" "$MCSV" --x np --y iter_us --series impl,mode --xlabel "processes" \
        --ylabel "us per iteration" --title "matmul N=256, ${UCX_ENV[0]}" -o "$OUT/matmul.png" ||
        ERRORS=$((ERRORS + 1))
fi
echo "== $(( $(date +%s) - t0 )) s; results in $OUT; errors: $ERRORS"
[ $ERRORS = 0 ]
