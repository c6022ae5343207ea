# Sourced by contrib/build-ucx.sh and contrib/build-ucx-gtest.sh: the UCX
# versions srqud supports (configure.ac's SRQUD_UCX_SUPPORTED lists the
# same) and their common "--ucx VERSION" argument, which sets UCX_VERSION.
SUPPORTED="1.13.1 1.18.1 1.22.0"

ucx_version_args() {  # ucx_version_args SCRIPT_NAME ARGS...
    local name=$1
    shift
    UCX_VERSION=1.13.1
    while [ $# -gt 0 ]; do
        case $1 in
            --ucx) [ $# -ge 2 ] || ucx_version_usage "$name"; UCX_VERSION=$2; shift 2 ;;
            --ucx=*) UCX_VERSION=${1#--ucx=}; shift ;;
            -h|--help) ucx_version_usage "$name" ;;
            *) echo "$name: unknown argument '$1'" >&2; ucx_version_usage "$name" ;;
        esac
    done
    case " $SUPPORTED " in
        *" $UCX_VERSION "*) ;;
        *) echo "$name: unsupported UCX version '$UCX_VERSION' (supported: ${SUPPORTED// /, })" >&2
           exit 1 ;;
    esac
}

ucx_version_usage() {
    echo "usage: $1 [--ucx VERSION]   (VERSION: ${SUPPORTED// /, }; default 1.13.1)" >&2
    exit 2
}
