#!/bin/bash
#
# A ThreadSanitizer build of the srqud module and of its device tests,
# against Debian's UCX (the LD_PRELOAD route), in build/tsan:
#
#   contrib/build-tsan.sh
#   contrib/softroce/vm-run -- env LD_PRELOAD=build/tsan/src/uct/ib/srqud/.libs/libuct_srqud.so \
#       build/tsan/test/gtest/srqud_vm_test --gtest_filter='share.*'
#
# What it sees: srqud's own code and the tests' threads, and the locks
# UCX takes through pthread (spinlocks, mutexes); UCX itself is not
# instrumented, so a race inside libucs/libuct is not reported, and
# neither is one that only UCX's atomics would order. contrib/vm-tests.sh
# --stock runs it with SRQUD_FULL=1 (contrib/test.sh --full).
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
DIR=$SRQUD_BUILD/tsan
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-1.13.1
FLAGS="-fsanitize=thread -O1 -g"

[ -d "$UCX_SRC" ] || { echo "build-tsan: $UCX_SRC missing: run contrib/build.sh first" >&2; exit 1; }
mkdir -p "$DIR"
cd "$DIR"
if [ ! -f Makefile ] || [ "$ROOT/configure" -nt Makefile ]; then
    echo "== build-tsan: configure $DIR (UCX /usr, $FLAGS)"
    "$ROOT/configure" --with-ucx=/usr --with-ucx-src="$UCX_SRC" \
        --prefix="$DIR/install" --without-ompi --without-mpich \
        CFLAGS="$FLAGS" CXXFLAGS="$FLAGS" LDFLAGS="-fsanitize=thread" \
        > configure.out 2>&1 || { tail -30 configure.out; exit 1; }
fi
echo "== build-tsan: make (about 2 min the first time)"
make -j"${JOBS:-2}" -C src/uct/ib/srqud > make.out 2>&1 &&
    make -j"${JOBS:-2}" -C test/gtest srqud_vm_test >> make.out 2>&1 ||
    { tail -30 make.out; exit 1; }
echo "== build-tsan: done: $DIR/test/gtest/srqud_vm_test"
