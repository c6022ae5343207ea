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

sha256_verify() {
    local got
    [ -r "$1" ] || die "$1: missing (pinned sha256 $2)"
    got=$(sha256sum "$1" | cut -c1-64)
    [ "$got" = "$2" ] || die "$1: sha256 $got, pinned $2"
}

# fetch_verified [OPTIONS] FILE [PATH...]: a pinned tar (or any file) into
# FILE, from a local git mirror when it has the tag, else downloaded:
#   --git DIR TAG   git archive --format=tar of TAG in the repository DIR
#                   (a bare mirror), PATHs only if given; used when DIR
#                   exists and has TAG (with --commit, TAG must be it)
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
    set -o pipefail
    while [ $# -gt 0 ]; do
        case $1 in
        --git)     git=$2 tag=$3; shift 3 ;;
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
        case $url in
        *.gz) curl -fsSL --retry 3 "$url" | gzip -dc > "$out" ;;
        *)    curl -fsSL --retry 3 -o "$out" "$url" ;;
        esac || die "could not download $url${git:+ (and no mirror at $git)}"
    elif [ -d "$git" ]; then
        die "tag $tag not in $git"
    else
        die "no git mirror at $git"
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
