#!/bin/bash
#
# Build and run the libFuzzer target over srqud's receive-side logic
# (fuzz_rx.c) with AddressSanitizer and UBSan, from the seed corpus in
# test/fuzz/corpus:
#
#   test/fuzz/run.sh [SECONDS]     (default 60; CI runs this bound)
#
# New inputs that reach new code go to $SRQUD_BUILD/fuzz/corpus (the seed
# corpus in the repo is not changed); a crash leaves its input in
# $SRQUD_BUILD/fuzz/ and fails the run. Prints "RESULT fuzz_rx PASS|FAIL".
#
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
SECONDS_MAX=${1:-60}
OUT=$SRQUD_BUILD/fuzz
# srqud's logic uses UCX's internal headers (ucs_queue), as the module does
UCX_INC="-I$SRQUD_BUILD/ucx/include -I$SRQUD_BUILD/ucx-src/ucx-1.13.1/src"
mkdir -p "$OUT/corpus"

SRC="$ROOT/test/fuzz/fuzz_rx.c $ROOT/src/uct/ib/srqud/srqud_sr.c
     $ROOT/src/uct/ib/srqud/srqud_chunk.c"
echo "== fuzz: building fuzz_rx (clang, libFuzzer, ASan, UBSan)"
# shellcheck disable=SC2086
clang -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$ROOT/src" $UCX_INC \
    -include "$ROOT/test/fuzz/offsetof.h" \
    -o "$OUT/fuzz_rx" $SRC || { echo "RESULT fuzz_rx FAIL"; exit 1; }

echo "== fuzz: running fuzz_rx for ${SECONDS_MAX}s from $(ls "$ROOT/test/fuzz/corpus" | wc -l) seeds"
cd "$OUT"
"$OUT/fuzz_rx" -max_total_time="$SECONDS_MAX" -print_final_stats=1 \
    -max_len=8192 -artifact_prefix="$OUT/" "$OUT/corpus" \
    "$ROOT/test/fuzz/corpus" > "$OUT/fuzz_rx.log" 2>&1
rc=$?
grep -E "stat::number_of_executed_units|stat::peak_rss|cov:" "$OUT/fuzz_rx.log" | tail -3
if [ $rc = 0 ]; then
    echo "RESULT fuzz_rx PASS"
else
    tail -40 "$OUT/fuzz_rx.log"
    echo "RESULT fuzz_rx FAIL"
fi
exit $rc
