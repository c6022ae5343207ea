#!/bin/bash
#
# MPI over srqud: Open MPI 4.1 (pml ucx) and MPICH 4.0 (ch4:ucx) run
# test/mpi/srqud_mpi_test.c with UCX_TLS=srqud,self, so every byte between
# ranks crosses srqud. Run inside the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- contrib/mpi-tests.sh [--np "2 8"] [--mpi "ompi mpich"]
#                                                   [--tls srqud,self] [--wire] [-- test args]
#
# --wire: across the two hosts of the wire (vm-run --wire): half of the
# ranks on rxeA, half on rxeB (test/wire/rank-on-host).
#
# --mpi mpich_vci: MPICH rebuilt with VCIs (contrib/build-mpich-vci.sh, not
# in CI), MPIR_CVAR_CH4_NUM_VCIS=$MPICH_NUM_VCIS (default 5): with -t 4,
# each thread's communicator has a VCI, so a UCP worker, of its own.
#
# Builds the test program (mpicc of each MPI) into $SRQUD_BUILD/mpi on the
# first run. Prints "RESULT mpi_<mpi>_np<N> PASS|FAIL" per run; exit status
# non-zero if any failed.
#
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/contrib/lib/common.sh"
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
OUT=$SRQUD_BUILD/mpi
NPS="2 8"
MPIS="ompi mpich"
TLS=srqud,self
TMO=${MPI_TEST_TIMEOUT:-600}
WRAP=()
while [ $# -gt 0 ]; do
    case $1 in
    --np)  NPS=$2; shift 2 ;;
    --mpi) MPIS=$2; shift 2 ;;
    --tls) TLS=$2; shift 2 ;;
    --wire) WRAP=("$ROOT/test/wire/rank-on-host"); shift ;;
    --)    shift; break ;;
    *)     echo "usage: $0 [--np LIST] [--mpi LIST] [--tls TLS] [--wire] [-- test args]" >&2; exit 2 ;;
    esac
done
ARGS=("$@")

mkdir -p "$OUT"
SRC=$ROOT/test/mpi/srqud_mpi_test.c
MPICH_VCI=$SRQUD_BUILD/mpich-vci/prefix/
for m in $MPIS; do
    case $m in
    ompi)  cc=mpicc.openmpi ;;
    mpich) cc=mpicc.mpich ;;
    mpich_vci)
        [ -x "${MPICH_VCI}bin/mpicc" ] ||
            { echo "no MPICH with VCIs in $SRQUD_BUILD: contrib/build-mpich-vci.sh" >&2; exit 1; }
        cc=${MPICH_VCI}bin/mpicc ;;
    *) echo "unknown MPI $m" >&2; exit 2 ;;
    esac
    if [ ! -x "$OUT/srqud_mpi_test.$m" ] || [ "$SRC" -nt "$OUT/srqud_mpi_test.$m" ]; then
        $cc -O2 -Wall -o "$OUT/srqud_mpi_test.$m" "$SRC" || exit 1
    fi
done

# UCX_NET_DEVICES limits UCP to the Soft-RoCE port; pml ucx of Open MPI 4.1
# takes only InfiniBand devices unless told otherwise
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-rxe0:1}
export UCX_WARN_UNUSED_ENV_VARS=n
failed=0
for m in $MPIS; do
    for np in $NPS; do
        name=mpi_${m}_np${np}${WRAP:+_wire}
        echo "== $name (UCX_TLS=$TLS)"
        if [ $m = ompi ]; then
            timeout $TMO mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
                --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
                --mca btl self --mca osc ^ucx --mca oob_tcp_if_include lo \
                -x UCX_TLS="$TLS" -x UCX_NET_DEVICES -x UCX_WARN_UNUSED_ENV_VARS \
                $(env | grep -o '^UCX_SRQUD_[A-Z_]*' | sed 's/^/-x /') \
                "${WRAP[@]}" "$OUT/srqud_mpi_test.ompi" "${ARGS[@]}"
        elif [ $m = mpich ]; then
            timeout $TMO mpirun.mpich -iface lo -np "$np" \
                -genv UCX_TLS "$TLS" -genv UCX_NET_DEVICES "$UCX_NET_DEVICES" \
                -genv UCX_WARN_UNUSED_ENV_VARS n \
                "${WRAP[@]}" "$OUT/srqud_mpi_test.mpich" "${ARGS[@]}"
        else
            timeout $TMO "${MPICH_VCI}bin/mpiexec" -iface lo -np "$np" \
                -genv UCX_TLS "$TLS" -genv UCX_NET_DEVICES "$UCX_NET_DEVICES" \
                -genv UCX_WARN_UNUSED_ENV_VARS n \
                -genv MPIR_CVAR_CH4_NUM_VCIS "${MPICH_NUM_VCIS:-5}" \
                "${WRAP[@]}" "$OUT/srqud_mpi_test.$m" "${ARGS[@]}"
        fi
        rc=$?
        if [ $rc = 0 ]; then
            result "$name" PASS
        else
            result "$name" FAIL "(exit $rc)"
            failed=1
        fi
    done
done
exit $failed
