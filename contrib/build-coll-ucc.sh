#!/bin/bash
#
# Open MPI's coll/ucc for Debian 12's Open MPI 4.1.4, built out of tree
# (issue 12): Debian builds Open MPI without UCC, so it ships no
# mca_coll_ucc.so. The component's 14 files are compiled against the
# headers of Debian's libopenmpi-dev (ompi-c.pc), as coll/sucg is, and
# linked against our UCC (contrib/build-ucc.sh). Chosen over building Open
# MPI 5: the MPI every other test here runs stays the same.
#
# Source, first that can be had: Debian's source package openmpi 4.1.4-3
# (the release installed; .dsc sha256 pinned, dpkg-source checks the
# tarballs), upstream's tag v4.1.4 in a local mirror (SRQUD_GIT_MIRRORS) or
# from the code host (commit and tar sha256 pinned). None: one line naming
# SRQUD_GIT_MIRRORS, status 3.
#
#   contrib/build-coll-ucc.sh       prints the component directory last
#
# Use: mpirun --mca mca_base_component_path DIR:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
#             --mca coll_ucc_enable 1 --mca coll_ucc_priority 100 ...
# with LD_LIBRARY_PATH holding UCC's UCX first (one libucp per process).
# Cached as $SRQUD_CACHE/coll-ucc-4.1.4-KEY (source pins, the UCC build,
# this script), linked as $SRQUD_BUILD/coll-ucc-4.1.4.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}

OMPI_DEBIAN=4.1.4-3
OMPI_DSC_SHA256=f81a77144a8f0ed58014a5f4f4406643c544b73d9e26cb6bb4eb3a3e60c172d5
OMPI_TAG=v4.1.4
OMPI_COMMIT=ffb0adcdd677a02ab396145c40352f8189132b86
# sha256 of: git archive --format=tar --prefix=ompi-4.1.4/ v4.1.4, what
# https://github.com/open-mpi/ompi/archive/refs/tags/v4.1.4.tar.gz
# decompresses to
OMPI_TAR_SHA256=b296f61b7f290b38225c978863eaba379615981502e1f0f41638e0532680456b
OMPI_TAG_URL=${OMPI_TAG_URL:-https://github.com/open-mpi/ompi/archive/refs/tags}
# what is compiled: the component, and a header that ompi/op/op.h includes
# and Debian's libopenmpi-dev lacks
PATHS=(ompi/mca/coll/ucc ompi/mpi/fortran/base/fint_2_int.h)

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)
. "$ROOT/contrib/lib/common.sh"    # log, die, fetch_*, cache_*
LOG_FD=2                           # stdout: the component directory

UCC_PREFIX=$("$ROOT/contrib/build-ucc.sh" | tail -1)
LINK=$SRQUD_BUILD/coll-ucc-4.1.4
KEY="debian:$OMPI_DEBIAN:${OMPI_DSC_SHA256:0:16} $OMPI_TAG:$OMPI_COMMIT:${OMPI_TAR_SHA256:0:16} ucc:$(sha1sum < "$UCC_PREFIX/.srqud-stamp" | cut -c1-12) script:$SCRIPT_HASH"
if cache_entry coll-ucc-4.1.4 "$KEY" && [ -f "$CACHE_ENTRY/lib/mca_coll_ucc.so" ]; then
    cache_link "$CACHE_ENTRY" "$LINK"
    log "cached in $CACHE_ENTRY/lib"
    echo "$LINK/lib"
    exit 0
fi
OUT=$CACHE_ENTRY

installed=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null || true)
case $installed in
    4.1.4-*) ;;
    *) die "need Debian's libopenmpi-dev 4.1.4, found '${installed:-none}'" ;;
esac

rm -rf "$OUT"
mkdir -p "$OUT/lib"
tree=$OUT/coll-ucc-4.1.4
if fetch_debian_source openmpi "$OMPI_DEBIAN" "$OMPI_DSC_SHA256" bookworm "$OUT/ompi"; then
    source="debian:openmpi $OMPI_DEBIAN"
else
    log "Debian's openmpi $OMPI_DEBIAN cannot be had here; upstream's $OMPI_TAG instead"
    fetch_verified --mirror open-mpi/ompi "$OMPI_TAG" --prefix ompi-4.1.4/ \
        --url "$OMPI_TAG_URL/$OMPI_TAG.tar.gz" --commit "$OMPI_COMMIT" \
        --sha256 "$OMPI_TAR_SHA256" --extract "$OUT/tar" "$OUT/ompi.tar"
    mv "$OUT/tar/ompi-4.1.4" "$OUT/ompi"
    rm -rf "$OUT/tar"
    source="upstream:$OMPI_TAG ($OMPI_COMMIT)"
fi
for p in "${PATHS[@]}"; do
    mkdir -p "$tree/$(dirname "$p")"
    cp -a "$OUT/ompi/$p" "$tree/$p"
done
rm -rf "$OUT/ompi"
echo "$source" > "$tree/.srqud-source"
src=$tree/ompi/mca/coll/ucc

log "compiling coll/ucc 4.1.4 ($source) against Debian's Open MPI $installed and $UCC_PREFIX"
# libmpi and libopen-pal are linked (Open MPI's own components are not):
# a wrong Open MPI then fails at load time with a name, as for coll/sucg
# -mcx16: opal's 128-bit compare-and-swap, as Open MPI's configure adds on x86_64
gcc -O2 -g -mcx16 -fPIC -shared -o "$OUT/lib/mca_coll_ucc.so" "$src"/*.c \
    $(pkg-config --cflags ompi-c) -I"$tree" -I"$UCC_PREFIX/include" \
    -L"$UCC_PREFIX/lib" -Wl,-rpath,"$UCC_PREFIX/lib" -lucc \
    $(pkg-config --libs ompi-c) -lopen-pal -Wl,--no-undefined \
    > "$OUT/compile.out" 2>&1 || { cat "$OUT/compile.out" >&2; die "compile failed"; }
nm -D --defined-only "$OUT/lib/mca_coll_ucc.so" | grep -q ' mca_coll_ucc_component$' ||
    die "mca_coll_ucc.so exports no mca_coll_ucc_component"
cache_done
cache_link "$OUT" "$LINK"
log "built $OUT/lib/mca_coll_ucc.so from $source"
echo "$LINK/lib"
