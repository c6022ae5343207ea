#!/bin/bash
#
# MPI tests of sucg: MPI_Allgather through the Open MPI coll component
# (mca_coll_sucg.so) and the MPICH PMPI library (libsucg_pmpi.so), checked
# byte by byte by sucg_mpi_allgather_test_{ompi,mpich}, which also check
# through the exported counters that sucg really ran every call
# (SUCG_TEST_EXPECT=sucg). Builds nothing; uses the autotools build
# (contrib/build.sh: build/install and build/obj):
#
#   test/sucg/mpi/run.sh [--net host|srqud|rc] [--mpi both|ompi|mpich]
#                       [--np "2 3 ..."] [--max-block BYTES] [--quick]
#
#   --net host   (default) UCX over shared memory and tcp on lo; the whole
#                matrix: 2..8 ranks, every algorithm, tcp, rcache on,
#                fallback by size, disabled glue, negative runs
#   --net srqud  inside the Soft-RoCE VM: UCX_TLS=srqud,self on rxe0
#   --net rc     inside the VM: UCX_TLS=rc_verbs,ud_verbs,self on rxe0
#                (UCX_IB_GID_INDEX=2); srqud/rc run the default algorithm
#                for every --np and each other algorithm once
#   --net wire   inside vm-run --wire: srqud, half of the ranks on host A
#                (rxeA), half on host B (rxeB); as srqud otherwise
#   --max-block  largest per-rank block (default 8 MiB on the host, 1 MiB
#                in the VM; 8 MiB only at np=2 there)
#
# Artifacts can be given one by one: OMPI_COMPONENT_DIR, OMPI_TEST,
# PMPI_LIB, MPICH_TEST. Loopback only (tcp on lo, Open MPI's oob and
# hydra on lo, rxe0 sits on lo). Prints "RESULT sucg_mpi_<run> PASS|FAIL"
# per run (the run's description, lower-case words joined by "_"), then
# "mpi-tests: N passed, M failed"; exit status 1 on any failure or missing
# artifact. Its callers count the whole run as one check.
#
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# log ("== sucg-mpi: MSG"), result
. "$ROOT/contrib/lib/common.sh"
LOG_NAME=sucg-mpi
B=${SRQUD_BUILD:-$ROOT/build}
OMPI_COMPONENT_DIR=${OMPI_COMPONENT_DIR:-$B/install/lib/openmpi}
OMPI_TEST=${OMPI_TEST:-$B/obj/test/sucg/sucg_mpi_allgather_test_ompi}
PMPI_LIB=${PMPI_LIB:-$B/install/lib/libsucg_pmpi.so}
MPICH_TEST=${MPICH_TEST:-$B/obj/test/sucg/sucg_mpi_allgather_test_mpich}
NET=host
WHICH=both
NPS="2 3 4 5 6 7 8"
MAXB=""
while [ $# -gt 0 ]; do
    case "$1" in
    --net)       NET=$2; shift 2 ;;
    --mpi)       WHICH=$2; shift 2 ;;
    --np)        NPS=$2; shift 2 ;;
    --max-block) MAXB=$2; shift 2 ;;
    --quick)     NPS="2 5 8"; shift ;;
    *) echo "usage: $0 [--net host|srqud|rc|wire] [--mpi both|ompi|mpich] [--np LIST] [--max-block N] [--quick]" >&2
       exit 2 ;;
    esac
done
case "$WHICH" in both|ompi|mpich) ;; *) echo "error: --mpi $WHICH: both, ompi or mpich" >&2; exit 2 ;; esac

# shellcheck source=mpirun.sh
. "$ROOT/test/sucg/mpi/mpirun.sh"
SUCG_MPI_TMO=${TMO:-300}
LOG=$(mktemp -d /tmp/sucg-mpi-tests.XXXXXX)
pass=0
fail=0

need=()
[ $WHICH != mpich ] && need+=("$OMPI_COMPONENT_DIR/mca_coll_sucg.so" "$OMPI_TEST")
[ $WHICH != ompi ]  && need+=("$PMPI_LIB" "$MPICH_TEST")
for f in "${need[@]}"; do
    if [ ! -e "$f" ]; then
        result sucg_mpi_artifacts FAIL "(missing $f: contrib/build.sh builds it)"
        echo "mpi-tests: 0 passed, 1 failed"
        exit 1
    fi
done

# the UCX transport of the MPI and of sucg (same UCX_TLS for both)
sucg_net "$NET" || { echo "error: --net $NET: host, srqud, rc or wire" >&2; exit 2; }
ompi()  { sucg_ompi "$@"; }
mpich() { sucg_mpich "$@"; }
# tuned TABLE CMD...: CMD's ranks with sucg's table TABLE ("default": the
# shipped one); without it every call is sucg's (mpirun.sh)
tuned() { SUCG_TEST_TUNE=$1 "${@:2}"; }
sucg_ompi_component_args "$OMPI_COMPONENT_DIR"
with_component=("${SUCG_OMPI_COMPONENT_ARGS[@]}")

# expect ok|fail DESC command...: the RESULT line of sucg_mpi_<DESC's words>
expect() {
    local want=$1 desc=$2 log rc start t name
    shift 2
    log=$LOG/$(echo "$desc" | tr -c 'A-Za-z0-9=,_-' _).log
    name=sucg_mpi_$(printf '%s' "$desc" | tr -cs 'A-Za-z0-9_' _ | tr '[:upper:]' '[:lower:]')
    start=$(date +%s.%N)
    "$@" > "$log" 2>&1
    rc=$?
    t=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if { [ $want = ok ] && [ $rc = 0 ]; } || { [ $want = fail ] && [ $rc != 0 ] && [ $rc != 124 ]; }; then
        pass=$((pass + 1))
        result "$name" PASS "${t}s $(grep -h '^allgather_test:' "$log" | sed 's/^allgather_test: //')"
    else
        fail=$((fail + 1))
        result "$name" FAIL "${t}s (rc $rc, expected $want; log $log)"
        grep -v '^\s*$' "$log" | head -20 | sed 's/^/    /'
    fi
}

# block bound per np: 8 MiB on the host; in the (emulated) VM 8 MiB at np=2
# and 1 MiB above
blk() {
    if [ -n "$MAXB" ]; then echo "-b $MAXB"
    elif [ $NET = host ]; then echo "-b 8388608"
    elif [ "$1" = 2 ]; then echo "-b 8388608 -t 16777216"
    else echo "-b 1048576 -t 4194304"
    fi
}

E=SUCG_TEST_EXPECT
# how the default runs' zero-copy steps must go (SUCG_ZCOPY_STEP=auto): by
# tag where a put is a message (srqud), by put over RDMA. Not asserted over
# shared memory: without CMA (ptrace_scope 2, seccomp) UCP has no RMA lane
# there, and tags are then right too.
Z=
case $NET in
srqud|wire) Z=SUCG_TEST_EXPECT_ZSTEP=tag ;;
rc)         Z=SUCG_TEST_EXPECT_ZSTEP=put ;;
esac
if [ $WHICH != mpich ]; then
    log "Open MPI $(ompi_info --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p') + mca_coll_sucg.so (pml ucx; ${UCX_ENV[*]})"
    tls=(); [ $NET = host ] && tls=(UCX_TLS=sm,self)
    for np in $NPS; do
        expect ok "ompi $NET np=$np" ompi "${tls[@]}" $E=sucg ${Z:+"$Z"} $np "${with_component[@]}" \
            "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" $(blk $np)
    done
    if [ $NET = rc ] || [ $NET = srqud ]; then
        # Open MPI's shipped table: over rc_verbs 4 ranks from 64 KiB blocks
        # through sucg, everything else (all of srqud) Open MPI's tuned
        want=none; [ $NET = rc ] && want=ranks=4,from=65536
        expect ok "ompi $NET np=4 default table" tuned default ompi $E=$want 4 \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 1048576 -t 4194304
    fi
    # staged steps as one put with the flag last (SUCG_STAGED_STEP=tail):
    # RDMA writes over rc_verbs, stores over shared memory, and over srqud
    # the active messages such a group keeps; 3 ranks, so that a partner's
    # steps carry its extra rank's blocks
    expect ok "ompi $NET np=3 staged tail" ompi "${tls[@]}" $E=sucg SUCG_STAGED_STEP=tail 3 \
        "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 262144
    np=$(echo $NPS | awk '{print $NF}'); [ $np -gt 7 ] && [ $NET = host ] && np=7
    for algo in recursive_doubling ring p2p_rd p2p_ring; do
        [ $NET != host ] && [ $algo = recursive_doubling ] && continue   # the default above
        expect ok "ompi $NET np=$np $algo" ompi "${tls[@]}" $E=sucg SUCG_ALLGATHER_ALGO=$algo $np \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b ${MAXB:-1048576} -t 4194304
    done
    if [ $NET = host ]; then
        for np in 3 8; do
            expect ok "ompi tcp np=$np" ompi UCX_TLS=tcp,self $E=sucg SUCG_TEST_EXPECT_ZSTEP=tag $np \
                "${with_component[@]}" \
                "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 1048576
        done
        # the registration cache explicitly on (shared memory; see README)
        expect ok "ompi sm np=5 rcache on" ompi UCX_TLS=sm,self $E=sucg SUCG_RCACHE_MAX_ENTRIES=64 5 \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 1048576
        # only blocks >= 4 KiB through sucg: the decision is per call,
        # identical on all ranks; smaller ones go to tuned (so no
        # SUCG_TEST_EXPECT: it would want every call counted)
        expect ok "ompi sm np=4 coll_sucg_min_bytes=4096" ompi UCX_TLS=sm,self 4 "${with_component[@]}" \
            --mca coll_sucg_min_bytes 4096 "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 65548
        # the shipped table: sucg only over the transports and sizes it
        # was measured faster on (rc_verbs, srqud): none over shared memory
        expect ok "ompi sm np=4 default table" tuned default ompi UCX_TLS=sm,self $E=none 4 \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 2097152 -t 8388608
        # a table of one range: exactly its communicator size and blocks;
        # a range over a transport the peers are not reached by: none
        expect ok "ompi tcp np=4 table tcp 4 ranks from 4K" tuned 'tcp:[4]:4K-inf' ompi \
            UCX_TLS=tcp,self $E=ranks=4,from=4096 4 "${with_component[@]}" \
            "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 65548
        expect ok "ompi tcp np=4 table rc_verbs only" tuned 'rc_verbs:*:0-inf' ompi \
            UCX_TLS=tcp,self $E=none 4 "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" \
            "$OMPI_TEST" -b 65548
        # a table that does not parse: a warning, and the MPI's own everywhere
        expect ok "ompi sm np=3 bad table" tuned 'shm:[3]:64K' ompi UCX_TLS=sm,self $E=none 3 \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 65548
        # component present but disabled: tuned does everything
        expect ok "ompi sm np=4 coll_sucg_enable=0" ompi UCX_TLS=sm,self $E=none 4 "${with_component[@]}" \
            --mca coll_sucg_enable 0 "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 65548
        # negative: the path check must notice a missing component ...
        expect fail "ompi negative: no component, expect sucg" ompi UCX_TLS=sm,self $E=sucg 3 \
            "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 4096
        # ... the step check zero-copy steps that went the other way ...
        expect fail "ompi negative: tcp steps expected by put" ompi UCX_TLS=tcp,self $E=sucg \
            SUCG_TEST_EXPECT_ZSTEP=put 2 "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" \
            "$OMPI_TEST" -b 1048576
        # ... and the byte check a flipped byte
        expect fail "ompi negative: corrupted byte" ompi UCX_TLS=sm,self $E=sucg SUCG_TEST_CORRUPT=1 3 \
            "${with_component[@]}" "${SUCG_RANK_PREFIX[@]}" "$OMPI_TEST" -b 4096
    fi
fi

if [ $WHICH != ompi ]; then
    log "MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:\s*//p') + LD_PRELOAD=libsucg_pmpi.so (ch4:ucx; ${UCX_ENV[*]})"
    # MPICH's ch4:ucx hangs in MPI_Finalize over UCX_TLS=tcp,self even
    # without the library: shared memory only on the host
    tls=(); [ $NET = host ] && tls=(UCX_TLS=sm,self)
    pre=(LD_PRELOAD="$PMPI_LIB")
    for np in $NPS; do
        expect ok "mpich $NET np=$np" mpich "${tls[@]}" "${pre[@]}" $E=sucg ${Z:+"$Z"} $np "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" $(blk $np)
    done
    if [ $NET = rc ] || [ $NET = srqud ]; then
        # MPICH's shipped table: 4 and 8 ranks over rc_verbs or srqud,
        # every block through sucg; smaller communicators MPICH's own
        expect ok "mpich $NET np=4 default table" tuned default mpich "${pre[@]}" \
            $E=ranks=4,from=0 4 "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 1048576 -t 4194304
    fi
    np=$(echo $NPS | awk '{print $NF}'); [ $np -gt 6 ] && [ $NET = host ] && np=6
    for algo in ring p2p_rd p2p_ring; do
        expect ok "mpich $NET np=$np $algo" mpich "${tls[@]}" "${pre[@]}" $E=sucg SUCG_ALLGATHER_ALGO=$algo \
            $np "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b ${MAXB:-1048576} -t 4194304
    done
    if [ $NET = host ]; then
        expect ok "mpich np=4 SUCG_MPI_ENABLE=0" mpich "${tls[@]}" "${pre[@]}" SUCG_MPI_ENABLE=0 $E=none 4 \
            "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 65548
        expect ok "mpich np=4 default table" tuned default mpich "${tls[@]}" "${pre[@]}" $E=none 4 \
            "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 2097152 -t 8388608
        expect ok "mpich np=4 table shm 4 ranks from 4K" tuned 'shm:[4]:4K-inf' mpich "${tls[@]}" \
            "${pre[@]}" $E=ranks=4,from=4096 4 "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 65548
        expect fail "mpich negative: no preload, expect sucg" mpich "${tls[@]}" $E=sucg 3 \
            "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 4096
        expect fail "mpich negative: corrupted byte" mpich "${tls[@]}" "${pre[@]}" $E=sucg SUCG_TEST_CORRUPT=2 3 \
            "${SUCG_RANK_PREFIX[@]}" "$MPICH_TEST" -b 4096
    fi
fi

echo "mpi-tests: $pass passed, $fail failed (logs in $LOG)"
[ $fail = 0 ] && [ $pass -gt 0 ]
