#!/bin/bash
#
# Before and after a change of the transport, in one VM run: the installed
# srqud module (build/ucx/lib/ucx) against another build of it (BASE, e.g.
# the libuct_srqud.so.0 of the commit before the change), interleaved:
#
#   contrib/softroce/vm-run -- contrib/bench/module-ab.sh BASE [--reps N] [--csv FILE]
#       [--only NAME[,NAME...]]
#
# Each repetition runs UCP tag_lat 8 B and tag_bw 4 MB (or those --only
# names; tag_rate: tag_bw of 8 B messages, the message rate; tag_lat_1k,
# tag_lat_4k: tag_lat of 1 and 4 KB) over srqud
# with one module, then the other (the order alternates). Prints, per test and side,
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
# NAME TEST SIZE ITERATIONS
ALL_SPECS=("tag_lat tag_lat 8 20000" "tag_bw tag_bw 4194304 40"
           "tag_rate tag_bw 8 200000" "tag_lat_1k tag_lat 1024 20000"
           "tag_lat_4k tag_lat 4096 20000")
ONLY=tag_lat,tag_bw
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --csv)  CSV=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

SPECS=()
for name in ${ONLY//,/ }; do
    found=0
    for spec in "${ALL_SPECS[@]}"; do
        [ "${spec%% *}" = "$name" ] && { SPECS+=("$spec"); found=1; }
    done
    [ $found = 1 ] || { echo "--only: tag_lat, tag_bw, tag_rate, tag_lat_1k or tag_lat_4k, not $name" >&2; exit 2; }
done

NEW_LIB=$SRQUD_BUILD/ucx/lib
BASE_LIB=$RESULTS/module-ab-base
bench_base_lib "$BASE" "$BASE_LIB"

lib_of() {   # lib_of SIDE: the library directory a side runs with
    if [ "$1" = base ]; then echo "$BASE_LIB"; else echo "$NEW_LIB"; fi
}

bench_check_lib base "$BASE_LIB" || exit 1
bench_check_lib new "$NEW_LIB" || exit 1
cmp -s "$BASE" "$NEW_LIB/ucx/libuct_srqud.so.0" &&
    echo "note: the base module is the installed one (same bytes)"

run() {   # run SIDE TEST SIZE ITER -> "lat_us bw_MBs msg_s" or FAIL
    local out
    out=$(LD_LIBRARY_PATH="$(lib_of "$1")" PERFTEST_TIMEOUT=300 \
              "$ROOT/contrib/bench/perftest-pair.sh" UCX_TLS=srqud,self \
              UCX_NET_DEVICES="$BENCH_DEV" -- -t "$2" -s "$3" -n "$4" 2>&1)
    if [ $? != 0 ] || ! echo "$out" | grep -q "Final:"; then
        echo FAIL
        return 1
    fi
    echo "$out" | awk '/Final:/ {printf "%.3f %.1f %.0f\n", $4, $7, $9}'
}

echo "rep,side,test,size,lat_us,bw_MBs,msg_s" > "$CSV"
rc=0
for rep in $(seq 1 "$REPS"); do
    sides="base new"
    [ $((rep % 2)) = 0 ] && sides="new base"
    for side in $sides; do
        for spec in "${SPECS[@]}"; do
            # shellcheck disable=SC2086 # NAME TEST SIZE ITERATIONS
            set -- $spec
            r=$(run "$side" "$2" "$3" "$4") || rc=1
            echo "rep $rep/$REPS $side $1 $3: $r"
            [ "$r" != FAIL ] && echo "$rep,$side,$1,$3,${r// /,}" >> "$CSV"
        done
    done
done

# median and spread per test and side; ratio new/base of the medians
python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("\n%-10s %-8s %-30s %-30s %s" % ("test", "size", "base median (min..max)", "new median (min..max)", "new/base"))
for test, size, key, unit in (("tag_lat", "8", "lat_us", "us"),
                              ("tag_lat_1k", "1024", "lat_us", "us"),
                              ("tag_lat_4k", "4096", "lat_us", "us"),
                              ("tag_bw", "4194304", "bw_MBs", "MB/s"),
                              ("tag_rate", "8", "msg_s", "msg/s")):
    med = {}
    cells = []
    for side in ("base", "new"):
        v = [float(r[key]) for r in rows if r["test"] == test and r["side"] == side]
        if not v:
            cells.append("not run"); continue
        med[side] = statistics.median(v)
        cells.append("%.2f %s (%.2f..%.2f)" % (med[side], unit, min(v), max(v)))
    ratio = "%.3f" % (med["new"] / med["base"]) if len(med) == 2 else "-"
    print("%-10s %-8s %-30s %-30s %s" % (test, size, cells[0], cells[1], ratio))
PY
echo "csv: $CSV"
exit $rc
