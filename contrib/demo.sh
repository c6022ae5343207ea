#!/bin/bash
#
# srqud demo on a fresh Debian 12 machine: builds everything (as
# contrib/test.sh does), boots the Soft-RoCE VM and prints ucx_perftest
# figures over srqud beside UCX's own ud_verbs and rc_verbs, measured in the
# same run. contrib/demo.sh --help says what it does, how long it takes and
# what it changes on the machine.
#
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
# log: "== demo: MSG" on stdout; die: "demo: MSG" on stderr, status 2 (its
# only errors are bad options)
. "$ROOT/contrib/lib/common.sh"
DIE_STATUS=2

usage() {
    cat <<'EOF'
Usage: contrib/demo.sh [-h|--help] [--tls "LIST"] [--iter N] [--warmup N] [--csv FILE]

Builds srqud and boots a throw-away QEMU VM with Soft-RoCE to compare
srqud with UCX's ud_verbs and rc_verbs in one ucx_perftest run:
  1. contrib/build.sh: installs the Debian packages that are missing,
     builds UCX 1.13.1 from Debian's source with srqud in its module list,
     and srqud (everything into build/, or $SRQUD_BUILD; cached)
  2. contrib/softroce/vm-run: a QEMU VM (TCG: no KVM needed) with rdma_rxe
     on lo, running contrib/bench/perftest-compare.sh: UCT am_lat/am_bw and
     UCP tag_lat/tag_bw at a few sizes, one table with a legend.
The figures are emulated (software RDMA in an emulated CPU): compare the
transports by their ratios within one run, not with hardware numbers.

How long (2 cores): the first run about 10 min (packages ~2 min, UCX ~4 min,
srqud ~2 min, VM and measurements ~3 min); later runs about 3 min.

What it changes on this machine (as root; each is announced on one line
before it happens, and only what is missing is done):
  - apt-get update and apt-get install of missing Debian packages (compilers,
    autotools, UCX/verbs/MPI development packages, QEMU, busybox-static, ...:
    PACKAGES in contrib/build.sh)
  - a deb-src entry /etc/apt/sources.list.d/srqud-src.sources and an
    apt-get update, by contrib/build-ucx.sh, only if apt cannot find UCX's
    source package otherwise
  - downloads into the build directory, nothing installed: UCX's Debian
    source package (~2 MB, apt-get source) and a Debian kernel package for
    the VM (~70 MB, apt-get download, build/vm/kernel)
  - a lock file, /tmp/srqud-vm.lock (one VM at a time)
Everything else stays in the build directory; the VM sees / read-only.

Options, passed to contrib/bench/perftest-compare.sh:
  --tls "LIST"  transports, in this order (default "srqud ud_verbs rc_verbs")
  --iter N      ucx_perftest iterations per figure (default 2000)
  --warmup N    iterations of the discarded warm-up runs (default 2000; 0: none)
  --csv FILE    also write all figures (median and average latency,
                bandwidth, message rate) to FILE
  --rc          accepted for old command lines (rc_verbs is in the default)

Environment: SRQUD_BUILD (build directory, default build/), JOBS (make -j,
default 2).
EOF
}

# the options are checked here, before a build of several minutes
args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
    -h|--help) usage; exit 0 ;;
    --rc) shift ;;
    --tls|--iter|--warmup|--csv)
        [ $# -ge 2 ] || die "$1 needs a value (see --help)"
        shift 2 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done

T0=$SECONDS
elapsed() { echo "$(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s"; }

# What this run will change on the machine or download, before anything
# happens, and how long it should take (2 cores)
changes=() downloads=() est=3
missing=$(SRQUD_LIST_MISSING=1 "$ROOT/contrib/build.sh")
if [ -n "$missing" ]; then
    changes+=("apt-get update and apt-get install of $(echo $missing | wc -w) package(s): $missing")
    est=$((est + 2))
fi
if [ ! -f "$SRQUD_BUILD/ucx-src/ucx-1.13.1/configure.ac" ]; then
    v=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
    if [ -z "$v" ]; then
        changes+=("if apt has no source of UCX: a deb-src entry /etc/apt/sources.list.d/srqud-src.sources and apt-get update (contrib/build-ucx.sh)")
    elif ! apt-get source --print-uris "ucx=$v" >/dev/null 2>&1; then
        changes+=("a deb-src entry /etc/apt/sources.list.d/srqud-src.sources and apt-get update, for the source of ucx=$v (contrib/build-ucx.sh)")
    fi
    downloads+=("UCX's Debian source package (~2 MB, apt-get source)")
fi
[ -x "$SRQUD_BUILD/ucx/bin/ucx_info" ] || est=$((est + 4))
[ -f "$SRQUD_BUILD/stock/Makefile" ] || est=$((est + 1))
[ -f "$SRQUD_BUILD/vm/kernel/vmlinuz" ] ||
    downloads+=("a Debian kernel package for the VM (~70 MB, apt-get download; not installed)")

log "srqud beside ud_verbs and rc_verbs in ucx_perftest: build, then the Soft-RoCE VM; about $est min$([ $est -gt 3 ] || echo " (4 more if UCX must be rebuilt)")"
if [ ${#changes[@]} -gt 0 ]; then
    log "changes to this machine: $(printf '%s; ' "${changes[@]}" | sed 's/; $//')"
else
    log "changes to this machine: none (packages installed; builds go to $SRQUD_BUILD)"
fi
[ ${#downloads[@]} -eq 0 ] ||
    log "downloads into $SRQUD_BUILD: $(printf '%s; ' "${downloads[@]}" | sed 's/; $//')"

"$ROOT/contrib/build.sh"
log "build ready after $(elapsed)"

log "booting the Soft-RoCE VM (QEMU TCG, about 10 s$([ -f "$SRQUD_BUILD/vm/kernel/vmlinuz" ] || echo "; first its kernel and initramfs, about 30 s")), then ucx_perftest in it (about 3 min)"
rc=0
"$ROOT/contrib/softroce/vm-run" --timeout 1800 -- \
    "$ROOT/contrib/bench/perftest-compare.sh" "${args[@]}" || rc=$?
log "total wall time $(elapsed)$([ $rc = 0 ] || echo "; exit status $rc")"
exit $rc
