/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * libFuzzer target over sucg's step message (src/sucg/allgather/
 * allgather_am_def.[ch]): what the receiver's handler (core/sucg_am_rx.c)
 * does with an active message that any process holding an endpoint to it
 * may send. The input chooses the receiving group's state (flags per half,
 * staging size, last collective) and then gives the message as UCP hands
 * it over: header bytes and payload bytes. A message the check accepts is
 * then written exactly as the handler writes it, into a staging half and a
 * flag array of the group's own sizes on the heap, so that AddressSanitizer
 * sees any byte the header could steer outside them; the accepted header
 * is also held to what the check promises.
 *
 *   SRQUD_FUZZ_TARGETS=fuzz_sucg_am test/fuzz/run.sh [SECONDS]
 */

#include "sucg/allgather/allgather_am_def.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "fuzz_sucg_am: %s:%d: %s\n", __FILE__, \
                    __LINE__, #_cond); \
            abort(); \
        } \
    } while (0)

/* Group state taken from the input: sizes a real group can have, kept
 * small so that ranges land near the edges often */
#define STATE_BYTES 8
#define NSLOTS_MAX  64
#define STAGE_MAX   4096

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
    sucg_am_limits_t lim;
    sucg_am_hdr_t hdr;
    size_t hdr_len, data_len, total, i;
    const uint8_t *hdr_buf, *src;
    uint64_t *flags;
    uint8_t *stage;

    if (size < STATE_BYTES + 1) {
        return 0;
    }
    lim.nslots     = 1 + in[0] % NSLOTS_MAX;
    lim.stage_size = (in[1] | ((size_t)in[2] << 8)) % (STAGE_MAX + 1);
    lim.seq        = (in[3] & 0x80) ? (UINT64_MAX - (in[3] & 3)) :
                                      (uint64_t)(in[3] & 7);
    /* the header length as UCP reports it: mostly ours, sometimes not */
    hdr_len = (in[4] < 224) ? sizeof(hdr) : in[4] - 224;
    in     += STATE_BYTES;
    size   -= STATE_BYTES;
    if (hdr_len > size) {
        hdr_len = size;
    }
    hdr_buf  = in;
    src      = in + hdr_len;
    data_len = size - hdr_len;

    if (sucg_am_parse(hdr_buf, hdr_len, &hdr) != 0) {
        CHECK(hdr_len != sizeof(hdr));
        return 0;
    }
    CHECK(hdr_len == sizeof(hdr));
    if (sucg_am_check(&hdr, data_len, &lim) != NULL) {
        return 0;
    }

    /* accepted: what the check promises the handler */
    CHECK((hdr.seq == lim.seq) || (hdr.seq == lim.seq + 1));
    CHECK(hdr.seq != 0);
    CHECK(hdr.step < lim.nslots);
    CHECK((hdr.nranges >= 1) && (hdr.nranges <= SUCG_SCHED_MAX_RANGES));
    total = 0;
    for (i = 0; i < hdr.nranges; ++i) {
        CHECK((size_t)hdr.range[i].off + hdr.range[i].len <= lim.stage_size);
        total += hdr.range[i].len;
    }
    CHECK(total == data_len);

    /* and the handler's writes, into buffers of exactly the group's sizes */
    stage = malloc(lim.stage_size ? lim.stage_size : 1);
    flags = calloc(lim.nslots, sizeof(*flags));
    CHECK((stage != NULL) && (flags != NULL));
    for (i = 0; i < hdr.nranges; ++i) {
        memcpy(stage + hdr.range[i].off, src, hdr.range[i].len);
        src += hdr.range[i].len;
    }
    flags[hdr.step] = hdr.seq;
    CHECK(src == in + size);
    free(flags);
    free(stage);
    return 0;
}
