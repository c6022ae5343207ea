# Source this file (bash or sh) to use a UCX built by contrib/build-ucx.sh
# with srqud:
#   . contrib/env.sh                      UCX 1.13.1 (the default)
#   SRQUD_UCX=1.18.1 . contrib/env.sh     another version built with
#                                         contrib/build.sh --ucx 1.18.1
# UCX up to 1.21 dlopens libuct_srqud from its module directory because it
# is in its compiled-in module list; from 1.22 ("scan" in
# contrib/ucx-versions.txt) UCX finds it in build/plugins-VERSION through
# UCX_PLUGIN_PATH, as a stock UCX would.
if [ -n "${BASH_SOURCE:-}" ]; then
    SRQUD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
elif [ -z "${SRQUD_ROOT:-}" ]; then
    SRQUD_ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
fi
SRQUD_BUILD=${SRQUD_BUILD:-$SRQUD_ROOT/build}
SRQUD_UCX=${SRQUD_UCX:-1.13.1}
if [ "$SRQUD_UCX" = 1.13.1 ]; then
    UCX_PREFIX=$SRQUD_BUILD/ucx
    SRQUD_OBJ=$SRQUD_BUILD/obj
else
    UCX_PREFIX=$SRQUD_BUILD/ucx-$SRQUD_UCX
    SRQUD_OBJ=$SRQUD_BUILD/obj-$SRQUD_UCX
fi
if [ "$(awk -v v="$SRQUD_UCX" '!/^#/ && $1 == v { print $5 }' \
        "$SRQUD_ROOT/contrib/ucx-versions.txt")" = scan ]; then
    UCX_PLUGIN_PATH=$SRQUD_BUILD/plugins-$SRQUD_UCX
    export UCX_PLUGIN_PATH
fi
PATH=$UCX_PREFIX/bin:$PATH
LD_LIBRARY_PATH=$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# for the stock-UCX route: LD_PRELOAD=$SRQUD_PRELOAD
SRQUD_PRELOAD=$SRQUD_BUILD/stock/src/uct/ib/srqud/.libs/libuct_srqud.so
export SRQUD_ROOT SRQUD_BUILD SRQUD_UCX SRQUD_OBJ UCX_PREFIX PATH LD_LIBRARY_PATH SRQUD_PRELOAD
