#!/usr/bin/python3
# Copyright (c) srqud developers. See COPYING for license information.
"""The tables of contrib/bench/uct-exch.sh from its runs.csv (columns np,
rep, variant, call, size, avg_us, p50_us, p99_us, ...), on stdout; with a
second argument, the medians over the repetitions as a CSV there.

  uct_exch_table.py runs.csv [summary.csv]
"""

import collections
import csv
import statistics
import sys

VARIANTS = ['raw_ud', 'raw_rc', 'uct_srqud', 'uct_ud_verbs', 'uct_rc_verbs']
RATIOS = [('uct_srqud', 'raw_ud'), ('uct_ud_verbs', 'raw_ud'),
          ('uct_rc_verbs', 'raw_rc'), ('raw_ud', 'raw_rc'),
          ('uct_srqud', 'uct_rc_verbs'), ('uct_srqud', 'uct_ud_verbs')]

cells = collections.defaultdict(dict)  # (np, call, size) -> rep -> v -> (avg, p99)
for r in csv.DictReader(open(sys.argv[1])):
    cells[(int(r['np']), r['call'], int(r['size']))].setdefault(
        r['rep'], {})[r['variant']] = (float(r['avg_us']), float(r['p99_us']))
if len(sys.argv) > 2:
    with open(sys.argv[2], 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['np', 'call', 'size', 'variant', 'avg_us', 'p99_us'])
        for (np_, call, size), reps in sorted(cells.items()):
            for v in VARIANTS:
                xs = [r[v] for r in reps.values() if v in r]
                if xs:
                    w.writerow([np_, call, size, v,
                                '%.2f' % statistics.median(x[0] for x in xs),
                                '%.2f' % statistics.median(x[1] for x in xs)])


def spread(xs):
    return ('%.2f (%.2f-%.2f)' % (statistics.median(xs), min(xs), max(xs))
            if xs else '-')


for col, name in ((0, 'average'), (1, 'p99')):
    print('\n%s per call, us, median of the repetitions' % name)
    print('%3s %-8s %5s' % ('np', 'call', 'size') +
          ''.join('%14s' % v for v in VARIANTS))
    for k in sorted(cells):
        reps = cells[k].values()
        print('%3d %-8s %5d' % k + ''.join(
            '%14s' % ('%.1f' % statistics.median(xs) if xs else '-')
            for xs in ([r[v][col] for r in reps if v in r] for v in VARIANTS)))
    print('\n%s: ratios within each repetition, median (range)' % name)
    print('%3s %-8s %5s' % ('np', 'call', 'size') +
          ''.join('%26s' % ('%s/%s' % p) for p in RATIOS))
    for k in sorted(cells):
        reps = cells[k].values()
        print('%3d %-8s %5d' % k + ''.join(
            '%26s' % spread([r[a][col] / r[b][col] for r in reps
                             if a in r and b in r]) for a, b in RATIOS))
