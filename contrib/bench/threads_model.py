#!/usr/bin/env python3
#
# Memory of one process against its peers and its threads, per category
# of sharing (issue 11), from contrib/bench/threads.sh's measurement:
#
#   threads_model.py THREADS_CSV [--peers 16384] [--threads 64]
#
# M = VmRSS + mapped device queues (as contrib/bench/mem_model.py; VmRSS
# does not count Soft-RoCE's queue mappings). A worker per thread, each
# connected to every peer:
#
#     M(N, T) = M0 + T * m_thread + N * T * m_peer
#
# M0 and m_thread per category are fitted on the runs with 1 and 2
# threads (one peer each: their N * T * m_peer is in the fit) and checked
# against the runs with more threads: the error column is the model's
# prediction against what was measured there. m_peer is per endpoint and
# transport, measured by contrib/bench/mem.sh (results/mem.txt: srqud 529 B,
# ud_verbs 276 B, rc_verbs 354,821 B: a connected QP with its send queue).
# Registered memory (VmPin) is modelled the same way, apart: it is what
# srqud's SHARE=srq keeps flat in threads.

import argparse
import csv
import sys
from collections import defaultdict

M_PEER = {"srqud": 529, "ud_verbs": 276, "rc_verbs": 354821}


def fit(points):
    """a + b * T through the points with T = 1 and 2"""
    p = dict(points)
    if 1 not in p or 2 not in p:
        return None
    b = p[2] - p[1]
    return p[1] - b, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--peers", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=64)
    args = ap.parse_args()

    mem = defaultdict(list)
    pin = defaultdict(list)
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            t = int(row["threads"])
            mem[row["category"]].append((t, int(row["rss_kb"]) +
                                         int(row["qmap_kb"])))
            pin[row["category"]].append((t, int(row["pin_kb"])))

    print("Memory of the receiving process, M = VmRSS + mapped queues (kB)")
    print("%-11s %9s %11s %8s %10s %10s %8s %14s %14s" %
          ("category", "M0", "m_thread", "threads", "model", "measured",
           "error", "pin/thread", "pin flat?"))
    worst = 0.0
    extrap = []
    for cat in sorted(mem):
        f_m = fit(mem[cat])
        f_p = fit(pin[cat])
        if f_m is None:
            print("%-11s (no runs with 1 and 2 threads)" % cat)
            continue
        a, b = f_m
        for t, measured in sorted(mem[cat]):
            if t <= 2:
                continue
            model = a + b * t
            err = (model - measured) / measured * 100
            worst = max(worst, abs(err))
            print("%-11s %9.0f %11.0f %8d %10.0f %10d %7.1f%% %14.0f %14s" %
                  (cat, a, b, t, model, measured, err, f_p[1],
                   "yes" if abs(f_p[1]) < 0.01 * max(1, f_p[0]) else "no"))
        tl = cat.split("/")[0]
        peers_kb = args.peers * args.threads * M_PEER[tl] / 1024.0
        extrap.append((cat, (a + b * args.threads + peers_kb) / 1024.0,
                       (f_p[0] + f_p[1] * args.threads) / 1024.0))
    print("largest error of the model where it was not fitted: %.1f%%" % worst)
    print()
    print("Extrapolated to %d threads x %d peers (a worker per thread, each "
          "connected to every peer):" % (args.threads, args.peers))
    print("%-11s %12s %14s" % ("category", "M (MB)", "registered (MB)"))
    for cat, m, p in extrap:
        print("%-11s %12.0f %14.0f" % (cat, m, p))
    return 0 if worst <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
