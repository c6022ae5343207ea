#!/usr/bin/env python3
"""Write the seed corpus of fuzz_path (test/fuzz/corpus_path): scripts of
operations (the encoding of LLVMFuzzerTestOneInput in fuzz_path.c) that
take srqud through its protocols with honest fake peers, so that the
fuzzer starts from deep states: connections both ways, in-order and
reordered AMs, acknowledgements on the way back, zero-copy puts and gets
in several rounds (the user's and the peers'), RMA puts refused, flushes
with CANCEL during a put, endpoints destroyed with transfers in flight,
deregistrations under a peer's transfer, timeouts, QP errors, passive ep
floods.

    test/fuzz/seeds_path.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus_path")

# first byte: configuration
CFG_RCACHE_OFF, CFG_KEEP_DESCS = 1, 2

# the script's operations (op % 24 in fuzz_path.c)
RAW, PEER_REQ, PEER_RECV, JOB, PROGRESS, TIME, ASYNC, COMPLETE = \
    0, 2, 5, 8, 9, 11, 12, 13
EP_CREATE, EP_DESTROY, AM, RMA, FLUSH, MEM, MISC, ARM, DROP = \
    14, 15, 16, 17, 19, 20, 21, 22, 23

# peer request kinds (kind >> 5), and their variant bit 0x10
K_AM, K_RMA_PUT, K_RMA_GET, K_ZGET, K_ZPUT, K_NOP, K_ACK = 0, 2, 3, 4, 5, 6, 7
VARIANT = 0x10

# user RMA kinds (kind % 6)
PUT_SHORT, PUT_BCOPY, GET_BCOPY, AM_ZCOPY, PUT_ZCOPY, GET_ZCOPY = range(6)


def b(*xs):
    return bytes(x & 0xff for x in xs)


def u16(x):
    return struct.pack("<H", x & 0xffff)


def progress(n=1):
    return b(PROGRESS) * n


def creq(k, c, reincarnate=False):
    """peer k's connection c (re)connects: CREQ"""
    return b(PEER_REQ, k, c, 0x20 if reincarnate else 0x00, 0)


def peer_am(k, c, am_id=1, words=4, dpsn=0, back_sel=None, ack_req=False,
            more=False):
    """more: flagged MORE (a lie of the peer's: neth_mutate 0xff), the
    message goes on in the connection's next AM"""
    kind = (K_AM << 5) | 1
    sel = 0
    if back_sel is not None:
        kind |= VARIANT
        sel = back_sel
    return b(PEER_REQ, k, c | (0x80 if ack_req else 0), kind,
             0xff if more else 0, dpsn, sel) + \
        u16(0) + u16(0) + b(am_id, words)


def peer_rma_put(k, c, region, off, length, op_id=0):
    return b(PEER_REQ, k, c, (K_RMA_PUT << 5) | 1, 0, 0, region) + \
        u16(off) + u16(length) + b(op_id)


def peer_rma_get(k, c, region, off, length, op_id=0, frag=0):
    return b(PEER_REQ, k, c, (K_RMA_GET << 5) | 1, 0, 0, region) + \
        u16(off) + u16(length) + b(op_id, frag)


def peer_zget(k, c, region, off, length, ranges):
    """ranges: [(start, count)], start < 40, 1 <= count <= 24"""
    data = b(PEER_REQ, k, c, (K_ZGET << 5) | 1, 0, 0, region) + u16(off) + \
        u16(length - 1) + b(len(ranges) - 1)
    for s, n in ranges:
        data += b(s, n - 1)
    return data


def peer_zput(k, c, region, off, length):
    return b(PEER_REQ, k, c, (K_ZPUT << 5) | 1, 0, 0, region) + u16(off) + \
        u16(length - 1)


def peer_nop(k, c):
    return b(PEER_REQ, k, c, (K_NOP << 5) | 1, 0, 0, 0) + u16(0) + u16(0)


def recv(k, m2=0, sel=0, m=0):
    """peer k takes srqud's oldest packet to it (completing srqud's sends
    first if it has none) and answers"""
    return b(PEER_RECV, k, sel, m, m2)


def recv_all(k, n, m2=0):
    return b"".join(recv(k, m2) for _ in range(n))


def job(j, n, m=0):
    return b(JOB, j, n - 1, m)


def raw_chunk(k, sel, tag, chunk, length):
    """a forged chunk from peer k to srqud's (sel'th) pool QP: sel 0x40
    without immediate, 0x80 with the wrong Q_Key"""
    return b(JOB, 0x80, k, sel, tag, chunk) + u16(length)


def complete(sel=0, n=48, error=False):
    return b(COMPLETE, sel, n - 1, 0x0f if error else 0)


def ep_create(slot, peer):
    return b(EP_CREATE, slot | (peer << 3))


def ep_destroy(slot):
    return b(EP_DESTROY, 3 | (slot << 2))


def am(slot, short=True, length=32, am_id=1):
    return b(AM, 1 if short else 0, am_id, slot) + u16(length)


def rma(kind, slot, region=0, off=0, length=0, small=False):
    return b(RMA, kind | (0x80 if small else 0), region, slot) + u16(off) + \
        u16(length)


def flush(slot, cancel=False):
    return b(FLUSH, 1 if cancel else 0, slot)


def iface_flush():
    return b(FLUSH, 2, 0)


def dereg(region, invalidate=False, unmap=True):
    return b(MEM, region, (3 if invalidate else 0) | (4 if unmap else 0)) + \
        u16(0) + u16(0)


def time_(t):
    return b(TIME, t)


def async_tick():
    return b(ASYNC)


def drop(k):
    return b(DROP, k, 0)


def script(cfg, *parts):
    return b(cfg) + b"".join(parts)


def handshake(slot=0, peer=0):
    """the user's ep to a peer, connected: CREQ answered by CREP"""
    return ep_create(slot, peer) + am(slot) + progress() + recv(peer) + \
        recv(peer) + progress()


def passive(k=0, c=0):
    """a peer connects to srqud: its CREQ, srqud's CREP back"""
    return creq(k, c) + progress() + recv(k) + progress()


seeds = {
    # a peer connects, then AMs in order, acknowledged
    "creq_then_ams": script(0, passive(0, 0),
                            *[peer_am(0, 0, am_id=i % 4, words=i) + progress()
                              for i in range(1, 9)],
                            recv_all(0, 4), progress()),
    # messages of two packets begun on six connections, more than the
    # interface holds (SRQ_SIZE 32: 5): the oldest gives way, then each
    # connection's second packet
    "chains_many": script(0, *[passive(k, c) for k in range(3)
                               for c in range(2)],
                          *[peer_am(k, c, ack_req=True, more=True) + progress()
                            for k in range(3) for c in range(2)],
                          *[peer_am(k, c) + progress()
                            for k in range(3) for c in range(2)],
                          recv_all(0, 4), recv_all(1, 4), recv_all(2, 4),
                          progress()),
    # the same with the user keeping descriptors and releasing them
    "ams_kept": script(CFG_KEEP_DESCS, passive(1, 0),
                       *[peer_am(1, 0, words=8) + progress()
                         for _ in range(6)],
                       b(MISC, 1 | (3 << 1)), progress(), b(MISC, 7)),
    # AMs out of order: held, a NACK with a SACK, the gap filled
    "ams_reordered": script(0, passive(0, 0),
                            peer_am(0, 0, dpsn=0x71), peer_am(0, 0, dpsn=0x72),
                            progress(), recv_all(0, 2), peer_am(0, 0),
                            peer_am(0, 0), progress(), recv_all(0, 2)),
    # the user's ep: CREQ, AMs short and bcopy, acks, a flush
    "ep_ams_flush": script(0, handshake(0, 1),
                           am(0, True, 40), am(0, False, 300), am(0, True, 16),
                           progress(), recv_all(1, 3), progress(), flush(0),
                           progress(), recv(1), progress()),
    # replies carry the acks back: both directions between srqud and peer 0
    "back_ack": script(0, passive(0, 0), handshake(2, 0),
                       *[peer_am(0, 0, words=2) + progress() + am(2) +
                         progress() + recv(0) for _ in range(6)],
                       peer_am(0, 0, back_sel=0), progress(), recv_all(0, 3),
                       progress()),
    # only replies acknowledge: the peer sends no ack packets (m2 0x30) and
    # its AMs carry srqud's acks at their end
    "back_ack_only": script(0, passive(1, 0), handshake(0, 1),
                            *[am(0, length=20) + progress() +
                              recv(1, m2=0x30) + peer_am(1, 0, back_sel=0) +
                              progress() for _ in range(10)],
                            time_(15), progress(), async_tick(),
                            peer_am(1, 0, back_sel=0), async_tick(),
                            progress()),
    # the user's put_zcopy: ZPUT, the peer's ZCTS (all chunks), the chunk
    # sends complete, ZFIN, ZACK
    "put_zcopy": script(0, handshake(0, 0),
                        rma(PUT_ZCOPY, 0, region=4, off=0, length=8000),
                        progress(), recv(0, m2=5 << 3), progress(),
                        complete(), progress(), recv(0), recv(0), progress(),
                        complete(), progress(), recv(0), progress()),
    # a put_zcopy in rounds of 8 chunks: ZCTS, ZFIN, ZCTS again, ...
    "put_zcopy_rounds": script(0, handshake(0, 2),
                               rma(PUT_ZCOPY, 0, region=2, off=100,
                                   length=100),
                               progress(),
                               *[recv(2) + progress() + complete() +
                                 progress() for _ in range(8)],
                               recv_all(2, 4), progress()),
    # the user's get_zcopy: ZGET, chunks landing (in rounds of 16), ZFIN
    "get_zcopy": script(0, handshake(0, 3),
                        rma(GET_ZCOPY, 0, region=0, off=0, length=0),
                        progress(), recv(3, m2=0), progress(),
                        *[recv(3, m2=16 << 3) + job(0, 20) + progress() +
                          complete() + progress() for _ in range(4)],
                        progress(), recv_all(3, 2)),
    # a get_zcopy whose chunks come misplaced (lost, duplicated, swapped)
    "get_zcopy_lossy": script(0, handshake(1, 0),
                              rma(GET_ZCOPY, 1, region=1, off=4096,
                                  length=2000),
                              progress(), recv(0),
                              *[recv(0, m2=8 << 3) + job(0, 16, m=0x53) +
                                progress() + time_(15) + progress() +
                                complete() for _ in range(6)],
                              recv_all(0, 3), progress()),
    # a copy-path get (below the threshold) and get_bcopy
    "get_copy_path": script(0, handshake(0, 1),
                            rma(GET_ZCOPY, 0, region=0, off=64, length=3000,
                                small=True),
                            rma(GET_BCOPY, 0, region=1, off=8, length=500),
                            progress(), recv_all(1, 6), progress(),
                            recv_all(1, 4), progress()),
    # put_short / put_bcopy refused by the peer: RMA_REFUSE, RMA_SEEN, the
    # flush reports it
    "rma_put_refused": script(0, handshake(0, 2),
                              rma(PUT_SHORT, 0, length=24),
                              rma(PUT_BCOPY, 0, length=200), flush(0),
                              progress(), recv(2), recv(2, m2=3),
                              recv(2, m2=3), progress(), recv_all(2, 3),
                              progress(), flush(0), progress(), recv(2)),
    # a flush with CANCEL while a put_zcopy's chunks are out
    "flush_cancel_put": script(0, handshake(0, 0),
                               rma(PUT_ZCOPY, 0, region=3, length=5000),
                               progress(), recv(0, m2=5 << 3), progress(),
                               flush(0, cancel=True), progress(), complete(),
                               progress(), recv_all(0, 3), progress(),
                               ep_destroy(0), progress()),
    # the user destroys the ep while its put's chunks are in flight
    "destroy_during_put": script(0, handshake(3, 1),
                                 rma(PUT_ZCOPY, 3, region=4, length=9000),
                                 progress(), recv(1, m2=5 << 3), progress(),
                                 ep_destroy(3), complete(sel=1, n=10),
                                 progress(), dereg(4), complete(), progress(),
                                 recv_all(1, 2), progress()),
    # a ZCTS with BUSY while a round is sending, and one past the end
    "put_zcts_busy_and_bad": script(0, handshake(0, 0),
                                    rma(PUT_ZCOPY, 0, region=4, length=2000),
                                    progress(), recv(0, m2=(2 << 3) | 4),
                                    progress(), complete(), progress(),
                                    recv(0, m2=5 << 3, m=0x18), progress(),
                                    complete(), progress(), recv_all(0, 3),
                                    progress()),
    # a peer's put_zcopy into srqud's memory: ZPUT, ZCTS, chunks, ZFIN,
    # ZACK; then one into memory without remote write (refused)
    "peer_zput": script(0, passive(2, 0),
                        peer_zput(2, 0, region=2, off=0, length=20000),
                        progress(), recv(2, m2=40), progress(),
                        job(0, 20), progress(), recv(2, m2=80), progress(),
                        recv_all(2, 2), progress(), recv_all(2, 2),
                        peer_zput(2, 0, region=0, off=0, length=5000),
                        progress(), recv_all(2, 2)),
    # a peer's put whose region the user deregisters (and unmaps) midway
    "peer_zput_dereg": script(0, passive(1, 1),
                              peer_zput(1, 1, region=3, off=512, length=30000),
                              progress(), recv(1, m2=8), dereg(3),
                              progress(), recv_all(1, 2), time_(20),
                              progress(), recv_all(1, 2)),
    # a peer's get_zcopy from srqud: chunk sends, their completions, ZFIN
    "peer_zget": script(0, passive(3, 0),
                        peer_zget(3, 0, region=2, off=0, length=12000,
                                  ranges=[(0, 12)]),
                        progress(), complete(), progress(), recv_all(3, 3),
                        peer_zget(3, 0, region=1, off=100, length=3000,
                                  ranges=[(0, 3)]),
                        progress(), complete(), progress(), recv_all(3, 3)),
    # a peer's ZGET leaving its chunk list behind: the ep goes, the iface
    # closes with the job queued
    "peer_zget_abandoned": script(0, passive(0, 1),
                                  peer_zget(0, 1, region=4, off=0,
                                            length=40000,
                                            ranges=[(0, 24), (24, 16)]),
                                  progress(), creq(0, 1, reincarnate=True),
                                  progress(), time_(26), progress()),
    # RMA_PUT and RMA_GET from a peer, to memory that allows and that does
    # not; refusals answered with RMA_SEEN
    "peer_rma": script(0, passive(1, 0),
                       peer_rma_put(1, 0, region=2, off=10, length=100),
                       peer_rma_put(1, 0, region=0, off=10, length=100),
                       peer_rma_put(1, 0, region=1, off=0, length=64),
                       peer_rma_get(1, 0, region=1, off=0, length=900),
                       peer_rma_get(1, 0, region=3, off=0, length=100),
                       progress(), recv_all(1, 6), progress(),
                       recv_all(1, 3)),
    # refusals beyond RMA_REFUSALS_MAX before the peer says it saw them
    "refusal_flood": script(0, passive(0, 0),
                            *[peer_rma_put(0, 0, region=0, off=i, length=8)
                              for i in range(8)],
                            progress(), drop(0), drop(0), progress(),
                            recv_all(0, 4)),
    # CREQs from every connection of every peer, new incarnations: more
    # than PASSIVE_MAX passive eps
    "passive_flood": script(0,
                            *[creq(k, c) for k in range(4) for c in range(2)],
                            progress(),
                            *[creq(k, 0, reincarnate=True) for k in range(4)],
                            progress(), time_(26), creq(1, 1, True),
                            progress(), recv_all(0, 3)),
    # a peer floods the SRQ while the user does not progress: below the
    # watermark, the LIMIT event refills it (UCX's async thread)
    "srq_drain": script(0, passive(3, 1),
                        *[peer_am(3, 1, words=1) for _ in range(60)],
                        progress(3), recv_all(3, 2), progress()),
    # the user's packets are lost: retransmission, timeout, the peer dead
    "timeouts": script(0, handshake(0, 1), am(0), am(0), progress(),
                       drop(1), drop(1), time_(15), progress(), time_(18),
                       progress(), async_tick(), time_(22), progress(),
                       time_(26), progress(), recv_all(1, 3), progress()),
    # a send fails: the QP goes to the error state and is reset
    "qp_error": script(0, handshake(0, 0), am(0), am(0, False, 500),
                       progress(), complete(n=1, error=True), progress(),
                       progress(), recv_all(0, 4), progress()),
    # the async tick receives while the user is away
    "async_rx": script(0, passive(2, 1),
                       peer_am(2, 1), peer_am(2, 1), async_tick(),
                       peer_rma_put(2, 1, region=2, off=0, length=50),
                       async_tick(), progress(), recv_all(2, 2)),
    # event_arm with completions pending, pending requests, fence, check
    "arm_pending": script(0, handshake(0, 0),
                          *[am(0, False, 900) for _ in range(20)],
                          b(MISC, 0), b(MISC, 2), b(ARM), progress(),
                          b(FLUSH, 3, 0), b(FLUSH, 4, 0), recv_all(0, 6),
                          progress(), iface_flush(), progress()),
    # rcache off, registrations and deregistrations with invalidation
    "mem_no_rcache": script(CFG_RCACHE_OFF, handshake(0, 2),
                            dereg(2, invalidate=True), dereg(2),
                            dereg(0, unmap=False), dereg(0),
                            rma(PUT_ZCOPY, 0, region=4, length=1000),
                            progress(), recv(2, m2=5 << 3), progress(),
                            complete(), progress(), recv_all(2, 2),
                            progress()),
    # forged chunks into a get's pool QP: stale generations, wrong lengths,
    # chunk numbers past the end, without immediate, with the wrong key
    "get_forged_chunks": script(0, handshake(0, 2),
                                rma(GET_ZCOPY, 0, region=1, length=100),
                                progress(), recv(2, m2=3 << 3),
                                *[raw_chunk(2, s, t, c, l)
                                  for s, t, c, l in ((0, 1, 5, 1024),
                                                     (0, 0, 6, 1024),
                                                     (0, 1, 70, 1024),
                                                     (0, 1, 7, 100),
                                                     (0x40, 1, 8, 1024),
                                                     (0x80, 1, 9, 1024))],
                                progress(), job(0, 24), progress(),
                                recv_all(2, 3), progress()),
    # both directions of zero copy at once on one peer
    "zcopy_both_ways": script(0, passive(0, 0), handshake(1, 0),
                              rma(GET_ZCOPY, 1, region=0, length=0),
                              peer_zput(0, 0, region=2, off=0, length=16000),
                              progress(), recv_all(0, 3),
                              job(0, 20), job(1, 20), progress(),
                              complete(), progress(), recv_all(0, 4),
                              job(0, 20), job(1, 20), progress(),
                              recv_all(0, 4), progress()),
}

# Inputs the fuzzer found (findings/README.md), fixed since: kept as seeds
seeds["regress_put_cancel_queued_job"] = bytes.fromhex(
    "000e001001010020000905000000000500000000091104030000008813090500"
    "00002809130100090d002f0009050000000005000000000500000000090f0309")
seeds["regress_dereg_after_destroyed_put"] = bytes.fromhex(
    "010e0b1001010320000905010000000501000000091104040300282309050100"
    "0009090f0f0d0100091404040000005b0509")

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), OUT))
