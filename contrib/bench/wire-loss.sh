#!/bin/bash
#
# Loss on a real wire (issue 16): goodput and retransmissions of srqud's
# selective repeat beside ud_verbs and rc_verbs, across the two-host wire
# of the Soft-RoCE VM (rxeA on wA <-> rxeB on wB), netem dropping packets
# on wA's egress (the sender's data; the acknowledgements come back clean):
#
#   contrib/softroce/vm-run --wire --timeout 3600 -- contrib/bench/wire-loss.sh \
#       [-r REPS] [-n MSGS] [-s BYTES] [-l "LOSSES"] [-t "TLS"]
#
# ucx_perftest tag_bw, client (sender) on rxeA, server on rxeB, MSGS
# messages of BYTES (default 4096: eager, several MTU packets each; srqud's
# AM path); every transport the same count (goodput under loss depends on
# it: a short run may see no tail loss). Repetitions are interleaved: rep
# -> loss -> transport. Per cell the
# median goodput and its spread, the ratio to the same transport without
# loss, and for srqud the packets netem dropped against those srqud resent
# (its counters, UCX_SRQUD_STATS_DUMP). Table on stdout, CSV in
# $SRQUD_BUILD/bench/wire-loss.csv.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=5
MSGS=4000
SIZE=4096
LOSSES="0 0.1 1 5"
TLS="srqud ud_verbs rc_verbs"
bench_getopts "r:REPS n:MSGS s:SIZE l:LOSSES t:TLS" "$@"
[ "${SRQUD_WIRE:-}" = 1 ] || { echo "wire-loss.sh: run it with vm-run --wire" >&2; exit 2; }
CSV=$RESULTS/wire-loss.csv
echo "rep,tl,loss_pct,msgs,MBs,wire_drops,retransmits,fast_retransmits,timeouts,rc" > "$CSV"
echo "# ranks: one sender, one receiver process on 2 vCPUs (not oversubscribed)"

tl_env() {
    case $1 in
    srqud)    echo "UCX_TLS=srqud,self UCX_SRQUD_TIMEOUT=60s" ;;
    ud_verbs) echo "UCX_TLS=ud_verbs,self UCX_IB_GID_INDEX=0" ;;
    rc_verbs) echo "UCX_TLS=rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=0" ;;
    esac
}

wa_drops() {
    tc -s qdisc show dev wA | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -n 1
}

cell() {    # cell REP TL LOSS
    local rep=$1 tl=$2 loss=$3 out err d0 d1 mbs rc stats msgs=$MSGS
    tc qdisc del dev wA root 2>/dev/null
    if [ "$loss" != 0 ]; then
        tc qdisc add dev wA root netem loss "$loss%" || return 1
    fi
    d0=$(wa_drops); d0=${d0:-0}
    err=$(mktemp)
    # shellcheck disable=SC2046
    out=$(PERFTEST_TIMEOUT=600 \
          PERFTEST_SERVER_ENV="UCX_NET_DEVICES=rxeB:1" \
          PERFTEST_CLIENT_ENV="UCX_NET_DEVICES=rxeA:1 UCX_SRQUD_STATS_DUMP=y" \
          "$ROOT/contrib/bench/perftest-pair.sh" $(tl_env "$tl") -- \
          -t tag_bw -s "$SIZE" -n "$msgs" -w 200 2> "$err")
    rc=$?
    d1=$(wa_drops); d1=${d1:-0}
    mbs=$(echo "$out" | awk '/Final:/ {print $7}')
    # the sender's srqud counters, summed over its interfaces
    stats=$(srqud_counters "$err" retransmits fast_retransmits timeouts)
    rm -f "$err"
    echo "$rep,$tl,$loss,$msgs,${mbs:-nan},$((d1 - d0)),$stats,$rc" >> "$CSV"
    printf '  rep %s %-9s loss %4s%%: %8s MB/s, %6d dropped, resent/fast/timeouts %s%s\n' \
        "$rep" "$tl" "$loss" "${mbs:-FAILED}" $((d1 - d0)) "$stats" \
        "$([ $rc = 0 ] || echo " (exit $rc)")"
}

t0=$SECONDS
n=0; total=$((REPS * $(echo $LOSSES | wc -w) * $(echo $TLS | wc -w)))
for rep in $(seq 1 "$REPS"); do
    for loss in $LOSSES; do
        for tl in $TLS; do
            n=$((n + 1))
            echo "== cell $n/$total (rep $rep, $tl, loss $loss%), $((SECONDS - t0)) s so far" >&2
            cell "$rep" "$tl" "$loss"
        done
    done
done
tc qdisc del dev wA root 2>/dev/null

/usr/bin/python3 - "$CSV" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
tls = list(dict.fromkeys(r['tl'] for r in rows))
losses = list(dict.fromkeys(r['loss_pct'] for r in rows))
def cells(tl, loss):
    return [r for r in rows if r['tl'] == tl and r['loss_pct'] == loss]
def med(tl, loss):
    v = [float(r['MBs']) for r in cells(tl, loss) if r['rc'] == '0' and r['MBs'] != 'nan']
    return (statistics.median(v), min(v), max(v), len(v)) if v else None
print('\ngoodput, MB/s: median (min..max) [runs ok], and / the same transport without loss')
print('%-9s' % 'loss' + ''.join('%34s' % t for t in tls))
for loss in losses:
    line = '%-9s' % (loss + ' %')
    for t in tls:
        m, b = med(t, loss), med(t, '0')
        if m is None:
            line += '%34s' % 'failed'
            continue
        ratio = (' x%.2f' % (m[0] / b[0])) if b and loss != '0' else ''
        line += '%34s' % ('%.1f (%.1f..%.1f) [%d]%s' % (m[0], m[1], m[2], m[3], ratio))
    print(line)
print('\nsrqud: packets netem dropped on the wire and packets srqud resent')
print('%-9s %10s %10s %10s %10s %14s' % ('loss', 'dropped', 'resent', 'fast', 'timeouts', 'resent/drop'))
for loss in losses:
    c = cells('srqud', loss)
    if not c:
        continue
    d = sum(int(r['wire_drops']) for r in c)
    s = sum(int(r['retransmits']) for r in c)
    f = sum(int(r['fast_retransmits']) for r in c)
    t = sum(int(r['timeouts']) for r in c)
    print('%-9s %10d %10d %10d %10d %14s' % (loss + ' %', d, s, f, t,
          ('%.2f' % (s / d)) if d else '-'))
PY
