#!/bin/bash
#
# Small-message MPI calls over srqud, ud_verbs and rc_verbs, every call
# timed alone (contrib/bench/mpi_calls.c): the average, the median, the
# 99th percentile and the slow calls of ping-pong, Sendrecv, Alltoall,
# Allgather, Allreduce and Bcast, in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run --timeout 5400 -- contrib/bench/mpi-calls.sh \
#       [-r REPS] [-p NPS] [-m MPIS] [-t VARIANTS] [-c CALLS] [-s SIZES]
#       [-n ITERS] [-N ITERS_OVER] [-I IMB_ITERS] [-X "MPI:NP..."] [-o NAME]
#       [-W WARM_ITERS] [-b BASE_MODULE]
#
# REPS repetitions (default 3); in each, every MPI (ompi: Open MPI 4.1 with
# pml ucx; mpich: MPICH 4.0 ch4:ucx), rank count (NPS, default "2 4") and
# variant (default "srqud ud_verbs rc_verbs") runs once in turn, their
# order rotated every repetition, so a slow phase of the machine falls on
# all of them alike. A variant is a
# transport, optionally with a suffix and settings for its ranks:
# srqud-tick+UCX_SRQUD_ASYNC_TICK=100ms is srqud with that variable.
# Ping-pong runs at 2 ranks only (the others would only wait). ITERS calls
# per size (default 10000), ITERS_OVER where the ranks exceed the cores
# (default 1000: MPICH's ranks spin without yielding, and a call there
# costs milliseconds whatever the transport), SIZES default 8,1K,4K.
#
# -I IMB_ITERS: each run is followed, with the same ranks and settings, by
# Intel's MPI Benchmarks (IMB-MPI1 of contrib/bench/build-imb.sh) on the
# same calls and sizes, IMB_ITERS repetitions each (at most ITERS_OVER
# where the ranks exceed the cores), -iter_policy off: the suite's own
# t_avg (PingPong: t) beside the figures of mpi_calls, in tables of their
# own and rows "imb_CALL" of the CSV. IMB gives no percentiles.
#
# -c burst (mpi_calls.c: 8 sends, then the sender computes 5 ms without
# an MPI call) shows a send held for the sender's next call; with -n 200.
# -o NAME: results in $SRQUD_BUILD/bench/NAME (default mpi-calls).
# MPI_CALLS_PLOTS=0: no plots (each takes about a minute in the VM); the
# commands to make them on the host are printed.
#
# -W: before the repetitions each MPI, rank count and variant runs once
# with WARM_ITERS calls a cell (default 500; 0: none), its figures
# dropped: the VM translates code the first time a run takes it, and the
# first run of each would otherwise carry that in its slow calls (1-3 ms
# each; common.sh, which also turns address-space randomisation off in
# the VM so that translations serve later runs).
#
# -b BASE_MODULE: a variant srqud-base more, srqud with that build of its
# module (e.g. the commit before a change; common.sh, bench_base_lib).
#
# -X skips those MPI and rank count pairs (e.g. "mpich:8": MPICH's 8 ranks
# on 2 cores take 10 minutes a repetition; with -I, "mpich:4" takes 20,
# IMB's 6 minutes a transport).
#
# Each repetition also measures the machine and the device alone. The
# machine: cpu_pauses (contrib/bench/cpu_pauses.c) times as many units of
# 100 us of computation as the ranks time calls; a unit above 10x its
# median is a pause no transport causes. The device, with plain verbs:
# srqud_rawperf's UD and RC ping-pong (median half round trip), and at
# each rank count srqud_rawexch's Sendrecv, Alltoall, Bcast and (at 2^k
# ranks) recursive doubling over UD
# and over RC QPs, each message with a transport's header (a 4 KB one is
# two UD packets, posted together as srqud does; EXCH_MSG_PKTS=1 in the
# environment posts each alone, as ud_verbs does; every call timed, the
# ranks yielding the core when they exceed it, as Open MPI's do; spinning
# otherwise). Their ratio is what
# UD itself costs over RC on this device; srqud cannot be faster than
# that allows. The "UD bound" of a call is rc_verbs' time (the median
# over the repetitions) times the device's ratio at its rank count and
# size: Alltoall's for
# Alltoall, Bcast's for Bcast (a binary tree: Open MPI's below 64 B at 4
# to 15 ranks and up to 2 KB at 4 to 7, MPICH's binomial tree's shape up
# to 4 ranks; an approximation in the other cells), the recursive
# doubling's for Allgather and Allreduce (both MPIs' steps there at 4 and
# 8 ranks; Sendrecv's at other rank counts), Sendrecv's for Sendrecv, the
# ping-pong's for the ping-pong: the median
# over the repetitions of the ratio of the device's UD and RC averages in
# each (run back to back there), for the average and the p99 alike (the
# p99 of one exchange is noisy).
#
# Output: a table per MPI and rank count with, per call and size, each
# variant's median over the repetitions of the average and of the p99 (the
# smallest and largest repetition in brackets), srqud's ratios to rc_verbs
# and ud_verbs and to the UD bound; CSV of every repetition in
# $SRQUD_BUILD/bench/mpi-calls/calls.csv, the medians in summary.csv, the
# table in table.txt, PNGs of the averages and p99 at 8 B against the rank
# count, per call; per rank count the calls above 10x their median per
# 10,000 timed calls, each variant's beside the device exchanges' and the
# CPU's alone (contrib/bench/mpi_calls_table.py makes the tables from a
# calls.csv). The first lines say the load and whether the ranks exceed
# the cores. Exit status 1 if a run failed or a byte arrived wrong.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=3
NPS="2 4"
MPIS="ompi mpich"
VARIANTS="srqud ud_verbs rc_verbs"
CALLS=pingpong,sendrecv,alltoall,allgather,allreduce,bcast
SIZES=8,1K,4K
ITERS=10000
ITERS_OVER=1000
IMB=0
SKIP=
NAME=mpi-calls
WARM_ITERS=500
BASE=
bench_getopts "r:REPS p:NPS m:MPIS t:VARIANTS c:CALLS s:SIZES n:ITERS N:ITERS_OVER I:IMB X:SKIP o:NAME W:WARM_ITERS b:BASE" "$@"
bench_require_dev
RAW=$SRQUD_BUILD/obj/src/tools/srqud_rawperf
EXCH=$SRQUD_BUILD/obj/src/tools/srqud_rawexch
PAUSES=$RESULTS/cpu_pauses
# the raw exchange's header per message: UCP's tag (8 B) and at least as
# much of a transport's own, so that a 4 KB MPI message is two UD packets
# there as for srqud and ud_verbs (4 KB MTU)
EXCH_HDR=16
# and a message's UD packets to a doorbell: as srqud posts them
# (UCX_SRQUD_AM_PACKETS, auto: 2 on Soft-RoCE); ud_verbs posts each alone,
# which EXCH_MSG_PKTS=1 measures
EXCH_MSG_PKTS=${EXCH_MSG_PKTS:-2}
OUT=$RESULTS/$NAME
mkdir -p "$OUT"
CSV=$OUT/calls.csv
bench_mpi_cc "$ROOT/contrib/bench/mpi_calls.c" "$OUT/mpi_calls" "$MPIS" || exit
make -s -C "$ROOT/contrib/bench" B="$RESULTS" "$PAUSES" >/dev/null || exit 1
bench_base_option "$BASE" "$OUT/base-lib" || exit
if [ "$IMB" != 0 ]; then
    IMBDIR=$("$ROOT/contrib/bench/build-imb.sh" | tail -n 1) || exit 1
    # IMB's sizes: a file of lengths, one per line
    echo "$SIZES" | tr , '\n' | sed 's/[kK]$/*1024/' | bc > "$OUT/imb-sizes"
fi
bench_ranks_on_cores "$NPS"

# device REP: srqud_rawperf's UD and RC ping-pong, rows "device" in the CSV
# (call ud_lat / rc_lat, the median half round trip as p50 and average),
# and srqud_rawexch's exchanges at each rank count (calls ud_sendrecv,
# rc_alltoall, ...: the same columns as mpi_calls)
device() {
    local rep=$1 t c np out iters spin yield order calls
    # UD and RC back to back, which first alternating between repetitions:
    # the machine's speed drifts by up to 2x within a minute
    # (docs/notes/mpi-small-messages.md), and the bound is their ratio
    order="ud rc"
    [ $((rep % 2)) = 0 ] && order="rc ud"
    for t in $order; do
        t=${t}_lat
        if ! out=$(timeout 300 "$RAW" -d "$BENCH_DEV" -t "$t" -s 8 -n 5000 -C 2>&1); then
            echo "srqud_rawperf -t $t: failed: $(echo "$out" | tail -n 2)" >&2
            return 1
        fi
        echo "$out" | awk -F, -v p="$rep,raw,2,device,$t" \
            '$1 ~ /_lat$/ { print p "," $2 "," $13 "," $13 ",,,," }' >> "$CSV"
    done
    for np in $NPS; do
        if [ "$np" -gt 16 ]; then
            echo "srqud_rawexch runs at most 16 ranks: no UD bound at $np" >&2
            continue
        fi
        # srqud_rawexch -Y spins, cpu_pauses -Y yields: as the ranks do
        iters=$ITERS spin=-Y yield=
        [ "$np" -gt "$(nproc)" ] && iters=$ITERS_OVER spin='' yield=-Y
        # the machine's own pauses: as many units of 100 us of computation
        # as the ranks time calls; a row "cpu", size 100, the median as
        # the average
        # shellcheck disable=SC2086 # yield: no word or one
        if ! out=$(timeout 900 "$PAUSES" -p "$np" -n "$iters" -w 100 $yield 2>&1); then
            echo "cpu_pauses -p $np: failed: $(echo "$out" | tail -n 2)" >&2
            return 1
        fi
        echo "$out" | awk -v p="$rep,raw,$np,device,cpu,100" \
            '$1 == "all" { printf "%s,%s,%s,%s,%s,%s,%s\n", p, $3, $3, $4, $5, $6, $7 }' \
            >> "$CSV"
        # the exchanges likewise, call by call
        calls="sendrecv alltoall bcast"
        [ $((np & (np - 1))) = 0 ] && calls="$calls rdbl"
        for c in $calls; do
            for t in $order; do
                # shellcheck disable=SC2086 # spin: no word or one
                if ! out=$(timeout 900 "$EXCH" -d "$BENCH_DEV" -t $t -N "$np" -s "$SIZES" \
                           -c "$c" -H "$EXCH_HDR" -M "$EXCH_MSG_PKTS" -n "$iters" \
                           $spin -T 800 2>&1); then
                    echo "srqud_rawexch -t $t -N $np -c $c: failed: $(echo "$out" | tail -n 2)" >&2
                    return 1
                fi
                echo "$out" | awk -v p="$rep,raw,$np,device" -v t="$t" \
                    'NF == 8 && $2 ~ /^[0-9]+$/ { $1 = t "_" $1; $1 = $1; gsub(/ /, ",");
                                                  print p "," $0 }' >> "$CSV"
            done
        done
    done
    echo "== rep $rep device: done" >&2
}

# one VARIANT MPI NP REP: one run; its lines into the CSV. REP 0: the
# warm-up, WARM_ITERS calls a cell, its figures dropped
one() {
    local v=$1 m=$2 np=$3 rep=$4 name tl tls calls out rc t0 iters=$ITERS
    local -a envs
    name=${v%%+*}
    tl=$(bench_tl "$name")
    read -ra envs <<< "$(bench_variant_env "$v") $(bench_base_env "$v" "$OUT/base-lib")"
    tls=$(bench_ucx_tls "$tl")
    [[ " $SKIP " == *" $m:$np "* ]] && return 0
    calls=$CALLS
    [ "$np" -gt 2 ] && calls=$(echo ",$CALLS," | sed 's/,pingpong,/,/; s/^,//; s/,$//')
    [ -n "$calls" ] || return 0
    [ "$np" -gt "$(nproc)" ] && iters=$ITERS_OVER
    [ "$rep" = 0 ] && iters=$(( WARM_ITERS < iters ? WARM_ITERS : iters ))
    t0=$SECONDS
    if [ "$m" = ompi ]; then
        out=$(bench_ompi 1800 "$np" "$tls" "${envs[@]}" -- \
              "$OUT/mpi_calls.$m" -c "$calls" -s "$SIZES" -n "$iters" 2>&1)
    else
        out=$(bench_mpich 1800 "$np" "$tls" "${envs[@]}" -- \
              "$OUT/mpi_calls.$m" -c "$calls" -s "$SIZES" -n "$iters" 2>&1)
    fi
    rc=$?
    echo "== rep $rep $m np=$np $name: exit $rc, $((SECONDS - t0)) s" >&2
    if [ $rc != 0 ]; then
        echo "$out" | tail -20 >&2
        return 1
    fi
    [ "$rep" != 0 ] || return 0
    echo "$out" | awk -v p="$rep,$m,$np,$name" \
        'NF == 8 && $2 ~ /^[0-9]+$/ { $1 = $1; gsub(/ /, ","); print p "," $0 }' >> "$CSV"
    [ "$IMB" != 0 ] || return 0
    imb "$m" "$np" "$tls" "$(imb_names "$calls")" "$iters" "$rep,$m,$np,$name" \
        "${envs[@]}"
}

# imb_names CALLS: IMB's names of the calls
imb_names() {
    echo "$1" | tr , '\n' | sed 's/^pingpong$/PingPong/; s/^sendrecv$/Sendrecv/;
        s/^alltoall$/Alltoall/; s/^allgather$/Allgather/; s/^allreduce$/Allreduce/;
        s/^bcast$/Bcast/' | tr '\n' ' '
}

# imb MPI NP TLS NAMES ITERS PREFIX [VAR=VALUE...]: IMB-MPI1 with the same
# ranks and settings; rows PREFIX,imb_CALL,SIZE,t_avg,,,,, into the CSV
imb() {
    local m=$1 np=$2 tls=$3 names=$4 n=$5 prefix=$6 out rc t0=$SECONDS
    shift 6
    [ "$n" -le "$IMB" ] || n=$IMB
    # shellcheck disable=SC2086 # the names are words
    set -- "$@" -- "$IMBDIR/IMB-MPI1.$m" -npmin "$np" -iter "$n" -iter_policy off \
        -time 100000 -msglen "$OUT/imb-sizes" -zero_size off $names
    if [ "$m" = ompi ]; then
        out=$(bench_ompi 1800 "$np" "$tls" "$@" 2>&1)
    else
        out=$(bench_mpich 1800 "$np" "$tls" "$@" 2>&1)
    fi
    rc=$?
    echo "== ${prefix//,/ } IMB: exit $rc, $((SECONDS - t0)) s" >&2
    if [ $rc != 0 ]; then
        echo "$out" | tail -20 >&2
        return 1
    fi
    # "# Benchmarking NAME", then "#bytes #repetitions ... t_avg[usec]"
    # rows (PingPong: t[usec] third)
    echo "$out" | awk -v p="$prefix" '
        /^# Benchmarking / { call = "imb_" tolower($3); next }
        /^#/ || call == "" { next }
        NF >= 3 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {
            t = (call == "imb_pingpong") ? $3 : (call == "imb_sendrecv") ? $5 : $NF
            printf "%s,%s,%s,%s,,,,,\n", p, call, $1, t
        }' >> "$CSV"
}

echo "rep,mpi,np,variant,call,size,avg_us,p50_us,p99_us,max_us,slow10x,over1ms" > "$CSV"
rc=0
t0=$SECONDS
read -ra VS <<< "$VARIANTS"

# runs REP: every MPI, rank count and variant once (one); the variants'
# order rotates with REP, so that none always runs first after the device
runs() {
    local rep=$1 m np v k=$(( ($1 + ${#VS[@]} - 1) % ${#VS[@]} )) status=0
    for m in $MPIS; do
        for np in $NPS; do
            for v in "${VS[@]:$k}" "${VS[@]:0:$k}"; do
                one "$v" "$m" "$np" "$rep" || status=1
            done
        done
    done
    return $status
}

# The warm-up (REP 0) before the repetitions, so that none pays in its
# first repetition for the code the VM translates the first time a run
# takes it (common.sh)
if [ "$WARM_ITERS" -gt 0 ]; then
    runs 0 || rc=1
    echo "== warm-up done, $(( (SECONDS - t0) / 60 )) min" >&2
fi
for rep in $(seq "$REPS"); do
    device "$rep" || rc=1
    runs "$rep" || rc=1
    echo "== repetition $rep of $REPS done, $(( (SECONDS - t0) / 60 )) min" >&2
done

"$ROOT/contrib/bench/mpi_calls_table.py" "$CSV" "$OUT/summary.csv" --iters "$ITERS" \
    --iters-over "$ITERS_OVER" --cores "$(nproc)" | tee "$OUT/table.txt"
# the plots: mpi_calls' own rows (IMB gives no p99), at each size against
# the rank count; MPI_CALLS_PLOTS=0 leaves them (about a minute each under
# TCG) to the host, their commands printed
awk -F, 'NR == 1 || $4 !~ /^imb_/' "$OUT/summary.csv" > "$OUT/summary-calls.csv"
if [ "${MPI_CALLS_PLOTS:-1}" = 0 ]; then
    plot() { echo "plot on the host: $(printf '%q ' "$@")"; }
else
    plot() { "$@" >/dev/null; }
fi
for size in ${SIZES//,/ }; do
    bytes=${size%[kK]}
    [ "$bytes" = "$size" ] || bytes=$((bytes * 1024))
    label=${size^^}; [ "$bytes" = "$size" ] && label="$size B"
    for m in $MPIS; do
        for col in avg_us p99_us; do
            plot "$ROOT/contrib/bench/plot.py" "$OUT/summary-calls.csv" --x np --y "$col" \
                --series variant --facet call --where mpi="$m" --where size="$bytes" --logy \
                --title "MPI calls, $m, $label, $col (median of repetitions)" \
                -o "$OUT/$m-${label// /}-$col.png" || rc=1
        done
    done
done
echo "csv: $CSV"
exit $rc
