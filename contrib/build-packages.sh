#!/bin/bash
#
# The release tarball and the packages of srqud, built against the
# system's UCX (Debian 12: libucx-dev 1.13.1-1):
#
#   contrib/build-packages.sh [--install] [--remove] [--rpm [--rpm-nocheck]]
#                             [--no-deb] [--device-check]
#
#   (default)  the tarballs, then the Debian source package and the .debs
#              (dpkg-buildpackage, the unit tests included unless
#              DEB_BUILD_OPTIONS=nocheck), lintian over them; prints the
#              paths of the .debs
#   --install  then install the .debs into the system (apt-get) and check
#              the installed files on this host (see check_installed).
#              While libsucg0 is installed, every Open MPI job of the
#              machine finds mca_coll_sucg.so (Open MPI's own component
#              directory), test/sucg/mpi/run.sh's "no component" case too
#   --remove   remove the installed packages (dpkg -r) and check that
#              nothing of them is left; alone: only that
#   --rpm      also the RPMs, with rpmbuild from the same two tarballs and
#              contrib/srqud.spec (--nodeps on a machine whose build
#              dependencies are Debian packages)
#   --rpm-nocheck  the RPMs without their %check (rpmbuild --without
#              check): the same make check as the Debian build's, which
#              CI runs once (--full runs both)
#   --no-deb   no Debian packages (with --rpm: only the RPMs; with
#              --install: install the .debs of the last build)
#   --device-check
#              inside the Soft-RoCE VM, after --install on the host (the
#              VM mounts the host's /): ucx_info -d lists srqud through the
#              installed module and Debian's UCX (route b), and one
#              ucx_perftest runs over it:
#              contrib/softroce/vm-run --stock -- contrib/build-packages.sh --device-check
#
# Everything goes into $SRQUD_BUILD/packages (default build/packages):
#   srqud-VERSION.tar.gz    make dist of a tree configured there (dist/)
#   ucx-UCXVERSION.tar.gz   UCX's source, from Debian's source package of
#                           the installed UCX (Debian's orig tarball
#                           content, without Debian's patches, which change
#                           no header), repacked reproducibly: the second
#                           upstream tarball (Debian: the component "ucx",
#                           srqud_VERSION.orig-ucx.tar.gz; RPM: Source1)
#   deb/    the source package, the .debs, build.log, lintian.out
#   rpm/    rpmbuild's top directory (RPMS/, SRPMS/, build.log)
# Changes to the system only as root and with one line before each:
# apt-get install of what the build needs, and --install/--remove.
#
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
case $SRQUD_BUILD in /*) ;; *) SRQUD_BUILD=$ROOT/$SRQUD_BUILD ;; esac
export SRQUD_BUILD
JOBS=${JOBS:-2}
PKG=$SRQUD_BUILD/packages
. "$ROOT/contrib/lib/common.sh"
. "$ROOT/contrib/ucx-versions.sh"

DEBS=(ucx-srqud libsucg0 libsucg-dev)
DO_DEB=1 DO_INSTALL=0 DO_REMOVE=0 DO_RPM=0 DO_DEVICE=0 RPM_OPTS=()
while [ $# -gt 0 ]; do
    case $1 in
    --install)      DO_INSTALL=1 ;;
    --remove)       DO_REMOVE=1 ;;
    --rpm)          DO_RPM=1 ;;
    --rpm-nocheck)  RPM_OPTS=(--without check) ;;
    --no-deb)       DO_DEB=0 ;;
    --device-check) DO_DEVICE=1 ;;
    -h|--help)      sed -n '3,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *)              echo "usage: $0 [--install] [--remove] [--rpm [--rpm-nocheck]] [--no-deb] [--device-check]" >&2
                    exit 2 ;;
    esac
    shift
done
# --remove or --device-check alone: nothing is built
if [ $DO_INSTALL = 0 ] && [ $DO_RPM = 0 ] && { [ $DO_REMOVE = 1 ] || [ $DO_DEVICE = 1 ]; }; then
    DO_DEB=0
fi

MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
MODULE=/usr/lib/$MULTIARCH/ucx/libuct_srqud.so.0

# the checks are of the system's UCX and MPIs, whatever contrib/env.sh set
system_env() {
    export PATH=/usr/bin:/bin:$PATH
    unset LD_LIBRARY_PATH LD_PRELOAD UCX_MODULE_DIR UCX_PLUGIN_PATH
}

elapsed() {     # elapsed T0: "M min S s" since T0 ($SECONDS)
    local t=$((SECONDS - $1))
    echo "$((t / 60)) min $((t % 60)) s"
}

# run_long NAME LOG CMD...: CMD with its output in LOG and a progress line
# every 30 s (PROGRESS_EVERY); on failure the end of LOG and status 1
run_long() {
    local name=$1 logf=$2 t0=$SECONDS pid rc=0 n=0
    shift 2
    "$@" > "$logf" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        n=$((n + 1))
        if [ $((n % ${PROGRESS_EVERY:-30})) = 0 ] && kill -0 "$pid" 2>/dev/null; then
            log "  ... $name: $(elapsed $t0), $(tail -n 1 "$logf" | cut -c1-90)"
        fi
    done
    wait "$pid" || rc=$?
    if [ $rc != 0 ]; then
        tail -n 40 "$logf" >&2
        log "$name failed after $(elapsed $t0) (status $rc; log: $logf)"
        return 1
    fi
    log "$name done in $(elapsed $t0) (log: $logf)"
}

# apt_install PKG...: the ones not installed, announced (root only)
apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} = 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run as root or install them)"
    log "changing the system: apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
        "${missing[@]}" > "$PKG/apt-get.log" 2>&1 ||
        { tail -n 20 "$PKG/apt-get.log" >&2; die "apt-get install failed (log: $PKG/apt-get.log)"; }
}

# ---------------------------------------------------------------- tarballs --

# ucx_source: UCX_UP (the installed UCX's version), UCX_TREE (its source
# tree, for configure) and UCX_TARBALL (ucx-UCX_UP.tar.gz). The installed
# libucx-dev must be the Debian version contrib/ucx-versions.txt pins, whose
# .dsc sha256 is checked (and the orig tarball against the .dsc)
ucx_source() {
    local deb_v deb dsc_sha suite dsc t stamp
    deb_v=$(dpkg-query -W -f='${Version}' libucx-dev 2>/dev/null) ||
        die "libucx-dev is not installed: the packages are built against the system's UCX"
    UCX_UP=${deb_v%-*}
    UCX_UP=${UCX_UP#*:}
    ucx_pin "$UCX_UP" || die "the system's UCX $deb_v is not in contrib/ucx-versions.txt"
    [ "$UCX_DEBIAN" != - ] || die "UCX $UCX_UP: contrib/ucx-versions.txt pins no Debian source package"
    IFS=: read -r deb dsc_sha suite <<< "$UCX_DEBIAN"
    [ "$deb" = "$deb_v" ] ||
        die "the system's libucx-dev is $deb_v, contrib/ucx-versions.txt pins Debian's ucx $deb"
    UCX_TREE=$PKG/ucx-src/ucx-$UCX_UP
    UCX_TARBALL=$PKG/ucx-$UCX_UP.tar.gz
    stamp="$deb $dsc_sha"
    if [ -s "$UCX_TARBALL" ] && [ -f "$UCX_TREE/configure.ac" ] &&
       [ "$(cat "$PKG/ucx-src/.source" 2>/dev/null)" = "$stamp" ]; then
        log "UCX $UCX_UP source: $UCX_TARBALL (made before)"
        return 0
    fi
    rm -rf "$PKG/ucx-src" "$UCX_TARBALL"
    mkdir -p "$PKG/ucx-src"
    # Debian's .dsc where contrib/build-ucx.sh left one, else from the archive
    dsc=$SRQUD_BUILD/ucx-src/ucx_${deb#*:}.dsc
    if [ -f "$dsc" ] && [ "$(sha256sum < "$dsc" | cut -c1-64)" = "$dsc_sha" ]; then
        log "UCX $UCX_UP source from $dsc (without Debian's patches)"
        (cd "$(dirname "$dsc")" &&
         dpkg-source --require-strong-checksums --skip-patches -x "$(basename "$dsc")" "$UCX_TREE") \
            > "$PKG/ucx-src.out" 2>&1 || { cat "$PKG/ucx-src.out" >&2; die "dpkg-source -x $dsc failed"; }
    else
        log "UCX $UCX_UP source: Debian's ucx $deb ($suite), without Debian's patches"
        SKIP_PATCHES=1 fetch_debian_source ucx "$deb" "$dsc_sha" "$suite" "$UCX_TREE" ||
            die "Debian's ucx $deb cannot be had here"
    fi
    # dpkg-source put Debian's packaging in; the orig tarball has no debian/
    rm -rf "$UCX_TREE/debian" "$UCX_TREE/.pc"
    # reproducible: names sorted, no owner, every mtime the newest file's
    t=$(find "$UCX_TREE" -type f -printf '%T@\n' | sort -n | tail -n 1 | cut -d. -f1)
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$t" --format=gnu \
        -C "$PKG/ucx-src" -cf - "ucx-$UCX_UP" | gzip -9n > "$UCX_TARBALL.tmp"
    mv "$UCX_TARBALL.tmp" "$UCX_TARBALL"
    echo "$stamp" > "$PKG/ucx-src/.source"
    log "UCX $UCX_UP source: $UCX_TARBALL ($(du -k "$UCX_TARBALL" | cut -f1) KiB)"
}

# dist_tarball: VERSION and DIST_TARBALL, make dist of a tree configured in
# $PKG/dist against the system's UCX (reconfigured when configure changed)
dist_tarball() {
    local d=$PKG/dist missing
    if [ ! -x "$ROOT/configure" ] || [ "$ROOT/configure.ac" -nt "$ROOT/configure" ]; then
        log "autogen ($ROOT)"
        (cd "$ROOT" && ./autogen.sh) > "$PKG/autogen.out" 2>&1 ||
            { tail -n 20 "$PKG/autogen.out" >&2; die "autogen.sh failed"; }
    fi
    mkdir -p "$d"
    if [ ! -f "$d/Makefile" ] || [ "$ROOT/configure" -nt "$d/Makefile" ] ||
       [ "$(cat "$d/configure.args" 2>/dev/null)" != "$UCX_TREE" ]; then
        log "configure $d (for make dist)"
        (cd "$d" && "$ROOT/configure" --with-ucx=/usr --with-ucx-src="$UCX_TREE" \
            --without-ompi --without-mpich --without-ucc) > "$d/configure.out" 2>&1 ||
            { tail -n 20 "$d/configure.out" >&2; die "configure failed (log: $d/configure.out)"; }
        echo "$UCX_TREE" > "$d/configure.args"
    fi
    VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$d/Makefile")
    [ -n "$VERSION" ] || die "no PACKAGE_VERSION in $d/Makefile"
    rm -f "$d"/srqud-*.tar.gz
    run_long "make dist" "$d/dist.out" make -C "$d" dist
    DIST_TARBALL=$PKG/srqud-$VERSION.tar.gz
    mv "$d/srqud-$VERSION.tar.gz" "$DIST_TARBALL"
    # a file of the checkout that the tarball lacks (a header missing from
    # its Makefile.am) makes a release that does not build
    if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
        missing=$(comm -23 <(git -C "$ROOT" ls-files | grep -v -E '^(\.ci/|\.gitignore$|debian/)' | sort) \
                           <(tar -tzf "$DIST_TARBALL" | sed "s|^srqud-$VERSION/||" | sort))
        [ -z "$missing" ] || die "make dist left out files of the checkout: ${missing//$'\n'/ }"
    fi
    log "release tarball: $DIST_TARBALL"
}

# ------------------------------------------------------------------ Debian --

build_debs() {
    local deb=$PKG/deb dv src arch t0 changes nerr
    dv=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)
    [ "${dv%-*}" = "$VERSION" ] ||
        die "debian/changelog is $dv, the release tarball is $VERSION: add a changelog entry"
    src=$deb/srqud-$VERSION
    rm -rf "$deb"
    mkdir -p "$deb"
    cp "$DIST_TARBALL" "$deb/srqud_$VERSION.orig.tar.gz"
    cp "$UCX_TARBALL" "$deb/srqud_$VERSION.orig-ucx.tar.gz"
    # the unpacked source as dpkg-source -x makes it: the component in ucx/
    tar -xzf "$deb/srqud_$VERSION.orig.tar.gz" -C "$deb"
    mkdir "$src/ucx"
    tar -xzf "$deb/srqud_$VERSION.orig-ucx.tar.gz" -C "$src/ucx" --strip-components=1
    cp -a "$ROOT/debian" "$src/debian"

    apt_install dpkg-dev debhelper lintian
    if ! (cd "$src" && dpkg-checkbuilddeps) > "$deb/builddeps.out" 2>&1; then
        [ "$(id -u)" = 0 ] || { cat "$deb/builddeps.out" >&2; die "build dependencies missing"; }
        log "changing the system: apt-get build-dep ($(sed -n 's/.*Unmet build dependencies: //p' "$deb/builddeps.out"))"
        (cd "$src" && DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q ./) \
            > "$PKG/apt-get.log" 2>&1 || { tail -n 20 "$PKG/apt-get.log" >&2; die "apt-get build-dep failed"; }
    fi

    log "dpkg-buildpackage srqud $dv (about 3 min on 2 cores, 1 min with DEB_BUILD_OPTIONS=nocheck)"
    t0=$SECONDS
    (cd "$src" && run_long dpkg-buildpackage "$deb/build.log" \
        dpkg-buildpackage -us -uc -j"$JOBS") || die "dpkg-buildpackage failed"
    DEB_BUILD_TIME=$(elapsed $t0)

    arch=$(dpkg-architecture -qDEB_HOST_ARCH)
    changes=$deb/srqud_${dv}_$arch.changes
    # the tests' summary lines (automake's test-suite.log per directory)
    awk '/^# TOTAL:/ { t += $3 } /^# PASS:/ { p += $3 }
         END { if (t) printf "  make check: %d of %d tests passed\n", p, t;
               else print "  make check: not run (DEB_BUILD_OPTIONS=nocheck?)" }' "$deb/build.log"
    log "lintian -i --pedantic $changes"
    lintian -i -I --pedantic --color never "$changes" > "$deb/lintian.out" 2>&1 || true
    # the tags (lintian.out has their explanations too)
    grep -E '^[EWIPXC]: ' "$deb/lintian.out" | sed 's/^/  /' || log "  no lintian tags"
    nerr=$(grep -c -E '^[EW]: ' "$deb/lintian.out" || true)
    result lintian_errors_warnings "$([ "$nerr" = 0 ] && echo PASS || echo FAIL)" \
        "($nerr E/W tags; $(grep -c -E '^[IP]: ' "$deb/lintian.out" || true) info/pedantic)" || true
    log "Debian packages of srqud $dv (built in $DEB_BUILD_TIME):"
    ls "$deb"/*.deb
}

deb_files() {   # the .debs of the last build, in DEBS order
    local p f
    for p in "${DEBS[@]}"; do
        for f in "$PKG"/deb/"${p}"_*.deb; do
            [ -e "$f" ] || die "no $p .deb in $PKG/deb: build them first"
            echo "$f"
        done
    done
}

install_debs() {
    local files
    mapfile -t files < <(deb_files)
    [ "$(id -u)" = 0 ] || die "--install needs root"
    log "changing the system: apt-get install ${files[*]##*/}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
        --allow-downgrades --reinstall "${files[@]}" > "$PKG/install.log" 2>&1 ||
        { tail -n 20 "$PKG/install.log" >&2; die "apt-get install failed (log: $PKG/install.log)"; }
}

# check NAME CMD...: a RESULT line, the command's output kept in the log
CHECKS_FAILED=0
check() {
    local name=$1 out
    shift
    out=$PKG/checks/$name.log
    if "$@" > "$out" 2>&1; then
        result "$name" PASS
    else
        result "$name" FAIL "(log: $out)" || true
        sed 's/^/    /' "$out" | tail -n 15
        CHECKS_FAILED=1
    fi
}

# What can be checked on a host without an RDMA device: the files are where
# Debian's UCX and MPIs look, the dependency names the exact libucx0, the
# preloaded module loads into Debian's ucx_info and registers its
# component (its UCX_SRQUD_* settings are listed) without refusing itself,
# Open MPI finds the coll component in its own directory, a program builds
# against libsucg-dev. ucx_info -d lists srqud only with a verbs device
# (the VM: --device-check); here only if this host has one.
check_installed() {
    local ucx_v ompi_dir=/usr/lib/$MULTIARCH/openmpi/lib/openmpi3 t
    mkdir -p "$PKG/checks"
    system_env
    ucx_v=$(dpkg-query -W -f='${Version}' libucx0)
    check installed_files ls -l "$MODULE" "/usr/lib/$MULTIARCH/libsucg.so.0" \
        "/usr/lib/$MULTIARCH/sucg/libsucg_pmpi.so" "$ompi_dir/mca_coll_sucg.so" \
        /usr/include/srqud/sucg.h /usr/bin/srqud_watermark /usr/bin/srqud_rawperf \
        /usr/bin/srqud_rawexch /usr/share/man/man1/srqud_watermark.1.gz \
        /usr/share/man/man1/srqud_rawexch.1.gz
    check ucx_srqud_depends_exact_libucx0 sh -c \
        "dpkg-query -W -f='\${Depends}\n' ucx-srqud | tee /dev/stderr | grep -F 'libucx0 (= $ucx_v)'"
    check ucx_info_v_preloaded sh -c "LD_PRELOAD=$MODULE ucx_info -v 2>&1 | tee /dev/stderr |
        grep -q '^# Version' && ! LD_PRELOAD=$MODULE ucx_info -v 2>&1 | grep -F '[srqud]'"
    check ucx_info_c_lists_srqud_settings sh -c \
        "LD_PRELOAD=$MODULE ucx_info -c -f | grep UCX_SRQUD_SRQ_LIMIT"
    check ucx_info_without_preload_has_no_srqud sh -c '! ucx_info -c -f | grep UCX_SRQUD_'
    if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
        check ucx_info_d_lists_srqud sh -c \
            "LD_PRELOAD=$MODULE ucx_info -d | grep -A3 'Transport: srqud' | grep 'Device:'"
    else
        log "no verbs device on this host: ucx_info -d lists srqud in the VM (--device-check)"
    fi
    check ompi_info_finds_coll_sucg sh -c \
        "ompi_info --param coll sucg --level 9 | grep coll_sucg_priority"
    t=$(mktemp -d)
    cat > "$t/t.c" <<'EOF'
#include <srqud/sucg.h>
#include <srqud/sucg_mpi_stats.h>
int main(void)
{
    void (*destroy)(sucg_context_h) = sucg_context_destroy;

    return destroy == NULL;
}
EOF
    check libsucg_dev_links sh -c "cc -Wall -o '$t/t' '$t/t.c' \$(pkg-config --cflags ucx) -lsucg &&
        ldd '$t/t' | grep 'libsucg.so.0 => .*/lib/$MULTIARCH/libsucg.so.0' && '$t/t'"
    rm -rf "$t"
    mpi_checks
}

# MPI_Allgather through the installed glue: Open MPI finds the component in
# its own directory (no mca_base_component_path), MPICH preloads the PMPI
# library; the checker (a test program of the package build, not packaged)
# verifies every byte and that every call went through sucg
mpi_checks() {
    local tdir
    tdir=$(echo "$PKG"/deb/srqud-*/debian/build/test/sucg)
    if [ ! -x "$tdir/sucg_mpi_allgather_test_ompi" ] || [ ! -x "$tdir/sucg_mpi_allgather_test_mpich" ]; then
        log "no MPI test programs in $PKG/deb (a build with DEB_BUILD_OPTIONS=nocheck?): MPI jobs not run"
        return 0
    fi
    # shellcheck source-path=SCRIPTDIR source=../test/sucg/mpi/mpirun.sh
    . "$ROOT/test/sucg/mpi/mpirun.sh"
    sucg_net host
    check ompi_allgather_through_installed_coll_sucg sucg_ompi UCX_TLS=sm,self \
        SUCG_TEST_EXPECT=sucg 2 "$tdir/sucg_mpi_allgather_test_ompi" -b 1048576
    check mpich_allgather_through_installed_pmpi sucg_mpich UCX_TLS=sm,self \
        LD_PRELOAD="/usr/lib/$MULTIARCH/sucg/libsucg_pmpi.so" SUCG_TEST_EXPECT=sucg 2 \
        "$tdir/sucg_mpi_allgather_test_mpich" -b 1048576
}

remove_debs() {
    local p st left
    [ "$(id -u)" = 0 ] || die "--remove needs root"
    log "changing the system: dpkg -r ${DEBS[*]}"
    mkdir -p "$PKG/checks"
    check dpkg_remove dpkg -r "${DEBS[@]}"
    left=
    for p in "${DEBS[@]}"; do
        st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        case $st in
        ""|not-installed) ;;
        *) left="$left $p ($st)" ;;
        esac
    done
    check removed_completely sh -c "[ -z '$left' ] && [ ! -e '$MODULE' ] &&
        [ ! -e /usr/lib/$MULTIARCH/openmpi/lib/openmpi3/mca_coll_sucg.so ] &&
        [ ! -e /usr/lib/$MULTIARCH/libsucg.so.0 ] && [ ! -d /usr/include/srqud ]"
}

# Inside the VM (rxe0 on lo): route b with the installed files
device_check() {
    mkdir -p "$PKG/checks"
    system_env
    [ -e "$MODULE" ] || die "$MODULE is not installed (contrib/build-packages.sh --install on the host)"
    [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ] ||
        die "no verbs device here: run it in the VM (contrib/softroce/vm-run --stock -- $0 --device-check)"
    check device_ucx_info_d_lists_srqud sh -c \
        "LD_PRELOAD=$MODULE ucx_info -d | grep -A3 'Transport: srqud' | tee /dev/stderr | grep 'Device:'"
    check device_perftest_ucp_tag_lat "$ROOT/contrib/bench/perftest-pair.sh" \
        LD_PRELOAD="$MODULE" UCX_TLS=srqud,self -- -t tag_lat -n 1000 -s 64
}

# -------------------------------------------------------------------- RPM --

build_rpms() {
    local top=$PKG/rpm t0 spec_v
    spec_v=$(sed -n 's/^Version: *//p' "$ROOT/contrib/srqud.spec")
    [ "$spec_v" = "$VERSION" ] ||
        die "contrib/srqud.spec is version $spec_v, the release tarball $VERSION"
    apt_install rpm
    rm -rf "$top"
    mkdir -p "$top"/{SOURCES,SPECS,BUILD,RPMS,SRPMS}
    cp "$DIST_TARBALL" "$UCX_TARBALL" "$top/SOURCES/"
    cp "$ROOT/contrib/srqud.spec" "$top/SPECS/"
    log "rpmbuild -ba ${RPM_OPTS[*]} srqud $VERSION (about 3 min on 2 cores, 1 min without check; --nodeps: the build dependencies are Debian packages here)"
    t0=$SECONDS
    run_long rpmbuild "$top/build.log" rpmbuild -ba --nodeps "${RPM_OPTS[@]}" --define "_topdir $top" \
        --define "ucx_version $UCX_UP" "$top/SPECS/srqud.spec" || die "rpmbuild failed"
    RPM_BUILD_TIME=$(elapsed $t0)
    log "RPMs of srqud $VERSION (built in $RPM_BUILD_TIME):"
    find "$top/RPMS" "$top/SRPMS" -name '*.rpm' | sort
}

# ------------------------------------------------------------------- main --

mkdir -p "$PKG"
if [ $DO_DEB = 1 ] || [ $DO_RPM = 1 ]; then
    apt_install build-essential dpkg-dev autoconf automake libtool pkgconf libucx-dev ucx-utils \
        libibverbs-dev
    ucx_source
    dist_tarball
fi
[ $DO_DEB = 0 ] || build_debs
[ $DO_RPM = 0 ] || build_rpms
if [ $DO_INSTALL = 1 ]; then
    install_debs
    check_installed
fi
[ $DO_DEVICE = 0 ] || device_check
[ $DO_REMOVE = 0 ] || remove_debs
exit $CHECKS_FAILED
