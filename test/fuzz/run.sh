#!/bin/bash
#
# Build and run the libFuzzer targets with AddressSanitizer and UBSan:
#
#   fuzz_rx    srqud's receive-side logic (fuzz_rx.c: the header check,
#              selective repeat, zero-copy ranges and chunk tracker), from
#              the seed corpus in test/fuzz/corpus;
#   fuzz_sucg_am  sucg's step message (fuzz_sucg_am.c: the parse and check
#              of allgather_am_def.c and the handler's writes into a group
#              of the input's sizes), from test/fuzz/corpus_sucg_am
#              (written by seeds_sucg_am.py);
#   fuzz_path  srqud's whole receive path (fuzz_path*.c): every file of
#              src/uct/ib/srqud run by Debian's stock UCX over fake verbs
#              (fake_verbs*.c), from the seeds in test/fuzz/corpus_path
#              (written by seeds_path.py), followed by the line coverage of
#              the receive-path files (llvm-cov) over its corpus.
#
#   test/fuzz/run.sh [SECONDS]     (default 60 each; CI runs this bound)
#   SRQUD_FUZZ_TARGETS=fuzz_path test/fuzz/run.sh 300   (one of them)
#
# New inputs that reach new code go to $SRQUD_BUILD/fuzz/corpus,
# corpus_sucg_am and corpus_path (the seed corpora in the repo are not
# changed); a crash leaves its input in $SRQUD_BUILD/fuzz/ and fails the
# run. Prints "RESULT TARGET PASS|FAIL" for each target.
# fuzz_path needs the stock build (contrib/build.sh: $SRQUD_BUILD/stock),
# whose compiler flags it reuses; clang, llvm-profdata and llvm-cov are
# installed with apt-get (clang-14, llvm-14) if missing.
#
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# log ("== fuzz: MSG" on stdout: contrib/test.sh reads only the RESULT
# lines of it), result
. "$ROOT/contrib/lib/common.sh"
LOG_NAME=fuzz
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
SECONDS_MAX=${1:-60}
OUT=$SRQUD_BUILD/fuzz
FUZZ=$ROOT/test/fuzz
mkdir -p "$OUT/corpus" "$OUT/corpus_path" "$OUT/corpus_sucg_am"

# ------------------------------------------------------------------------
# Tools
tool() {   # tool NAME: the first of NAME, NAME-14 on PATH
    command -v "$1" 2>/dev/null || command -v "$1-14" 2>/dev/null
}
if [ -z "$(tool clang)" ] || [ -z "$(tool llvm-profdata)" ] ||
   [ -z "$(tool llvm-cov)" ]; then
    log "installing clang-14 llvm-14 with apt-get (missing)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang-14 llvm-14 \
        > "$OUT/apt-get.log" 2>&1 || tail -5 "$OUT/apt-get.log"
fi
CLANG=$(tool clang)
PROFDATA=$(tool llvm-profdata)
LLVM_COV=$(tool llvm-cov)

# ------------------------------------------------------------------------
# Host-only targets: built from their sources with clang's libFuzzer and
# the sanitizers, run for SECONDS_MAX from their seeds
#   fuzz_host NAME CORPUS MAX_LEN CLANG_ARGS... (its flags and sources)
fuzz_host() {
    local name=$1 corpus=$2 max_len=$3 rc
    shift 3
    log "building $name (clang, libFuzzer, ASan, UBSan)"
    "$CLANG" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$ROOT/src" "$@" \
        -o "$OUT/$name" || return 1
    log "running $name for ${SECONDS_MAX}s from $(ls "$FUZZ/$corpus" | wc -l) seeds"
    (cd "$OUT" && "$OUT/$name" -max_total_time="$SECONDS_MAX" \
        -print_final_stats=1 -max_len="$max_len" -artifact_prefix="$OUT/" \
        "$OUT/$corpus" "$FUZZ/$corpus" > "$OUT/$name.log" 2>&1)
    rc=$?
    grep -E "stat::number_of_executed_units|stat::peak_rss|cov:" "$OUT/$name.log" | tail -3
    [ $rc = 0 ] || tail -40 "$OUT/$name.log"
    return $rc
}

# fuzz_rx: srqud's logic, which uses UCX's internal headers (ucs_queue), as
# the module does
run_fuzz_rx() {
    fuzz_host fuzz_rx corpus 8192 \
        -I"$SRQUD_BUILD/ucx/include" -I"$SRQUD_BUILD/ucx-src/ucx-1.13.1/src" \
        -include "$FUZZ/offsetof.h" \
        "$FUZZ/fuzz_rx.c" "$ROOT/src/uct/ib/srqud/srqud_sr.c" \
        "$ROOT/src/uct/ib/srqud/srqud_chunk.c"
}

# fuzz_sucg_am: sucg's step message, its parse and check and the handler's
# writes (fuzz_sucg_am.c)
run_fuzz_sucg_am() {
    fuzz_host fuzz_sucg_am corpus_sucg_am 4096 \
        "$FUZZ/fuzz_sucg_am.c" "$ROOT/src/sucg/allgather/allgather_am_def.c"
}

# ------------------------------------------------------------------------
# fuzz_path: every srqud source, compiled as the stock build compiles the
# module (its CPPFLAGS: UCX's internal headers of the same version and the
# config.h of the UCX it runs with), plus the fuzz build's own includes:
# offsetof.h (UBSan and ucs_offsetof) and fuzz_path_hooks.h (the virtual
# clock and seeded randomness). Linked with -luct -lucs and without
# -libverbs: fake_verbs.c defines every verbs function srqud calls.
# The target's own sources (test/fuzz), compiled after srqud's:
PATH_SRC="fake_verbs fake_verbs_data fuzz_path fuzz_path_peers
          fuzz_path_peers_req fuzz_path_user"
STOCK_MK=$SRQUD_BUILD/stock/src/uct/ib/srqud/Makefile
SRQUD_SRC=$ROOT/src/uct/ib/srqud
RX_FILES="ep_rx rx rx_chain zcopy_rx zcopy rma rma_refusal back_ack proto ep_flush"

path_cppflags() {
    local ucx_cpp
    ucx_cpp=$(sed -n 's/^UCX_CPPFLAGS = //p' "$STOCK_MK")
    echo "-DHAVE_CONFIG_H -I$SRQUD_SRC -I$SRQUD_BUILD/stock $ucx_cpp -I$ROOT/src"
}

# build_path DIR FLAGS... : objects in DIR/obj (two compilers at a time,
# only what changed) in OBJS, the target's objects (PATH_SRC) in PATH_OBJS
build_path() {
    local dir=$1; shift
    local flags="$*" cpp f o n=0 fail=0
    cpp=$(path_cppflags)
    mkdir -p "$dir/obj"
    OBJS=()
    for f in "$SRQUD_SRC"/*.c; do
        o=$dir/obj/$(basename "$f" .c).o
        OBJS+=("$o")
        if [ -e "$o" ] && [ -z "$(find "$f" "$SRQUD_SRC" "$FUZZ/offsetof.h" \
                "$FUZZ/fuzz_path_hooks.h" -name '*.[ch]' -newer "$o" \
                -print -quit)" ]; then
            continue
        fi
        # shellcheck disable=SC2086
        "$CLANG" $flags $cpp -include "$FUZZ/offsetof.h" \
            -include "$FUZZ/fuzz_path_hooks.h" -c "$f" -o "$o" &
        n=$((n + 1))
        if [ $n -ge 2 ]; then
            wait -n || fail=1
            n=$((n - 1))
        fi
    done
    while [ $n -gt 0 ]; do
        wait -n || fail=1
        n=$((n - 1))
    done
    PATH_OBJS=()
    for f in $PATH_SRC; do
        PATH_OBJS+=("$dir/obj/$f.o")
        # shellcheck disable=SC2086
        "$CLANG" $flags $cpp -include "$FUZZ/offsetof.h" -c "$FUZZ/$f.c" \
            -o "$dir/obj/$f.o" || fail=1
    done
    return $fail
}

run_fuzz_path() {
    local rc
    # UBSan, less one check that fires in UCX's own ucs_queue iteration
    # (pointer-overflow: offset 0 on NULL)
    local san="-fsanitize=address,undefined -fno-sanitize-recover=undefined
               -fno-sanitize=pointer-overflow"

    if [ ! -e "$STOCK_MK" ]; then
        echo "fuzz_path: $STOCK_MK is missing (contrib/build.sh builds it)"
        return 1
    fi
    log "building fuzz_path (srqud + fake verbs, clang, libFuzzer, ASan, UBSan)"
    # shellcheck disable=SC2086
    build_path "$OUT/path" -Wno-unknown-attributes -g -O1 -std=gnu11 \
        -fsanitize=fuzzer-no-link $san || return 1
    # shellcheck disable=SC2086
    "$CLANG" -fsanitize=fuzzer $san -o "$OUT/fuzz_path" "${OBJS[@]}" \
        "${PATH_OBJS[@]}" -L/usr/lib/x86_64-linux-gnu -luct -lucs -lm \
        -lpthread || return 1
    if nm -D "$OUT/fuzz_path" | grep -q ' U ibv_'; then
        echo "fuzz_path: verbs functions resolve outside the fake device"
        return 1
    fi

    log "running fuzz_path for ${SECONDS_MAX}s from $(ls "$FUZZ/corpus_path" | wc -l) seeds"
    (cd "$OUT" && UBSAN_OPTIONS=print_stacktrace=1 "$OUT/fuzz_path" \
        -max_total_time="$SECONDS_MAX" -print_final_stats=1 -max_len=8192 \
        -timeout=60 -artifact_prefix="$OUT/path-" "$OUT/corpus_path" \
        "$FUZZ/corpus_path" "$FUZZ/findings" > "$OUT/fuzz_path.log" 2>&1)
    rc=$?
    grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss|cov:" \
        "$OUT/fuzz_path.log" | tail -4
    [ $rc = 0 ] || tail -60 "$OUT/fuzz_path.log"
    return $rc
}

# The receive path's line coverage over fuzz_path's corpus: the same
# sources built with -fprofile-instr-generate -fcoverage-mapping into a
# binary that replays the corpus (replay_main.c)
coverage_fuzz_path() {
    local cov=$OUT/path-cov files="" f
    log "coverage of the receive path by fuzz_path's corpus"
    build_path "$cov" -Wno-unknown-attributes -g -O1 -std=gnu11 \
        -fprofile-instr-generate -fcoverage-mapping || return 1
    "$CLANG" -g -O1 -fprofile-instr-generate -fcoverage-mapping \
        -c "$FUZZ/replay_main.c" -o "$cov/obj/replay_main.o" &&
    "$CLANG" -fprofile-instr-generate -o "$cov/fuzz_path_cov" \
        "$cov/obj/replay_main.o" "${OBJS[@]}" "${PATH_OBJS[@]}" \
        -L/usr/lib/x86_64-linux-gnu -luct -lucs -lm -lpthread || return 1
    rm -f "$cov"/*.profraw
    LLVM_PROFILE_FILE="$cov/replay-%p.profraw" "$cov/fuzz_path_cov" \
        "$OUT/corpus_path" "$FUZZ/corpus_path" || return 1
    "$PROFDATA" merge -o "$cov/fuzz_path.profdata" "$cov"/*.profraw || return 1
    for f in $RX_FILES; do
        files="$files $SRQUD_SRC/srqud_$f.c"
    done
    # shellcheck disable=SC2086
    "$LLVM_COV" report "$cov/fuzz_path_cov" \
        -instr-profile="$cov/fuzz_path.profdata" $files 2>&1 |
        sed "s|$SRQUD_SRC/||" > "$OUT/fuzz_path_coverage.txt"
    awk '/^srqud_|^TOTAL/ {
             printf "  %-20s lines %5s, %4s missed: %7s   branches %7s\n",
                    $1, $8, $9, $10, $13 }' "$OUT/fuzz_path_coverage.txt"
}

rc_all=0
for target in ${SRQUD_FUZZ_TARGETS:-fuzz_rx fuzz_sucg_am fuzz_path}; do
    "run_$target"
    result "$target" $? || rc_all=1
    if [ "$target" = fuzz_path ]; then
        coverage_fuzz_path || echo "fuzz: no coverage report (see above)"
    fi
done
exit $rc_all
