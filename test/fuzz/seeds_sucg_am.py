#!/usr/bin/env python3
"""Write the seed corpus of fuzz_sucg_am (test/fuzz/corpus_sucg_am): step
messages that the check accepts, so that the fuzzer starts next to the
edges of every field (fuzz_sucg_am.c reads the group's state first)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def state(nslots, stage_size, seq):
    """nslots 1..64, stage_size <= 4096, seq 0..7"""
    return bytes([nslots - 1, stage_size & 0xFF, stage_size >> 8, seq,
                  0, 0, 0, 0])


def message(seq, step, ranges, group_id=1):
    hdr = struct.pack("<QHHHH", seq, group_id, step, len(ranges), 0)
    padded = ranges + [(0, 0)] * (2 - len(ranges))
    for off, length in padded:
        hdr += struct.pack("<II", off, length)
    data = bytes((i * 7) & 0xFF for i in range(sum(r[1] for r in ranges)))
    return hdr + data


SEEDS = {
    # one range up to the end of the staging half, this collective
    "one_range": state(4, 256, 3) + message(3, 3, [(192, 64)]),
    # two ranges (a wrapped block range), the next collective
    "two_ranges": state(8, 1024, 5) + message(6, 0, [(896, 128), (0, 64)]),
    # an empty range next to a full one
    "empty_range": state(1, 64, 1) + message(2, 0, [(64, 0), (0, 64)]),
}

if __name__ == "__main__":
    out = os.path.join(HERE, "corpus_sucg_am")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
