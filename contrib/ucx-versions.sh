# Sourced by the build and test scripts: the UCX versions of
# contrib/ucx-versions.txt (the one list of them), their pins, and the
# common "--ucx VERSION" argument, which sets UCX_VERSION.
#
#   ucx_versions [--devel]      the releases, oldest first (and devel)
#   ucx_pin VERSION             sets UCX_COMMIT, UCX_TAR_SHA256, UCX_DEBIAN
#                               ("-" or version:dsc-sha256:suite), UCX_LOADS
#                               (list or scan); status 1 if not a row
#   ucx_version_args NAME ARGS  --ucx VERSION (default 1.13.1), checked
#
# shellcheck shell=bash

UCX_VERSIONS_FILE=$(dirname "${BASH_SOURCE[0]}")/ucx-versions.txt
UCX_DEFAULT=1.13.1

ucx_versions() {
    if [ "${1:-}" = --devel ]; then
        awk '!/^#/ && NF { print $1 }' "$UCX_VERSIONS_FILE"
    else
        awk '!/^#/ && NF && $1 != "devel" { print $1 }' "$UCX_VERSIONS_FILE"
    fi
}

ucx_pin() {
    local row
    row=$(awk -v v="$1" '!/^#/ && $1 == v' "$UCX_VERSIONS_FILE")
    [ -n "$row" ] || return 1
    # shellcheck disable=SC2034  # read by the sourcing script
    read -r _ UCX_COMMIT UCX_TAR_SHA256 UCX_DEBIAN UCX_LOADS <<< "$row"
}

ucx_version_args() {  # ucx_version_args SCRIPT_NAME ARGS...
    local name=$1
    shift
    UCX_VERSION=$UCX_DEFAULT
    while [ $# -gt 0 ]; do
        case $1 in
            --ucx) [ $# -ge 2 ] || ucx_version_usage "$name"; UCX_VERSION=$2; shift 2 ;;
            --ucx=*) UCX_VERSION=${1#--ucx=}; shift ;;
            -h|--help) ucx_version_usage "$name" ;;
            *) echo "$name: unknown argument '$1'" >&2; ucx_version_usage "$name" ;;
        esac
    done
    ucx_pin "$UCX_VERSION" || {
        echo "$name: unsupported UCX version '$UCX_VERSION' (supported: $(ucx_versions --devel | paste -sd' '))" >&2
        exit 1
    }
}

ucx_version_usage() {
    echo "usage: $1 [--ucx VERSION]   (VERSION: $(ucx_versions --devel | paste -sd' '); default $UCX_DEFAULT)" >&2
    exit 2
}
