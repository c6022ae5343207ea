#!/bin/bash
#
# Build UCX's UCT conformance suite (test/gtest/uct + common of the UCX
# source that contrib/build-ucx.sh built) with srqud in its transport list:
#
#   contrib/build-ucx-gtest.sh [--ucx VERSION]   a row of
#                                                contrib/ucx-versions.txt
#
# linked against the UCX of that version in $SRQUD_BUILD. The list is
# compiled in (uct_test.h), so the suite's sources are copied and that one
# line is patched (test/ucx-gtest/srqud-VERSION.patch of the newest
# version not above this one; srqud.patch for 1.13); nothing of UCX's own
# tree changes. Cached as $SRQUD_CACHE/ucx-gtest-VERSION-KEY (the inputs'
# hash), linked as $SRQUD_BUILD/ucx-gtest (1.13.1) or ucx-gtest-VERSION.
# Run it in the VM with test/ucx-gtest/run.sh (UCX_GTEST=path/to/gtest for
# another version).
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
. "$ROOT/contrib/ucx-versions.sh"
. "$ROOT/contrib/lib/common.sh"    # log, die, cache_*
ucx_version_args build-ucx-gtest "$@"
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-$UCX_VERSION
UCX_PREFIX=$SRQUD_BUILD/ucx-$UCX_VERSION
UCX_OBJ=$SRQUD_BUILD/ucx-obj-$UCX_VERSION
LINK=$SRQUD_BUILD/ucx-gtest-$UCX_VERSION
[ "$UCX_VERSION" = "$UCX_DEFAULT" ] && LINK=$SRQUD_BUILD/ucx-gtest
PATCH=$ROOT/test/ucx-gtest/srqud.patch
for v in $(ucx_versions --devel); do
    [ -f "$ROOT/test/ucx-gtest/srqud-$v.patch" ] && PATCH=$ROOT/test/ucx-gtest/srqud-$v.patch
    [ "$v" = "$UCX_VERSION" ] && break
done
[ -f "$UCX_SRC/test/gtest/uct/uct_test.h" ] && [ -d "$UCX_OBJ/src/ucp/.libs" ] &&
    [ -f "$UCX_PREFIX/.srqud-stamp" ] ||
    die "run contrib/build-ucx.sh --ucx $UCX_VERSION first"
[ -f "$UCX_SRC/test/gtest/common/googletest/gtest.cc" ] ||
    die "$UCX_SRC has no bundled googletest (test/gtest/common/googletest)"
# inputs: this script, the Makefile, the patch, and the UCX build (its stamp)
KEY=$(cat "$0" "$ROOT/test/ucx-gtest/Makefile" "$PATCH" "$UCX_PREFIX/.srqud-stamp" |
      sha1sum | cut -c1-12)
if cache_entry "ucx-gtest-$UCX_VERSION" "$KEY" && [ -x "$CACHE_ENTRY/gtest" ]; then
    cache_link "$CACHE_ENTRY" "$LINK"
    log "cached in $CACHE_ENTRY"
    exit 0
fi
OUT=$CACHE_ENTRY
rm -rf "$OUT"
mkdir -p "$OUT"
cp -a "$UCX_SRC/test/gtest" "$OUT/src"
# srqud joins the list of transports the generic UCT tests instantiate on,
# and the peer-failure tests shorten its peer timeout as they do ud's and
# count as pending only the requests pending_add took (purge_failed_peer
# counted one refused with UCS_ERR_BUSY, which it then retries, and
# expected it purged: 65 against 64 in one CI run)
patch -s --fuzz=0 -d "$OUT/src" -p1 < "$PATCH"
grep -q 'srqud' "$OUT/src/uct/uct_test.h" || die "patching the transport list failed"

log "UCX $UCX_VERSION: make -j$JOBS (about 60 C++ files, about 2-3 min)"
t0=$(date +%s)
make -f "$ROOT/test/ucx-gtest/Makefile" -j"$JOBS" UCX_VERSION="$UCX_VERSION" \
    UCX_SRC="$UCX_SRC" UCX_OBJ="$UCX_OBJ" OUT="$OUT" > "$OUT/make.out" 2>&1 ||
    { grep -E -B2 -A12 "error" "$OUT/make.out" | head -80; exit 1; }
log "make done in $(( $(date +%s) - t0 ))s"

cache_done
cache_link "$OUT" "$LINK"
log "built $OUT/gtest ($PATCH)"
