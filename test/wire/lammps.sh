#!/bin/bash
#
# LAMMPS across the two hosts of the wire (vm-run --wire): the LJ halo
# input of contrib/bench/apps (16384 atoms, 6-sigma halos), Open MPI pml
# ucx over srqud, one rank on host A and one on host B; then the same input
# over srqud inside host A alone (rxe0, no wire) as the reference. The run
# passes if both finish and their final total energies agree to the last
# printed digit (same decomposition, same arithmetic: any lost or corrupted
# halo byte changes it). Whatever qdisc is on the wire stays there.
# Prints "RESULT wire_lammps PASS|FAIL" with both energies; a run that
# failed is "lammps: MSG" on stderr with the end of its log, status 1.
#
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/contrib/lib/common.sh"   # die, result
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
OUT=${SRQUD_BUILD}/vm-logs/wire/lammps
mkdir -p "$OUT"
command -v lmp >/dev/null || die "lmp missing (apt-get install lammps)"

run() {   # run NAME [prefix...]: prints the final total energy
    local name=$1
    shift
    (cd "$OUT" && timeout 900 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self --mca osc ^ucx --mca oob_tcp_if_include lo \
        -x UCX_TLS=srqud,self -x UCX_NET_DEVICES=rxe0:1 -x UCX_WARN_UNUSED_ENV_VARS=n \
        "$@" lmp -in "$ROOT/contrib/bench/apps/in.halo" -log none \
        -screen "$OUT/$name.screen") > "$OUT/$name.log" 2>&1 || return 1
    # the last thermo line: Step Temp E_pair E_mol TotEng Press
    awk '/^ *Step /{t=1; next} /^Loop time/{t=0} t && NF>=6 {e=$5} END{print e}' "$OUT/$name.screen"
}

wire=$(run wire "$ROOT/test/wire/rank-on-host") ||
    die "the run across the wire failed; its log ends:
$(tail -20 "$OUT/wire.log")"
ref=$(run local) ||
    die "the reference run failed; its log ends:
$(tail -20 "$OUT/local.log")"
loop=$(awk '/^Loop time of/ {print $4}' "$OUT/wire.screen")
if [ -n "$wire" ] && [ "$wire" = "$ref" ]; then
    result wire_lammps PASS "total energy $wire (reference $ref), loop time $loop s"
else
    result wire_lammps FAIL "total energy '$wire' but '$ref' on one host"
    exit 1
fi
