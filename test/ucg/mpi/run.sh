#!/bin/bash
#
# MPI tests of srqud UCG: MPI_Allgather through the Open MPI coll component
# (mca_coll_sucg.so) and the MPICH PMPI library (libsucg_pmpi.so), checked
# byte by byte by sucg_mpi_allgather_test, which also checks through the
# exported counters that UCG really ran every call (SUCG_TEST_EXPECT=ucg).
# Builds nothing:
#
#   test/ucg/mpi/run.sh [BUILD_DIR]      (default build/ucg-mpi, from
#                                         make -f contrib/ucg/mpi.mk)
#
# Artifacts can also be given one by one: OMPI_COMPONENT_DIR, OMPI_TEST,
# PMPI_LIB, MPICH_TEST. Loopback only (UCX_NET_DEVICES=lo, oob/hydra on lo).
# Prints "mpi-tests: N passed, M failed"; exit status 1 on any failure.
# QUICK=1: a smaller matrix.
#
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=${1:-$ROOT/build/ucg-mpi}
OMPI_COMPONENT_DIR=${OMPI_COMPONENT_DIR:-$B/ompi/component}
OMPI_TEST=${OMPI_TEST:-$B/ompi/sucg_mpi_allgather_test}
PMPI_LIB=${PMPI_LIB:-$B/mpich/libsucg_pmpi.so}
MPICH_TEST=${MPICH_TEST:-$B/mpich/sucg_mpi_allgather_test}
OMPI_DEFAULT_PATH=$(ompi_info --parsable --param mca base --level 9 2>/dev/null |
    sed -n 's/^mca:base:param:mca_base_component_path:value://p')
OMPI_DEFAULT_PATH=${OMPI_DEFAULT_PATH:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
TMO=${TMO:-180}
LOG=$(mktemp -d /tmp/sucg-mpi-tests.XXXXXX)
pass=0
fail=0

for f in "$OMPI_COMPONENT_DIR/mca_coll_sucg.so" "$OMPI_TEST" "$PMPI_LIB" "$MPICH_TEST"; do
    [ -e "$f" ] || { echo "missing $f (make -f contrib/ucg/mpi.mk)"; echo "mpi-tests: 0 passed, 1 failed"; exit 1; }
done

# ompi TLS NP [mpirun args...] -- [test args...]
ompi() {
    local tls=$1 np=$2; shift 2
    timeout $TMO mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self,vader --mca oob_tcp_if_include lo \
        -x UCX_TLS="$tls" -x UCX_NET_DEVICES=lo -x UCX_WARN_UNUSED_ENV_VARS=n "$@"
}
with_component=(--mca mca_base_component_path "$OMPI_COMPONENT_DIR:$OMPI_DEFAULT_PATH")

# mpich NP [mpirun args...] (MPICH's ch4:ucx hangs in MPI_Finalize over
# UCX_TLS=tcp,self even without the library: shared memory only)
mpich() {
    local np=$1; shift
    timeout $TMO mpirun.mpich -iface lo -np "$np" -genv UCX_TLS sm,self \
        -genv UCX_NET_DEVICES lo -genv UCX_WARN_UNUSED_ENV_VARS n "$@"
}

# expect ok|fail DESC command...
expect() {
    local want=$1 desc=$2 log rc start
    shift 2
    log=$LOG/$(echo "$desc" | tr -c 'A-Za-z0-9=,_-' _).log
    start=$(date +%s.%N)
    "$@" > "$log" 2>&1
    rc=$?
    local t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    if { [ $want = ok ] && [ $rc = 0 ]; } || { [ $want = fail ] && [ $rc != 0 ] && [ $rc != 124 ]; }; then
        pass=$((pass + 1))
        echo "ok   ${t}s $desc $(grep -h '^allgather_test:' "$log" | sed 's/^allgather_test: //')"
    else
        fail=$((fail + 1))
        echo "FAIL ${t}s $desc (rc $rc, expected $want; log $log)"
        grep -v '^\s*$' "$log" | head -15 | sed 's/^/    /'
    fi
}

NPS="2 3 4 5 6 7 8"
[ "${QUICK:-0}" = 1 ] && NPS="2 5 8"

echo "== Open MPI $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p') + mca_coll_sucg.so (pml ucx, UCX_TLS=sm,self)"
for np in $NPS; do
    expect ok "ompi sm np=$np" ompi sm,self $np "${with_component[@]}" \
        -x SUCG_TEST_EXPECT=ucg "$OMPI_TEST"
done
for algo in ring p2p_rd p2p_ring; do
    expect ok "ompi sm np=7 $algo" ompi sm,self 7 "${with_component[@]}" \
        -x SUCG_TEST_EXPECT=ucg -x UCG_ALLGATHER_ALGO=$algo "$OMPI_TEST" -b 1048576
done
for np in 3 8; do
    expect ok "ompi tcp np=$np" ompi tcp,self $np "${with_component[@]}" \
        -x SUCG_TEST_EXPECT=ucg "$OMPI_TEST" -b 1048576
done
expect ok "ompi tcp np=6 p2p_rd" ompi tcp,self 6 "${with_component[@]}" \
    -x SUCG_TEST_EXPECT=ucg -x UCG_ALLGATHER_ALGO=p2p_rd "$OMPI_TEST" -b 65548
# the registration cache explicitly on (shared memory; see README)
expect ok "ompi sm np=5 rcache on" ompi sm,self 5 "${with_component[@]}" \
    -x SUCG_TEST_EXPECT=ucg -x UCG_RCACHE_MAX_ENTRIES=64 "$OMPI_TEST"
# only blocks >= 4 KiB through UCG: the decision is per call, identical on
# all ranks; the others go to tuned (the test then expects none counted
# for small blocks, so it must run without SUCG_TEST_EXPECT)
expect ok "ompi sm np=4 coll_sucg_min_bytes=4096" ompi sm,self 4 "${with_component[@]}" \
    --mca coll_sucg_min_bytes 4096 "$OMPI_TEST" -b 65548
# component present but disabled: tuned does everything, UCG never runs
expect ok "ompi sm np=4 coll_sucg_enable=0" ompi sm,self 4 "${with_component[@]}" \
    --mca coll_sucg_enable 0 -x SUCG_TEST_EXPECT=none "$OMPI_TEST" -b 65548
# negative: the path check must notice a missing component ...
expect fail "ompi negative: no component, expect ucg" ompi sm,self 3 \
    -x SUCG_TEST_EXPECT=ucg "$OMPI_TEST" -b 4096
# ... and the byte check a flipped byte
expect fail "ompi negative: corrupted byte" ompi sm,self 3 "${with_component[@]}" \
    -x SUCG_TEST_EXPECT=ucg -x SUCG_TEST_CORRUPT=1 "$OMPI_TEST" -b 4096

echo "== MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:\s*//p') + LD_PRELOAD=libsucg_pmpi.so (ch4:ucx, UCX_TLS=sm,self)"
for np in $NPS; do
    expect ok "mpich np=$np" mpich $np -genv LD_PRELOAD "$PMPI_LIB" \
        -genv SUCG_TEST_EXPECT ucg "$MPICH_TEST"
done
expect ok "mpich np=6 p2p_rd" mpich 6 -genv LD_PRELOAD "$PMPI_LIB" \
    -genv SUCG_TEST_EXPECT ucg -genv UCG_ALLGATHER_ALGO p2p_rd "$MPICH_TEST" -b 1048576
expect ok "mpich np=4 SUCG_MPI_ENABLE=0" mpich 4 -genv LD_PRELOAD "$PMPI_LIB" \
    -genv SUCG_MPI_ENABLE 0 -genv SUCG_TEST_EXPECT none "$MPICH_TEST" -b 65548
expect fail "mpich negative: no preload, expect ucg" mpich 3 \
    -genv SUCG_TEST_EXPECT ucg "$MPICH_TEST" -b 4096
expect fail "mpich negative: corrupted byte" mpich 3 -genv LD_PRELOAD "$PMPI_LIB" \
    -genv SUCG_TEST_EXPECT ucg -genv SUCG_TEST_CORRUPT 2 "$MPICH_TEST" -b 4096

echo "mpi-tests: $pass passed, $fail failed (logs in $LOG)"
[ $fail = 0 ]
