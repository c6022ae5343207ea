#!/usr/bin/env python3
"""Reads the callgrind profiles of contrib/bench/instr-count.sh and tells
how many instructions a transport's client executes per iteration of a
latency test: the profile of a long run less that of a short one, divided
by the iterations between them (start-up and tear-down cancel out), in all
and by the library they ran in; and the spin locks taken and the system
calls made (write(): the doorbells), which cost more than their
instructions.

  instr_count.py --short N --long M [--csv FILE] [--png FILE] [--top K]
                 [--check TL:REF:MAX] OUTDIR

OUTDIR holds cg-LAYER-TEST-VARIANT-ITERS.out for ITERS N and M. --check
srqud:ud_verbs:1.5 fails (exit 1) where srqud's instructions per
iteration exceed 1.5x ud_verbs' in a test, where either has no profile
there, or a count is not positive; a profile that cannot be read fails
too.
"""

import argparse
import collections
import csv
import glob
import os
import re
import sys

NAME = re.compile(r'cg-([^-]+)-([^-]+)-(.+)-(\d+)\.out$')
SPEC = re.compile(r'^(ob|fn|fl|fi|fe|cob|cfi|cfl|cfn)=(?:\((\d+)\))?\s*(.*)$')

# the library an instruction ran in, by its file name
GROUPS = [
    ('transport', re.compile(r'libuct_srqud|libuct_ib')),
    ('uct/ucs', re.compile(r'libuct\.so|libucs\.so')),
    ('ucp', re.compile(r'libucp\.so')),
    ('verbs provider', re.compile(r'librxe|libibverbs|libmlx')),
    ('libc', re.compile(r'libc\.so|ld-linux')),
    ('perftest', re.compile(r'ucx_perftest|libucx_perftest')),
]


def group(obj):
    for name, pattern in GROUPS:
        if pattern.search(obj):
            return name
    return 'other'


# calls counted per iteration beside the instructions: what costs more
# than its instructions (a lock's atomic; a system call, here the doorbell)
CALLS = [('locks', re.compile(r'^pthread_spin_lock')),
         ('write()', re.compile(r'^(__GI___libc_)?write$'))]


def read_profile(path):
    """self instructions by (object, function), the total, and the calls
    of CALLS"""
    names = {}
    ob = fn = '?'
    callee = None
    cost = collections.Counter()
    calls = collections.Counter()
    skip_next = False
    total = None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            if line.startswith('summary:'):
                # one a part: a profile dumped in parts sums them
                total = (total or 0) + int(line.split(':')[1].split()[0])
                continue
            m = SPEC.match(line)
            if m:
                kind, ident, text = m.groups()
                key = (kind.lstrip('c')[:2], ident)
                if text:
                    names[key] = text
                value = names.get(key, text)
                if kind == 'ob':
                    ob = value
                elif kind == 'fn':
                    fn = value
                elif kind == 'cfn':
                    callee = value
                continue
            if line.startswith('calls='):
                skip_next = True    # the next line is the call's inclusive cost
                for name, pattern in CALLS:
                    if callee and pattern.search(callee):
                        calls[name] += int(line[6:].split()[0])
                continue
            if line[0] in '0123456789+-*':
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    cost[(ob, fn)] += int(parts[1])
    if total is None:
        total = sum(cost.values())
    return cost, total, calls


class Cell:
    """One variant of one test: instructions per iteration"""

    def __init__(self, outdir, layer, test, variant, short, long_):
        a, ta, ca = read_profile(os.path.join(
            outdir, 'cg-%s-%s-%s-%d.out' % (layer, test, variant, short)))
        b, tb, cb = read_profile(os.path.join(
            outdir, 'cg-%s-%s-%s-%d.out' % (layer, test, variant, long_)))
        n = float(long_ - short)
        self.layer, self.test, self.variant = layer, test, variant
        self.total = (tb - ta) / n
        self.calls = {k: (cb[k] - ca[k]) / n for k, _ in CALLS}
        self.by_group = collections.Counter()
        self.by_fn = collections.Counter()
        for k in set(a) | set(b):
            d = (b[k] - a[k]) / n
            self.by_group[group(k[0])] += d
            self.by_fn[(os.path.basename(k[0]), k[1])] += d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--short', type=int, required=True)
    ap.add_argument('--long', type=int, required=True)
    ap.add_argument('--csv')
    ap.add_argument('--png')
    ap.add_argument('--top', type=int, default=12)
    ap.add_argument('--check', action='append', default=[])
    ap.add_argument('outdir')
    a = ap.parse_args()
    runs = collections.OrderedDict()
    for path in sorted(glob.glob(os.path.join(a.outdir, 'cg-*.out'))):
        m = NAME.search(os.path.basename(path))
        if m and int(m.group(4)) == a.long:
            runs[(m.group(1), m.group(2), m.group(3))] = 1
    cells, status = [], 0
    for (layer, test, variant) in runs:
        try:
            cells.append(Cell(a.outdir, layer, test, variant, a.short, a.long))
        except (OSError, ValueError) as e:
            print('instr_count: %s %s %s: %s' % (layer, test, variant, e),
                  file=sys.stderr)
            status = 1
    if not cells:
        print('instr_count: no profiles in %s' % a.outdir, file=sys.stderr)
        return 1
    names = [g for g, _ in GROUPS] + ['other']
    print('instructions a client executes per iteration (one message sent, '
          'one received, the polls between),\nby the library they ran in '
          '(profile of %d iterations less %d, over the difference)' %
          (a.long, a.short))
    print('%-5s %-8s %-10s %9s' % ('layer', 'test', 'variant', 'total') +
          ''.join('%15s' % g for g in names) +
          ''.join('%9s' % k for k, _ in CALLS))
    for c in cells:
        print('%-5s %-8s %-10s %9.0f' % (c.layer, c.test, c.variant, c.total) +
              ''.join('%15.0f' % c.by_group[g] for g in names) +
              ''.join('%9.2f' % c.calls[k] for k, _ in CALLS))
    print('(locks: spin locks taken, write(): system calls, the doorbells, '
          'per iteration)')
    for c in cells:
        top = sorted(((k, n) for k, n in c.by_fn.items()
                      if group(k[0]) == 'transport' and n >= 0.5),
                     key=lambda kv: (-round(kv[1]), kv[0][1]))[:a.top]
        if not top:
            continue
        print('\n%s %s %s: the transport\'s functions, instructions per '
              'iteration' % (c.layer, c.test, c.variant))
        for (obj, fn), n in top:
            print('  %7.0f  %s' % (n, fn))
    if a.csv:
        with open(a.csv, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['layer', 'test', 'variant', 'group', 'instructions'])
            for c in cells:
                w.writerow([c.layer, c.test, c.variant, 'total',
                            round(c.total)])
                for g in names:
                    w.writerow([c.layer, c.test, c.variant, g,
                                round(c.by_group[g])])
                for k, _ in CALLS:
                    w.writerow([c.layer, c.test, c.variant, 'calls ' + k,
                                round(c.calls[k], 2)])
    for spec in a.check:
        tl, ref, limit = spec.split(':')
        if not any(c.variant == tl for c in cells):
            print('check %s: no profile of %s' % (spec, tl), file=sys.stderr)
            status = 1
        for c in cells:
            if c.variant != tl:
                continue
            r = [x for x in cells if x.variant == ref and
                 (x.layer, x.test) == (c.layer, c.test)]
            if not r:
                print('check %s: no %s beside it in %s %s' %
                      (spec, ref, c.layer, c.test), file=sys.stderr)
                status = 1
                continue
            ratio = c.total / max(1.0, r[0].total)
            # a count of nothing is a broken run, not a small one
            ok = c.total > 0 and r[0].total > 0 and ratio <= float(limit)
            print('check %s %s: %s / %s = %.2f (at most %s): %s' %
                  (c.layer, c.test, tl, ref, ratio, limit,
                   'ok' if ok else 'FAILED'))
            status |= 0 if ok else 1
    if a.png:
        plot(cells, names, a.png)
    return status


def plot(cells, names, png):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels = ['%s %s\n%s' % (c.layer, c.test, c.variant) for c in cells]
    bottom = [0.0] * len(cells)
    for g in names:
        v = [max(0.0, c.by_group[g]) for c in cells]
        if not any(v):
            continue
        ax.bar(labels, v, bottom=bottom, label=g)
        bottom = [b + x for b, x in zip(bottom, v)]
    ax.set_ylabel('instructions per iteration (client)')
    ax.set_title('What a message costs in instructions, by library')
    ax.legend(fontsize=8)
    ax.grid(True, axis='y', alpha=.3)
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


if __name__ == '__main__':
    sys.exit(main())
