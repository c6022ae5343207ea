#!/usr/bin/env python3
#
# Memory of one process against its peers and its threads, per category
# of sharing (issue 11), from contrib/bench/threads.sh's measurement:
#
#   threads_model.py THREADS_CSV [--peers 16384] [--threads 64]
#   threads_model.py --check     # the uUAR model against the paper's figures
#
# M = the Rss of every mapping but the device queues (from smaps) + the
# device queues' size. (VmRSS counts Soft-RoCE's queue pages as file pages
# only once they are mapped in, some time after the queue is made: VmRSS +
# queues counted them once or twice depending on when it was read, the
# 17 MB steps of the first measurement.) A worker per thread, each
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
#
# uUARs: the doorbell registers (micro UARs, 2 to a 4 KiB UAR page) that
# each category would take on mlx5 (ConnectX), from the QPs per thread
# measured here, after the paper's accounting (uUARs allocated, static
# ones included; CQs take none: their arm doorbell is on a page the
# context has anyway) and rdma-core's providers/mlx5 defaults:
# MLX5_TOTAL_UUARS 16, MLX5_NUM_LOW_LAT_UUARS 4. Two modes:
#   static (the paper's: kernel 4.16, rdma-core v17-v28): 8 pages and 16
#     uUARs per context; a plain QP takes a low-latency uUAR of its own
#     (4, lock-free), then one of the 11 medium ones (locked), which QPs
#     from the 16th share; a thread domain takes a dynamic uUAR of its
#     own, two TDs to a page
#   dynamic (rdma-core >= v29 on a kernel with MLX5_LIB_CAP_DYN_UAR): no
#     static pages, one non-cached page per context; plain QPs get pages
#     on demand: 4 dedicated uUARs, then 12 shared (locked); TDs as above
# srqud's categories: ctx a context per thread; pd and srq one context,
# plain QPs (srqud's interface QP and its zero-copy send QP per worker);
# td a thread domain per worker, which all of the worker's QPs share (one
# thread rings it: no lock). UCX's ud_verbs and rc_verbs use no thread
# domains.

import argparse
import csv
import sys
from collections import defaultdict

M_PEER = {"srqud": 529, "ud_verbs": 276, "rc_verbs": 354821}

LOW_LAT, TOTAL = 4, 16           # mlx5 defaults (uUARs per context)
MEDIUM = TOTAL - LOW_LAT - 1      # uUAR 0 takes no QP by default


def ceil2(n):
    return (n + 1) // 2


def uuars_plain_static(qps):
    """(pages, uuars, lock-free QPs, most QPs on one uUAR) of one context
    with @qps plain QPs, static mode"""
    lock_free = min(qps, LOW_LAT)
    rest = qps - lock_free
    most = 1 if qps else 0
    if rest > MEDIUM:
        most = -(-rest // MEDIUM)
    return TOTAL // 2, TOTAL, lock_free, most


def uuars_plain_dynamic(qps):
    """the same, dynamic mode (the non-cached page included): each QP past
    the low-latency ones takes a page of its own until (TOTAL - LOW_LAT) / 2
    pages, TOTAL - LOW_LAT shared uUARs, exist (even while earlier ones
    are idle), then the QPs share those uUARs"""
    lock_free = min(qps, LOW_LAT)
    beyond = max(qps - LOW_LAT, 0)
    shared_pages = min(beyond, (TOTAL - LOW_LAT) // 2)
    pages = 1 + ceil2(lock_free) + shared_pages
    most = 1 if qps else 0
    if beyond > TOTAL - LOW_LAT:
        most = -(-beyond // (TOTAL - LOW_LAT))
    return pages, 2 * (pages - 1), lock_free, most


def uuars(cat, t, q, peers=1):
    """mlx5 UAR pages and uUARs of category @cat with @t threads of @q QPs
    each (per peer for rc_verbs): {mode: (pages, uuars, lock-free QPs,
    most QPs sharing a uUAR)}"""
    tl, _, share = cat.partition("/")
    qps = t * q * (peers if tl == "rc_verbs" else 1)
    out = {}
    for mode, plain, base in (("static", uuars_plain_static, (8, 16)),
                              ("dynamic", uuars_plain_dynamic, (1, 0))):
        if share == "ctx":
            p, u, lf, most = plain(q)
            out[mode] = (t * p, t * u, t * lf, most)
        elif share == "td":
            # a TD per worker: its own dynamic uUAR, 2 TDs to a page
            pages = base[0] + ceil2(t)
            out[mode] = (pages, base[1] + 2 * ceil2(t), qps, q)
        else:
            out[mode] = plain(qps)
    return out


def fit(points):
    """a + b * T through the points with T = 1 and 2"""
    p = dict(points)
    if 1 not in p or 2 not in p:
        return None
    b = p[2] - p[1]
    return p[1] - b, b


def check():
    """the uUAR model against the paper's figures for 16 threads, a QP per
    thread (Zambre et al., section VII: uUARs allocated) and rdma-core's
    dynamic mode; exit status 0 if all hold"""
    cases = [
        # (category, threads, QPs per thread, mode, field, expected)
        ("srqud/ctx", 16, 1, "static", 1, 256),   # MPI everywhere
        ("srqud/ctx", 16, 1, "static", 0, 128),   # its UAR pages
        ("srqud/pd", 16, 1, "static", 1, 16),     # Static: one context
        ("srqud/td", 16, 1, "static", 1, 32),     # Shared Dynamic
        ("srqud/td", 16, 1, "static", 0, 16),
        ("srqud/pd", 16, 1, "static", 3, 2),      # "the 5th and 16th QP
        ("srqud/pd", 15, 1, "static", 3, 1),      #  share a uUAR"
        ("srqud/pd", 16, 1, "static", 2, 4),      # 4 low-latency uUARs
        ("srqud/pd", 8, 1, "dynamic", 0, 7),      # 1 NC + 2 + 4 shared
        ("srqud/pd", 16, 1, "dynamic", 1, 16),    # 4 + 12 uUARs
        ("srqud/pd", 64, 1, "dynamic", 1, 16),    # no more after that
        ("srqud/td", 16, 1, "dynamic", 0, 9),     # 1 NC + 8 TD pages
    ]
    bad = 0
    for cat, t, q, mode, field, want in cases:
        got = uuars(cat, t, q)[mode][field]
        if got != want:
            print("uUAR model: %s %d threads x %d QPs, %s, field %d: %d, "
                  "expected %d" % (cat, t, q, mode, field, got, want))
            bad += 1
    print("uUAR model: %d of %d checks hold" % (len(cases) - bad, len(cases)))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?")
    ap.add_argument("--peers", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--check", action="store_true",
                    help="check the uUAR model against the paper, no CSV")
    args = ap.parse_args()
    if args.check:
        return check()
    if args.csv is None:
        ap.error("a CSV of contrib/bench/threads.sh, or --check")

    mem = defaultdict(list)
    pin = defaultdict(list)
    qps_per_thread = {}
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            t = int(row["threads"])
            if t == 1 and int(row["qps"]) > 0:  # -1: rdma could not tell
                qps_per_thread[row["category"]] = int(row["qps"])
            # the Rss of every mapping but the device queues, and the
            # queues' size (VmRSS counts queue pages once they are mapped
            # in, which Soft-RoCE does some time after their creation: it
            # would count them once or twice by the time it is read)
            other = row.get("rss_other_kb")
            rss = int(other) if other and int(other) > 0 else int(row["rss_kb"])
            mem[row["category"]].append((t, rss + int(row["qmap_kb"])))
            pin[row["category"]].append((t, int(row["pin_kb"])))

    print("Memory of the receiving process, M = Rss but the queues + mapped queues (kB)")
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

    print()
    print("uUARs on mlx5 (a model: no such device here), one peer per worker:")
    print("UAR pages/uUARs allocated, lock-free QPs (a uUAR of their own or")
    print("their thread's domain's), most QPs on one uUAR:")
    print("%-11s %4s %8s %26s %26s" % ("category", "QPs", "threads",
                                      "static (the paper's)", "dynamic"))
    for cat in sorted(qps_per_thread):
        q = qps_per_thread[cat]
        for t in (1, 2, 4, 8, 16, 64):
            u = uuars(cat, t, q)
            print("%-11s %4d %8d %26s %26s" % (
                cat, q, t, *["%4d/%-4d %4d %3d" % u[m]
                             for m in ("static", "dynamic")]))
    return 0 if worst <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
