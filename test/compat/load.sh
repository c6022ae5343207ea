#!/bin/bash
#
# How each UCX version loads srqud, and that a module built for another
# version is refused cleanly (issue 13). Runs on the host: loading and the
# version check need no device (srqud's config variables appear in
# "ucx_info -c -f" once its component is registered).
#
#   test/compat/load.sh [VERSION...]      (default: every version of
#                                         contrib/ucx-versions.txt that
#                                         is built, devel included)
#
# Needs each version built by contrib/build.sh [--ucx VERSION]. Prints one
# "RESULT name PASS" or "RESULT name FAIL what-went-wrong" per check; a
# version that is not built fails.
#
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/contrib/lib/common.sh"   # result
. "$ROOT/contrib/ucx-versions.sh"  # ucx_versions, ucx_pin
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
if [ $# -gt 0 ]; then
    VERSIONS=$*
else
    VERSIONS=
    for v in $(ucx_versions --devel); do
        [ -e "$SRQUD_BUILD/ucx-$v/bin/ucx_info" ] && VERSIONS+=" $v"
    done
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0

prefix_of() { [ "$1" = 1.13.1 ] && echo "$SRQUD_BUILD/ucx" || echo "$SRQUD_BUILD/ucx-$1"; }
# the version the library reports (devel: the next release's number)
number_of() {
    LD_LIBRARY_PATH="$(prefix_of "$1")/lib" "$(prefix_of "$1")/bin/ucx_info" -v |
        sed -n -e 's/^# Version \([0-9.]*\).*/\1/p' -e 's/^# Library version: \([0-9.]*\).*/\1/p' | head -1
}
obj_of()    { [ "$1" = 1.13.1 ] && echo "$SRQUD_BUILD/obj" || echo "$SRQUD_BUILD/obj-$1"; }
module_of() { echo "$(obj_of "$1")/src/uct/ib/srqud/.libs/libuct_srqud.so.0"; }

check() {  # check NAME STATUS DETAIL: its RESULT line, DETAIL on a failure only
    if [ "$2" = 0 ]; then
        result "$1" PASS
    else
        result "$1" FAIL "$3"
        FAILED=1
    fi
}

# ucx_info of VERSION with extra environment; output in $TMP/out, status $?
ucx_info_of() {  # ucx_info_of VERSION ENV...
    local ver=$1 prefix
    shift
    prefix=$(prefix_of "$ver")
    env LD_LIBRARY_PATH="$prefix/lib" UCX_WARN_UNUSED_ENV_VARS=n "$@" \
        "$prefix/bin/ucx_info" -c -f > "$TMP/out" 2>&1
}

registered() { grep -q '^UCX_SRQUD_SRQ_SIZE=' "$TMP/out"; }

# A process with libuct but no libucp (uct_components.c), where the module
# tells the running UCX from libuct's exported functions: output in
# $TMP/out, status $?
uct_only_of() {  # uct_only_of VERSION ENV...
    local ver=$1 prefix bin
    shift
    prefix=$(prefix_of "$ver")
    bin=$TMP/uct_components-$ver
    [ -x "$bin" ] || cc -o "$bin" "$ROOT/test/compat/uct_components.c" \
        -I"$prefix/include" -L"$prefix/lib" -luct -lucs || return 1
    env LD_LIBRARY_PATH="$prefix/lib" "$@" "$bin" > "$TMP/out" 2>&1
}
# the minor version the fingerprint names: "1.15.x" (or "1.23 or later")
minor_of() { number_of "$1" | cut -d. -f1-2; }
refused()    { grep -q "^\[srqud\] built for UCX $1 but this process runs UCX $2" "$TMP/out"; }

for v in $VERSIONS; do
    n=$(echo "$v" | tr . _)
    if [ ! -x "$(prefix_of "$v")/bin/ucx_info" ] || [ ! -e "$(module_of "$v")" ]; then
        check load_$n 1 "UCX $v or srqud for it not built (contrib/build.sh --ucx $v)"
        continue
    fi
    # The installed route of the version: module directory (up to 1.21:
    # compiled-in module list; from 1.22: directory scan) or UCX_PLUGIN_PATH
    ucx_pin "$v" || { check load_$n 1 "UCX $v is not in contrib/ucx-versions.txt"; continue; }
    loads=$UCX_LOADS
    case $loads in
    scan)
        mkdir -p "$TMP/plugins-$n"
        cp "$(module_of "$v")" "$TMP/plugins-$n/"
        ucx_info_of "$v"; rc=$?
        ! registered; check load_${n}_not_without_plugin_path $? "srqud present with no plugin path"
        ucx_info_of "$v" UCX_PLUGIN_PATH="$TMP/plugins-$n"; rc=$?
        registered && [ $rc = 0 ] && ! grep -q '^\[srqud\]' "$TMP/out"
        check load_${n}_plugin_path $? "$(tail -3 "$TMP/out")"
        ucx_info_of "$v" UCX_MODULE_DIR="$TMP/plugins-$n"; rc=$?
        registered && [ $rc = 0 ]
        check load_${n}_module_dir_scan $? "$(tail -3 "$TMP/out")"
        ;;
    *)
        ucx_info_of "$v"; rc=$?
        registered && [ $rc = 0 ] && ! grep -q '^\[srqud\]' "$TMP/out"
        check load_${n}_module_list $? "$(tail -3 "$TMP/out")"
        ;;
    esac
    # Without libucp: the module registers by the fingerprint of libuct
    own_env=()
    if [ "$loads" = scan ]; then
        own_env=(UCX_PLUGIN_PATH="$TMP/plugins-$n")
    fi
    uct_only_of "$v" "${own_env[@]}"; rc=$?
    # (a devel build cannot tell its minor from a later one without libucp,
    # and takes the newest fingerprint as its own: srqud_module.c)
    [ $rc = 0 ] && grep -qx srqud "$TMP/out" && ! grep -q '^\[srqud\]' "$TMP/out"
    check load_${n}_without_libucp $? "exit $rc: $(head -3 "$TMP/out")"
    # Modules built for the other versions, into this one: refused with one
    # line naming both versions, and the process goes on
    for m in $VERSIONS; do
        [ "$m" = "$v" ] && continue
        [ -e "$(module_of "$m")" ] || continue
        mn=$(echo "$m" | tr . _)
        ucx_info_of "$v" LD_PRELOAD="$(module_of "$m")"; rc=$?
        refused "$(number_of "$m")" "$(number_of "$v")" && [ $rc = 0 ] &&
            [ "$(grep -c '^\[srqud\]' "$TMP/out")" = 1 ]
        check refuse_${mn}_module_on_${n}_preload $? "exit $rc: $(grep -m3 -E 'srqud|rror|ault' "$TMP/out")"
        uct_only_of "$v" LD_PRELOAD="$(module_of "$m")"; rc=$?
        [ $rc = 0 ] && grep -q "^\[srqud\] built for UCX $(number_of "$m") but this process runs UCX $(minor_of "$v")" "$TMP/out"
        check refuse_${mn}_module_on_${n}_without_libucp $? "exit $rc: $(head -3 "$TMP/out")"
        case $loads in
        scan)
            rm -rf "$TMP/foreign"; mkdir -p "$TMP/foreign"
            cp "$(module_of "$m")" "$TMP/foreign/"
            ucx_info_of "$v" UCX_PLUGIN_PATH="$TMP/foreign"; rc=$?
            refused "$(number_of "$m")" "$(number_of "$v")" && [ $rc = 0 ] && ! registered
            check refuse_${mn}_module_on_${n}_plugin_path $? "exit $rc: $(grep -m3 -E 'srqud|rror|ault' "$TMP/out")"
            ;;
        esac
    done
done
exit $FAILED
