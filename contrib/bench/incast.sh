#!/bin/bash
#
# Many-to-one floods (issue 16): 3 (or more) senders stream messages of
# 64 B to 256 KB at one receiver, which keeps receives from any sender
# posted and checks every byte, in the Soft-RoCE VM, at two levels:
#   MPI  Open MPI ranks, rank 0 receiving (contrib/bench/mpi_incast.c)
#   UCP  forked processes on UCP alone (contrib/bench/ucp_incast.c)
#
#   contrib/softroce/vm-run -- contrib/bench/incast.sh [-r REPS] [-n NP] [-i ITERS]
#
# srqud, srqud with UCX_RNDV_THRESH=256k (the README's setting for this
# pattern on shared cores), ud_verbs and rc_verbs in one run, repetitions
# interleaved (rep -> transport -> level). Per level and size the median
# aggregate goodput at the receiver and its spread, the two srqud series'
# ratios to rc_verbs, and what the fabric did
# about it: srqud's resent packets and drops (all processes' counters), and
# rxe's own counters (RC's retries, duplicate requests, RNR). NP processes
# on 2 vCPUs are oversubscribed above 2; the table says so. Table on
# stdout, CSV in $SRQUD_BUILD/bench/incast.csv.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=5
NP=4
ITERS=200
bench_getopts "r:REPS n:NP i:ITERS" "$@"
B=$RESULTS
if [ ! -x "$B/mpi_incast" ] || [ "$ROOT/contrib/bench/mpi_incast.c" -nt "$B/mpi_incast" ]; then
    mpicc.openmpi -O2 -Wall -o "$B/mpi_incast" "$ROOT/contrib/bench/mpi_incast.c" || exit 1
fi
bench_build
CSV=$B/incast.csv
echo "rep,level,tl,np,size,MBs,msgs_s,retransmits,held,reorder_dropped,rxe_counters,rc" > "$CSV"
echo "# $NP ranks ($((NP - 1)) senders) on $(nproc) vCPUs: $([ "$NP" -gt "$(nproc)" ] && echo oversubscribed || echo not oversubscribed)"

RXE=/sys/class/infiniband/rxe0/ports/1/hw_counters
rxe_counters() {   # the counters that say the fabric struggled, summed
    local f sum=0
    for f in duplicate_request out_of_seq_request rcvd_seq_err retry_exceeded_err \
             rcvd_rnr_err send_rnr_err ack_deferred; do
        [ -r "$RXE/$f" ] && sum=$((sum + $(cat "$RXE/$f")))
    done
    echo $sum
}

# one level's run of one transport: its output lines "size MBs msgs_s" and
# stderr with srqud's counters go into the CSV
record() {   # record REP LEVEL TL RC OUT ERR C0 C1
    local rep=$1 level=$2 tl=$3 rc=$4 out=$5 err=$6 c0=$7 c1=$8 stats
    stats=$(srqud_counters "$err" retransmits held reorder_dropped)
    [ "$rc" = 0 ] || tail -5 "$err" >&2
    echo "$out" | awk -v p="$rep,$level,$tl,$NP" -v s="$stats" -v c="$((c1 - c0))" -v rc="$rc" \
        'NF == 3 && $1 ~ /^[0-9]+$/ {print p "," $1 "," $2 "," $3 "," s "," c "," rc}' >> "$CSV"
    echo "  rep $rep $level $tl: $(echo "$out" | awk 'NF == 3 && $1 ~ /^[0-9]+$/ {printf "%s:%s ", $1, $2}')MB/s, srqud resent/held/dropped $stats, rxe counters +$((c1 - c0))$([ "$rc" = 0 ] || echo ", exit $rc")"
}

run() {   # run REP TL UCX_TLS [VAR=VALUE...]
    local rep=$1 tl=$2 tls=$3 out err rc c0 c1 size
    shift 3
    err=$(mktemp)
    c0=$(rxe_counters)
    out=$(bench_ompi 900 "$NP" "$tls" UCX_SRQUD_STATS_DUMP=y "$@" -- \
              "$B/mpi_incast" -M 262144 -i "$ITERS" 2> "$err")
    rc=$?
    c1=$(rxe_counters)
    record "$rep" mpi "$tl" "$rc" "$out" "$err" "$c0" "$c1"

    # UCP: one process per sender and the receiver, a run per size
    : > "$err"
    out= rc=0
    c0=$(rxe_counters)
    for size in 64 256 1024 4096 16384 65536 262144; do
        out="$out
$(env UCX_TLS="$tls" UCX_NET_DEVICES=rxe0:1 UCX_SRQUD_STATS_DUMP=y "$@" \
      timeout 300 "$B/ucp_incast" -n $((NP - 1)) -s $size -i "$ITERS" 2>> "$err")" || rc=1
    done
    c1=$(rxe_counters)
    record "$rep" ucp "$tl" "$rc" "$out" "$err" "$c0" "$c1"
    rm -f "$err"
}

t0=$SECONDS
for rep in $(seq 1 "$REPS"); do
    echo "== rep $rep/$REPS, $((SECONDS - t0)) s so far" >&2
    run "$rep" srqud srqud,self
    # srqud as the README sets it up for many-to-one on shared cores: its
    # rendezvous (which needs the sending process scheduled) from 256 KB
    run "$rep" srqud-rndv256k srqud,self UCX_RNDV_THRESH=256k
    run "$rep" ud_verbs ud_verbs,self UCX_IB_GID_INDEX=2
    run "$rep" rc_verbs rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=2
done

/usr/bin/python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
tls = ['srqud', 'srqud-rndv256k', 'ud_verbs', 'rc_verbs']
for level in ('mpi', 'ucp'):
    lrows = [r for r in rows if r['level'] == level]
    sizes = sorted({int(r['size']) for r in lrows})
    def vals(tl, size):
        return [float(r['MBs']) for r in lrows
                if r['tl'] == tl and int(r['size']) == size and r['rc'] == '0']
    print('\n%s: aggregate goodput at the receiver, MB/s: median (min..max)'
          % level.upper())
    print('%8s' % 'size' + ''.join('%24s' % t for t in tls) +
          '%14s%14s' % ('srqud/rc', 'rndv256k/rc'))
    for s in sizes:
        line, med = '%8d' % s, {}
        for t in tls:
            v = vals(t, s)
            if v:
                med[t] = statistics.median(v)
                line += '%24s' % ('%.1f (%.1f..%.1f)' % (med[t], min(v), max(v)))
            else:
                line += '%24s' % 'failed'
        for t in ('srqud', 'srqud-rndv256k'):
            if t in med and 'rc_verbs' in med:
                line += '%14.2f' % (med[t] / med['rc_verbs'])
        print(line)
    for t in tls:
        rs = {r['rep']: r for r in lrows if r['tl'] == t}
        print('%-9s per run: srqud resent %s, held %s, dropped %s; rxe counters %s' % (
            t, sum(int(r['retransmits']) for r in rs.values()),
            sum(int(r['held']) for r in rs.values()),
            sum(int(r['reorder_dropped']) for r in rs.values()),
            ' '.join(r['rxe_counters'] for r in rs.values())))
PY
