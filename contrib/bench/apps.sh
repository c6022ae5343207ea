#!/bin/bash
#
# Real applications under Open MPI 4.1 (pml ucx) in the Soft-RoCE VM, one
# run, the same inputs over each transport:
#
#   contrib/softroce/vm-run --timeout 3600 -- contrib/bench/apps.sh [-n NP] [-r REPS]
#
#   LAMMPS (Debian's lmp): LJ liquid, 16^3 fcc cells (16384 atoms), 100
#          steps, communication cutoff 6 sigma so that every step moves
#          thick halos (contrib/bench/apps/in.halo); the loop time and the
#          final energy (must agree between transports) are recorded.
#   HPCC   (Debian's hpcc): HPL N=1600, NB=64, 1x2 grid, plus HPCC's other
#          kernels (contrib/bench/apps/hpccinf.txt); HPL time and Gflops,
#          and HPCC's own pass/fail verdicts.
# Transports: srqud (UCX_TLS=srqud,self), ud_verbs, rc_verbs (+ud_verbs for
# wire-up). Table on stdout; CSV in $SRQUD_BUILD/bench/apps.csv.
# Exits non-zero if a run fails or a result disagrees.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
NP=2
REPS=1
bench_getopts "n:NP r:REPS" "$@"
for b in lmp hpcc; do
    command -v $b >/dev/null || { echo "apps.sh: $b missing (apt-get install lammps hpcc)" >&2; exit 1; }
done
B=$RESULTS/apps
mkdir -p "$B"
CSV=$RESULTS/apps.csv
echo "app,variant,rep,seconds,metric,check" > "$CSV"
rc=0

mpi() {   # mpi UCX_TLS [VAR=VALUE...] -- CMD...
    bench_ompi 1800 "$NP" "$@"
}

VARIANTS="srqud ud_verbs rc_verbs"
tls_of() {
    case $1 in
    srqud)    echo "srqud,self --" ;;
    ud_verbs) echo "ud_verbs,self UCX_IB_GID_INDEX=2 --" ;;
    rc_verbs) echo "rc_verbs,ud_verbs,self UCX_IB_GID_INDEX=2 --" ;;
    esac
}

for rep in $(seq 1 "$REPS"); do
    for v in $VARIANTS; do
        # LAMMPS
        log=$B/lammps-$v-$rep.log
        echo "== lammps $v (rep $rep)" >&2
        (cd "$B" && mpi $(tls_of $v) lmp -in "$ROOT/contrib/bench/apps/in.halo" \
            -log none -screen "$log.screen") > "$log" 2>&1
        r=$?
        loop=$(awk '/^Loop time of/ {print $4}' "$log.screen" 2>/dev/null)
        # final thermo line: Step Temp E_pair E_mol TotEng Press
        etot=$(awk '/^ *Step /{t=1; next} /^Loop time/{t=0} t && NF>=6 {e=$5} END{print e}' "$log.screen" 2>/dev/null)
        if [ $r != 0 ] || [ -z "$loop" ]; then
            echo "apps.sh: lammps over $v failed (rc $r), see $log" >&2; rc=1
            tail -20 "$log" >&2
        fi
        echo "lammps,$v,$rep,$loop,$etot,$([ $r = 0 ] && echo ok || echo FAIL)" >> "$CSV"
        # HPCC: runs in its own directory (reads hpccinf.txt, writes hpccoutf.txt)
        d=$B/hpcc-$v-$rep
        rm -rf "$d"; mkdir -p "$d"
        cp "$ROOT/contrib/bench/apps/hpccinf.txt" "$d/"
        echo "== hpcc $v (rep $rep)" >&2
        start=$(date +%s.%N)
        (cd "$d" && mpi $(tls_of $v) hpcc) > "$d/run.log" 2>&1
        r=$?
        end=$(date +%s.%N)
        out=$d/hpccoutf.txt
        hpl_t=$(awk -F= '/^HPL_Tflops=/{}; /^HPL_time=/{print $2}' "$out" 2>/dev/null)
        hpl_gf=$(awk -F= '/^HPL_Tflops=/{printf "%.3f", $2*1000}' "$out" 2>/dev/null)
        fails=$(grep -c "FAILED" "$out" 2>/dev/null)
        passed=$(grep -c "PASSED" "$out" 2>/dev/null)
        if [ $r != 0 ] || [ -z "$hpl_t" ] || [ "${fails:-0}" != 0 ] || [ "${passed:-0}" = 0 ]; then
            echo "apps.sh: hpcc over $v failed (rc $r, $passed passed, $fails failed), see $d" >&2; rc=1
            tail -20 "$d/run.log" >&2
        fi
        total=$(echo "$end - $start" | bc)
        echo "hpl,$v,$rep,$hpl_t,$hpl_gf,$([ $r = 0 ] && [ "${fails:-0}" = 0 ] && echo ok || echo FAIL)" >> "$CSV"
        echo "hpcc_total,$v,$rep,$total,$passed,$([ $r = 0 ] && echo ok || echo FAIL)" >> "$CSV"
        # HPCC's own network kernels (8-byte latency, 2 MB ping-pong bandwidth)
        for k in AvgPingPongLatency_usec AvgPingPongBandwidth_GBytes; do
            val=$(awk -F= -v k=$k '$1 == k {print $2}' "$out" 2>/dev/null)
            echo "hpcc_$k,$v,$rep,,$val,$([ -n "$val" ] && echo ok || echo FAIL)" >> "$CSV"
        done
        grep -q '^Success=1' "$out" 2>/dev/null || { echo "apps.sh: hpcc over $v: no Success=1" >&2; rc=1; }
    done
done

/usr/bin/python3 - "$CSV" <<'PY' || rc=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
vs = ['srqud', 'ud_verbs', 'rc_verbs']
ok = True
def med(app, v, col='seconds'):
    xs = sorted(float(r[col]) for r in rows
                if r['app'] == app and r['variant'] == v and r['check'] == 'ok'
                and r[col])
    return xs[len(xs) // 2] if xs else float('nan')
print('%-28s' % 'seconds (median)' + ''.join('%12s' % v for v in vs) + '%12s %12s' % ('srqud/ud', 'srqud/rc'))
for app, name in (('lammps', 'LAMMPS loop time'), ('hpl', 'HPL time'),
                  ('hpcc_total', 'HPCC whole run')):
    vals = [med(app, v) for v in vs]
    print('%-28s' % name + ''.join('%12.2f' % x for x in vals) +
          '%12.2f %12.2f' % (vals[0] / vals[1], vals[0] / vals[2]))
for app, name in (('hpl', 'HPL Gflops'),
                  ('hpcc_AvgPingPongLatency_usec', 'HPCC ping-pong latency us'),
                  ('hpcc_AvgPingPongBandwidth_GBytes', 'HPCC ping-pong GB/s')):
    vals = [med(app, v, 'metric') for v in vs]
    print('%-28s' % name + ''.join('%12.4f' % x for x in vals) +
          '%12.2f %12.2f' % (vals[0] / vals[1], vals[0] / vals[2]))
# LAMMPS physics must not depend on the transport
es = {r['metric'] for r in rows if r['app'] == 'lammps' and r['check'] == 'ok'}
print('LAMMPS final total energy over all runs:', ', '.join(sorted(es)))
if len(es) != 1:
    print('apps.sh: LAMMPS energies differ between runs'); ok = False
if any(r['check'] != 'ok' for r in rows):
    ok = False
sys.exit(0 if ok else 1)
PY
echo "csv: $CSV"
exit $rc
