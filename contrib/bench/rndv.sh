#!/bin/bash
#
# Zero-copy rendezvous over UD (Koop et al.), measured under Open MPI 4.1
# (pml ucx) in the Soft-RoCE VM, all variants in one run:
#
#   contrib/softroce/vm-run -- contrib/bench/rndv.sh [-M MAX] [-i ITERS]
#
#   srqud          zero-copy get/put from 32 KB (UCP's rendezvous uses them)
#   srqud-copy     the same with zero-copy off (UCX_SRQUD_ZCOPY_QPS=0): gets
#                  and puts carried in MTU fragments and copied
#   ud_verbs       UCX's UD (rendezvous over active messages)
#   rc_verbs       UCX's RC (RDMA read/write)
# Latency, uni- and bi-directional bandwidth, 1 KB to MAX (contrib/bench/
# mpi_bw.c, every message checked). Table on stdout; CSV in
# $SRQUD_BUILD/bench/rndv.csv; ratios against the paper's (within 9 % of RC
# from 64 KB, +50 % over copy-based UD).
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
MAX=$((4 << 20))
ITERS=20
bench_getopts "M:MAX i:ITERS" "$@"
B=$RESULTS
if [ ! -x "$B/mpi_bw" ] || [ "$ROOT/contrib/bench/mpi_bw.c" -nt "$B/mpi_bw" ]; then
    mpicc.openmpi -O2 -Wall -o "$B/mpi_bw" "$ROOT/contrib/bench/mpi_bw.c" || exit 1
fi
CSV=$B/rndv.csv
echo "variant,size,lat_us,bw_MBs,bibw_MBs" > "$CSV"

run() {   # run VARIANT UCX_TLS [VAR=VALUE...]
    local v=$1 tls=$2; shift 2
    echo "== $v (UCX_TLS=$tls $*)" >&2
    bench_ompi 1200 2 "$tls" "$@" -- "$B/mpi_bw" -M "$MAX" -i "$ITERS" |
        awk -v v="$v" 'NR > 1 && NF == 4 {print v "," $1 "," $2 "," $3 "," $4}' >> "$CSV"
    return ${PIPESTATUS[0]}
}

rc=0
run srqud srqud,self || rc=1
run srqud-copy srqud,self UCX_SRQUD_ZCOPY_QPS=0 || rc=1
run ud_verbs ud_verbs,self UCX_IB_GID_INDEX=2 || rc=1
run rc_verbs rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=2 || rc=1

/usr/bin/python3 - "$CSV" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
d = {}
for r in rows:
    d[(r['variant'], int(r['size']))] = r
vs = ['srqud', 'srqud-copy', 'ud_verbs', 'rc_verbs']
sizes = sorted({int(r['size']) for r in rows})
for metric, name in (('lat_us', 'latency (us)'), ('bw_MBs', 'bandwidth (MB/s)'),
                     ('bibw_MBs', 'bi-directional bandwidth (MB/s)')):
    print('\n' + name)
    print('%10s' % 'size' + ''.join('%12s' % v for v in vs) +
          '%14s %14s' % ('srqud/rc', 'srqud/copy'))
    for s in sizes:
        vals = [float(d[(v, s)][metric]) if (v, s) in d else float('nan')
                for v in vs]
        print('%10d' % s + ''.join('%12.1f' % x for x in vals) +
              '%14.2f %14.2f' % (vals[0] / vals[3] if vals[3] else 0,
                                 vals[0] / vals[1] if vals[1] else 0))
big = [s for s in sizes if s >= 65536]
if big:
    def avg(v, m):
        xs = [float(d[(v, s)][m]) for s in big if (v, s) in d]
        return sum(xs) / len(xs) if xs else float('nan')
    print('\nfrom 64 KB, mean bandwidth: srqud/rc_verbs %.2f (paper: >= 0.91), '
          'srqud/srqud-copy %.2f (paper: 1.5 over copy-based UD), '
          'srqud/ud_verbs %.2f' % (avg('srqud', 'bw_MBs') / avg('rc_verbs', 'bw_MBs'),
                                  avg('srqud', 'bw_MBs') / avg('srqud-copy', 'bw_MBs'),
                                  avg('srqud', 'bw_MBs') / avg('ud_verbs', 'bw_MBs')))
PY
echo "csv: $CSV"
exit $rc
