# One MPI run of a sucg example with a chosen MPI_Allgather, and the check
# that the calls took the intended path; sourced by ucg-allgather.sh and
# sucg-tune.sh after test/sucg/mpi/mpirun.sh and sucg_net.
#
# An IMPL names the MPI and its Allgather:
#   ompi-tuned          Open MPI as shipped (coll/sucg not on the path)
#   mpich-default       MPICH as shipped
#   MPI-ucg-ALGO        every call through sucg with ALGO (auto: sucg's
#                       choice): the component (Open MPI) or the PMPI
#                       library (MPICH) with the table "*:*:0-inf"
#   MPI-ucg-table       the component or library with its shipped table:
#                       what a user who installs it gets
#
# Globals: EX (the examples' directory), PMPI_LIB, OUT (logs go to
# OUT/logs), SUCG_OMPI_COMPONENT_ARGS (sucg_ompi_component_args);
# SUCG_RUN_ENV, if set: VAR=VALUE words for the ranks of every run.
#
# shellcheck shell=bash

# sucg_run_ompi IMPL NP PROGRAM ARGS...
sucg_run_ompi() {
    local impl=$1 np=$2 vars comp=()
    read -ra vars <<< "${SUCG_RUN_ENV-}"
    shift 2
    case "$impl" in
    ompi-ucg-*) comp=("${SUCG_OMPI_COMPONENT_ARGS[@]}") ;;
    esac
    case "$impl" in
    ompi-ucg-table) SUCG_TEST_TUNE=default sucg_ompi "${vars[@]}" "$np" "${comp[@]}" "$@"
                    return ;;
    ompi-ucg-auto|ompi-tuned) ;;
    *) vars+=(SUCG_ALLGATHER_ALGO="${impl#ompi-ucg-}") ;;
    esac
    sucg_ompi "${vars[@]}" "$np" "${comp[@]}" "$@"
}

# sucg_run_mpich IMPL NP PROGRAM ARGS...
sucg_run_mpich() {
    local impl=$1 np=$2 vars
    read -ra vars <<< "${SUCG_RUN_ENV-}"
    shift 2
    case "$impl" in
    mpich-default) ;;
    mpich-ucg-table) SUCG_TEST_TUNE=default sucg_mpich "${vars[@]}" LD_PRELOAD="$PMPI_LIB" \
                         "$np" "$@"
                     return ;;
    mpich-ucg-auto) vars+=(LD_PRELOAD="$PMPI_LIB") ;;
    *) vars+=(LD_PRELOAD="$PMPI_LIB" SUCG_ALLGATHER_ALGO="${impl#mpich-ucg-}") ;;
    esac
    sucg_mpich "${vars[@]}" "$np" "$@"
}

# sucg_expected_path IMPL: what sucg_path_name() must report for every size
# (an awk regular expression)
sucg_expected_path() {
    case "$1" in
    ompi-tuned|mpich-default) echo '^mpi$' ;;
    *-ucg-auto)  echo '^ucg:' ;;
    *-ucg-table) echo '^(mpi|ucg:.*)$' ;;
    *) echo "^ucg:${1#*-ucg-}\$" ;;
    esac
}

# sucg_run IMPL NP PROGRAM_BASE ARGS... -> the program's CSV lines on
# stdout; status 1 if the run failed or a size took another path
sucg_run() {
    local impl=$1 np=$2 prog=$3 log out rc want
    shift 3
    log=$OUT/logs/$impl-np$np-$(basename "$prog")-$(echo "$*" | tr -c 'A-Za-z0-9' _).log
    mkdir -p "$OUT/logs"
    case "$impl" in
    ompi-*)  sucg_run_ompi "$impl" "$np" "${prog}_ompi" "$@" > "$log" 2>&1 ;;
    mpich-*) sucg_run_mpich "$impl" "$np" "${prog}_mpich" "$@" > "$log" 2>&1 ;;
    esac
    rc=$?
    want=$(sucg_expected_path "$impl")
    out=$(grep -E '^[a-z0-9_-]+,' "$log" | grep -v '^#')
    if [ $rc != 0 ] || [ -z "$out" ]; then
        echo "error: $impl np=$np $(basename "$prog") $*: exit $rc (log $log)" >&2
        tail -5 "$log" | sed 's/^/    /' >&2
        return 1
    fi
    if echo "$out" | awk -F, -v w="$want" '$NF !~ w { bad = 1 } END { exit bad }'; then
        echo "$out"
    else
        echo "error: $impl np=$np: a size's path is not $want:" \
             "$(echo "$out" | awk -F, '{print $NF}' | sort -u | tr '\n' ' ') (log $log)" >&2
        return 1
    fi
}
