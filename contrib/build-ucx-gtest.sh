#!/bin/bash
#
# Build UCX's UCT conformance suite (test/gtest/uct + common of the UCX
# 1.13.1 source that contrib/build-ucx.sh built) with srqud in its
# transport list, into $SRQUD_BUILD/ucx-gtest/gtest. The list is compiled
# in (uct_test.h), so the suite's sources are copied and that one line is
# patched; nothing of UCX's own tree changes. Cached by a key over the
# inputs. Run it in the VM with test/ucx-gtest/run.sh.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
JOBS=${JOBS:-2}
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-1.13.1
UCX_OBJ=$SRQUD_BUILD/ucx-obj
OUT=$SRQUD_BUILD/ucx-gtest
STAMP=$OUT/.stamp

log() { echo "== build-ucx-gtest: $*"; }

[ -f "$UCX_SRC/test/gtest/uct/uct_test.h" ] && [ -d "$UCX_OBJ/src/ucp/.libs" ] ||
    { echo "build-ucx-gtest: run contrib/build-ucx.sh first" >&2; exit 1; }

KEY=$(cat "$0" "$ROOT/test/ucx-gtest/Makefile" "$ROOT/test/ucx-gtest/srqud.patch" |
      sha1sum | cut -c1-12)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && [ -x "$OUT/gtest" ]; then
    log "cached in $OUT"
    exit 0
fi

rm -rf "$OUT/src"
mkdir -p "$OUT"
cp -a "$UCX_SRC/test/gtest" "$OUT/src"
# srqud joins the list of transports the generic UCT tests instantiate on,
# and the peer-failure tests shorten its peer timeout as they do ud's
patch -s -d "$OUT/src" -p1 < "$ROOT/test/ucx-gtest/srqud.patch"
grep -q 'srqud' "$OUT/src/uct/uct_test.h" ||
    { echo "build-ucx-gtest: patching the transport list failed" >&2; exit 1; }

log "make -j$JOBS (about 60 C++ files)"
make -f "$ROOT/test/ucx-gtest/Makefile" -j"$JOBS" \
    UCX_SRC="$UCX_SRC" UCX_OBJ="$UCX_OBJ" OUT="$OUT" > "$OUT/make.out" 2>&1 ||
    { grep -E -B2 -A12 "error" "$OUT/make.out" | head -80; exit 1; }

echo "$KEY" > "$STAMP"
log "built $OUT/gtest"
