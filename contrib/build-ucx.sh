#!/bin/bash
#
# Build a UCX release of contrib/ucx-versions.txt from its pinned source:
#
#   contrib/build-ucx.sh [--ucx VERSION]     default 1.13.1; "devel" is the
#                                            pinned commit of UCX's master
#
# Source, first that can be had: Debian's source package where the row
# names one (1.13.1 from bookworm, 1.18.1 from trixie; fetched with an apt
# state of our own, the system's apt lists stay as they are; the .dsc's
# sha256 is pinned and dpkg-source checks the tarballs against it), the
# tag in a local mirror (SRQUD_GIT_MIRRORS, contrib/lib/common.sh), the
# code host's tag tarball. Commit and tar sha256 are checked either way.
# None: one line naming SRQUD_GIT_MIRRORS, status 3.
#
# Configured as Debian configures UCX (--enable-mt --with-verbs
# --disable-backtrace-detail --disable-logging --enable-devel-headers
# --enable-cma; srqud includes UCX's internal headers). 1.13.1, Debian 12's
# own UCX, exactly so, and its config.h is compared with the installed
# package's (srqud built against one loads into both); the others less
# what costs build time and srqud does not use (CUDA, ROCm, ZE, gdrcopy,
# mlx5, EFA, Java, Go, FUSE, docs). Where the row says "list" (UCX <= 1.21
# dlopens only the compiled-in module names, src/ucs/sys/module.c) srqud
# is added to uct_MODULES; "scan" (1.22 on) finds it in the module
# directory or UCX_PLUGIN_PATH. Upstream fixes that a release lacks and
# srqud's tests need are applied from contrib/ucx-patches/VERSION/ (1.20.1:
# tcp on lo, fixed in 1.21.0).
#
# Cached (contrib/lib/common.sh): $SRQUD_CACHE/ucx-VERSION-KEY holds src,
# obj and prefix, keyed by the version's row, its patches and this script; linked as
# $SRQUD_BUILD/ucx-VERSION (prefix), ucx-src/ucx-VERSION, ucx-obj-VERSION,
# and for 1.13.1 also $SRQUD_BUILD/ucx and ucx-obj. The prefix is the last
# line on stdout.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
. "$ROOT/contrib/ucx-versions.sh"
. "$ROOT/contrib/lib/common.sh"    # log, die, fetch_verified, cache_*
LOG_FD=2                           # stdout: the prefix
ucx_version_args build-ucx "$@"
V=$UCX_VERSION

UCX_TAG_URL=${UCX_TAG_URL:-https://github.com/openucx/ucx/archive}

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)
KEY="ucx $V $UCX_COMMIT $UCX_TAR_SHA256 $UCX_DEBIAN $UCX_LOADS script:$SCRIPT_HASH"
# Upstream fixes of a release that srqud's tests need, applied as a
# distribution applies its own (contrib/ucx-patches/VERSION/*.patch, each
# naming its upstream commit); they are part of the key
PATCHES=()
for p in "$ROOT/contrib/ucx-patches/$V"/*.patch; do
    [ -f "$p" ] && PATCHES+=("$p")
done
if [ ${#PATCHES[@]} -gt 0 ]; then
    KEY="$KEY patches:$(cat "${PATCHES[@]}" | sha1sum | cut -c1-12)"
fi

link_entry() {
    cache_link "$CACHE_ENTRY/prefix" "$SRQUD_BUILD/ucx-$V"
    cache_link "$CACHE_ENTRY/src" "$SRQUD_BUILD/ucx-src/ucx-$V"
    cache_link "$CACHE_ENTRY/obj" "$SRQUD_BUILD/ucx-obj-$V"
    if [ "$V" = "$UCX_DEFAULT" ]; then
        cache_link "ucx-$V" "$SRQUD_BUILD/ucx"
        cache_link "ucx-obj-$V" "$SRQUD_BUILD/ucx-obj"
    fi
}

if cache_entry "ucx-$V" "$KEY" && [ -x "$CACHE_ENTRY/prefix/bin/ucx_info" ]; then
    link_entry
    log "UCX $V cached in $CACHE_ENTRY ($(cat "$CACHE_ENTRY/src/.srqud-source"))"
    echo "$SRQUD_BUILD/ucx-$V"
    exit 0
fi

SRC=$CACHE_ENTRY/src
OBJ=$CACHE_ENTRY/obj
PREFIX=$CACHE_ENTRY/prefix

# run_step NAME OUTFILE CMD... : run with output in OUTFILE, report the time
run_step() {
    local name=$1 out=$2 t0 rc
    shift 2
    t0=$(date +%s)
    "$@" > "$out" 2>&1 && rc=0 || rc=$?
    echo "$name $(( $(date +%s) - t0 ))s" >> "$OBJ/timings.txt"
    [ "$rc" = 0 ] && log "$name done in $(( $(date +%s) - t0 ))s"
    return $rc
}

# fetch_debian: the row's Debian source package into $SRC
fetch_debian() {
    local deb dsc_sha suite
    IFS=: read -r deb dsc_sha suite <<< "$UCX_DEBIAN"
    fetch_debian_source ucx "$deb" "$dsc_sha" "$suite" "$SRC" || return 1
    echo "debian:$deb ($suite)" > "$SRC/.srqud-source"
}

# fetch_upstream: the pinned commit into $SRC, from a local mirror or the
# code host, checked against the commit and the tar's sha256
fetch_upstream() {
    local ref=v$V prefix=ucx-$V/ url=$UCX_TAG_URL/refs/tags/v$V.tar.gz
    if [ "$V" = devel ]; then
        ref=$UCX_COMMIT prefix=ucx-$UCX_COMMIT/ url=$UCX_TAG_URL/$UCX_COMMIT.tar.gz
    fi
    fetch_verified --mirror openucx/ucx "$ref" --prefix "$prefix" \
        --url "$url" --commit "$UCX_COMMIT" --sha256 "$UCX_TAR_SHA256" \
        --extract "$CACHE_ENTRY/tar" "$CACHE_ENTRY/ucx.tar"
    mv "$CACHE_ENTRY/tar/${prefix%/}" "$SRC"
    rm -rf "$CACHE_ENTRY/tar"
    echo "upstream:$ref ($UCX_COMMIT)" > "$SRC/.srqud-source"
}

rm -rf "$CACHE_ENTRY"
mkdir -p "$CACHE_ENTRY" "$OBJ"
: > "$OBJ/timings.txt"
if [ "$UCX_DEBIAN" = - ] || ! fetch_debian; then
    rm -rf "$SRC"
    [ "$UCX_DEBIAN" = - ] ||
        log "WARNING: Debian's ucx ${UCX_DEBIAN%%:*} cannot be had here; upstream's v$V instead" \
            "(Debian's package may differ by its patches)"
    fetch_upstream
fi
for p in "${PATCHES[@]}"; do
    log "applying contrib/ucx-patches/$V/$(basename "$p")"
    patch -d "$SRC" -p1 --forward --batch --quiet < "$p" ||
        die "contrib/ucx-patches/$V/$(basename "$p") does not apply to $(cat "$SRC/.srqud-source")"
    sed -i "1s/\$/ +$(basename "$p" .patch)/" "$SRC/.srqud-source"
done
minor=$(sed -n 's/^define(\[ucx_ver_minor\], *\([0-9]*\)).*/\1/p' "$SRC/configure.ac")
[ "$V" = devel ] || [ "1.$minor" = "${V%.*}" ] || die "$SRC is UCX 1.$minor, not $V"
log "UCX $V from $(cat "$SRC/.srqud-source") into $CACHE_ENTRY"

if [ ! -x "$SRC/configure" ]; then
    log "autogen (about 10 s)"
    # GIT_CEILING_DIRECTORIES: autogen.sh of 1.22 on runs "git submodule
    # update" (GPUNetIO, CUDA only), which must find no repository around
    run_step autogen "$OBJ/autogen.out" \
        env GIT_CEILING_DIRECTORIES="$CACHE_ENTRY" sh -c "cd '$SRC' && ./autogen.sh" ||
        { tail -30 "$OBJ/autogen.out"; exit 1; }
fi

CONFIGURE_OPTS=(--prefix="$PREFIX" --libdir="$PREFIX/lib"
    --disable-option-checking --disable-silent-rules --disable-maintainer-mode
    --disable-dependency-tracking
    # Debian's
    --enable-mt --with-verbs --disable-backtrace-detail --disable-logging
    --enable-devel-headers --enable-cma)
if [ "$V" = 1.13.1 ]; then
    CONFIGURE_OPTS+=(--without-fuse3 --without-java --disable-doxygen-doc)
else
    CONFIGURE_OPTS+=(
        # not needed by srqud's tests, and long to build
        --without-cuda --without-rocm --without-ze --without-gdrcopy
        --without-mlx5 --without-knem --without-xpmem --without-ugni --without-mad
        --without-java --without-go --without-fuse3 --disable-doxygen-doc
        --without-efa --without-gga --without-gaudi
        # shared libraries only: static ones would compile everything twice
        --disable-static)
fi
cd "$OBJ"
log "configure (about 15 s; prefix $PREFIX)"
printf '%s\n' "${CONFIGURE_OPTS[@]}" > configure.args
run_step configure configure.out "$SRC/configure" "${CONFIGURE_OPTS[@]}" ||
    { tail -30 configure.out; exit 1; }

modules=$(sed -n 's/^#define uct_MODULES "\(.*\)"$/\1/p' config.h)
case ":$modules:" in
    *:ib:*) ;;
    *) die "uct_MODULES \"$modules\" has no ib module (verbs not found?)" ;;
esac
case ":$modules:" in *:srqud:*) die "uct_MODULES \"$modules\" already has srqud" ;; esac
if [ "$UCX_LOADS" = list ]; then
    sed -i "s/^#define uct_MODULES \".*\"$/#define uct_MODULES \"$modules:srqud\"/" config.h
    log "uct_MODULES \"$modules\" -> \"$modules:srqud\""
else
    log "uct_MODULES \"$modules\" (srqud found by the module directory scan)"
fi

total=$(find "$SRC/src" -name '*.c' | wc -l)
log "make -j$JOBS (1.5-4 min)"
t0=$(date +%s)
make_progress "$total" make.out || exit 1
echo "make $(( $(date +%s) - t0 ))s" >> timings.txt
run_step install install.out make install || { tail -30 install.out; exit 1; }

if [ "$V" = 1.13.1 ]; then
    # the same build as Debian's but for paths and the module list (Debian's
    # also records three HAVE_DECL_FUSE_* = 0 that --without-fuse3 omits;
    # only the FUSE vfs module, which neither build has, reads them)
    filter() { grep '^#define' | grep -v -E 'uct_MODULES|CONFIGURE_FLAGS|HAVE_DECL_FUSE_'; }
    if command -v ucx_info >/dev/null &&
       [ "$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null)" = "${UCX_DEBIAN%%:*}" ]; then
        diff <(ucx_info -b | filter) <("$PREFIX/bin/ucx_info" -b | filter) > config-diff.out ||
            { cat config-diff.out >&2; die "config.h differs from Debian's UCX beyond paths and modules"; }
    else
        log "Debian's libucx0 ${UCX_DEBIAN%%:*} is not installed: config.h not compared with it"
    fi
fi
"$PREFIX/bin/ucx_info" -v > /dev/null || die "$PREFIX/bin/ucx_info -v fails"
[ -d "$PREFIX/lib/ucx" ] || die "no module directory $PREFIX/lib/ucx"
echo "$KEY $(cat "$SRC/.srqud-source")" > "$PREFIX/.srqud-stamp"
cache_done
link_entry
log "installed in $PREFIX ($(tr '\n' ' ' < timings.txt))"
echo "$SRQUD_BUILD/ucx-$V"
