# Sourced (bash) by test/sucg/mpi/run.sh and contrib/bench/ucg-allgather.sh:
# how this project starts MPI jobs over one UCX transport, loopback only
# (Open MPI's oob and MPICH's hydra on lo, tcp on lo, rxe0 sits on lo).
#
#   sucg_net NET        UCX_ENV=(...) for NET = host (UCX_NET_DEVICES=lo;
#                       UCX_TLS left to the caller), srqud or rc (in the VM),
#                       wire (srqud across the VM's two-host wire); returns 1
#                       for another NET. SUCG_RANK_PREFIX=(...): what goes
#                       before each rank's program (empty but for wire)
#   sucg_ompi [VAR=VAL...] NP [mpirun args...] PROGRAM [args...]
#   sucg_mpich [VAR=VAL...] NP [mpirun args...] PROGRAM [args...]
#                       mpirun with UCX_ENV and the VAR=VALs exported to the
#                       ranks, under "timeout $SUCG_MPI_TMO" (default 300 s).
#                       sucg's table of where it runs (coll_sucg_tune,
#                       SUCG_MPI_TUNE) is SUCG_TEST_TUNE, by default every
#                       call ("*:*:0-inf": the tests and benchmarks check
#                       and time sucg itself); "default": none is passed,
#                       the shipped table decides
#   sucg_ompi_component_args DIR
#                       SUCG_OMPI_COMPONENT_ARGS=(--mca mca_base_component_path
#                       DIR:<Open MPI's default path>): loads the component
#                       installed in DIR
#
sucg_net() {
    case "$1" in
    host)  UCX_ENV=(UCX_NET_DEVICES=lo) ;;
    srqud) UCX_ENV=(UCX_TLS=srqud,self UCX_NET_DEVICES=rxe0:1) ;;
    # rc_verbs needs ud_verbs for UCP's wire-up; rxe on lo needs GID 2 (::1)
    rc)    UCX_ENV=(UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=2) ;;
    # across the two hosts of the wire (vm-run --wire): each rank's device
    # is chosen by SUCG_RANK_PREFIX (test/wire/rank-on-host)
    wire)  UCX_ENV=(UCX_TLS=srqud,self) ;;
    *)     return 1 ;;
    esac
    SUCG_RANK_PREFIX=()
    [ "$1" = wire ] && SUCG_RANK_PREFIX=("$(dirname "${BASH_SOURCE[0]}")/../../wire/rank-on-host")
    # the MPI and sucg read the same UCX_*; not every rank consumes each
    UCX_ENV+=(UCX_WARN_UNUSED_ENV_VARS=n)
}

# Open MPI searches only its default path unless told: put DIR first
sucg_ompi_component_args() {
    local dflt
    dflt=$(ompi_info --parsable --param mca base --level 9 2>/dev/null |
        sed -n 's/^mca:.*:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')
    SUCG_OMPI_COMPONENT_ARGS=(--mca mca_base_component_path
                              "$1:${dflt:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}")
}

# Open MPI 4.1's pml ucx takes only InfiniBand devices unless told "any"
sucg_test_tune() {   # SUCG_TUNE: the table to pass, if any
    SUCG_TUNE=${SUCG_TEST_TUNE-*:*:0-inf}
    [ "$SUCG_TUNE" != default ]
}

sucg_ompi() {
    local xs=() e np
    for e in "${UCX_ENV[@]}"; do xs+=(-x "$e"); done
    sucg_test_tune && xs+=(-x "OMPI_MCA_coll_sucg_tune=$SUCG_TUNE")
    while [[ "$1" == *=* ]]; do xs+=(-x "$1"); shift; done
    np=$1; shift
    timeout "${SUCG_MPI_TMO:-300}" mpirun.openmpi --allow-run-as-root --oversubscribe \
        -np "$np" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self,vader --mca oob_tcp_if_include lo "${xs[@]}" "$@"
}

sucg_mpich() {
    local gs=() e np
    for e in "${UCX_ENV[@]}"; do gs+=(-genv "${e%%=*}" "${e#*=}"); done
    sucg_test_tune && gs+=(-genv SUCG_MPI_TUNE "$SUCG_TUNE")
    while [[ "$1" == *=* ]]; do gs+=(-genv "${1%%=*}" "${1#*=}"); shift; done
    np=$1; shift
    timeout "${SUCG_MPI_TMO:-300}" mpirun.mpich -iface lo -np "$np" "${gs[@]}" "$@"
}
