#!/bin/bash
#
# Many-to-one floods (issue 16): 3 (or more) Open MPI ranks stream messages
# of 64 B to 64 KB at rank 0 at once, which pre-posts ANY_SOURCE receives
# and checks every byte (contrib/bench/mpi_incast.c), in the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/bench/incast.sh [-r REPS] [-n NP] [-i ITERS]
#
# srqud, ud_verbs and rc_verbs in one run, repetitions interleaved (rep ->
# transport). Per size the median aggregate goodput at the receiver and its
# spread, srqud/rc_verbs, and what the fabric did about it: srqud's resent
# packets and drops (all ranks' counters), and rxe's own counters (RC's
# retries, duplicate requests, RNR). NP ranks on 2 vCPUs are oversubscribed
# above 2; the table says so. Table on stdout, CSV in
# $SRQUD_BUILD/bench/incast.csv.
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
CSV=$B/incast.csv
echo "rep,tl,np,size,MBs,msgs_s,retransmits,held,reorder_dropped,rxe_counters,rc" > "$CSV"
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

run() {   # run REP TL UCX_TLS [VAR=VALUE...]
    local rep=$1 tl=$2 tls=$3 out err rc c0 c1 stats
    shift 3
    err=$(mktemp)
    c0=$(rxe_counters)
    out=$(bench_ompi 900 "$NP" "$tls" UCX_SRQUD_STATS_DUMP=y "$@" -- \
              "$B/mpi_incast" -i "$ITERS" 2> "$err")
    rc=$?
    c1=$(rxe_counters)
    stats=$(srqud_counters "$err" retransmits held reorder_dropped)
    [ $rc = 0 ] || tail -5 "$err" >&2
    rm -f "$err"
    echo "$out" | awk -v p="$rep,$tl,$NP" -v s="$stats" -v c="$((c1 - c0))" -v rc="$rc" \
        'NR > 1 && NF == 3 {print p "," $1 "," $2 "," $3 "," s "," c "," rc}' >> "$CSV"
    echo "  rep $rep $tl: $(echo "$out" | awk 'NR > 1 && NF == 3 {printf "%s:%s ", $1, $2}')MB/s, srqud resent/held/dropped $stats, rxe counters +$((c1 - c0))$([ $rc = 0 ] || echo ", exit $rc")"
}

t0=$SECONDS
for rep in $(seq 1 "$REPS"); do
    echo "== rep $rep/$REPS, $((SECONDS - t0)) s so far" >&2
    run "$rep" srqud srqud,self
    run "$rep" ud_verbs ud_verbs,self UCX_IB_GID_INDEX=2
    run "$rep" rc_verbs rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=2
done

/usr/bin/python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
tls = ['srqud', 'ud_verbs', 'rc_verbs']
sizes = sorted({int(r['size']) for r in rows})
def vals(tl, size):
    return [float(r['MBs']) for r in rows
            if r['tl'] == tl and int(r['size']) == size and r['rc'] == '0']
print('\naggregate goodput at the receiver, MB/s: median (min..max)')
print('%8s' % 'size' + ''.join('%24s' % t for t in tls) + '%14s' % 'srqud/rc')
for s in sizes:
    line, med = '%8d' % s, {}
    for t in tls:
        v = vals(t, s)
        if v:
            med[t] = statistics.median(v)
            line += '%24s' % ('%.1f (%.1f..%.1f)' % (med[t], min(v), max(v)))
        else:
            line += '%24s' % 'failed'
    if 'srqud' in med and 'rc_verbs' in med:
        line += '%14.2f' % (med['srqud'] / med['rc_verbs'])
    print(line)
for t in tls:
    rs = {(r['rep']): r for r in rows if r['tl'] == t}
    print('%-9s per run: srqud resent %s, held %s, dropped %s; rxe counters %s' % (
        t, sum(int(r['retransmits']) for r in rs.values()),
        sum(int(r['held']) for r in rs.values()),
        sum(int(r['reorder_dropped']) for r in rs.values()),
        ' '.join(r['rxe_counters'] for r in rs.values())))
PY
