# Sourced (bash) by the benchmarks (contrib/bench/common.sh) and the tests
# (test/wire/run.sh): srqud's counters as UCX_SRQUD_STATS_DUMP=y prints
# them, one line per interface at close ("srqud rxe0:1 iface 0x..: rx N
# tx N ... retransmits N ...").
#
#   srqud_counters FILE NAME...   the named counters summed over every
#                                 interface of every process FILE caught,
#                                 comma-separated, 0 for a missing one
#
# shellcheck shell=bash
srqud_counters() {
    local file=$1
    shift
    awk -v names="$*" '
        BEGIN { n = split(names, name, " ") }
        /^srqud .* retransmits / {
            for (i = 1; i < NF; ++i) sum[$i] += $(i + 1)
        }
        END {
            for (k = 1; k <= n; ++k) printf "%s%d", (k > 1 ? "," : ""), sum[name[k]]
        }' "$file"
}
