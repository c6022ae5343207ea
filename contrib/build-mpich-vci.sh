#!/bin/bash
#
# MPICH with VCIs: Debian's MPICH 4.0.2, rebuilt with per-VCI critical
# sections, so that MPIR_CVAR_CH4_NUM_VCIS=N gives each communicator a UCP
# worker of its own (a srqud interface per thread). Debian's binary
# package is built with the global critical section and asserts
# n_vcis <= MPIDI_CH4_MAX_VCIS (1).
#
#   contrib/build-mpich-vci.sh        # prints the prefix on its last line
#
# Pinned: the .dsc's sha256 below; the tarball is checked against it by
# dpkg-source. Cached as $SRQUD_CACHE/mpich-vci-KEY (the .dsc and this
# script), linked as $SRQUD_BUILD/mpich-vci; about 6 min on 2 cores the
# first time. Outside CI: contrib/bench/mpi_threads.sh uses it.
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
DEB=4.0.2-3
DSC_SHA256=67036921ec09db4da04568546691fe05d3118ac7e4a37020bc7b74a43de36cd0
MAX_VCIS=16
CONF=(--with-device=ch4:ucx --with-ucx=/usr
      --enable-thread-cs=per-vci --with-ch4-max-vcis=$MAX_VCIS
      --with-datatype-engine=dataloop --with-hwloc=/usr
      --disable-fortran --disable-romio --disable-doc --disable-static
      --enable-fast=O2 --enable-g=none)

. "$ROOT/contrib/lib/common.sh"
LOG_FD=2

LINK=$SRQUD_BUILD/mpich-vci
if cache_entry mpich-vci "$DEB $DSC_SHA256 script:$(sha1sum < "$0" | cut -c1-12)" &&
   [ -x "$CACHE_ENTRY/prefix/bin/mpicc" ]; then
    cache_link "$CACHE_ENTRY" "$LINK"
    log "cached: $CACHE_ENTRY/prefix"
    echo "$LINK/prefix"
    exit 0
fi
PREFIX=$CACHE_ENTRY/prefix
SRC=$CACHE_ENTRY/src
rm -rf "$CACHE_ENTRY"
mkdir -p "$CACHE_ENTRY"
# the upstream tarball only: Debian's patches are packaging
SKIP_PATCHES=1 fetch_debian_source mpich "$DEB" "$DSC_SHA256" bookworm "$SRC" ||
    no_source "Debian's mpich $DEB (its source package is MPICH's own tarball)"
OBJ=$SRC/obj
mkdir -p "$OBJ"
cd "$OBJ"
t0=$(date +%s)
log "configure (${CONF[*]}), about 1 min"
../configure --prefix="$PREFIX" "${CONF[@]}" > configure.out 2>&1 ||
    { tail -30 configure.out >&2; die "configure failed: $OBJ/configure.out"; }
log "make -j${JOBS:-2}, about 5 min (progress: $OBJ/make.out)"
make -j"${JOBS:-2}" > make.out 2>&1 || { tail -30 make.out >&2; die "make failed: $OBJ/make.out"; }
make install > install.out 2>&1 || { tail -30 install.out >&2; die "make install failed"; }
grep -q "MPIDI_CH4_MAX_VCIS $MAX_VCIS" "$OBJ/src/include/mpichconf.h" ||
    die "the build does not define MPIDI_CH4_MAX_VCIS $MAX_VCIS"
cache_done
cache_link "$CACHE_ENTRY" "$LINK"
log "installed in $PREFIX ($(( $(date +%s) - t0 )) s)"
echo "$LINK/prefix"
