#!/usr/bin/env python3
#
# Analytical memory model of one process against its number of peers
# (Sur et al., IPDPS'06, Eq. 1-4) for srqud, ud_verbs and rc_verbs,
# computed from the object sizes of this build (mem_sizes) and the
# configuration in effect (ucx_info -c -f), compared with mem_peers'
# measurement and extrapolated to 16K peers.
#
#   mem_model.py MEM_CSV SIZES_TXT UCX_CONFIG_TXT [--png FILE]
#
# Memory M of the process = resident memory + the device's queues mapped
# into it. VmRSS does not count the Soft-RoCE queue mappings (measured:
# rc_verbs' mapped queues grew from 2 MB to 35 MB between 1 and 128 peers
# while VmRSS did not move), so they are added:
#     M = VmRSS + mapped device queues
# The model: M(N) = M(1) + (N - 1) * m_peer, with m_peer from the sizes
# below; the first connection's one-time cost (address handle, connection
# tables, first pool chunks) is M(1) - M(0), reported apart.
# Registered (pinned) memory is modelled separately: it does not depend on
# N for any of the three (receive buffers are per interface: srqud's SRQ,
# UCX's ud RQ, UCX's rc SRQ), which the measurement checks.

import csv
import sys

KB = 1024.0


def malloc_size(n):
    """glibc: 8 bytes of header, 16-byte granules, 32 bytes at least"""
    return max(32, (n + 8 + 15) // 16 * 16)


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def khash_bytes_per_entry(key, val):
    """khash: keys and values in arrays of a power-of-two capacity kept
    under 77% full; on average about 1.5x the entry"""
    return (key + val + 0.25) * 1.5


def rxe_queue_bytes(num_elem, elem_size):
    """rxe_queue_init(): slots = pow2(num_elem + 1), each at least a cache
    line and a power of two, after a header; mapped in whole pages"""
    buf = 128 + pow2(num_elem + 1) * pow2(max(64, elem_size))
    return (buf + 4095) // 4096 * 4096


def load_kv(path, sep=None):
    kv = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if sep is None:
                k, v = line.split()[:2]
            else:
                if sep not in line:
                    continue
                k, v = line.split(sep, 1)
            kv[k.strip()] = v.strip()
    return kv


def per_peer_model(tl, sizes, cfg):
    """bytes per peer and what they are"""
    if tl == 'srqud':
        ep = malloc_size(sizes['srqud_ep'])
        # an ep that sends to the peer, and a passive one that receives
        # from it (found by a hash on the peer's GID, QP and ep id); one
        # slot each in the ep id array; the address handle is per node
        hashed = khash_bytes_per_entry(sizes['srqud_peer_key'], 8)
        return 2 * ep + hashed + 2 * 8, \
            '2 eps x %d B + hash %.0f B + 2 ids x 8 B' % (ep, hashed)
    if tl == 'ud_verbs':
        ep = malloc_size(sizes['ud_verbs_ep'])
        # UCX's ud: the ep we create and the one its connection protocol
        # creates for the peer's CREQ, each in the ep id array and the
        # connection matching hash
        hashed = khash_bytes_per_entry(8, 8)
        return 2 * ep + 2 * hashed + 2 * 8, \
            '2 eps x %d B + 2 hash entries + 2 ids' % ep
    if tl == 'rc_verbs':
        ep = malloc_size(sizes['rc_verbs_ep'])
        qlen = int(cfg.get('UCX_RC_VERBS_TX_QUEUE_LEN', '256'))
        sge = int(cfg.get('UCX_RC_VERBS_TX_MIN_SGE', '3'))
        inl = int(cfg.get('UCX_RC_VERBS_TX_MIN_INLINE', '64').rstrip('b'))
        wqe = sizes['rxe_send_wqe'] + max(sge * 16, inl)
        sq = rxe_queue_bytes(qlen, wqe)
        # a connected QP per peer: its send queue, rdma-core's and UCX's
        # objects for it (QP handle, hash entry in the QP table)
        qp_objs = malloc_size(360) + malloc_size(96) + 16
        return ep + sq + qp_objs, \
            'ep %d B + send queue %d KB (%d WQEs x %d B) + QP objects %d B' % \
            (ep, sq // 1024, pow2(qlen + 1), pow2(max(64, wqe)), qp_objs)
    raise ValueError(tl)


def main():
    if len(sys.argv) < 4:
        print(__doc__ or 'usage: mem_model.py MEM_CSV SIZES UCX_CONFIG',
              file=sys.stderr)
        sys.exit(2)
    rows = list(csv.DictReader(open(sys.argv[1])))
    sizes = {k: int(v) for k, v in load_kv(sys.argv[2]).items()}
    cfg = load_kv(sys.argv[3], '=')

    data = {}
    for r in rows:
        m = int(r['rss_kb']) + int(r['qmap_kb'])
        data.setdefault(r['tl'], []).append(
            (int(r['peers']), m, int(r['pin_kb']), int(r['rss_kb'])))

    print('\nMemory of the measured process (kB; M = VmRSS + mapped device '
          'queues)')
    tls = [t for t in ('srqud', 'ud_verbs', 'rc_verbs') if t in data]
    peers = sorted({p for t in tls for p, _, _, _ in data[t]})
    print('%8s' % 'peers' + ''.join('%14s %9s' % (t + ' M', 'pinned')
                                     for t in tls))
    for p in peers:
        line = '%8d' % p
        for t in tls:
            d = {q: (m, pin) for q, m, pin, _ in data[t]}
            line += '%14s %9s' % ((d[p][0], d[p][1]) if p in d else ('-', '-'))
        print(line)

    print('\nModel against measurement')
    print('%-9s %12s %12s %8s %14s %14s %8s %12s' %
          ('tl', 'model B/peer', 'meas. B/peer', 'error', 'model M(Nmax)',
           'meas. M(Nmax)', 'error', 'M(16K) MB'))
    summary = {}
    for t in tls:
        pts = sorted(data[t])
        n0, m0, pin0, _ = pts[0]
        n1, m1, _, _ = pts[1]
        nmax, mmax, pinmax, _ = pts[-1]
        model_pp, why = per_peer_model(t, sizes, cfg)
        meas_pp = (mmax - m1) * KB / (nmax - n1)
        model_mmax = m1 + (nmax - n1) * model_pp / KB
        err_pp = (model_pp - meas_pp) / meas_pp * 100 if meas_pp else 0
        err_m = (model_mmax - mmax) / mmax * 100
        m16k = (m1 * KB + (16384 - n1) * model_pp) / (KB * KB)
        summary[t] = (model_pp, meas_pp, m16k, pin0, pinmax, m1, n1)
        print('%-9s %12.0f %12.0f %7.1f%% %14.0f %14d %7.1f%% %12.1f' %
              (t, model_pp, meas_pp, err_pp, model_mmax, mmax, err_m, m16k))
        print('          per peer: %s' % why)
        print('          first connection, one-time: %d kB' % (m1 - m0))
        print('          pinned (registered) memory: %d kB at 0 peers, '
              '%d kB at %d' % (pin0, pinmax, nmax))

    if 'png' in ' '.join(sys.argv[4:]):
        png = sys.argv[sys.argv.index('--png') + 1]
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
        except ImportError:
            print('mem_model: matplotlib missing, no plot', file=sys.stderr)
            return
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for t in tls:
            pts = sorted(data[t])
            ax.plot([p for p, _, _, _ in pts], [m / KB for _, m, _, _ in pts],
                    'o-', label='%s measured' % t)
            m1, n1 = summary[t][5], summary[t][6]
            xs = [p for p, _, _, _ in pts if p >= n1] + [16384]
            ax.plot(xs, [(m1 * KB + (x - n1) * summary[t][0]) / (KB * KB)
                         for x in xs],
                    '--', label='%s model' % t)
        ax.set_xscale('symlog', linthresh=1)
        ax.set_yscale('log')
        ax.set_xlabel('connected peers')
        ax.set_ylabel('memory of the process (MB)')
        ax.set_title('Memory against peers (Soft-RoCE VM)')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(png, dpi=120)
        print('plot: %s' % png)


if __name__ == '__main__':
    main()
