#!/usr/bin/python3
"""The tables of contrib/bench/mpi-calls.sh from its calls.csv: per MPI and
rank count, each variant's median over the repetitions of the average and
of the p99 per call and size (their range in brackets), srqud's ratios to
rc_verbs, ud_verbs and the UD bound, how many cells meet issue 38's goal
(and how many ud_verbs' times would),
srqud's ratios within each repetition (the transports ran back to back
there: a better estimate than a ratio of medians over repetitions), each
variant against itself (its odd repetitions against its even ones: the
ratios a run resolves), and the calls above 10x their median per 10,000
calls beside the floor the machine sets: the device's own exchanges
(srqud_rawexch, plain verbs) and the CPU alone (cpu_pauses). Writes the
medians to SUMMARY.

    mpi_calls_table.py CALLS_CSV SUMMARY_CSV [--iters N --iters-over N
                                              --cores N]

--iters, --iters-over and --cores are mpi-calls.sh's -n, -N and the
machine's cores: with them the slow calls are counted per 10,000 timed
calls (every rank's calls are timed; the ping-pong's on rank 0 only)."""
import argparse, csv, statistics

ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
ap.add_argument('calls')
ap.add_argument('summary')
ap.add_argument('--iters', type=int)
ap.add_argument('--iters-over', type=int)
ap.add_argument('--cores', type=int)
args = ap.parse_args()
rows = list(csv.DictReader(open(args.calls)))
allrows = rows
order = ['pingpong', 'sendrecv', 'alltoall', 'allgather', 'allreduce', 'bcast',
         'burst']
order += ['imb_' + c for c in order]   # IMB-MPI1's t_avg (-I)
dev = {}    # rep -> the ping-pongs' median half round trips
exch = {}   # (rep, np, 'ud_sendrecv', size) -> (average, p99)
for r in rows:
    if r['variant'] == 'device' and r['call'].endswith('_lat'):
        dev.setdefault(r['rep'], {})[r['call']] = float(r['p50_us'])
    elif r['variant'] == 'device' and r['call'][:3] in ('ud_', 'rc_'):
        exch[(r['rep'], int(r['np']), r['call'], int(r['size']))] = \
            (float(r['avg_us']), float(r['p99_us']))
rows = [r for r in rows if r['variant'] != 'device']
vs = list(dict.fromkeys(r['variant'] for r in rows))
cell = {}
for r in rows:
    k = (r['mpi'], int(r['np']), r['call'], int(r['size']), r['variant'])
    cell.setdefault(k, []).append(r)
# the device's UD/RC ratio of each repetition (ping-pong)
ratio_of = {rep: d['ud_lat'] / d['rc_lat'] for rep, d in dev.items()
            if d.get('ud_lat') and d.get('rc_lat')}
def dev_ratio(np_, call, size):
    """UD/RC of the device in the pattern a call goes in steps of: the
    median over the repetitions of UD's average over RC's in each (run
    back to back there, so a slow phase of the machine falls on both).
    Bcast has its own tree and Allgather and Allreduce their recursive
    doubling (2^k ranks) since srqud_rawexch runs them; runs before take
    Sendrecv's"""
    kinds = (['alltoall'] if call.endswith('alltoall') else
             ['bcast', 'sendrecv'] if call.endswith('bcast') else
             ['rdbl', 'sendrecv'] if call.endswith(('allgather', 'allreduce',
                                                    'rdbl'))
             else ['sendrecv'])
    qs = []
    if not call.endswith('pingpong'):
        for kind in kinds:
            qs = [exch[(rep, np_, 'ud_' + kind, size)][0] /
                  exch[(rep, np_, 'rc_' + kind, size)][0]
                  for rep in sorted({k[0] for k in exch})
                  if (rep, np_, 'ud_' + kind, size) in exch and
                  (rep, np_, 'rc_' + kind, size) in exch]
            if qs:
                break
    if not qs:
        qs = list(ratio_of.values())
    return statistics.median(qs) if qs else None
def med(k, col):
    xs = [float(r[col]) for r in cell.get(k, [])]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None
def bound(k, col):
    m, q = med(k, col), dev_ratio(k[1], k[2], k[3])
    return (m[0] * q,) if m and q else None
def fmt(m):
    return '%8.1f (%.0f-%.0f)' % m if m else '%8s' % '-'
def ratio(a, b):
    return '%7.2f' % (a[0] / b[0]) if a and b and b[0] else '%7s' % '-'
if dev:
    for t in ('ud_lat', 'rc_lat'):
        xs = [d[t] for d in dev.values() if t in d]
        print('device %s 8 B (srqud_rawperf, median half round trip): '
              '%.2f us (%.2f-%.2f)' % (t, statistics.median(xs), min(xs), max(xs)))
    xs = list(ratio_of.values())
    print('device UD/RC: %.2f (%.2f-%.2f); the UD bound of the ping-pong is '
          'rc_verbs x the median of the repetitions\' ratios' %
          (statistics.median(xs), min(xs), max(xs)))
if exch:
    print('\ndevice exchanges (srqud_rawexch, plain verbs), us per call, '
          'median of repetitions (range); UD/RC: the median of the '
          'repetitions\' ratios, the UD bound of a call (average and p99) is '
          'rc_verbs x this ratio')
    print('%5s %-9s %6s %22s %22s %7s' % ('ranks', 'call', 'size',
          'UD average', 'RC average', 'UD/RC'))
    for np_, kind, size in sorted({(k[1], k[2][3:], k[3]) for k in exch}):
        got = [(exch.get((rep, np_, 'ud_' + kind, size)),
                exch.get((rep, np_, 'rc_' + kind, size)))
               for rep in sorted({k[0] for k in exch})]
        got = [(u, c) for u, c in got if u and c]
        if not got:
            continue
        m = lambda xs: (statistics.median(xs), min(xs), max(xs))
        print('%5d %-9s %6d %22s %22s %7.2f' % (
            np_, kind, size, fmt(m([u[0] for u, c in got])),
            fmt(m([c[0] for u, c in got])), dev_ratio(np_, kind, size)))
# the calls each row timed are known only with the run's -n, -N and cores
KNOWN = bool(args.iters and args.iters_over and args.cores)
# (mpi, np, call, size, variant, rep) -> that repetition's average
avg_of = {(r['mpi'], int(r['np']), r['call'], int(r['size']), r['variant'],
           r['rep']): float(r['avg_us']) for r in rows}
REPS = sorted({r['rep'] for r in rows}, key=int)

def timed(np_, call):
    """the calls a row of CALL at NP ranks timed, or None if not known"""
    if not KNOWN:
        return None
    n = args.iters_over if np_ > args.cores else args.iters
    return n if call == 'pingpong' else n * np_

def slow_of(rs):
    """calls above 10x their median, above 1 ms, the slowest (us) and the
    calls timed (None if not known) over rows RS"""
    s = [0, 0, 0.0, 0]
    for r in rs:
        s[0] += int(r['slow10x']); s[1] += int(r['over1ms'])
        s[2] = max(s[2], float(r['max_us']))
        t = timed(int(r['np']), r['call'])
        s[3] = None if t is None or s[3] is None else s[3] + t
    return s

def fmt_slow(name, s):
    if s[3]:
        return '%s %.1f (%d of %d; %d above 1 ms; slowest %.0f us)' % (
            name, s[0] * 1e4 / s[3], s[0], s[3], s[1], s[2])
    return '%s %d / %d / %.0f' % (name, *s[:3])

def print_paired(mpi, np_):
    """srqud over each other transport within each repetition (they ran
    back to back there, so a slow phase of the machine falls on both),
    the median of the cells' averages per repetition"""
    parts = []
    for other in ('ud_verbs', 'rc_verbs'):
        per = []
        for rep in REPS:
            xs = [a / avg_of[(m, n, c, z, other, rp)]
                  for (m, n, c, z, v, rp), a in avg_of.items()
                  if (m, n, v, rp) == (mpi, np_, 'srqud', rep) and
                  not c.startswith('imb_') and
                  avg_of.get((m, n, c, z, other, rp), 0) > 0]
            if xs:
                per.append('%.2f' % statistics.median(xs))
        if per:
            parts.append('/ %s %s' % (other, ' '.join(per)))
    if parts:
        print('srqud within each repetition, average, median of the cells: ' +
              '; '.join(parts))

def print_halves(mpi, np_, vs):
    """what the run resolves: each variant against itself, the median of
    its odd repetitions' averages over that of its even ones in each cell
    (the larger over the smaller), so a ratio between transports that is
    within these is not told from the machine's phases"""
    cells = [k for k in dict.fromkeys(k[:4] for k in avg_of)
             if k[:2] == (mpi, np_) and not k[2].startswith('imb_')]
    parts = []
    for v in vs:
        qs = []
        for c in cells:
            xs = [(int(rp) % 2, avg_of[c + (v, rp)]) for rp in REPS
                  if avg_of.get(c + (v, rp), 0) > 0]
            odd = [a for o, a in xs if o]
            even = [a for o, a in xs if not o]
            if odd and even:
                a, b = statistics.median(odd), statistics.median(even)
                qs.append(max(a, b) / min(a, b))
        if qs:
            parts.append('%s %d of %d cells beyond 1.1x, %d beyond 1.2x, '
                         'largest %.2f' % (v, sum(q > 1.1 for q in qs),
                                           len(qs), sum(q > 1.2 for q in qs),
                                           max(qs)))
    if parts:
        print('each variant against itself (odd repetitions over even ones, '
              'average): ' + '; '.join(parts))

def print_slow(mpi, np_, vs):
    """the slow calls of each variant, then those of the machine's floor"""
    at = [r for r in allrows if int(r['np']) == np_ and r['slow10x']]
    parts = [fmt_slow(v, slow_of([r for r in at if r['mpi'] == mpi and
                                  r['variant'] == v])) for v in vs
             if any(r['mpi'] == mpi and r['variant'] == v for r in at)]
    dev = [r for r in at if r['variant'] == 'device']
    for what, sel in (('the device\'s exchanges (plain verbs)',
                       lambda c: c[:3] in ('ud_', 'rc_')),
                      ('the CPU alone (cpu_pauses)', lambda c: c == 'cpu')):
        rs = [r for r in dev if sel(r['call'])]
        if rs:
            parts.append(fmt_slow(what, slow_of(rs)))
    per = ' per 10,000 timed calls' if KNOWN else ''
    print('calls above 10x their median%s, all sizes and repetitions%s: ' %
          (per, '' if per else ' (count / above 1 ms / slowest us)') +
          ', '.join(parts))

out = csv.writer(open(args.summary, 'w', newline=''))
out.writerow(['mpi', 'np', 'variant', 'call', 'size', 'avg_us', 'avg_lo',
              'avg_hi', 'p99_us', 'p99_lo', 'p99_hi', 'reps'])
for mpi in dict.fromkeys(r['mpi'] for r in rows):
    for np_ in sorted({int(r['np']) for r in rows if r['mpi'] == mpi}):
        keys = sorted({(r['call'], int(r['size'])) for r in rows
                       if r['mpi'] == mpi and int(r['np']) == np_},
                      key=lambda k: (order.index(k[0]), k[1]))
        for call, size in keys:
            for v in vs:
                k = (mpi, np_, call, size, v)
                a = med(k, 'avg_us')
                p = med(k, 'p99_us') if a and cell[k][0]['p99_us'] else None
                if a:
                    out.writerow([mpi, np_, v, call, size] +
                                 ['%.2f' % x for x in a] +
                                 (['%.2f' % x for x in p] if p else [''] * 3) +
                                 [len(cell[k])])
        for col, what in (('avg_us', 'average'), ('p99_us', 'p99')):
            print('\n%s, %d ranks, %s per call, us (median of repetitions, '
                  'their range)' % (mpi, np_, what))
            print('%-10s %6s' % ('call', 'size') +
                  ''.join('%22s' % v for v in vs) +
                  '  srqud/rc srqud/ud srqud/bound')
            # cells, srqud within the goal, at or under ud_verbs, ud_verbs
            # within the same goal
            goal = [0, 0, 0, 0]
            for call, size in keys:
                if call.startswith('imb_') and col != 'avg_us':
                    continue   # IMB: averages only
                ms = {v: med((mpi, np_, call, size, v), col) for v in vs}
                b = bound((mpi, np_, call, size, 'rc_verbs'), col)
                print('%-10s %6d' % (call, size) +
                      ''.join('%22s' % fmt(ms[v]) for v in vs) + '  ' +
                      ratio(ms.get('srqud'), ms.get('rc_verbs')) + '  ' +
                      ratio(ms.get('srqud'), ms.get('ud_verbs')) + '  ' +
                      ratio(ms.get('srqud'), b))
                s, r, u = ms.get('srqud'), ms.get('rc_verbs'), ms.get('ud_verbs')
                if s and r and not call.startswith('imb_'):
                    # issue 38's goal for a time X: 1.2x rc_verbs or 1.1x
                    # the UD bound
                    within = lambda x: bool(x and ((x[0] <= 1.2 * r[0]) or
                                                   (b and x[0] <= 1.1 * b[0])))
                    goal[0] += 1
                    goal[1] += within(s)
                    goal[2] += bool(u and s[0] <= u[0])
                    goal[3] += within(u)
            if goal[0]:
                print('srqud within 1.2x rc_verbs or 1.1x the UD bound: %d of %d; '
                      'at or under ud_verbs: %d of %d; ud_verbs within the '
                      'same goal: %d of %d' %
                      (goal[1], goal[0], goal[2], goal[0], goal[3], goal[0]))
        print_paired(mpi, np_)
        print_halves(mpi, np_, vs)
        print_slow(mpi, np_, vs)
