# Sourced (bash) by the scripts of contrib/ and test/*/run.sh: their
# progress and error lines, their test result lines, and the pinned
# fetches of the build scripts. Sets no shell option; also sources
# counters.sh (srqud_counters).
#
#   log MSG...        "== NAME: MSG" on LOG_FD (a progress line)
#   log_line MSG...   the same; for a script whose own log() wraps it
#                     (contrib/build.sh starts its progress loop there)
#   die MSG...        "NAME: MSG" on stderr, exit DIE_STATUS
#   result NAME STATUS [DETAIL...]
#                     "RESULT NAME PASS|FAIL[ DETAIL]" on stdout: the line
#                     contrib/test.sh's count_results() reads. STATUS is
#                     PASS, FAIL or an exit status (0: PASS, else FAIL);
#                     returns 0 for PASS, 1 for FAIL
#   sha256_verify FILE SHA256
#                     die unless FILE has that sha256
#   fetch_verified [OPTIONS] FILE [PATH...]
#                     a pinned source into FILE (see below)
#   fetch_debian_source PACKAGE VERSION DSC_SHA256 SUITE DIR
#                     Debian's source package, extracted into DIR
#   make_progress TOTAL OUT [MAKE ARGS...]
#                     make -j$JOBS in the current directory, output in
#                     OUT, a progress line every 30 s (objects of ~TOTAL)
#   git_mirror OWNER NAME
#                     the local bare mirror of github.com/OWNER/NAME in
#                     $SRQUD_GIT_MIRRORS, if there is one
#   cache_entry NAME KEY / cache_done / cache_link TARGET LINK
#                     the build cache (see below)
#   thread_stacks PID...
#                     every thread's stack of each PID and of its
#                     descendants, on stdout (with gdb; a line saying so
#                     without): what a hang leaves to read after the kill
#
# What the lines look like, set after sourcing (defaults in brackets):
#   LOG_NAME    NAME [the script's file name without .sh]
#   LOG_PREFIX  what starts a log line ["== "]
#   LOG_FD      where log writes [1: stdout; the scripts whose stdout is
#               their result (a prefix on the last line) use 2]
#   DIE_PREFIX  what follows "NAME: " in die's line [""]
#   DIE_STATUS  die's exit status [1]
# e.g. contrib/softroce/vm-run: "vm-run: MSG" on stderr, "vm-run: error:
# MSG" and status 125 (LOG_PREFIX= LOG_FD=2 DIE_PREFIX="error: ").
#
# shellcheck shell=bash

# shellcheck source-path=SCRIPTDIR source=counters.sh
. "$(dirname "${BASH_SOURCE[0]}")/counters.sh"

LOG_NAME=${0##*/}
LOG_NAME=${LOG_NAME%.sh}
LOG_PREFIX="== "
LOG_FD=1
DIE_PREFIX=
DIE_STATUS=1

log_line() {
    printf '%s%s: %s\n' "$LOG_PREFIX" "$LOG_NAME" "$*" >&"$LOG_FD"
}

log() {
    log_line "$@"
}

die() {
    printf '%s: %s%s\n' "$LOG_NAME" "$DIE_PREFIX" "$*" >&2
    exit "$DIE_STATUS"
}

thread_stacks() {
    local pid kids
    for pid in "$@"; do
        [ -r "/proc/$pid/cmdline" ] || continue
        echo "threads of pid $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-160)):"
        if command -v gdb > /dev/null 2>&1; then
            gdb -p "$pid" -batch -ex 'thread apply all bt 40' 2>&1 < /dev/null |
                grep -E '^(Thread|#)' | sed 's/^/    /'
        else
            echo "    (no gdb here: no stacks)"
        fi
        kids=$(ps -o pid= --ppid "$pid" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$kids" ] && thread_stacks $kids
    done
    return 0
}

result() {
    local name=$1 status=$2
    shift 2
    case $status in
    PASS|0) status=PASS ;;
    *)      status=FAIL ;;
    esac
    echo "RESULT $name $status${*:+ $*}"
    [ $status = PASS ]
}

# machine_load: sets MACHINE_LOAD to "load L now, steal S % since the
# last reading": the 1-minute load average, and the share of CPU time the
# hypervisor gave to others since the last call (since boot at the first),
# so that a run that is slow on a busy or oversubscribed host says so
# beside its timings. Call it in the shell that keeps the count, not in
# $(...)
machine_load() {
    local user nice sys idle iow irq sirq steal total
    read -r _ user nice sys idle iow irq sirq steal _ < /proc/stat
    total=$((user + nice + sys + idle + iow + irq + sirq + steal))
    local dt=$((total - ${MACHINE_LOAD_TOTAL:-0}))
    local ds=$((steal - ${MACHINE_LOAD_STEAL:-0}))
    MACHINE_LOAD_TOTAL=$total MACHINE_LOAD_STEAL=$steal
    [ $dt -gt 0 ] || dt=1
    # shellcheck disable=SC2034  # read by the callers
    MACHINE_LOAD="load $(cut -d' ' -f1 /proc/loadavg) now, steal $((100 * ds / dt)) % since the last reading"
}

no_source() {      # no_source MSG: the source cannot be had here
    printf '%s: source not available: %s\n' "$LOG_NAME" "$*" >&2
    exit "$NOSOURCE_STATUS"
}

sha256_verify() {
    local got
    [ -r "$1" ] || die "$1: missing (pinned sha256 $2)"
    got=$(sha256sum "$1" | cut -c1-64)
    [ "$got" = "$2" ] || die "$1: sha256 $got, pinned $2"
}

# Where pinned sources come from, besides Debian's archive: a directory of
# local bare git mirrors named by SRQUD_GIT_MIRRORS (unset: none), each
# as OWNER+NAME/repo, OWNER/NAME.git or NAME.git, e.g.
#   git clone --mirror https://github.com/openucx/ucx $SRQUD_GIT_MIRRORS/openucx/ucx.git
# else the code host's release tarball. A source that cannot be had ends
# its script with status NOSOURCE_STATUS and one line saying what to set;
# contrib/test.sh reports such a step as not run.
NOSOURCE_STATUS=3

git_mirror() {     # git_mirror OWNER NAME: prints the mirror's directory
    local c
    [ -n "${SRQUD_GIT_MIRRORS:-}" ] || return 1
    for c in "$SRQUD_GIT_MIRRORS/$1+$2/repo" "$SRQUD_GIT_MIRRORS/$1/$2.git" \
             "$SRQUD_GIT_MIRRORS/$2.git"; do
        [ -d "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

# The build cache: what the build scripts make of pinned sources (UCX, its
# conformance suite, UCC, Open MPI's coll/ucc, MPICH) lives outside the
# checkout, in $SRQUD_CACHE (default ~/.cache/srqud), one directory per
# name and key (the pins and the script's hash), so a fresh clone on a
# machine that built it before only links it into $SRQUD_BUILD.
# contrib/test.sh --clean-cache empties it.
SRQUD_CACHE=${SRQUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srqud}

# cache_entry NAME KEY: sets CACHE_ENTRY to NAME's directory for KEY;
# status 0 when it is complete (cache_done ran with that KEY)
cache_entry() {
    CACHE_KEY=$2
    CACHE_ENTRY=$SRQUD_CACHE/$1-$(printf '%s' "$2" | sha1sum | cut -c1-12)
    [ -f "$CACHE_ENTRY/.srqud-cache" ] &&
        [ "$(cat "$CACHE_ENTRY/.srqud-cache")" = "$2" ]
}

# cache_done: CACHE_ENTRY is complete. Other keys of the same NAME are
# kept, the newest two, so that two checkouts a script apart do not
# rebuild each other's
cache_done() {
    local name old
    echo "$CACHE_KEY" > "$CACHE_ENTRY/.srqud-cache"
    name=${CACHE_ENTRY%-*}
    # shellcheck disable=SC2012
    for old in $(ls -dt "$name"-???????????? 2>/dev/null | tail -n +3); do
        log "cache: removing $old (an older key)"
        rm -rf "$old"
    done
}

cache_link() {     # cache_link TARGET LINK: LINK (in $SRQUD_BUILD) -> TARGET
    mkdir -p "$(dirname "$2")"
    rm -rf "$2"
    ln -s "$1" "$2"
}

# fetch_verified [OPTIONS] FILE [PATH...]: a pinned tar (or any file) into
# FILE, from a local git mirror when it has the tag, else downloaded:
#   --git DIR TAG   git archive --format=tar of TAG in the repository DIR
#                   (a bare mirror), PATHs only if given; used when DIR
#                   exists and has TAG (with --commit, TAG must be it)
#   --mirror OWNER/NAME TAG
#                   the same from git_mirror OWNER NAME, if there is one
#   --prefix P      git archive's --prefix (e.g. ucx-1.22.0/)
#   --url URL       otherwise (no DIR, or TAG not in it) download URL with
#                   curl; a URL ending in .gz is decompressed, so that the
#                   sha256 is of the same tar stream as git archive's
#   --commit SHA1   the pinned commit: TAG must be it, and the tar stream
#                   must say so (git get-tar-commit-id)
#   --sha256 HEX    the pinned sha256 of FILE (after decompression)
#   --extract DIR   then extract FILE into DIR and remove FILE
# At least one of --sha256 and --commit. Without --url, DIR must have TAG.
# Logs where it comes from; dies (naming the pin) on any mismatch.
fetch_verified() {
    local - git='' tag='' prefix='' url='' commit='' sha='' extract='' out got
    local mirror_of=''
    set -o pipefail
    while [ $# -gt 0 ]; do
        case $1 in
        --git)     git=$2 tag=$3; shift 3 ;;
        --mirror)  git=$(git_mirror "${2%/*}" "${2#*/}") || git=
                   tag=$3; mirror_of=$2; shift 3 ;;
        --prefix)  prefix=$2; shift 2 ;;
        --url)     url=$2; shift 2 ;;
        --commit)  commit=$2; shift 2 ;;
        --sha256)  sha=$2; shift 2 ;;
        --extract) extract=$2; shift 2 ;;
        --)        shift; break ;;
        -*)        die "fetch_verified: unknown option $1" ;;
        *)         break ;;
        esac
    done
    out=${1:?fetch_verified: no output file}
    shift
    [ -n "$sha$commit" ] || die "fetch_verified $out: no pin (--sha256 or --commit)"
    [ -n "$git$url" ] || die "fetch_verified $out: no source (--git or --url)"
    mkdir -p "$(dirname "$out")"
    if [ -n "$git" ] && [ -d "$git" ] &&
       got=$(git --git-dir="$git" rev-parse -q --verify "$tag^{commit}"); then
        [ -z "$commit" ] || [ "$got" = "$commit" ] ||
            die "tag $tag in $git is $got, pinned $commit"
        log "git archive $tag${commit:+ ($commit)} from $git"
        git --git-dir="$git" archive --format=tar ${prefix:+"--prefix=$prefix"} \
            "$tag" "$@" > "$out" || die "git archive $tag in $git failed"
    elif [ -n "$url" ]; then
        log "downloading $url"
        if ! case $url in
             *.gz) curl -fsSL --retry 2 --connect-timeout 20 "$url" | gzip -dc 2>/dev/null > "$out" ;;
             *)    curl -fsSL --retry 2 --connect-timeout 20 -o "$out" "$url" ;;
             esac; then
            rm -f "$out"
            no_source "$out: cannot download $url${mirror_of:+, and no mirror of $mirror_of (set SRQUD_GIT_MIRRORS)}"
        fi
    elif [ -d "$git" ]; then
        die "tag $tag not in $git"
    else
        no_source "$out: no git mirror${mirror_of:+ of $mirror_of (set SRQUD_GIT_MIRRORS)}${git:+ at $git}"
    fi
    [ -z "$sha" ] || sha256_verify "$out" "$sha"
    [ -z "$commit" ] || [ "$(git get-tar-commit-id < "$out")" = "$commit" ] ||
        die "$out is not commit $commit"
    if [ -n "$extract" ]; then
        mkdir -p "$extract"
        tar -xf "$out" -C "$extract" || die "cannot extract $out into $extract"
        rm -f "$out"
    fi
}

# fetch_debian_source PACKAGE VERSION DSC_SHA256 SUITE DIR: Debian's source
# package PACKAGE=VERSION of SUITE, extracted into DIR, through an apt state
# of our own in $SRQUD_CACHE/apt-SUITE (the system's apt lists stay as they
# are; DEBIAN_MIRROR, default deb.debian.org). The .dsc must have the
# pinned sha256; dpkg-source checks the tarballs against the .dsc
# (SKIP_PATCHES=1: the upstream tarball without Debian's patches). Status
# 1 (logged) when the archive does not serve it.
fetch_debian_source() {
    local pkg=$1 ver=$2 dsc_sha=$3 suite=$4 dir=$5 apt dl
    apt=$SRQUD_CACHE/apt-$suite
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" \
             "$apt/etc/sources.list.d" "$apt/etc/preferences.d"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${DEBIAN_MIRROR:-http://deb.debian.org/debian} $suite main" \
        > "$apt/etc/sources.list"
    : > "$apt/status"
    local opts=(-o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists"
                -o "Dir::State::status=$apt/status" -o "Dir::Cache=$apt/cache"
                -o "Dir::Etc::SourceList=$apt/etc/sources.list"
                -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
                -o "Dir::Etc::Preferences=$apt/etc/preferences"
                -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
                -o "APT::Sandbox::User=root")
    if ! apt-get "${opts[@]}" source --print-uris "$pkg=$ver" >/dev/null 2>&1; then
        log "apt-get update ($suite deb-src, private state in $apt; a few seconds)"
        apt-get "${opts[@]}" update -qq >"$apt/update.out" 2>&1 ||
            { log "apt-get update failed: $(tail -1 "$apt/update.out")"; return 1; }
    fi
    dl=$dir.debian
    rm -rf "$dl" "$dir"
    mkdir -p "$dl"
    log "apt-get source --download-only $pkg=$ver ($suite)"
    (cd "$dl" && apt-get "${opts[@]}" source -qq --download-only "$pkg=$ver") \
        >"$apt/source.out" 2>&1 ||
        { log "apt-get source $pkg=$ver failed: $(grep -m1 -E '^E:' "$apt/source.out" || tail -1 "$apt/source.out")"
          rm -rf "$dl"; return 1; }
    sha256_verify "$dl/${pkg}_${ver#*:}.dsc" "$dsc_sha"
    (cd "$dl" && dpkg-source --require-strong-checksums ${SKIP_PATCHES:+--skip-patches} \
        -x "${pkg}_${ver#*:}.dsc" "$dir") \
        >"$dl.out" 2>&1 ||
        { cat "$dl.out" >&2; die "dpkg-source -x ${pkg}_$ver.dsc failed"; }
    rm -rf "$dl" "$dl.out"
}

# the sources compiled under the current directory: libtool's PIC and
# non-PIC objects of one source count once
compiled_count() {
    find . \( -name '*.o' -o -name '*.lo' \) | sed 's|/\.libs/|/|; s|\.l\{0,1\}o$||' |
        sort -u | wc -l
}

# make_progress TOTAL OUT [MAKE ARGS...]: a long make, with a progress line
# every 30 s; on failure the errors of OUT on stderr, status 1
make_progress() {
    local total=$1 out=$2 pid t0 t
    shift 2
    t0=$(date +%s)
    make -j"${JOBS:-2}" "$@" > "$out" 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        sleep 30
        t=$(( $(date +%s) - t0 ))
        kill -0 $pid 2>/dev/null &&
            log "... $((t / 60)) min $((t % 60)) s, $(compiled_count) of ~$total files compiled"
    done
    wait $pid || { grep -B3 -A10 "error" "$out" | head -60 >&2; return 1; }
    log "make done in $(( $(date +%s) - t0 )) s"
}
