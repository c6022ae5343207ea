#!/bin/bash
#
# Where the time of srqud's data path goes, beside UCX's ud_verbs and
# rc_verbs and the ceiling of the device (raw verbs), in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run --timeout 2400 -- contrib/bench/datapath.sh [-r REPS] [-q]
#
#   -r REPS  repetitions of every figure (default 5; -q: 3)
#   -q       the short form (about 5 minutes): 8 B message rate and
#            latency, 256 KB and 4 MB rendezvous, the ceilings, the ratios;
#            run it before and after a change to the data path
#
# 1. The ceiling: src/tools/srqud_rawperf, plain verbs on rxe0 at the same
#    MTU: UD sends of 8 B and of an MTU, one work request per post and
#    every one signaled (what a transport that posts alone pays), one
#    signaled in 64 (what selective signaling alone saves), and postlists
#    of 32 with one signaled in 64 (what batching saves); UD ping-pong;
#    RC RDMA writes of 256 KB and 4 MB.
# 2. The costs (not with -q): UCP tag_bw of 8 B (20000 messages) and of
#    4 MB (20) per transport with both sides under strace -f -c: system
#    calls per message on each side, by call (on rxe every ibv_post_send is
#    a write() to the uverbs device; receives and polling are not system
#    calls, its queues are mapped into the process).
# 3. The figures, REPS interleaved repetitions (each repetition runs every
#    transport once, the order rotating), median and min..max, with
#    srqud-1 (srqud posting every send alone, UCX_SRQUD_TX_BATCH=1) beside
#    srqud for the 8 B figures: UCT am_bw
#    8 B, UCP tag_bw 8 B, UCP put_bw 8 B, UCP tag_lat 8 B, UCP tag_bw
#    256 KB / 1 MB / 4 MB (rendezvous), and Open MPI uni- and bi-directional
#    bandwidth of 4 MB (contrib/bench/mpi_bw.c, data checked).
#
# Tables on stdout; CSV in $SRQUD_BUILD/bench/datapath.csv (figure, tl, rep,
# value), datapath-raw.csv, datapath-costs.csv; PNG datapath.png. Two
# processes (or one forked pair) on the VM's 2 vCPUs: not oversubscribed,
# but the VM emulates every instruction (TCG): compare ratios in one run.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=
QUICK=0
while getopts "r:q" c; do
    case $c in
    r) REPS=$OPTARG ;;
    q) QUICK=1 ;;
    *) bench_usage; exit 2 ;;
    esac
done
[ -n "$REPS" ] || REPS=$([ $QUICK = 1 ] && echo 3 || echo 5)
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "-r: not a number: $REPS" >&2; exit 2; }
RAW=$SRQUD_BUILD/obj/src/tools/srqud_rawperf
[ -x "$RAW" ] || { echo "$RAW not built (contrib/build.sh)" >&2; exit 1; }
bench_require_dev
TLS="srqud ud_verbs rc_verbs srqud-1"   # srqud-1: 8 B figures only
CSV=$RESULTS/datapath.csv
RAWCSV=$RESULTS/datapath-raw.csv
COSTCSV=$RESULTS/datapath-costs.csv
MTU=$(ibv_devinfo -d "${BENCH_DEV%%:*}" | awk '/active_mtu/ {print $2; exit}')
T0=$SECONDS
rc=0

progress() {   # what, how far, how long
    echo "   [$((SECONDS - T0)) s] $*" >&2
}

# ---- 1. the ceiling --------------------------------------------------------
echo "== 1. the device's ceiling (raw verbs on $BENCH_DEV, active MTU $MTU B)"
echo "mode,size,iters,postlist,signal_every,seconds,MBps,Mmsgps,post_send_calls,post_recv_calls,send_completions,recv_completions,half_rtt_us" > "$RAWCSV"
raw() {   # raw ARGS...: one CSV line of srqud_rawperf into $RAWCSV
    local out
    if out=$(timeout 300 "$RAW" -C -d "$BENCH_DEV" "$@" 2>&1); then
        echo "$out" | grep -E '^(ud|rc)_' | tail -n 1 >> "$RAWCSV"
    else
        echo "srqud_rawperf $*: failed: $(echo "$out" | tail -n 2)" >&2
        rc=1
    fi
}
for rep in $(seq 1 "$REPS"); do
    raw -t ud_bw -s 8 -p 1 -c 1 -n 20000
    raw -t ud_bw -s 8 -p 1 -c 64 -n 20000
    raw -t ud_bw -s 8 -p 32 -c 64 -n 20000
    raw -t ud_bw -s "$MTU" -p 1 -c 1 -n 5000
    raw -t ud_bw -s "$MTU" -p 1 -c 64 -n 5000
    raw -t ud_bw -s "$MTU" -p 32 -c 64 -n 5000
    raw -t ud_lat -s 8 -n 2000
    raw -t rc_write_bw -s 262144 -n 200
    raw -t rc_write_bw -s 4194304 -n 20
    progress "ceiling: repetition $rep of $REPS"
done
awk -F, "$BENCH_MEDIAN_AWK"'
    NR > 1 {
        k = $1 " " $2 " B, postlist " $4 ", signal every " $5
        v = ($1 == "ud_lat") ? $13 : $7
        n[k]++; s[k, n[k]] = v; if (!(k in order)) { order[k] = ++m; key[m] = k }
        r[k] = $1; msg[k] = (n[k] == 1 ? 0 : msg[k]) + $8
    }
    END {
        printf "%-44s %12s %18s %9s\n", "raw verbs", "median", "min..max", "Mmsg/s"
        for (i = 1; i <= m; ++i) {
            k = key[i]; c = n[k]
            split("", x)
            for (a = 1; a <= c; ++a) x[a] = s[k, a]
            med  = median(x, c)
            unit = (r[k] == "ud_lat") ? "us" : "MB/s"
            printf "%-44s %7.2f %-4s %8.2f..%-8.2f %9.3f\n", k, med, unit, LO, HI, msg[k] / c
        }
    }' "$RAWCSV"
echo

# ---- 2. the costs ----------------------------------------------------------
if [ $QUICK = 0 ]; then
    echo "== 2. system calls per message (strace -f -c on both sides)"
    echo "tl,size,messages,side,syscall,calls" > "$COSTCSV"
    for tl in srqud ud_verbs rc_verbs; do
        for spec in "8 20000" "4194304 20"; do
            read -r size n <<< "$spec"
            d=$(mktemp -d)
            PERFTEST_SERVER_WRAP="strace -f -c -o $d/server" PERFTEST_CLIENT_WRAP="strace -f -c -o $d/client" \
                PERFTEST_TIMEOUT=600 bench_perftest "$tl" tag_bw "$size" ucp "$n" >/dev/null || rc=1
            for side in client server; do
                # strace -c: % time, seconds, usecs/call, calls, errors, syscall
                awk -v tl="$tl" -v size="$size" -v n="$n" -v side="$side" '
                    $1 ~ /^[0-9.]+$/ && NF >= 5 { print tl "," size "," n "," side "," $NF "," $4 }' \
                    "$d/$side" >> "$COSTCSV" 2>/dev/null
            done
            rm -rf "$d"
            progress "costs: $tl $size B"
        done
    done
    awk -F, 'NR > 1 {
            k = $1 " " ($2 == 8 ? "8 B" : "4 MB") " " $4
            tot[k] += $6; n[k] = $3
            if ($5 == "write") w[k] = $6
            if ($5 == "ioctl") io[k] = $6
            if (!(k in seen)) { seen[k] = 1; key[++m] = k }
        }
        END {
            printf "%-30s %14s %14s %14s\n", "tl, tag_bw size, side", "syscalls/msg", "write/msg", "ioctl/msg"
            for (i = 1; i <= m; ++i) { k = key[i]
                printf "%-30s %14.2f %14.2f %14.2f\n", k, tot[k] / n[k], w[k] / n[k], io[k] / n[k] }
        }' "$COSTCSV"
    echo "(whole runs, wire-up and warm-up included; write = a verbs command on rxe: a post_send's doorbell)"
    echo
fi

# ---- 3. the figures --------------------------------------------------------
echo "== 3. message rate, latency, rendezvous: $REPS interleaved repetitions"
B=$RESULTS
if [ ! -x "$B/mpi_bw" ] || [ "$ROOT/contrib/bench/mpi_bw.c" -nt "$B/mpi_bw" ]; then
    mpicc.openmpi -O2 -Wall -o "$B/mpi_bw" "$ROOT/contrib/bench/mpi_bw.c" || exit 1
fi
echo "figure,tl,rep,value" > "$CSV"
FIGS=("uct am_bw 8 msgrate" "ucp tag_bw 8 msgrate" "ucp ucp_put_bw 8 msgrate"
      "ucp tag_lat 8 lat" "ucp tag_bw 262144 bw" "ucp tag_bw 4194304 bw")
[ $QUICK = 0 ] && FIGS+=("ucp tag_bw 1048576 bw" "mpi uni 4194304 bw" "mpi bi 4194304 bw")
iters() {   # enough for about a second or two in the VM
    case $1 in
    8) echo 20000 ;; 262144) echo 100 ;; 1048576) echo 40 ;; *) echo 20 ;;
    esac
}
mpi_fig() {   # mpi_fig TL uni|bi SIZE: MB/s of mpi_bw at SIZE
    local tls out
    tls=$(bench_ucx_tls "$1")
    # shellcheck disable=SC2046
    out=$(bench_ompi 600 2 "$tls" $(bench_tl_env "$1") -- "$B/mpi_bw" -m "$3" -M "$3" -i 10 2>&1) ||
        { echo FAIL; return 1; }
    echo "$out" | awk -v s="$3" -v c=$([ "$2" = uni ] && echo 3 || echo 4) '$1 == s { print $c }'
}
read -r -a TLA <<< "$TLS"
for rep in $(seq 1 "$REPS"); do
    # rotate the order: no transport always runs first (or last) after another
    k=$(((rep - 1) % ${#TLA[@]}))
    order=("${TLA[@]:$k}" "${TLA[@]:0:$k}")
    for fig in "${FIGS[@]}"; do
        read -r layer test size what <<< "$fig"
        for tl in "${order[@]}"; do
            [ "$tl" = srqud-1 ] && [ "$size" != 8 ] && continue
            if [ "$layer" = mpi ]; then
                v=$(mpi_fig "$tl" "$test" "$size")
            else
                r=$(bench_perftest "$tl" "$test" "$size" "$layer" "$(iters "$size")")
                case $what in
                msgrate) v=$(echo "$r" | awk '$1 != "FAIL" {print $4}') ;;
                lat)     v=$(echo "$r" | awk '$1 != "FAIL" {print $1}') ;;
                bw)      v=$(echo "$r" | awk '$1 != "FAIL" {print $3}') ;;
                esac
            fi
            if [ -z "$v" ] || [ "$v" = FAIL ]; then
                v=FAIL; rc=1
            fi
            echo "$layer $test $size,$tl,$rep,$v" >> "$CSV"
        done
    done
    progress "figures: repetition $rep of $REPS"
done

# median, min..max, and the ratios the issue's goals are stated in
awk -F, -v tls="$TLS" "$BENCH_MEDIAN_AWK"'
    NR > 1 && $4 != "FAIL" {
        n[$1, $2]++; v[$1, $2, n[$1, $2]] = $4
        if (!($1 in seen)) { seen[$1] = 1; fig[++m] = $1 }
    }
    function med(f, t,    c, a, x) {
        c = n[f, t]; if (c == 0) return -1
        for (a = 1; a <= c; ++a) x[a] = v[f, t, a]
        return median(x, c)
    }
    END {
        nt = split(tls, t, " ")
        printf "%-26s", "figure"
        for (i = 1; i <= nt; ++i) printf " %26s", t[i] " median (min..max)"
        printf " %9s %9s %9s\n", "srqud/ud", "srqud/rc", "srqud/-1"
        for (j = 1; j <= m; ++j) {
            f = fig[j]; split(f, p, " ")
            unit = (p[2] ~ /lat/) ? "us" : ((p[1] != "mpi" && p[3] == 8) ? "msg/s" : "MB/s")
            printf "%-26s", f " " unit
            for (i = 1; i <= nt; ++i) {
                x = med(f, t[i]); mm[i] = x
                if (x < 0) printf " %26s", (t[i] == "srqud-1" && p[3] != 8) ? "-" : "FAIL"
                else printf " %26s", sprintf("%.4g (%.4g..%.4g)", x, LO, HI)
            }
            if (mm[1] > 0 && mm[2] > 0 && mm[3] > 0) printf " %9.2f %9.2f", mm[1] / mm[2], mm[1] / mm[3]
            if (mm[1] > 0 && mm[4] > 0) printf " %9.2f", mm[1] / mm[4]
            printf "\n"
        }
    }' "$CSV"
echo "msg/s: ucx_perftest overall message rate; us: median half round trip; MB/s: 2^20 bytes/s over the timed run"
echo "lat rows: lower is better (a ratio below 1 favours srqud); srqud/-1: srqud against itself posting every send alone"
echo "CSV: $CSV, $RAWCSV"
[ $QUICK = 0 ] && echo "costs: $COSTCSV"
if command -v python3 >/dev/null && python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$ROOT/contrib/bench/plot.py" "$CSV" --x rep --y value --series tl --facet figure \
        -o "$RESULTS/datapath.png" >/dev/null 2>&1 && echo "PNG: $RESULTS/datapath.png"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) vCPUs, $((SECONDS - T0)) s"
exit $rc
