# Source this file (bash or sh) to use the UCX built by contrib/build-ucx.sh,
# which dlopens libuct_srqud from its module directory:
#   . contrib/env.sh
if [ -n "${BASH_SOURCE:-}" ]; then
    SRQUD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
elif [ -z "${SRQUD_ROOT:-}" ]; then
    SRQUD_ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
fi
SRQUD_BUILD=${SRQUD_BUILD:-$SRQUD_ROOT/build}
UCX_PREFIX=$SRQUD_BUILD/ucx
PATH=$UCX_PREFIX/bin:$PATH
LD_LIBRARY_PATH=$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# for the stock-UCX route: LD_PRELOAD=$SRQUD_PRELOAD
SRQUD_PRELOAD=$SRQUD_BUILD/stock/src/uct/ib/srqud/.libs/libuct_srqud.so
export SRQUD_ROOT SRQUD_BUILD UCX_PREFIX PATH LD_LIBRARY_PATH SRQUD_PRELOAD
