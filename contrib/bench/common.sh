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
#   BENCH_DEV    the device and port of every run: SRQUD_BENCH_DEV
#                (default rxe0:1)
# exports UCX_WARN_UNUSED_ENV_VARS=n (the variants set variables of other
# transports) and MPLCONFIGDIR (a writable Matplotlib cache), and prints
# one line: the script and its arguments, the time, cores and load average.
# In the Soft-RoCE VM it turns address-space randomisation off (below;
# BENCH_ASLR=1 keeps it) and says so in a second line.
#
# Functions: bench_getopts (options that each set a variable, usage on a
# bad one), bench_require_dev (BENCH_DEV is here), bench_ompi and
# bench_mpich (an MPI run over UCX on BENCH_DEV),
# bench_mpi_cc (an MPI benchmark program for each MPI), bench_variant_env
# (a variant's settings),
# bench_ucx_tls (a transport's UCX_TLS),
# bench_build (the UCT benchmark programs of contrib/bench), bench_base_lib
# and bench_check_lib (another build of srqud beside the installed one);
# awk's median
# for the tables (BENCH_MEDIAN_AWK).
#
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
export SRQUD_BUILD
# The device and port every run uses: SRQUD_BENCH_DEV (default rxe0:1, the
# Soft-RoCE VM's), e.g. mlx5_0:1 to measure on an HCA
BENCH_DEV=${SRQUD_BENCH_DEV:-rxe0:1}

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

# In the Soft-RoCE VM (QEMU TCG) code runs only once translated, and a
# translation serves a later process only where the code sits at the same
# address: with address-space randomisation every process translated its
# libraries again, and the first time a run took a path (a broadcast root
# that first fills its window, around its 350th call) cost 1-3 ms there, a
# stall no machine without an emulator has (docs/notes/mpi-small-messages.md,
# "First-run stalls"). So the VM's benchmarks run without it: a path pays
# once a boot, in the first run that takes it. Only in the VM, whose kernel
# is its own; BENCH_ASLR=1 keeps it.
if [ "$(uname -n)" = srqud-vm ] && [ "${BENCH_ASLR:-0}" != 1 ] &&
   [ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)" != 0 ]; then
    if { echo 0 > /proc/sys/kernel/randomize_va_space; } 2>/dev/null; then
        echo "# address-space randomisation off in the VM (BENCH_ASLR=1 keeps it)"
    else
        echo "# address-space randomisation could not be turned off: first runs pay translations" >&2
    fi
fi

# bench_ranks_on_cores NPS: a line per rank count, whether its ranks
# exceed the cores (the figures of an oversubscribed run are the scheduler's)
bench_ranks_on_cores() {
    local np
    for np in $1; do
        echo "# $np ranks on $(nproc) cores:" \
             "$([ "$np" -gt "$(nproc)" ] && echo oversubscribed || echo 'one core or more each')"
    done
}

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

# bench_require_dev: exit 1 with a message unless BENCH_DEV's device is here
bench_require_dev() {
    [ -d "/sys/class/infiniband/${BENCH_DEV%%:*}" ] && return
    echo "no RDMA device ${BENCH_DEV%%:*}: run it in the VM" \
         "(contrib/softroce/vm-run), or set SRQUD_BENCH_DEV to a device:port" >&2
    exit 1
}

# bench_ompi TIMEOUT NP UCX_TLS [VAR=VALUE...] -- CMD...: CMD on NP ranks of
# Open MPI 4.1 with pml ucx on BENCH_DEV, btl self only, no
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
        -x UCX_TLS="$tls" -x UCX_NET_DEVICES="$BENCH_DEV" -x UCX_WARN_UNUSED_ENV_VARS=n \
        "${xs[@]}" "$@"
)

# bench_mpich TIMEOUT NP UCX_TLS [VAR=VALUE...] -- CMD...: as bench_ompi,
# for MPICH 4.0 (ch4:ucx carries local ranks too)
bench_mpich() (
    local tmo=$1 np=$2 tls=$3 gs=()
    shift 3
    while [ "$1" != -- ]; do
        gs+=(-genv "${1%%=*}" "${1#*=}")
        shift
    done
    shift
    timeout "$tmo" mpirun.mpich -iface lo -np "$np" \
        -genv UCX_TLS "$tls" -genv UCX_NET_DEVICES "$BENCH_DEV" \
        -genv UCX_WARN_UNUSED_ENV_VARS n "${gs[@]}" "$@"
)

# bench_mpi_cc SRC OUT MPIS: SRC compiled for each MPI of MPIS (ompi: Open
# MPI, mpich: MPICH) as OUT.MPI, where missing or older than SRC
bench_mpi_cc() {
    local src=$1 out=$2 m cc
    for m in $3; do
        case $m in
        ompi)  cc=mpicc.openmpi ;;
        mpich) cc=mpicc.mpich ;;
        *) echo "unknown MPI $m" >&2; return 2 ;;
        esac
        if [ ! -x "$out.$m" ] || [ "$src" -nt "$out.$m" ]; then
            $cc -O2 -Wall -o "$out.$m" "$src" || return 1
        fi
    done
}

# bench_ucx_tls TL: UCX_TLS for a transport's runs: TL with self, and
# rc_verbs with ud_verbs beside it (UCP's auxiliary transport for its
# wire-up; the data goes over rc)
bench_ucx_tls() {
    if [ "$1" = rc_verbs ]; then
        echo rc_verbs,ud_verbs,self
    else
        echo "$1,self"
    fi
}

# BENCH_MEDIAN_AWK: an awk function for the tables' medians, put before a
# program (awk "$BENCH_MEDIAN_AWK"'...'): median(x, c) of x[1..c], sorting
# x in place; LO and HI get its smallest and largest value
BENCH_MEDIAN_AWK='
    function median(x, c,    a, b, t) {
        for (a = 1; a <= c; ++a)
            for (b = a + 1; b <= c; ++b)
                if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
        LO = x[1]; HI = x[c]
        return (c % 2) ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
    }'

# srqud_counters FILE NAME...: srqud's counters from UCX_SRQUD_STATS_DUMP
# output (contrib/lib/counters.sh)
. "$ROOT/contrib/lib/counters.sh"

# bench_tl_env TL: what a transport needs on rxe over lo (ud_verbs and
# rc_verbs: the GID index of ::1; srqud picks it alone). The series
# srqud-1 is srqud posting every send alone (UCX_SRQUD_TX_BATCH=1: srqud
# before its doorbell batch), in the same run; srqud-noback sends every
# acknowledgement alone (UCX_SRQUD_BACK_ACK=n: srqud before they rode on
# replies); srqud-sig signals every send (UCX_SRQUD_TX_CQ_MODERATION=1:
# srqud before a lone inline send went unsignaled).
bench_tl_env() {
    case "$1" in
    srqud)   echo "UCX_SRQUD_GID_INDEX=auto" ;;
    srqud-1) echo "UCX_SRQUD_GID_INDEX=auto UCX_SRQUD_TX_BATCH=1" ;;
    srqud-noback) echo "UCX_SRQUD_GID_INDEX=auto UCX_SRQUD_BACK_ACK=n" ;;
    srqud-sig) echo "UCX_SRQUD_GID_INDEX=auto UCX_SRQUD_TX_CQ_MODERATION=1" ;;
    srqud-*) echo "UCX_SRQUD_GID_INDEX=auto" ;;   # -t srqud-NAME+VAR=VALUE
    *)       echo "UCX_IB_GID_INDEX=2" ;;
    esac
}

# bench_variant_env VARIANT: a variant's settings for its ranks, its
# transport's (bench_tl_env) and those after a + (srqud-x+VAR=VALUE)
bench_variant_env() {
    local name=${1%%+*}
    echo "$(bench_tl_env "$(bench_tl "$name")") $(echo "${1#"$name"}" | tr + ' ')"
}

# bench_tl TL: the UCX transport of a series (srqud-1 is srqud)
bench_tl() {
    echo "${1%%-*}"
}

# bench_perftest TL TEST SIZE LAYER ITER [ARGS...]: one ucx_perftest
# server/client pair on BENCH_DEV (perftest-pair.sh); prints the final figures
# "lat_typical_us lat_avg_us bw_MBs msgrate", or FAIL with the run's output
# kept in $RESULTS/perftest-fail-TL-LAYER-TEST-SIZE.log. LAYER uct: -x TL
# (bcopy above 100 B); ucp: UCX_TLS=TL,self (rc_verbs with ud_verbs beside
# it, UCP's auxiliary transport for its wire-up; the data goes over rc).
# PERFTEST_CLIENT_WRAP / PERFTEST_SERVER_WRAP: a command each side runs
# under (perftest-pair.sh).
bench_perftest() {
    local tl=$1 test=$2 size=$3 layer=$4 n=$5
    shift 5
    local args envs out rc log
    envs=$(bench_tl_env "$tl")
    if [ "$layer" = uct ]; then
        args="-t $test -x $(bench_tl "$tl") -d $BENCH_DEV -n $n -s $size"
        [ "$size" -gt 100 ] && args="$args -D bcopy"
    else
        args="-t $test -n $n -s $size"
        envs="$envs UCX_TLS=$(bench_ucx_tls "$(bench_tl "$tl")") UCX_NET_DEVICES=$BENCH_DEV"
    fi
    # shellcheck disable=SC2086 # word lists
    out=$(PERFTEST_TIMEOUT=${PERFTEST_TIMEOUT:-300} \
          "$ROOT/contrib/bench/perftest-pair.sh" $envs -- $args "$@" 2>&1)
    rc=$?
    if [ $rc != 0 ] || ! echo "$out" | grep -q "Final:"; then
        log=$RESULTS/perftest-fail-$tl-$layer-$test-$size.log
        echo "$envs ucx_perftest $args $*: exit $rc" > "$log"
        echo "$out" >> "$log"
        echo FAIL
        return 1
    fi
    # Final: iterations, latency typical (median) / moment avg / overall
    # avg, bandwidth moment / overall, message rate moment / overall
    echo "$out" | awk '/Final:/ {printf "%.2f %.2f %.2f %.0f\n", $3, $5, $7, $9}'
}

# bench_base_lib MODULE DIR: DIR, a library directory of links to UCX's own
# libraries and modules, with MODULE as its srqud module: for runs of
# another build of srqud beside the installed one (LD_LIBRARY_PATH=DIR).
# Setting UCX_MODULE_DIR is not enough: UCX looks for a module first beside
# the libucs it runs (ucs/sys/module.c, dladdr of libucs + "/ucx"), and
# only then in MODULE_DIR, so it would load the installed srqud.
bench_base_lib() {
    local module=$1 dir=$2 lib=$SRQUD_BUILD/ucx/lib f
    rm -rf "$dir" && mkdir -p "$dir/ucx"
    for f in "$lib"/*.so*; do ln -s "$f" "$dir/"; done
    for f in "$lib"/ucx/*.so*; do
        case "$(basename "$f")" in libuct_srqud*) ;; *) ln -s "$f" "$dir/ucx/" ;; esac
    done
    cp "$module" "$dir/ucx/libuct_srqud.so.0"
    ln -s libuct_srqud.so.0 "$dir/ucx/libuct_srqud.so"
}

# bench_check_lib NAME DIR: a run with LD_LIBRARY_PATH=DIR must load DIR's
# own srqud module; prints which it loads (the dynamic loader says which
# file it opened: UCX's own module log is compiled out of a release build)
bench_check_lib() {
    local name=$1 dir=$2 loaded
    loaded=$(LD_LIBRARY_PATH="$dir" LD_DEBUG=files ucx_info -d 2>&1 |
             grep -o "file=[^ ]*libuct_srqud[^ ]*" | head -n 1)
    echo "$name loads ${loaded#file=}"
    case "${loaded#file=}" in
    "$dir"/ucx/libuct_srqud*) ;;
    *) echo "the $name side does not load its own module" >&2; return 1 ;;
    esac
}

# bench_base_variant BASE DIR: the variant srqud-base, srqud with the module
# BASE (another build, e.g. the commit before a change) from the library
# directory DIR (bench_base_lib), checked to load it; its ranks take
# "$(bench_base_env DIR)" beside their variant's settings
bench_base_variant() {
    [ -f "$1" ] || { echo "-b: no module $1" >&2; return 2; }
    bench_base_lib "$1" "$2"
    bench_check_lib srqud-base "$2" || return 1
}

# bench_base_option BASE DIR: a benchmark's -b: with a module BASE, the
# variant srqud-base (its library directory DIR) joins VARIANTS
bench_base_option() {
    [ -n "$1" ] || return 0
    bench_base_variant "$1" "$2" || return
    VARIANTS="$VARIANTS srqud-base"
}

# bench_base_env VARIANT DIR: the setting a variant's ranks take for it
bench_base_env() {
    [ "$1" = srqud-base ] && echo "LD_LIBRARY_PATH=$2"
}

# The UCT benchmark programs (flowctl, mem_peers, mem_sizes) into $RESULTS
bench_build() {
    make -s -C "$ROOT/contrib/bench" B="$RESULTS" >/dev/null
}
