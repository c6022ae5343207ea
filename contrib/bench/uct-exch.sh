#!/bin/bash
#
# uct-exch.sh: MPI's small exchanges at three levels on one device, in the
# VM: plain verbs (srqud_rawexch over UD and RC: what the device allows),
# UCT (uct_exch over srqud, ud_verbs and rc_verbs: each transport's own
# cost), the order rotated each repetition. Where a UD transport's MPI
# calls are further from the device's bound than rc_verbs', this tells
# whether the transport or the layers above it (UCP, the MPI library) add
# the difference (docs/notes/mpi-small-messages.md, issue 38).
#
#   contrib/softroce/vm-run -- contrib/bench/uct-exch.sh [-r REPS] [-p "NPS"]
#       [-s SIZES] [-n ITERS] [-o NAME]
#
# -r repetitions (default 3), -p rank counts (default "4 2": ranks beyond
# the cores yield it as Open MPI's do, the others spin), -s sizes (default
# 8,1k), -n timed calls per call and size (default 1000), -o the results'
# name (default uct-exch). Calls: Sendrecv in a ring and recursive
# doubling (srqud_rawexch -c rdbl; uct_exch -c rdbl). The raw exchanges
# carry a 16-byte header as mpi-calls.sh's. Output: per level, transport,
# call and size the median over the repetitions of the average and p99
# per call, and the ratios within each repetition (each level's over the
# device's; srqud's over rc_verbs' and ud_verbs'); in $RESULTS/NAME the
# rows of every run (runs.csv), the medians (summary.csv), the table and
# a PNG of the averages per call. Exit status 1 if a run failed.
#
set -euo pipefail
. "$(dirname "$0")/common.sh"

bench_usage() {
    sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//' >&2
}
REPS=3 NPS="4 2" SIZES=8,1k ITERS=1000 NAME=uct-exch
bench_getopts "r:REPS p:NPS s:SIZES n:ITERS o:NAME" "$@"

bench_build
RAW=$SRQUD_BUILD/obj/src/tools/srqud_rawexch
UCT=$RESULTS/uct_exch
OUT=$RESULTS/$NAME
mkdir -p "$OUT"
echo "np,rep,variant,call,size,avg_us,p50_us,p99_us,max_us,slow10x,over1ms" > "$OUT/runs.csv"
for np in $NPS; do
    echo "# $np ranks on $(nproc) cores:" \
         "$([ "$np" -gt "$(nproc)" ] && echo 'oversubscribed, yielding' || echo 'one core or more each, spinning')"
done

failed=0 t0=$SECONDS
for np in $NPS; do
    spin=-Y
    [ "$np" -gt "$(nproc)" ] && spin=
    for rep in $(seq "$REPS"); do
        set -- raw_ud raw_rc uct_srqud uct_ud_verbs uct_rc_verbs
        for _ in $(seq $(((rep - 1) % $#))); do set -- "${@:2}" "$1"; done
        for v in "$@"; do
            args=(-N "$np" -c "sendrecv,rdbl" -s "$SIZES" -n "$ITERS" -w 100 -T 600
                  ${spin:+"$spin"})
            case $v in
                raw_*) cmd=("$RAW" -d "$BENCH_DEV" -t "${v#raw_}" -H 16 "${args[@]}") ;;
                # ud_verbs and rc_verbs need the GID of ::1 on rxe over lo
                uct_srqud) cmd=("$UCT" -t srqud -d "$BENCH_DEV" "${args[@]}") ;;
                uct_*) cmd=(env UCX_IB_GID_INDEX=2 "$UCT" -t "${v#uct_}" -d "$BENCH_DEV" "${args[@]}") ;;
            esac
            if ! out=$("${cmd[@]}" 2>&1); then
                echo "$v at $np ranks failed: $(echo "$out" | grep -v '^ *[0-9]* 0x' | tail -n 3)" >&2
                failed=1
                continue
            fi
            echo "$out" | awk -v p="$np,$rep,$v" \
                'NF == 8 && $2 ~ /^[0-9]+$/ { $1 = $1; gsub(/ /, ","); print p "," $0 }' \
                >> "$OUT/runs.csv"
        done
        echo "== $np ranks, repetition $rep of $REPS done, $(((SECONDS - t0) / 60)) min" >&2
    done
done
/usr/bin/python3 "$ROOT/contrib/bench/uct_exch_table.py" "$OUT/runs.csv" "$OUT/summary.csv" |
    tee "$OUT/table.txt"
# the medians' plots, one per call (a minute each in the VM; with
# MPI_CALLS_PLOTS=0 the commands are printed for the host instead)
for c in sendrecv rdbl; do
    plot=(/usr/bin/python3 "$ROOT/contrib/bench/plot.py" "$OUT/summary.csv" --x size
          --y avg_us --series variant --facet np --where "call=$c" --logx
          --title "$c: average per call, median of the repetitions"
          -o "$OUT/$c-avg_us.png")
    if [ "${MPI_CALLS_PLOTS:-1}" = 0 ]; then
        echo "plot: ${plot[*]}"
    else
        "${plot[@]}" || failed=1
    fi
done
exit $failed
