#!/bin/bash
#
# A sanitizer build of the srqud module, its device tests and the UCP
# checks, against Debian's UCX (the LD_PRELOAD route), in build/tsan or
# build/asan:
#
#   contrib/build-san.sh thread | address
#   contrib/softroce/vm-run -- env LD_PRELOAD=build/tsan/src/uct/ib/srqud/.libs/libuct_srqud.so \
#       build/tsan/test/gtest/srqud_vm_test --gtest_filter='share.*'
#   contrib/softroce/vm-run -- env LD_PRELOAD=build/asan/src/uct/ib/srqud/.libs/libuct_srqud.so \
#       build/asan/test/gtest/srqud_vm_test --gtest_filter='srqud_attack*'
#
# What it sees: srqud's own code and the tests', and (thread) the locks
# UCX takes through pthread (spinlocks, mutexes); UCX itself is not
# instrumented, so a race inside libucs/libuct is not reported, and
# neither is one that only UCX's atomics would order; (address) every
# access srqud makes, to its own memory or to memory UCX or the test
# allocated. contrib/vm-tests.sh --stock runs the address build's attack
# tests and UCP force_close check always, the thread build's threaded
# tests with SRQUD_FULL=1 (contrib/test.sh --full).
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
KIND=${1:?usage: $0 thread|address}
case $KIND in
thread)  DIR=$SRQUD_BUILD/tsan; FLAGS="-fsanitize=thread -O1 -g" ;;
address) DIR=$SRQUD_BUILD/asan
         FLAGS="-fsanitize=address -fno-omit-frame-pointer -O1 -g" ;;
*)       echo "usage: $0 thread|address" >&2; exit 2 ;;
esac
UCX_SRC=$SRQUD_BUILD/ucx-src/ucx-1.13.1
. "$ROOT/contrib/lib/common.sh"
LOG_NAME=build-san-$KIND

[ -d "$UCX_SRC" ] || die "$UCX_SRC missing: run contrib/build.sh first"
mkdir -p "$DIR"
cd "$DIR"
if [ ! -f Makefile ] || [ "$ROOT/configure" -nt Makefile ]; then
    log "configure $DIR (UCX /usr, $FLAGS)"
    "$ROOT/configure" --with-ucx=/usr --with-ucx-src="$UCX_SRC" \
        --prefix="$DIR/install" --without-ompi --without-mpich \
        CFLAGS="$FLAGS" CXXFLAGS="$FLAGS" LDFLAGS="${FLAGS%% *}" \
        > configure.out 2>&1 || { tail -30 configure.out; exit 1; }
fi
log "make (about 2 min the first time)"
make -j"${JOBS:-2}" -C src/uct/ib/srqud > make.out 2>&1 &&
    make -j"${JOBS:-2}" -C test/gtest srqud_vm_test >> make.out 2>&1 &&
    make -j"${JOBS:-2}" -C test/ucp srqud_ucp_check >> make.out 2>&1 ||
    { tail -30 make.out; exit 1; }
log "done: $DIR/test/gtest/srqud_vm_test, $DIR/test/ucp/srqud_ucp_check"
