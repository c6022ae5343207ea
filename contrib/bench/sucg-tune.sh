#!/bin/bash
#
# Where sucg's MPI_Allgather is faster than the MPI's own, and whether the
# shipped tables (SUCG_MPI_TUNE_DEFAULT_*, src/sucg/mpi/sucg_mpi_tune.h) ever
# make a call slower: in the Soft-RoCE VM,
#
#   contrib/softroce/vm-run --mem 8192 --timeout 7200 -- contrib/bench/sucg-tune.sh \
#       [-a] [-r REPS] [-n NETS] [-p NPS] [-m MPIS] [-s SIZES] [-i ITERS] [-b BUDGET]
#       [-k KINDS] [-c PAIRS] [-d DEVICE] [-o NAME]
#
# REPS repetitions (default 3); in each, every transport (NETS, default
# "srqud rc": UCX_TLS=srqud,self or rc_verbs,ud_verbs,self; "host":
# shared memory, UCX_TLS=sm,self, outside the VM too), MPI (MPIS,
# default "ompi mpich"), rank count (NPS, default "2 4 8") and
# Allgather runs once in turn (their order rotated every repetition), so a
# slow phase of the machine falls on all of them alike:
#   native  the MPI as shipped (Open MPI's coll/tuned, MPICH's own)
#   sucg    every call through sucg, its own algorithm choice
#   table   sucg's glue with its shipped table: what a user who installs
#           it gets (a size outside the table runs the native Allgather)
#   put     as sucg, with SUCG_STAGED_STEP=put: small steps as a put, a
#           fence and a flag instead of one active message
# KINDS: which of them, in this order (default "native sucg table"; native
# and sucg are always run). A kind may carry variables for the ranks after
# a +: sucg-zt64k+SUCG_ALLGATHER_ZCOPY_THRESH=65536 is sucg with that
# variable (put, table and native likewise).
# src/sucg/examples/allgather_bench.c times ITERS calls per size (default
# 500) after 50 untimed ones, fewer for large sizes: at most BUDGET bytes of
# results per size (default 16M; at least 5 calls), the mean per call and
# the 99th percentile of the calls (nearest rank: with fewer than 100
# calls, the slowest), each the slowest rank's; it checks the result and labels each size with the path
# its calls took (the run fails on a wrong byte or path). SIZES: per-rank
# blocks, default 8,64,1K,4K,16K,64K,256K,1M.
#
# PAIRS: the comparisons to make within each repetition, as A/B of kinds'
# labels (default: every kind but native / native): the run of A over the
# run of B of the same repetition, whose order was rotated alike, then the
# median and the spread of those ratios per cell (less noisy than a ratio
# of medians when the machine's speed drifts between repetitions).
#
# DEVICE: the same Allgather by recursive doubling over plain verbs, what
# the device allows each kind of step (src/tools/srqud_rawexch: ag_send
# eager sends, ag_rndv rendezvous reads, ag_put writes and a flag's,
# ag_tail one write with its flag last; comma-separated, default none; NETS
# must hold rc): in each repetition, after the MPIs' runs over rc, at each
# rank count that is a power of two, in an order rotated as the kinds',
# SIZES from 8 bytes (smaller ones as 8) to 64 KB, ITERS calls; rows of MPI
# "verbs" in runs.csv (the mean and p99 over every rank's calls, where the
# MPIs' rows are the slowest rank's: compare the device's kinds with one
# another), and a table of each step's time over the eager send's and the
# rendezvous's within each repetition. The ranks spin where they have a
# core each and yield where they exceed the cores, as Open MPI's do.
#
# -a (first): no runs, the tables and plots again from NAME's runs.csv.
#
# Output in $SRQUD_BUILD/bench/NAME (default sucg-tune): runs.csv (every
# repetition), summary.csv and table.txt: per transport, MPI, rank count
# and size the median over the repetitions of each Allgather's mean
# (smallest and largest in brackets), sucg / native, the median of its p99
# per call and each p99 over native's, and a verdict (on the means): "sucg wins" when
# sucg's slowest repetition beats native's fastest, "sucg loses" the
# reverse, else "within spread"; "table: SLOWER" marks a size where even
# the shipped table's fastest repetition is slower than native's slowest.
# Then, per MPI, the table the measurement supports (the sizes where sucg
# wins, as TRANSPORT:[NP]:LO-HI ranges; the smallest size measured extends
# to 0, the largest to inf) and the count of SLOWER cells. ratio-NET.png: sucg / native against the size (p99-ratio-NET.png: of the p99s). Exit status
# 1 if a run failed.
#
set -uo pipefail
. "$(dirname "$0")/common.sh"
REPS=3
NETS="srqud rc"
NPS="2 4 8"
MPIS="ompi mpich"
SIZES=8,64,1K,4K,16K,64K,256K,1M
ITERS=500
BUDGET=16M
KINDS="native sucg table"
PAIRS=
DEVICE=
NAME=sucg-tune
ANALYSE=
[ "${1-}" = -a ] && { ANALYSE=1; shift; }
bench_getopts "r:REPS n:NETS p:NPS m:MPIS s:SIZES i:ITERS b:BUDGET k:KINDS c:PAIRS d:DEVICE o:NAME" "$@"
for kind in $KINDS; do
    case ${kind%%+*} in native|sucg|table|put|sucg-*|put-*|table-*|native-*) ;;
    *) bench_usage; exit 2 ;; esac
done
[[ " $KINDS " == *" native "* ]] || KINDS="native $KINDS"
[[ " $KINDS " == *" sucg "* ]] || KINDS="$KINDS sucg"
# shellcheck source=../../test/sucg/mpi/mpirun.sh
. "$ROOT/test/sucg/mpi/mpirun.sh"
# shellcheck source=sucg-run.sh
. "$ROOT/contrib/bench/sucg-run.sh"
B=$SRQUD_BUILD
OUT=$RESULTS/$NAME
mkdir -p "$OUT"
PMPI_LIB=$B/install/lib/libsucg_pmpi.so
EX=$B/obj/src/sucg/examples
for f in "$B/install/lib/openmpi/mca_coll_sucg.so" "$PMPI_LIB" \
         "$EX/sucg_allgather_bench_ompi" "$EX/sucg_allgather_bench_mpich"; do
    [ -e "$f" ] || { echo "error: $f missing: run contrib/build.sh" >&2; exit 1; }
done
sucg_ompi_component_args "$B/install/lib/openmpi"
# shellcheck disable=SC2034 # sucg_ompi and sucg_mpich read it
SUCG_MPI_TMO=1800
CSV=$OUT/runs.csv
rc=0
t0=$SECONDS
runs=0
if [ -n "$ANALYSE" ]; then
    [ -s "$CSV" ] || { echo "error: -a: no $CSV" >&2; exit 1; }
    # what was measured, not the options' defaults
    NPS=$(awk -F, 'NR > 1 { print $4 }' "$CSV" | sort -nu | tr '\n' ' ')
    KINDS=$(awk -F, 'NR > 1 && $3 != "verbs" && !s[$5]++ { printf "%s ", $5 }' "$CSV")
    NETS=$(awk -F, 'NR > 1 && !s[$2]++ { printf "%s ", $2 }' "$CSV")
    REPS=0
fi
# the pairs' labels among the kinds' (with -a those of the runs), before an
# hour of runs and before anything of NAME's is written
for pair in $PAIRS; do
    [[ $pair == ?*/?* ]] || { echo "error: -c $pair: not A/B" >&2; exit 2; }
    for label in "${pair%%/*}" "${pair#*/}"; do
        for kind in $KINDS; do [ "${kind%%+*}" = "$label" ] && continue 2; done
        echo "error: -c $pair: $label is not one of the kinds: $KINDS" >&2; exit 2
    done
done
# -d: known steps, and a transport to run them beside
if [ -n "$DEVICE" ] && [ -z "$ANALYSE" ]; then
    for d in ${DEVICE//,/ }; do
        case $d in ag_send|ag_rndv|ag_put|ag_tail) ;;
        *) echo "error: -d $d: ag_send, ag_rndv, ag_put or ag_tail" >&2; exit 2 ;; esac
    done
    [[ " $NETS " == *" rc "* ]] || { echo "error: -d runs beside -n rc" >&2; exit 2; }
fi
# the run's conditions head its table (kept by -a)
if [ -z "$ANALYSE" ]; then
    {
        echo "# sucg-tune.sh $*: $(date -u +%FT%TZ), $(nproc) cores," \
             "load $(cut -d' ' -f1-3 /proc/loadavg)"
        bench_ranks_on_cores "$NPS"
    } > "$OUT/conditions.txt"
fi
cat "$OUT/conditions.txt" 2>/dev/null

# device REP NP: srqud_rawexch's Allgathers (DEVICE, rotated by REP) at NP
# ranks into the CSV as MPI "verbs", kind the call; SIZES of 8 bytes to
# 64 KB (smaller ones as 8)
device() {
    local rep=$1 np=$2 sizes spin=-Y out calls ds k
    sizes=$(tr , '\n' <<< "$SIZES" | awk '{ n = $1 + 0; if ($1 ~ /[kK]$/) n *= 1024;
            if ($1 ~ /[mM]$/) n *= 1048576; n = (n < 8) ? 8 : n; if (n <= 65536) print n }' |
            sort -nu | head -n 8 | paste -sd,)
    [ -n "$sizes" ] || { echo "-d: no size of SIZES up to 64 KB" >&2; return 1; }
    read -ra ds <<< "${DEVICE//,/ }"
    k=$(( (rep - 1) % ${#ds[@]} ))
    calls=$(IFS=,; echo "${ds[*]:$k},${ds[*]:0:$k}")
    [ "$np" -gt "$(nproc)" ] && spin=
    # shellcheck disable=SC2086 # spin: no word or one
    if ! out=$(timeout 1800 "$B/obj/src/tools/srqud_rawexch" -d "$BENCH_DEV" -t rc -N "$np" -c "${calls%,}" \
               -s "$sizes" -n "$ITERS" -w 50 $spin -T 1700 2>&1); then
        echo "srqud_rawexch -N $np -c $DEVICE: failed: $(tail -n 2 <<< "$out")" >&2
        return 1
    fi
    # CALL SIZE avg_us p50_us p99_us max_us slow10x over1ms
    awk -v p="$rep,rc,verbs,$np" -v i="$ITERS" \
        'NF == 8 && $2 ~ /^[0-9]+$/ { print p "," $1 "," $2 "," i "," $3 ",device," $5 }' \
        <<< "$out" >> "$CSV"
}

# impl MPI KIND: sucg-run.sh's name of an Allgather (a kind's label is
# its name up to + and its base up to the first -)
impl() {
    local base=${2%%+*}
    case "$1:${base%%-*}" in
    ompi:native)  echo ompi-tuned ;;
    mpich:native) echo mpich-default ;;
    *:sucg|*:put) echo "$1-ucg-auto" ;;
    *:table)      echo "$1-ucg-table" ;;
    esac
}

[ -n "$ANALYSE" ] || echo "rep,net,mpi,np,kind,bytes,iters,lat_us,path,p99_us" > "$CSV"
total=$(( REPS * $(wc -w <<< "$NETS") * $(wc -w <<< "$MPIS") * $(wc -w <<< "$NPS") *
         $(wc -w <<< "$KINDS") ))
read -ra KS <<< "$KINDS"
for rep in $(seq "$REPS"); do
    # the kinds' order rotates: none always runs first (a run after the
    # machine switched transports or rank counts is not like the others)
    k=$(( (rep - 1) % ${#KS[@]} ))
    for net in $NETS; do
        sucg_net "$net" || { echo "error: -n $net: srqud, rc or host" >&2; exit 2; }
        [ "$net" = host ] && UCX_ENV=("UCX_TLS=sm,self" "${UCX_ENV[@]}")
        for m in $MPIS; do
            for np in $NPS; do
                for kind in "${KS[@]:$k}" "${KS[@]:0:$k}"; do
                    label=${kind%%+*}
                    step=am
                    [ "${label%%-*}" = put ] && step=put
                    env="SUCG_STAGED_STEP=$step $(echo "${kind#"$label"}" | tr + ' ')"
                    # a plain assignment: exported, the ranks would see
                    # an unknown SUCG_ variable and warn
                    SUCG_RUN_ENV=$env
                    if out=$(sucg_run "$(impl "$m" "$kind")" "$np" \
                             "$EX/sucg_allgather_bench" -s "$SIZES" -i "$ITERS" -w 50 -B "$BUDGET" -l x); then
                        # label,np,bytes,iters,lat_us,p99_us,path
                        # a line of another shape (a stale build of the
                        # program) fails the run, not an empty cell
                        echo "$out" | awk -F, -v p="$rep,$net,$m,$np,$label" \
                            'NF != 7 { bad = 1; next }
                             { print p "," $3 "," $4 "," $5 "," $7 "," $6 }
                             END { exit bad }' >> "$CSV" ||
                            { echo "error: $kind np=$np: lines not of 7 fields:" \
                                   "rebuild the examples" >&2; rc=1; }
                    else
                        rc=1
                    fi
                    runs=$((runs + 1))
                done
                echo "== rep $rep $net $m np=$np: $runs of $total runs," \
                     "$(( (SECONDS - t0) / 60 )) min" >&2
            done
        done
        if [ -z "$DEVICE" ] || [ "$net" != rc ]; then continue; fi
        for np in $NPS; do
            (( np & (np - 1) )) && continue   # recursive doubling's counts
            device "$rep" "$np" || rc=1
            echo "== rep $rep device np=$np: $DEVICE," \
                 "$(( (SECONDS - t0) / 60 )) min" >&2
        done
    done
done

cp "$OUT/conditions.txt" "$OUT/table.txt" 2>/dev/null
LABELS=$(for kind in $KINDS; do printf '%s ' "${kind%%+*}"; done)
/usr/bin/python3 - "$CSV" "$OUT/summary.csv" "$NPS" "$LABELS" "$PAIRS" <<'PY' | tee -a "$OUT/table.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
nps_measured = [int(x) for x in sys.argv[3].split()]
kinds = sys.argv[4].split()
others = [k for k in kinds if k != 'native']
tl = {'srqud': 'srqud', 'rc': 'rc_verbs', 'host': 'shm'}
cell = {}
for r in rows:
    k = (r['net'], r['mpi'], int(r['np']), int(r['bytes']), r['kind'])
    # runs.csv of a version without p99_us: no p99 column
    tail = float(r['p99_us']) if r.get('p99_us') else None
    cell.setdefault(k, []).append((float(r['lat_us']), r['path'], tail, r['rep']))
def stat(k):
    v = [x for x, _, _, _ in cell.get(k, [])]
    return (statistics.median(v), min(v), max(v)) if v else None
def p99(k):
    v = [t for _, _, t, _ in cell.get(k, []) if t is not None]
    return statistics.median(v) if v else None
def within(k, a, b):
    # A's time over B's in each repetition that ran both
    ta = {rep: x for x, _, _, rep in cell.get(k + (a,), [])}
    tb = {rep: x for x, _, _, rep in cell.get(k + (b,), [])}
    v = [ta[rep] / tb[rep] for rep in ta if rep in tb and tb[rep] > 0]
    return (statistics.median(v), min(v), max(v)) if v else None
# checked against the kinds by the script above
pairs = [tuple(p.split('/')) for p in sys.argv[5].split()] or \
        [(k, 'native') for k in kinds if k != 'native']
def human(b):
    for s, u in ((20, 'M'), (10, 'K')):
        if b >= 1 << s and b % (1 << s) == 0:
            return '%d%s' % (b >> s, u)
    return str(b)
def fmt(s):
    return '%.1f (%.1f-%.1f)' % s if s else '-'
keys = sorted({k[:4] for k in cell if k[1] != 'verbs'})
dev_keys = sorted({k[:4] for k in cell if k[1] == 'verbs'})
out = csv.writer(open(sys.argv[2], 'w'))
out.writerow(['net', 'mpi', 'np', 'bytes'] +
             [k + x for k in kinds for x in ('_us', '_lo', '_hi')] +
             ['ratio'] + [k + '_ratio' for k in others if k != 'sucg'] +
             ['verdict', 'table_slower', 'table_path'] +
             [k + '_p99_us' for k in kinds] + [k + '_p99_ratio' for k in others])
wins = {}
slower = 0
cells = 0
last = None
for k in keys:
    st = {x: stat(k + (x,)) for x in kinds}
    n, s, t = st['native'], st['sucg'], st.get('table')
    if not (n and s):
        continue
    if last != k[:3]:
        print('\n## %s, %s, %d ranks: MPI_Allgather, us per call (median of the '
              'repetitions, smallest-largest); ratios to native' % (tl[k[0]], k[1], k[2]))
        print('%-6s ' % 'bytes' + ' '.join('%-24s' % x for x in kinds) + ' ' +
              ' '.join('%-7s' % (x + '/n') for x in others) + ' %-14s ' % 'verdict' +
              '%-*s ' % (8 * len(kinds), 'p99: ' + '/'.join(kinds)) +
              ' '.join('%-7s' % (x + '/n') for x in others) + " table's path")
        last = k[:3]
    verdict = ('sucg wins' if s[2] < n[1] else
               'sucg loses' if s[1] > n[2] else 'within spread')
    if verdict == 'sucg wins':
        wins.setdefault((k[0], k[2], k[3]), set()).add(k[1])
    bad = bool(t) and t[1] > n[2]
    cells += bool(t)
    slower += bad
    paths = sorted({p for _, p, _, _ in cell.get(k + ('table',), [])})
    tails = {x: p99(k + (x,)) for x in kinds}
    nt = tails['native']
    tratio = {x: tails[x] / nt if (tails[x] and nt) else None for x in others}
    print('%-6s ' % human(k[3]) + ' '.join('%-24s' % fmt(st[x]) for x in kinds) + ' ' +
          ' '.join('%-7.2f' % (st[x][0] / n[0]) if st[x] else '-      ' for x in others) +
          ' %-14s ' % verdict +
          '%-*s ' % (8 * len(kinds), '/'.join('%.0f' % tails[x] if tails[x] else '-'
                                               for x in kinds)) +
          ' '.join('%-7.2f' % tratio[x] if tratio[x] else '-      ' for x in others) +
          ' %s%s' % (','.join(paths), '  SLOWER' if bad else ''))
    out.writerow(list(k) + [round(v, 2) for x in kinds for v in (st[x] or (0, 0, 0))] +
                 [round(s[0] / n[0], 3)] +
                 [round(st[x][0] / n[0], 3) if st[x] else '' for x in others if x != 'sucg'] +
                 [verdict, int(bad), ';'.join(paths)] +
                 [round(tails[x], 2) if tails[x] else '' for x in kinds] +
                 [round(tratio[x], 3) if tratio[x] else '' for x in others])
mpis = sorted({k[1] for k in keys})
var = {'ompi': 'Open MPI, coll_sucg_tune', 'mpich': 'MPICH, SUCG_MPI_TUNE'}
print('\n## the tables this measurement supports (the sizes where sucg wins)')
for m in mpis:
    ranges = []
    for net in sorted({k[0] for k in keys}):
        sizes = sorted({k[3] for k in keys if k[0] == net})
        for np in nps_measured:
            won = [b for b in sizes if m in wins.get((net, np, b), set())]
            i = 0
            while i < len(won):
                j = i
                while j + 1 < len(won) and sizes.index(won[j + 1]) == sizes.index(won[j]) + 1:
                    j += 1
                hi = 'inf' if won[j] == sizes[-1] else human(won[j])
                lo = '0' if won[i] == sizes[0] else human(won[i])
                ranges.append('%s:[%d]:%s-%s' % (tl[net], np, lo, hi))
                i = j + 1
    print('  %s: %s' % (var.get(m, m), '#'.join(ranges) if ranges else
                        '(none: sucg wins nowhere beyond the spread)'))
if 'table' in kinds:
    print('\n## shipped table slower than native beyond the spread: %d of %d cells'
          % (slower, cells))
print('\n## within each repetition: time over time of the same repetition '
      '(median of the repetitions, smallest-largest)')
print('%-8s %-6s %-3s %-6s ' % ('net', 'mpi', 'np', 'bytes') +
      ' '.join('%-22s' % ('%s/%s' % p) for p in pairs))
for k in keys:
    print('%-8s %-6s %-3d %-6s ' % (tl[k[0]], k[1], k[2], human(k[3])) +
          ' '.join('%-22s' % ('%.2f (%.2f-%.2f)' % w if w else '-')
                   for w in (within(k, a, b) for a, b in pairs)))
if dev_keys:
    steps = [s for s in ('ag_send', 'ag_rndv', 'ag_put', 'ag_tail')
             if any(k + (s,) in cell for k in dev_keys)]
    dpairs = [(a, b) for b in ('ag_send', 'ag_rndv') if b in steps
              for a in steps if a != b and not (a == 'ag_send' and b == 'ag_rndv')]
    print('\n## the device (srqud_rawexch, plain verbs over RC): the same '
          'Allgather, us per call, median of the repetitions (p99); each '
          'step over the eager send and the rendezvous within each repetition')
    print('%-3s %-6s ' % ('np', 'bytes') + ' '.join('%-16s' % s for s in steps) +
          ' ' + ' '.join('%-18s' % ('%s/%s' % (a[3:], b[3:])) for a, b in dpairs))
    for k in dev_keys:
        print('%-3d %-6s ' % (k[2], human(k[3])) +
              ' '.join('%-16s' % ('%.1f (%.0f)' % (stat(k + (s,))[0], p99(k + (s,)))
                                  if stat(k + (s,)) else '-') for s in steps) + ' ' +
              ' '.join('%-18s' % ('%.2f (%.2f-%.2f)' % w if w else '-')
                       for w in (within(k, a, b) for a, b in dpairs)))
PY
[ "${PIPESTATUS[0]}" = 0 ] || rc=1
for net in $NETS; do
    /usr/bin/python3 "$ROOT/contrib/bench/plot.py" "$OUT/summary.csv" --x bytes --y ratio \
        --series mpi,np --where net="$net" --logx --xlabel "bytes per rank" \
        --ylabel "sucg / native (median us)" \
        --title "MPI_Allgather over $net: sucg against the MPI's own" \
        -o "$OUT/ratio-$net.png" || rc=1
    # runs of a version without p99 have none to plot
    if /usr/bin/python3 -c 'import csv, sys
sys.exit(not any(r["sucg_p99_ratio"] for r in csv.DictReader(open(sys.argv[1]))))' \
           "$OUT/summary.csv"; then
        /usr/bin/python3 "$ROOT/contrib/bench/plot.py" "$OUT/summary.csv" --x bytes \
            --y sucg_p99_ratio --series mpi,np --where net="$net" --logx \
            --xlabel "bytes per rank" --ylabel "sucg / native (p99 per call)" \
            --title "MPI_Allgather over $net: sucg's p99 against the MPI's own" \
            -o "$OUT/p99-ratio-$net.png" || rc=1
    fi
done
echo "== $(( (SECONDS - t0) / 60 )) min; results in $OUT" >&2
exit $rc
