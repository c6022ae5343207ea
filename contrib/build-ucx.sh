#!/bin/bash
#
# Build UCX from a pinned source into $SRQUD_BUILD (issue 13: srqud on UCX
# 1.13, 1.18 and 1.22):
#
#   contrib/build-ucx.sh [--ucx VERSION]      VERSION: 1.13.1 (default),
#                                             1.18.1, 1.22.0
#
# 1.13.1  Debian 12's source package (the distro's UCX), into $SRQUD_BUILD/ucx
#         with "srqud" added to its uct module list, so that UCP dlopens
#         libuct_srqud with no preload. Configured exactly as Debian's package
#         (ucx_info -b of the stock build), so srqud compiled against one
#         config.h loads into both. Sources $SRQUD_BUILD/ucx-src/ucx-1.13.1,
#         objects $SRQUD_BUILD/ucx-obj.
# 1.18.1  Debian 13's source package ucx 1.18.1+ds-2, fetched with a private
#         apt state in $SRQUD_BUILD/apt (the system's apt lists stay as they
#         are); where that package cannot be had, upstream's tag v1.18.1
#         (pinned commit and sha256, as for 1.22.0), said so loudly and
#         recorded in the stamp. ":srqud" is appended to the compiled-in
#         uct_MODULES: UCX up to 1.21 dlopens only the module names compiled
#         in (src/ucs/sys/module.c).
# 1.22.0  upstream's tag v1.22.0 (pinned commit and sha256). srqud is NOT
#         added to its module list: UCX 1.22 scans its module directory and
#         UCX_PLUGIN_PATH for libuct_*.so.0, the route tested there.
#
# The newer two are configured as Debian configures UCX (--enable-mt
# --with-verbs --disable-backtrace-detail --disable-logging
# --enable-devel-headers --enable-cma; devel headers are required: srqud
# includes UCX's internal headers) less what costs build time and srqud does
# not use (CUDA, ROCm, ZE, gdrcopy, mlx5 and EFA, Java, Go, FUSE, docs),
# assertions as configure's default. Prefix $SRQUD_BUILD/ucx-VERSION, sources
# $SRQUD_BUILD/ucx-src/ucx-VERSION, objects $SRQUD_BUILD/ucx-obj-VERSION.
#
# Cached: the stamp in the prefix holds version + source hash + this script's
# hash; a second run with the same key does nothing. The prefix is the last
# line on stdout.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
. "$ROOT/contrib/ucx-versions.sh"
. "$ROOT/contrib/lib/common.sh"    # log, die, sha256_verify, fetch_verified
ucx_version_args build-ucx "$@"

# --- pins ---------------------------------------------------------------
# Debian source packages: version and sha256 of the .dsc (which pins the
# tarballs by their own checksums, checked by dpkg-source on extraction)
DEB_1_13_1=1.13.1-1
DSC_SHA256_1_13_1=bbe0768a0916a18f15de554660cfe5b7667ad5ba13e7e5f04f0662330cfcc664
DEB_1_18_1=1.18.1+ds-2
DSC_SHA256_1_18_1=2b88d76c443beda5f13c1774ae0bf85884f865c62a1ae133d3c8084b0d18691c
DEBIAN_SUITE_1_18_1=trixie
# Upstream tags: commit, and sha256 of the uncompressed tar stream
#   git archive --format=tar --prefix=ucx-VERSION/ vVERSION
# (what GitHub's .../archive/refs/tags/vVERSION.tar.gz decompresses to: it
# is git archive of the tag with that prefix)
COMMIT_1_18_1=d9aa5650d4cbcbb00d61af980614dbe9dd27a1f2
TAR_SHA256_1_18_1=b6cf1b1674a1e4cae6d1bb91414add13ad049a41fe6af0222f0716ede0c2b3f9
COMMIT_1_22_0=8a6b06fb880accbb933a79cda893883872c68d9d
TAR_SHA256_1_22_0=a75b1283f89a52c5e94f7fe2506c488828d01b4e69ad4d94716264de55fc7eb8
# where the upstream tags come from: a local bare mirror of openucx/ucx,
# else GitHub's tag archive
UCX_GIT_MIRROR=${UCX_GIT_MIRROR:-/work/.mirror/openucx+ucx/repo}
UCX_TAG_URL=${UCX_TAG_URL:-https://github.com/openucx/ucx/archive/refs/tags}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

SCRIPT_HASH=$(sha1sum "$0" | cut -c1-12)

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

# =========================================================================
# UCX 1.13.1: unchanged recipe, paths build/ucx, ucx-src, ucx-obj
# =========================================================================
build_1_13_1() {
    PREFIX=$SRQUD_BUILD/ucx
    SRCDIR=$SRQUD_BUILD/ucx-src
    OBJ=$SRQUD_BUILD/ucx-obj
    STAMP=$PREFIX/.srqud-stamp
    KEY="$UCX_VERSION debian:$DEB_1_13_1:dsc-sha256:${DSC_SHA256_1_13_1:0:16} script:$SCRIPT_HASH"

    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -x "$PREFIX/bin/ucx_info" ]; then
        log "cached in $PREFIX"
        echo "$PREFIX"
        exit 0
    fi

    installed=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
    case "$installed" in
        $UCX_VERSION-*) ;;
        *) die "need Debian's UCX $UCX_VERSION (libucx0), found '${installed:-none}'" ;;
    esac
    [ "$installed" = "$DEB_1_13_1" ] ||
        die "installed libucx0 is $installed, the pinned source is ucx $DEB_1_13_1 (update the pin)"

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
    # the .dsc that the tree came from is the pinned one
    sha256_verify "$SRCDIR/ucx_$DEB_1_13_1.dsc" "$DSC_SHA256_1_13_1"
    SRC=$SRCDIR/ucx-$UCX_VERSION
    grep -q "define(\[ucx_ver_minor\], 13)" "$SRC/configure.ac" ||
        die "$SRC is not UCX $UCX_VERSION"

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
        die "unexpected uct_MODULES: $(grep uct_MODULES config.h)"
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
}

# =========================================================================
# UCX 1.18.1 and 1.22.0
# =========================================================================

# fetch_debian VERSION: Debian's source package into $SRC, through an apt
# state of our own under $SRQUD_BUILD/apt. Fails (status 1) when the pinned
# package cannot be had.
fetch_debian() {
    local v=$1 deb dsc_sha suite apt dl
    deb=$(eval echo "\$DEB_${v//./_}")
    dsc_sha=$(eval echo "\$DSC_SHA256_${v//./_}")
    suite=$(eval echo "\$DEBIAN_SUITE_${v//./_}")
    apt=$SRQUD_BUILD/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" \
             "$apt/etc/sources.list.d" "$apt/etc/preferences.d"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_MIRROR $suite main" \
        > "$apt/etc/sources.list"
    : > "$apt/status"
    local opts=(-o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists"
                -o "Dir::State::status=$apt/status" -o "Dir::Cache=$apt/cache"
                -o "Dir::Etc::SourceList=$apt/etc/sources.list"
                -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
                -o "Dir::Etc::Preferences=$apt/etc/preferences"
                -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
                -o "APT::Sandbox::User=root")
    if ! apt-get "${opts[@]}" source --print-uris "ucx=$deb" >/dev/null 2>&1; then
        log "apt-get update ($suite deb-src, private state in $apt; a few seconds)"
        apt-get "${opts[@]}" update -qq >"$apt/update.out" 2>&1 ||
            { log "apt-get update failed: $(tail -1 "$apt/update.out")"; return 1; }
    fi
    dl=$SRQUD_BUILD/ucx-src/debian-$v
    rm -rf "$dl"
    mkdir -p "$dl"
    log "apt-get source --download-only ucx=$deb"
    (cd "$dl" && apt-get "${opts[@]}" source -qq --download-only "ucx=$deb") \
        >"$apt/source.out" 2>&1 ||
        { log "apt-get source failed: $(grep -m1 -E '^E:' "$apt/source.out" || tail -1 "$apt/source.out")"
          rm -rf "$dl"; return 1; }
    local dsc=$dl/ucx_$deb.dsc
    sha256_verify "$dsc" "$dsc_sha"
    # checks the tarballs against the .dsc's checksums
    (cd "$dl" && dpkg-source --require-strong-checksums -x "$dsc" "$SRC") \
        >"$dl/dpkg-source.out" 2>&1 ||
        { cat "$dl/dpkg-source.out" >&2; die "dpkg-source -x $dsc failed"; }
    echo "debian:$deb:dsc-sha256:${dsc_sha:0:16}" > "$SRC/.srqud-source"
}

# fetch_upstream VERSION: upstream's tag into $SRC, from the local mirror or
# GitHub, checked against the pinned commit and sha256
fetch_upstream() {
    local v=$1 commit tar_sha
    commit=$(eval echo "\$COMMIT_${v//./_}")
    tar_sha=$(eval echo "\$TAR_SHA256_${v//./_}")
    fetch_verified --git "$UCX_GIT_MIRROR" "v$v" --prefix "ucx-$v/" \
        --url "$UCX_TAG_URL/v$v.tar.gz" --commit "$commit" --sha256 "$tar_sha" \
        --extract "$SRQUD_BUILD/ucx-src" "$SRQUD_BUILD/ucx-src/ucx-$v.tar"
    echo "git:v$v:$commit:tar-sha256:${tar_sha:0:16}" > "$SRC/.srqud-source"
}

build_newer() {
    local v=$UCX_VERSION minor add_srqud
    minor=$(echo "$v" | cut -d. -f2)
    PREFIX=$SRQUD_BUILD/ucx-$v
    SRC=$SRQUD_BUILD/ucx-src/ucx-$v
    OBJ=$SRQUD_BUILD/ucx-obj-$v
    STAMP=$PREFIX/.srqud-stamp
    case $v in 1.18.1) add_srqud=yes ;; *) add_srqud=no ;; esac

    # the source: kept once fetched and checked (.srqud-source names it)
    if [ ! -f "$SRC/.srqud-source" ]; then
        rm -rf "$SRC"
        case $v in
            1.18.1)
                if ! fetch_debian "$v"; then
                    rm -rf "$SRC"
                    log "WARNING: Debian's ucx $DEB_1_18_1 cannot be had here;" \
                        "using upstream's tag v$v instead (Debian's package may differ by its patches and +ds repack)"
                    fetch_upstream "$v"
                fi ;;
            *)  fetch_upstream "$v" ;;
        esac
    fi
    grep -q "define(\[ucx_ver_minor\], $minor)" "$SRC/configure.ac" || die "$SRC is not UCX $v"
    KEY="$v $(cat "$SRC/.srqud-source") script:$SCRIPT_HASH"

    if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -x "$PREFIX/bin/ucx_info" ]; then
        log "cached in $PREFIX ($(cat "$SRC/.srqud-source"))"
        echo "$PREFIX"
        exit 0
    fi
    log "UCX $v from $(cat "$SRC/.srqud-source")"

    rm -rf "$OBJ"
    mkdir -p "$OBJ"
    : > "$OBJ/timings.txt"
    if [ ! -x "$SRC/configure" ]; then
        log "autogen (about 10 s)"
        # GIT_CEILING_DIRECTORIES: 1.22's autogen.sh runs "git submodule
        # update" (GPUNetIO, CUDA only), which must not find the git
        # repository around $SRQUD_BUILD
        run_step autogen "$OBJ/autogen.out" \
            env GIT_CEILING_DIRECTORIES="$SRQUD_BUILD/ucx-src" \
            sh -c "cd '$SRC' && ./autogen.sh" ||
            { tail -30 "$OBJ/autogen.out"; exit 1; }
    fi

    CONFIGURE_OPTS=(--prefix="$PREFIX" --libdir="$PREFIX/lib"
        --disable-option-checking --disable-silent-rules --disable-maintainer-mode
        --disable-dependency-tracking
        # Debian's
        --enable-mt --with-verbs --disable-backtrace-detail --disable-logging
        --enable-devel-headers --enable-cma
        # not needed by srqud's tests, and long to build
        --without-cuda --without-rocm --without-ze --without-gdrcopy
        --without-mlx5 --without-knem --without-xpmem --without-ugni --without-mad
        --without-java --without-go --without-fuse3 --disable-doxygen-doc
        # shared libraries only: static ones would compile everything twice
        --disable-static)
    [ "$minor" -ge 22 ] && CONFIGURE_OPTS+=(--without-efa --without-gga --without-gaudi)
    cd "$OBJ"
    log "configure (about 15 s; prefix $PREFIX)"
    printf '%s\n' "${CONFIGURE_OPTS[@]}" > configure.args
    run_step configure configure.out "$SRC/configure" "${CONFIGURE_OPTS[@]}" ||
        { tail -30 configure.out; exit 1; }

    local modules
    modules=$(sed -n 's/^#define uct_MODULES "\(.*\)"$/\1/p' config.h)
    case ":$modules:" in
        *:ib:*) ;;
        *) die "uct_MODULES \"$modules\" has no ib module (verbs not found?)" ;;
    esac
    case ":$modules:" in *:srqud:*) die "uct_MODULES \"$modules\" already has srqud" ;; esac
    if [ "$add_srqud" = yes ]; then
        # UCX <= 1.21 dlopens only the compiled-in module names: add srqud
        sed -i "s/^#define uct_MODULES \".*\"$/#define uct_MODULES \"$modules:srqud\"/" config.h
        log "uct_MODULES \"$modules\" -> \"$modules:srqud\""
    else
        log "uct_MODULES \"$modules\" (srqud found by the module directory scan)"
    fi

    log "make -j$JOBS (about 1-2 min)"
    run_step make make.out make -j"$JOBS" ||
        { grep -B3 -A10 "error" make.out | head -60; exit 1; }
    log "make install (about 5 s)"
    rm -rf "$PREFIX"
    run_step install install.out make install ||
        { tail -30 install.out; exit 1; }

    "$PREFIX/bin/ucx_info" -v > /dev/null || die "$PREFIX/bin/ucx_info -v fails"
    [ -d "$PREFIX/lib/ucx" ] || die "no module directory $PREFIX/lib/ucx"
    echo "$KEY" > "$STAMP"
    log "installed in $PREFIX ($(tr '\n' ' ' < timings.txt))"
    echo "$PREFIX"
}

case $UCX_VERSION in
    1.13.1) build_1_13_1 ;;
    1.18.1|1.22.0) build_newer ;;
    *) die "unsupported UCX version '$UCX_VERSION' (supported: ${SUPPORTED// /, })" ;;
esac
