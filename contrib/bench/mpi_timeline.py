#!/usr/bin/env python3
"""Reads the traces of contrib/bench/mpi-timeline.sh (ftrace text, one file
per run, named trace-MPI-NP-CALL-VARIANT.txt) and tells where a message
waits: per run, over the timed phase, the receive completions written
while their rank's main thread was off its core and how long it then
waited for one, the ranks' switches while runnable (preempted, or
yielding the core) and those to ksoftirqd per doorbell, ksoftirqd's time
on a CPU and the doorbells per message taken. For a ping-pong (traced
with the hop probes), where each message's time went, hop by hop: from
the sender's doorbell to the receive completion (the kernel's delivery),
to the rank taking the message (its progress call), to that call's
return, to the transport's send of the answer (UCP and MPI), to its
system call, to its doorbell.

  mpi_timeline.py --iters N --skip K [--csv FILE] [--hops-csv FILE]
                  [--plots] OUTDIR TRACE...

N: the calls each rank made in a run, K of them before the timed ones
(the check and the warm-up): the timed phase starts at the ranks'
messages past that share. Exit status 1 if a trace lost events or lacks
a rank's messages, doorbells or completions (the table would say nothing
of it, or something wrong).
"""

import argparse
import collections
import csv
import os
import re
import statistics
import sys

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\(\s*(\d+|-+)\)\s+\[(\d+)\]\s+\S+\s+'
                  r'([\d.]+):\s+(\w+):\s*(.*)$')
SWITCH = re.compile(r'prev_pid=(\d+) .*prev_state=(\S+) ==> '
                    r'next_comm=(.*) next_pid=(\d+)')
CQE = re.compile(r'cq=(\S+) op=(\d+)')
IB_WC_RECV = 128       # enum ib_wc_opcode: receives from here on
NAME = re.compile(r'trace-([^-]+)-(\d+)-([^-]+)-(.+?)(?:\.r(\d+))?\.txt$')
WRITTEN = re.compile(r'entries-in-buffer/entries-written: (\d+)/(\d+)')


def percentile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def read_events(path):
    """(time in us, pid, comm, event, fields), each pid's process, and
    the events the ring buffer lost (overwritten before they were read)"""
    events, tgid, lost = [], {}, 0
    with open(path, errors='replace') as f:
        for line in f:
            w = WRITTEN.search(line) if line.startswith('#') else None
            if w:
                lost += int(w.group(2)) - int(w.group(1))
            m = LINE.match(line)
            if not m:
                continue
            comm, pid, tg, _, ts, name, rest = m.groups()
            pid = int(pid)
            if tg.isdigit():
                tgid[pid] = int(tg)
            events.append((float(ts) * 1e6, pid, comm, name, rest))
    return events, tgid, lost


HOPS = ['deliver', 'pickup', 'call end', 'UCP+MPI', 'send', 'syscall',
        'half round trip']


def hops(events, proc, owner, lo, hi):
    """Per hop of each message of a ping-pong that one of its two ranks
    took in the timed phase (up to, not with, the last message: the
    results' gather), the time in us: the peer's doorbell, the completion
    on the rank's CQ, the rank's main thread taking it, that thread's
    progress call's return, its send of the answer, its system call, its
    doorbell. The barrier after the warm-up passes for two ping-pong
    messages: medians do not see them. Returns (hops, messages without
    all of their marks), or None without the hop probes' events."""
    seq = []        # (time, process, thread, kind) in order
    for (t, pid, _, n, rest) in events:
        if n == 'cqe':
            m = CQE.search(rest)
            if not m or int(m.group(2)) < IB_WC_RECV:
                continue
            seq.append((t, owner.get(m.group(1)), None, n))
            continue
        n = n.split('_')[0]         # done_srqud: done
        if n in ('eager', 'done', 'send', 'syscall', 'post'):
            seq.append((t, proc(pid), pid, n))
    if not any(k == 'done' for (_, _, _, k) in seq):
        return None
    # the ping-pong's two ranks: those that took the most messages
    taken = collections.Counter(p for (_, p, _, k) in seq if k == 'eager')
    pair = [p for p, _ in taken.most_common(2)]
    out, missed = {h: [] for h in HOPS}, 0

    def find(i, step, match):
        i += step
        while 0 <= i < len(seq):
            if match(seq[i]):
                return i
            i += step
        return None

    for i, (t, r, tid, kind) in enumerate(seq):
        if kind != 'eager' or not lo <= t < hi or r not in pair:
            continue
        peer = pair[1] if r == pair[0] else pair[0]
        c = find(i, -1, lambda x: x[3] == 'cqe' and x[1] == r)
        d = None if c is None else find(
            c, -1, lambda x: x[3] == 'post' and x[1] == peer)
        e = find(i, 1, lambda x: x[3] == 'done' and x[2] == tid)
        s_ = find(i, 1, lambda x: x[3] == 'send' and x[2] == tid)
        w = None if s_ is None else find(
            s_, 1, lambda x: x[3] == 'syscall' and x[2] == tid)
        p = None if w is None else find(
            w, 1, lambda x: x[3] == 'post' and x[2] == tid)
        marks = [d, c, i, e, s_, w, p]
        if None in marks:
            missed += 1
            continue
        ts = [seq[x][0] for x in marks]
        for h, a, b in zip(HOPS, ts, ts[1:]):
            out[h].append(b - a)
        out['half round trip'].append(ts[-1] - ts[0])
    return out, missed


class Run:
    """What one trace says of where the messages waited"""

    def __init__(self, path, iters, skip):
        self.path = path
        m = NAME.search(os.path.basename(path))
        self.mpi, self.np, self.call, self.variant = (
            (m.group(1), int(m.group(2)), m.group(3), m.group(4)) if m else
            ('?', 0, '?', os.path.basename(path)))
        self.rep = int(m.group(5)) if m and m.group(5) else 1
        events, tgid, lost = read_events(path)
        proc = lambda pid: tgid.get(pid, pid)
        self.problems = []
        if lost:
            self.problems.append('%d events lost (a larger buffer_size_kb)' %
                                 lost)
        eager = [t for (t, _, _, n, _) in events if n == 'eager']
        # each CQ's process; the ranks are the processes that made CQs (a
        # rank that only sends takes no message)
        owner = {}
        for (_, pid, _, n, rest) in events:
            if n == 'mkcq':
                owner[rest.split('cq=')[1].split()[0]] = proc(pid)
        self.ranks = sorted(set(owner.values()))
        if len(eager) < 8:
            self.problems.append('no messages taken')
            return
        # the timed phase: past the check and the warm-up (the calls run
        # back to back, so the messages' share stands for the calls')
        lo, hi = eager[len(eager) * skip // iters], eager[-1]
        self.calls = iters * sum(1 for t in eager if lo <= t) / len(eager)
        self.us_per_call = (hi - lo) / self.calls
        ranks = set(self.ranks)
        on_cpu, waiting = {}, {r: [] for r in ranks}
        ksoft_since = {}
        self.waits, self.recv, self.off = [], 0, 0
        self.runnable_out = self.by_ksoftirqd = 0
        self.ksoftirqd_us = 0.0
        self.posts = self.messages = 0
        for (t, pid, comm, n, rest) in events:
            inside = lo <= t <= hi
            if n == 'sched_switch':
                m = SWITCH.search(rest)
                if not m:
                    continue
                prev, state, ncomm, nxt = (int(m.group(1)), m.group(2),
                                           m.group(3), int(m.group(4)))
                on_cpu[prev], on_cpu[nxt] = False, True
                if inside and prev in ranks and state.startswith('R'):
                    self.runnable_out += 1
                    self.by_ksoftirqd += ncomm.startswith('ksoftirqd')
                if prev in ksoft_since:
                    since = ksoft_since.pop(prev)
                    self.ksoftirqd_us += max(0.0, min(t, hi) - max(since, lo))
                if ncomm.startswith('ksoftirqd'):
                    ksoft_since[nxt] = t
                if nxt in ranks:
                    # completions of the phase; a wait it cut counts to hi
                    self.waits += [min(t, hi) - t0 for t0 in waiting[nxt]]
                    waiting[nxt] = []
            elif not inside:
                continue
            elif n == 'cqe':
                m = CQE.search(rest)
                r = owner.get(m.group(1)) if m else None
                if r not in ranks or int(m.group(2)) < IB_WC_RECV:
                    continue
                self.recv += 1
                if on_cpu.get(r, False):
                    self.waits.append(0.0)
                else:
                    self.off += 1
                    waiting[r].append(t)
            elif n == 'eager':
                self.messages += 1
            elif n == 'post' and proc(pid) in ranks:
                self.posts += 1
        # what the end of the phase cut: ksoftirqd still on a CPU, ranks
        # still waiting for one
        for since in ksoft_since.values():
            self.ksoftirqd_us += max(0.0, hi - max(since, lo))
        for r in ranks:
            self.waits += [hi - t0 for t0 in waiting[r]]
        self.hops = None
        if self.call == 'pingpong':
            h = hops(events, proc, owner, lo, hi)
            if h is None:
                self.problems.append('no hop probes\' events')
            else:
                self.hops, missed = h
                # a message whose marks are not all there is left out; a
                # few (the last of the phase) are, not a share
                if missed > 0.05 * (len(self.hops['deliver']) + missed):
                    self.problems.append('%d messages without all their hops'
                                         % missed)
        if len(self.ranks) != self.np:
            self.problems.append('%d processes made CQs, not %d ranks' %
                                 (len(self.ranks), self.np))
        if self.posts == 0:
            self.problems.append('no doorbells')
        if self.recv == 0:
            self.problems.append('no receive completions on the ranks\' CQs')

    def row(self):
        w, off = self.waits, [x for x in self.waits if x > 0]
        return {
            'mpi': self.mpi, 'np': self.np, 'call': self.call,
            'variant': self.variant, 'rep': self.rep,
            'us_per_call': round(self.us_per_call, 1),
            'recv_completions': self.recv,
            'off_core_pct': round(100.0 * self.off / max(1, self.recv), 1),
            'wait_mean_us': round(sum(w) / max(1, len(w)), 1),
            'wait_off_mean_us': round(sum(off) / max(1, len(off)), 1),
            'wait_p50_us': round(percentile(w, .5), 1),
            'wait_p90_us': round(percentile(w, .9), 1),
            'wait_p99_us': round(percentile(w, .99), 1),
            'runnable_out_per_call': round(self.runnable_out / self.calls, 2),
            'to_ksoftirqd_per_doorbell': round(self.by_ksoftirqd /
                                               max(1, self.posts), 2),
            'ksoftirqd_us_per_call': round(self.ksoftirqd_us / self.calls, 1),
            'doorbells_per_msg': round(self.posts / max(1, self.messages), 2),
        }


def table(runs):
    head = ('%-5s %2s %-10s %-12s %3s %8s %6s %8s %8s %8s %8s %9s %9s %9s' %
            ('mpi', 'np', 'call', 'variant', 'rep', 'us/call', 'off %',
             'wait us', 'p90 us', 'off wait', 'R-out', 'ksirq/db',
             'ksirq us', 'db/msg'))
    print('per run, over its timed phase: us a call (traced); the '
          'receive completions (acknowledgements included) written while\n'
          'their rank was off its core (off %); the wait for a core of '
          'all of them (mean, p90; 0 for those on it) and of those off\n'
          'it (mean); the ranks\' switches while runnable a call '
          '(preempted or yielding: R-out); the switches to ksoftirqd a\n'
          'doorbell; ksoftirqd\'s time on a CPU a call; doorbells '
          'a message taken')
    print(head)
    for r in runs:
        x = r.row()
        print('%-5s %2d %-10s %-12s %3d %8.1f %6.1f %8.1f %8.1f %8.1f %8.2f '
              '%9.2f %9.1f %9.2f' %
              (x['mpi'], x['np'], x['call'], x['variant'], x['rep'],
               x['us_per_call'],
               x['off_core_pct'], x['wait_mean_us'], x['wait_p90_us'],
               x['wait_off_mean_us'],
               x['runnable_out_per_call'], x['to_ksoftirqd_per_doorbell'],
               x['ksoftirqd_us_per_call'], x['doorbells_per_msg']))


def hops_table(runs, path):
    rows = [r for r in runs if r.hops]
    if not rows:
        return
    groups = {}
    for r in rows:
        groups.setdefault((r.mpi, r.np, r.variant), []).append(r)
    print('\nping-pong, per hop of a message, us: the median over the '
          'repetitions of each one\'s median (their range); the\nsender\'s '
          'doorbell to the receive completion (deliver), to the rank taking '
          'it (pickup), to its progress\ncall\'s return (call end), to the '
          'transport\'s send of the answer (UCP+MPI), to its system call '
          '(send),\nto its doorbell (syscall)')
    print('%-5s %2s %-12s %4s' % ('mpi', 'np', 'variant', 'reps') +
          ''.join('%17s' % h for h in HOPS))
    for (mpi, np_, variant), rs in groups.items():
        cells = []
        for h in HOPS:
            meds = sorted(percentile(r.hops[h], .5) for r in rs)
            cells.append('%17s' % ('%.1f (%.0f-%.0f)' %
                                   (statistics.median(meds), meds[0],
                                    meds[-1])))
        print('%-5s %2d %-12s %4d' % (mpi, np_, variant, len(rs)) +
              ''.join(cells))
    if path:
        with open(path, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['mpi', 'np', 'variant', 'rep', 'hop', 'median_us',
                        'mean_us', 'p90_us', 'messages'])
            for r in rows:
                for h in HOPS:
                    v = r.hops[h]
                    w.writerow([r.mpi, r.np, r.variant, r.rep, h,
                                round(percentile(v, .5), 1),
                                round(sum(v) / len(v), 1),
                                round(percentile(v, .9), 1), len(v)])


def plot(runs, outdir):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    groups = {}
    for r in runs:
        groups.setdefault((r.mpi, r.np, r.call), []).append(r)
    for (mpi, np_, call), rs in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for r in rs:
            w = sorted(r.waits)
            if not w:
                continue
            ax.plot(w, [(i + 1) / len(w) for i in range(len(w))],
                    label='%s%s (%.0f %% off its core)' %
                    (r.variant, ' r%d' % r.rep if len(rs) > len(
                        set(x.variant for x in rs)) else '',
                     r.row()['off_core_pct']))
        ax.set_xscale('symlog', linthresh=1)
        ax.set_xlabel('a receive completion\'s wait for its rank to run, us')
        ax.set_ylabel('fraction of the completions')
        ax.set_title('%s, %d ranks, %s: where a message waits' %
                     (mpi, np_, call))
        ax.grid(True, alpha=.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, 'wait-%s-%d-%s.png' %
                                 (mpi, np_, call)))
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--iters', type=int, required=True)
    ap.add_argument('--skip', type=int, required=True)
    ap.add_argument('--csv')
    ap.add_argument('--hops-csv')
    ap.add_argument('--plots', action='store_true')
    ap.add_argument('outdir')
    ap.add_argument('traces', nargs='+')
    a = ap.parse_args()
    runs, status = [], 0
    for path in a.traces:
        r = Run(path, a.iters, a.skip)
        if r.problems:
            print('%s: %s' % (path, '; '.join(r.problems)), file=sys.stderr)
            status = 1
            continue
        runs.append(r)
    if runs:
        table(runs)
        if a.csv:
            rows = [r.row() for r in runs]
            with open(a.csv, 'w', newline='') as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        hops_table(runs, a.hops_csv)
        if a.plots:
            plot(runs, a.outdir)
    return status


if __name__ == '__main__':
    sys.exit(main())
