# The preamble every benchmark script of contrib/bench sources first:
#
#   set -euo pipefail          # or whatever the script wants
#   . "$(dirname "$0")/common.sh"
#
# It runs the script again with everything it prints (stdout and stderr,
# each to where it went) passed through bench_filter, so that what is
# captured into contrib/bench/results carries no absolute paths and no
# library warnings:
#   - paths under the checkout become relative to it (build/bench/x.csv);
#     a build directory elsewhere ($SRQUD_BUILD) is written as $SRQUD_BUILD
#   - warning lines of the libraries are dropped: UCX's "UCX  WARN" log
#     lines, "librdmacm: Warning"/"libibverbs: Warning", Matplotlib's notice
#     about its cache directory (MPLCONFIGDIR below avoids it anyway)
# A pipe, not process substitution: the Soft-RoCE VM has no /dev/fd.
#
# Then, in the filtered run, it sets
#   ROOT         the checkout
#   SRQUD_BUILD  the build directory (default ROOT/build; exported)
#   RESULTS      where results go: SRQUD_BUILD/bench (created)
# exports UCX_WARN_UNUSED_ENV_VARS=n (the variants set variables of other
# transports) and MPLCONFIGDIR (a writable Matplotlib cache), and prints
# one line: the script and its arguments, the time, cores and load average.
#
# Functions: bench_getopts (options that each set a variable, usage on a
# bad one), bench_ompi (an Open MPI run over pml ucx in the VM),
# bench_build (the UCT benchmark programs of contrib/bench).
#
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
export SRQUD_BUILD

# bench_filter: stdin to stdout without absolute paths or library warnings
bench_filter() {
    local root build
    # as literal text in a sed pattern with '#' as the delimiter
    root=$(printf '%s/' "$ROOT" | sed 's/[][\.*^$#]/\\&/g')
    build=$(printf '%s/' "$SRQUD_BUILD" | sed 's/[][\.*^$#]/\\&/g')
    sed -u -E \
        -e '/ UCX +WARN /d' \
        -e '/^lib(rdmacm|ibverbs): Warning/d' \
        -e '/^Matplotlib created a temporary config\/cache directory/d' \
        -e "s#$root##g" \
        -e "s#$build#\$SRQUD_BUILD/#g"
}

if [ -z "${SRQUD_BENCH_FILTERED:-}" ]; then
    export SRQUD_BENCH_FILTERED=1
    set -o pipefail
    # the script's stderr through one filter back to stderr, its stdout
    # through another to stdout; the status is the script's
    { "$BASH" "$0" "$@" 2>&1 >&3 3>&- | bench_filter >&2 3>&-; } 3>&1 |
        bench_filter
    exit $?
fi

RESULTS=$SRQUD_BUILD/bench
mkdir -p "$RESULTS"
export UCX_WARN_UNUSED_ENV_VARS=n
export MPLCONFIGDIR=${MPLCONFIGDIR:-$RESULTS/.matplotlib}
mkdir -p "$MPLCONFIGDIR"

echo "# $(basename "$0")${*:+ $*}: $(date -u +%FT%TZ), $(uname -n), $(nproc) cores," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"

# The script's usage: its header comment, up to the first line that is not one
bench_usage() {
    sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p' |
        awk 'NF { for (; blank > 0; --blank) print ""; print; text = 1; next }
             text { ++blank }' >&2
}

# bench_getopts "c:VAR ..." "$@": option -c takes a value and sets VAR to it
# (defaults are set before the call); any other argument: the usage, exit 2
bench_getopts() {
    local spec=$1 optstring="" pair o
    local -A var=()
    shift
    for pair in $spec; do
        optstring+=${pair%%:*}:
        var[${pair%%:*}]=${pair#*:}
    done
    OPTIND=1
    while getopts ":$optstring" o; do
        if [ -z "${var[$o]:-}" ]; then
            bench_usage
            exit 2
        fi
        printf -v "${var[$o]}" '%s' "$OPTARG"
    done
    if [ $OPTIND -le $# ]; then
        bench_usage
        exit 2
    fi
}

# bench_ompi TIMEOUT NP UCX_TLS [VAR=VALUE...] -- CMD...: CMD on NP ranks of
# Open MPI 4.1 with pml ucx on rxe0 (the Soft-RoCE VM), btl self only, no
# osc ucx, out-of-band over lo; VAR=VALUE set for mpirun and the ranks;
# killed after TIMEOUT seconds
bench_ompi() (
    local tmo=$1 np=$2 tls=$3 xs=()
    shift 3
    while [ "$1" != -- ]; do
        xs+=(-x "$1")
        export "${1?}"
        shift
    done
    shift
    timeout "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self --mca osc ^ucx --mca oob_tcp_if_include lo \
        -x UCX_TLS="$tls" -x UCX_NET_DEVICES=rxe0:1 -x UCX_WARN_UNUSED_ENV_VARS=n \
        "${xs[@]}" "$@"
)

# srqud_counters FILE NAME...: srqud's counters from UCX_SRQUD_STATS_DUMP
# output (contrib/lib/counters.sh)
. "$ROOT/contrib/lib/counters.sh"

# The UCT benchmark programs (flowctl, mem_peers, mem_sizes) into $RESULTS
bench_build() {
    make -s -C "$ROOT/contrib/bench" B="$RESULTS" >/dev/null
}
