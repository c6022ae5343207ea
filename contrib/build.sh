#!/bin/bash
#
# Build everything the tests and the demo need, on a fresh Debian 12 machine:
#   1. Debian packages (when run as root and something is missing)
#   2. UCX 1.13.1 from the distro source, with srqud in its module list
#      (contrib/build-ucx.sh, cached in build/)
#   3. srqud against that UCX, installed into its module directory
#   4. srqud against the stock Debian UCX, for the LD_PRELOAD route
#
# Idempotent: a second run only rebuilds what changed.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
export SRQUD_BUILD

log() { echo "== build: $*"; }

PACKAGES=(build-essential autoconf automake libtool pkg-config dpkg-dev
          libucx-dev ucx-utils libibverbs-dev librdmacm-dev libnuma-dev
          rdma-core ibverbs-providers ibverbs-utils
          googletest libgtest-dev
          qemu-system-x86 busybox-static kmod cpio iproute2
          python3
          libopenmpi-dev openmpi-bin libmpich-dev mpich bc
          python3-matplotlib)

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}" ${EXTRA_PACKAGES:-}; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "missing packages: ${missing[*]} (run as root or install them)" >&2
        exit 1
    fi
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

install_packages

log "UCX 1.13.1 with srqud in its module list"
"$ROOT/contrib/build-ucx.sh"
UCX_PREFIX=$SRQUD_BUILD/ucx
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-1.13.1

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
