#!/bin/bash
#
# Build the distro's UCX 1.13.1 source into $SRQUD_BUILD/ucx with "srqud"
# added to its uct module list, so that UCP dlopens libuct_srqud with no
# preload. Configured exactly as Debian's package (ucx_info -b of the stock
# build), so srqud compiled against one config.h loads into both.
# Cached: a second run with the same script does nothing.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
UCX_VERSION=1.13.1
PREFIX=$SRQUD_BUILD/ucx
SRCDIR=$SRQUD_BUILD/ucx-src
OBJ=$SRQUD_BUILD/ucx-obj
JOBS=${JOBS:-2}
STAMP=$PREFIX/.srqud-stamp
KEY="$UCX_VERSION $(sha1sum "$0" | cut -c1-12)"

log() { echo "== build-ucx: $*"; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -x "$PREFIX/bin/ucx_info" ]; then
    log "cached in $PREFIX"
    echo "$PREFIX"
    exit 0
fi

installed=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
case "$installed" in
    $UCX_VERSION-*) ;;
    *) echo "build-ucx: need Debian's UCX $UCX_VERSION (libucx0), found '${installed:-none}'" >&2
       exit 1 ;;
esac

# The source package: apt-get source needs a deb-src entry
if [ ! -f "$SRCDIR/ucx-$UCX_VERSION/configure.ac" ]; then
    mkdir -p "$SRCDIR"
    if ! apt-get source --print-uris ucx=$installed >/dev/null 2>&1; then
        log "adding a deb-src entry for bookworm"
        cat > /etc/apt/sources.list.d/srqud-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt-get update -qq
    fi
    log "apt-get source ucx=$installed"
    (cd "$SRCDIR" && apt-get source -qq "ucx=$installed" >/dev/null 2>&1)
fi
SRC=$SRCDIR/ucx-$UCX_VERSION
grep -q "define(\[ucx_ver_minor\], 13)" "$SRC/configure.ac" ||
    { echo "build-ucx: $SRC is not UCX $UCX_VERSION" >&2; exit 1; }

if [ ! -x "$SRC/configure" ]; then
    log "autogen"
    (cd "$SRC" && ./autogen.sh >/dev/null 2>&1)
fi

rm -rf "$OBJ"
mkdir -p "$OBJ"
cd "$OBJ"
log "configure (Debian's options, prefix $PREFIX)"
"$SRC/configure" --prefix="$PREFIX" --libdir="$PREFIX/lib" \
    --disable-option-checking --disable-silent-rules --disable-maintainer-mode \
    --disable-dependency-tracking \
    --enable-mt --with-verbs --disable-backtrace-detail --disable-logging \
    --enable-devel-headers --enable-cma \
    --without-fuse3 --without-java --disable-doxygen-doc > configure.out 2>&1 ||
    { tail -30 configure.out; exit 1; }

# The module list is compiled in: add srqud to it
grep -q '^#define uct_MODULES ":ib:rdmacm:cma"' config.h ||
    { echo "build-ucx: unexpected uct_MODULES: $(grep uct_MODULES config.h)" >&2; exit 1; }
sed -i 's/^#define uct_MODULES ":ib:rdmacm:cma"/#define uct_MODULES ":ib:rdmacm:cma:srqud"/' config.h

log "make -j$JOBS"
make -j"$JOBS" > make.out 2>&1 || { grep -B3 -A10 "error" make.out | head -60; exit 1; }
make install > install.out 2>&1 || { tail -30 install.out; exit 1; }

# Same build as Debian's but for paths and the module list (Debian's build
# also records three HAVE_DECL_FUSE_* = 0 that --without-fuse3 omits; only
# the FUSE vfs module, which neither build has, reads them)
diff <(ucx_info -b | grep '^#define' | grep -v -E 'uct_MODULES|CONFIGURE_FLAGS|HAVE_DECL_FUSE_') \
     <("$PREFIX/bin/ucx_info" -b | grep '^#define' | grep -v -E 'uct_MODULES|CONFIGURE_FLAGS|HAVE_DECL_FUSE_') \
     > config-diff.out || true
if [ -s config-diff.out ]; then
    echo "build-ucx: config.h differs from Debian's beyond paths and modules:" >&2
    cat config-diff.out >&2
    exit 1
fi

echo "$KEY" > "$STAMP"
log "installed in $PREFIX"
echo "$PREFIX"
