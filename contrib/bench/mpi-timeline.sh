#!/bin/bash
#
# Where a small MPI message waits: a timeline of every doorbell, every
# completion, every message a rank takes and every scheduler switch, from
# the guest kernel's tracer, for srqud beside ud_verbs and rc_verbs. In
# the Soft-RoCE VM (root, tracefs, kprobes on rdma_rxe):
#
#   contrib/softroce/vm-run -- contrib/bench/mpi-timeline.sh [-p NPS]
#       [-m MPIS] [-c CALLS] [-s SIZE] [-n ITERS] [-W WARM] [-t VARIANTS]
#       [-r REPS] [-o NAME]
#
# Defaults: 2 and 4 ranks, Open MPI, sendrecv and allgather
# (contrib/bench/mpi_calls.c), 8 B, 300 timed calls after 100 of warm-up,
# srqud, ud_verbs and rc_verbs (variants as in mpi-calls.sh:
# srqud-x+UCX_SRQUD_VAR=VALUE). Each variant runs WARM times untraced
# (default 1: the emulator translates code the first time a run takes
# it), then REPS times traced (default 1), the variants in turn, their
# order rotated each repetition (the emulated machine changes speed by
# up to 2x within minutes: compare repetitions' medians).
#
# Traced: kprobes on rdma_rxe's rxe_post_send (a doorbell),
# rxe_cq_post (a completion and its opcode) and rxe_create_cq (which
# process owns a CQ), a uprobe on UCP's ucp_eager_only_handler (the rank
# takes a message; UCP of $SRQUD_BUILD/ucx), sched_switch, sched_wakeup
# and the softirqs, with the monotonic clock. contrib/bench/mpi_timeline.py
# reads each trace (over the timed phase: past the ranks' messages of the
# check and the warm-up) and writes, per MPI, rank count, call and
# variant: the time a call, the receive completions written while their
# rank was off its core and its wait for a core then (mean, p50, p90, p99;
# of those off it, the mean), the ranks' switches while runnable a call
# (preempted or yielding) and those to ksoftirqd a doorbell, ksoftirqd's
# time a call, doorbells a message taken. Tracing slows the calls; the
# counts are what matter.
#
# With pingpong among CALLS (a message answered by a message; not in the
# defaults), more probes: a uretprobe on each transport's progress
# function, recorded where it returned with work done, a uprobe on its
# am_short, a kprobe on ib_uverbs_write (the system call of a doorbell).
# Then a second table gives, per message a rank took, median and mean of
# each hop from the peer's doorbell to the rank's answering doorbell: the
# kernel's delivery (to the receive completion), the pickup (to the rank
# taking the message), the rest of that progress call, UCP and MPI (to the
# transport's am_short), the transport's send (to its system call), the
# system call (to the doorbell); hops.csv. The probes add their own cost
# to the hops (a uretprobe's to each progress call with work); the
# "UCP+MPI" hop, the same code for every transport, shows the machine's
# phase. The probes are on for the ping-pong runs only.
#
# CALLS are run one at a time, with one SIZE each; the uprobe sees eager
# messages of one fragment, so SIZE stays below the transports' eager
# fragment (4 KB takes two on Soft-RoCE's MTU).
#
# Output in $SRQUD_BUILD/bench/NAME (default mpi-timeline, emptied
# first): the traces, a log per run, timeline.csv, hops.csv (with
# pingpong), table.txt (also
# printed) and wait-MPI-NP-CALL.png (the waits' distribution;
# MPI_TIMELINE_PLOTS=0: none). Exit status 1 if a run failed or a trace
# lost events or lacks what the table needs (every rank's messages,
# doorbells and completions); 2 for a wrong option, or where the tracer
# or its probes cannot be had (outside the VM, not root).
#
set -uo pipefail
. "$(dirname "$0")/common.sh"

NPS="2 4"
MPIS=ompi
CALLS="sendrecv allgather"
SIZE=8
ITERS=300
WARM=1
WARM_CALLS=100      # mpi_calls.c's untimed calls before the timed ones
VARIANTS="srqud ud_verbs rc_verbs"
REPS=1
NAME=mpi-timeline
bench_getopts "p:NPS m:MPIS c:CALLS s:SIZE n:ITERS W:WARM t:VARIANTS r:REPS o:NAME" "$@"
if ! [[ "$REPS" =~ ^[1-9][0-9]*$ ]]; then
    echo "mpi-timeline: -r takes a count of repetitions" >&2
    exit 2
fi

case "$CALLS $SIZE" in
*,*) echo "mpi-timeline: one size, and calls apart (-c \"sendrecv allgather\")" >&2
     exit 2 ;;
esac
labels=$(for v in $VARIANTS; do echo "${v%%+*}"; done | sort | uniq -d)
if [ -n "$labels" ]; then
    echo "mpi-timeline: variants need names of their own: $labels" \
         "(srqud-x+UCX_SRQUD_VAR=VALUE)" >&2
    exit 2
fi
OUT=$RESULTS/$NAME
rm -rf "$OUT" && mkdir -p "$OUT"
T=/sys/kernel/tracing
bench_mpi_cc "$ROOT/contrib/bench/mpi_calls.c" "$OUT/mpi_calls" "$MPIS" || exit

if ! mountpoint -q "$T" && ! mount -t tracefs nodev "$T" 2>/dev/null; then
    echo "mpi-timeline: no tracefs at $T (run it in the VM, as root)" >&2
    exit 2
fi
# file_offset LIB SYMBOL: where a uprobe on SYMBOL goes, its address less
# its segment's (nothing if LIB lacks it)
file_offset() {
    local sym type off va memsz
    sym=$(nm "$1" 2>/dev/null | awk -v s="$2" '$3 == s { print "0x" $1; exit }')
    [ -n "$sym" ] || return 0
    while read -r type off va _ _ memsz _; do
        if [ "$type" = LOAD ] && (( sym >= va && sym < va + memsz )); then
            printf '0x%x' $(( sym - va + off ))
            return 0
        fi
    done <<< "$(readelf -lW "$1" 2>/dev/null)"   # the VM has no /dev/fd
}
UCP=$(readlink -f "$SRQUD_BUILD/ucx/lib/libucp.so.0")
EAGER=$(file_offset "$UCP" ucp_eager_only_handler)
if [ -z "$EAGER" ]; then
    echo "mpi-timeline: no ucp_eager_only_handler in $UCP" >&2
    exit 2
fi
# A ping-pong's hops (a message answered by a message): each transport's
# progress call that returned with work done (a uretprobe, filtered on
# its return value) and its am_short, and the system call that rings the
# doorbell (ib_uverbs_write)
HOPS=
case " $CALLS " in *" pingpong "*) HOPS=1 ;; esac
HOP_PROBES=()
if [ -n "$HOPS" ]; then
    MODS=$SRQUD_BUILD/ucx/lib/ucx
    for p in srqud:uct_srqud:progress:uct_srqud_progress:uct_srqud_ep_am_short \
             ud_verbs:uct_ib:progress:uct_ud_verbs_iface_progress:uct_ud_verbs_ep_am_short \
             rc_verbs:uct_ib:progress:uct_rc_verbs_iface_progress:uct_rc_verbs_ep_am_short; do
        IFS=: read -r tl lib _ prog ams <<< "$p"
        used=
        for v in $VARIANTS; do
            [ "$(bench_tl "${v%%+*}")" = "$tl" ] && used=1
        done
        [ -n "$used" ] || continue    # only the variants' transports
        f=$(readlink -f "$MODS/lib$lib.so.0")
        po=$(file_offset "$f" "$prog")
        ao=$(file_offset "$f" "$ams")
        if [ -z "$po" ] || [ -z "$ao" ]; then
            echo "mpi-timeline: no $prog or $ams in $f" >&2
            exit 2
        fi
        HOP_PROBES+=("r:tl/done_$tl $f:$po ret=\$retval:s32" "p:tl/send_$tl $f:$ao")
    done
fi

EVENTS="rxe/mkcq rxe/post rxe/cqe ucp/eager sched/sched_switch sched/sched_wakeup
        irq/softirq_entry irq/softirq_exit"
# enabled for ping-pong runs only: a uretprobe on every progress call with
# work would change the other calls' figures
HOP_EVENTS="rxe/syscall tl"
# the tracer as it was, put back at the end
BUF_KB=$(cat "$T/buffer_size_kb")
TGID=$(cat "$T/options/record-tgid")
CLOCK=$(sed 's/.*\[\(.*\)\].*/\1/' "$T/trace_clock")
trace_off() {
    local e
    echo 0 > "$T/tracing_on"
    for e in $EVENTS $HOP_EVENTS; do
        [ -e "$T/events/$e/enable" ] && echo 0 > "$T/events/$e/enable"
    done
    echo > "$T/kprobe_events"
    echo > "$T/uprobe_events"
    echo > "$T/trace"
    echo "${BUF_KB%% *}" > "$T/buffer_size_kb"
    echo "$TGID" > "$T/options/record-tgid"
    echo "$CLOCK" > "$T/trace_clock"
}
trap trace_off EXIT

trace_off
# the opcode of ib_uverbs_wc / ib_wc: after the 8-byte wr_id and the status
if ! { echo 'p:rxe/mkcq rdma_rxe:rxe_create_cq cq=%di' &&
       echo 'p:rxe/post rdma_rxe:rxe_post_send qp=%di' &&
       echo 'p:rxe/cqe rdma_rxe:rxe_cq_post cq=%di op=+12(%si):u32'; } \
        >> "$T/kprobe_events" ||
   ! echo "p:ucp/eager $UCP:$EAGER" >> "$T/uprobe_events" ||
   { [ -n "$HOPS" ] &&
     ! { echo 'p:rxe/syscall ib_uverbs:ib_uverbs_write' >> "$T/kprobe_events" &&
         printf '%s\n' "${HOP_PROBES[@]}" >> "$T/uprobe_events"; }; }; then
    echo "mpi-timeline: the probes could not be set ($T/error_log):" >&2
    tail -n 3 "$T/error_log" >&2
    exit 2
fi
echo 32768 > "$T/buffer_size_kb"
echo 1 > "$T/options/record-tgid"
echo mono > "$T/trace_clock"
for e in $EVENTS; do
    echo 1 > "$T/events/$e/enable"
done
if [ -n "$HOPS" ]; then
    # only the progress calls that took or sent something
    for f in "$T"/events/tl/done_*/filter; do
        echo 'ret != 0' > "$f"
    done
fi

# common.sh printed the command line, the date and the load
echo "# settings: -p \"$NPS\" -m \"$MPIS\" -c \"$CALLS\" -s $SIZE -n $ITERS" \
     "-r $REPS -t \"$VARIANTS\"; kernel $(uname -r)"
bench_ranks_on_cores "$NPS"

# one VARIANT MPI NP CALL REP TRACE|- LOG: one run (repetition REP), its
# output into LOG; traced into TRACE unless -
one() {
    local v=$1 m=$2 np=$3 call=$4 rep=$5 trace=$6 log=$7 tl rc t0 e on=0
    local -a envs
    tl=$(bench_tl "${v%%+*}")
    read -ra envs <<< "$(bench_variant_env "$v")"
    if [ -n "$HOPS" ]; then
        [ "$call" = pingpong ] && on=1
        for e in $HOP_EVENTS; do
            echo $on > "$T/events/$e/enable"
        done
    fi
    if [ "$trace" != - ]; then
        echo > "$T/trace"
        echo 1 > "$T/tracing_on"
    fi
    t0=$SECONDS
    "bench_$m" 600 "$np" "$(bench_ucx_tls "$tl")" "${envs[@]}" -- \
        "$OUT/mpi_calls.$m" -c "$call" -s "$SIZE" -n "$ITERS" -w "$WARM_CALLS" \
        > "$log" 2>&1
    rc=$?
    echo 0 > "$T/tracing_on"
    echo "== $m np=$np $call ${v%%+*}$([ "$trace" = - ] && echo ' (warm-up)' ||
        echo " (repetition $rep of $REPS)"):" \
         "exit $rc, $((SECONDS - t0)) s" >&2
    if [ $rc -ne 0 ]; then
        tail -n 5 "$log" >&2
        return 1
    fi
    [ "$trace" = - ] || cp "$T/trace" "$trace"
}

status=0
traces=()
read -ra vs <<< "$VARIANTS"
for m in $MPIS; do
    for np in $NPS; do
        for call in $CALLS; do
            for rep in $(seq 1 "$REPS"); do
                # the order rotated each repetition: a phase of the machine
                # falls on each variant in turn
                for i in "${!vs[@]}"; do
                    v=${vs[$(( (i + rep - 1) % ${#vs[@]} ))]}
                    f=$OUT/trace-$m-$np-$call-${v%%+*}.r$rep
                    if [ "$rep" = 1 ]; then
                        for w in $(seq 1 "$WARM"); do
                            one "$v" "$m" "$np" "$call" "$rep" - "$f.warm$w.log" || status=1
                        done
                    fi
                    if one "$v" "$m" "$np" "$call" "$rep" "$f.txt" "$f.log"; then
                        traces+=("$f.txt")
                    else
                        status=1
                    fi
                done
            done
        done
    done
done
trace_off
trap - EXIT

[ ${#traces[@]} -gt 0 ] || exit 1
plots=--plots
[ "${MPI_TIMELINE_PLOTS:-1}" = 0 ] && plots=
# mpi_calls.c: a checked call and the warm-up before the timed ones
skip=$((WARM_CALLS + 1))
python3 "$ROOT/contrib/bench/mpi_timeline.py" --iters $((ITERS + skip)) --skip $skip \
    --csv "$OUT/timeline.csv" ${HOPS:+--hops-csv "$OUT/hops.csv"} $plots "$OUT" \
    "${traces[@]}" | tee "$OUT/table.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
echo "csv: $OUT/timeline.csv"
exit $status
