# Source this file (bash or sh) to use a UCX built by contrib/build-ucx.sh
# with srqud:
#   . contrib/env.sh                      UCX 1.13.1 (the default)
#   SRQUD_UCX=1.18.1 . contrib/env.sh     another version built with
#                                         contrib/build.sh --ucx 1.18.1
# UCX 1.13.1 and 1.18.1 dlopen libuct_srqud from their module directory
# because it is in their compiled-in module list; UCX 1.22.0 finds it in
# build/plugins-1.22.0 through UCX_PLUGIN_PATH, as a stock UCX would.
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
case $SRQUD_UCX in
1.22.*) UCX_PLUGIN_PATH=$SRQUD_BUILD/plugins-$SRQUD_UCX; export UCX_PLUGIN_PATH ;;
esac
PATH=$UCX_PREFIX/bin:$PATH
LD_LIBRARY_PATH=$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# for the stock-UCX route: LD_PRELOAD=$SRQUD_PRELOAD
SRQUD_PRELOAD=$SRQUD_BUILD/stock/src/uct/ib/srqud/.libs/libuct_srqud.so
export SRQUD_ROOT SRQUD_BUILD SRQUD_UCX SRQUD_OBJ UCX_PREFIX PATH LD_LIBRARY_PATH SRQUD_PRELOAD
