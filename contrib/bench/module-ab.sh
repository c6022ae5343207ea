#!/bin/bash
#
# Before and after a change of the transport, in one VM run: the installed
# srqud module (build/ucx/lib/ucx) against another build of it (BASE, e.g.
# the libuct_srqud.so.0 of the commit before the change), interleaved:
#
#   contrib/softroce/vm-run -- contrib/bench/module-ab.sh BASE [--reps N] [--csv FILE]
#
# Each repetition runs UCP tag_lat 8 B and tag_bw 4 MB over srqud with one
# module, then the other (the order alternates). Prints, per test and side,
# the median and the spread (min..max) of the repetitions, and the ratio
# new/base of the medians. Speed is compared as a ratio in one run, never
# against a fixed time. Exits non-zero only if a run failed.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"

BASE=${1:-}
[ -f "$BASE" ] || { echo "usage: $0 BASE_MODULE.so [--reps N] [--csv FILE]" >&2; exit 2; }
shift
REPS=5
CSV=$RESULTS/module-ab.csv
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --csv)  CSV=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

NEW_DIR=$SRQUD_BUILD/ucx/lib/ucx
# the base: UCX's own modules beside the other srqud build
BASE_DIR=$RESULTS/module-ab-base
rm -rf "$BASE_DIR" && mkdir -p "$BASE_DIR"
for f in "$NEW_DIR"/*.so*; do
    case "$(basename "$f")" in libuct_srqud*) ;; *) ln -s "$f" "$BASE_DIR/" ;; esac
done
cp "$BASE" "$BASE_DIR/libuct_srqud.so.0"
ln -s libuct_srqud.so.0 "$BASE_DIR/libuct_srqud.so"

run() {   # run SIDE TEST SIZE ITER -> "lat_us bw_MBs" or FAIL
    local dir=$NEW_DIR out
    [ "$1" = base ] && dir=$BASE_DIR
    out=$(PERFTEST_TIMEOUT=300 "$ROOT/contrib/bench/perftest-pair.sh" \
              UCX_MODULE_DIR="$dir" UCX_TLS=srqud,self \
              UCX_NET_DEVICES=rxe0:1 -- -t "$2" -s "$3" -n "$4" 2>&1)
    if [ $? != 0 ] || ! echo "$out" | grep -q "Final:"; then
        echo FAIL
        return 1
    fi
    echo "$out" | awk '/Final:/ {printf "%.3f %.1f\n", $4, $7}'
}

echo "rep,side,test,size,lat_us,bw_MBs" > "$CSV"
rc=0
for rep in $(seq 1 "$REPS"); do
    sides="base new"
    [ $((rep % 2)) = 0 ] && sides="new base"
    for side in $sides; do
        for spec in "tag_lat 8 20000" "tag_bw 4194304 40"; do
            set -- $spec
            r=$(run "$side" "$1" "$2" "$3") || rc=1
            echo "rep $rep/$REPS $side $1 $2: $r"
            [ "$r" != FAIL ] && echo "$rep,$side,$1,$2,${r// /,}" >> "$CSV"
        done
    done
done

# median and spread per test and side; ratio new/base of the medians
python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("\n%-8s %-8s %-30s %-30s %s" % ("test", "size", "base median (min..max)", "new median (min..max)", "new/base"))
for test, size, key, unit in (("tag_lat", "8", "lat_us", "us"), ("tag_bw", "4194304", "bw_MBs", "MB/s")):
    med = {}
    cells = []
    for side in ("base", "new"):
        v = [float(r[key]) for r in rows if r["test"] == test and r["side"] == side]
        if not v:
            cells.append("no data"); continue
        med[side] = statistics.median(v)
        cells.append("%.2f %s (%.2f..%.2f)" % (med[side], unit, min(v), max(v)))
    ratio = "%.3f" % (med["new"] / med["base"]) if len(med) == 2 else "-"
    print("%-8s %-8s %-30s %-30s %s" % (test, size, cells[0], cells[1], ratio))
PY
echo "csv: $CSV"
exit $rc
