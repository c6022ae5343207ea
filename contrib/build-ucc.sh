#!/bin/bash
#
# Build UCC from a pinned source into $SRQUD_BUILD, for srqud's UCC TL
# (issue 12):
#
#   contrib/build-ucc.sh            prints the prefix as its last line
#
# Which UCC: upstream's tag v1.8.0 (pinned commit and sha256 of the tar
# stream), the newest UCC release in our mirror. Debian testing lists ucc 1.9.0-2 (its .dsc
# would be preferred), but its files could not be downloaded
# here (the archive answered 404 for its pool files on 2026-11-25, .dsc
# sha256 fb807bdf3c007ab0...); upstream's
# v1.9.0 final is not in our mirror, only v1.9.0-rc1, and a release candidate
# is not what clusters run. Said loudly, and recorded in the stamp.
#
# Built against UCX 1.18.1 ($SRQUD_BUILD/ucx-1.18.1, contrib/build-ucx.sh):
# UCC >= 1.5 calls ucp_memh_pack (UCX >= 1.14), so Debian 12's UCX 1.13.1
# cannot carry it. Open MPI 4.1.4 (Debian's mpicc/mpicxx) builds UCC's MPI
# test and benchmark (ucc_test_mpi, ucc_perftest). Only the TLs ucp and self
# (no CUDA, NCCL, SHARP, mlx5 here).
#
# srqud's TL (src/sucg/ucc) compiles against UCC's internal headers, so the
# configured source and object trees are kept. Cached as
# $SRQUD_CACHE/ucc-V-KEY (source pins, the UCX build, this script) with
# src, obj and prefix (lib/ucc holds the libucc_tl_*.so), linked as
# $SRQUD_BUILD/ucc-src/ucc-V, ucc-obj-V and ucc-V. Source: the tag in a
# local mirror (SRQUD_GIT_MIRRORS) or from the code host; none: one line
# naming SRQUD_GIT_MIRRORS, status 3.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}

# --- pins ---------------------------------------------------------------
UCC_VERSION=1.8.0
UCC_COMMIT=211e2f60436cba7c044195acb43752aa70eab38f
# sha256 of: git archive --format=tar --prefix=ucc-1.8.0/ v1.8.0
UCC_TAR_SHA256=209d1a4c654ce393f3b47a06b870e7a4910e96a47638b7440417f326bef055f3
UCC_UCX=1.18.1

UCC_TAG_URL=${UCC_TAG_URL:-https://github.com/openucx/ucc/archive/refs/tags}

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)
. "$ROOT/contrib/lib/common.sh"    # log, die, fetch_verified
LOG_FD=2                           # stdout: the prefix

run_step() {   # run_step NAME OUTFILE CMD...: output in OUTFILE, time logged
    local name=$1 out=$2 t0 rc
    shift 2
    t0=$(date +%s)
    "$@" > "$out" 2>&1 && rc=0 || rc=$?
    [ "$rc" = 0 ] && log "$name done in $(( $(date +%s) - t0 ))s"
    return $rc
}

link_entry() {
    cache_link "$CACHE_ENTRY/prefix" "$SRQUD_BUILD/ucc-$UCC_VERSION"
    cache_link "$CACHE_ENTRY/src" "$SRQUD_BUILD/ucc-src/ucc-$UCC_VERSION"
    cache_link "$CACHE_ENTRY/obj" "$SRQUD_BUILD/ucc-obj-$UCC_VERSION"
}

UCX_PREFIX=$("$ROOT/contrib/build-ucx.sh" --ucx "$UCC_UCX" | tail -1)
KEY="ucc $UCC_VERSION $UCC_COMMIT ${UCC_TAR_SHA256:0:16} ucx:$(sha1sum < "$UCX_PREFIX/.srqud-stamp" | cut -c1-12) script:$SCRIPT_HASH"
if cache_entry "ucc-$UCC_VERSION" "$KEY" && [ -x "$CACHE_ENTRY/prefix/bin/ucc_info" ]; then
    link_entry
    log "cached in $CACHE_ENTRY"
    echo "$SRQUD_BUILD/ucc-$UCC_VERSION"
    exit 0
fi
SRC=$CACHE_ENTRY/src
OBJ=$CACHE_ENTRY/obj
PREFIX=$CACHE_ENTRY/prefix
rm -rf "$CACHE_ENTRY"
mkdir -p "$CACHE_ENTRY"
fetch_verified --mirror openucx/ucc "v$UCC_VERSION" --prefix "ucc-$UCC_VERSION/" \
    --url "$UCC_TAG_URL/v$UCC_VERSION.tar.gz" --commit "$UCC_COMMIT" \
    --sha256 "$UCC_TAR_SHA256" --extract "$CACHE_ENTRY/tar" "$CACHE_ENTRY/ucc.tar"
mv "$CACHE_ENTRY/tar/ucc-$UCC_VERSION" "$SRC"
rm -rf "$CACHE_ENTRY/tar"
echo "upstream:v$UCC_VERSION ($UCC_COMMIT)" > "$SRC/.srqud-source"
log "UCC $UCC_VERSION from $(cat "$SRC/.srqud-source"), UCX $UCC_UCX ($UCX_PREFIX)"

if [ ! -x "$SRC/configure" ]; then
    run_step autogen "$SRC/autogen.out" \
        env GIT_CEILING_DIRECTORIES="$CACHE_ENTRY" sh -c "cd '$SRC' && ./autogen.sh" ||
        { tail -30 "$SRC/autogen.out"; exit 1; }
fi
mkdir -p "$OBJ"
cd "$OBJ"
log "configure (about 30 s; prefix $PREFIX)"
run_step configure configure.out "$SRC/configure" --prefix="$PREFIX" \
    --disable-dependency-tracking --disable-static \
    --with-ucx="$UCX_PREFIX" --with-mpi=/usr --with-tls=ucp,self \
    --without-cuda --without-rocm --without-nccl --without-rccl \
    --without-sharp --without-doca_urom --without-ibverbs \
    LDFLAGS="-Wl,-rpath,$UCX_PREFIX/lib" ||
    { tail -30 configure.out; exit 1; }
grep -q "define HAVE_MPI 1" config.h || die "configure found no MPI (mpicc, mpicxx)"

total=$(find "$SRC/src" "$SRC/test/mpi" "$SRC/tools" -name '*.c' -o -name '*.cc' | wc -l)
log "make -j$JOBS (about 3-5 min)"
make_progress "$total" make.out || exit 1
run_step install install.out make install || { tail -30 install.out; exit 1; }
[ -x "$PREFIX/bin/ucc_test_mpi" ] || die "no ucc_test_mpi in $PREFIX/bin"
"$PREFIX/bin/ucc_info" -v >/dev/null || die "$PREFIX/bin/ucc_info -v fails"
echo "$KEY" > "$PREFIX/.srqud-stamp"
cache_done
link_entry
log "installed in $PREFIX"
echo "$SRQUD_BUILD/ucc-$UCC_VERSION"
