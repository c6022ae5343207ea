#!/bin/bash
#
# Open MPI's coll/ucc for Debian 12's Open MPI 4.1.4, built out of tree
# (issue 12): Debian builds Open MPI without UCC, so it ships no
# mca_coll_ucc.so. The component's sources come from upstream's tag v4.1.4
# (the release Debian packages; pinned commit and sha256 of the tar stream
# of ompi/mca/coll/ucc), compiled against the headers of Debian's
# libopenmpi-dev (ompi-c.pc), as coll/sucg is, and linked against our UCC
# (contrib/build-ucc.sh). Chosen over building Open MPI 5 from Debian 13's
# source: one directory of 14 files instead of a whole MPI, and the MPI
# every other test here runs stays the same.
#
#   contrib/build-coll-ucc.sh       prints the component directory last
#
# Use: mpirun --mca mca_base_component_path DIR:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
#             --mca coll_ucc_enable 1 --mca coll_ucc_priority 100 ...
# with LD_LIBRARY_PATH holding UCC's UCX first (one libucp per process).
# Cached: the stamp holds the source, the UCC stamp and this script's hash.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}

OMPI_TAG=v4.1.4
OMPI_COMMIT=ffb0adcdd677a02ab396145c40352f8189132b86
# sha256 of: git archive --format=tar --prefix=coll-ucc-4.1.4/ v4.1.4 \
#   ompi/mca/coll/ucc ompi/mpi/fortran/base/fint_2_int.h
# (the header: ompi/op/op.h includes it, and Debian's libopenmpi-dev lacks it)
OMPI_TAR_SHA256=4dafe000e9f55e1f7c6f69746b06cc58177d00781ac34cd36e9e17106e5ded3e
OMPI_GIT_MIRROR=${OMPI_GIT_MIRROR:-/work/.mirror/open-mpi+ompi/repo}

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)
. "$ROOT/contrib/lib/common.sh"    # log, die, fetch_verified
LOG_FD=2                           # stdout: the component directory

UCC_PREFIX=$("$ROOT/contrib/build-ucc.sh" | tail -1)
OUT=$SRQUD_BUILD/coll-ucc-4.1.4
STAMP=$OUT/.srqud-stamp
KEY="$OMPI_TAG:$OMPI_COMMIT:${OMPI_TAR_SHA256:0:16} ucc:$(cat "$UCC_PREFIX/.srqud-stamp" | sha1sum | cut -c1-12) script:$SCRIPT_HASH"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -f "$OUT/lib/mca_coll_ucc.so" ]; then
    log "cached in $OUT/lib"
    echo "$OUT/lib"
    exit 0
fi

installed=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null || true)
case $installed in
    4.1.4-*) ;;
    *) die "need Debian's libopenmpi-dev 4.1.4, found '${installed:-none}'" ;;
esac
[ -d "$OMPI_GIT_MIRROR" ] || die "no Open MPI mirror at $OMPI_GIT_MIRROR (set OMPI_GIT_MIRROR)"

# checked before the old build goes
tar=$SRQUD_BUILD/coll-ucc-4.1.4.tar
fetch_verified --git "$OMPI_GIT_MIRROR" "$OMPI_TAG" --prefix coll-ucc-4.1.4/ \
    --commit "$OMPI_COMMIT" --sha256 "$OMPI_TAR_SHA256" \
    "$tar" ompi/mca/coll/ucc ompi/mpi/fortran/base/fint_2_int.h
rm -rf "$OUT"
mkdir -p "$OUT/lib"
tar -xf "$tar" -C "$OUT"
rm -f "$tar"
src=$OUT/coll-ucc-4.1.4/ompi/mca/coll/ucc

log "compiling coll/ucc $OMPI_TAG against Debian's Open MPI $installed and $UCC_PREFIX"
# libmpi and libopen-pal are linked (Open MPI's own components are not):
# a wrong Open MPI then fails at load time with a name, as for coll/sucg
# -mcx16: opal's 128-bit compare-and-swap, as Open MPI's configure adds on x86_64
gcc -O2 -g -mcx16 -fPIC -shared -o "$OUT/lib/mca_coll_ucc.so" "$src"/*.c \
    $(pkg-config --cflags ompi-c) -I"$OUT/coll-ucc-4.1.4" -I"$UCC_PREFIX/include" \
    -L"$UCC_PREFIX/lib" -Wl,-rpath,"$UCC_PREFIX/lib" -lucc \
    $(pkg-config --libs ompi-c) -lopen-pal -Wl,--no-undefined \
    > "$OUT/compile.out" 2>&1 || { cat "$OUT/compile.out" >&2; die "compile failed"; }
nm -D --defined-only "$OUT/lib/mca_coll_ucc.so" | grep -q ' mca_coll_ucc_component$' ||
    die "mca_coll_ucc.so exports no mca_coll_ucc_component"
echo "$KEY" > "$STAMP"
log "built $OUT/lib/mca_coll_ucc.so"
echo "$OUT/lib"
