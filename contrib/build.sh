#!/bin/bash
#
# Build everything the tests and the demo need, on a fresh Debian 12 machine:
#   1. Debian packages (when run as root and something is missing)
#   2. UCX 1.13.1 from the distro source, with srqud in its module list
#      (contrib/build-ucx.sh, cached in build/)
#   3. srqud against that UCX, installed into its module directory
#   4. srqud against the stock Debian UCX, for the LD_PRELOAD route
#
#   contrib/build.sh --ucx VERSION
#       another UCX version of contrib/ucx-versions.txt instead
#       (build/ucx-VERSION), and srqud against it in build/obj-VERSION:
#       installed into that UCX's module directory up to 1.21 (its module
#       list has srqud), into build/plugins-VERSION from 1.22 (found
#       through UCX_PLUGIN_PATH, set by contrib/env.sh); "devel" is UCX's
#       pinned development commit, configured with --enable-ucx-devel
#   contrib/build.sh --ucc
#       as --ucx 1.18.1, plus UCC (contrib/build-ucc.sh, build/ucc-V) and
#       sucg's UCC TL, installed into UCC's component directory
#
# Idempotent: a second run only rebuilds what changed.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
export SRQUD_BUILD
. "$ROOT/contrib/lib/common.sh"

# Progress: each step that log() announces says how long it usually takes
# and, while it runs, prints a line every 30 s (PROGRESS_EVERY): elapsed
# time, files compiled so far, apt's own progress. The loop is a bash of its
# own: a subshell would inherit this shell's EXIT trap and job table.
PROGRESS_LOOP='
    every=$1 parent=$2 since=$3 total=$4 status=$5
    while sleep "$every" >/dev/null 2>&1; do
        kill -0 "$parent" 2>/dev/null || exit 0
        t=$(( $(date +%s) - since ))
        n=$(find "$SRQUD_BUILD" -name "*.o" -newermt "@$since" 2>/dev/null | wc -l)
        extra=
        [ "$n" -gt 0 ] && extra=", $n$total files compiled"
        if [ -s "$status" ]; then
            IFS=: read -r kind _ pct what < <(tail -n 1 "$status")
            [ "$kind" = dlstatus ] && kind=download || kind=install
            extra=", $kind ${pct%%.*}%: $what"
        fi
        echo "== build:    ... $((t / 60)) min $((t % 60)) s$extra"
    done'
PROGRESS_PID=
progress_stop() {   # KILL: TERM could reach it before its exec, in our trap
    [ -z "$PROGRESS_PID" ] || kill -KILL "$PROGRESS_PID" 2>/dev/null || true
    PROGRESS_PID=
}
trap progress_stop EXIT
log() {
    local hint='' total='' now
    progress_stop
    case $* in
    "UCX 1.13.1"*) hint=" (about 4 min when not cached)" total=" of about 450" ;;
    "make "*)      hint=" (about 40 s the first time)" ;;
    esac
    log_line "$*$hint"
    now=$(date +%s)
    bash -c "$PROGRESS_LOOP" progress "${PROGRESS_EVERY:-30}" $$ "$now" \
        "$total" "${APT_STATUS:-}" &
    PROGRESS_PID=$!
    disown "$PROGRESS_PID"      # no "Killed" report when it is stopped
}

UCX_VER=1.13.1
WITH_UCC=no
case "${1:-}" in
--ucx) UCX_VER=${2:?--ucx VERSION}; shift 2 ;;
--ucc) UCX_VER=1.18.1 WITH_UCC=yes; shift ;;
"")    ;;
*)     echo "usage: $0 [--ucx VERSION | --ucc]" >&2; exit 2 ;;
esac

PACKAGES=(build-essential autoconf automake libtool pkg-config dpkg-dev
          libucx-dev ucx-utils libibverbs-dev librdmacm-dev libnuma-dev
          rdma-core ibverbs-providers ibverbs-utils
          googletest libgtest-dev
          clang libclang-rt-14-dev      # test/fuzz (libFuzzer)
          qemu-system-x86 busybox-static kmod cpio iproute2
          python3
          libopenmpi-dev openmpi-bin libmpich-dev mpich bc
          python3-matplotlib valgrind    # valgrind: contrib/bench/instr-count.sh
          xz-utils iputils-ping file)   # the VM's (contrib/softroce/vm-run)

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}" ${EXTRA_PACKAGES:-}; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing+=("$p")
    done
    # SRQUD_LIST_MISSING=1: only print them (contrib/demo.sh announces them)
    [ -z "${SRQUD_LIST_MISSING:-}" ] || { echo "${missing[*]}"; exit 0; }
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "missing packages: ${missing[*]} (run as root or install them)" >&2
        exit 1
    fi
    local out=$SRQUD_BUILD/apt-get.log t0=$SECONDS
    mkdir -p "$SRQUD_BUILD"
    APT_STATUS=$SRQUD_BUILD/apt-get.status
    : > "$APT_STATUS"
    log "changing the system: apt-get update, apt-get install of ${#missing[@]}" \
        "package(s) (about 2 min when most are missing): ${missing[*]}"
    { apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
          -o APT::Status-Fd=3 "${missing[@]}" 3>"$APT_STATUS"; } > "$out" 2>&1 ||
        { progress_stop; echo "build: apt-get failed; the end of $out:" >&2
          tail -n 25 "$out" >&2; exit 1; }
    progress_stop
    APT_STATUS=
    log_line "packages installed in $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s (log: $out)"
}

install_packages

. "$ROOT/contrib/ucx-versions.sh"
ucx_pin "$UCX_VER" || die "UCX $UCX_VER is not in contrib/ucx-versions.txt"
log "UCX $UCX_VER"
rc=0
"$ROOT/contrib/build-ucx.sh" --ucx "$UCX_VER" >/dev/null || rc=$?
progress_stop
[ $rc = 0 ] || exit $rc    # $NOSOURCE_STATUS: the source cannot be had
if [ "$UCX_VER" = 1.13.1 ]; then
    UCX_PREFIX=$SRQUD_BUILD/ucx
else
    UCX_PREFIX=$SRQUD_BUILD/ucx-$UCX_VER
fi
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-$UCX_VER
devel_args=()
[ "$UCX_VER" = devel ] && devel_args=(--enable-ucx-devel)

cd "$ROOT"
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
   [ -n "$(find . -name Makefile.am -newer configure -not -path './build/*' | head -1)" ]; then
    log "autogen"
    ./autogen.sh >/dev/null 2>&1
fi

build_tree() {   # build_tree DIR UCX_PREFIX [CONFIGURE_ARGS...]
    local dir=$1 prefix=$2
    shift 2
    mkdir -p "$dir"
    cd "$dir"
    # reconfigure when configure changed or the options did
    if [ ! -f Makefile ] || [ "$ROOT/configure" -nt Makefile ] ||
       [ "$(cat configure.args 2>/dev/null)" != "$*" ]; then
        log "configure $dir (UCX $prefix $*)"
        "$ROOT/configure" --with-ucx="$prefix" --with-ucx-src="$UCX_SRC" \
            --prefix="$SRQUD_BUILD/install" "$@" > configure.out 2>&1 ||
            { tail -30 configure.out; exit 1; }
        echo "$*" > configure.args
    fi
    log "make $dir"
    make -j"$JOBS" > make.out 2>&1 || { grep -E -B2 -A8 "error" make.out | head -60; exit 1; }
    make -j"$JOBS" check TESTS= > make-check.out 2>&1 ||
        { grep -E -B2 -A8 "error" make-check.out | head -60; exit 1; }
    cd "$ROOT"
}

if [ "$UCX_VER" != 1.13.1 ]; then
    # Another version: the transport and its tests (sucg and its MPI glue
    # are tested on the default version)
    case $UCX_LOADS in
    scan) moddir=$SRQUD_BUILD/plugins-$UCX_VER ;;
    *)    moddir=$UCX_PREFIX/lib/ucx ;;
    esac
    ucc_args=()
    if [ "$WITH_UCC" = yes ]; then
        log "UCC against UCX $UCX_VER (about 4 min when not cached)"
        UCC_PREFIX=$("$ROOT/contrib/build-ucc.sh" | tail -1)
        ucc_v=$(basename "$UCC_PREFIX")
        ucc_args=(--with-ucc="$UCC_PREFIX" --with-ucc-src="$SRQUD_BUILD/ucc-src/$ucc_v"
                  --with-ucc-build="$SRQUD_BUILD/ucc-obj-${ucc_v#ucc-}")
    fi
    build_tree "$SRQUD_BUILD/obj-$UCX_VER" "$UCX_PREFIX" --without-ompi --without-mpich \
        --with-ucx-module-dir="$moddir" "${ucc_args[@]}" "${devel_args[@]}"
    if [ "$WITH_UCC" = yes ]; then
        make -C "$SRQUD_BUILD/obj-$UCX_VER/src/sucg/ucc" install \
            > "$SRQUD_BUILD/obj-$UCX_VER/make-install-ucc.out" 2>&1 ||
            { tail -30 "$SRQUD_BUILD/obj-$UCX_VER/make-install-ucc.out"; exit 1; }
        test -e "$UCC_PREFIX/lib/ucc/libucc_tl_sucg.so"
        log "UCC TL: $UCC_PREFIX/lib/ucc/libucc_tl_sucg.so"
    fi
    make -C "$SRQUD_BUILD/obj-$UCX_VER/src/uct/ib/srqud" install \
        > "$SRQUD_BUILD/obj-$UCX_VER/make-install.out" 2>&1 ||
        { tail -30 "$SRQUD_BUILD/obj-$UCX_VER/make-install.out"; exit 1; }
    test -e "$moddir/libuct_srqud.so.0"
    log "done: UCX $UCX_VER in $UCX_PREFIX, module $moddir/libuct_srqud.so.0 (SRQUD_UCX=$UCX_VER . contrib/env.sh)"
    exit 0
fi

# Route (a): our UCX, module installed where it dlopens modules from; sucg
# and its MPI glue (required here: the tests run them) into build/install:
# lib/libsucg.so, lib/libsucg_pmpi.so, lib/openmpi/mca_coll_sucg.so
build_tree "$SRQUD_BUILD/obj" "$UCX_PREFIX" --with-ompi=yes --with-mpich=yes
make -C "$SRQUD_BUILD/obj" install > "$SRQUD_BUILD/obj/make-install.out" 2>&1 ||
    { tail -30 "$SRQUD_BUILD/obj/make-install.out"; exit 1; }
test -e "$UCX_PREFIX/lib/ucx/libuct_srqud.so.0"
test -e "$SRQUD_BUILD/install/lib/openmpi/mca_coll_sucg.so"
test -e "$SRQUD_BUILD/install/lib/libsucg_pmpi.so"

# Route (b): stock Debian UCX, module LD_PRELOADed (no MPI glue: route b
# tests the module loading only)
build_tree "$SRQUD_BUILD/stock" /usr --without-ompi --without-mpich
test -e "$SRQUD_BUILD/stock/src/uct/ib/srqud/.libs/libuct_srqud.so"

log "done: module $UCX_PREFIX/lib/ucx/libuct_srqud.so.0, preload $SRQUD_BUILD/stock/src/uct/ib/srqud/.libs/libuct_srqud.so, sucg + MPI glue in $SRQUD_BUILD/install"
