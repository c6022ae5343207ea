#!/bin/bash
#
# Run UCX's UCT conformance suite for srqud (built by
# contrib/build-ucx-gtest.sh) inside the Soft-RoCE VM:
#
#   contrib/softroce/vm-run -- test/ucx-gtest/run.sh [--ci|--ci-quick] [gtest args...]
#
# Every srqud case runs except those listed in srqud.filter, each with the
# reason it does not apply, and those in SRQUD_GTEST_EXCLUDE (":"-separated
# patterns, e.g. the "#long" cases of srqud.filter for a quick run).
# --ci: the matrix's tier, without the cases srqud.filter marks "#long
# #full"; --ci-quick: CI's, without those marked "#long #ci" either. A
# skip reported by the suite itself ("[ SKIP ]", a capability srqud does
# not have) is counted and printed, not hidden.
# Exit status: gtest's (non-zero if any case failed).
#
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# die: "ucx-gtest: MSG" on stderr
. "$ROOT/contrib/lib/common.sh"
LOG_NAME=ucx-gtest
SRQUD_BUILD=${SRQUD_BUILD:-$ROOT/build}
GTEST=${UCX_GTEST:-$SRQUD_BUILD/ucx-gtest/gtest}

[ -x "$GTEST" ] || die "$GTEST not built (contrib/build-ucx-gtest.sh)"
ci=0
case ${1:-} in
--ci)       ci=1; shift ;;
--ci-quick) ci=2; shift ;;
esac

# srqud.filter: one negative pattern per line, "#" comments
exclude=$(grep -v -E '^\s*(#|$)' "$HERE/srqud.filter" | awk '{print $1}' | paste -sd:)
if [ $ci != 0 ]; then
    marks='#full'; [ $ci = 2 ] && marks='\(#full\|#ci\)'
    ci_skip=$(sed -n "s/^#long $marks //p" "$HERE/srqud.filter" | paste -sd:)
    exclude=$exclude${ci_skip:+:$ci_skip}
fi
extra=${SRQUD_GTEST_EXCLUDE:-}
exclude=$exclude${extra:+:$extra}
filter="srqud/*${exclude:+-$exclude}"

# A case that runs for SRQUD_GTEST_CASE_LIMIT seconds (default 900, the
# suite's own; the longest takes about 60 on an idle VM) fails (gtest -t)
# and the next case runs; its threads' stacks go to the output 60 s before.
# A suite still in that case 60 s after its watchdog fired (whose handler
# may itself block) is killed: the suite's result is then a failure, in
# minutes rather than at the caller's timeout
case_limit=${SRQUD_GTEST_CASE_LIMIT:-900}
log=$(mktemp)
UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn \
    "$GTEST" --gtest_filter="$filter" --gtest_color=no -t "$case_limit" "$@" > "$log" 2>&1 &
gtest_pid=$!
tail -n +1 -f --pid=$gtest_pid "$log" &
stacks_at=$((case_limit > 120 ? case_limit - 60 : case_limit * 2 / 3))
case_now= case_since=$SECONDS stacks_shown=0 killed=
while kill -0 $gtest_pid 2>/dev/null; do
    sleep 5
    # a case is its line and how many began before it (--gtest_repeat)
    running=$(grep '^\[ RUN' "$log" | tail -1)
    started=$(grep -c '^\[ RUN' "$log")
    if [ "$started $running" != "$case_now" ]; then
        case_now="$started $running" case_since=$SECONDS stacks_shown=0
    elif [ $((SECONDS - case_since)) -ge $((case_limit + 60)) ] && [ -z "$killed" ]; then
        echo "ucx-gtest: ${running#*] } still running $((SECONDS - case_since)) s after it started: killing the suite"
        killed=${running#*] }
        kill -KILL $gtest_pid
    elif [ $((SECONDS - case_since)) -ge $stacks_at ] && [ $stacks_shown = 0 ]; then
        echo "ucx-gtest: ${running#*] } still running after $((SECONDS - case_since)) s; its stacks:"
        thread_stacks $gtest_pid
        stacks_shown=1
    fi
done
wait $gtest_pid
rc=$?
sleep 1   # tail's last lines

passed=$(grep -c '^\[       OK \]' "$log")
skipped=$(grep -c '^\[     SKIP \]' "$log")
failed=$(grep '^\[  FAILED  \] srqud' "$log" | sed 's/,.*//' | sort -u | wc -l)
excluded=$(echo "$exclude" | tr : '\n' | grep -c .)
echo "ucx-gtest srqud: $((passed - skipped)) passed, $skipped skipped by the suite" \
     "(reasons below), $failed failed, $excluded excluded (srqud.filter)"
if [ -n "$killed" ]; then
    echo "ucx-gtest srqud: killed in $killed, the cases after it not run"
    rc=1
fi
# why the suite skipped: one line per reason. A skip without a reason is a
# size or setup bound of the suite, not a missing capability: none expected
grep '^\[     SKIP \]' "$log" | sed 's/^\[     SKIP \] *//; s/OP32\|OP64/OPnn/g' |
    sort | uniq -c | sort -rn | sed 's/^/ucx-gtest skip: /'
if grep -q '^\[     SKIP \] *$' "$log"; then
    echo "ucx-gtest srqud: cases skipped without a reason (see above)"
    rc=1
fi
rm -f "$log"
exit $rc
