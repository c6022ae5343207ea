#!/bin/bash
#
# Inside the Soft-RoCE VM: ucx_perftest over srqud and over ud_verbs (and
# rc_verbs with --rc), same sizes, same run. Prints a table; with
# --csv FILE also writes the numbers.
#
# ud_verbs/rc_verbs need UCX_IB_GID_INDEX=2 on rxe over lo (their default,
# index 0, is a link-local GID that lo does not have); srqud picks it alone.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
ITER=${ITER:-2000}
CSV=""
TLS="srqud ud_verbs"
while [ $# -gt 0 ]; do
    case "$1" in
    --csv) CSV=$2; shift 2 ;;
    --rc)  TLS="$TLS rc_verbs"; shift ;;
    --iter) ITER=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

tl_env() {   # environment for a transport
    case "$1" in
    srqud) echo "UCX_SRQUD_GID_INDEX=auto" ;;
    *)     echo "UCX_IB_GID_INDEX=2" ;;
    esac
}

# perftest TL TEST SIZE [ucp]: prints "lat_usec bw_MBs msgrate" or "FAIL"
perftest() {
    local tl=$1 test=$2 size=$3 layer=${4:-uct}
    local args envs out
    envs=$(tl_env "$tl")
    if [ "$layer" = uct ]; then
        args="-t $test -x $tl -d rxe0:1 -n $ITER -s $size"
        [ "$size" -gt 100 ] && args="$args -D bcopy"
    else
        args="-t $test -n $ITER -s $size"
        # rc needs ud beside it for connection setup (UCP's auxiliary
        # transport); UCP still carries the data over rc
        if [ "$tl" = rc_verbs ]; then
            envs="$envs UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1"
        else
            envs="$envs UCX_TLS=$tl,self UCX_NET_DEVICES=rxe0:1"
        fi
    fi
    # shellcheck disable=SC2086 # word lists
    out=$(PERFTEST_TIMEOUT=300 "$ROOT/contrib/bench/perftest-pair.sh" $envs -- $args 2>&1)
    local rc=$?
    if [ $rc != 0 ] || ! echo "$out" | grep -q "Final:"; then
        echo FAIL
        return 1
    fi
    # Final: iterations, latency typical/avg/overall, bw avg/overall, rate avg/overall
    echo "$out" | awk '/Final:/ {printf "%.2f %.2f %.0f\n", $4, $7, $9}'
}

printf "%-8s %-10s %8s | %s\n" layer test size "$(for t in $TLS; do printf '%-28s' "$t (lat us, MB/s)"; done)"
[ -n "$CSV" ] && echo "layer,test,size,tl,lat_us,bw_MBs,msgrate" > "$CSV"
rc=0
run_row() {  # run_row LAYER TEST SIZE
    local line=""
    for tl in $TLS; do
        local r
        r=$(perftest "$tl" "$2" "$3" "$1") || rc=1
        if [ "$r" = FAIL ]; then
            line="$line$(printf '%-28s' FAIL)"
        else
            set -- "$1" "$2" "$3" $r
            line="$line$(printf '%-28s' "$4 us, $5 MB/s")"
            [ -n "$CSV" ] && echo "$1,$2,$3,$tl,$4,$5,$6" >> "$CSV"
        fi
    done
    printf "%-8s %-10s %8s | %s\n" "$1" "$2" "$3" "$line"
}

for s in 8 64 1024; do run_row uct am_lat $s; done
for s in 64 1024 4000; do run_row uct am_bw $s; done
for s in 8 1024; do run_row ucp tag_lat $s; done
for s in 1024 65536; do run_row ucp tag_bw $s; done
exit $rc
