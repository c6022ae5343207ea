#!/usr/bin/env python3
"""Write the seed corpus of fuzz_rx (test/fuzz/corpus): one script per
kind of operation, valid enough to reach the logic behind each check."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GRH = 40
MAGIC = 0x5D
AM, ACK, ACK_REQ, CTL, REL, BACK_ACK = 1, 2, 4, 8, 16, 32


def neth(flags, psn=0, ack_psn=0, am_id=0, ctl=0, dest=0xFFFFFF, src=1,
         token=0x1234):
    return struct.pack("<BBBBIIHHI", MAGIC, flags, am_id, ctl, dest, src,
                       psn, ack_psn, token)


def packet(body):
    """op 0: a packet of GRH + body bytes"""
    return bytes([0]) + struct.pack("<H", GRH + len(body)) + body


def sack(*psns):
    words = [0, 0, 0, 0]
    for p in psns:
        b = p % 256
        words[b // 64] |= 1 << (b % 64)
    return struct.pack("<4Q", *words)


seeds = {
    # data out of order, a duplicate, a gap filled
    "reorder": bytes([255]) + b"".join(
        packet(neth(AM | REL, psn=p) + b"x" * 8) for p in (0, 2, 3, 2, 1, 0, 5)),
    # the sender streams; the receiver's state comes back with its SACK
    "sack": bytes([255]) + bytes([2] * 40) +
            packet(neth(CTL | ACK, ctl=3, ack_psn=3) + sack(5, 6, 7, 9)) +
            bytes([4]) + struct.pack("<H", 500) + bytes([5]),
    # acknowledgement scripts by hand, across the psn wrap
    "wrap": bytes([16]) + bytes([2] * 10) + bytes([3]) + struct.pack("<H", 4) +
            sack(6, 8) + bytes([1]) + struct.pack("<H", 65535) +
            bytes([1]) + struct.pack("<H", 0),
    # acks on the way back: the sender streams, replies carry its acks at
    # their end (one too short for its trailer, one on a control packet)
    "back_ack": bytes([255]) + bytes([2] * 20) + b"".join(
        packet(neth(AM | REL | BACK_ACK, psn=p) + b"y" * 4 +
               struct.pack("<IIH", 7, 0x1234, a))
        for p, a in ((0, 3), (1, 9), (2, 5))) +
        packet(neth(AM | REL | BACK_ACK, psn=3) + b"z" * 9) +
        packet(neth(CTL | REL | BACK_ACK, ctl=4) + struct.pack("<IIH", 7, 1, 2)),
    # malformed headers
    "bad": bytes([0]) + packet(b"\x42" * 20) + packet(neth(0xF0)) +
           packet(neth(AM | CTL)) + packet(neth(CTL, ctl=99)) + packet(b""),
    # zero-copy ranges
    "ranges": bytes([0, 6]) + struct.pack("<IB", 100, 3) +
              struct.pack("<6I", 0, 10, 20, 5, 95, 5),
    # the chunk tracker: plan, completions in and out of place, settle
    "tracker": bytes([0, 7]) + struct.pack("<HH", 40, 8) + bytes([0]) +
               b"".join(bytes([1]) + struct.pack("<I", i) for i in (0, 2, 1, 7)) +
               bytes([5, 2, 0]) + bytes([255]),
}

os.makedirs(os.path.join(HERE, "corpus"), exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(HERE, "corpus", name), "wb") as f:
        f.write(data)
