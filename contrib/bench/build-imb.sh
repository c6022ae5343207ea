#!/bin/bash
#
# Intel MPI Benchmarks' IMB-MPI1 from a pinned source, built once with each
# of Debian's MPIs, for contrib/bench/mpi-calls.sh -I:
#
#   contrib/bench/build-imb.sh        prints the directory as its last line
#
# Which IMB: upstream's tag IMB-v2021.11 (pinned commit and sha256 of the
# tar stream), the newest release in our mirror; Debian 12 has no package
# of it. Built with mpicxx.openmpi and mpicxx.mpich (IMB's own Makefile,
# TARGET=MPI1, its flags: -O0 -Werror; the MPI library does the timed
# work; the MPIs' C++ bindings left out). Cached as
# $SRQUD_CACHE/imb-2021.11-KEY (pins, the MPIs' versions, this script),
# linked as $SRQUD_BUILD/imb with IMB-MPI1.ompi and IMB-MPI1.mpich.
# Source: the tag in a local mirror (SRQUD_GIT_MIRRORS) or from the code
# host; none: one line naming SRQUD_GIT_MIRRORS, status 3.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}

# --- pins ---------------------------------------------------------------
IMB_VERSION=2021.11
IMB_COMMIT=1a7cada09754be3ccf60c2698305a4c020b52e28
# sha256 of: git archive --format=tar --prefix=mpi-benchmarks-IMB-v2021.11/ IMB-v2021.11
IMB_TAR_SHA256=f94df91009b3ef6feb80a4841b97ea2730911635627726f5bada7b6b09035627

IMB_TAG_URL=${IMB_TAG_URL:-https://github.com/intel/mpi-benchmarks/archive/refs/tags}

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)
. "$ROOT/contrib/lib/common.sh"    # log, die, fetch_verified, cache_*
LOG_FD=2                           # stdout: the directory

mpis="ompi:$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null)"
mpis="$mpis mpich:$(dpkg-query -W -f='${Version}' libmpich-dev 2>/dev/null)"
KEY="imb $IMB_VERSION $IMB_COMMIT ${IMB_TAR_SHA256:0:16} $mpis script:$SCRIPT_HASH"
if cache_entry "imb-$IMB_VERSION" "$KEY" && [ -x "$CACHE_ENTRY/IMB-MPI1.ompi" ] &&
   [ -x "$CACHE_ENTRY/IMB-MPI1.mpich" ]; then
    cache_link "$CACHE_ENTRY" "$SRQUD_BUILD/imb"
    log "cached in $CACHE_ENTRY"
    echo "$SRQUD_BUILD/imb"
    exit 0
fi
# the Soft-RoCE VM sees the host's cache read-only: IMB is built on the host
if ! mkdir -p "$(dirname "$CACHE_ENTRY")" 2>/dev/null ||
   [ ! -w "$(dirname "$CACHE_ENTRY")" ]; then
    die "IMB is not built, and $(dirname "$CACHE_ENTRY") cannot be written" \
        "here (in the VM it is read-only): run contrib/bench/build-imb.sh" \
        "on the host first"
fi
rm -rf "$CACHE_ENTRY"
mkdir -p "$CACHE_ENTRY"
fetch_verified --mirror intel/mpi-benchmarks "IMB-v$IMB_VERSION" \
    --prefix "mpi-benchmarks-IMB-v$IMB_VERSION/" \
    --url "$IMB_TAG_URL/IMB-v$IMB_VERSION.tar.gz" --commit "$IMB_COMMIT" \
    --sha256 "$IMB_TAR_SHA256" --extract "$CACHE_ENTRY/tar" "$CACHE_ENTRY/imb.tar"
for m in ompi mpich; do
    case $m in
    ompi)  cc=mpicc.openmpi cxx=mpicxx.openmpi ;;
    mpich) cc=mpicc.mpich cxx=mpicxx.mpich ;;
    esac
    src=$CACHE_ENTRY/src-$m
    rm -rf "$src"
    cp -a "$CACHE_ENTRY/tar/mpi-benchmarks-IMB-v$IMB_VERSION" "$src"
    t0=$SECONDS
    log "IMB-MPI1 with $cxx (about 1-2 min)"
    # IMB calls MPI's C API only; without the MPI's C++ bindings, whose
    # Open MPI 4.1 header fails IMB's -Werror under gcc 12 (cast-function-type)
    make -C "$src" -j"$JOBS" IMB-MPI1 CC="$cc" CXX="$cxx" \
        CPPFLAGS="-DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX" > "$src/make.out" 2>&1 ||
        { tail -30 "$src/make.out"; die "IMB-MPI1 with $cxx failed"; }
    install -m 755 "$src/IMB-MPI1" "$CACHE_ENTRY/IMB-MPI1.$m"
    log "IMB-MPI1.$m done in $((SECONDS - t0)) s"
done
rm -rf "$CACHE_ENTRY/tar" "$CACHE_ENTRY"/src-*
echo "upstream:IMB-v$IMB_VERSION ($IMB_COMMIT)" > "$CACHE_ENTRY/.srqud-source"
cache_done
cache_link "$CACHE_ENTRY" "$SRQUD_BUILD/imb"
echo "$SRQUD_BUILD/imb"
